"""Copy-kernel probe (GPU): flip of the unit-stride dim read forwards and reversed in
registers (tl.flip) against a plain reversed gather, and a clone at 2**28 elements checked
against torch with its traceback on error."""

from __future__ import annotations

import traceback

import torch

from baracuda.core.vocab import ElementKind as E
from baracuda.families.shape import kernels as K
from baracuda.families.shape import plans as P
from baracuda.families.shape.descriptors import CopyDescriptor


def time_ms(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / reps


def flip_launch(x, y, desc, force_gather: bool):
    cfg = P.copy_config(desc, x.stride(), y.stride())
    if force_gather and cfg["FLIP_A"]:
        n, xs, ys, r = cfg["dims"][-1]
        cfg["dims"][-1] = (n, -xs, ys, r)
        cfg["base"] += (n - 1) * xs
        cfg["FLIP_A"] = False
    K.copy_kernel[(cfg["grid"],)](P._shifted(x, cfg["base"]), y, *P.copy_scalars(cfg),
                                  TB=cfg["TB"], TA=cfg["TA"], ROLL=cfg["ROLL"], WIDE=cfg["WIDE"],
                                  FLIP_A=cfg["FLIP_A"], num_warps=cfg["num_warps"])


def main():
    for shape, el in (((16384, 8192), E.BF16), ((8192, 8192), E.F32), ((4096, 4096), E.BF16)):
        x = torch.randn(shape, device="cuda", dtype=el.torch_dtype)
        y = torch.empty_like(x)
        desc = CopyDescriptor(shape, el, None, (1,))
        want = torch.flip(x, (1,))
        nbytes = 2 * x.numel() * x.element_size()
        for name, gather in (("tl.flip", False), ("reversed gather", True)):
            y.fill_(float("nan"))
            flip_launch(x, y, desc, gather)
            ok = torch.equal(y, want)
            ms = time_ms(lambda x=x, y=y, d=desc, g=gather: flip_launch(x, y, d, g))
            rate = nbytes / ms / 1e6
            print(f"flip {list(shape)} {el.value} {name:16s} ok={ok} {rate:8.1f} GB/s")
        ms = time_ms(lambda x=x: torch.flip(x, (1,)))
        print(f"flip {list(shape)} {el.value} torch            {nbytes / ms / 1e6:8.1f} GB/s")
    import baracuda.torch as bt
    for shape in ((16384, 16384), (8192, 8192)):
        x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        try:
            y = bt.clone(x)
            torch.cuda.synchronize()
            print(f"clone {list(shape)} equal={torch.equal(y, x)}")
        except Exception:  # noqa: BLE001
            print(f"clone {list(shape)} raised:")
            traceback.print_exc()


if __name__ == "__main__":
    main()
