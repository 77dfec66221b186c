"""torch.gradient on the scan family's stencil plans (GradientPlan / GradientBackwardPlan):
values and gradients against torch in float64, every spacing form (scalar, per-dim scalars,
coordinates), edge orders 1 and 2, dtypes, NaN / inf, empty and tiny dims, strided inputs,
long lines across many programs, errors with torch's types, determinism, opcheck and
torch.compile."""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
import baracuda.torch as bt
from baracuda.families.scan import plans_gradient as PG
from baracuda.families.scan import reference as ref
from baracuda.families.scan.torch_gradient import _uniform_table
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * 2 + 0.3).to(DEVICE, dtype)


def _coords(n, seed=1, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, generator=g, dtype=torch.float64) * 1.5 + 0.5).cumsum(0).to(
        DEVICE, dtype)


def _same(got, want, **kw):
    assert isinstance(got, tuple) and len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a, b, equal_nan=True, **kw)


SPACINGS = [
    ((5, 7), {}),
    ((5, 7), {"spacing": 2.1}),
    ((5, 7), {"spacing": 3}),
    ((5, 7), {"spacing": [0.5, 1.7]}),
    ((5, 7), {"spacing": (2, 3), "edge_order": 2}),
    ((5, 7), {"dim": 1, "edge_order": 2}),
    ((5, 7), {"dim": -2, "spacing": 0.25}),
    ((4, 6, 3), {"dim": (2, 0), "spacing": [1.5, 0.5], "edge_order": 2}),
    ((4, 6, 3), {"dim": [1], "spacing": "coords", "edge_order": 1}),
    ((4, 6, 3), {"dim": (0, 1), "spacing": "coords", "edge_order": 2}),
    ((9,), {"spacing": "coords"}),
    ((2, 3), {"edge_order": 1}),
    ((3, 3), {"edge_order": 2, "spacing": "coords"}),
    ((2, 11), {"dim": 0, "spacing": "coords"}),
]


def _kwargs(shape, kw, dtype=torch.float64):
    kw = dict(kw)
    if kw.get("spacing") == "coords":
        dims = kw.get("dim", tuple(range(len(shape))))
        dims = [dims] if isinstance(dims, int) else list(dims)
        kw["spacing"] = [_coords(shape[d], seed=3 + i, dtype=dtype) for i, d in enumerate(dims)]
    return kw


@pytest.mark.parametrize("shape,kw", SPACINGS)
def test_values_and_gradients_match_torch_f64(shape, kw):
    x = _x(*shape)
    kw = _kwargs(shape, kw)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = bt.gradient(xa, **kw), torch.gradient(xb, **kw)
    _same(a, b, rtol=1e-13, atol=1e-13)
    ups = [torch.randn_like(t) for t in b]
    ga = torch.autograd.grad(a, xa, ups)[0]
    gb = torch.autograd.grad(b, xb, ups)[0]
    torch.testing.assert_close(ga, gb, rtol=1e-12, atol=1e-12)


def test_uniform_spacing_is_bitwise_torch_f64():
    """The same operations in the same order as torch's uniform formulas (spacings whose
    reciprocal is exact: torch's CUDA division by a scalar multiplies by it)."""
    x = _x(6, 45)
    for kw in ({}, {"spacing": 0.25}, {"spacing": [0.5, 4.0], "edge_order": 2}):
        for a, b in zip(bt.gradient(x, **kw), torch.gradient(x, **kw)):
            assert torch.equal(a, b), kw


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_low_precision_against_float64(dtype):
    x = _x(7, 300, dtype=dtype)
    # (coordinates along the short dim: 16-bit coordinates of a long line would repeat)
    coords = [_coords(7, dtype=dtype)]
    for kw in ({"spacing": 1.3}, {"edge_order": 2, "spacing": coords, "dim": 0}):
        got = bt.gradient(x, **kw)
        kw64 = {**kw, "spacing": [c.double() for c in coords]} if "edge_order" in kw else kw
        want = torch.gradient(x.double(), **kw64)
        tol = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
        for g, w in zip(got, want):
            assert g.dtype == dtype
            torch.testing.assert_close(g.double(), w, rtol=tol, atol=tol * w.abs().max())


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8, torch.int16])
def test_integer_inputs_give_the_default_float_dtype(dtype):
    x = (_x(4, 9) * 10).to(dtype)
    for kw in ({}, {"spacing": 2}, {"edge_order": 2},
               {"spacing": [torch.tensor([1, 2, 4, 7], device=DEVICE),
                            torch.arange(9, device=DEVICE) * 2]}):
        _same(bt.gradient(x, **kw), torch.gradient(x, **kw))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        _same(bt.gradient(x), torch.gradient(x))
    finally:
        torch.set_default_dtype(previous)


