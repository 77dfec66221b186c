"""The reduction torch functions' out= variants (resize and its warning, torch's dtype rules,
autograd and device errors, the returned tensor) and torch.trapezoid / torch.trapz (dx, x 1-D
and full, gradients, empty dims, integer input, errors), against torch."""

from __future__ import annotations

import warnings

import pytest
import torch

import baracuda.torch as bt
from conftest import DEVICE


def _x(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(DEVICE, dtype)


def _call(fn, *args, **kwargs):
    """(result or exception type, resize warnings) of one call."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - compared with torch's
            out = type(exc)
    return out, sum("resized" in str(w.message) for w in seen)


def _outs(spec):
    return tuple(torch.empty(s, dtype=d, device=DEVICE) for s, d in spec)


F, D, H, L, INT, B, U = (torch.float32, torch.float64, torch.float16, torch.int64, torch.int32,
                       torch.bool, torch.uint8)

# (function, args, kwargs, out shapes and dtypes): right shapes, wrong ones (resized with a
# warning), empty ones (resized silently), and dtypes torch casts into or refuses
OUT_CALLS = [
    ("sum", (1,), {}, [((3, 5), F)]), ("sum", ((0, 2), True), {}, [((2,), F)]),
    ("sum", (1,), {}, [((0,), D)]), ("sum", (1,), {}, [((3, 5), L)]),
    ("sum", (1,), {"dtype": D}, [((3, 5), F)]), ("sum", (None,), {}, [((), F)]),
    ("mean", (1,), {}, [((3, 5), H)]), ("mean", (1,), {}, [((3, 5), L)]),
    ("prod", (2,), {}, [((3, 4), D)]), ("nansum", (0,), {}, [((4, 5), L)]),
    ("nanmean", (2,), {}, [((9,), F)]), ("amax", (1,), {}, [((3, 5), F)]),
    ("amax", (1,), {}, [((3, 5), D)]), ("amin", ((0, 1),), {}, [((0,), F)]),
    ("argmax", (1,), {}, [((3, 5), L)]), ("argmin", (), {}, [((1,), L)]),
    ("argmax", (1,), {}, [((3, 5), INT)]), ("all", (1,), {}, [((3, 5), B)]),
    ("any", (2,), {}, [((3, 4), U)]), ("all", (1,), {}, [((3, 5), F)]),
    ("var", (1,), {}, [((3, 5), D)]), ("std", (1,), {"correction": 0}, [((7,), F)]),
    ("var", (1,), {}, [((3, 5), INT)]), ("logsumexp", (1,), {}, [((3, 5), D)]),
    ("logsumexp", (1,), {}, [((3, 5), L)]), ("max", (), {}, [((0,), D)]),
    ("max", (), {}, [((), L)]), ("max", (1,), {}, [((0,), F), ((0,), L)]),
    ("min", (2, True), {}, [((3, 4, 1), F), ((5,), L)]),
    ("max", (1,), {}, [((3, 5), D), ((3, 5), L)]),
    ("min", (1,), {}, [((3, 5), F), ((3, 5), INT)]),
    ("aminmax", (), {"dim": 1}, [((0,), F), ((0,), F)]),
    ("aminmax", (), {}, [((2,), F), ((), F)]),
]


#: calls where torch < 2.12 answered otherwise (2.11's CUDA mean writes zeros into an int64
#: out, its max() refuses to resize an empty out); baracuda follows the newer torch
_CHANGED_SINCE_2_11 = {("mean", (1,), L), ("max", (), D)}
_OLD_TORCH = tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 12)


@pytest.mark.parametrize("name,args,kwargs,spec", OUT_CALLS, ids=lambda v: str(v))
def test_out_matches_torch(name, args, kwargs, spec):
    if _OLD_TORCH and (name, args, spec[0][1]) in _CHANGED_SINCE_2_11:
        pytest.skip("torch < 2.12 answers this call otherwise; baracuda follows torch 2.13")
    x = _x(3, 4, 5)
    if name in ("all", "any"):
        x = (x > -0.5).float()
    ours, theirs = _outs(spec), _outs(spec)
    one = len(spec) == 1
    got, got_warned = _call(getattr(bt, name), x, *args, out=ours[0] if one else ours,
                            **kwargs)
    want, want_warned = _call(getattr(torch, name), x, *args,
                              out=theirs[0] if one else theirs, **kwargs)
    assert got_warned == want_warned
    if isinstance(want, type):
        assert got is want or (isinstance(got, type) and issubclass(got, want)), (got, want)
        return
    assert type(got) is type(want)
    got_t = (got,) if one else tuple(got)
    for g, o, w in zip(got_t, ours, (want,) if one else tuple(want)):
        assert g is o  # the out tensors themselves come back
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=2e-3, atol=2e-3)


def test_out_with_strided_out_is_written_in_place():
    x = _x(3, 4, 5)
    buf = torch.full((3, 7), -1.0, device=DEVICE)
    out = buf[:, 1:6]
    assert bt.sum(x, 1, out=out) is out
    torch.testing.assert_close(out, x.sum(1))
    assert torch.equal(buf[:, 0], torch.full((3,), -1.0, device=DEVICE))
    assert torch.equal(buf[:, 6], torch.full((3,), -1.0, device=DEVICE))


def test_out_that_aliases_the_input():
    """The result is computed apart, then copied in: reading and writing x at once would
    not be."""
    x = _x(3, 4)
    want = x.sum(1)
    out = x[:, 0]
    assert bt.sum(x, 1, out=out) is out
    torch.testing.assert_close(x[:, 0], want)


def test_out_of_the_binary_max():
    a, b = _x(3, 4), _x(4, seed=1)
    out = torch.empty(0, device=DEVICE)
    if getattr(torch.ops.baracuda, "ew_binary", None) is None:
        pytest.skip("the elementwise family is not loaded")
    assert bt.max(a, b, out=out) is out
    assert torch.equal(out, torch.maximum(a, b))


def test_out_refuses_autograd_as_torch():
    x = _x(3, 4).requires_grad_()
    for fn, out in ((bt.sum, torch.empty(3, device=DEVICE)),
                    (bt.amax, torch.empty(3, device=DEVICE))):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            fn(x, 1, out=out)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        bt.max(x, 1, out=(torch.empty(3, device=DEVICE),
                          torch.empty(3, dtype=torch.long, device=DEVICE)))
    # nothing to differentiate: torch allows these
    out = torch.empty(3, dtype=torch.long, device=DEVICE)
    assert torch.equal(bt.argmax(x, 1, out=out), torch.argmax(x, 1))
    with torch.no_grad():
        torch.testing.assert_close(bt.sum(x, 1, out=torch.empty(3, device=DEVICE)), x.sum(1))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        bt.sum(x.detach(), 1, out=torch.empty(3, device=DEVICE, requires_grad=True))


def test_out_errors():
    x = _x(3, 4)
    with pytest.raises(RuntimeError, match="same device"):
        bt.sum(x, 1, out=torch.empty(3, device="meta"))
    with pytest.raises(TypeError, match="must be Tensor"):
        bt.sum(x, 1, out=(torch.empty(3, device=DEVICE),))
    with pytest.raises(TypeError, match="tuple of 2 Tensors"):
        bt.max(x, 1, out=torch.empty(3, device=DEVICE))
    with pytest.raises(RuntimeError, match="can't be cast"):
        bt.mean(x, 1, out=torch.empty(3, dtype=torch.int64, device=DEVICE))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long int"):
        bt.argmax(x, 1, out=torch.empty(3, dtype=torch.int32, device=DEVICE))
    with pytest.raises(RuntimeError, match="only supports bool tensor"):
        bt.any(x, 1, out=torch.empty(3, device=DEVICE))
    with pytest.raises(NotImplementedError, match="nansum"):
        bt.nansum(x, 1, out=torch.empty(3, dtype=torch.int64, device=DEVICE))


def test_out_of_integer_casts_the_input_first_as_torch():
    x = torch.tensor([[0.6, 0.6, -0.6, 1.7, 2.9]], device=DEVICE)
    for name in ("sum", "prod"):
        got = getattr(bt, name)(x, 1, out=torch.empty(1, dtype=torch.int64, device=DEVICE))
        want = getattr(torch, name)(x, 1, out=torch.empty(1, dtype=torch.int64,
                                                           device=DEVICE))
        assert torch.equal(got, want), name


# -- trapezoid / trapz ------------------------------------------------------------------------
TRAPEZOID_CALLS = [
    ((4, 7), None, {}), ((4, 7), None, {"dx": 0.5}), ((4, 7), None, {"dx": 2, "dim": 0}),
    ((4, 7), (7,), {}), ((4, 7), (4,), {"dim": 0}), ((4, 7), (4, 7), {}),
    ((2, 3, 5), (3, 5), {"dim": 1}), ((2, 3, 5), (1, 5), {}), ((3, 1), None, {}),
    ((3, 1), (1,), {}), ((6,), (6,), {"dim": -1}),
]


@pytest.mark.parametrize("name", ["trapezoid", "trapz"])
@pytest.mark.parametrize("shape,xshape,kwargs", TRAPEZOID_CALLS, ids=lambda v: str(v))
def test_trapezoid_matches_torch(name, shape, xshape, kwargs):
    y = _x(*shape, seed=2)
    args = () if xshape is None else (_x(*xshape, seed=3).cumsum(-1),)
    got = getattr(bt, name)(y, *args, **kwargs)
    want = getattr(torch, name)(y, *args, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xshape,kwargs", [(None, {"dx": 0.7}), ((5,), {}), ((3, 5), {}),
                                           ((3,), {"dim": 0})])
def test_trapezoid_gradcheck_f64(xshape, kwargs):
    y = _x(3, 5, dtype=torch.float64, seed=4).requires_grad_()
    inputs = (y,)
    if xshape is not None:
        inputs += (_x(*xshape, dtype=torch.float64, seed=5).requires_grad_(),)
    assert torch.autograd.gradcheck(lambda *t: bt.trapezoid(*t, **kwargs), inputs, eps=1e-6,
                                    atol=1e-6, check_batched_grad=False)


def test_trapezoid_empty_dims_and_integers():
    for dtype in (torch.float32, torch.int32):
        e = torch.zeros(3, 0, dtype=dtype, device=DEVICE)
        for args in ((), (torch.zeros(0, device=DEVICE),), (torch.zeros(5, device=DEVICE),)):
            got, want = bt.trapezoid(e, *args), torch.trapezoid(e, *args)
            assert got.dtype == want.dtype and torch.equal(got, want)
    n = torch.arange(12, device=DEVICE).reshape(3, 4)
    for args, kwargs in (((), {}), ((), {"dx": 2}), ((torch.arange(4, device=DEVICE),), {}),
                         ((torch.arange(4.0, device=DEVICE),), {})):
        got, want = bt.trapezoid(n, *args, **kwargs), torch.trapezoid(n, *args, **kwargs)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)
    h, xs = _x(3, 4, dtype=torch.float16), torch.arange(4.0, dtype=torch.float64,
                                                        device=DEVICE)
    assert bt.trapezoid(h, xs).dtype == torch.trapezoid(h, xs).dtype == torch.float64


def test_trapezoid_errors_match_torch():
    y = _x(3, 4)
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        bt.trapezoid(y, torch.arange(3.0, device=DEVICE))
    with pytest.raises(RuntimeError, match="bool"):
        bt.trapezoid(y > 0)
    with pytest.raises(RuntimeError, match="bool"):
        bt.trapezoid(y, torch.ones(4, dtype=torch.bool, device=DEVICE))
    with pytest.raises(RuntimeError, match="real number"):
        bt.trapezoid(y, dx=True)
    with pytest.raises(IndexError, match="no dimensions"):
        bt.trapezoid(torch.tensor(1.0, device=DEVICE))
    with pytest.raises(IndexError, match="out of range"):
        bt.trapezoid(y, dim=2)
    with pytest.raises(TypeError, match="not both"):
        bt.trapz(y, torch.arange(4.0, device=DEVICE), dx=2)
    with pytest.raises(TypeError, match="Tensor"):
        bt.trapezoid(y, 2.0)
