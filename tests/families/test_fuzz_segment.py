"""Differential fuzzing of baracuda.torch's segment reductions (segment_sum / mean / max / min /
prod, sorted and unsorted ids, values and gradients) against float64 torch (tests/fuzz.py).

Semantics under test (the family's docs: segment/torch_api.py, descriptors.py, plans.py):

- values are jax.ops.segment_sum / segment_max / segment_min / segment_prod's (plus a mean):
  out[s] reduces the rows i with segment_ids[i] == s; ids outside [0, num_segments) (negative
  ones included) are dropped; an empty segment gives 0 (sum, mean), -inf (max), +inf (min),
  1 (prod). For sum / mean / prod that is torch.scatter_reduce(..., include_self=False) into a
  tensor filled with the identity, which is the reference here, gradients included (torch's
  prod backward is exact with zeros, as ours claims to be);
- max / min: a NaN beats every number; each (segment, column)'s gradient is split evenly
  among the rows equal to the output (NaN equal to NaN), as torch.segment_reduce and jax do.
  torch.scatter_reduce("amax") splits ties the same way but turns a NaN segment's gradient
  into NaN, so the reference computes the extremum itself and splits with `_TieSplit`;
- num_segments=None means max(segment_ids) + 1 (0 without ids);
- indices_are_sorted=True promises ascending ids; broken, the values are unspecified (as in
  jax), but the call must not fail and must keep the output's shape and dtype;
- the plans claim determinism: a rerun (with the upstream gradient in another layout) is
  bit-identical, values and gradients;
- malformed calls raise our typed errors (core.errors).
"""

from __future__ import annotations

import math

import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import BaracudaError, InvalidProblem, Unsupported
from fuzz import DEVICE, ON_GPU, case_ids, differential, dims_for, floats, random_layout, rng_for
from helpers import assert_bitwise_equal

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
KINDS = ["sum", "mean", "max", "min", "prod"]
FNS = {k: getattr(bt, f"segment_{k}") for k in KINDS}
IDENTITY = {"sum": 0.0, "mean": 0.0, "max": -math.inf, "min": math.inf, "prod": 1.0}
#: elements of data per case, and the longest row / segment count drawn
TOTAL = 400_000 if ON_GPU else 600
LONG = 5000 if ON_GPU else 40
#: rows of a "medium" case: several chunks of the counting sort (128 rows each under the
#: interpreter, 2048 on the GPU)
MEDIUM_ROWS = (2_100, 20_000) if ON_GPU else (129, 260)
#: rows of a "long" case: past the counting sort's chunk limit (64 chunks under the
#: interpreter, 4096 on the GPU) the unsorted sum / mean / prod sort by radix (4-bit digits on
#: the GPU past 65536 rows). Seconds per case under the interpreter: rare on the CPU
LONG_ROWS = (70_000, 300_000) if ON_GPU else (8_200, 9_000)


class _TieSplit(torch.autograd.Function):
    """out (the extremum, found without autograd) as a function of x whose gradient is
    torch.segment_reduce's: grad_out split evenly among the rows equal to out."""

    @staticmethod
    def forward(ctx, x, out, rows, idx):
        xv, ov = x[rows], out.gather(0, idx)
        hit = (xv == ov) | (torch.isnan(xv) & torch.isnan(ov))
        count = torch.zeros(out.shape, dtype=torch.float64, device=x.device).scatter_add(
            0, idx, hit.double())
        ctx.save_for_backward(rows, idx, hit, count)
        ctx.x_shape = x.shape
        return out.clone()

    @staticmethod
    def backward(ctx, g):
        rows, idx, hit, count = ctx.saved_tensors
        dx = g.new_zeros(ctx.x_shape)
        share = g.double().gather(0, idx) / count.gather(0, idx).clamp_min(1)
        dx[rows] = torch.where(hit, share, 0.0).to(g.dtype)
        return dx, None, None, None


