"""Scan family: the torch frontend (cumsum / cumprod / cummax / cummin / logcumsumexp / diff /
cumulative_trapezoid against torch, gradients, dtypes, NaN, empty and 0-d inputs, errors,
opcheck, torch.compile) and the plan's pass structures (chunked lines, grouped launches) on
the interpreter."""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
from baracuda.families.scan import plans as P
from baracuda.families.scan import reference as ref
from baracuda.families.scan import torch_api as bt
from conftest import DEVICE

SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]
PAIRWISE = (bc.ScanKind.DIFF, bc.ScanKind.CUMULATIVE_TRAPEZOID)
NAMES = [*SCANS, "diff"]


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * 2).to(DEVICE, dtype)


def _values(out):
    return out.values if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape,dim", [((5, 37), -1), ((4, 6, 3), 1), ((9,), 0), ((40, 3), 0)])
def test_forward_backward_match_torch(name, shape, dim):
    x = _x(*shape)
    if name == "cumprod":
        x.view(-1)[::7] = 0.0  # the gradient's zeros: exact, no division
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = getattr(bt, name)(xa, dim=dim), getattr(torch, name)(xb, dim=dim)
    if name in ("cummax", "cummin"):
        assert type(a) is type(b)
        assert torch.equal(a.indices, b.indices)
    torch.testing.assert_close(_values(a), _values(b))
    g = torch.randn_like(_values(b))
    torch.testing.assert_close(torch.autograd.grad(_values(a), xa, g)[0],
                               torch.autograd.grad(_values(b), xb, g)[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_half_and_float_inputs_accumulate_wide(dtype):
    x = _x(6, 300, dtype=dtype)
    want = torch.cumsum(x.double(), 1)
    got = bt.cumsum(x, 1)
    assert got.dtype == dtype
    tol = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol * want.abs().max())
    torch.testing.assert_close(bt.logcumsumexp(x, 1).double(),
                               torch.logcumsumexp(x.double(), 1), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int8, torch.uint8, torch.bool, torch.int64])
def test_integer_inputs_follow_torch_dtypes(dtype):
    x = (_x(4, 50) * 2).abs().to(dtype)
    for name in ("cumsum", "cumprod", "cummax", "cummin"):
        a, b = getattr(bt, name)(x, 1), getattr(torch, name)(x, 1)
        assert _values(a).dtype == _values(b).dtype, name
        assert torch.equal(_values(a), _values(b)), name
        if name in ("cummax", "cummin"):
            assert torch.equal(a.indices, b.indices)


def test_dtype_argument():
    x = torch.arange(1, 7, dtype=torch.int32, device=DEVICE)
    for dtype in (torch.int32, torch.float16, torch.float64):
        for name in ("cumsum", "cumprod"):
            a = getattr(bt, name)(x, 0, dtype=dtype)
            b = getattr(torch, name)(x, 0, dtype=dtype)
            assert a.dtype == b.dtype and torch.equal(a, b), (name, dtype)


def test_nan_and_inf_follow_torch():
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, nan, 5.0, nan, 1.0],
                      [-inf, -inf, 2.0, inf, 2.0, inf, -1.0, 0.0]], device=DEVICE)
    for name in ("cummax", "cummin"):
        a, b = getattr(bt, name)(x, 1), getattr(torch, name)(x, 1)
        torch.testing.assert_close(a.values, b.values, equal_nan=True)
        assert torch.equal(a.indices, b.indices), name
    for name in ("cumsum", "cumprod", "logcumsumexp"):
        torch.testing.assert_close(getattr(bt, name)(x, 1), getattr(torch, name)(x, 1),
                                   equal_nan=True)


@pytest.mark.parametrize("name", SCANS)
def test_empty_and_zero_dim(name):
    fn, ref_fn = getattr(bt, name), getattr(torch, name)
    for x, dim in ((torch.tensor(2.5, device=DEVICE), 0), (torch.tensor(-1.5, device=DEVICE), -1),
                   (torch.empty(0, 3, device=DEVICE), 0), (torch.empty(3, 0, device=DEVICE), 0)):
        a, b = fn(x, dim), ref_fn(x, dim)
        assert _values(a).shape == _values(b).shape
        torch.testing.assert_close(_values(a), _values(b))
    x = torch.tensor(3.0, device=DEVICE, requires_grad=True)
    (g,) = torch.autograd.grad(_values(fn(x, 0)), x)
    (h,) = torch.autograd.grad(_values(ref_fn(x, 0)), x)
    torch.testing.assert_close(g, h)


