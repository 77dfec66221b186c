"""Differential fuzzing of baracuda.torch's normalizations (rms_norm, layer_norm, group_norm,
batch_norm, instance_norm) against torch.nn.functional (tests/fuzz.py).

Local additions to the shared harness: `_Running` compares the running_mean / running_var
buffers that batch_norm / instance_norm update in place with torch's (run on float64 copies),
and `_terms` gives the harness's `grad_terms`: the size of the terms a norm's dx is summed
from (rstd * |dy| * |gamma|), which cancel.
"""

from __future__ import annotations

import contextlib
import math

import pytest
import torch
import torch.nn.functional as F

import baracuda.torch as bt
from baracuda.core.tolerance import compare, tolerance_for
from baracuda.core.vocab import ElementKind
from fuzz import ON_GPU, case_ids, differential, dims_for, floats, random_layout, rng_for

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
HALVES = (torch.float16, torch.bfloat16)
#: Normal extents; long rows / spatial extents are drawn separately (_stretch).
LONG = 64 if not ON_GPU else 600
TOTAL = 3_000 if not ON_GPU else 2_000_000
#: |dy| of the harness's upstream gradient (standard normal draws) is below this in practice.
DY_MAX = 5.0


def _param_dtype(r, dtype):
    """Mostly the input's dtype; halves sometimes take f32 parameters (mixed precision)."""
    return torch.float32 if dtype in HALVES and r.random() < 0.25 else dtype


def _x(r, shape, dtype):
    scale = r.choice([1.0, 1.0, 0.05, 20.0])
    offset = r.choice([0.0, 0.0, 0.0, 3.0]) * scale
    return floats(r, shape, dtype, scale=scale, offset=offset), offset


def _eps(r, offset):
    # eps = 0 only without an offset: a constant row then has var = 0 exactly on both sides
    return r.choice([1e-5, 1e-5, 1e-6, 0.1, 1e-3] + ([0.0] if offset == 0 else []))


def _param(r, shape, dtype, grad, offset=0.0):
    t = random_layout(r, floats(r, shape, dtype, scale=r.choice([1.0, 0.5, 2.0]), offset=offset))
    return t.requires_grad_(grad)


