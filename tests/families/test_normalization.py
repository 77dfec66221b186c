"""Normalization family: the torch frontend (rms_norm, layer_norm) against torch, gradcheck in
f64, opcheck, torch.compile, torch's error behaviour, strided / empty / mixed-dtype inputs.

The plans themselves (every dtype, layouts, residual variant, determinism, typed errors) are
covered by tests/test_contract.py through the family's PlanSpecs.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import baracuda as bc
from baracuda.families.normalization import reference as R
from baracuda.families.normalization.torch_api import layer_norm, rms_norm
from conftest import DEVICE
from helpers import assert_bitwise_equal, assert_close
from helpers import norm_rand as _rand


def _ours_and_torch(fn_ours, fn_torch, x, w, b, ns):
    if fn_ours is rms_norm:
        return fn_ours(x, ns, w, eps=1e-5), fn_torch(x, ns, w, eps=1e-5)
    return fn_ours(x, ns, w, b, eps=1e-5), fn_torch(x, ns, w, b, eps=1e-5)


@pytest.mark.parametrize("fn,tfn", [(rms_norm, F.rms_norm), (layer_norm, F.layer_norm)],
                         ids=["rms_norm", "layer_norm"])
@pytest.mark.parametrize("shape,ns", [((6, 100), [100]), ((2, 3, 7, 5), [7, 5]), ((9,), [9])])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_backward_match_torch(fn, tfn, shape, ns, dtype):
    x = _rand(shape, dtype, requires_grad=True)
    w = _rand(ns, dtype, seed=1, requires_grad=True)
    b = _rand(ns, dtype, seed=2, requires_grad=True)
    y, y_t = _ours_and_torch(fn, tfn, x, w, b, ns)
    # f64 oracle for values; torch (same dtype) only for shape/dtype parity.
    ref = R.row_norm_forward(x, len(ns), w, None if fn is rms_norm else b, 1e-5,
                             fn is rms_norm)["y"]
    assert y.dtype == y_t.dtype and y.shape == y_t.shape
    assert_close(y, ref, dtype, "y")
    dy = _rand(shape, dtype, seed=3)
    params = [x, w] if fn is rms_norm else [x, w, b]
    got = torch.autograd.grad(y, params, dy)
    x64 = x.detach().double().requires_grad_()
    p64 = [x64] + [p.detach().double().requires_grad_() for p in params[1:]]
    if fn is rms_norm:
        y64 = tfn(x64, ns, p64[1], eps=1e-5)
    else:
        y64 = tfn(x64, ns, p64[1], p64[2], eps=1e-5)
    want = torch.autograd.grad(y64, p64, dy.double())
    for name, a, e in zip(("dx", "dweight", "dbias"), got, want):
        assert a.dtype == dtype
        assert_close(a, e, dtype, name, scale=2.0)


@pytest.mark.parametrize("fn", [rms_norm, layer_norm], ids=["rms_norm", "layer_norm"])
def test_gradcheck_f64(fn):
    x = _rand((3, 4, 5), torch.float64, requires_grad=True)
    w = _rand((4, 5), torch.float64, seed=1, requires_grad=True)
    if fn is rms_norm:
        f = lambda x, w: rms_norm(x, [4, 5], w, 1e-6)
        assert torch.autograd.gradcheck(f, (x, w))
    else:
        b = _rand((4, 5), torch.float64, seed=2, requires_grad=True)
        f = lambda x, w, b: layer_norm(x, [4, 5], w, b, 1e-6)
        assert torch.autograd.gradcheck(f, (x, w, b))
        assert torch.autograd.gradcheck(lambda x: layer_norm(x, [5]), (x,))


def test_opcheck():
    x = _rand((4, 33))
    w = _rand((33,), seed=1)
    b = _rand((33,), seed=2)
    torch.library.opcheck(torch.ops.baracuda.rms_norm, (x, 1, w, 1e-5))
    torch.library.opcheck(torch.ops.baracuda.rms_norm, (x, 1, None, 1e-5))
    torch.library.opcheck(torch.ops.baracuda.layer_norm, (x, 1, w, b, 1e-5))
    _, mean, rstd = torch.ops.baracuda.layer_norm(x, 1, w, b, 1e-5)
    torch.library.opcheck(torch.ops.baracuda.layer_norm_backward,
                          (_rand((4, 33), seed=4), x, mean, rstd, w, True, 1))


def test_torch_compile_fullgraph():
    x = _rand((5, 40), requires_grad=True)
    w = _rand((40,), seed=1, requires_grad=True)

    def f(x, w):
        return (layer_norm(rms_norm(x, [40], w), [40], w) ** 2).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    out = compiled(x, w)
    gx, gw = torch.autograd.grad(out, (x, w))
    ex, ew = torch.autograd.grad(f(x, w), (x, w))
    assert torch.allclose(out, f(x, w), rtol=1e-5, atol=1e-5)
    assert torch.allclose(gx, ex, rtol=1e-5, atol=1e-5)
    assert torch.allclose(gw, ew, rtol=1e-5, atol=1e-5)


def test_strided_and_broadcast_inputs_no_copy():
    base = _rand((8, 30))
    x = base.t()  # normalized axis strided (stride 30)
    w = _rand((30, 2), seed=1)[:, 0]  # strided weight
    assert_close(layer_norm(x, [8], None, None), R.row_norm_forward(x, 1, eps=1e-5)["y"],
                 torch.float32)
    xs = _rand((8, 30))[:, ::2]
    assert_close(rms_norm(xs, [15], w[:15], 1e-5),
                 R.row_norm_forward(xs, 1, w[:15], eps=1e-5, rms=True)["y"], torch.float32)
    xb = _rand((1, 12)).expand(5, 12)
    assert_close(rms_norm(xb, [12], eps=1e-5),
                 R.row_norm_forward(xb, 1, eps=1e-5, rms=True)["y"], torch.float32)


def test_empty_batch_gives_zero_weight_grads():
    x = torch.empty((0, 16), device=DEVICE, requires_grad=True)
    w = _rand((16,), requires_grad=True)
    b = _rand((16,), seed=1, requires_grad=True)
    y = layer_norm(x, [16], w, b)
    assert y.shape == (0, 16)
    gw, gb = torch.autograd.grad(y.sum(), (w, b))
    assert torch.equal(gw, torch.zeros_like(gw)) and torch.equal(gb, torch.zeros_like(gb))



@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("extent", [300, 1024, 65536])
def test_nan_row_gives_nan_statistics_as_torch(extent, dtype):
    """layer_norm of a row holding a NaN: its mean and rstd are NaN, as torch's
    native_layer_norm gives (the GPU's max(var, 0) returned 0, so rstd was 1/sqrt(eps)); the
    other rows are untouched. Every forward kernel: register tiles, the exchanges, shared
    memory (65536 on the GPU)."""
    x = _rand((6, extent), dtype)
    x[2, extent // 3] = float("nan")
    w = _rand((extent,), dtype, seed=1)
    b = _rand((extent,), dtype, seed=2)
    _, t_mean, t_rstd = torch.native_layer_norm(x.cpu().float(), [extent], w.cpu().float(),
                                                b.cpu().float(), 1e-5)
    plan = bc.LayerNormPlan.select(bc.LayerNormDescriptor((6, extent), (1,), True, True,
                                                          1e-5, dtype))
    mean = torch.zeros(6, 1, device=DEVICE)
    rstd = torch.zeros(6, 1, device=DEVICE)
    y = torch.empty_like(x)
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device=DEVICE)
    plan.run(bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b), ws)
    assert bool(torch.isnan(t_mean[2]).all()) and bool(torch.isnan(t_rstd[2]).all())
    assert bool(torch.isnan(mean[2]).all()) and bool(torch.isnan(rstd[2]).all())
    assert bool(torch.isnan(y[2]).all())
    keep = [0, 1, 3, 4, 5]
    assert_close(rstd[keep].flatten(), t_rstd[keep].flatten().double(), torch.float32, "rstd",
                 scale=5.0)

def test_weight_grads_are_deterministic():
    x = _rand((300, 24), requires_grad=True)
    w = _rand((24,), seed=1, requires_grad=True)
    dy = _rand((300, 24), seed=2)
    first = torch.autograd.grad(rms_norm(x, [24], w), (x, w), dy)
    for _ in range(2):
        again = torch.autograd.grad(rms_norm(x, [24], w), (x, w), dy)
        for a, b in zip(first, again):
            assert_bitwise_equal(a, b, "rerun")


def test_mixed_dtype_weight():
    x = _rand((4, 32), torch.bfloat16, requires_grad=True)
    w = _rand((32,), torch.float32, seed=1, requires_grad=True)
    y = layer_norm(x, [32], w, None)
    assert y.dtype == torch.bfloat16
    (gw,) = torch.autograd.grad(y.float().sum(), (w,))
    assert gw.dtype == torch.float32


def test_default_eps_rms_norm_is_finfo_eps():
    x = _rand((3, 8))
    ref = R.row_norm_forward(x, 1, eps=torch.finfo(torch.float32).eps, rms=True)["y"]
    assert_close(rms_norm(x, [8]), ref, torch.float32)


@pytest.mark.parametrize("name,args,match", [
    ("layer_norm", ([5],), "Given normalized_shape"),
    ("rms_norm", ([2, 4],), "Given normalized_shape"),
    ("rms_norm", ([3, 4, 5],), "at least 3 dimensions"),
    ("layer_norm", ([],), "at least 1-dimensional"),
    ("layer_norm", ([4], torch.ones(5)), "same shape"),
    ("rms_norm", ([4], torch.ones(3)), "same shape"),
])
def test_torch_error_parity(name, args, match):
    x = _rand((3, 4))
    args = tuple(a.to(DEVICE) if isinstance(a, torch.Tensor) else a for a in args)
    ours = {"layer_norm": layer_norm, "rms_norm": rms_norm}[name]
    with pytest.raises(Exception, match=match) as torch_error:
        getattr(F, name)(x, *args)
    with pytest.raises(torch_error.type, match=match):
        ours(x, *args)


def test_argument_type_errors_are_typed_and_torch_compatible():
    """A float in normalized_shape or a string eps: TypeError as torch's, and typed."""
    from baracuda.torch import batch_norm

    x = _rand((3, 4))
    stats = torch.zeros(4, device=DEVICE), torch.ones(4, device=DEVICE)
    for call, torch_call in (
            (lambda: layer_norm(x, [3.5]), lambda: F.layer_norm(x, [3.5])),
            (lambda: batch_norm(x, *stats, eps="a"), lambda: F.batch_norm(x, *stats, eps="a"))):
        with pytest.raises(TypeError):
            torch_call()
        with pytest.raises(bc.ArgumentTypeError, match="got|not"):
            call()
        assert issubclass(bc.ArgumentTypeError, TypeError)


def test_plan_typed_errors():
    with pytest.raises(bc.InvalidProblem, match="suffix"):
        bc.LayerNormPlan.select(bc.LayerNormDescriptor((4, 8, 3), (0, 1), True, True, 1e-5,
                                                       bc.ElementKind.F32))
    plan = bc.RMSNormBackwardPlan.select(
        bc.RMSNormBackwardDescriptor((4, 8), (1,), True, bc.ElementKind.F32))
    x = _rand((4, 8))
    args = bc.RMSNormBackwardArgs(dy=x.clone(), x=x, rstd=None, dx=torch.empty_like(x),
                                  gamma=_rand((8,)), dgamma=torch.empty(8, device=DEVICE))
    with pytest.raises(bc.InvalidProblem, match="rstd"):
        plan.can_implement(args)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(4096, 4096), (512, 65536), (64, 262144)])
