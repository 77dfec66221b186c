"""Elementwise torch frontend: gradcheck (f64), opcheck, torch.compile, torch's semantics for
scalars, promotion, broadcasting, rounding modes and errors; plan-level extras."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import baracuda as bc
import baracuda.torch as bt
from baracuda.families.elementwise.custom_ops import _unary, _unary_bw
from baracuda.families.elementwise.table import UNARY
from conftest import DEVICE
from helpers import assert_close

E = bc.ElementKind


def gradcheck(fn, inputs):
    # fast mode: one random projection instead of the full Jacobian (the interpreter is slow)
    return torch.autograd.gradcheck(fn, inputs, fast_mode=True)


def _x(*shape, dtype=torch.float64, lo=-2.0, hi=2.0, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    return t.to(device=DEVICE, dtype=dtype).requires_grad_(grad)


# Kinds whose domain excludes the gradcheck points drawn in [lo, hi] get their own range.
_GC_RANGE = {"sqrt": (0.5, 2), "rsqrt": (0.5, 2), "log": (0.5, 2), "log2": (0.5, 2),
             "log10": (0.5, 2), "log1p": (0.5, 2), "asin": (-0.8, 0.8), "acos": (-0.8, 0.8),
             "atanh": (-0.8, 0.8), "acosh": (1.5, 3), "erfinv": (-0.8, 0.8), "logit": (0.2, 0.8),
             "lgamma": (0.5, 3), "digamma": (0.5, 3), "reciprocal": (0.5, 2), "cbrt": (0.5, 2)}
_PIECEWISE = {"sign", "floor", "ceil", "round", "trunc"}


@pytest.mark.parametrize("kind", [k.value for k, row in UNARY.items()
                                  if k.value not in _PIECEWISE and row.diff])
def test_unary_gradcheck_f64(kind):
    lo, hi = _GC_RANGE.get(kind, (-2.0, 2.0))
    x = _x(7, lo=lo, hi=hi)
    # keep points away from kinks (relu at 0, hardtanh edges) where finite differences fail
    x = torch.where((x.detach() - x.detach().round()).abs() < 0.05, x.detach() + 0.1,
                    x.detach()).requires_grad_()
    assert gradcheck(lambda t: _unary(t, kind), (x,))


BINARY_DIFF = ["add", "sub", "mul", "div", "pow", "atan2", "hypot", "copysign", "maximum",
               "minimum", "fmax", "fmin", "remainder", "fmod", "xlogy", "logaddexp",
               "logaddexp2"]


@pytest.mark.parametrize("name", BINARY_DIFF)
def test_binary_gradcheck_broadcast_f64(name):
    a = _x(3, 4, lo=0.5, hi=2.0, seed=1)
    b = _x(4, lo=0.6, hi=2.1, seed=2)  # broadcast: db reduced over dim 0
    fn = getattr(bt, name)
    assert gradcheck(lambda p, q: fn(p, q), (a, b))


def test_ternary_and_param_gradcheck_f64():
    a, b, c = _x(3, 4, seed=1), _x(4, seed=2), _x(3, 1, lo=0.5, hi=1.5, seed=3)
    assert gradcheck(lambda p, q, r: bt.lerp(p, q, r), (a, b, c))
    assert gradcheck(lambda p, q, r: bt.addcmul(p, q, r, value=0.7), (a, b, c))
    assert gradcheck(lambda p, q, r: bt.addcdiv(p, q, r, value=0.7), (a, b, c))
    lo, hi = _x(4, lo=-1.0, hi=-0.5, seed=4), _x(3, 1, lo=0.5, hi=1.0, seed=5)
    assert gradcheck(lambda p, q, r: bt.clamp(p, q, r), (a, lo, hi))
    cond = a.detach() > 0
    assert gradcheck(lambda q, r: bt.where(cond, q, r), (b, c))
    x = _x(9, seed=6)
    for fn in (lambda t: bt.elu(t, 1.3), lambda t: bt.celu(t, 0.7),
               lambda t: bt.leaky_relu(t, 0.2), lambda t: bt.softplus(t, 2.0, 3.0),
               lambda t: bt.pow(t, 3), lambda t: bt.mul(t, -1.5), lambda t: bt.add(t, 2.0)):
        assert gradcheck(fn, (x,))
    g = _x(4, 6, seed=7)
    for fn in (bt.glu, bt.swiglu, bt.geglu, bt.geglu_tanh):
        assert gradcheck(lambda t, fn=fn: fn(t, -1), (g,))
    assert gradcheck(lambda p, q: bt.lerp(p, q, 0.3), (a, a.detach().clone()
                                                                     .requires_grad_()))


def test_matches_torch_functional_f32():
    x = _x(5, 77, dtype=torch.float32, lo=-4, hi=4, grad=False)
    pairs = [(bt.gelu(x, approximate="tanh"), F.gelu(x, approximate="tanh")),
             (bt.silu(x), F.silu(x)), (bt.mish(x), F.mish(x)), (bt.hardtanh(x, -1, 2),
                                                                F.hardtanh(x, -1, 2)),
             (bt.threshold(x, 0.3, -1.0), F.threshold(x, 0.3, -1.0)),
             (bt.glu(x[:, :76], 1), F.glu(x[:, :76], 1)), (bt.round(x, decimals=1),
                                                           torch.round(x, decimals=1)),
             (bt.logit(x.sigmoid(), eps=1e-3), torch.logit(x.sigmoid(), eps=1e-3))]
    for ours, ref in pairs:
        assert_close(ours, ref.double(), E.F32, scale=4)


def test_promotion_scalars_and_rounding_modes():
    i = torch.tensor([-7, -3, 0, 3, 7], dtype=torch.int32, device=DEVICE)
    assert bt.add(i, 2).dtype == torch.int32 and bt.add(i, 2.5).dtype == torch.float32
    assert torch.equal(bt.div(i, 2, rounding_mode="floor").cpu(),
                       torch.div(i.cpu(), 2, rounding_mode="floor"))
    assert torch.equal(bt.div(i, -2, rounding_mode="trunc").cpu(),
                       torch.div(i.cpu(), -2, rounding_mode="trunc"))
    assert bt.div(i, 2).dtype == torch.float32
    assert torch.equal(bt.remainder(i, 3).cpu(), torch.remainder(i.cpu(), 3))
    assert torch.equal(bt.fmod(i, 3).cpu(), torch.fmod(i.cpu(), 3))
    h = torch.tensor([1.0, 2.0], dtype=torch.bfloat16, device=DEVICE)
    f = torch.tensor([1.0, 2.0], dtype=torch.float32, device=DEVICE)
    assert bt.mul(h, f).dtype == torch.float32 and bt.mul(h, 3).dtype == torch.bfloat16
    assert bt.pow(i, 2).dtype == torch.int32 and bt.pow(i, 0.5).dtype == torch.float32
    assert torch.equal(bt.pow(i, 3).cpu(), i.cpu() ** 3)
    b = torch.tensor([True, False], device=DEVICE)
    assert bt.logical_xor(b, f).dtype == torch.bool
    assert torch.equal(bt.bitwise_left_shift(i, 40).cpu(), torch.bitwise_left_shift(i.cpu(), 40))
    assert torch.equal(bt.clamp(i, -2, 4).cpu(), torch.clamp(i.cpu(), -2, 4))
    assert torch.equal(bt.eq(i, 3).cpu(), i.cpu() == 3)
    assert torch.equal(bt.isclose(f, f + 1e-9).cpu(), torch.isclose(f, f + 1e-9).cpu())
    assert bt.cast(f, torch.int64).dtype == torch.int64


def test_strided_broadcast_empty_and_zero_dim():
    base = _x(6, 10, dtype=torch.float32, grad=False)
    t = base.t()  # transposed view
    s = base[:, ::3]  # strided view
    assert_close(bt.exp(t), torch.exp(t.double()), E.F32)
    assert_close(bt.add(s, s[:1]), (s + s[:1]).double(), E.F32)
    assert_close(bt.mul(base.expand(2, 6, 10), base[0]), (base * base[0]).expand(2, 6, 10).double(),
                 E.F32)
    e = torch.empty(0, 3, device=DEVICE)
    assert bt.sin(e).shape == (0, 3) and bt.add(e, torch.ones(3, device=DEVICE)).shape == (0, 3)
    z = torch.tensor(0.5, device=DEVICE)
    assert bt.sigmoid(z).shape == () and float(bt.sigmoid(z)) == pytest.approx(
        1 / (1 + math.exp(-0.5)), rel=1e-6)
    # gradient of a broadcast operand when the output is empty is a zero tensor
    w = torch.ones(3, device=DEVICE, requires_grad=True)
    (gw,) = torch.autograd.grad(bt.mul(torch.ones(0, 3, device=DEVICE), w).sum(), w)
    assert torch.equal(gw.cpu(), torch.zeros(3))


def test_errors_follow_torch():
    a, b = torch.ones(3, device=DEVICE), torch.ones(4, device=DEVICE)
    with pytest.raises(bc.InvalidProblem, match="not broadcastable"):
        bt.add(a, b)
    with pytest.raises(bc.Unsupported):
        bt.bitwise_and(a, a)
    with pytest.raises(bc.Unsupported):
        bt.gelu(torch.ones(3, dtype=torch.int32, device=DEVICE))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        bt.glu(torch.ones(3, 5, device=DEVICE))
    with pytest.raises(IndexError):
        bt.swiglu(torch.ones(3, 4, device=DEVICE), dim=2)
    with pytest.raises(RuntimeError, match="rounding_mode"):
        bt.div(a, a, rounding_mode="ceil")
    # nextafter's gradient exists as the installed torch's does (torch 2.13 added one)
    x = torch.ones(3, device=DEVICE, requires_grad=True)
    y = torch.zeros(3, device=DEVICE, requires_grad=True)
    try:
        want = torch.autograd.grad(torch.nextafter(x, y).sum(), (x, y))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="derivative"):
            torch.autograd.grad(bt.nextafter(x, y).sum(), (x, y))
    else:
        got = torch.autograd.grad(bt.nextafter(x, y).sum(), (x, y))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)


def test_opcheck_and_compile():
    x = _x(4, 6, dtype=torch.float32, grad=False)
    y = _x(6, dtype=torch.float32, grad=False, seed=1)
    ops = torch.ops.baracuda
    torch.library.opcheck(ops.ew_unary.default, (x, "silu"))
    torch.library.opcheck(ops.ew_binary.default, (x, y, "mul", 1.0, None))
    torch.library.opcheck(ops.ew_ternary.default, (x, y, x, "lerp", 1.0))
    torch.library.opcheck(ops.ew_gated.default, (x, "swiglu", 1))
    torch.library.opcheck(ops.ew_lerp_scalar.default, (x, x * 2, 0.3))
    torch.library.opcheck(ops.ew_unary_param.default, (x, "elu", [1.0]))

    def f(a, b):
        return (bt.swiglu(bt.silu(a), -1).sum() + bt.lerp(a, a * 2, 0.25).sum()
                + bt.add(a, b, alpha=2).sum())

    a = x.clone().requires_grad_()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    out = compiled(a, y)
    out.backward()
    a2 = x.clone().requires_grad_()
    f(a2, y).backward()
    torch.testing.assert_close(out, f(x, y), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(a.grad, a2.grad, rtol=1e-5, atol=1e-5)


def test_broadcast_gradient_is_deterministic_and_multistage():
    # R = 3 * 9000 rows reduced in several chunks, twice: bit-identical
    a = _x(3, 9000, dtype=torch.float32, seed=3)
    b = _x(9000, dtype=torch.float32, seed=4)
    dy = _x(3, 9000, dtype=torch.float32, grad=False, seed=5)
    g1 = torch.autograd.grad(bt.mul(a, b), (a, b), dy)
    g2 = torch.autograd.grad(bt.mul(a, b), (a, b), dy)
    assert all(torch.equal(p, q) for p, q in zip(g1, g2))
    ref = (dy.double() * a.detach().double()).sum(0)
    assert_close(g1[1], ref, E.F32)
    s = _x(1, dtype=torch.float32, seed=6)  # scalar-like operand: all 27000 elements reduced
    (gs,) = torch.autograd.grad(bt.add(a.detach(), s), s, dy)
    assert_close(gs, dy.double().sum().reshape(1), E.F32)


@pytest.mark.gpu
def test_gpu_large_contiguous_bf16():
    x = torch.randn(1 << 24, device=DEVICE, dtype=torch.bfloat16)
    assert_close(bt.silu(x), F.silu(x.double()), E.BF16)
    assert_close(bt.lerp(x, x * 2, 0.3), torch.lerp(x.double(), 2 * x.double(), 0.3), E.BF16)


@pytest.mark.parametrize("name", ["hardswish", "hardsigmoid", "relu6", "relu", "hardtanh",
                                  "leaky_relu", "elu", "softshrink", "hardshrink", "abs"])
def test_gradient_at_kinks_matches_torch(name):
    # Random inputs almost never land on a kink; torch's kernels pick a side there.
    import baracuda.torch as bt

    pts = [-6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0]
    x = torch.tensor(pts, dtype=torch.float64, device=DEVICE, requires_grad=True)
    xr = x.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(getattr(bt, name)(x).sum(), x)
    fn = getattr(torch.nn.functional, name, None) or getattr(torch, name)
    (gr,) = torch.autograd.grad(fn(xr).sum(), xr)
    # torch's f64 hardsigmoid backward carries an f32-rounded 1/6 (its one_sixth is
    # 1.0f / 6.0f); ours is exact
    atol = 1e-7 if name == "hardsigmoid" else 1e-12
    torch.testing.assert_close(g, gr, rtol=0, atol=atol)


@pytest.mark.parametrize("name", ["hardswish", "hardsigmoid", "relu6", "relu", "hardtanh",
                                  "leaky_relu", "elu", "celu", "selu", "softshrink",
                                  "hardshrink", "threshold", "softplus", "silu"])
def test_gradient_at_nan_matches_torch(name):
    """torch's piecewise backward kernels test x against the pieces' bounds, so a NaN x falls
    into one piece (hardtanh / relu6 / elu / celu / selu / hardswish: g, not 0 or NaN); smooth
    ones propagate NaN."""
    import baracuda.torch as bt

    def call(mod, t):
        return mod.threshold(t, 0.1, 2.0) if name == "threshold" else getattr(mod, name)(t)

    x = torch.tensor([float("nan"), 1.0, -0.5, 4.0], dtype=torch.float64, device=DEVICE,
                     requires_grad=True)
    xr = x.detach().cpu().clone().requires_grad_()
    (g,) = torch.autograd.grad(call(bt, x).sum(), x)
    ref = torch.nn.functional if hasattr(torch.nn.functional, name) else torch
    (gr,) = torch.autograd.grad(call(ref, xr).sum(), xr)  # torch's CPU kernels: f64 exact
    atol = 1e-7 if name == "hardsigmoid" else 1e-12  # (torch's f32 1/6, as above)
    torch.testing.assert_close(g.cpu(), gr, rtol=0, atol=atol, equal_nan=True)


@pytest.mark.parametrize("kind", ["lgamma", "digamma"])
def test_backward_near_the_pole_at_zero_stays_finite_when_the_product_is(kind):
    """d lgamma = g * digamma(x), d digamma = g * trigamma(x): near x = 0 the factor
    overflows f32 (digamma(1e-40) ~ -1e40) while the product with a small g does not. The
    f64 reference is finite there, and so must we be (torch's f32 backward gives inf)."""
    # |g * factor| below the f32 maximum at the first four points (the factor above it)
    xs, gs = (([1e-40, -1e-40, 1e-30, -3e-9], [-0.025, 0.01, 2.0, 1.5]) if kind == "lgamma"
              else ([1e-20, -1e-20, 3e-19, -3e-9], [1e-3, -2e-3, 0.5, 1.5]))
    x = torch.tensor(xs + [0.0, -0.0], dtype=torch.float32, device=DEVICE)
    g = torch.tensor(gs + [1.0, 1.0], dtype=torch.float32, device=DEVICE)
    dx = _unary_bw(g, x, kind)
    x64, g64 = x.double().cpu(), g.double().cpu()
    want = g64 * (torch.digamma(x64) if kind == "lgamma" else torch.polygamma(1, x64))
    assert_close(dx, want, torch.float32, "dx")
    assert torch.isfinite(dx[:4]).all()


@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_divisor_gradient_overflows_as_torchs(name):
    """d/db of fmod / remainder is -dy * trunc(a/b) (floor for remainder) with the quotient in
    the input type: where a/b passes f32's range it is inf, times any dy, as torch gives,
    although the exact float64 gradient may be finite for a small dy (the spec's float64
    reference leaves such divisors out)."""
    a = torch.tensor([1e3, -1e3, 2.5], device=DEVICE)
    b = torch.tensor([1e-38, 1e-38, 0.75], device=DEVICE)
    dy = torch.tensor([1e-5, 1e-5, 0.5], device=DEVICE)
    grads, outs = [], []
    for fn in (getattr(bt, name), getattr(torch, name)):
        bb = b.clone().requires_grad_()
        out = fn(a, bb)
        (g,) = torch.autograd.grad(out, bb, dy)
        grads.append(g)
        outs.append(out.detach())
    assert torch.isinf(grads[1][:2]).all()  # the case this test is about
    torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=0)
    # a subnormal divisor (1e-38) is a number, not zero: the remainder is exact as torch's
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)


