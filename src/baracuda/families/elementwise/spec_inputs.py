"""Inputs of the elementwise test cases: special values planted at the front of every float
input, layouts, poisoned outputs, and AOT variants of the kernels."""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import INTERPRET, triton_dtype
from ...core.spec import AotVariant
from ...core.testing import poisoned, with_layout
from ...core.vocab import ElementKind
from .launch import compute_type
from .table import UnaryKind

E = ElementKind
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-40, 1.0, -1.0, 2.0, -2.0,
            0.5, -0.5, 1e-5, 35.0, -40.0, 100.0]
#: Specials a kind leaves out, with the reason: torch's trigamma at negative integers returns
#: large finite garbage (ours: inf); cbrt has no torch op and our reference's derivative at 0
#: is pow's NaN rather than +inf.
SKIP_SPECIALS = {UnaryKind.DIGAMMA: {-1.0, -2.0, -40.0}, UnaryKind.CBRT: {0.0}}
N = 1000
LAYOUTS = [((3, 100, 4), "strided"), ((6, 33), "transposed"), ((7, 5), "broadcast"),
           ((), "contiguous"), ((2, 0, 5), "contiguous"), ((2, 1, 3, 2, 2, 1, 2, 5), "transposed")]


def poison(shape, dtype, device):
    """Poisoned output (core's integer poison does not fit int8)."""
    if dtype == torch.int8:
        return torch.full(tuple(shape), -91, dtype=dtype, device=device)
    return poisoned(shape, dtype, device)


def keeps_subnormals(element: ElementKind) -> bool:
    """Whether kernels see subnormal inputs of `element`: Triton flushes f32 subnormals to zero
    on the GPU (and the interpreter flushes bf16 ones when widening); f64 keeps them."""
    if element is ElementKind.F64:
        return True
    return INTERPRET and element is not ElementKind.BF16


def specials_for(element: ElementKind, skip=()) -> list[float]:
    out = [s for s in SPECIALS if s not in skip or math.isnan(s)]
    if not keeps_subnormals(element):
        out = [s for s in out if abs(s) != 1e-40]
    return out


def float_input(shape, element, gen, lo, hi, device, layout="contiguous", skip=()):
    n = math.prod(shape)
    x = torch.rand(n, generator=gen, dtype=torch.float64) * (hi - lo) + lo
    sp = torch.tensor(specials_for(element, skip), dtype=torch.float64)[:n]
    x[: len(sp)] = sp
    x = x.reshape(shape).to(device=device, dtype=element.torch_dtype)
    return with_layout(x, layout)


def int_input(shape, element, gen, device, lo=-20, hi=20, layout="contiguous"):
    if element is ElementKind.U8:
        lo, hi = max(lo, 0), max(hi, 1)
    if element is ElementKind.BOOL:
        x = torch.randint(0, 2, shape, generator=gen).bool()
    else:
        x = torch.randint(lo, hi, shape, generator=gen).to(element.torch_dtype)
    return with_layout(x.to(device), layout)


def make_input(shape, element, gen, device, lo=-3.0, hi=3.0, layout="contiguous", skip=()):
    if element.is_float:
        return float_input(shape, element, gen, lo, hi, device, layout, skip)
    return int_input(shape, element, gen, device, layout=layout)


def bwd_input(x, kind):
    """Gradient cases drop NaN inputs: torch's CPU kernels give NaN or the incoming gradient
    depending on the element's position (vectorized body vs scalar tail). cbrt drops zeros
    (the float64 reference's pow derivative is NaN there; ours is +-inf, JAX's convention)."""
    x = torch.nan_to_num(x, nan=0.25, posinf=math.inf, neginf=-math.inf)
    if kind in (UnaryKind.CBRT, UnaryKind.LOGIT):  # logit: torch's sign of dy * inf at -0
        x = torch.where(x == 0, torch.full_like(x, 0.25), x)
    if kind is UnaryKind.DIGAMMA:  # torch's trigamma at negative integers is finite garbage
        x = torch.where((x <= 0) & (x == torch.round(x)), x + 0.25, x)
    return x


def rand_dy(shape, element, gen, device):
    g = torch.randn(shape, generator=gen, dtype=torch.float64)
    return with_layout(g.to(device=device, dtype=element.torch_dtype), "strided")



def aot_variant(kernel, el, row, label, **extra):
    """An AOT variant of an elementwise kernel for one table row, on the flat path."""
    t = "*" + triton_dtype(el.torch_dtype)
    const = dict(OP=row.code, ACC=compute_type(el), MODE=0, BIG=False,
                 BLOCK=512 if row.heavy else 1024, **extra)
    sig = {}
    for n in kernel.arg_names:
        if n in const:
            continue
        if n.endswith("_ptr"):
            sig[n] = t
        elif n.startswith("p") and n[-1] in "hl":  # scalar params, passed as f32
            sig[n] = "fp32"
        else:
            sig[n] = "i32"
    sig.update({n: "constexpr" for n in const})
    return AotVariant(f"{kernel.__name__} {label} {el.value}", kernel, sig, const, num_warps=4)
