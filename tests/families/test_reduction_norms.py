"""Vector norms (linalg.vector_norm, linalg.norm, norm), logmeanexp, ptp, the bitwise
reductions and hash_tensor: against float64 references and torch, NaN / inf, empty and
size-1 axes, strided inputs, gradients (torch's linalg_vector_norm_backward; JAX's ptp),
errors, determinism."""

from __future__ import annotations

import functools

import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import ArgumentTypeError, Unsupported
from conftest import DEVICE

INF, NAN = float("inf"), float("nan")
ORDERS = [0, 1, 2, INF, -INF, 3, 0.5, -1, 1.5, 4.25, -0.5]
FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


def _x(*shape, dtype=torch.float32, seed=0, zeros=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    if zeros and x.numel():
        x.view(-1)[::5] = 0.0
    return x.to(DEVICE, dtype)


def _close(got, want, dtype):
    assert got.dtype == dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    tol = TOL.get(dtype, 1e-5)
    torch.testing.assert_close(got.double().cpu(), want.double().cpu(), rtol=tol,
                               atol=tol, equal_nan=True)


@pytest.mark.parametrize("ord", ORDERS, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_vector_norm_matches_float64(ord, dtype):
    x = _x(6, 37, dtype=dtype, seed=1, zeros=True).t()  # transposed: reduced dim strided
    for dim, keepdim in ((0, False), (1, True), ((0, 1), False), (None, False)):
        want = torch.linalg.vector_norm(x.double(), ord, dim, keepdim).to(dtype)
        _close(bt.linalg.vector_norm(x, ord, dim, keepdim), want, dtype)


@pytest.mark.parametrize("ord", [2, INF, 1, 3])
def test_vector_norm_nan_inf_and_long_lines(ord):
    x = _x(3, 9000, seed=2)
    x[0, 17] = NAN
    x[1, 5] = INF
    want = torch.linalg.vector_norm(x.double(), ord, 1)
    _close(bt.linalg.vector_norm(x, ord, 1), want.float(), torch.float32)


def test_vector_norm_empty_and_size_one():
    e = torch.empty(3, 0, device=DEVICE)
    for ord in (0, 1, 2, 0.5):
        _close(bt.linalg.vector_norm(e, ord, 1), torch.linalg.vector_norm(e, ord, 1),
               torch.float32)
    for ord in (INF, -INF, -1):
        with pytest.raises(RuntimeError, match="does not have an identity"):
            bt.linalg.vector_norm(e, ord, 1)
    one = _x(4, 1, seed=3)
    for ord in ORDERS:
        _close(bt.linalg.vector_norm(one, ord, 1), torch.linalg.vector_norm(one, ord, 1),
               torch.float32)
    s = torch.tensor(-2.5, device=DEVICE)
    _close(bt.linalg.vector_norm(s, 3), torch.linalg.vector_norm(s, 3), torch.float32)


def test_vector_norm_dtype_widens_before_reducing():
    x = _x(5, 300, dtype=torch.float16, seed=4) * 300  # x^2 overflows f16, not f32
    got = bt.linalg.vector_norm(x, dim=1, dtype=torch.float32)
    _close(got, torch.linalg.vector_norm(x.double(), dim=1).float(), torch.float32)
    assert bt.linalg.vector_norm(x.float(), dtype=torch.float64).dtype == torch.float64
    with pytest.raises(RuntimeError, match="without narrowing"):
        bt.linalg.vector_norm(x.float(), dtype=torch.float16)
    with pytest.raises(RuntimeError, match="floating point or complex"):
        bt.linalg.vector_norm(x, dtype=torch.int32)


def test_vector_norm_refuses_integers_as_torch():
    i = torch.ones(3, dtype=torch.int64, device=DEVICE)
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        bt.linalg.vector_norm(i)
    with pytest.raises(RuntimeError, match="Got Long"):
        bt.norm(i, 2)
    with pytest.raises(TypeError, match="must be Number"):
        bt.linalg.vector_norm(_x(3), "fro")


def test_linalg_norm_and_norm_vector_cases():
    x = _x(4, 5, seed=5)
    t3 = _x(2, 3, 4, seed=6)
    cases = [
        (bt.linalg.norm, torch.linalg.norm, (x,), {}),
        (bt.linalg.norm, torch.linalg.norm, (x, 3, 1), {}),
        (bt.linalg.norm, torch.linalg.norm, (x, None, (0, 1)), {"keepdim": True}),
        (bt.linalg.norm, torch.linalg.norm, (x, "fro"), {}),
        (bt.linalg.norm, torch.linalg.norm, (x[0], INF), {}),
        (bt.linalg.norm, torch.linalg.norm, (t3,), {}),
        (bt.norm, torch.norm, (x,), {}),
        (bt.norm, torch.norm, (t3, "fro", (0, 2)), {}),
        (bt.norm, torch.norm, (t3, 1.5, (0, 2), True), {}),
        (bt.norm, torch.norm, (t3, 0), {}),
        (bt.norm, torch.norm, (x, -INF, 0), {}),
    ]
    for ours, theirs, args, kwargs in cases:
        _close(ours(*args, **kwargs), theirs(*args, **kwargs), torch.float32)


def test_matrix_norms_are_refused_and_bad_orders_raise_as_torch():
    x = _x(4, 5, seed=7)
    for call in (lambda: bt.linalg.norm(x, 2), lambda: bt.linalg.norm(x, "nuc"),
                 lambda: bt.linalg.norm(x, 1, (0, 1)), lambda: bt.norm(x, "nuc"),
                 lambda: bt.linalg.norm(x, -INF)):
        with pytest.raises(Unsupported, match="linalg family"):
            call()
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        bt.linalg.norm(x, 3, (0, 1))
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        bt.linalg.norm(_x(2, 3, 4), 2)
    with pytest.raises(RuntimeError, match="2-tuple"):
        bt.norm(_x(2, 3, 4), "fro", (0, 1, 2))


def _grads(fn, x, dy):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(fn(x), x, dy, allow_unused=True)
    return torch.zeros_like(x) if g is None else g  # (torch's order-0 norm: no gradient)


@pytest.mark.parametrize("ord", ORDERS, ids=str)
def test_vector_norm_gradient_is_torchs(ord):
    # zeros (sgn, |x|^(p-1) at 0), ties (+-inf), a zero line (norm 0) and a NaN line
    x = _x(5, 40, dtype=torch.float64, seed=8, zeros=True).round()
    x[1] = 0.0
    x[3, 7] = NAN
    dy = _x(5, dtype=torch.float64, seed=9)
    for dim in (1, (0, 1)):
        g = dy if dim == 1 else dy[0]
        want = _grads(lambda t, d=dim: torch.linalg.vector_norm(t, ord, d), x, g)
        got = _grads(lambda t, d=dim: bt.linalg.vector_norm(t, ord, d), x, g)
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 3, 0.5, -1, 1.5])
def test_vector_norm_gradcheck(ord):
    x = _x(3, 7, dtype=torch.float64, seed=10).requires_grad_()  # distinct, nonzero
    assert torch.autograd.gradcheck(lambda t: bt.linalg.vector_norm(t, ord, 1), (x,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_vector_norm_gradient_half_and_transposed(dtype):
    x = _x(33, 6, dtype=dtype, seed=11).t()
    dy = _x(6, dtype=dtype, seed=12)
    for ord in (2, 3, INF):
        want = _grads(lambda t, o=ord: torch.linalg.vector_norm(t.double(), o, 1), x,
                      dy.double()).to(dtype)
        _close(_grads(lambda t, o=ord: bt.linalg.vector_norm(t, o, 1), x, dy), want, dtype)


def test_logmeanexp():
    x = _x(4, 50, seed=13)
    x[0, 3] = INF
    x[1] = -INF
    want = torch.logsumexp(x.double(), 1) - torch.log(torch.tensor(50.0, dtype=torch.float64))
    _close(bt.logmeanexp(x, 1), want.float(), torch.float32)
    _close(bt.logmeanexp(x, (0, 1), keepdim=True),
           (torch.logsumexp(x.double(), (0, 1), True) - torch.log(torch.tensor(200.0))).float(),
           torch.float32)
    i = torch.arange(6, device=DEVICE).reshape(2, 3)
    _close(bt.logmeanexp(i, 1), (torch.logsumexp(i.double(), 1) - torch.log(
        torch.tensor(3.0, dtype=torch.float64))).float(), torch.float32)
    assert torch.isnan(bt.logmeanexp(torch.empty(2, 0, device=DEVICE), 1)).all()
    xd = _x(3, 9, dtype=torch.float64, seed=14).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: bt.logmeanexp(t, 1), (xd,))


def test_ptp_values_ties_and_gradient():
    x = _x(6, 40, seed=15).round()  # ties at the max and min
    x[2, 5] = NAN
    want = torch.amax(x.double(), 1) - torch.amin(x.double(), 1)
    _close(bt.ptp(x, 1), want.float(), torch.float32)
    _close(bt.ptp(x.t(), 0, keepdim=True), want.float()[None], torch.float32)
    i8 = torch.tensor([[-128, 127, 0]], dtype=torch.int8, device=DEVICE)
    assert torch.equal(bt.ptp(i8, 1).cpu(), torch.tensor([-1], dtype=torch.int8))  # wraps
    x[2, 5] = 1.0
    dy = _x(6, seed=16)
    # JAX: dy split evenly among the max ties, -dy among the min ties (= amax - amin's)
    want_g = _grads(lambda t: torch.amax(t, 1) - torch.amin(t, 1), x, dy)
    torch.testing.assert_close(_grads(lambda t: bt.ptp(t, 1), x, dy), want_g)
    xd = _x(3, 8, dtype=torch.float64, seed=17).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: bt.ptp(t, 1), (xd,))
    with pytest.raises(ValueError, match="zero-size"):
        bt.ptp(torch.empty(2, 0, device=DEVICE), 1)
    with pytest.raises(TypeError, match="bool"):
        bt.ptp(torch.ones(3, dtype=torch.bool, device=DEVICE))


INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]
BITWISE = {"reduce_xor": (torch.bitwise_xor, 0), "reduce_and": (torch.bitwise_and, -1),
           "reduce_or": (torch.bitwise_or, 0)}


def _bitwise_ref(name, x, dim):
    op, start = BITWISE[name]
    wide = x.cpu().to(torch.int64)
    shape = wide.shape[:dim] + wide.shape[dim + 1:]
    init = torch.full(shape, start, dtype=torch.int64)
    return functools.reduce(op, wide.unbind(dim), init).to(x.dtype)


@pytest.mark.parametrize("name", sorted(BITWISE))
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_bitwise_reductions_exact(name, dtype):
    g = torch.Generator().manual_seed(18)
    if dtype == torch.bool:
        x = torch.rand(7, 300, generator=g) > 0.2
    else:
        info = torch.iinfo(dtype)
        x = torch.randint(info.min, info.max, (7, 300), generator=g, dtype=torch.int64)
        x = x.to(dtype)
    fn = getattr(bt, name)
    xd = x.to(DEVICE)  # (the reference runs on the CPU copy)
    assert torch.equal(fn(xd, 1).cpu(), _bitwise_ref(name, x, 1))
    assert torch.equal(fn(xd.t(), 0, keepdim=True).cpu(), _bitwise_ref(name, x, 1)[None])
    assert torch.equal(fn(xd).cpu(), _bitwise_ref(name, x.reshape(-1), 0))
    e = torch.empty(2, 0, dtype=dtype, device=DEVICE)
    assert torch.equal(fn(e, 1).cpu(), _bitwise_ref(name, torch.empty(2, 0, dtype=dtype), 1))