@pytest.mark.parametrize("name", SCANS)
def test_errors_match_torch(name):
    fn = getattr(bt, name)
    for x, dim in ((torch.ones(3, 4, device=DEVICE), 2), (torch.ones(3, device=DEVICE), -2),
                   (torch.tensor(1.0, device=DEVICE), 1)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            fn(x, dim)
    if name == "logcumsumexp":
        with pytest.raises(NotImplementedError):
            fn(torch.ones(3, dtype=torch.int32, device=DEVICE), 0)


def test_strided_and_transposed_inputs_no_copy():
    base = _x(20, 30)
    for x in (base.t(), base[::2, ::3], base[:, :1].expand(20, 7)):
        for dim in (0, 1):
            for name in NAMES:
                torch.testing.assert_close(_values(getattr(bt, name)(x, dim=dim)),
                                           _values(getattr(torch, name)(x, dim=dim)))


def test_gradcheck_f64():
    x = _x(2, 4)
    x[0, 2] = 0.0
    for name in NAMES:
        fn = getattr(bt, name)
        xg = x.clone().requires_grad_()
        assert torch.autograd.gradcheck(lambda t, fn=fn: _values(fn(t, dim=1)), (xg,),
                                        fast_mode=True)


def _plan_run(desc, x, indices=False, spacing=None):
    plan = P.ScanPlan.select(desc)
    y = torch.full(desc.output_shape, float("nan"), dtype=desc.output_element.torch_dtype,
                   device=DEVICE)
    idx = torch.full(x.shape, -7, dtype=torch.int64, device=DEVICE) if indices else None
    n = plan.workspace_size()
    ws = torch.full((n,), 0x7F, dtype=torch.uint8, device=DEVICE) if n else None
    plan.run(bc.ScanArgs(x=x, y=y, indices=idx, spacing=spacing), workspace=ws)
    return y, idx


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 64 elements, one-block chunks and totals folded 2 at a time: ragged lines of
    a few hundred elements then take every pass (many chunks, several fold steps, a partial
    last chunk)."""
    monkeypatch.setattr(P, "TILE_ELEMS", 64)
    monkeypatch.setattr(P, "MAX_TOTALS_BLOCK", 2)
    monkeypatch.setattr(P, "MIN_CHUNK_BLOCKS", 1)
    P._STEPS.clear()
    yield
    P._STEPS.clear()


@pytest.mark.parametrize("kind", [bc.ScanKind.CUMSUM, bc.ScanKind.CUMMAX, bc.ScanKind.LOGCUMSUMEXP,
                                  bc.ScanKind.DIFF])
def test_chunked_lines_match_reference_and_rerun_bitwise(small_tiles, kind):
    x = _x(1, 700, dtype=torch.float32)
    x[0, 600:] = x[0, 600:].abs() * 0.1 + 50  # a late record for cummax
    desc = bc.ScanDescriptor(kind, (1, 700), 1, torch.float32)
    cfg = P.launch_config(desc)
    assert cfg["chunks"] > 2 * P.MAX_TOTALS_BLOCK
    indexed = kind in (bc.ScanKind.CUMMAX, bc.ScanKind.CUMMIN)
    y, idx = _plan_run(desc, x, indexed)
    want = ref.scan_forward(x, 1, kind)
    torch.testing.assert_close(y.cpu().double(), want["y"], rtol=1e-4, atol=1e-4,
                               equal_nan=True)
    if indexed:
        assert torch.equal(idx.cpu(), want["indices"])
    y2, idx2 = _plan_run(desc, x, indexed)
    assert torch.equal(y.view(torch.int32), y2.view(torch.int32))
    assert idx is None or torch.equal(idx, idx2)


@pytest.mark.parametrize("kind", list(bc.ScanKind))
def test_chunked_column_backward(small_tiles, kind):
    shape = (48, 3)  # the scan axis outer: tiles of neighbouring lines
    x = _x(*shape).abs() * 0.3 + 0.8
    x[7, 2] = 0.0
    reverse = kind not in PAIRWISE
    fdesc = bc.ScanDescriptor(kind, shape, 0, torch.float64, reverse=reverse)
    spacing = None
    if kind is bc.ScanKind.CUMULATIVE_TRAPEZOID:
        spacing = _x(*fdesc.output_shape, seed=5).abs()
    y, idx = _plan_run(fdesc, x, kind in (bc.ScanKind.CUMMAX, bc.ScanKind.CUMMIN), spacing)
    desc = bc.ScanBackwardDescriptor(kind, shape, 0, torch.float64, reverse=reverse)
    plan = P.ScanBackwardPlan.select(desc)
    assert P.launch_config(desc)["chunks"] > 1
    dy = _x(*desc.output_shape, seed=3)
    dx = torch.full_like(x, float("nan"))
    saves = kind in (bc.ScanKind.CUMPROD, bc.ScanKind.LOGCUMSUMEXP)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device=DEVICE)
    plan.run(bc.ScanBackwardArgs(dy=dy, dx=dx, x=x if saves else None, y=y if saves else None,
                                 indices=idx, spacing=spacing), workspace=ws)
    if idx is not None:
        want = ref.scan_backward_indexed(dy, idx, 0)
    else:
        want = ref.scan_backward(dy, x, 0, kind, reverse, spacing)
    torch.testing.assert_close(dx.cpu(), want, rtol=1e-10, atol=1e-10)


def test_many_outer_dims_launch_in_groups():
    shape = (2, 2, 2, 2, 2, 2, 9)  # six kept dims that do not collapse: two launches
    x = _x(*[2 * s for s in shape], dtype=torch.float32)[tuple(slice(0, None, 2)
                                                             for _ in shape)]
    got = bt.cumsum(x, 6)
    torch.testing.assert_close(got, torch.cumsum(x, 6))


def test_reverse_descriptor_matches_flipped_torch():
    x = _x(6, 45, dtype=torch.float32)
    for kind in (k for k in bc.ScanKind if k not in PAIRWISE):
        desc = bc.ScanDescriptor(kind, (6, 45), 1, torch.float32, reverse=True)
        indexed = kind in (bc.ScanKind.CUMMAX, bc.ScanKind.CUMMIN)
        y, idx = _plan_run(desc, x, indexed)
        want = ref.scan_forward(x, 1, kind, reverse=True)
        torch.testing.assert_close(y.double().cpu(), want["y"], rtol=2e-5, atol=2e-5)
        if indexed:
            assert torch.equal(idx.cpu(), want["indices"])


def test_descriptor_and_args_errors_are_typed():
    with pytest.raises(bc.Unsupported, match="output_element"):
        P.ScanPlan.select(bc.ScanDescriptor(bc.ScanKind.CUMSUM, (3,), 0, torch.int32, False,
                                            torch.int32))
    desc = bc.ScanDescriptor(bc.ScanKind.CUMMAX, (3, 4), 1, torch.float32)
    plan = P.ScanPlan.select(desc)
    x = torch.ones(3, 4, device=DEVICE)
    with pytest.raises(bc.InvalidProblem, match="indices is required"):
        plan.run(bc.ScanArgs(x=x, y=torch.empty_like(x)))
    neg = torch.ones(3, 4, device=DEVICE).flip(1)
    if neg.stride()[1] < 0:  # (torch views never take negative strides today)
        with pytest.raises(bc.Unsupported):
            plan.run(bc.ScanArgs(x=neg, y=torch.empty_like(x), indices=torch.empty(
                3, 4, dtype=torch.int64, device=DEVICE)))


def test_opcheck_custom_ops():
    x = _x(4, 9)
    xg = x.clone().requires_grad_()
    # one kind per op: the kinds share the op's registration, fake and autograd formula
    torch.library.opcheck(torch.ops.baracuda.scan.default, (xg, 1, "cumprod", False))
    torch.library.opcheck(torch.ops.baracuda.scan_backward.default,
                          (torch.randn_like(x), x, torch.logcumsumexp(x, 1), 1, "logcumsumexp",
                           False))
    torch.library.opcheck(torch.ops.baracuda.scan_indexed.default, (xg, 0, "cummax"))
    torch.library.opcheck(torch.ops.baracuda.scan_indexed_backward.default,
                          (torch.randn_like(x), torch.cummin(x, 0).indices, 0, "cummin"))
    torch.library.opcheck(torch.ops.baracuda.scan_diff.default, (xg, 1))
    torch.library.opcheck(torch.ops.baracuda.scan_diff_backward.default, (x[:, 1:], 1))
    w = torch.rand(4, 8, dtype=torch.float64, device=DEVICE).requires_grad_()
    torch.library.opcheck(torch.ops.baracuda.scan_trapezoid.default, (xg, w, 1))


def test_torch_compile_fullgraph():
    def f(t):
        return bt.cumsum(t, 1).sin().sum() + bt.cummax(t, 0).values.sum() + \
            bt.cumprod(t, 1).sum() + bt.diff(t, 2, 0).square().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    x = _x(5, 7)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = compiled(xa), f(xb)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(torch.autograd.grad(a, xa)[0], torch.autograd.grad(b, xb)[0])


def test_reruns_are_bitwise_identical():
    x = _x(2, 1500, dtype=torch.float32)
    for name in NAMES:
        fn = getattr(bt, name)
        a, b = _values(fn(x, dim=1)), _values(fn(x, dim=1))
        assert torch.equal(a.view(torch.int32), b.view(torch.int32)), name


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.bool, torch.bfloat16])
def test_diff_follows_torch(dtype):
    x = (_x(5, 9) * 3).to(dtype)
    for kw in ({}, {"n": 2}, {"dim": 0}, {"n": 12}, {"n": 0},
               {"prepend": x[:, :2], "append": x[:, :1]}, {"dim": 0, "append": x[:1]}):
        a, b = bt.diff(x, **kw), torch.diff(x, **kw)
        assert a.dtype == b.dtype and a.shape == b.shape, kw
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_diff_errors_match_torch():
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        bt.diff(torch.tensor(1.0, device=DEVICE))
    with pytest.raises(RuntimeError, match="non-negative"):
        bt.diff(torch.ones(3, device=DEVICE), n=-1)
    with pytest.raises(RuntimeError, match="same dimension"):
        bt.diff(torch.ones(3, 2, device=DEVICE), prepend=torch.ones(2, device=DEVICE))
    with pytest.raises(IndexError, match="Dimension out of range"):
        bt.diff(torch.ones(3, 2, device=DEVICE), dim=2)


def test_cumulative_trapezoid_follows_torch_with_gradients():
    y = _x(3, 7)
    cases = [((), {}), ((), {"dx": 0.5}), ((), {"dim": 0}), ((_x(7, seed=1),), {}),
             ((_x(1, 7, seed=2),), {}), ((_x(3, 7, seed=3),), {"dim": 0})]
    for extra, kw in cases:
        ya, yb = y.clone().requires_grad_(), y.clone().requires_grad_()
        xa = [t.clone().requires_grad_() for t in extra]
        xb = [t.clone().requires_grad_() for t in extra]
        a = bt.cumulative_trapezoid(ya, *xa, **kw)
        b = torch.cumulative_trapezoid(yb, *xb, **kw)
        torch.testing.assert_close(a, b)
        g = torch.randn_like(b)
        for p, q in zip(torch.autograd.grad(a, [ya, *xa], g), torch.autograd.grad(b, [yb, *xb], g)):
            torch.testing.assert_close(p, q)


def test_cumulative_trapezoid_dtypes_and_errors():
    y = torch.tensor([[1, 2, 4], [3, 3, 0]], device=DEVICE)
    a, b = bt.cumulative_trapezoid(y), torch.cumulative_trapezoid(y)
    assert a.dtype == b.dtype
    torch.testing.assert_close(a, b)
    for shape in ((3, 0), (3, 1)):
        ones = torch.ones(shape, device=DEVICE)
        assert bt.cumulative_trapezoid(ones).shape == torch.cumulative_trapezoid(ones).shape
    with pytest.raises(RuntimeError, match="one `x` value"):
        bt.cumulative_trapezoid(torch.ones(2, 4, device=DEVICE), torch.ones(3, device=DEVICE))
    with pytest.raises(TypeError):
        bt.cumulative_trapezoid(torch.ones(2, 4, device=DEVICE), torch.ones(4, device=DEVICE),
                                dx=1.0)
    with pytest.raises(IndexError):
        bt.cumulative_trapezoid(torch.ones(2, 4, device=DEVICE), dim=2)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,dim", [((16384, 4096), 0), ((4096, 16384), 1), ((1 << 26,), 0),
                                       ((64, 1 << 20), 1)])
def test_real_sizes_every_pattern_on_gpu(shape, dim):
    """Column tiles, long rows, one chunked line and few chunked rows at real sizes: every
    kind against float64 torch, reruns bit for bit."""
    base = _x(*shape, dtype=torch.float32)
    for name in NAMES:
        fn = getattr(bt, name)
        x = 1 + 1e-3 * base if name == "cumprod" else base  # products that stay in range
        got = _values(fn(x, dim=dim))
        want = _values(getattr(torch, name)(x.double(), dim=dim))
        scale = want.abs().amax().clamp_min(1) if name == "cumsum" else 1
        torch.testing.assert_close(got.double(), want, rtol=1e-4,
                                   atol=1e-4 * scale * shape[dim] ** 0.5, equal_nan=True)
        assert torch.equal(got, _values(fn(x, dim=dim))), name
