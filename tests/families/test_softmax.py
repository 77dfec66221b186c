"""Softmax family: the torch frontend (softmax / log_softmax against torch, gradcheck in f64,
opcheck, torch.compile, error parity, strided / empty / 0-d inputs) and each pass structure
(tile, loop, split) on the interpreter."""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
from baracuda.backends.triton_exchange import SPIN_LIMIT
from baracuda.families.softmax import plans as P
from baracuda.families.softmax import torch_api as bt
from baracuda.families.softmax.kernels import EXCHANGE, LOOP, TILE
from conftest import DEVICE, ON_GPU

F64 = dict(dtype=torch.float64, device=DEVICE)


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * 2).to(DEVICE, dtype)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((5, 37), -1), ((4, 6, 3), 1), ((7,), 0), ((3, 2, 5), 0)])
def test_forward_backward_match_torch(name, shape, dim):
    x = _x(*shape)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya = getattr(bt, name)(xa, dim)
    yb = getattr(torch.nn.functional, name)(xb, dim)
    torch.testing.assert_close(ya, yb)
    g = torch.randn_like(yb)
    torch.testing.assert_close(torch.autograd.grad(ya, xa, g)[0],
                               torch.autograd.grad(yb, xb, g)[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_half_and_float_inputs(dtype):
    x = _x(6, 100, dtype=dtype)
    torch.testing.assert_close(bt.softmax(x, 1), torch.softmax(x.float(), 1).to(dtype))
    torch.testing.assert_close(bt.log_softmax(x, 1, dtype=torch.float32),
                               torch.log_softmax(x, 1, dtype=torch.float32))


def _pass_cfg(mode, n, seg=None):
    """Launch config of one pass structure for lines of n f32 elements (tune.py's form);
    seg: the forward LOOP's segment length (None: one program per line)."""
    if mode == TILE:
        return None  # the default table picks TILE for short lines
    block = 4096 if seg else 8192
    cfg = dict(MODE=mode, BLOCK=block, ROWS=1, num_warps=8, PARTS=P.next_pow2(-(-n // block)),
               SPIN=SPIN_LIMIT)
    if seg:
        cfg["SEG"] = seg
    return cfg


@pytest.mark.parametrize("mode,shape,seg", [
    (TILE, (3, 300), None),
    (LOOP, (3, 20001), None),
    (LOOP, (3, 20001), 8192),  # 3 segments of 2 blocks, the last one partial
    (EXCHANGE, (3, 20001), None),
    (EXCHANGE, (2, 40000), None),  # 5 chunks, the last one partial
])
def test_each_pass_structure(mode, shape, seg):
    x = _x(*shape, dtype=torch.float32)
    x[0, ::5] = -float("inf")
    if shape[1] > 8192:
        x[1, :8192] = -float("inf")  # a whole chunk at -inf: its partial sum is 0, not NaN
    cfg = _pass_cfg(mode, shape[1], seg)
    if cfg is None:
        assert P.launch_config(shape[1], bc.ElementKind.F32, shape[0])["MODE"] == mode
    for log in (False, True):
        kind = bc.SoftmaxKind.LOG_SOFTMAX if log else bc.SoftmaxKind.SOFTMAX
        fd = bc.SoftmaxDescriptor(kind, shape, 1, x.dtype)
        bd = bc.SoftmaxBackwardDescriptor(kind, shape, 1, x.dtype)
        # a workspace of garbage bytes, large enough for any structure: counters are zeroed
        ws = torch.full((shape[0] * shape[1],), 0x7F, dtype=torch.uint8, device=DEVICE)
        y = torch.full_like(x, float("nan"))
        P._launch(P.softmax_fwd_kernel, fd, [x, y], ws, cfg)
        want = torch.log_softmax(x.double(), 1) if log else torch.softmax(x.double(), 1)
        torch.testing.assert_close(y.double(), want, rtol=2e-5, atol=2e-6)
        dy = torch.randn_like(x)
        dx = torch.full_like(x, float("nan"))
        P._launch(P.softmax_bwd_kernel, bd, [dy, y, dx], ws, cfg)
        yd, gd = y.double(), dy.double()
        ref = gd - torch.exp(yd) * gd.sum(1, keepdim=True) if log else \
            yd * (gd - (yd * gd).sum(1, keepdim=True))
        torch.testing.assert_close(dx.double(), ref, rtol=2e-5, atol=2e-5)
        if mode == EXCHANGE or seg:  # the no-wait path (every program recomputes): same bits
            y2, dx2 = torch.full_like(y, float("nan")), torch.full_like(dx, float("nan"))
            P._launch(P.softmax_fwd_kernel, fd, [x, y2], ws, dict(cfg, SPIN=0))
            P._launch(P.softmax_bwd_kernel, bd, [dy, y, dx2], ws, dict(cfg, SPIN=0))
            assert torch.equal(y2, y) and torch.equal(dx2, dx)



@pytest.mark.parametrize("mode,shape,seg", [
    (TILE, (16, 300), None), (LOOP, (16, 20001), None), (LOOP, (16, 20001), 8192),
    (EXCHANGE, (16, 20001), None),
])
def test_log_softmax_keeps_small_log_probabilities_at_large_logits(mode, shape, seg):
    """A confident line (its max ~12 above the rest) at logits of 100-130: the max's
    log-probability -log(s) is ~1e-4. y = x - (m + log(s)) rounds m + log(s) to the ulp of m
    first (up to 3.8e-6 in f32: several % of it); (x - m) - log(s), as torch's CUDA kernel
    computes it, is off by what the f32 sum s = 1 + 1e-4 carries (a few ulps of 1: 5e-7 for
    the looping sum of 20001 terms)."""
    n, c = shape
    g = torch.Generator().manual_seed(c)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 2
    x += 100 + 30 * torch.rand(n, 1, generator=g, dtype=torch.float64)
    top = torch.randint(0, c, (n,), generator=g)
    rows = torch.arange(n)
    x[rows, top] += 12 + torch.log(torch.tensor(float(c)))  # -log(s) ~ 1e-4 at any c
    x = x.to(DEVICE, torch.float32)
    cfg = _pass_cfg(mode, c, seg)
    fd = bc.SoftmaxDescriptor(bc.SoftmaxKind.LOG_SOFTMAX, shape, 1, x.dtype)
    ws = torch.full((n * c,), 0x7F, dtype=torch.uint8, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    P._launch(P.softmax_fwd_kernel, fd, [x, y], ws, cfg)
    want = torch.log_softmax(x.double(), 1)[rows, top]
    err = float((y[rows, top].double() - want).abs().max())
    assert err < 8 * torch.finfo(torch.float32).eps, (err, float(want.abs().max()))

def test_long_lines_take_the_exchange():
    bf16 = bc.ElementKind.BF16
    for n, rows in ((16385, 4096), (65536, 1024), (262144, 256), (1 << 20, 1)):
        cfg = P.launch_config(n, bf16, rows, backward=True)
        assert cfg["MODE"] == EXCHANGE and cfg["PARTS"] >= -(-n // cfg["BLOCK"])
    # forward: lines enough to fill the GPU LOOP, fewer lines exchange
    assert P.launch_config(65536, bf16, 1024)["MODE"] == LOOP
    assert P.launch_config(262144, bf16, 256)["MODE"] == LOOP
    assert P.launch_config(65536, bf16, 64)["MODE"] == EXCHANGE
    assert P.launch_config(1 << 20, bf16, 1)["MODE"] == EXCHANGE
    # a looped line longer than LOOP_LINE_BYTES is cut: its segments swap (max, sum) pairs
    seg = P.launch_config(262144, bf16, 256)["SEG"]
    assert seg < 262144 and "SEG" not in P.launch_config(65536, bf16, 1024)
    fd = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, (256, 262144), 1, torch.bfloat16)
    # the Triton candidate's workspace (on Hopper the plan may select the shared-memory
    # exchange, whose workspace covers this one: test_softmax_smem.py)
    assert P.workspace_bytes(fd) == 256 * (262144 // seg) * 2 * 4 + 256 * 4
    fd = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, (1024, 65536), 1, torch.bfloat16)
    assert P.workspace_bytes(fd) == 0  # whole lines: nothing to swap
    d = bc.SoftmaxBackwardDescriptor(bc.SoftmaxKind.SOFTMAX, (1024, 65536), 1, torch.bfloat16)
    chunks = -(-65536 // P.launch_config(65536, bf16, 1024, backward=True)["BLOCK"])
    # per chunk one f32 partial dot, per line an int32 counter
    assert bc.SoftmaxBackwardPlan.select(d).workspace_size() == 1024 * chunks * 4 + 1024 * 4


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_gradcheck_f64(name):
    x = _x(3, 7).requires_grad_()
    assert torch.autograd.gradcheck(lambda x: getattr(bt, name)(x, 1), (x,), fast_mode=True)


def test_opcheck():
    x = _x(4, 9).requires_grad_()
    torch.library.opcheck(torch.ops.baracuda.softmax, (x, 1, False))
    torch.library.opcheck(torch.ops.baracuda.softmax, (x, 0, True))
    y = torch.softmax(x.detach(), 1)
    torch.library.opcheck(torch.ops.baracuda.softmax_backward, (torch.randn_like(y), y, 1, False))


def test_torch_compile_fullgraph():
    x = _x(5, 11).requires_grad_()
    f = torch.compile(lambda x: bt.log_softmax(bt.softmax(x, -1) * 3, 0), fullgraph=True,
                      backend="aot_eager")
    out = f(x)
    out.sum().backward()
    xr = x.detach().clone().requires_grad_()
    ref = torch.log_softmax(torch.softmax(xr, -1) * 3, 0)
    ref.sum().backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(x.grad, xr.grad)


def test_strided_empty_and_scalar():
    base = _x(8, 12)
    xt = base.t()  # softmax along a strided axis
    torch.testing.assert_close(bt.softmax(xt, 1), torch.softmax(xt, 1))
    xs = base[::2, 1::3]
    torch.testing.assert_close(bt.log_softmax(xs, 0), torch.log_softmax(xs, 0))
    e = torch.empty(0, 5, **F64)
    assert bt.softmax(e, 1).shape == (0, 5)
    s = torch.tensor(3.0, **F64)
    torch.testing.assert_close(bt.softmax(s, 0), torch.softmax(s, 0))
    torch.testing.assert_close(bt.log_softmax(s, -1), torch.log_softmax(s, -1))


@pytest.mark.parametrize("backward", [False, True])
def test_empty_lines_need_no_workspace(backward):
    """Lines of zero elements along the axis: nothing to exchange, whatever the other extents
    (the GPU fuzz found an 8e13-line empty problem asking for 200 TB of counters)."""
    shape = (0, 256961, 5, 9, 4, 9, 137254, 1)
    cls = bc.SoftmaxBackwardDescriptor if backward else bc.SoftmaxDescriptor
    plan_cls = bc.SoftmaxBackwardPlan if backward else bc.SoftmaxPlan
    for kind in bc.SoftmaxKind:
        assert plan_cls.select(cls(kind, shape, 0, torch.float64)).workspace_size() == 0
    x = torch.empty(0, 3, 7, **F64).requires_grad_()
    y = bt.log_softmax(x, 0)
    y.sum().backward()
    assert y.shape == (0, 3, 7) and x.grad.shape == (0, 3, 7)


def test_all_neg_inf_row_is_nan_like_torch():
    x = _x(3, 10)
    x[1] = -float("inf")
    got, want = bt.softmax(x, 1), torch.softmax(x, 1)
    assert torch.isnan(got[1]).all() and torch.isnan(want[1]).all()
    torch.testing.assert_close(got[[0, 2]], want[[0, 2]])


def test_error_parity_and_legacy_dim():
    x = _x(3, 4)
    with pytest.raises(IndexError):
        torch.softmax(x, 2)
    with pytest.raises(IndexError):
        bt.softmax(x, 2)
    with pytest.warns(UserWarning):
        got = bt.softmax(x)
    with pytest.warns(UserWarning):
        want = torch.nn.functional.softmax(x)
    torch.testing.assert_close(got, want)


def test_descriptor_errors_are_typed():
    K = bc.SoftmaxKind.SOFTMAX
    with pytest.raises(bc.InvalidProblem):
        bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(K, (4, 8), 5, torch.float32))
    with pytest.raises(bc.Unsupported):
        bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(K, (4, 8), 1, torch.int32))


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("shape", [(2, 1048576), (300, 40000), (1024, 65536)])
def test_long_rows_gpu(shape):
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 4
    x.requires_grad_()
    y = bt.softmax(x, -1)
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), rtol=2e-2, atol=1e-6)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    yf = y.float()
    ref = yf * (dy.float() - (yf * dy.float()).sum(-1, keepdim=True))
    torch.testing.assert_close(dx.float(), ref, rtol=2e-2, atol=1e-5)


@pytest.mark.parametrize("mode_shape", [(3, 300), (2, 20003)])
def test_wide_offsets_variant(monkeypatch, mode_shape):
    # 64-bit column offsets (lines whose offsets pass 2**31): forced on a small problem
    monkeypatch.setattr(P, "WIDE_LIMIT", 0)
    monkeypatch.setattr(P, "_STEPS", P.RecipeCache())
    x = _x(mode_shape[1], mode_shape[0], dtype=torch.float32).t()  # strided softmax axis
    torch.testing.assert_close(bt.softmax(x, 1), torch.softmax(x, 1))
    xg = x.detach().clone().requires_grad_()
    y = bt.log_softmax(xg, 1)
    (g,) = torch.autograd.grad(y, xg, torch.ones_like(y))
    xr = x.detach().clone().requires_grad_()
    (gr,) = torch.autograd.grad(torch.log_softmax(xr, 1), xr, torch.ones_like(y))
    torch.testing.assert_close(g, gr)


def test_wide_offsets_segmented_loop(monkeypatch):
    # the segmented forward LOOP with 64-bit offsets, forced on a small bf16 problem
    monkeypatch.setattr(P, "WIDE_LIMIT", 0)
    monkeypatch.setattr(P, "LOOP_MIN_ROWS", 1)
    monkeypatch.setattr(P, "LOOP_LINE_BYTES", 1024)
    monkeypatch.setattr(P, "_STEPS", P.RecipeCache())
    x = _x(20003, 2, dtype=torch.bfloat16).t()  # strided softmax axis
    cfg = P.launch_config(20003, bc.ElementKind.BF16, 2)
    assert cfg["MODE"] == LOOP and cfg["SEG"] < 20003
    for fn, ref in ((bt.softmax, torch.softmax), (bt.log_softmax, torch.log_softmax)):
        torch.testing.assert_close(fn(x, 1).float(), ref(x.float(), 1), rtol=2e-2, atol=1e-5)


def test_f64_long_lines_through_the_frontend():
    x = _x(2, 9000)  # past the f64 single-block limit (8192): chunked
    assert P.launch_config(9000, bc.ElementKind.F64, 2)["MODE"] == EXCHANGE
    x[0, :4096] = -float("inf")
    for name in ("softmax", "log_softmax"):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = getattr(bt, name)(xa, 1), getattr(torch, name)(xb, 1)
        torch.testing.assert_close(ya, yb)
        g = torch.randn_like(yb)
        torch.testing.assert_close(torch.autograd.grad(ya, xa, g)[0],
                                   torch.autograd.grad(yb, xb, g)[0])


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("shape,kind,dtype", [
    ((256, 262144), bc.SoftmaxKind.SOFTMAX, torch.bfloat16),
    ((4096, 20000), bc.SoftmaxKind.SOFTMAX, torch.bfloat16),
    # the register-capped log_softmax forward (plans.register_cap)
    ((256, 262144), bc.SoftmaxKind.LOG_SOFTMAX, torch.float32)])
def test_exchange_is_deterministic_and_matches_its_no_wait_path_gpu(shape, kind, dtype):
    """Reruns are bit-identical, and so is the path where no program waits (every program
    recomputes its line's partials): the exchange's merge order does not depend on timing."""
    element = bc.ElementKind.of(dtype)
    x = torch.randn(shape, device="cuda", dtype=dtype) * 3
    dy = torch.randn_like(x)
    fd = bc.SoftmaxDescriptor(kind, shape, 1, x.dtype)
    bd = bc.SoftmaxBackwardDescriptor(kind, shape, 1, x.dtype)
    # room for a (max, sum) pair per 1024 elements and a counter per line: any chunking here
    ws = torch.empty(shape[0] * (shape[1] // 1024 * 8 + 8), dtype=torch.uint8, device="cuda")
    outs = []
    for spin in (None, None, 0):
        cfg_f = P.launch_config(shape[1], element, shape[0])
        cfg_b = P.launch_config(shape[1], element, shape[0], backward=True)
        if cfg_f["MODE"] != EXCHANGE:  # the forward may LOOP; the backward always exchanges
            cfg_f = dict(cfg_b, PARTS=P.next_pow2(-(-shape[1] // cfg_b["BLOCK"])))
        if spin is not None:
            cfg_f, cfg_b = dict(cfg_f, SPIN=spin), dict(cfg_b, SPIN=spin)
        y, dx = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
        P._launch(P.softmax_fwd_kernel, fd, [x, y], ws, cfg_f)
        P._launch(P.softmax_bwd_kernel, bd, [dy, y, dx], ws, cfg_b)
        outs.append((y, dx))
    ref = (torch.log_softmax if kind is bc.SoftmaxKind.LOG_SOFTMAX else torch.softmax)(
        x.double(), 1)
    torch.testing.assert_close(outs[0][0].double(), ref, rtol=2e-2, atol=1e-5)
    for y, dx in outs[1:]:
        assert torch.equal(y, outs[0][0]) and torch.equal(dx, outs[0][1])


def test_interpreter_chunk_length_rule():
    """Under the interpreter (CPU tests) chunked lines are widened to at most
    INTERPRET_MAX_CHUNKS chunks, a power of two times the unit; on a GPU nothing changes."""
    from baracuda.backends import triton_exchange as X

    if not X.INTERPRET:
        assert X.chunk_length(8192, 1 << 20, 4096) == 8192
        return
    for extent, chunk, unit in ((20001, 8192, 1), (1 << 20, 16384, 4096), (100, 8192, 1)):
        got = X.chunk_length(chunk, extent, unit)
        assert got >= chunk and got % unit == 0 and (got // unit) & (got // unit - 1) == 0
        assert -(-extent // got) <= X.INTERPRET_MAX_CHUNKS


def test_register_cap_rule_and_tile_offsets():
    """The 64-register cap goes to the forward exchange of f32 lines (both kinds) and of
    log_softmax's 16-bit ones (f64 values take two registers each), and only TILE launches
    pad the outer dims last (the JIT then folds the row offset; softmax/PERF_NOTES.md,
    sessions 12 and 17)."""
    from baracuda.backends.triton_support import outer_launch_groups
    from baracuda.core.layout import axis_view

    f32, f64 = bc.ElementKind.F32, bc.ElementKind.F64
    for log in (True, False):
        assert P.register_cap(EXCHANGE, log, False, f32) == P.EXCHANGE_FWD_MAXNREG
    assert P.register_cap(EXCHANGE, True, False, bc.ElementKind.BF16) == P.EXCHANGE_FWD_MAXNREG
    for args in ((EXCHANGE, False, False, bc.ElementKind.BF16), (EXCHANGE, True, True, f32),
                 (EXCHANGE, True, False, f64), (TILE, True, False, f32),
                 (LOOP, True, False, f32)):
        assert P.register_cap(*args) is None
    x = torch.empty(6, 10)
    view = axis_view((6, 10), [x], 1)
    (_, last, st_last), = outer_launch_groups(view, [x], pad_last=True)
    (_, first, st_first), = outer_launch_groups(view, [x])
    assert last == [6, 1, 1, 1] and st_last == [[10, 0, 0, 0]]
    assert first == [1, 1, 1, 6] and st_first == [[0, 0, 0, 10]]