def test_gpu_large_rows_against_torch(shape):
    x = _rand(shape, torch.bfloat16, requires_grad=True)
    w = _rand(shape[-1:], torch.bfloat16, seed=1, requires_grad=True)
    b = _rand(shape[-1:], torch.bfloat16, seed=2, requires_grad=True)
    y = layer_norm(x, shape[-1:], w, b)
    dy = _rand(shape, torch.bfloat16, seed=3)
    gx, gw, gb = torch.autograd.grad(y, (x, w, b), dy)
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
    y64 = F.layer_norm(x64, shape[-1:], w64, b64)
    ex, ew, eb = torch.autograd.grad(y64, (x64, w64, b64), dy.double())
    assert_close(y, y64, torch.bfloat16, "y")
    assert_close(gx, ex, torch.bfloat16, "dx", scale=2.0)
    assert_close(gw, ew, torch.bfloat16, "dw", scale=2.0)
    assert_close(gb, eb, torch.bfloat16, "db", scale=2.0)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1000, 8192), (777, 16384)])
def test_gpu_f32_rms_rows_in_registers(shape):
    """f32 RMSNorm rows of 8K / 16K take the in-register backward (16 per thread): dx and
    dgamma against float64, and a rerun bit for bit."""
    from baracuda.families.normalization.layout import bwd_config

    assert bwd_config(shape[1], shape[0], bc.ElementKind.F32)["SINGLE"]
    x = _rand(shape, requires_grad=True)
    w = _rand(shape[-1:], seed=1, requires_grad=True)
    dy = _rand(shape, seed=3)
    y = rms_norm(x, shape[-1:], w, 1e-6)
    gx, gw = torch.autograd.grad(y, (x, w), dy)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    y64 = F.rms_norm(x64, shape[-1:], w64, 1e-6)
    ex, ew = torch.autograd.grad(y64, (x64, w64), dy.double())
    assert_close(y, y64, torch.float32, "y")
    assert_close(gx, ex, torch.float32, "dx", scale=2.0)
    assert_close(gw, ew, torch.float32, "dw", scale=2.0)
    gx2, gw2 = torch.autograd.grad(rms_norm(x, shape[-1:], w, 1e-6), (x, w), dy)
    assert_bitwise_equal(gx2, gx, "dx rerun")
    assert_bitwise_equal(gw2, gw, "dgamma rerun")