def _stretch(r, shape, dim, others_from=0):
    """Make `shape[dim]` long sometimes (GPU: up to 262144 in <= 32M elements, so the long-row
    kernels run; CPU: a few thousand, the multi-chunk paths under the interpreter), shrinking
    the other dims (from `others_from` on) to keep the total."""
    if not shape or r.random() >= (0.2 if ON_GPU else 0.08) or 0 in shape:
        return shape
    shape = list(shape)
    shape[dim] = r.randint(4097, 262144) if ON_GPU else r.randint(600, 20_000)
    # 32M elements on the GPU: a case holds ~10 float64 copies, and workers share the GPU
    total = 32_000_000 if ON_GPU else 40_000
    others = [i for i in range(others_from, len(shape)) if i != dim % len(shape)]
    while math.prod(shape) > total and any(shape[i] > 1 for i in others):
        i = max(others, key=lambda k: shape[k])
        shape[i] = max(1, shape[i] // 2)
    return shape


def _rstd_max(x64, dims, eps, rms=False):
    """The largest finite rstd over groups reduced along `dims` (float64)."""
    if x64.numel() == 0 or not dims:
        return 1.0
    if rms:
        var = (x64 * x64).mean(dim=dims)
    else:
        var = x64.var(dim=dims, unbiased=False)
    rstd = (var + eps).rsqrt()
    rstd = rstd[torch.isfinite(rstd)]
    return float(rstd.max()) if rstd.numel() else 1.0


def _cond(x64, dims, eps):
    """How much larger the terms of y = (x - mean) * rstd are than y (>= 1): in a group whose
    |mean| >> std (an offset, or a short group of close values among many) the output's
    rounding error follows (|x| + |mean|) * rstd * u, not |y| (float32 layer_norm of
    [374400, 3] rows: 1.6e-4 error at |y| ~ 0.04, torch's own 1.3e-4). The output's
    tolerance is scaled by it, the gradients' not."""
    if x64.numel() == 0 or not dims:
        return 1.0
    mean = x64.mean(dim=dims, keepdim=True)
    rstd = (x64.var(dim=dims, unbiased=False, keepdim=True) + eps).rsqrt()
    ok = torch.isfinite(rstd).expand_as(x64)
    terms = ((x64.abs() + mean.abs()) * rstd)[ok]
    y = ((x64 - mean) * rstd)[ok]
    if terms.numel() == 0:
        return 1.0
    return max(1.0, float(terms.max()) / max(float(y.abs().max()), 1.0))


def _running_rstd(var64, eps):
    rstd = (var64 + eps).rsqrt()
    rstd = rstd[torch.isfinite(rstd)]
    return float(rstd.max()) if rstd.numel() else 1.0


def _terms(rstd, w):
    wmax = float(w.detach().abs().max()) if w is not None and w.numel() else 1.0
    return DY_MAX * rstd * max(wmax, 1e-3)


def _scale(dtype):
    return 4.0 if dtype in HALVES else 8.0


def _dense(t):
    """torch's reference input: a contiguous copy that requires grad (autograd passes
    through). torch's CPU batch_norm backward is wrong for some channels-last-like strides,
    e.g. float64 x of shape [3, 2, 2901, 1, 2], strides (11604, 1, 4, 2, 2), eval mode: dx
    off by O(1); its CUDA layer_norm backward (torch 2.11) returns empty or zero parameter
    gradients when the input does not require grad."""
    if t is None:
        return None
    if t.requires_grad or not torch.is_grad_enabled() or not t.is_floating_point():
        return t.contiguous()
    return t.detach().contiguous().requires_grad_(True)


def _ref_params(w, b, shape):
    """The parameters torch's reference takes, working around torch bugs (the function is
    the same): a bias without a weight gets a weight of ones (torch's group / batch /
    instance norm backward then fails, "tensor does not have a device"), and every present
    parameter requires grad (torch's CUDA backward may return an empty gradient for one that
    does not: "returned an invalid gradient at index 2 - got [0]")."""
    if w is None and b is not None:
        w = torch.ones(shape, dtype=b.dtype, device=b.device)

    return _dense(w), _dense(b)


def _on_cpu_if(cond):
    """Decorator: the function runs on CPU copies (autograd crosses devices) when `cond`:
    torch 2.11's CUDA layer_norm / rms_norm of many short rows (e.g. [22, 26, 3, 3, 31, 8]
    over [8]) returns parameter gradients of the wrong shape ("returned an invalid gradient
    at index 2 - got [0]") or zeros (dbias over [395, 8, 3, 6, 5, 1] normalized over [1])."""
    def wrap(fn):
        if not cond:
            return fn

        def on_cpu(*args):
            dev = next(a.device for a in args if isinstance(a, torch.Tensor))
            out = fn(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
            return out.to(dev)

        return on_cpu

    return wrap


def _no_cudnn():
    """torch's cuDNN batch norm takes 2 to 5 dims only: the reference runs torch's native
    kernels."""
    return torch.backends.cudnn.flags(enabled=False) if ON_GPU else contextlib.nullcontext()


def _grad_of(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.requires_grad]


def _compare(ours, theirs, x, w, b, dtype, cond, terms, desc):
    """The differential check of a norm case: output and the gradients of x, weight, bias
    (those that require grad); tolerances widened by the rows' conditioning `cond` (|mean| >>
    spread), gradient atol relative to `terms` (the size of the cancelling terms)."""
    inputs = [x, w, b]
    differential(ours, theirs, inputs, grad_of=_grad_of(inputs), element=dtype,
                 scale=_scale(dtype) * cond, grad_scale=1 / cond, describe=desc,
                 grad_terms=terms)


# -- rms_norm / layer_norm ------------------------------------------------------------------------
def _row_case(name, case):
    r = rng_for(name, case)
    dtype = r.choice(DTYPES)
    rank = r.randint(1, 8)
    shape = _stretch(r, dims_for(r, rank, LONG, TOTAL), -1)
    n_norm = r.randint(1, min(3, rank))
    norm = list(shape[rank - n_norm:])
    x, offset = _x(r, shape, dtype)
    x = random_layout(r, x).requires_grad_(r.random() < 0.9)
    pdt = _param_dtype(r, dtype)
    w = _param(r, norm, pdt, r.random() < 0.8, 1.0) if r.random() < 0.7 else None
    b = _param(r, norm, pdt, r.random() < 0.8) if r.random() < 0.6 else None
    invalid = None
    if r.random() < 0.08:
        invalid = r.choice(["not suffix", "weight length", "too long", "empty shape"])
        if invalid == "not suffix":
            k = r.randrange(len(norm))
            norm[k] += r.choice([1, 2])
        elif invalid == "weight length":
            w = _param(r, norm[:-1] + [norm[-1] + 1], pdt, True)
        elif invalid == "too long":
            norm = [2] * (rank - len(norm)) + [3] + list(shape)
        else:
            norm = []
    # torch takes any int sequence (an int alone is a TypeError in F.*, which ours accepts
    # on purpose, as nn.LayerNorm does: not drawn)
    kind = r.choice(["list", "tuple", "size"])
    if kind != "list":
        norm = tuple(norm) if kind == "tuple" else torch.Size(norm)
    return r, dtype, shape, norm, x, offset, w, b, invalid


def _short_rows(shape, norm, invalid):
    """Many short rows on the GPU: torch's reference runs on the CPU (_on_cpu_if)."""
    if not ON_GPU or invalid or len(norm) > len(shape):
        return False
    m = math.prod(shape[len(shape) - len(norm):])
    return m <= 64 and math.prod(shape) >= 32768 * max(m, 1)


def _norm_dims(shape, norm):
    return tuple(range(len(shape) - len(norm), len(shape)))


@pytest.mark.parametrize("case", case_ids(default_cpu=70, default_gpu=400))
def test_rms_norm_matches_torch(case):
    r, dtype, shape, norm, x, offset, w, _, invalid = _row_case("rms_norm", case)
    eps = r.choice([None, None, *([_eps(r, offset)] * 2)])
    # torch's eps=None is finfo(input dtype).eps: the float64 reference must use the input's
    ref_eps = torch.finfo(dtype).eps if eps is None else eps

    def ours(t, w):
        return bt.rms_norm(t, norm, w, eps)

    @_on_cpu_if(_short_rows(shape, norm, invalid))
    def theirs(t, w):
        w, _ = _ref_params(w, None, norm)
        return F.rms_norm(_dense(t), norm, w, ref_eps if t.dtype == torch.float64 else eps)

    dims = _norm_dims(shape, norm) if invalid is None else ()
    terms = _terms(_rstd_max(x.detach().double(), dims, ref_eps, rms=True), w)
    desc = (f"case {case}: rms_norm {dtype} {shape} stride {tuple(x.stride())} norm {norm} "
            f"w {None if w is None else (w.dtype, tuple(w.stride()))} eps {eps} "
            f"invalid={invalid}")
    inputs = [x, w]
    differential(ours, theirs, inputs, grad_of=_grad_of(inputs), element=dtype,
                 scale=_scale(dtype), describe=desc, grad_terms=terms)


@pytest.mark.parametrize("case", case_ids(default_cpu=70, default_gpu=400))
def test_layer_norm_matches_torch(case):
    r, dtype, shape, norm, x, offset, w, b, invalid = _row_case("layer_norm", case)
    eps = _eps(r, offset)

    def ours(t, w, b):
        return bt.layer_norm(t, norm, w, b, eps)

    @_on_cpu_if(_short_rows(shape, norm, invalid))
    def theirs(t, w, b):
        return F.layer_norm(_dense(t), norm, *_ref_params(w, b, norm), eps)

    dims = _norm_dims(shape, norm) if invalid is None else ()
    terms = _terms(_rstd_max(x.detach().double(), dims, eps), w)
    cond = _cond(x.detach().double(), dims, eps)
    desc = (f"case {case}: layer_norm {dtype} {shape} stride {tuple(x.stride())} norm {norm} "
            f"w {None if w is None else (w.dtype, tuple(w.stride()))} "
            f"b {None if b is None else (b.dtype, tuple(b.stride()))} eps {eps} "
            f"invalid={invalid}")
    _compare(ours, theirs, x, w, b, dtype, cond, terms, desc)


# -- channel norms --------------------------------------------------------------------------------
def _chan_case(name, case, min_rank=2):
    r = rng_for(name, case)
    dtype = r.choice(DTYPES)
    rank = r.randint(min_rank, 8) if r.random() < 0.97 else 1
    shape = dims_for(r, rank, LONG, TOTAL)
    while not ON_GPU and rank >= 2 and shape[0] * shape[1] > 40:
        # the interpreter's cost grows with the (sample, channel) pairs: each is a loop of
        # the kernels, whatever the spatial extent
        i = 0 if shape[0] > shape[1] else 1
        shape[i] = max(1, shape[i] // 2)
    if rank >= 3:
        shape = _stretch(r, shape, r.randrange(2, rank), others_from=0)
    x, offset = _x(r, shape, dtype)
    x = random_layout(r, x).requires_grad_(r.random() < 0.9)
    c = shape[1] if rank > 1 else 0
    pdt = _param_dtype(r, dtype)
    w = _param(r, [c], pdt, r.random() < 0.8, 1.0) if r.random() < 0.7 else None
    b = _param(r, [c], pdt, r.random() < 0.8) if r.random() < 0.6 else None
    invalid = None
    if r.random() < 0.06:
        invalid = "weight length"
        if w is None or r.random() < 0.5:
            w = _param(r, [c + r.choice([1, 2])], pdt, True)
        else:
            b = _param(r, [max(0, c - 1)], pdt, True) if c > 0 else _param(r, [1], pdt, True)
    return r, dtype, shape, x, offset, w, b, invalid


@pytest.mark.parametrize("case", case_ids(default_cpu=60, default_gpu=400))
def test_group_norm_matches_torch(case):
    r, dtype, shape, x, offset, w, b, invalid = _chan_case("group_norm", case)
    c = shape[1] if len(shape) > 1 else 1
    divisors = [g for g in range(1, max(c, 1) + 1) if c % g == 0] if c else [1, 2, 3]
    groups = r.choice(divisors)
    if r.random() < 0.08 and c > 1:
        invalid = "groups"
        groups = r.choice([g for g in range(2, c + 2) if c % g] or [0])
    eps = _eps(r, offset)

    # groups of one value normalize to exactly 0 (y = bias): both sides return rounding
    # noise there (torch's float64 too), which the harness would scale its atol to
    shift = 1.0 if len(shape) >= 2 and groups and math.prod(shape[1:]) == groups else 0.0
    if eps == 0 and len(shape) >= 2 and groups and math.prod(shape[1:]) < 4 * groups:
        # a small group of equal values (likely in halves) has var = 0: ours and torch in
        # the input dtype give rstd = inf, torch's float64 1 / its rounding noise
        eps = 1e-5

    def ours(t, w, b):
        return bt.group_norm(t, groups, w, b, eps) + shift

    def theirs(t, w, b):
        return _group_norm_ref(t, w, b) + shift

    def _group_norm_ref(t, w, b):
        if t.numel() == 0 and t.dim() >= 2 and not invalid:
            # torch's dweight of empty groups is NaN (0 * the NaN statistics); the sum over
            # no elements is 0, which ours gives: compare against the empty affine map
            shape = [1, t.shape[1]] + [1] * (t.dim() - 2)
            return t * (1 if w is None else w.view(shape)) + (0 if b is None else b.view(shape))
        with _no_cudnn():
            return F.group_norm(_dense(t), groups, *_ref_params(w, b, b.shape if b is not None
                                                                 else None), eps)

    terms = cond = 1.0
    if invalid is None and len(shape) >= 2 and x.numel():
        xg = x.detach().double().reshape(shape[0], groups, -1)
        terms, cond = _terms(_rstd_max(xg, (2,), eps), w), _cond(xg, (2,), eps)
    desc = (f"case {case}: group_norm {dtype} {shape} stride {tuple(x.stride())} groups "
            f"{groups} w {None if w is None else (w.dtype, tuple(w.shape), w.stride())} "
            f"b {None if b is None else (b.dtype, tuple(b.shape), b.stride())} eps {eps} "
            f"invalid={invalid}")
    _compare(ours, theirs, x, w, b, dtype, cond, terms, desc)


class _Running:
    """Running statistics of one batch_norm / instance_norm case: ours updates the drawn
    buffers (in their drawn layout and dtype) in place; each torch call gets float64 copies.
    `check` compares the buffers after ours' call with those after torch's float64 call."""

    def __init__(self, r, c, dtype, present):
        self.ours = self.base = None
        self.theirs = []
        if not present:
            return
        sdt = torch.float32 if dtype in HALVES and r.random() < 0.5 else dtype
        mean = floats(r, [c], sdt, scale=r.choice([0.0, 1.0]))
        var = floats(r, [c], sdt).abs() + r.choice([0.0, 0.5])
        self.base = (mean.double(), var.double())
        self.ours = (random_layout(r, mean), random_layout(r, var))

    def for_ours(self):
        return self.ours if self.ours is not None else (None, None)

    def for_theirs(self):
        if self.base is None:
            return None, None
        pair = tuple(t.clone() for t in self.base)
        self.theirs.append(pair)
        return pair

    def check(self, desc, scale, x, momentum):
        """atol relative to the terms each buffer is summed from: the old value and momentum
        times mean |x| (mean) or mean x^2 (var); a batch mean near 0 of 10M values is
        rounding noise of their sum, not of itself."""
        if self.ours is None or not self.theirs:
            return
        x64 = x.detach().double()
        m = abs(momentum or 0.0)
        size = [m * float(x64.abs().mean()), m * float((x64 * x64).mean())] if x.numel() \
            else [0.0, 0.0]
        for k, (name, got, want) in enumerate(zip(("running_mean", "running_var"), self.ours,
                                                  self.theirs[0])):
            tol = tolerance_for(ElementKind.of(got.dtype)).scaled(scale)
            finite = want[torch.isfinite(want)].abs()
            old = self.base[k].abs().max() if self.base[k].numel() else 0.0
            terms = max(float(finite.max()) if finite.numel() else 0.0, float(old), size[k])
            res = compare(got, want, tol, name, scale=terms or None)
            assert res.ok, f"{desc}: {res.message}"


def _bn_takes_zero_eps(training: bool) -> bool:
    """Whether this torch's F.batch_norm takes eps = 0 (2.13 rejects it in training only,
    2.11 always; ours follows 2.13): eps = 0 is drawn only where ours and torch agree."""
    try:
        F.batch_norm(torch.ones(2, 1), torch.zeros(1), torch.ones(1), training=training, eps=0.0)
    except ValueError:
        return training  # rejected: drawn in training, where ours rejects it too
    return True


_BN_ZERO_EPS = {t: _bn_takes_zero_eps(t) for t in (False, True)}


def _momentum(r):
    # None: nn.BatchNorm's cumulative average; F.batch_norm / instance_norm take a float only
    return r.choice([0.1, 0.1, 0.0, 1.0, 0.37]) if r.random() < 0.97 else None


def _stats_rows(name, x64, shape, c):
    """(x as f64 rows of the values one statistic is taken over, the reduced axis)."""
    if name == "batch_norm":  # per channel, over the batch and spatial dims
        return x64.transpose(0, 1).reshape(c, -1), (1,)
    return x64.reshape(shape[0], c, -1), (2,)  # instance_norm: per sample and channel


#: per function: (torch.nn.functional's function, ours, P(batch statistics), P(running
#: buffers given with batch statistics))
_RUNNING_NORMS = {
    "batch_norm": (F.batch_norm, bt.batch_norm, 0.6, 0.6),
    "instance_norm": (F.instance_norm, bt.instance_norm, 0.75, 0.5),
}


@pytest.mark.parametrize("name", list(_RUNNING_NORMS))
@pytest.mark.parametrize("case", case_ids(default_cpu=60, default_gpu=400))
def test_running_norm_matches_torch(name, case):
    """batch_norm (training / eval) and instance_norm (use_input_stats or not): the same
    positional signature, (input, running_mean, running_var, weight, bias, batch statistics,
    momentum, eps); outputs, gradients and the running buffers against torch's."""
    theirs_fn, ours_fn, p_batch, p_running = _RUNNING_NORMS[name]
    r, dtype, shape, x, offset, w, b, invalid = _chan_case(name, case)
    batch_stats = r.random() < p_batch
    c = shape[1] if len(shape) > 1 else 0
    running = _Running(r, c, dtype, not batch_stats or r.random() < p_running)
    momentum, eps = _momentum(r), _eps(r, offset)
    if eps == 0 and (not _BN_ZERO_EPS[batch_stats] if name == "batch_norm"
                     else math.prod(shape[2:]) < 4):  # as group_norm's small groups
        eps = 1e-5
    # one buffer only, or eval without buffers: torch raises
    drop = r.choice(["mean", "var", "both"]) if r.random() < 0.05 else None
    if momentum is None:
        invalid = "momentum None"

    def pick(pair):
        rm, rv = pair
        return (None if drop in ("mean", "both") else rm, None if drop in ("var", "both") else rv)

    def ours(t, w, b):
        return ours_fn(t, *pick(running.for_ours()), w, b, batch_stats, momentum, eps)

    def theirs(t, w, b):
        with _no_cudnn():
            return theirs_fn(_dense(t), *pick(running.for_theirs()),
                             *_ref_params(w, b, b.shape if b is not None else None),
                             batch_stats, momentum, eps)

    terms = cond = 1.0
    if len(shape) >= 2 and x.numel() and invalid is None:
        rows, axes = _stats_rows(name, x.detach().double(), shape, c)
        if batch_stats:
            terms, cond = _terms(_rstd_max(rows, axes, eps), w), _cond(rows, axes, eps)
        elif running.base is not None and c:
            terms = _terms(_running_rstd(running.base[1], eps), w)
    desc = (f"case {case}: {name} {dtype} {shape} stride {tuple(x.stride())} batch stats "
            f"{batch_stats} running {None if running.ours is None else running.ours[0].dtype} "
            f"drop {drop} momentum {momentum} eps {eps} "
            f"w {None if w is None else (w.dtype, tuple(w.shape))} "
            f"b {None if b is None else (b.dtype, tuple(b.shape))} invalid={invalid}")
    _compare(ours, theirs, x, w, b, dtype, cond, terms, desc)
    if drop is None:
        running.check(desc, 8.0, x, momentum)