@pytest.mark.parametrize("bounds", [
    dict(min=None, max=torch.tensor(2.5, dtype=torch.bfloat16)),  # int input, float 0-d max
    dict(min=torch.tensor(-1), max=0.5),  # a number beside a tensor bound: float result
    dict(min=torch.tensor([0.5] * 4), max=None),
    dict(min=None, max=torch.tensor([2, 2, 2, 2])),
])
def test_clamp_int_input_with_a_tensor_bound_matches_torch(bounds):
    """The bound not given (or given as a number) takes torch's result dtype: it was built in
    the input's integer dtype (-inf raised, 0.5 truncated to 0)."""
    x = torch.tensor([-5, 0, 3, 9], device=DEVICE)
    kw = {k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in bounds.items()}
    got, want = bt.clamp(x, **kw), torch.clamp(x, **kw)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want)


# -- torch's signatures and promotion rules (differential against torch on the CPU) -------------


def _outcome(fn, *args):
    """(dtype, values) of a call, or the exception type it raised."""
    try:
        out = fn(*args)
    except Exception as exc:  # noqa: BLE001 - the raise is the outcome compared
        return type(exc)
    return out


_BINARY_NAMES = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "atan2",
                 "arctan2", "hypot", "copysign", "maximum", "minimum", "fmax", "fmin",
                 "remainder", "fmod", "xlogy", "logaddexp", "logaddexp2", "nextafter",
                 "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                 "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "eq", "lt",
                 "isclose"]


