"""Ahead-of-time sm_90a compile check of every registered Triton kernel specialization.

Each family's PlanSpec yields `AotVariant`s (a representative set of constexpr
specializations). Each is compiled for sm_90a without a GPU and checked for shared memory
<= 232,448 bytes (the H100 per-block limit) and zero register spills (ptxas -v on the PTX).

Run as `python -m baracuda.tools.aot [--family F]`; it must run WITHOUT TRITON_INTERPRET
(the interpreter replaces @triton.jit functions), so tests call it in a subprocess.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

H100_SHARED_LIMIT = 232_448


@dataclass
class AotResult:
    family: str
    name: str
    shared: int
    spill_bytes: int
    registers: int
    seconds: float
    error: str = ""
    max_spill_bytes: int = 0
    max_registers: int | None = None

    @property
    def ok(self) -> bool:
        return (not self.error and self.shared <= H100_SHARED_LIMIT
                and self.spill_bytes <= self.max_spill_bytes
                and (self.max_registers is None or self.registers <= self.max_registers))


def _ptxas() -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


def _options(variant) -> dict:
    """Compile options of a variant as the plan launches it."""
    opts = {"num_warps": variant.num_warps, "num_stages": variant.num_stages}
    if variant.maxnreg is not None:
        opts["maxnreg"] = variant.maxnreg
    return opts


def _resource_usage(ptx: str) -> tuple[int, int]:
    """(registers, spill bytes) from `ptxas -v` on the PTX (the same assembler triton uses)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as fh:
            fh.write(ptx)
        proc = subprocess.run(
            [_ptxas(), "-v", "--gpu-name", "sm_90a", src, "-o", os.path.join(tmp, "k.cubin")],
            capture_output=True, text=True, check=False,
        )
    text = proc.stdout + proc.stderr
    if proc.returncode:
        raise RuntimeError(f"ptxas failed: {text[-500:]}")
    regs = max((int(m) for m in re.findall(r"Used (\d+) registers", text)), default=0)
    spills = sum(int(a) + int(b) for a, b in
                 re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text))
    return regs, spills


def compile_variant(variant) -> tuple[int, int, int]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource

    gluon = getattr(variant.kernel, "is_gluon", lambda: False)()
    src = (GluonASTSource if gluon else ASTSource)(
        fn=variant.kernel, signature=variant.signature, constexprs=variant.constexprs,
        attrs=variant.attrs())
    ck = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                        options=_options(variant))
    regs, spills = _resource_usage(ck.asm["ptx"])
    return int(ck.metadata.shared), regs, spills


def run(family: str | None = None, verbose: bool = True) -> list[AotResult]:
    if os.environ.get("TRITON_INTERPRET") == "1":
        raise SystemExit("baracuda.tools.aot: run with TRITON_INTERPRET=0 (the interpreter "
                         "replaces @triton.jit functions)")
    from ..core import registry

    results = []
    for spec in registry.specs(family):
        fam = spec.plan.family
        for variant in spec.aot_variants():
            t0 = time.perf_counter()
            try:
                shared, regs, spills = compile_variant(variant)
                res = AotResult(fam, variant.name, shared, spills, regs, time.perf_counter() - t0,
                                max_spill_bytes=variant.max_spill_bytes,
                                max_registers=variant.max_registers)
            except Exception as exc:  # noqa: BLE001 - reported per variant
                res = AotResult(fam, variant.name, 0, 0, 0, time.perf_counter() - t0,
                                error=f"{type(exc).__name__}: {str(exc)[:300]}")
            results.append(res)
            if verbose:
                status = "ok" if res.ok else "FAIL"
                detail = res.error or (f"shared {res.shared} B, {res.registers} regs, "
                                       f"spills {res.spill_bytes} B")
                print(f"{status:4} {fam:14} {variant.name:50} {detail} ({res.seconds:.1f}s)",
                      flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m baracuda.tools.aot")
    parser.add_argument("--family", default=None)
    args = parser.parse_args(argv)
    results = run(args.family)
    bad = [r for r in results if not r.ok]
    print(f"{len(results) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