def test_coordinate_dtypes_promote_as_torch():
    x32 = _x(5, 6, dtype=torch.float32)
    c64 = [_coords(5), _coords(6, seed=2)]
    a, b = bt.gradient(x32, spacing=c64), torch.gradient(x32, spacing=c64)
    for p, q in zip(a, b):
        assert p.dtype == q.dtype == torch.float64
        # (torch computes the end rows in the input's float32, then widens)
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6)
    xb = _x(5, 6, dtype=torch.bfloat16)
    c32 = [c.float() for c in c64]
    for p, q in zip(bt.gradient(xb, spacing=c32), torch.gradient(xb, spacing=c32)):
        assert p.dtype == q.dtype == torch.float32
        torch.testing.assert_close(p, q, rtol=1e-2, atol=1e-2)


def test_nan_and_inf_follow_torch():
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, inf, 3.0, 2.0, nan, 5.0, 7.0, 1.0],
                      [-inf, -inf, 2.0, inf, 2.0, inf, -1.0, 0.0]], device=DEVICE)
    for kw in ({"dim": 1}, {"dim": 1, "edge_order": 2}, {"dim": 1, "spacing": 0.5}):
        _same(bt.gradient(x, **kw), torch.gradient(x, **kw))


def test_strided_and_transposed_inputs():
    base = _x(20, 30)
    for x in (base.t(), base[::2, ::3], base[:, :1].expand(20, 7), base[1:, 2:].t()):
        for kw in ({}, {"edge_order": 2, "spacing": [1.5, 0.5]}):
            _same(bt.gradient(x, **kw), torch.gradient(x, **kw), rtol=1e-13, atol=1e-13)


def test_empty_size_one_and_zero_dim():
    _same(bt.gradient(torch.empty(0, 5, device=DEVICE), dim=1),
          torch.gradient(torch.empty(0, 5, device=DEVICE), dim=1))
    _same(bt.gradient(_x(1, 4), dim=1), torch.gradient(_x(1, 4), dim=1))
    assert bt.gradient(torch.tensor(1.5, device=DEVICE)) == ()
    assert bt.gradient(_x(3, 4), dim=[]) == ()


def test_gradcheck_f64_input_and_coordinates():
    x = _x(4, 5).requires_grad_()
    for kw in ({"edge_order": 1, "spacing": 0.7}, {"edge_order": 2, "dim": 1}):
        assert torch.autograd.gradcheck(lambda t, kw=kw: bt.gradient(t, **kw), (x,))
    c = _coords(5, seed=4).requires_grad_()

    def f(t, coords):
        return bt.gradient(t, spacing=[coords], dim=1, edge_order=2)[0]

    assert torch.autograd.gradcheck(f, (x, c))
    # and the coordinates' gradient equals torch's (its formula is composite there)
    up = torch.randn(4, 5, dtype=torch.float64, device=DEVICE)
    ca, cb = c.detach().clone().requires_grad_(), c.detach().clone().requires_grad_()
    ga = torch.autograd.grad(f(x, ca), ca, up)[0]
    gb = torch.autograd.grad(torch.gradient(x, spacing=[cb], dim=1, edge_order=2)[0], cb, up)[0]
    torch.testing.assert_close(ga, gb, rtol=1e-11, atol=1e-11)


def _both_raise(kw, x, error, match=None):
    with pytest.raises(error, match=match):
        torch.gradient(x, **kw)
    with pytest.raises(error, match=match):
        bt.gradient(x, **kw)