@pytest.mark.parametrize("name", _BINARY_NAMES)
def test_python_number_operands_follow_torchs_signature(name):
    """A Python number where torch's signature takes one (add(2, t), fmod(t, 2), ...) computes
    as torch's; where it takes only a Tensor (maximum, atan2, logical_*, fmod's input, ...)
    ours raises torch's TypeError (an ArgumentTypeError: a TypeError and a BaracudaError)."""
    f = torch.tensor([0.5, 1.25, -2.0], device=DEVICE)
    i = torch.tensor([1, 2, 5], device=DEVICE)
    for args in [(f, 2.0), (2.0, f), (f, 3), (3, f), (i, 2), (2, i), (f, True), (True, f)]:
        want = _outcome(getattr(torch, name), *[a.cpu() if isinstance(a, torch.Tensor) else a
                                                for a in args])
        got = _outcome(getattr(bt, name), *args)
        what = f"{name}{tuple(type(a).__name__ for a in args)}"
        if isinstance(want, type):
            assert isinstance(got, type), f"{what}: torch raises {want.__name__}, ours returned"
            if want is TypeError:
                assert issubclass(got, TypeError) and issubclass(got, bc.BaracudaError), \
                    f"{what}: torch's TypeError, ours {got.__name__}"
            continue
        assert not isinstance(got, type), f"{what}: torch computes, ours raised {got.__name__}"
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != torch's {want.dtype}"
        ref = getattr(torch, name)(*[a.cpu().double() if isinstance(a, torch.Tensor)
                                     and a.is_floating_point() else
                                     a.cpu() if isinstance(a, torch.Tensor) else a
                                     for a in args])
        if want.is_floating_point():
            assert_close(got, ref, want.dtype, what)
        else:
            assert torch.equal(got.cpu(), want), what