def _long_row_plan_run(rms: bool, x, w, b, r, eps=1e-5):
    """The plan API with a residual over the last w.dim() dims: (y, h, mean or None, rstd),
    outputs poisoned first."""
    n = w.dim()
    shape, stats = tuple(x.shape), tuple(x.shape[:-n]) + (1,) * n
    axes = tuple(range(x.dim() - n, x.dim()))
    nan = float("nan")
    y, h = torch.full_like(x, nan), torch.full_like(x, nan)
    rstd = torch.full(stats, nan, device=x.device)
    mean = None if rms else torch.full(stats, nan, device=x.device)
    if rms:
        desc = bc.RMSNormDescriptor(shape, axes, True, eps, x.dtype, has_residual=True)
        args = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w, residual=r, residual_out=h)
        plan = bc.RMSNormPlan.select(desc)
    else:
        desc = bc.LayerNormDescriptor(shape, axes, True, True, eps, x.dtype, has_residual=True)
        args = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b, residual=r,
                                residual_out=h)
        plan = bc.LayerNormPlan.select(desc)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device=x.device)
    plan.run(args, ws)
    return y, h, mean, rstd


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_f32_long_rows_exchange_chunks(rms):
    """f32 rows longer than a tile take the chunk exchange (kernels_exchange.py): a
    two-dim normalized suffix of 20000 (not a multiple of any chunk), a strided input and
    residual, |mean| >> std, against float64."""
    from baracuda.families.normalization.layout import fwd_config

    assert fwd_config(20000, 3, bc.ElementKind.F32).get("EXCHANGE")
    base = _rand((3, 2, 100, 400), seed=4)
    x = base[:, :, :, ::2] + 40.0  # [3, 2, 100, 200], strided
    r = _rand((3, 2, 100, 200), seed=5)
    w, b = _rand((100, 200), seed=6), _rand((100, 200), seed=7)
    y, h, mean, rstd = _long_row_plan_run(rms, x, w, b, r)
    want = R.row_norm_forward(x, 2, w, None if rms else b, 1e-5, rms, residual=r)
    assert_bitwise_equal(h, x + r, "residual_out")
    assert_close(y, want["y"], torch.float32, "y")
    assert_close(rstd, want["rstd"], torch.float32, "rstd")
    if not rms:
        assert_close(mean, want["mean"], torch.float32, "mean")
    again = _long_row_plan_run(rms, x, w, b, r)
    for a, c, name in zip(again, (y, h, mean, rstd), ("y", "h", "mean", "rstd")):
        if c is not None:
            assert_bitwise_equal(a, c, name)


