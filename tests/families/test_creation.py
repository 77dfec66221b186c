"""The creation torch functions against torch: zeros / ones / full and their _like / new_
forms, scalar_tensor, empty*, fill / fill_ / zero_ (values, dtypes, layouts, out=, errors,
autograd), custom-op checks and torch.compile."""

from __future__ import annotations

import warnings

import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import ArgumentTypeError, InvalidProblem, Unsupported
from conftest import DEVICE


def _x(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) + 0.5).to(DEVICE, dtype)


def _same(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape and got.device == want.device
    assert got.stride() == want.stride()
    assert torch.equal(got, want)


# -- factories ----------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(7,), ((3, 5),), ([2, 0, 3],), (torch.Size([4, 1, 3]),), ((),),
                                  (2, 3, 1, 5, 1, 2, 3)])
def test_zeros_ones_sizes(size):
    for name in ("zeros", "ones"):
        _same(getattr(bt, name)(*size, device=DEVICE), getattr(torch, name)(*size, device=DEVICE))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64,
                                   torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.uint8, torch.bool])
def test_full_every_dtype(dtype):
    value = True if dtype == torch.bool else (-3 if dtype.is_signed and not
                                              dtype.is_floating_point else 2.7)
    if dtype == torch.uint8:
        value = 200
    _same(bt.full((5, 33), value, dtype=dtype, device=DEVICE),
          torch.full((5, 33), value, dtype=dtype, device=DEVICE))
    _same(bt.ones(9, dtype=dtype, device=DEVICE), torch.ones(9, dtype=dtype, device=DEVICE))


@pytest.mark.parametrize("value", [True, False, 7, -2**40, 2.5, -0.0, float("inf"),
                                   float("nan"), torch.tensor(3.25), 1e-40])
def test_full_dtype_from_value(value):
    got, want = bt.full((4, 3), value, device=DEVICE), torch.full((4, 3), value, device=DEVICE)
    assert got.dtype == want.dtype
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))  # bits: -0.0, NaN


def test_full_default_dtype_follows_torch():
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        assert bt.full((2,), 0.1, device=DEVICE).dtype == torch.float64
        assert bt.zeros(2, device=DEVICE).dtype == torch.float64
        assert bt.scalar_tensor(1, device=DEVICE).dtype == torch.float64
    finally:
        torch.set_default_dtype(old)


def test_full_refuses_overflow_and_options():
    with pytest.raises(InvalidProblem):
        bt.full((2,), 300, dtype=torch.uint8, device=DEVICE)
    with pytest.raises(InvalidProblem):
        bt.full((2,), float("inf"), dtype=torch.int32, device=DEVICE)
    for dtype, value in ((torch.float32, 1e39), (torch.float16, 65519.0),
                         (torch.bfloat16, 3.3896e38)):
        with pytest.raises(InvalidProblem, match="overflow"):
            bt.full((2,), value, dtype=dtype, device=DEVICE)
    _same(bt.full((2,), 65519.0, dtype=torch.bfloat16, device=DEVICE),
          torch.full((2,), 65519.0, dtype=torch.bfloat16, device=DEVICE))
    with pytest.raises(InvalidProblem, match="negative dimension"):
        bt.zeros(3, -1, device=DEVICE)
    with pytest.raises(ArgumentTypeError):
        bt.ones(2.5, device=DEVICE)
    with pytest.raises(Unsupported, match="pin_memory"):
        bt.zeros(3, pin_memory=True)
    with pytest.raises(Unsupported, match="layout"):
        bt.ones(3, layout=torch.sparse_coo, device=DEVICE)
    with pytest.raises(Unsupported):
        bt.full((2,), 1 + 2j, device=DEVICE)
    with pytest.raises(RuntimeError):  # torch's rule: integers cannot require grad
        bt.zeros(3, dtype=torch.int64, requires_grad=True, device=DEVICE)


def test_requires_grad_and_scalar_tensor():
    z = bt.zeros(3, 4, requires_grad=True, device=DEVICE)
    assert z.requires_grad and z.is_leaf
    _same(bt.scalar_tensor(-5, device=DEVICE), torch.scalar_tensor(-5, device=DEVICE))
    _same(bt.scalar_tensor(True, dtype=torch.int32, device=DEVICE),
          torch.scalar_tensor(True, dtype=torch.int32, device=DEVICE))


