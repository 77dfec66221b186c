"""The scan torch functions' out= (torch's resize, dtype, device and autograd rules) and
torch.masked.cumsum / cumprod (masked-out elements as the identity) against torch."""

from __future__ import annotations

import warnings

import pytest
import torch

import baracuda.torch as bt
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * 2 + 0.1).to(DEVICE, dtype)


def _mask(*shape, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g) > 0.4).to(DEVICE)


# -- out= ---------------------------------------------------------------------------------------
CALLS = [
    ("cumsum", (1,), {}),
    ("cumsum", (0,), {"dtype": torch.float32}),
    ("cumprod", (1,), {}),
    ("logcumsumexp", (0,), {}),
    ("diff", (), {"n": 2, "dim": 1}),
    ("diff", (), {"dim": 0, "append": None}),
]


@pytest.mark.parametrize("name,args,kw", CALLS)
@pytest.mark.parametrize("start", ["empty", "right", "transposed"])
def test_out_matches_torch_and_is_returned(name, args, kw, start):
    x = _x(5, 7)
    want = getattr(torch, name)(x, *args, **kw)
    dtype = kw.get("dtype", x.dtype)
    if start == "empty":
        ours, theirs = (torch.empty(0, dtype=dtype, device=DEVICE) for _ in range(2))
    elif start == "right":
        ours, theirs = (torch.full(want.shape, 7.0, dtype=dtype, device=DEVICE)
                        for _ in range(2))
    else:
        ours, theirs = (torch.full(want.shape[::-1], 7.0, dtype=dtype, device=DEVICE).t()
                        for _ in range(2))
    got = getattr(bt, name)(x, *args, **kw, out=ours)
    ref = getattr(torch, name)(x, *args, **kw, out=theirs)
    assert got is ours
    assert got.shape == ref.shape and got.stride() == ref.stride() and got.dtype == ref.dtype
    torch.testing.assert_close(got, ref)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_indexed_out(name):
    x = _x(6, 9)
    x[2, 3:6] = x[2, 3]  # ties: the last index
    values = torch.empty(0, device=DEVICE, dtype=x.dtype)
    indices = torch.empty(0, device=DEVICE, dtype=torch.int64)
    got = getattr(bt, name)(x, 1, out=(values, indices))
    want = getattr(torch, name)(x, 1)
    assert type(got) is type(want)
    assert got.values is values and got.indices is indices
    assert torch.equal(values, want.values) and torch.equal(indices, want.indices)


def test_out_resize_warns_as_torch():
    x = _x(3, 4)
    out = torch.empty(2, 2, device=DEVICE, dtype=x.dtype)
    with pytest.warns(UserWarning, match="was resized"):
        bt.cumsum(x, 1, out=out)
    assert out.shape == (3, 4)
    torch.testing.assert_close(out, torch.cumsum(x, 1))
    with warnings.catch_warnings(record=True) as seen:  # an empty out resizes silently
        warnings.simplefilter("always")
        bt.cumsum(x, 1, out=torch.empty(0, device=DEVICE, dtype=x.dtype))
    assert not [w for w in seen if "resized" in str(w.message)]


def test_out_dtype_rules_follow_torch():
    x = _x(3, 4, dtype=torch.float32)
    xi = (x * 3).to(torch.int32)
    # cumsum / cumprod accumulate in out's dtype when dtype is not given
    for name in ("cumsum", "cumprod"):
        for src, odt in ((x, torch.int64), (x, torch.float64), (xi, torch.int32),
                         (xi, torch.float32), (x, torch.float16)):
            a = getattr(bt, name)(src, 1, out=torch.empty(0, dtype=odt, device=DEVICE))
            b = getattr(torch, name)(src, 1, out=torch.empty(0, dtype=odt, device=DEVICE))
            assert a.dtype == b.dtype
            torch.testing.assert_close(a, b, rtol=2e-3, atol=2e-3)
    cases = [
        (lambda f: f.cumsum(xi, 1, dtype=torch.int64,
                            out=torch.empty(0, dtype=torch.int32, device=DEVICE))),
        (lambda f: f.logcumsumexp(x, 1, out=torch.empty(0, dtype=torch.float64,
                                                         device=DEVICE))),
        (lambda f: f.cummax(x, 1, out=(torch.empty(0, device=DEVICE),
                                       torch.empty(0, dtype=torch.int32, device=DEVICE)))),
        (lambda f: f.cummin(x, 1, out=(torch.empty(0, dtype=torch.float64, device=DEVICE),
                                       torch.empty(0, dtype=torch.int64, device=DEVICE)))),
        (lambda f: f.diff(x, out=torch.empty(0, dtype=torch.int64, device=DEVICE))),
    ]
    for call in cases:
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(RuntimeError):
            call(bt)
    # diff writes into any dtype its result casts to
    a = bt.diff(xi, out=torch.empty(0, dtype=torch.float32, device=DEVICE))
    torch.testing.assert_close(a, torch.diff(xi).float())


def test_out_refuses_autograd_as_torch():
    x = _x(3, 4).requires_grad_()
    for name, args in (("cumsum", (1,)), ("cumprod", (1,)), ("logcumsumexp", (1,)),
                       ("diff", ())):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            torch_fn = getattr(torch, name)
            torch_fn(x, *args, out=torch.empty(0, dtype=x.dtype, device=DEVICE))
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            getattr(bt, name)(x, *args, out=torch.empty(0, dtype=x.dtype, device=DEVICE))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        bt.cummax(x, 0, out=(torch.empty(0, dtype=x.dtype, device=DEVICE),
                             torch.empty(0, dtype=torch.int64, device=DEVICE)))
    with torch.no_grad():  # no graph: allowed, as torch
        out = bt.cumsum(x, 1, out=torch.empty(0, dtype=x.dtype, device=DEVICE))
    torch.testing.assert_close(out, torch.cumsum(x.detach(), 1))


