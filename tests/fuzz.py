"""Differential fuzzing of `baracuda.torch` functions against torch itself.

Each case draws a problem at random (shape, layout, dtype, options), runs our function and
torch's on the same values, and checks what a torch user relies on:

- when torch accepts the call, ours gives the values and every gradient of torch's float64
  result within the dtype's tolerance (tests/tolerances.py, scaled per op), the output dtype
  and shape equal torch's, and the inputs are left untouched;
- when torch rejects the call, ours rejects it too, with an exception (never a wrong answer);
- ours never raises anything but our typed errors or the errors torch itself would raise.

The case generator is seeded per case id, so a failure names a reproducible case
(`FUZZ_CASE=<id>` reruns one). On the CPU the cases are small (the Triton interpreter);
`BARACUDA_FUZZ_CASES` sets how many run (a GPU run takes more, and larger extents, so that
the long-line kernels of the GPU are reached) and `BARACUDA_FUZZ_START` the first case id
(ids from there on are cases no earlier run drew).
"""

from __future__ import annotations

import math
import os
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from baracuda.core.tolerance import compare, tolerance_for
from baracuda.core.vocab import ElementKind

ON_GPU = torch.cuda.is_available()
DEVICE = torch.device("cuda" if ON_GPU else "cpu")


def case_ids(default_cpu: int, default_gpu: int) -> list[int]:
    """Case ids of a fuzz test: FUZZ_CASE=<id> for one, else BARACUDA_FUZZ_CASES or the
    default for this machine."""
    one = os.environ.get("FUZZ_CASE")
    if one is not None:
        return [int(one)]
    n = int(os.environ.get("BARACUDA_FUZZ_CASES", default_gpu if ON_GPU else default_cpu))
    start = int(os.environ.get("BARACUDA_FUZZ_START", 0))  # fresh cases beyond those run before
    return list(range(start, start + n))


def rng_for(name: str, case: int) -> random.Random:
    """The generator of one case of one fuzz test (independent of the order tests run in)."""
    return random.Random(f"{name}:{case}")


def floats(r: random.Random, shape: Sequence[int], dtype: torch.dtype, scale: float = 1.0,
           offset: float = 0.0) -> torch.Tensor:
    """Fresh normal values (f64 drawn on the CPU from the case's seed, then cast)."""
    g = torch.Generator().manual_seed(r.getrandbits(62))
    t = torch.randn(tuple(shape), generator=g, dtype=torch.float64) * scale + offset
    return t.to(DEVICE, dtype)


def random_layout(r: random.Random, t: torch.Tensor) -> torch.Tensor:
    """The same values under a random memory layout: a random storage order of the dims, each
    dim's stride padded at random (unless the buffer would be over 16x the tensor), or a size-1
    dim broadcast (stride 0). Always a new view into a new buffer, so the caller's tensor is
    not aliased."""
    if t.dim() == 0:
        return t.clone()
    kind = r.choice(["contiguous", "permuted", "padded", "permuted+padded", "expanded"])
    if kind == "contiguous":
        return t.clone()
    if kind == "expanded":
        ones = [i for i, d in enumerate(t.shape) if d == 1]
        if not ones:
            kind = "padded"
        else:
            # the same values as a stride-0 view: store the size-1 dims once, expand them
            base = t.clone()
            return base.expand(*t.shape) if r.random() < 0.5 else base.as_strided(
                t.shape, [0 if d == 1 else s for d, s in zip(t.shape, base.stride())])
    order = list(range(t.dim()))
    if "permuted" in kind:
        r.shuffle(order)  # order[k] = the dim stored k-th outermost
    pads = [r.choice([0, 0, 1, 3]) if "padded" in kind else 0 for _ in order]
    stored = t.permute(order)
    if math.prod(d + p for d, p in zip(stored.shape, pads)) > max(16 * t.numel(), 1 << 20):
        # padding many small dims (or an empty tensor's long ones) would allocate far more
        # than the tensor: keep the storage order, drop the padding
        pads = [0] * len(pads)
    big_shape = [d + p for d, p in zip(stored.shape, pads)]
    big = torch.full(big_shape, float("nan") if t.is_floating_point() else 0,
                     dtype=t.dtype, device=t.device)
    view = big[tuple(slice(0, d) for d in stored.shape)]
    view.copy_(stored)
    inverse = [order.index(i) for i in range(t.dim())]
    return view.permute(inverse)


@dataclass
class Outcome:
    """What one side of a differential case produced."""

    value: object = None
    grads: list = field(default_factory=list)
    error: BaseException | None = None


def _run(fn: Callable, inputs: list, grad_of: Sequence[int], upstream_seed: int) -> Outcome:
    try:
        out = fn(*inputs)
        grads = []
        diff = [inputs[i] for i in grad_of]
        if diff and isinstance(out, torch.Tensor) and out.requires_grad:
            g = torch.Generator().manual_seed(upstream_seed)
            up = torch.randn(tuple(out.shape), generator=g, dtype=torch.float64)
            up = up.to(out.device, out.dtype)
            got = torch.autograd.grad(out, diff, up, allow_unused=True)
            grads = [None if x is None else x.detach() for x in got]
        return Outcome(out.detach() if isinstance(out, torch.Tensor) else out, grads)
    except Exception as exc:  # noqa: BLE001 - an error is a result to compare
        return Outcome(error=exc)


