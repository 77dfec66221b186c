"""Differential fuzzing of baracuda.torch's GEMM functions against torch (tests/fuzz.py):
matmul, mm, bmm, addmm, baddbmm, linear, einsum (two operands)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import baracuda.torch as bt
from baracuda.core.errors import Unsupported
from fuzz import ON_GPU, case_ids, differential, floats, random_layout, rng_for

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
LIMITS = (Unsupported, NotImplementedError)


def _ext(r):
    """A GEMM extent: 1, 17, non-powers of two, sometimes 0."""
    big = ON_GPU and r.random() < 0.3
    return r.choice([0, 1, 1, 17, 3, 5, 7, 9, 13, 16, r.randint(2, 700 if big else 24)]) \
        if r.random() > 0.03 else 0


def _batch(r, n=None):
    n = r.randint(0, 2) if n is None else n
    return [r.choice([1, 2, 3]) for _ in range(n)]


def _scale(dtype, k):
    # error of a k-term dot product grows ~ sqrt(k); f32 runs without TF32
    base = 4.0 if dtype in (torch.float16, torch.bfloat16) else 2.0
    return base * max(1.0, (max(k, 1) ** 0.5) / 4)


def _mk(r, shape, dtype):
    return random_layout(r, floats(r, shape, dtype)).requires_grad_(r.random() < 0.8)


@pytest.fixture(autouse=True)
def _no_tf32():
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = before


@pytest.mark.parametrize("case", case_ids(default_cpu=48, default_gpu=300))
def test_matmul_mm_bmm(case):
    r = rng_for("matmul", case)
    dtype = r.choice(DTYPES)
    kind = r.choice(["matmul", "matmul", "mm", "bmm"])
    m, k, n = _ext(r), _ext(r), _ext(r)
    if kind == "mm":
        sa, sb = [m, k], [k, n]
    elif kind == "bmm":
        b = r.randint(0, 3)
        sa, sb = [b, m, k], [b, k, n]
    else:
        ra, rb = r.randint(1, 4), r.randint(1, 4)
        ba, bb = _batch(r, max(ra - 2, 0)), _batch(r, max(rb - 2, 0))
        if ba and bb and r.random() < 0.5:  # broadcasting batch dims
            bb = [1 if r.random() < 0.5 else x for x in ba[-len(bb):]]
        sa = [k] if ra == 1 else [*ba, m, k]
        sb = [k] if rb == 1 else [*bb, k, n]
    if r.random() < 0.05:
        sb[-2 if len(sb) > 1 else 0] += 1  # a mismatched inner extent: torch raises
    a, b = _mk(r, sa, dtype), _mk(r, sb, dtype)
    fn = {"matmul": (bt.matmul, torch.matmul), "mm": (bt.mm, torch.mm),
          "bmm": (bt.bmm, torch.bmm)}[kind]
    if r.random() < 0.05 and a.numel() and b.numel():
        # mixed dtypes (differential would cast both to f64): torch raises, so must ours
        # (torch skips its dtype check on some empty products)
        other = b.detach().to(torch.float64 if dtype != torch.float64 else torch.float32)
        with pytest.raises(RuntimeError):
            fn[1](a.detach(), other)
        with pytest.raises(RuntimeError):
            fn[0](a.detach(), other)
        return
    desc = (f"case {case}: {kind} {dtype} {sa}@{sb} strides {a.stride()} {b.stride()} "
            f"{b.dtype}")
    differential(fn[0], fn[1], [a, b], grad_of=[0, 1], element=dtype, describe=desc,
                 scale=_scale(dtype, k), allowed_extra=LIMITS)


@pytest.mark.parametrize("case", case_ids(default_cpu=48, default_gpu=300))
def test_addmm_baddbmm_linear(case):
    r = rng_for("addmm", case)
    dtype = r.choice(DTYPES)
    kind = r.choice(["addmm", "baddbmm", "linear"])
    m, k, n = _ext(r), _ext(r), _ext(r)
    beta = r.choice([1, 1, 0, 0.5, -2.0])
    alpha = r.choice([1, 1, 2.0, -0.5, 0])
    if kind == "linear":
        lead = _batch(r, r.randint(0, 2))
        x, w = _mk(r, [*lead, m, k] if r.random() < 0.8 else [k], dtype), _mk(r, [n, k], dtype)
        bias = _mk(r, r.choice([[n], [n], [1], []]), dtype) if r.random() < 0.7 else None
        inputs = [x, w, bias]
        desc = f"case {case}: linear {dtype} x {list(x.shape)} w {[n, k]} bias " \
               f"{None if bias is None else list(bias.shape)}"
        differential(bt.linear, F.linear, inputs, grad_of=[0, 1, 2] if bias is not None else
                     [0, 1], element=dtype, describe=desc, scale=_scale(dtype, k),
                     allowed_extra=LIMITS)
        return
    bsz = r.randint(0, 3)
    full = [m, n] if kind == "addmm" else [bsz, m, n]
    cshape = full[r.randint(0, len(full)):]  # broadcast input
    cshape = [1 if r.random() < 0.3 else x for x in cshape]
    c = _mk(r, cshape, dtype)
    if kind == "addmm":
        a, b = _mk(r, [m, k], dtype), _mk(r, [k, n], dtype)
        ours, theirs = bt.addmm, torch.addmm
    else:
        a, b = _mk(r, [bsz, m, k], dtype), _mk(r, [bsz, k, n], dtype)
        ours, theirs = bt.baddbmm, torch.baddbmm
    if beta == 0 and c.numel() and r.random() < 0.5:
        # beta=0: torch ignores the input, NaN included
        c = c.detach().clone().fill_(float("nan")).requires_grad_(c.requires_grad)
    desc = (f"case {case}: {kind} {dtype} c {cshape} a {list(a.shape)} b {list(b.shape)} "
            f"beta {beta} alpha {alpha}")
    differential(lambda x, y, z: ours(x, y, z, beta=beta, alpha=alpha),
                 lambda x, y, z: theirs(x, y, z, beta=beta, alpha=alpha), [c, a, b],
                 grad_of=[0, 1, 2], element=dtype, describe=desc, scale=_scale(dtype, k) * 2,
                 allowed_extra=LIMITS)


@pytest.mark.parametrize("case", case_ids(default_cpu=32, default_gpu=200))
def test_einsum(case):
    r = rng_for("einsum", case)
    dtype = r.choice(DTYPES)
    letters = list("abcdefg")
    r.shuffle(letters)
    na, nb = r.randint(1, 4), r.randint(1, 4)
    sa = "".join(r.sample(letters, na))
    sb = "".join(r.sample(letters, nb))
    sizes = {c: r.choice([1, 2, 3, 5, 7]) for c in letters}
    allc = sorted(set(sa + sb))
    out = "".join(c for c in allc if r.random() < 0.5)
    r.shuffle(list(out))
    explicit = r.random() < 0.7
    eq = f"{sa},{sb}->{out}" if explicit else f"{sa},{sb}"
    a = _mk(r, [sizes[c] if r.random() > 0.1 else 1 for c in sa], dtype)
    b = _mk(r, [sizes[c] for c in sb], dtype)
    desc = f"case {case}: einsum '{eq}' {dtype} {list(a.shape)} {list(b.shape)}"
    differential(lambda x, y: bt.einsum(eq, x, y), lambda x, y: torch.einsum(eq, x, y), [a, b],
                 grad_of=[0, 1], element=dtype, describe=desc, scale=_scale(dtype, 50) * 2,
                 allowed_extra=LIMITS)