def test_fmax_fmin_of_bool_compute_as_torch():
    a = torch.tensor([True, False, True, False], device=DEVICE)
    b = torch.tensor([False, False, True, True], device=DEVICE)
    for name in ("fmax", "fmin"):
        got, want = getattr(bt, name)(a, b), getattr(torch, name)(a.cpu(), b.cpu())
        assert got.dtype == torch.bool and torch.equal(got.cpu(), want)
    # bool beside a float: promoted as torch, the float's NaN ignored
    f = torch.tensor([0.5, math.nan, -1.0, 2.0], device=DEVICE)
    got = bt.fmax(a, f)
    assert got.dtype == torch.float32
    assert_close(got, torch.fmax(a.cpu().double(), f.cpu().double()), E.F32)


@pytest.mark.parametrize("name", ["atan2", "copysign", "xlogy", "div", "logaddexp",
                                  "logaddexp2", "hypot", "nextafter"])
@pytest.mark.parametrize("dtypes", [(torch.bool, torch.bool), (torch.int32, torch.int32),
                                    (torch.int64, torch.bool), (torch.int32, torch.float16),
                                    (torch.bool, torch.bfloat16), (torch.uint8, torch.float64)])
def test_float_binary_ops_on_integer_and_bool_inputs_follow_torch(name, dtypes):
    """atan2 / copysign / xlogy / div promote integer and bool inputs to float32 (the default
    float dtype); logaddexp, hypot and nextafter take them only beside a float operand."""
    a = torch.tensor([1, 0, 3, 2], device=DEVICE).to(dtypes[0])
    b = torch.tensor([1, 1, 0, 2], device=DEVICE).to(dtypes[1])
    want = _outcome(getattr(torch, name), a.cpu(), b.cpu())
    got = _outcome(getattr(bt, name), a, b)
    if isinstance(want, type):
        assert got is bc.Unsupported, f"torch raises {want.__name__}, ours {got}"
        return
    assert got.dtype == want.dtype
    if name == "nextafter":  # a step in the result dtype: bit-exact against torch's own
        assert torch.equal(got.cpu(), want)
        return
    ref = getattr(torch, name)(a.cpu().double(), b.cpu().double())
    assert_close(got, ref, want.dtype)