@pytest.mark.gpu
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_f32_exchange_matches_its_no_wait_path_gpu(rms, monkeypatch):
    """At a real size: reruns are bit-identical, and so is the path where no program waits
    (each recomputes its row's partials), so the merge order does not depend on timing."""
    from baracuda.families.normalization import layout as L
    from baracuda.families.normalization import plans as P

    x = _rand((2, 256, 1, 65536), seed=8) * 3 + 1
    r, w, b = _rand(x.shape, seed=9), _rand((1, 65536), seed=10), _rand((1, 65536), seed=11)
    runs = [_long_row_plan_run(rms, x, w, b, r) for _ in range(2)]
    monkeypatch.setattr(P, "fwd_config", lambda *a: dict(L.fwd_config(*a), SPIN=0))
    P._fwd_exchange_recipe.cache_clear()
    try:
        runs.append(_long_row_plan_run(rms, x, w, b, r))
    finally:
        P._fwd_exchange_recipe.cache_clear()
    for run in runs[1:]:
        for a, c in zip(run, runs[0]):
            if c is not None:
                assert_bitwise_equal(a, c, "exchange output")
    want = R.row_norm_forward(x, 2, w, None if rms else b, 1e-5, rms, residual=r)
    assert_close(runs[0][0], want["y"], torch.float32, "y")