def reference(kind: str, num_segments: int | torch.Tensor | None):
    """The float64 (or same-dtype) torch reference of segment_<kind>."""

    def ref(x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        s = None if num_segments is None else int(num_segments)
        if s is None:
            s = max(int(ids.max()) + 1, 0) if ids.numel() else 0
        ids = ids.long()
        rows = torch.nonzero((ids >= 0) & (ids < s)).flatten()
        xv = x[rows]
        shape = (s, *x.shape[1:])
        idx = ids[rows].view(-1, *[1] * (x.dim() - 1)).expand_as(xv)
        base = torch.full(shape, IDENTITY[kind], dtype=x.dtype, device=x.device)
        if kind in ("sum", "mean", "prod"):
            return base.scatter_reduce(0, idx, xv, kind, include_self=False)
        w = xv.detach() if kind == "max" else -xv.detach()
        nan = torch.isnan(w)
        has_nan = torch.zeros(shape, dtype=torch.float64, device=x.device).scatter_reduce(
            0, idx, nan.double(), "amax")
        best = torch.full(shape, -math.inf, dtype=w.dtype, device=x.device).scatter_reduce(
            0, idx, torch.where(nan, -math.inf, w), "amax")
        match = torch.where(has_nan.gather(0, idx) > 0, nan, (w == best.gather(0, idx)) & ~nan)
        row = rows.view(-1, *[1] * (x.dim() - 1)).expand_as(xv)
        first = torch.full(shape, n, dtype=torch.int64, device=x.device).scatter_reduce(
            0, idx, torch.where(match, row, n), "amin")
        found = first < n
        if n == 0:
            return base
        out = torch.where(found, x.detach().gather(0, first.clamp(max=n - 1)), base)
        return _TieSplit.apply(x, out, rows, idx)

    return ref


def _ids(r, n, s, sort, dtype):
    """Segment ids of n rows for s segments: uniform, with gaps (every other segment empty),
    crowded into one or two segments, or partly out of range / negative (dropped)."""
    g = torch.Generator().manual_seed(r.getrandbits(62))
    pattern = r.choice(["uniform", "uniform", "gaps", "crowded", "out_of_range"])
    hi = max(s, 1)
    if pattern == "gaps":
        ids = torch.randint(0, max(hi // 2, 1), (n,), generator=g) * 2
    elif pattern == "crowded":
        ids = torch.randint(0, 2, (n,), generator=g) + r.randrange(hi)
    elif pattern == "out_of_range":
        ids = torch.randint(-3, s + 3, (n,), generator=g)
    else:
        ids = torch.randint(0, hi, (n,), generator=g)
    if n and r.random() < 0.1:  # the id type's extremes here and there (dropped)
        info = torch.iinfo(dtype)
        for _ in range(r.randint(1, 3)):
            ids[r.randrange(n)] = r.choice([info.min, info.max, info.min + 1, info.max - 1])
        pattern += "+extremes"
    if sort:
        ids = ids.sort().values
    ids = ids.to(DEVICE, dtype)
    kind = r.random()
    if kind < 0.15 and n:  # strided ids (every other element of a longer buffer)
        big = torch.zeros(2 * n, dtype=dtype, device=DEVICE)
        big[::2] = ids
        ids = big[::2]
    elif kind < 0.2 and n:  # one id for every row, as a stride-0 view
        ids = ids[:1].expand(n)
    return ids, pattern


def _data(r, kind, shape, dtype):
    """Values per reduction: ties (repeated rows, values from a small set) and NaN / inf for
    max / min; factors near 1 with zeros (one or several per segment) for prod."""
    if kind == "prod":
        g = torch.Generator().manual_seed(r.getrandbits(62))
        # |factors| in [e^-w, e^w], w shrinking with the rows so that a long segment's product
        # stays inside f16's range (19603 factors of [0.8, 1.25] overflowed it on the GPU)
        w = 0.22 * min(1.0, 16.0 / math.sqrt(max(shape[0], 1)))
        x = torch.exp((torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * w)
        x = torch.where(torch.rand(shape, generator=g) < 0.5, x, -x)
        x = torch.where(torch.rand(shape, generator=g) < r.choice([0.0, 0.1, 0.3]), 0.0, x)
        return x.to(DEVICE, dtype)
    x = floats(r, shape, dtype, scale=r.choice([1.0, 1.0, 30.0, 1e-3]))
    if kind in ("max", "min") and x.numel():
        if r.random() < 0.3:  # values from {-1, 0, 1, 2}: ties everywhere
            x = floats(r, shape, torch.float64).mul(1.2).round().clamp(-1, 2).to(dtype)
        if r.random() < 0.4 and shape[0] > 2:  # exact copies of whole rows
            src = r.randrange(shape[0])
            for i in r.sample(range(shape[0]), k=max(1, shape[0] // 3)):
                x[i] = x[src]
        if r.random() < 0.2:  # NaN or an infinity here and there
            flat = x.view(-1)
            for _ in range(r.randint(1, 3)):
                flat[r.randrange(flat.numel())] = r.choice([math.nan, math.inf, -math.inf])
    return x


def _rows(r):
    pick = r.random()
    if pick < 0.04:
        return 0
    if pick < 0.1:
        return 1
    if pick < (0.13 if ON_GPU else 0.105):
        return r.randint(*LONG_ROWS)
    if pick < 0.18:
        return r.randint(*MEDIUM_ROWS)
    if pick < 0.7:
        return r.randint(2, 12)
    return r.randint(2, LONG)


def _segments(r, n):
    pick = r.random()
    if pick < 0.06:
        return 0
    if pick < 0.2:
        return 1
    if pick < 0.75:
        return r.randint(2, 12)
    return r.randint(2, max(2, min(LONG, 2 * n + 2)))  # many segments, most of them empty


def _tol(dtype, kind):
    half = dtype in (torch.float16, torch.bfloat16)
    return (4.0 if half else 2.0) * (4.0 if kind in ("prod", "mean") else 1.0)


def _bitwise_rerun(fn, x, ids, num_segments, sort, with_grad, r, desc):
    """Two more runs of ours (the second with the upstream gradient in a random layout):
    values and gradients must be bit-identical."""
    runs, up = [], None
    for k in range(2):
        xx = x.detach().requires_grad_(with_grad)
        out = fn(xx, ids, num_segments, indices_are_sorted=sort)
        grad = None
        if with_grad:
            up = floats(r, tuple(out.shape), out.dtype) if k == 0 else random_layout(r, up)
            (grad,) = torch.autograd.grad(out, xx, up)
        runs.append((out.detach(), grad))
    assert_bitwise_equal(runs[0][0], runs[1][0], f"{desc}: out")
    if with_grad:
        assert_bitwise_equal(runs[0][1], runs[1][1], f"{desc}: grad")


@pytest.mark.parametrize("case", case_ids(default_cpu=80, default_gpu=400))
def test_segment_reduce(case):
    r = rng_for("segment", case)
    kind = r.choice(KINDS)
    sort = r.random() < 0.5
    dtype = r.choice(DTYPES)
    n = _rows(r)
    s = _segments(r, n)
    rank = r.choice([0, 0, 1, 1, 1, 2, 2, 3, 4, 5, 6])
    per_row = max(1, TOTAL // max(n, 1))
    feat = dims_for(r, rank, max(2, min(LONG, per_row)), per_row)
    if n > LONG:  # a medium or long case: short rows
        feat = [min(d, 2) for d in feat[:2 if n < LONG_ROWS[0] else 1]]
    shape = [n, *feat]
    id_dtype = r.choice([torch.int64, torch.int64, torch.int32])
    ids, pattern = _ids(r, n, s, sort, id_dtype)
    num_segments = r.choice([None, torch.tensor(s)]) if r.random() < 0.15 else s
    lie = sort and n > 2 and r.random() < 0.08  # indices_are_sorted=True over unsorted ids
    if lie:
        ids = ids.flip(0) if r.random() < 0.5 else ids[torch.randperm(
            n, generator=torch.Generator().manual_seed(r.getrandbits(62))).to(DEVICE)]
    grad = r.random() < 0.85
    x = random_layout(r, _data(r, kind, shape, dtype)).requires_grad_(grad)
    fn = FNS[kind]
    desc = (f"case {case}: segment_{kind} sorted={sort}{' (broken)' if lie else ''} {dtype} "
            f"data {shape} strides {x.stride()} S={num_segments} ids {pattern} {id_dtype} "
            f"stride {ids.stride()}")
    if num_segments is None and n and int(ids.max()) + 1 > 2**31 - 2:
        # an id near the type's maximum sets num_segments: more than the plans' int32
        # positions, refused before the output is allocated
        with pytest.raises(Unsupported, match="num_segments"):
            fn(x, ids, None, indices_are_sorted=sort)
        return
    if lie:
        # unspecified values (jax too): only a result of the right shape and dtype, and
        # still deterministic
        out = fn(x, ids, num_segments, indices_are_sorted=True)
        want = s if num_segments is not None else (max(int(ids.max()) + 1, 0) if n else 0)
        assert out.shape == (want, *feat) and out.dtype == dtype, desc
        _bitwise_rerun(fn, x, ids, num_segments, True, grad, r, desc)
        return
    differential(lambda a, i: fn(a, i, num_segments, indices_are_sorted=sort),
                 reference(kind, num_segments), [x, ids], grad_of=[0] if grad else [],
                 element=dtype, describe=desc, scale=_tol(dtype, kind))
    _bitwise_rerun(fn, x, ids, num_segments, sort, grad, r, desc)


def _invalid(r):
    """A malformed call and the typed error it must raise."""
    x = floats(r, [5, 3], torch.float32)
    ids = torch.tensor([0, 1, 1, 3, 0], device=DEVICE)
    what = r.choice(["ids_len", "ids_2d", "ids_float", "ids_int16", "ids_bool", "neg_s",
                     "float_s", "bool_s", "rank0", "int_data", "bool_data", "list_data",
                     "list_ids", "huge_s"])
    s = 4
    if what == "ids_len":
        ids = ids[: r.randint(0, 4)]
    elif what == "ids_2d":
        ids = ids[None] if r.random() < 0.5 else ids[:, None]
    elif what == "ids_float":
        ids = ids.to(r.choice([torch.float32, torch.float64]))
    elif what == "ids_int16":
        ids = ids.to(r.choice([torch.int16, torch.uint8, torch.int8]))
    elif what == "ids_bool":
        ids = ids > 0
    elif what == "neg_s":
        s = r.choice([-1, -5])
    elif what == "float_s":
        s = r.choice([2.5, 4.0])
    elif what == "bool_s":
        s = True
    elif what == "rank0":
        x, ids = x[0, 0], ids[:1]
    elif what == "int_data":
        x = x.to(r.choice([torch.int32, torch.int64]))
    elif what == "bool_data":
        x = x > 0
    elif what == "list_data":
        x = x.tolist()
    elif what == "list_ids":
        ids = ids.tolist()
    else:
        s = 1 << 40  # more segments than the plans' int32 positions: refused, not allocated
    err = Unsupported if what in ("int_data", "bool_data", "huge_s") else InvalidProblem
    return what, x, ids, s, err


@pytest.mark.parametrize("case", case_ids(default_cpu=16, default_gpu=60))
def test_segment_invalid_calls(case):
    r = rng_for("segment_invalid", case)
    what, x, ids, s, err = _invalid(r)
    kind = r.choice(KINDS)
    sort = r.random() < 0.5
    with pytest.raises(err) as info:
        FNS[kind](x, ids, s, indices_are_sorted=sort)
    assert isinstance(info.value, BaracudaError)
    assert f"segment_{kind}" in str(info.value) or "Segment" in str(info.value), \
        f"case {case} ({what}): the message names no function: {info.value}"
