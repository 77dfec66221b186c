"""The no-grad replay path of one baracuda.torch call, timed piece by piece on tiny CUDA
tensors (no profiler: cProfile inflates small functions), next to torch's whole call.

Usage (GPU machine): python3 lab/scripts/host_parts.py
"""

from __future__ import annotations

import timeit

import torch

import baracuda.torch as bt
from baracuda.backends import launch_replay as L
from baracuda.backends import torch_ops as T


def us(fn, n: int = 20000) -> float:
    fn()
    return min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6


def main() -> None:
    dev = torch.device("cuda")
    a = torch.randn(8, 256, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8, 256, device=dev, dtype=torch.bfloat16)
    torch.set_grad_enabled(False)
    for _ in range(3):
        bt.add(a, b)
    torch.cuda.synchronize()
    replays = bt.add.__closure__  # the replayed wrapper's table, found by type below
    table = next(c.cell_contents for c in replays if isinstance(c.cell_contents, dict))
    program = next(iter(table.values()))
    launches = program.launches
    stream = L._raw_stream(0)
    launcher, grid, tail, template, patches = launches[0]
    args = list(template)
    for i, slot, off in patches:
        args[i] = (a, b, a)[slot].data_ptr() + off
    key, tensors = T._key_of((a, b))
    native = program.native

    def python_replay():
        program.native = None
        try:
            return program.replay([a, b])
        finally:
            program.native = native

    x = a.clone().requires_grad_()
    rows = [
        ("torch.add", lambda: torch.add(a, b)),
        ("bt.add (whole)", lambda: bt.add(a, b)),
        ("OpProgram.replay (native)" if native else "OpProgram.replay (no native program)",
         lambda: program.replay([a, b])),
        ("OpProgram.replay (Python launch)", python_replay),
        ("torch.empty cuda", lambda: torch.empty((8, 256), dtype=torch.bfloat16, device=dev)),
        ("a.new_empty", lambda: a.new_empty((8, 256))),
        ("torch.empty_like", lambda: torch.empty_like(a)),
        ("triton launcher (raw)", lambda: launcher(*grid, stream, *tail, *args)),
        ("_launch (re-base + launch)", lambda: L._launch(launches, [a.data_ptr(),
                                                                   b.data_ptr(),
                                                                   a.data_ptr()], 0)),
        ("_raw_stream", lambda: L._raw_stream(0)),
        ("_may_replay", lambda: L._may_replay(program.device, program.thread)),
        ("_plain_eager", T._plain_eager),
        ("_key_of(a, b)", lambda: T._key_of((a, b))),
        ("key tuple + globals", lambda: (key, (), False, torch.get_default_dtype(),
                                         torch.are_deterministic_algorithms_enabled())),
        ("dict get", lambda: table.get((key, (), False, torch.get_default_dtype(),
                                        torch.are_deterministic_algorithms_enabled()))),
        ("3 x data_ptr", lambda: (a.data_ptr(), b.data_ptr(), a.data_ptr())),
    ]
    for name, fn in rows:
        print(f"{name:32s} {us(fn):7.2f} us")
    torch.set_grad_enabled(True)
    for name, fn in (("torch silu, grad (fw only)", lambda: torch.nn.functional.silu(x)),
                     ("bt.silu, grad (fw only)", lambda: bt.silu(x))):
        print(f"{name:32s} {us(fn):7.2f} us")
    print(f"program: {len(program.allocations)} allocations, {len(launches)} launches; "
          f"launcher {launcher}")


if __name__ == "__main__":
    main()