def _long_row_backward(rms: bool, x, dy, w, dh):
    """The backward plan on the last dim (stats from the float64 forward): (dx, dgamma,
    dbeta or None), outputs poisoned first, and the float64 reference."""
    stats = R.row_norm_forward(x, 1, None, None, 1e-5, rms)
    sdt = torch.float64 if x.dtype == torch.float64 else torch.float32
    rstd = stats["rstd"].to(x.device, sdt)
    mean = None if rms else stats["mean"].to(x.device, sdt)
    nan = float("nan")
    dx, dg = torch.full_like(x, nan), torch.full_like(w, nan)
    shape, axes = tuple(x.shape), (x.dim() - 1,)
    if rms:
        desc = bc.RMSNormBackwardDescriptor(shape, axes, True, x.dtype, has_residual=True)
        args = bc.RMSNormBackwardArgs(dy=dy, x=x, rstd=rstd, dx=dx, gamma=w, dgamma=dg,
                                      dresidual_out=dh)
        plan, db = bc.RMSNormBackwardPlan.select(desc), None
    else:
        db = torch.full_like(w, nan)
        desc = bc.LayerNormBackwardDescriptor(shape, axes, True, True, x.dtype,
                                              has_residual=True)
        args = bc.LayerNormBackwardArgs(dy=dy, x=x, mean=mean, rstd=rstd, dx=dx, gamma=w,
                                        dgamma=dg, dbeta=db, dresidual_out=dh)
        plan = bc.LayerNormBackwardPlan.select(desc)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device=x.device)
    plan.run(args, ws)
    want = R.row_norm_backward(dy, x, rstd, 1, mean, w, not rms, dh)
    return (dx, dg, db), (want["dx"], want["dgamma"], want.get("dbeta"))


def _with_bwd_config(monkeypatch, **override):
    """Route the backward's tile table through `override` (e.g. SPIN=0, PIPE=False)."""
    from baracuda.families.normalization import layout as L
    from baracuda.families.normalization import plans as P

    monkeypatch.setattr(P, "bwd_config", lambda *a: dict(L.bwd_config(*a), **override))
    _clear_bwd_caches()