def test_bitwise_reductions_refuse_floats():
    for name in BITWISE:
        with pytest.raises(ArgumentTypeError, match="integer or bool"):
            getattr(bt, name)(_x(3, 4))


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_hash_tensor_matches_torch(dtype):
    x = _x(5, 70, seed=19) * 100
    x[1, 3] = NAN
    x[2, 4] = -0.0
    x = x.to(dtype)
    for args, kwargs in (((), {}), ((1,), {}), ((0,), {"keepdim": True}), (((0, 1),), {})):
        got = bt.hash_tensor(x, *args, **kwargs)
        assert got.dtype == torch.uint64
        assert torch.equal(got.view(torch.int64), torch.hash_tensor(x, *args, **kwargs)
                           .view(torch.int64)), (args, kwargs)
    with pytest.raises(IndexError, match="non-zero size"):
        bt.hash_tensor(torch.empty(2, 0, device=DEVICE), 1)
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode"):
        bt.hash_tensor(x, mode=1)


def test_reruns_are_bit_identical():
    x = _x(2, 9000, seed=20)
    for fn in (lambda t: bt.linalg.vector_norm(t, 2, 1), lambda t: bt.linalg.vector_norm(t, 3),
               lambda t: bt.logmeanexp(t, 1), lambda t: bt.ptp(t)):
        a, b = fn(x), fn(x)
        assert torch.equal(a, b)
    xg = x.clone().requires_grad_()
    g1 = torch.autograd.grad(bt.linalg.vector_norm(xg, INF, 1).sum(), xg)[0]
    g2 = torch.autograd.grad(bt.linalg.vector_norm(xg, INF, 1).sum(), xg)[0]
    assert torch.equal(g1, g2)