@pytest.mark.parametrize("start", ["empty", "right", "transposed", "bigger"])
def test_out_resizes_checks_and_returns(start):
    shape = (6, 5)
    if start == "empty":
        make = lambda: torch.empty(0, device=DEVICE)  # noqa: E731
    elif start == "right":
        make = lambda: torch.full(shape, 7.0, device=DEVICE)  # noqa: E731
    elif start == "transposed":
        make = lambda: torch.full(shape[::-1], 7.0, device=DEVICE).t()  # noqa: E731
    else:
        make = lambda: torch.full((40,), 7.0, device=DEVICE)  # noqa: E731
    for name, args in (("zeros", shape), ("ones", shape), ("full", (shape, -1.5))):
        ours, theirs = make(), make()
        with warnings.catch_warnings(record=True) as ours_w:
            warnings.simplefilter("always")
            got = getattr(bt, name)(*args, out=ours) if name != "full" else \
                bt.full(*args, out=ours)
        with warnings.catch_warnings(record=True) as torch_w:
            warnings.simplefilter("always")
            ref = getattr(torch, name)(*args, out=theirs) if name != "full" else \
                torch.full(*args, out=theirs)
        assert got is ours
        _same(got, ref)
        assert bool(ours_w) == bool(torch_w)
    with pytest.raises(InvalidProblem, match="does not match dtype of out"):
        bt.zeros(3, dtype=torch.float64, out=torch.empty(3, device=DEVICE))
    out = torch.empty(3, dtype=torch.int32, device=DEVICE)
    _same(bt.ones(3, out=out), torch.ones(3, dtype=torch.int32, device=DEVICE))


LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.transpose(0, 1),
    "channels_last": lambda t: t.contiguous(memory_format=torch.channels_last),
    "sliced": lambda t: t[:, :, 1:, ::2],
    "expanded": lambda t: t[:1].expand(3, -1, -1, -1),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("fmt", [torch.preserve_format, torch.contiguous_format,
                                 torch.channels_last])
def test_like_forms_keep_layout(layout, fmt):
    x = LAYOUTS[layout](_x(3, 4, 5, 6))
    for name, args in (("zeros_like", ()), ("ones_like", ()), ("full_like", (2.5,))):
        _same(getattr(bt, name)(x, *args, memory_format=fmt),
              getattr(torch, name)(x, *args, memory_format=fmt))
        _same(getattr(bt, name)(x, *args, dtype=torch.int16),
              getattr(torch, name)(x, *args, dtype=torch.int16))
    got = bt.empty_like(x, memory_format=fmt)
    want = torch.empty_like(x, memory_format=fmt)
    assert got.shape == want.shape and got.stride() == want.stride()


def test_new_forms():
    x = _x(4, 5, dtype=torch.bfloat16)
    _same(bt.new_zeros(x, (2, 3)), x.new_zeros((2, 3)))
    _same(bt.new_ones(x, 2, 3), x.new_ones(2, 3))
    _same(bt.new_full(x, (3,), 7), x.new_full((3,), 7))  # x's dtype, not the value's
    _same(bt.new_full(x, (3,), 7, dtype=torch.int64), x.new_full((3,), 7, dtype=torch.int64))
    for got, want in ((bt.new_empty(x, (2, 0, 3)), x.new_empty((2, 0, 3))),
                      (bt.new_empty_strided(x, (2, 3), (1, 2)), x.new_empty_strided((2, 3),
                                                                                   (1, 2)))):
        assert (got.shape, got.stride(), got.dtype) == (want.shape, want.stride(), want.dtype)


def test_empty_family_allocates_as_torch():
    pairs = [
        (bt.empty(2, 3, device=DEVICE), torch.empty(2, 3, device=DEVICE)),
        (bt.empty((4, 5), dtype=torch.int8, device=DEVICE),
         torch.empty((4, 5), dtype=torch.int8, device=DEVICE)),
        (bt.empty(2, 3, 4, 5, memory_format=torch.channels_last, device=DEVICE),
         torch.empty(2, 3, 4, 5, memory_format=torch.channels_last, device=DEVICE)),
        (bt.empty_strided((3, 4), (1, 3), device=DEVICE),
         torch.empty_strided((3, 4), (1, 3), device=DEVICE)),
        (bt.empty_permuted((2, 3, 4), (2, 0, 1), device=DEVICE),
         torch.empty_permuted((2, 3, 4), (2, 0, 1), device=DEVICE)),
    ]
    for got, want in pairs:
        assert (got.shape, got.stride(), got.dtype, got.device) == \
            (want.shape, want.stride(), want.dtype, want.device)
    out = torch.empty(0, device=DEVICE)
    assert bt.empty(3, 2, out=out) is out and out.shape == (3, 2)
    with pytest.raises(InvalidProblem):
        bt.empty(-1, device=DEVICE)
    with pytest.raises(Unsupported):
        bt.empty(2, pin_memory=True)