def test_errors_match_torch():
    x = _x(3, 3)
    _both_raise({"spacing": [0.1], "dim": (1, 0)}, x, RuntimeError, "same length")
    _both_raise({"spacing": [0.1, 0.2, 0.3]}, x, RuntimeError, "length equal to")
    _both_raise({"edge_order": 3}, x, RuntimeError, "only supports edge_order=1")
    _both_raise({"dim": (1, 1)}, x, RuntimeError, "appears multiple times")
    _both_raise({"dim": 3}, x, IndexError)
    _both_raise({"edge_order": 1}, _x(3, 1), RuntimeError, "at least edge_order")
    _both_raise({"edge_order": 2}, _x(2, 2), RuntimeError, "at least edge_order")
    _both_raise({"spacing": [torch.ones(3, 1, device=DEVICE)], "dim": 0}, x, RuntimeError,
                "one dimension")
    _both_raise({}, x.to(torch.uint8), RuntimeError, "uint8")
    _both_raise({}, x > 0, RuntimeError)
    _both_raise({"dim": 0}, torch.tensor(1.0, device=DEVICE), IndexError)
    # (coordinates of another length broadcast where torch's formula does, else fail)
    _both_raise({"spacing": [_coords(3), _coords(7)]}, _x(3, 4), RuntimeError)
    with pytest.raises(TypeError, match="spacing"):
        bt.gradient(x, spacing="wide")


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 64 elements: a line of a few hundred points spans many programs."""
    monkeypatch.setattr(PG, "TILE_ELEMS", 64)
    PG._STEPS.clear()
    yield
    PG._STEPS.clear()


@pytest.mark.parametrize("shape,dim", [((3, 700), 1), ((300, 5), 0), ((2, 130, 3), 1)])
def test_long_lines_span_many_programs(small_tiles, shape, dim):
    x = _x(*shape)
    assert PG.launch_config(bc.GradientDescriptor(shape, dim, torch.float64))["blocks"] > 2
    for kw in ({"dim": dim}, {"dim": dim, "edge_order": 2, "spacing": [_coords(shape[dim])]}):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        a, b = bt.gradient(xa, **kw), torch.gradient(xb, **kw)
        _same(a, b, rtol=1e-13, atol=1e-13)
        up = torch.randn_like(b[0])
        torch.testing.assert_close(torch.autograd.grad(a[0], xa, up)[0],
                                   torch.autograd.grad(b[0], xb, up)[0])


def test_plan_backward_matches_reference_on_every_row_kind():
    """The transposed stencil at 2, 3 and many points, uniform and edge order 2 rows."""
    for n, edge in ((2, 1), (3, 1), (3, 2), (4, 2), (37, 2), (37, 1)):
        table = _uniform_table(n, 1.3, edge, torch.float64, DEVICE)
        desc = bc.GradientBackwardDescriptor((3, n), 1, torch.float64)
        dy = _x(3, n, seed=n)
        dx = torch.full_like(dy, float("nan"))
        bc.GradientBackwardPlan.select(desc).run(bc.GradientBackwardArgs(dy=dy, dx=dx,
                                                                         table=table))
        want = ref.stencil_backward(dy.cpu(), table.cpu(), 1)
        torch.testing.assert_close(dx.cpu(), want, rtol=1e-13, atol=1e-13)


def test_reruns_are_bitwise_identical():
    x = _x(3, 1500, dtype=torch.float32)
    c = _coords(1500, dtype=torch.float32)
    for kw in ({"dim": 1}, {"dim": 1, "edge_order": 2, "spacing": [c]}):
        a, b = bt.gradient(x, **kw)[0], bt.gradient(x, **kw)[0]
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_opcheck_custom_ops():
    x = _x(4, 9).requires_grad_()
    table = _uniform_table(9, 0.5, 2, torch.float64, DEVICE)
    torch.library.opcheck(torch.ops.baracuda.scan_gradient.default, (x, table, 1))
    torch.library.opcheck(torch.ops.baracuda.scan_gradient_backward.default,
                          (torch.randn(4, 9, dtype=torch.float64, device=DEVICE), table, 1))


def test_torch_compile_fullgraph():
    def f(t, c):
        g0, g1 = bt.gradient(t, spacing=[c, 0.5], edge_order=2)
        return g0.sin().sum() + g1.square().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    x = _x(5, 7)
    c = _coords(5)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = compiled(xa, c), f(xb, c)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(torch.autograd.grad(a, xa)[0], torch.autograd.grad(b, xb)[0])