def _clear_bwd_caches():
    from baracuda.core.plan import _select_cached
    from baracuda.families.normalization import plans as P

    for cache in (P._bwd_exchange_recipe, P._bwd_partials, _select_cached):
        cache.cache_clear()


def _assert_same_bits_under(monkeypatch, overrides, run, want_bits):
    """run() under each backward-table override (restored after each) gives want_bits."""
    for override in overrides:
        _with_bwd_config(monkeypatch, **override)
        try:
            got = run()
        finally:
            monkeypatch.undo()
            _clear_bwd_caches()
        for a, c in zip(got, want_bits):
            if c is not None:
                assert_bitwise_equal(a, c, f"exchange backward under {override}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16,
                                   torch.float64])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_long_rows_backward_exchange(rms, dtype, monkeypatch):
    """Rows longer than a register tile exchange chunk partials in the backward
    (kernels_exchange.row_norm_bwd_exchange_kernel): 16 rows of 20000 (not a multiple of a
    chunk) over four non-collapsible outer dims (two launches accumulating dgamma), groups of
    several rows, against float64; the same bits again, and with 1 / 2 / 5 rows published
    ahead of the one finished (5: more than a launch's group holds)."""
    from baracuda.families.normalization.layout import bwd_config

    assert bwd_config(20000, 16, bc.ElementKind.of(dtype), not rms).get("EXCHANGE")
    base = _rand((2, 2, 2, 2, 20000), dtype, seed=12) * 2 + 3
    x = base.permute(3, 2, 1, 0, 4)
    dy = _rand((2, 2, 2, 2, 20000), dtype, seed=13).permute(2, 3, 1, 0, 4)
    dh = _rand(x.shape, dtype, seed=14)
    w = _rand((20000,), dtype, seed=15)
    got, want = _long_row_backward(rms, x, dy, w, dh)
    for name, a, e in zip(("dx", "dgamma", "dbeta"), got, want):
        if a is not None:
            assert_close(a, e, dtype, name, scale=2.0)
    _assert_same_bits_under(monkeypatch, ({}, dict(AHEAD=1), dict(AHEAD=2), dict(AHEAD=5)),
                            lambda: _long_row_backward(rms, x, dy, w, dh)[0], got)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,dtype", [((1024, 65536), torch.bfloat16),
                                         ((777, 65536), torch.float32),
                                         ((1000, 24576), torch.bfloat16),
                                         ((500, 32768), torch.float16),
                                         ((300, 20000), torch.float64),
                                         ((300, 131072), torch.bfloat16)])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_gpu_backward_exchange_matches_its_no_wait_path(rms, shape, dtype, monkeypatch):
    """At real sizes: against float64, reruns bit for bit, and the path where no program
    waits (each recomputes its row's partials) gives the same bits, so the merge order does
    not depend on timing; so does publishing 3 rows ahead of the one finished."""
    from baracuda.families.normalization.layout import bwd_config

    if not bwd_config(shape[1], shape[0], bc.ElementKind.of(dtype), not rms).get(
            "EXCHANGE"):
        pytest.skip(f"{shape} {dtype} does not take the exchange backward (by the table)")
    x = _rand(shape, dtype, seed=16) * 2 + 1
    dy, dh, w = _rand(shape, dtype, seed=17), _rand(shape, dtype, seed=18), \
        _rand(shape[-1:], dtype, seed=19)
    got, want = _long_row_backward(rms, x, dy, w, dh)
    for name, a, e in zip(("dx", "dgamma", "dbeta"), got, want):
        if a is not None:
            assert_close(a, e, dtype, name, scale=2.0)
    _assert_same_bits_under(monkeypatch, ({}, dict(SPIN=0), dict(AHEAD=3)),
                            lambda: _long_row_backward(rms, x, dy, w, dh)[0], got)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fn", [rms_norm, layer_norm], ids=["rms", "layer"])