# -- fill / fill_ / zero_ -----------------------------------------------------------------------
@pytest.mark.parametrize("layout", list(LAYOUTS)[:4])
@pytest.mark.parametrize("value", [1.75, 3, True, "tensor_f64", "tensor_i64"])
def test_fill_inplace_any_layout(layout, value):
    x = LAYOUTS[layout](_x(3, 4, 5, 6))
    v = {"tensor_f64": torch.tensor(-2.5, dtype=torch.float64, device=DEVICE),
         "tensor_i64": torch.tensor(9, device=DEVICE)}.get(value, value)
    base = x._base if x._base is not None else x
    before = base.clone()
    version = x._version
    out = bt.fill_(x, v)
    assert out is x and x._version > version
    assert torch.equal(x, torch.full_like(x, v.item() if isinstance(v, torch.Tensor) else v))
    if layout == "sliced":  # elements outside the view keep their values
        rest = base.clone()
        rest[:, :, 1:, ::2] = before[:, :, 1:, ::2]
        assert torch.equal(rest, before)
    _same(bt.fill(x, v), torch.fill(x, v))


def test_zero_and_fill_dtypes():
    for dtype in (torch.bfloat16, torch.float16, torch.int8, torch.uint8, torch.bool,
                  torch.float64):
        x = torch.ones(37, dtype=dtype, device=DEVICE)
        assert bt.zero_(x) is x and not bool(x.any())
        bt.fill_(x, torch.tensor(0.5, device=DEVICE))
        assert torch.equal(x, torch.ones(37, device=DEVICE).fill_(0.5).to(dtype))


def test_fill_errors():
    x = _x(4)
    with pytest.raises(RuntimeError, match="0-dimension"):
        bt.fill_(x, torch.ones(2, device=DEVICE))
    with pytest.raises(RuntimeError, match="leaf"):
        bt.fill_(_x(3).requires_grad_(), 1.0)
    with pytest.raises(InvalidProblem):
        bt.fill_(torch.zeros(2, dtype=torch.uint8, device=DEVICE), -1)


def test_fill_gradients_as_torch():
    for inplace in (True, False):
        grads = []
        for lib in (bt, torch):
            x0 = _x(3, 4, dtype=torch.float64).requires_grad_()
            v = torch.tensor(0.7, dtype=torch.float64, device=DEVICE, requires_grad=True)
            x = x0 * 2
            y = (lib.fill_(x, v) if lib is bt else x.fill_(v)) if inplace else lib.fill(x, v)
            (y * _x(3, 4, dtype=torch.float64, seed=3)).sum().backward()
            grads.append((x0.grad, v.grad))
        (gx, gv), (tx, tv) = grads
        torch.testing.assert_close(gx, tx)
        torch.testing.assert_close(gv, tv)
    x0 = _x(3, 4, dtype=torch.float64).requires_grad_()
    v = torch.tensor(0.7, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.fill(a * 1, b), (x0, v))


# -- custom ops, torch.compile -------------------------------------------------------------------
def test_opcheck_custom_ops():
    from baracuda.families.creation import torch_common as C

    y = torch.empty(5, 7, device=DEVICE)
    torch.library.opcheck(C.fill_op.custom_op, (y, 0, 2.5, 2))
    torch.library.opcheck(C.fill_tensor_op.custom_op, (y, torch.tensor(3, device=DEVICE)))
    torch.library.opcheck(C.band_op.custom_op, (y, -1, 2))
    r = torch.empty(9, device=DEVICE)
    torch.library.opcheck(C.range_op.custom_op, (r, "linspace", 0, -1.0, 2, 0, 2.0, 2, 10.0))
    t = torch.empty(2, 6, dtype=torch.int64, device=DEVICE)
    torch.library.opcheck(C.tri_indices_op.custom_op, (t, "tril", 3, 3, 0))


def test_compile_fullgraph():
    def f(x):
        y = x * 2
        bt.fill_(y[1:], 3.0)  # in place through views
        bt.zero_(y[0])
        n = x.shape[-1]
        return (y + bt.linspace(0, 1, n, device=x.device) + bt.full_like(x, 2)
                + bt.tril_indices(3, n, device=x.device).sum() + bt.ones(n, device=x.device)
                + bt.eye(n, device=x.device)[1] + bt.arange(n, device=x.device))

    x = _x(3, 4)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), f(x))


def test_fill_inplace_value_gradient_under_compile_after_eager_history():
    """A compiled fill_ on a tensor that an eager fill_ already wrote: the value's gradient
    is the output gradient's sum once (the old history gets none), as torch's."""
    x = torch.randn(4, 5, device=DEVICE)
    v = torch.randn((), device=DEVICE, requires_grad=True)
    call = lambda: bt.fill_(x, v)  # noqa: E731
    assert torch.autograd.grad(call().sum(), v)[0].item() == 20.0
    torch._dynamo.reset()
    out = torch.compile(call, backend="aot_eager", fullgraph=True)()
    assert torch.autograd.grad(out.sum(), v)[0].item() == 20.0
    assert torch.equal(x, v.detach().expand(4, 5))
