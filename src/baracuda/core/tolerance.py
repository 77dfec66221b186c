"""Per-dtype tolerance table and the one comparison against float64 references.

A result passes when, element-wise,
    |got - ref| <= atol * scale + rtol * |ref|
with ``scale`` = the largest finite |ref| of the output (so tolerances follow the problem's
magnitude), NaN exactly where the reference has NaN, and infinities matched in sign.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .vocab import ElementKind


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float

    def scaled(self, factor: float) -> Tolerance:
        return Tolerance(self.atol * factor, self.rtol * factor)


#: Defaults: a few units in the last place of each type's output rounding.
TOLERANCES: dict[ElementKind, Tolerance] = {
    ElementKind.F64: Tolerance(1e-12, 1e-10),
    ElementKind.F32: Tolerance(2e-6, 2e-5),
    ElementKind.F16: Tolerance(1e-3, 2e-3),
    ElementKind.BF16: Tolerance(8e-3, 1.6e-2),
}
EXACT = Tolerance(0.0, 0.0)


def tolerance_for(element: ElementKind) -> Tolerance:
    return TOLERANCES.get(element, EXACT)


@dataclass(frozen=True)
class Comparison:
    ok: bool
    worst_ratio: float  # max |err| / allowed; <= 1 passes
    message: str


def compare(got: torch.Tensor, ref: torch.Tensor, tol: Tolerance, name: str = "out",
            scale: float | None = None) -> Comparison:
    """Compare `got` (any dtype) with a float64 (or exact) reference. `atol` is relative to
    `scale` when given (the size of the terms a cancelling result was summed from), else to
    the largest finite reference value."""
    if tuple(got.shape) != tuple(ref.shape):
        msg = f"{name}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
        return Comparison(False, float("inf"), msg)
    if got.numel() == 0:
        return Comparison(True, 0.0, f"{name}: empty")
    if not ref.is_floating_point():
        g_exact = got.detach().to(ref.device, ref.dtype)
        equal = torch.equal(g_exact, ref)
        bad = 0 if equal else int((g_exact != ref).sum())
        return Comparison(equal, 0.0 if equal else float("inf"), f"{name}: {bad} mismatches")
    # compare where the result lives (a GPU does float64 at real sizes far faster than a CPU)
    g = got.detach().to(torch.float64)
    r = ref.detach().to(g.device, torch.float64)
    nan_r, nan_g = torch.isnan(r), torch.isnan(g)
    if not torch.equal(nan_r, nan_g):
        extra = int((nan_g & ~nan_r).sum())
        missing = int((nan_r & ~nan_g).sum())
        return Comparison(False, float("inf"),
                          f"{name}: {extra} unexpected NaN, {missing} NaN missing")
    inf_r = torch.isinf(r)
    if not torch.equal(g[inf_r], r[inf_r]) or bool(torch.isinf(g[~inf_r]).any()):
        return Comparison(False, float("inf"), f"{name}: infinities differ")
    finite = ~(nan_r | inf_r)
    if not bool(finite.any()):
        return Comparison(True, 0.0, f"{name}: all non-finite, matched")
    rf, gf = r[finite], g[finite]
    if scale is None:
        scale = float(rf.abs().max())
    allowed = tol.atol * scale + tol.rtol * rf.abs()
    err = (gf - rf).abs()
    if tol.atol == 0 and tol.rtol == 0:
        ok = bool((err == 0).all())
        return Comparison(ok, 0.0 if ok else float("inf"), f"{name}: exact compare")
    ratio = float((err / allowed.clamp_min(torch.finfo(torch.float64).tiny)).max())
    idx = int(torch.argmax(err / allowed.clamp_min(1e-300)))
    msg = (f"{name}: worst err {float(err[idx]):.3e} at ref {float(rf[idx]):.4e} "
           f"(allowed {float(allowed[idx]):.3e}, ratio {ratio:.3f})")
    return Comparison(ratio <= 1.0, ratio, msg)