def test_integer_inputs_promote_to_the_default_float_dtype():
    i = torch.tensor([1, 2, 3], device=DEVICE)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        for fn, ref in ((lambda t: bt.atan2(t, t), lambda t: torch.atan2(t, t)),
                        (lambda t: bt.div(t, 2), lambda t: torch.div(t, 2)), (bt.sqrt, torch.sqrt),
                        (bt.sigmoid, torch.sigmoid), (F.softsign, F.softsign)):
            got, want = fn(i), ref(i.cpu())
            assert got.dtype == want.dtype == torch.float64
            assert_close(got, want, E.F64)
    finally:
        torch.set_default_dtype(old)


@pytest.mark.parametrize("name,bool_pos", [("pow", 1), ("atan2", 0), ("logaddexp", 0),
                                           ("logaddexp2", 1)])
def test_bool_operand_in_torchs_derivative_formula_raises_in_backward(name, bool_pos):
    """torch's derivative of pow (exponent), atan2 (y) and logaddexp subtracts or negates the
    other operand: a bool one makes torch's backward raise, the forward computes."""
    x = torch.tensor([0.5, 1.5], device=DEVICE, requires_grad=True)
    m = torch.tensor([True, False], device=DEVICE)
    args = (m, x) if bool_pos == 0 else (x, m)
    out = getattr(bt, name)(*args)
    assert_close(out, getattr(torch, name)(*[t.detach().cpu().double() if t.is_floating_point()
                                              else t.cpu() for t in args]), E.F32)
    with pytest.raises(RuntimeError):
        out.sum().backward()
    # the other side of atan2 / pow reads the bool as a number, as torch's
    other = (x, m) if bool_pos == 0 else (m, x)
    if name in ("pow", "atan2"):
        (g,) = torch.autograd.grad(getattr(bt, name)(*other).sum(), x)
        xr = x.detach().cpu().double().requires_grad_()
        ref_args = (xr, m.cpu()) if bool_pos == 0 else (m.cpu(), xr)
        (gr,) = torch.autograd.grad(getattr(torch, name)(*ref_args).sum(), xr)
        assert_close(g, gr, E.F32, "grad")