def test_gpu_long_rows_in_a_cuda_graph(fn, dtype):
    """Long rows (chunk-exchange backward, its counters zeroed by a Triton fill; f32 also an
    exchange forward) captured in a CUDA graph: a replay on new inputs gives eager's bits."""
    shape = (300, 40000)
    x = _rand(shape, dtype, seed=20).requires_grad_()
    w = _rand(shape[-1:], dtype, seed=21).requires_grad_()
    dy = _rand(shape, dtype, seed=22)

    def step():
        return torch.autograd.grad(fn(x, shape[-1:], w), (x, w), dy)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # selection, compilation and launch recording outside the capture
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = step()
    with torch.no_grad():
        x.copy_(_rand(shape, dtype, seed=23))
        dy.copy_(_rand(shape, dtype, seed=24))
    graph.replay()
    torch.cuda.synchronize()
    for got, want, name in zip(static, step(), ("dx", "dgamma")):
        assert_bitwise_equal(got, want, f"graph replay {name}")


# -- group_norm / batch_norm / instance_norm -------------------------------------------------------
def test_gamma_first_rule():
    """Register tiles that load their parameters per row take gamma with the row (W_FIRST),
    except layer_norm halves and halves' 16K rows (measured slower there,
    layout._gamma_first); persistent prefetching tiles load it once per program."""
    from baracuda.families.normalization.layout import fwd_config

    f32, bf16 = bc.ElementKind.F32, bc.ElementKind.BF16
    assert fwd_config(1024, 32768, f32, True)["W_FIRST"]
    assert fwd_config(1024, 32768, bf16, False)["W_FIRST"]
    assert not fwd_config(1024, 32768, bf16, True)["W_FIRST"]
    assert fwd_config(16384, 4096, f32, True)["W_FIRST"]
    assert not fwd_config(16384, 4096, bf16, True)["W_FIRST"]
    assert not fwd_config(16384, 4096, bf16, False)["W_FIRST"]
    assert fwd_config(16384, 4096, f32, False)["W_FIRST"]
    piped = fwd_config(8192, 8192, bf16, False)
    assert piped["PIPE"] and not piped["W_FIRST"]


def test_pad_last_rule():
    """The launches measured faster with the unit outer dims last pad them last
    (layout.pads_last): layer_norm halves' backward register tiles and the forward of
    rms_norm halves' 16K tile (a plain grid); exchanges, column splits, f32 stay first."""
    from baracuda.families.normalization.layout import bwd_config, fwd_config, pads_last, row_layout

    f32, bf16, f16 = bc.ElementKind.F32, bc.ElementKind.BF16, bc.ElementKind.F16
    kinds = [(el, layer) for el in (f32, bf16, f16) for layer in (False, True)]
    fwd = {(m, el, layer) for m in (1024, 4096, 12000, 16384, 65536) for el, layer in kinds
           if pads_last(fwd_config(m, 4096, el, layer), el, layer, False)}
    assert fwd == {(m, el, False) for m in (12000, 16384) for el in (bf16, f16)}
    bwd = {(m, el, layer) for m in (1024, 4096, 8192, 16384, 65536, 262144)
           for el, layer in kinds if pads_last(bwd_config(m, 4096, el, layer), el, layer, True)}
    assert bwd == {(m, el, True) for m in (1024, 4096, 8192) for el in (bf16, f16)}
    plain = fwd_config(16384, 4096, bf16, False)
    assert (plain["PIPE"], plain["G"], plain["BLOCK_R"], plain["num_warps"],
            plain["W_FIRST"]) == (False, 4096, 1, 16, False)
    lay = row_layout("t", (6, 8), 1, [x := _rand((6, 8))], [], [])  # (rows, O1, O2, strides)
    assert [c[1:] for c in lay.launches([x], pad_last=True)] == [(6, 1, 1, ((8, 0, 0),))]
    assert [c[1:] for c in lay.launches([x])] == [(6, 1, 6, ((0, 0, 8),))]