def differential(ours: Callable, theirs: Callable, inputs: list, *, grad_of: Sequence[int] = (),
                 element: torch.dtype, scale: float = 1.0, grad_scale: float | None = None,
                 describe: str = "", allowed_extra: tuple = (),
                 grad_terms: float | None = None) -> None:
    """Run `ours` on `inputs` and torch's `theirs` on float64 copies of the floating inputs;
    assert the contract in the module docstring. `grad_of` lists the input positions whose
    gradients are compared. `allowed_extra`: exception types ours may raise where torch
    succeeds (a documented limit of a plan, e.g. Unsupported), reported as a skip.
    `grad_terms`: the magnitude of the terms a gradient is summed from, when its elements
    cancel (softmax's y (dy - sum y dy)): gradient atol is relative to it, not to the largest
    gradient. Under the Triton interpreter, casts to bf16 truncate instead of rounding to
    nearest (triton/runtime/interpreter.py `cast_impl`), so a CPU bf16 case's error is up to
    twice a GPU's and cancellations amplify it; the GPU rounds as torch does. Casts from f64 to
    bf16 are not emulated at all there (the value is converted as an integer and its bits read
    as bf16: 3.2 -> 2.8e-40); the elementwise kernels cast f64 to halves through f32 (as
    torch's conversion does: elementwise/kernels.py `_out`), so only a kernel that casts
    f64 to bf16 directly would fail here by design."""
    import pytest

    snapshot = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]

    def leaf(x, to64):
        if not isinstance(x, torch.Tensor):
            return x
        y = x.detach()
        if to64 and y.is_floating_point():
            y = y.to(torch.float64)
        y = y.clone() if to64 else x.detach()  # ours sees the layout as given
        if x.requires_grad:
            y.requires_grad_(True)
        return y

    mine = [leaf(x, False) for x in inputs]
    ref = [leaf(x, True) for x in inputs]
    seed = zlib.crc32(describe.encode())
    got = _run(ours, mine, grad_of, seed)
    want = _run(theirs, ref, grad_of, seed)
    for x, before in zip(mine, snapshot):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x.detach().nan_to_num(7.0), before.nan_to_num(7.0)), \
                f"{describe}: an input was modified"
    if want.error is not None:
        assert got.error is not None, (
            f"{describe}: torch raises {type(want.error).__name__}: {want.error}"[:600]
            + " but ours returned a result")
        return
    if got.error is not None:
        if allowed_extra and isinstance(got.error, allowed_extra):
            pytest.skip(f"{describe}: a documented limit: {got.error}"[:300])
        raise AssertionError(f"{describe}: torch succeeds, ours raises "
                             f"{type(got.error).__name__}: {got.error}"[:800]) from got.error
    assert isinstance(got.value, torch.Tensor), f"{describe}: ours returned {type(got.value)}"
    assert tuple(got.value.shape) == tuple(want.value.shape), (
        f"{describe}: shape {tuple(got.value.shape)} != torch's {tuple(want.value.shape)}")
    if want.value.is_floating_point():
        assert got.value.dtype == element, f"{describe}: dtype {got.value.dtype} != {element}"
    same = None  # torch in the inputs' own dtypes: its error bounds what we must match

    def check(name, g_ours, g_ref, tol, pick, terms=None):
        nonlocal same
        res = compare(g_ours, g_ref, tol, name, scale=terms)
        if res.ok:
            return
        if same is None:
            same = _run(theirs, [leaf(x, False) for x in inputs], grad_of, seed)
        theirs_err = None if same.error is not None else pick(same)
        if theirs_err is not None:
            t_res = compare(theirs_err, g_ref, tol, name, scale=terms)
            if math.isfinite(t_res.worst_ratio) and res.worst_ratio <= max(
                    1.0, 2.0 * t_res.worst_ratio):
                return
            raise AssertionError(f"{describe}: {res.message}; torch's own {t_res.message}")
        raise AssertionError(f"{describe}: {res.message}")

    check("out", got.value, want.value, tolerance_for(ElementKind.of(element)).scaled(scale),
          lambda o: o.value)
    for k, (pos, g_ours, g_ref) in enumerate(zip(grad_of, got.grads, want.grads)):
        if g_ref is None:
            assert g_ours is None or not bool(g_ours.any()), f"{describe}: grad {pos} not zero"
            continue
        assert g_ours is not None, f"{describe}: grad of input {pos} missing"
        # a gradient is as precise as the coarser of its input's dtype and the math's
        kinds = [ElementKind.of(inputs[pos].dtype), ElementKind.of(element)]
        gtol = max((tolerance_for(e) for e in kinds), key=lambda t: t.rtol).scaled(
            scale * (grad_scale if grad_scale is not None else 1.0))
        terms = None
        if grad_terms is not None:
            terms = max(grad_terms, float(g_ref.abs().max()) if g_ref.numel() else 0.0)
        check(f"grad[{pos}]", g_ours, g_ref, gtol,
              lambda o, k=k: o.grads[k] if k < len(o.grads) else None, terms)


def dims_for(r: random.Random, rank: int, long: int, total: int) -> list[int]:
    """A random shape of `rank` dims: extents 0..long with non-powers of two favoured, the
    product kept under `total` elements (small extents drawn more often)."""
    shape = []
    for _ in range(rank):
        pick = r.random()
        if pick < 0.05:
            d = 0
        elif pick < 0.25:
            d = 1
        elif pick < 0.8:
            d = r.randint(2, 9)
        else:
            d = r.randint(2, max(2, long))
        shape.append(d)
    # bounded with zero extents counted as one: an empty tensor's views and layouts still
    # allocate (and some code sizes buffers by) its other extents
    while math.prod(max(d, 1) for d in shape) > total:
        i = max(range(rank), key=lambda k: shape[k])
        shape[i] = max(1, shape[i] // 2)
    return shape