def test_out_repeated_calls_write_each_time():
    """Calls of one signature replay (baracuda.torch); out= must still be written."""
    out = torch.empty(4, 6, device=DEVICE, dtype=torch.float64)
    for seed in range(4):
        x = _x(4, 6, seed=seed)
        bt.cumsum(x, 1, out=out)
        torch.testing.assert_close(out, torch.cumsum(x, 1))
    with pytest.raises(TypeError):
        bt.cummax(_x(3, 4), 0, out=torch.empty(0, device=DEVICE))


# -- torch.masked ---------------------------------------------------------------------------------
MASKED = [
    ((5, 7), 1, (5, 7), {}),
    ((5, 7), 0, (7,), {}),  # a mask broadcast from fewer dims
    ((4, 6, 3), -1, (4, 1, 3), {"dtype": torch.float32}),
    ((9,), 0, None, {}),
]


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("shape,dim,mask_shape,kw", MASKED)
def test_masked_matches_torch_with_gradients(name, shape, dim, mask_shape, kw):
    x = _x(*shape)
    x = x.abs() * 0.3 + 0.8 if name == "cumprod" else x
    mask = _mask(*mask_shape) if mask_shape else None
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a = getattr(bt.masked, name)(xa, dim, mask=mask, **kw)
    b = getattr(torch.masked, name)(xb, dim, mask=mask, **kw)
    assert a.dtype == b.dtype and a.shape == b.shape
    torch.testing.assert_close(a, b)
    up = torch.randn(b.shape, generator=torch.Generator().manual_seed(3),
                     dtype=torch.float64).to(b)
    # with dtype=float32 the gradient is computed in float32 on both sides (float32's
    # tolerance, though x is float64)
    tol = dict(rtol=1.3e-6, atol=1e-5) if "dtype" in kw else {}
    torch.testing.assert_close(torch.autograd.grad(a, xa, up)[0],
                               torch.autograd.grad(b, xb, up)[0], **tol)


def test_masked_out_nan_and_inf_do_not_leak():
    x = _x(3, 8)
    mask = _mask(3, 8)
    x[~mask] = float("nan")
    x[0, ~mask[0]] = float("inf")
    xa = x.clone().requires_grad_()
    for name in ("cumsum", "cumprod"):
        got = getattr(bt.masked, name)(xa, 1, mask=mask)
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, getattr(torch.masked, name)(x, 1, mask=mask))
        (g,) = torch.autograd.grad(got.sum(), xa)
        assert torch.isfinite(g).all() and (g[~mask] == 0).all()


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8])
def test_masked_integers_keep_their_dtype(dtype):
    x = (_x(4, 9) * 3).to(dtype)
    mask = _mask(4, 9).to(torch.int64)  # a non-bool mask is read as bool
    for name in ("cumsum", "cumprod"):
        a = getattr(bt.masked, name)(x, 1, mask=mask)
        b = getattr(torch.masked, name)(x, 1, mask=mask)
        assert a.dtype == b.dtype == dtype
        assert torch.equal(a, b)
    a = bt.masked.cumsum(x, 1, mask=mask, dtype=torch.float64)
    torch.testing.assert_close(a, torch.masked.cumsum(x, 1, mask=mask, dtype=torch.float64))


def test_masked_errors_match_torch():
    x = _x(3, 4)
    for call, error in (
            (lambda f: f.cumsum(x, 1, mask=_mask(2, 3, 4)), IndexError),
            (lambda f: f.cumprod(x, 2, mask=_mask(3, 4)), IndexError),
            (lambda f: f.cumsum(x, 1, mask=_mask(3, 5)), RuntimeError)):
        with pytest.raises(error):
            call(torch.masked)
        with pytest.raises(error):
            call(bt.masked)


def test_masked_namespace():
    assert bt.masked.__all__ == ["cumsum", "cumprod"] or \
        {"cumsum", "cumprod"} <= set(bt.masked.__all__)
    assert bt.masked.cumsum.__name__ == "masked_cumsum"


def test_out_and_masked_compile_fullgraph():
    """out= of the result's shape (resizing an out traces in neither torch's nor ours) and the
    masked scans trace whole."""
    x = _x(3, 4)
    mask = _mask(3, 4)

    def f(t, out, values, indices):
        bt.cumsum(t, 1, out=out)
        bt.cummax(t, 0, out=(values, indices))
        return bt.masked.cumprod(t, 1, mask=mask)

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    outs = [torch.empty(3, 4, dtype=x.dtype, device=DEVICE),
            torch.empty(3, 4, dtype=x.dtype, device=DEVICE),
            torch.empty(3, 4, dtype=torch.int64, device=DEVICE)]
    got = compiled(x, *outs)
    torch.testing.assert_close(got, torch.masked.cumprod(x, 1, mask=mask))
    torch.testing.assert_close(outs[0], torch.cumsum(x, 1))
    want = torch.cummax(x, 0)
    assert torch.equal(outs[1], want.values) and torch.equal(outs[2], want.indices)