_UNARY_PROMOTING = ["reciprocal", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2",
                    "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                    "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "lgamma",
                    "digamma", "i0", "sigmoid", "sinc", "logit", "softsign", "tanhshrink",
                    "sign", "square", "relu6", "gelu", "silu", "frac", "neg", "abs"]


@pytest.mark.parametrize("name", _UNARY_PROMOTING)
@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64])
def test_unary_integer_and_bool_inputs_follow_torch(name, dtype):
    """Float math of an integer or bool input returns torch's float32 (bool included, except
    where torch's composite formula rejects bool: tanhshrink); sign keeps bool,
    square of bool is int64, relu6 clamps an integer in its own dtype."""
    ref_fn = getattr(F, name) if name in ("softsign", "tanhshrink", "relu6", "gelu",
                                          "silu") else getattr(torch, name)
    if name == "softsign" and dtype == torch.bool:
        # torch's CUDA softsign computes bool / (1 + |bool|) in float32; its CPU abs has no
        # bool kernel (it raises there): ours follows CUDA on every device
        ref_fn = lambda t: F.softsign(t.float())  # noqa: E731
    x = torch.tensor([0, 1, 3, 1, 0, 2], device=DEVICE).to(dtype)
    want = _outcome(ref_fn, x.cpu())
    got = _outcome(getattr(bt, name), x)
    if isinstance(want, type):
        assert isinstance(got, type), f"torch raises {want.__name__}, ours returned"
        return
    assert not isinstance(got, type), f"torch computes, ours raised {got.__name__}"
    assert got.dtype == want.dtype
    if want.is_floating_point():
        assert_close(got, ref_fn(x.cpu().double()), E.F32, scale=2)
    else:
        assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.uint8])