@pytest.mark.parametrize("outer", [(2, 3), (2, 2, 2, 2)], ids=["2-outer", "4-outer"])
def test_pad_last_launches_match_reference(outer, monkeypatch):
    """The pad-last launches, rms bf16 forward of 16K rows and layer bf16 backward of 1024,
    over 2 non-collapsible outer dims (one launch, padded) and 4 (two launches) of strided
    inputs: against float64, and bit for bit the same launches padded first."""
    from baracuda.families.normalization import layout as L
    from baracuda.families.normalization import plans as P

    k, dt = len(outer), torch.bfloat16
    perm = (*reversed(range(k)), k)  # outer strides ascending: nothing collapses

    def strided(n, seed):
        return _rand((*outer[::-1], 2 * n), dt, seed)[..., ::2].permute(perm)

    x, r, w = strided(16384, 30), strided(16384, 31), _rand((16384,), dt, 32)
    xb, dy, dh, wb = strided(1024, 33), strided(1024, 34), strided(1024, 35), _rand(1024, dt, 36)
    seen, launches = [], L.RowLayout.launches
    monkeypatch.setattr(L.RowLayout, "launches",
                        lambda lay, t, pad_last=False: seen.append(pad_last) or
                        launches(lay, t, pad_last))
    fwd = _long_row_plan_run(True, x, w, None, r)
    bwd, want = _long_row_backward(False, xb, dy, wb, dh)
    assert seen == [True, True]
    # against the h written (the interpreter rounds x + r to bf16 toward zero)
    ref = R.row_norm_forward(fwd[1], 1, w, None, 1e-5, True)
    assert_close(fwd[1], x.double() + r.double(), dt, "h")
    assert_close(fwd[0], ref["y"], dt, "y")
    assert_close(fwd[3], ref["rstd"], torch.float32, "rstd")
    for name, a, e in zip(("dx", "dgamma", "dbeta"), bwd, want):
        assert_close(a, e, dt, name, scale=2.0)
    monkeypatch.setattr(P, "pads_last", lambda *a: False)
    _clear_bwd_caches()
    try:
        first = (*_long_row_plan_run(True, x, w, None, r), *_long_row_backward(False, xb, dy,
                                                                                wb, dh)[0])
    finally:
        monkeypatch.undo()
        _clear_bwd_caches()
    assert seen[2:] == [False, False]
    for a, c in zip(first, (*fwd, *bwd)):
        if c is not None:
            assert_bitwise_equal(a, c, "padded first against last")


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
@pytest.mark.parametrize("w_first", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_gamma_placement_matches_reference(rms, w_first, dtype, monkeypatch):
    """Both placements of gamma's load in the plain one-row forward give the float64
    reference's result (rows of 600: the plain grid; |mean| >> std; NaN-poisoned outputs)."""
    from baracuda.families.normalization import layout as L
    from baracuda.families.normalization import plans as P

    x = (_rand((3, 5, 600), seed=12) + 20.0).to(dtype)
    w, b = _rand((600,), seed=13).to(dtype), _rand((600,), seed=14).to(dtype)
    monkeypatch.setattr(P, "fwd_config", lambda *a: dict(L.fwd_config(*a), W_FIRST=w_first))
    P._fwd_recipe.cache_clear()
    try:
        assert not L.fwd_config(600, 15, bc.ElementKind.of(dtype), not rms)["PIPE"]
        nan = float("nan")
        y, rstd = torch.full_like(x, nan), torch.full((3, 5, 1), nan, device=x.device)
        if rms:
            desc = bc.RMSNormDescriptor(tuple(x.shape), (2,), True, 1e-5, dtype)
            args = bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)
            plan = bc.RMSNormPlan.select(desc)
        else:
            mean = torch.full((3, 5, 1), nan, device=x.device)
            desc = bc.LayerNormDescriptor(tuple(x.shape), (2,), True, True, 1e-5, dtype)
            args = bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
            plan = bc.LayerNormPlan.select(desc)
        plan.run(args, torch.empty(plan.workspace_size(), dtype=torch.uint8, device=x.device))
    finally:
        P._fwd_recipe.cache_clear()
    want = R.row_norm_forward(x, 1, w, None if rms else b, 1e-5, rms)
    assert_close(y, want["y"], dtype, "y")
    assert_close(rstd, want["rstd"], torch.float32, "rstd")
