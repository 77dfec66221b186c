"""Reductions: baracuda.torch's functions against torch (values, dtypes, NaN, empty, errors,
gradients), determinism, torch.compile and opcheck; the plans' layout limits."""

from __future__ import annotations

import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import InvalidProblem, Unsupported
from baracuda.families.reduction import (
    ReductionArgs,
    ReductionDescriptor,
    ReductionKind,
    ReductionPlan,
)
from baracuda.families.reduction.custom_ops import reduce2_op, reduce_backward, reduce_op
from conftest import DEVICE

NAN = float("nan")


def _x(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(DEVICE, dtype)


def _same(got, want, tol=1e-5):
    if isinstance(want, tuple):
        assert type(got) is type(want) or isinstance(got, tuple)
        for g, w in zip(got, want):
            _same(g, w, tol)
        return
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.is_floating_point():
        torch.testing.assert_close(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        assert torch.equal(got, want), (got, want)


CALLS = [
    ("sum", (1,), {}), ("sum", ((0, 2),), {"keepdim": True}), ("sum", (), {}),
    ("sum", (), {"dtype": torch.float64}), ("mean", (-1,), {}), ("mean", ([0, 1],), {}),
    ("prod", (2,), {}), ("prod", (), {}), ("nansum", (0,), {}), ("nanmean", (2,), {}),
    ("amax", (), {}), ("amax", ((1, 2),), {"keepdim": True}), ("amin", (0,), {}),
    ("max", (), {}), ("max", (1,), {}), ("min", (2, True), {}), ("argmax", (), {}),
    ("argmax", (1,), {"keepdim": True}), ("argmin", (0,), {}), ("all", (1,), {}),
    ("any", (), {}), ("all", ((),), {}), ("count_nonzero", ((0, 2),), {}), ("var", (1,), {}),
    ("var", (), {"correction": 0}), ("std", (1, False, True), {}),
    ("var_mean", ((0, 2),), {"correction": 2}), ("std_mean", (2,), {}),
    ("logsumexp", (1,), {}), ("logsumexp", ((0, 2), True), {}), ("aminmax", (), {"dim": 1}),
    ("aminmax", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CALLS, ids=lambda v: str(v))
def test_matches_torch_on_transposed_input(name, args, kwargs):
    x = _x(5, 6, 7).permute(2, 0, 1)
    if name in ("all", "any", "count_nonzero"):
        x = (x > 0.5).float() * x
    _same(getattr(bt, name)(x, *args, **kwargs), getattr(torch, name)(x, *args, **kwargs))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int8, torch.uint8, torch.bool])
@pytest.mark.parametrize("name", ["sum", "prod", "nansum", "amax", "amin", "all", "any",
                                  "count_nonzero", "logsumexp"])
def test_integer_promotion_as_torch(name, dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0 if dtype in (torch.uint8, torch.bool) else -3, 3, (4, 9),
                      generator=g).to(DEVICE, dtype)
    args = (1,)
    if name == "prod":
        x = x[:, :5]
    _same(getattr(bt, name)(x, *args), getattr(torch, name)(x, *args))


def test_sum_of_int32_is_int64_and_dtype_argument():
    x = torch.arange(12, dtype=torch.int32, device=DEVICE).reshape(3, 4)
    assert bt.sum(x).dtype == torch.int64
    _same(bt.sum(x, 1, dtype=torch.float16), torch.sum(x, 1, dtype=torch.float16))
    f = _x(3, 4, 5, seed=9) * 3  # an integer dtype= truncates each element, then sums
    _same(bt.sum(f, 1, dtype=torch.int64), torch.sum(f, 1, dtype=torch.int64))
    _same(bt.prod(f, 2, dtype=torch.int32), torch.prod(f, 2, dtype=torch.int32))
    _same(bt.mean(x, 0, dtype=torch.float64), torch.mean(x, 0, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_half_and_double_accumulate_as_torch(dtype):
    x = _x(3, 1000, dtype=dtype, seed=4)
    tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}[dtype]
    for name in ("sum", "mean", "var", "logsumexp"):
        want = getattr(torch, name)(x.double(), 1).to(dtype)
        torch.testing.assert_close(getattr(bt, name)(x, 1), want, rtol=tol, atol=tol * 30)


def test_nan_semantics():
    x = torch.tensor([[1.0, NAN, 3.0, NAN], [2.0, 5.0, -1.0, 0.0]], device=DEVICE)
    for name, args in (("amax", (1,)), ("amin", (1,)), ("argmax", (1,)), ("argmin", (1,)),
                       ("max", (1,)), ("min", (1,)), ("nansum", (1,)), ("nanmean", (1,)),
                       ("sum", (1,)), ("logsumexp", (1,)), ("max", ()), ("argmax", ()),
                       ("aminmax", ())):
        _same(getattr(bt, name)(x, *args), getattr(torch, name)(x, *args))
    assert int(bt.argmax(x, 1)[0]) == 1  # the first NaN's index


def test_infinities_in_logsumexp_and_extremes():
    x = torch.tensor([[float("inf"), 1.0], [-float("inf"), -float("inf")],
                      [-float("inf"), 2.0]], device=DEVICE)
    for name in ("logsumexp", "amax", "amin", "argmax", "argmin", "sum", "var"):
        _same(getattr(bt, name)(x, 1), getattr(torch, name)(x, 1))


def test_empty_reductions():
    e = torch.empty(3, 0, device=DEVICE)
    _same(bt.sum(e, 1), torch.sum(e, 1))
    _same(bt.prod(e, 1), torch.prod(e, 1))
    _same(bt.mean(e, 1), torch.mean(e, 1))
    _same(bt.all(e, 1), torch.all(e, 1))
    _same(bt.any(e, 1), torch.any(e, 1))
    _same(bt.logsumexp(e, 1), torch.logsumexp(e, 1))
    _same(bt.sum(torch.empty(0, device=DEVICE)), torch.sum(torch.empty(0, device=DEVICE)))
    _same(bt.amax(torch.empty(0, 4, device=DEVICE), 1), torch.empty(0, device=DEVICE))
    with pytest.raises(IndexError, match="non-zero size"):
        bt.amax(e, 1)
    with pytest.raises(IndexError, match="non-zero size"):
        bt.max(e, 1)
    with pytest.raises(RuntimeError, match="numel"):
        bt.max(torch.empty(0, device=DEVICE))
    with pytest.raises(IndexError, match="numel"):
        bt.argmax(torch.empty(0, device=DEVICE))
    with pytest.raises(RuntimeError, match="no identity"):
        bt.aminmax(torch.empty(0, device=DEVICE))


@pytest.mark.filterwarnings("ignore::UserWarning")  # var of one element: dof <= 0
def test_zero_dim_input():
    s = torch.tensor(2.5, device=DEVICE)
    for name, args in (("sum", ()), ("sum", (0,)), ("amax", (-1,)), ("max", (0,)),
                       ("argmax", ()), ("var", (0,)), ("logsumexp", (0,)), ("mean", ())):
        _same(getattr(bt, name)(s, *args), getattr(torch, name)(s, *args))


def test_errors_match_torch():
    x = _x(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        bt.sum(x, 2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        bt.sum(x, (0, -2))
    with pytest.raises(RuntimeError, match="floating point"):
        bt.mean(torch.ones(3, dtype=torch.int32, device=DEVICE))
    with pytest.raises(RuntimeError, match="floating point"):
        bt.var(torch.ones(3, dtype=torch.int32, device=DEVICE))
    with pytest.raises(RuntimeError, match="bool"):
        bt.argmax(torch.ones(3, dtype=torch.bool, device=DEVICE))
    with pytest.raises(RuntimeError, match="floating point"):
        bt.nanmean(torch.ones(3, dtype=torch.int8, device=DEVICE))
    with pytest.raises(TypeError, match="dim"):
        bt.logsumexp(x, None)


GRADS = [("sum", (1,)), ("mean", ((0, 1),)), ("prod", (1,)), ("nansum", (0,)),
         ("nanmean", (1,)), ("amax", (1,)), ("amin", ()), ("max", ()), ("min", (1,)),
         ("var", (1,)), ("std", ((0, 1),)), ("var_mean", (0,)), ("std_mean", (1,)),
         ("logsumexp", (1,)), ("aminmax", ())]


def _outputs(out):
    if isinstance(out, tuple):
        return [t for t in out if t.is_floating_point()]
    return [out]


@pytest.mark.parametrize("name,args", GRADS, ids=lambda v: str(v))
def test_gradcheck_f64(name, args):
    x = _x(2, 3, dtype=torch.float64, seed=5).requires_grad_()
    fn = getattr(bt, name)
    assert torch.autograd.gradcheck(lambda t: tuple(_outputs(fn(t, *args))), (x,), eps=1e-6,
                                    atol=1e-6, check_batched_grad=False)


def _grad(fn, x, *args):
    x = x.detach().clone().requires_grad_()
    outs = _outputs(fn(x, *args))
    ups = [torch.linspace(0.5, 1.5, o.numel(), dtype=o.dtype, device=o.device).reshape(o.shape)
           for o in outs]
    return torch.autograd.grad(outs, x, ups)[0]


@pytest.mark.parametrize("name,args,x", [
    ("amax", (1,), [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]]),
    ("amin", (), [[1.0, 3.0, 1.0, 0.0], [0.0, 2.0, 2.0, 0.0]]),
    ("max", (), [[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 2.0, 3.0]]),
    ("max", (), [[1.0, NAN, 3.0, 0.0], [NAN, 2.0, 2.0, 3.0]]),
    ("amax", (1,), [[1.0, NAN, 3.0, 0.0], [2.0, 2.0, 5.0, 3.0]]),
    ("max", (1,), [[1.0, 3.0, 3.0, 0.0], [2.0, NAN, 2.0, 3.0]]),
    ("aminmax", (), [[1.0, 3.0, 3.0, 0.0], [2.0, 0.0, 2.0, 3.0]]),
    ("prod", (1,), [[1.0, 0.0, 3.0, 2.0], [0.0, 2.0, 0.0, 3.0]]),
    ("prod", (), [[1.0, 0.5, 3.0, 2.0], [4.0, 2.0, 0.0, 3.0]]),
    ("prod", (), [[1.0, 0.5, 3.0, 2.0], [4.0, 2.0, -1.0, 3.0]]),
    ("nanmean", (1,), [[NAN, NAN, NAN, NAN], [2.0, NAN, 2.0, 3.0]]),
    ("std", (1,), [[1.0, 1.0, 1.0, 1.0], [2.0, 0.0, 2.0, 3.0]]),
])
def test_gradient_rules_match_torch(name, args, x):
    x = torch.tensor(x, device=DEVICE)
    theirs = getattr(torch, name)
    if name == "aminmax":  # torch < 2.12 has no aminmax derivative: its halves' rules
        theirs = lambda t: (torch.amin(t), torch.amax(t))  # noqa: E731
    _same(_grad(getattr(bt, name), x, *args), _grad(theirs, x, *args))


def test_reruns_are_bit_identical():
    x = _x(2, 9000, seed=6)  # lines split over several programs
    for fn in (lambda t: bt.var_mean(t, 1)[0], lambda t: bt.sum(t), lambda t: bt.argmax(t)):
        first = fn(x)
        for _ in range(2):
            assert torch.equal(fn(x).view(-1).view(torch.uint8),
                               first.view(-1).view(torch.uint8))


def test_compiles_fullgraph():
    x = _x(4, 6).requires_grad_()

    def f(t):
        v, m = bt.var_mean(t, 1)
        return bt.sum(bt.max(t, 1)[0] * v + m, 0)

    torch._dynamo.reset()
    got = torch.compile(f, backend="aot_eager", fullgraph=True)(x)
    want = f(x)
    torch.testing.assert_close(got, want)
    g1 = torch.autograd.grad(got, x)[0]
    g2 = torch.autograd.grad(f(x), x)[0]
    torch.testing.assert_close(g1, g2)


def test_opcheck_custom_ops():
    x = _x(3, 5).requires_grad_()
    torch.library.opcheck(reduce_op.custom_op, (x, "var", [0, 1], True, 1.0, torch.float32))
    torch.library.opcheck(reduce2_op.custom_op, (x, "max", [1], False, 0.0))
    dy = _x(3)
    torch.library.opcheck(reduce_backward.custom_op,
                          (dy, None, x.detach(), None, None, "nanmean", [3, 5], [1], False,
                           0.0, torch.float32))


def test_unmergeable_reduced_dims_are_refused():
    base = _x(2, 3, 2, 3, 2, 3, 2, 3)
    x = base.permute(0, 2, 4, 6, 1, 3, 5, 7)[..., :2]  # five reduced dims that never merge
    x = x.permute(0, 4, 1, 5, 2, 6, 3, 7)
    desc = ReductionDescriptor(ReductionKind.ARGMAX, tuple(x.shape), (0, 2, 4, 6, 7), False,
                               torch.float32, torch.int64)
    plan = ReductionPlan.select(desc)
    y = torch.empty(desc.output_shape, dtype=torch.int64, device=DEVICE)
    with pytest.raises(Unsupported, match="merge"):
        plan.can_implement(ReductionArgs(x=x, y=y))


@pytest.mark.parametrize("keepdim", [False, True])
def test_torch_functions_reduce_any_set_of_axes(keepdim):
    """Reduced axes whose strides never merge into four runs (the plans refuse them): the
    torch functions reduce a copy with those axes gathered last, forward and gradient as
    torch's."""
    base = _x(2, 3, 2, 3, 2, 3, 2, 3, dtype=torch.float64, seed=4)
    x = base.permute(0, 2, 4, 6, 1, 3, 5, 7)[..., :2].permute(0, 4, 1, 5, 2, 6, 3, 7)
    axes = (0, 2, 4, 6, 7)
    calls = [("sum", lambda f, t: f(t, axes, keepdim)),
             ("var", lambda f, t: f(t, axes, keepdim=keepdim)),
             ("amax", lambda f, t: f(t, axes, keepdim)),
             ("logsumexp", lambda f, t: f(t, axes, keepdim)),
             ("var_mean", lambda f, t: f(t, axes, keepdim=keepdim)),
             ("vector_norm", lambda f, t: f(t, 3.0, axes, keepdim))]
    for name, call in calls:
        ours = bt.linalg.vector_norm if name == "vector_norm" else getattr(bt, name)
        theirs = torch.linalg.vector_norm if name == "vector_norm" else getattr(torch, name)
        a = x.detach().requires_grad_()
        b = x.detach().requires_grad_()
        ya, yb = call(ours, a), call(theirs, b)
        _same(ya, yb)
        outs_a = ya if isinstance(ya, tuple) else (ya,)
        outs_b = yb if isinstance(yb, tuple) else (yb,)
        ga = torch.autograd.grad(sum(t.sum() for t in outs_a), a)[0]
        gb = torch.autograd.grad(sum(t.sum() for t in outs_b), b)[0]
        _same(ga, gb, 1e-10)
    mask = torch.rand(x.shape, generator=torch.Generator().manual_seed(1)).to(DEVICE) > 0.3
    with pytest.raises(Unsupported, match="merge"):  # the Plan API keeps its rule
        reduce_op(x, "sum", list(axes), keepdim, 0.0, x.dtype)
    _same(bt.masked.sum(x, axes, keepdim=keepdim, mask=mask),
          torch.masked.sum(x, axes, keepdim=keepdim, mask=mask))


def test_descriptor_errors_say_what_expected_got():
    with pytest.raises(InvalidProblem, match=r"ReductionPlan: axes must be distinct"):
        ReductionPlan.select(ReductionDescriptor(ReductionKind.SUM, (4, 8), (1, 1), False,
                                                 torch.float32, torch.float32))
    with pytest.raises(Unsupported, match="out_element must be one of"):
        ReductionPlan.select(ReductionDescriptor(ReductionKind.ARGMAX, (4, 8), (1,), False,
                                                 torch.float32, torch.float32))


def test_many_kept_dims_launch_in_groups():
    x = _x(2, 3, 2, 3, 2, 3, 4).permute(6, 0, 2, 4, 1, 3, 5)  # kept dims that never merge
    _same(bt.sum(x, 0), torch.sum(x, 0))
    _same(bt.argmin(x, 0), torch.argmin(x, 0))


@pytest.mark.gpu
@pytest.mark.parametrize("shape,dim", [((1 << 26,), None), ((4096, 16384), 1),
                                       ((16384, 4096), 0), ((64, 262144), 1)])
@pytest.mark.parametrize("name", ["sum", "amax", "var", "logsumexp", "argmax"])
def test_real_sizes_on_gpu(name, shape, dim):
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    args = () if dim is None else (dim,)
    if name == "logsumexp" and dim is None:
        args = (0,)
    got = getattr(bt, name)(x, *args)
    want = getattr(torch, name)(x.double(), *args)
    if name == "argmax":
        assert torch.equal(got, want)
    else:
        torch.testing.assert_close(got.double(), want, rtol=1.6e-2, atol=1e-2 * want.abs().max())
    again = getattr(bt, name)(x, *args)
    assert torch.equal(got.view(-1).view(torch.uint8), again.view(-1).view(torch.uint8))


@pytest.mark.parametrize("who", ["max", "min"])
def test_binary_form_is_the_elementwise_extreme(who):
    """max(input, other) / min(input, other), positional or keyword, broadcasting, with its
    gradient (ties split as torch's maximum / minimum split them)."""
    a = torch.randn(5, 7, device=DEVICE, dtype=torch.float64, requires_grad=True)
    b = torch.randn(7, device=DEVICE, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        b[2] = a[0, 2]  # a tie
    ours, theirs = getattr(bt, who), getattr(torch, who)
    g = torch.randn(5, 7, device=DEVICE, dtype=torch.float64)
    for call in (lambda f: f(a, b), lambda f: f(a, other=b)):
        got = call(ours)
        want = call(theirs)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        got_grads = torch.autograd.grad(got, (a, b), g)
        want_grads = torch.autograd.grad(want, (a, b), g)
        for x, y in zip(got_grads, want_grads):
            torch.testing.assert_close(x, y)