def test_hardtanh_and_threshold_of_integers_follow_torch(dtype):
    """torch converts the bounds / threshold and value to the integer type (truncated toward
    zero, checked against its range) and computes in it."""
    x = torch.tensor([0, 1, 2, 5, 7, 100], device=DEVICE).to(dtype)
    if dtype != torch.uint8:
        x = x - 3
    calls = [lambda m, t: m.hardtanh(t, 0.0, 2.5), lambda m, t: m.hardtanh(t, -1.9, 6.7),
             lambda m, t: m.threshold(t, 1.5, 9.7), lambda m, t: m.threshold(t, 2, -9),
             lambda m, t: m.threshold(t, 0.5, 300.0), lambda m, t: m.relu6(t)]
    for k, call in enumerate(calls):
        want = _outcome(call, F, x.cpu())
        got = _outcome(call, bt, x)
        if isinstance(want, type):
            assert isinstance(got, type), f"call {k}: torch raises {want.__name__}"
            continue
        assert not isinstance(got, type), f"call {k}: torch computes, ours raised {got}"
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want), f"call {k}"


def test_nextafter_half_types_step_one_ulp_as_torch():
    """nextafter in f16 / bf16 steps in the type's own bits (torch supports both): bit-exact
    against torch's CPU kernel, at zeros, subnormals, infinities and NaN."""
    vals = [0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 6e-8, 3.5, -2.25, math.inf, -math.inf,
            math.nan, 65504.0, 1e30]
    a = torch.tensor([x for x in vals for _ in vals], dtype=torch.float64)
    b = torch.tensor([y for _ in vals for y in vals], dtype=torch.float64)
    for dt in (torch.float16, torch.bfloat16):
        ha, hb = a.to(dt), b.to(dt)
        got = bt.nextafter(ha.to(DEVICE), hb.to(DEVICE)).cpu()
        want = torch.nextafter(ha, hb)
        assert got.dtype == dt
        nan = want.isnan()
        assert torch.equal(got.isnan(), nan)
        assert torch.equal(got[~nan].view(torch.int16), want[~nan].view(torch.int16))
    # an integer beside a half: the half's steps
    i = torch.tensor([1, 0, -3], device=DEVICE)
    h = torch.tensor([2.0, -1.0, -3.0], dtype=torch.bfloat16, device=DEVICE)
    assert torch.equal(bt.nextafter(i, h).cpu(), torch.nextafter(i.cpu(), h.cpu()))


@pytest.mark.parametrize("wdtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                    torch.int64])
def test_lerp_weight_of_another_dtype_follows_torch(wdtype):
    """A 0-d weight of any dtype promotes as a 0-d operand (the result keeps input's float
    dtype; its gradient comes back in the weight's dtype); a weight with dims must have
    input's dtype, as torch."""
    a = _x(3, 4, dtype=torch.float32, seed=1)
    b = _x(3, 4, dtype=torch.float32, seed=2)
    w = torch.tensor(0.3, device=DEVICE).to(wdtype)
    if wdtype.is_floating_point:
        w.requires_grad_()
    out = bt.lerp(a, b, w)
    assert out.dtype == torch.float32
    refs = [t.detach().cpu().double().requires_grad_(t.requires_grad) for t in (a, b, w)]
    want = torch.lerp(refs[0], refs[1], refs[2].to(wdtype).double())
    assert_close(out, want, E.F32, scale=2)
    diff = [t for t in (a, b, w) if t.requires_grad]
    dy = _x(3, 4, dtype=torch.float32, grad=False, seed=3)
    grads = torch.autograd.grad(out, diff, dy)
    grads_ref = torch.autograd.grad(want, [r for r in refs if r.requires_grad], dy.cpu().double())
    for g, gr, t in zip(grads, grads_ref, diff):
        assert g.dtype == t.dtype
        # as precise as the coarser of the weight's dtype and the f32 math
        el = t.dtype if t.dtype in (torch.float16, torch.bfloat16) else torch.float32
        assert_close(g, gr, el, "grad", scale=4)
    if wdtype != torch.float32:
        with pytest.raises(bc.InvalidProblem, match="weight"):
            bt.lerp(a, b, torch.full((4,), 0.3, device=DEVICE).to(wdtype))


def test_lerp_promotion_of_integer_and_zero_dim_operands_follows_torch():
    i, j = (torch.tensor(v, device=DEVICE) for v in ([1, 2, 3], [4, 8, 16]))
    out = bt.lerp(i, j, torch.tensor(0.25, device=DEVICE))  # integer start and end: float
    assert out.dtype == torch.float32
    assert_close(out, torch.lerp(i.cpu().double(), j.cpu().double(), 0.25), E.F32)
    with pytest.raises(bc.Unsupported):
        bt.lerp(i, j, 0.5)  # a Python number weight keeps input's integer dtype: no kernel
    h = [torch.tensor(v, dtype=torch.float16, device=DEVICE) for v in (1.0, 1000.0)]
    w = torch.tensor(0.30007, dtype=torch.float64, device=DEVICE)
    out = bt.lerp(h[0], h[1], w)  # all 0-d: promoted together, f64
    assert out.dtype == torch.float64
    assert_close(out, torch.lerp(h[0].cpu().double(), h[1].cpu().double(), w.cpu()), E.F64)
    with pytest.raises(bc.InvalidProblem, match="end"):
        bt.lerp(i.float(), j.double(), 0.5)
    # a bool weight: forward as torch, input's gradient raises as torch's formula does
    x = _x(3, dtype=torch.float32)
    m = torch.tensor(True, device=DEVICE)
    out = bt.lerp(x, j.float(), m)
    assert_close(out, torch.lerp(x.detach().cpu().double(), j.cpu().double(), m.cpu()), E.F32)
    with pytest.raises(RuntimeError, match="bool"):
        out.sum().backward()


def test_clamp_of_bool_and_mixed_bounds_follow_torch():
    """Bool clamp with one tensor bound is torch's clamp_min / clamp_max (maximum / minimum);
    with two it has no kernel in torch. A number beside a tensor bound takes torch's number
    signature: a 0-d tensor passes as a number, a dimensioned or grad-requiring one raises."""
    m = torch.tensor([True, False, True, False], device=DEVICE)
    lo = torch.tensor([[True, True, False, False]] * 2, device=DEVICE)
    for kw in (dict(min=lo), dict(max=lo), dict(min=torch.tensor(False, device=DEVICE))):
        got, want = bt.clamp(m, **kw), torch.clamp(m.cpu(), **{k: v.cpu() for k, v in kw.items()})
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want)
    with pytest.raises(bc.Unsupported):
        bt.clamp(m, lo, lo)
    x = torch.tensor([-5, 0, 3, 9], device=DEVICE)
    bf = torch.tensor(0.5, dtype=torch.bfloat16, device=DEVICE)
    got, want = bt.clamp(x, bf, 2), torch.clamp(x.cpu(), bf.cpu(), 2)
    assert got.dtype == want.dtype == torch.float32
    assert_close(got, want.double(), E.F32)
    f = _x(4, dtype=torch.float32, grad=False)
    for lo, hi in ((torch.zeros(4, device=DEVICE), 2.5),
                   (0.5, torch.tensor(1.0, device=DEVICE, requires_grad=True))):
        with pytest.raises(TypeError, match="both tensors or both numbers") as info:
            bt.clamp(f, lo, hi)
        assert isinstance(info.value, bc.BaracudaError)
