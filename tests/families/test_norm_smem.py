"""The Hopper shared-memory exchange candidates of RMSNormPlan / LayerNormPlan
(normalization/plans_smem.py).

Their kernel is Gluon (cp.async), which the Triton interpreter does not run: on the CPU the
selection rules and the workspace are tested, and the kernel's sm_90a compile is in the AOT
check; the GPU tests run it at real sizes.
"""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
import baracuda.torch as bt
from baracuda.backends.gluon_chunks import (
    UNSET_BITS,
    exchange_workspace_bytes,
    fresh_counted_slots,
    fresh_slots,
    n_chunks,
)
from baracuda.backends.triton_exchange import fill
from baracuda.core.vocab import ArchSku, ElementKind, PlanPreference
from baracuda.families.normalization import plans as P
from baracuda.families.normalization import plans_smem as S
from baracuda.families.normalization import reference as R
from conftest import DEVICE, ON_GPU
from helpers import assert_bitwise_equal, assert_close

EPS = 1e-5


def _desc(layer: bool, shape, n_norm=1, dtype=torch.bfloat16, affine=True, residual=False):
    axes = tuple(range(len(shape) - n_norm, len(shape)))
    if layer:
        return bc.LayerNormDescriptor(shape, axes, affine, affine, EPS, dtype,
                                      has_residual=residual)
    return bc.RMSNormDescriptor(shape, axes, affine, EPS, dtype, has_residual=residual)


@pytest.mark.parametrize("layer", [False, True])
def test_supports_only_long_16_bit_rows_without_residual_on_hopper(layer):
    """...and f32 rows for layer_norm's forward only (F32_FORWARD)."""
    cand = (S.SmemExchangeLayerNorm if layer else S.SmemExchangeRMSNorm)()
    pref = PlanPreference()
    assert cand.supports(_desc(layer, (1024, 65536)), pref, ArchSku.SM90) is None
    assert cand.supports(_desc(layer, (4, 256, 256), 2, torch.float16), pref, ArchSku.SM90A) \
        is None
    f32 = cand.supports(_desc(layer, (8, 65536), dtype=torch.float32), pref, ArchSku.SM90)
    assert (f32 is None) == layer
    assert S.F32_FORWARD == {True: False, False: True}
    for reason in (cand.supports(_desc(layer, (1024, 65536)), pref, ArchSku.SM80),
                   cand.supports(_desc(layer, (1024, 65536)), pref, ArchSku.INTERPRETER),
                   cand.supports(_desc(layer, (8, 65536), dtype=torch.float64), pref,
                                 ArchSku.SM90),
                   cand.supports(_desc(layer, (8, 16384), dtype=torch.float32), pref,
                                 ArchSku.SM90),
                   cand.supports(_desc(layer, (8, 16384)), pref, ArchSku.SM90),
                   cand.supports(_desc(layer, (8, 65544)), pref, ArchSku.SM90),
                   cand.supports(_desc(layer, (8, 65536), residual=True), pref, ArchSku.SM90)):
        assert reason


@pytest.mark.parametrize("layer", [False, True])
@pytest.mark.parametrize("shape", [(1024, 65536), (256, 262144), (7, 20224)])
def test_workspace_covers_the_triton_launch_it_may_run(layer, shape):
    d = _desc(layer, shape)
    cand = (S.SmemExchangeLayerNorm if layer else S.SmemExchangeRMSNorm)()
    own = cand.workspace_size(d)
    assert own >= P.forward_workspace(d)
    assert own >= shape[0] * n_chunks(shape[-1]) * 8 + 4 * shape[0]


def test_even_rows_drop_masks_only_at_16_bits():
    """fwd_even: whole chunks of a 16-bit row skip the masks; f32 rows and rows that end in a
    partial chunk keep them."""
    bf16, f32 = ElementKind.BF16, ElementKind.F32
    assert S.fwd_even(65536, bf16, S.fwd_chunk_config(65536, bf16, False))
    assert not S.fwd_even(20224, bf16, S.fwd_chunk_config(20224, bf16, False))
    assert not S.fwd_even(65536, f32, S.fwd_chunk_config(65536, f32, False))


@pytest.mark.parametrize("shape", [(1024, 65536), (256, 262144)])
def test_f32_forward_takes_its_own_chunk_config(shape):
    """f32 rows use CHUNK_TABLE's "line_f32" row (32 chunk rows at every length), and the
    workspace holds the partials of that many chunks."""
    d = _desc(True, shape, dtype=torch.float32)
    cfg = S.fwd_chunk_config(shape[-1], ElementKind.F32, False)
    assert cfg == {"R": 32, "SL": 4, "num_warps": 4}
    own = S.SmemExchangeLayerNorm().workspace_size(d)
    assert own >= shape[0] * n_chunks(shape[-1], cfg) * 8 + 4 * shape[0]
    assert own >= P.forward_workspace(d)



def test_slot_fills_mark_every_slot_unset_and_zero_the_counters():
    """fresh_counted_slots: one fill sets the pair slots to UNSET_BITS and the counters after
    them to 0 (the bytes fresh_exchange carves); fresh_slots marks its slots alone. Bytes past
    the region are left as they were."""
    lines, chunks = 3, 5
    ws = torch.full((exchange_workspace_bytes(lines, chunks) + 64,), 7, dtype=torch.uint8,
                    device=DEVICE)
    slots, counters = fresh_counted_slots(ws, lines, chunks)
    assert slots.numel() == lines * chunks * 2 and counters.numel() == lines
    assert bool((slots.view(torch.int32) == UNSET_BITS.value).all())
    assert bool((counters == 0).all())
    assert bool((ws[-64:] == 7).all())
    ws.fill_(7)
    only = fresh_slots(ws, lines, chunks)
    assert bool((only.view(torch.int32) == UNSET_BITS.value).all())
    assert bool((ws[4 * lines * chunks * 2:] == 7).all())



def test_fill_split_writes_two_values_in_one_launch():
    """fill(t, value, rest, split): the first `split` elements take `value`, the rest `rest`;
    without a split, all take `value`; a split of a strided tensor is refused."""
    t = torch.full((10,), -1, dtype=torch.int32, device=DEVICE)
    fill(t, 5, rest=0, split=3)
    assert t.tolist() == [5, 5, 5] + [0] * 7
    fill(t, 9)
    assert t.tolist() == [9] * 10
    with pytest.raises(ValueError, match="contiguous"):
        fill(torch.zeros(4, 4, dtype=torch.int32, device=DEVICE).t(), 1, rest=0, split=2)

def test_forward_takes_counted_slots_where_they_measured_faster():
    """COUNTED_SLOTS (H100, session 19): layer_norm's 16-bit forward swaps its pairs through
    counted slots at every length, its f32 forward up to 65536 elements; rms_norm keeps the
    counter protocol."""
    bf16, f16, f32 = ElementKind.BF16, ElementKind.F16, ElementKind.F32
    for extent in (20224, 65536, 262144):
        assert S.fwd_slots(extent, bf16, False) and S.fwd_slots(extent, f16, False)
        assert not S.fwd_slots(extent, bf16, True)
    assert S.fwd_slots(65536, f32, False) and not S.fwd_slots(65536 + 256, f32, False)

def _reference(x, n_norm, w, b, layer):
    xd = x.double().flatten(x.dim() - n_norm)
    mean = xd.mean(-1, keepdim=True) if layer else torch.zeros_like(xd[..., :1])
    var = ((xd - mean) ** 2).mean(-1, keepdim=True)
    rstd = 1.0 / torch.sqrt(var + EPS)
    y = (xd - mean) * rstd
    if w is not None:
        y = y * w.double().flatten()
    if b is not None:
        y = y + b.double().flatten()
    return y.view(x.shape), mean.squeeze(-1), rstd.squeeze(-1)


def _runs_agree_bitwise(plan, ws, fresh_args, no_wait, outputs, names):
    """Run the plan twice and the no-wait path (spin=0) once, each on fresh NaN-poisoned
    outputs; every run must give the first run's bits. Returns the first run's outputs."""
    runs = []
    for spin in (None, None, 0):
        args = fresh_args()
        if spin is None:
            plan.run(args, ws)
        else:
            no_wait(plan.desc, args, spin)
        runs.append(outputs(args))
    for other in runs[1:]:
        for name, first, again in zip(names, runs[0], other):
            if first is not None:
                assert_bitwise_equal(again, first, name)
    return runs[0]


def _args(layer, x, y, w, b, mean, rstd):
    if layer:
        return bc.LayerNormArgs(x=x, y=y, mean=mean, rstd=rstd, gamma=w, beta=b)
    return bc.RMSNormArgs(x=x, y=y, rstd=rstd, gamma=w)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("layer,dtype", [(False, torch.bfloat16), (False, torch.float16),
                                         (True, torch.bfloat16), (True, torch.float16),
                                         (True, torch.float32)])
@pytest.mark.parametrize("shape,n_norm", [((1024, 65536), 1), ((256, 262144), 1),
                                          ((37, 20224), 1), ((3, 5, 256, 160), 2)])
def test_gpu_matches_reference_reruns_and_no_wait_path(layer, dtype, shape, n_norm):
    """y, mean, rstd against float64 (rows offset far from 0 for layer_norm's shift; f32 rows
    for layer_norm only, F32_FORWARD); reruns and the path where no program waits give the
    same bits."""
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(shape, device="cuda", generator=g)
    if layer:
        x = x + 3.0
    x = x.to(dtype)
    norm_shape = shape[len(shape) - n_norm:]
    w = (torch.rand(norm_shape, device="cuda", generator=g) + 0.5).to(dtype)
    b = torch.randn(norm_shape, device="cuda", generator=g).to(dtype) if layer else None
    desc = _desc(layer, shape, n_norm, dtype)
    plan = (bc.LayerNormPlan if layer else bc.RMSNormPlan).select(desc)
    assert plan.candidate.name == (S.SmemExchangeLayerNorm if layer
                                   else S.SmemExchangeRMSNorm).name
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    stats_shape = shape[: len(shape) - n_norm] + (1,) * n_norm

    def fresh():
        nan = float("nan")
        return _args(layer, x, torch.full_like(x, nan), w, b,
                     torch.full(stats_shape, nan, device="cuda") if layer else None,
                     torch.full(stats_shape, nan, device="cuda"))

    y, mean, rstd = _runs_agree_bitwise(
        plan, ws, fresh, lambda d, a, spin: S.launch_smem(d, a, ws, not layer, spin=spin),
        lambda a: (a.y, getattr(a, "mean", None), a.rstd), ("y", "mean", "rstd"))
    y_ref, mean_ref, rstd_ref = _reference(x, n_norm, w, b, layer)
    assert_close(y, y_ref, dtype, "y")
    # the statistics are f32 sums over up to 262144 elements: 5x the f32 row of the table
    assert_close(rstd.flatten(), rstd_ref.flatten(), torch.float32, "rstd", scale=5.0)
    if layer:
        assert_close(mean.flatten(), mean_ref.flatten(), torch.float32, "mean", scale=5.0)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("layer", [False, True])
def test_gpu_strided_calls_run_the_triton_launch(layer):
    """A strided input row or a strided weight: the same plan, the Triton kernels."""
    x = (torch.randn(64, 2 * 65536, device="cuda") + 1).to(torch.bfloat16)[:, ::2]
    w = torch.rand(65536 * 2, device="cuda").to(torch.bfloat16)[::2]
    b = torch.randn(65536, device="cuda").to(torch.bfloat16) if layer else None
    desc = _desc(layer, (64, 65536))
    plan = (bc.LayerNormPlan if layer else bc.RMSNormPlan).select(desc)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    y = torch.full((64, 65536), float("nan"), device="cuda", dtype=torch.bfloat16)
    mean = torch.empty(64, 1, device="cuda") if layer else None
    rstd = torch.empty(64, 1, device="cuda")
    plan.run(_args(layer, x, y, w, b, mean, rstd), ws)
    y_ref, _, rstd_ref = _reference(x, 1, w, b, layer)
    assert_close(y, y_ref, torch.bfloat16, "y")
    assert_close(rstd.flatten(), rstd_ref.flatten(), torch.float32, "rstd", scale=5.0)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_gpu_frontend_uses_it_and_backward_still_works():
    x = (torch.randn(256, 65536, device="cuda") * 2).to(torch.bfloat16).requires_grad_()
    w = (torch.rand(65536, device="cuda") + 0.5).to(torch.bfloat16).requires_grad_()
    b = torch.randn(65536, device="cuda").to(torch.bfloat16).requires_grad_()
    y = bt.layer_norm(x, [65536], w, b, EPS)
    ref = torch.nn.functional.layer_norm(x.float(), [65536], w.float(), b.float(), EPS)
    assert_close(y, ref.double(), torch.bfloat16, "y")
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, (x, w, b), dy)
    want = torch.autograd.grad(ref, (x, w, b), dy.float())
    for g_, w_ in zip(got, want):
        assert_close(g_, w_.double(), torch.bfloat16, "grad", scale=2.0)
    y2 = bt.rms_norm(x.detach(), [65536], w.detach(), EPS)
    ref2 = torch.nn.functional.rms_norm(x.detach().float(), [65536], w.detach().float(), EPS)
    assert_close(y2, ref2.double(), torch.bfloat16, "y (rms_norm)")



@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("layer", [False, True])
def test_gpu_nan_row_stays_in_its_row_forward_and_backward(layer):
    """A NaN in one row: that row's y, rstd and dx are NaN (its partials are NaN, which the
    slots still read as published: UNSET_BITS is no arithmetic's NaN), every other row and
    dgamma over the other rows match the reference."""
    shape, bad = (48, 65536), 17
    x, dy, w, mean, rstd, want = _backward_case(layer, shape, 1, torch.bfloat16, True, 11)
    x[bad, 1234] = float("nan")
    b = torch.randn(shape[-1], device="cuda").to(torch.bfloat16) if layer else None
    plan = (bc.LayerNormPlan if layer else bc.RMSNormPlan).select(_desc(layer, shape))
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    y = torch.full_like(x, 0.5)
    f_mean = torch.full((shape[0], 1), 0.5, device="cuda") if layer else None
    f_rstd = torch.full((shape[0], 1), 0.5, device="cuda")
    plan.run(_args(layer, x, y, w, b, f_mean, f_rstd), ws)
    keep = torch.arange(shape[0], device="cuda") != bad
    assert bool(torch.isnan(y[bad]).all()) and bool(torch.isnan(f_rstd[bad]).all())
    y_ref, _, _ = _reference(x[keep], 1, w, b, layer)
    assert_close(y[keep], y_ref, torch.bfloat16, "y")
    bplan = (bc.LayerNormBackwardPlan if layer else bc.RMSNormBackwardPlan).select(
        _bwd_desc(layer, shape))
    bws = torch.empty(bplan.workspace_size(), dtype=torch.uint8, device="cuda")
    args = _backward_args(layer, x, dy, w, mean, rstd, True)
    bplan.run(args, bws)
    assert bool(torch.isnan(args.dx[bad]).all())
    assert_close(args.dx[keep], want["dx"][keep.cpu()], torch.bfloat16, "dx", scale=2.0)

# -- backward: dy and x chunks through a shared-memory ring (kernels_smem.row_norm_bwd_...) --

def _bwd_desc(layer: bool, shape, n_norm=1, dtype=torch.bfloat16, affine=True,
              residual=False):
    axes = tuple(range(len(shape) - n_norm, len(shape)))
    if layer:
        return bc.LayerNormBackwardDescriptor(shape, axes, affine, affine, dtype,
                                              has_residual=residual)
    return bc.RMSNormBackwardDescriptor(shape, axes, affine, dtype, has_residual=residual)


def _bwd_cand(layer: bool):
    return (S.SmemExchangeLayerNormBackward if layer else S.SmemExchangeRMSNormBackward)()


@pytest.mark.parametrize("layer", [False, True])
def test_backward_supports_only_long_16_bit_rows_without_residual_on_hopper(layer):
    cand, pref = _bwd_cand(layer), PlanPreference()
    longest_in_registers = S.BWD_SINGLE_TILE[layer]
    assert cand.supports(_bwd_desc(layer, (1024, 65536)), pref, ArchSku.SM90) is None
    assert cand.supports(_bwd_desc(layer, (8, longest_in_registers + 256)), pref,
                         ArchSku.SM90A) is None
    assert cand.supports(_bwd_desc(layer, (3, 5, 256, 160), 2, torch.float16), pref,
                         ArchSku.SM90) is None
    reasons = {
        "arch": cand.supports(_bwd_desc(layer, (1024, 65536)), pref, ArchSku.SM80),
        "f32": cand.supports(_bwd_desc(layer, (8, 65536), dtype=torch.float32), pref,
                             ArchSku.SM90),
        "short": cand.supports(_bwd_desc(layer, (8, longest_in_registers)), pref,
                               ArchSku.SM90),
        "odd": cand.supports(_bwd_desc(layer, (8, 65544)), pref, ArchSku.SM90),
        "residual": cand.supports(_bwd_desc(layer, (8, 65536), residual=True), pref,
                                  ArchSku.SM90),
    }
    assert all(reasons.values()), reasons
    assert "sm_90" in reasons["arch"] and "16-bit" in reasons["f32"]
    assert "residual" in reasons["residual"] and "multiple of 256" in reasons["odd"]


@pytest.mark.parametrize("layer", [False, True])
@pytest.mark.parametrize("shape", [(1024, 65536), (1, 262144), (7, 20224)])
def test_backward_workspace_covers_both_launches(layer, shape):
    d = _bwd_desc(layer, shape)
    own = _bwd_cand(layer).workspace_size(d)
    nch, groups = S.bwd_shape(d)
    assert groups <= shape[0] and nch * S.smem_bwd_config(layer, shape[-1])["R"] * 256 >= shape[-1]
    assert own >= P.backward_workspace(d)
    assert own >= 4 * (2 if layer else 1) * groups * shape[-1] + shape[0] * nch * 8


def _backward_case(layer, shape, n_norm, dtype, affine, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(shape, device="cuda", generator=g) * 2 + 1).to(dtype)
    dy = torch.randn(shape, device="cuda", generator=g).to(dtype)
    norm_shape = shape[len(shape) - n_norm:]
    w = (torch.rand(norm_shape, device="cuda", generator=g) + 0.5).to(dtype) if affine \
        else None
    stats = R.row_norm_forward(x, n_norm, None, None, EPS, not layer)
    stats_shape = shape[: len(shape) - n_norm] + (1,) * n_norm
    rstd = stats["rstd"].to("cuda", torch.float32).reshape(stats_shape)
    mean = None if not layer else stats["mean"].to("cuda", torch.float32).reshape(stats_shape)
    want = R.row_norm_backward(dy, x, rstd, n_norm, mean, w, layer and affine)
    return x, dy, w, mean, rstd, want


def _backward_args(layer, x, dy, w, mean, rstd, affine):
    nan = float("nan")
    dx = torch.full_like(x, nan)
    dg = torch.full_like(w, nan) if affine else None
    if layer:
        db = torch.full_like(w, nan) if affine else None
        return bc.LayerNormBackwardArgs(dy=dy, x=x, mean=mean, rstd=rstd, dx=dx, gamma=w,
                                        dgamma=dg, dbeta=db)
    return bc.RMSNormBackwardArgs(dy=dy, x=x, rstd=rstd, dx=dx, gamma=w, dgamma=dg)


def _grads(layer, args):
    return (args.dx, args.dgamma, args.dbeta if layer else None)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("layer", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,n_norm,affine", [((1024, 65536), 1, True),
                                                 ((256, 262144), 1, True),
                                                 ((37, 20224), 1, True),
                                                 ((1, 65536), 1, True),
                                                 ((17, 65536), 1, True),
                                                 ((3, 5, 256, 160), 2, True),
                                                 ((300, 24576), 1, False)])
def test_gpu_backward_matches_reference_reruns_and_no_wait_path(layer, dtype, shape, n_norm,
                                                                 affine):
    """dx, dgamma, dbeta against float64 (rows offset from 0, a last chunk cut short, one
    row, more row groups than rows in use (17 rows: groups 9-15 empty), two normalized axes,
    no affine parameters); reruns and the path where no program waits give the same bits."""
    x, dy, w, mean, rstd, want = _backward_case(layer, shape, n_norm, dtype, affine, 5)
    desc = _bwd_desc(layer, shape, n_norm, dtype, affine)
    plan = (bc.LayerNormBackwardPlan if layer else bc.RMSNormBackwardPlan).select(desc)
    assert plan.candidate.name == type(_bwd_cand(layer)).name
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    grads = _runs_agree_bitwise(
        plan, ws, lambda: _backward_args(layer, x, dy, w, mean, rstd, affine),
        lambda d, a, spin: S.launch_smem_backward(d, a, ws, not layer, spin=spin),
        lambda a: _grads(layer, a), ("dx", "dgamma", "dbeta"))
    for name, got in zip(("dx", "dgamma", "dbeta"), grads):
        if got is not None:
            assert_close(got, want[name], dtype, name, scale=2.0)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("layer", [False, True])
def test_gpu_backward_strided_calls_run_the_triton_launch(layer):
    """A transposed dy: the same plan runs the Triton backward, in the same workspace."""
    shape = (64, 65536)
    x, dy, w, mean, rstd, want = _backward_case(layer, shape, 1, torch.bfloat16, True, 6)
    dy_t = dy.t().contiguous().t()  # the same values, column-major
    plan = (bc.LayerNormBackwardPlan if layer else bc.RMSNormBackwardPlan).select(
        _bwd_desc(layer, shape))
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    args = _backward_args(layer, x, dy_t, w, mean, rstd, True)
    plan.run(args, ws)
    for name, got in zip(("dx", "dgamma", "dbeta"), _grads(layer, args)):
        if got is not None:
            assert_close(got, want[name], torch.bfloat16, name, scale=2.0)


@pytest.mark.parametrize("cand_type", [S.SmemExchangeRMSNorm, S.SmemExchangeLayerNorm,
                                       S.SmemExchangeRMSNormBackward,
                                       S.SmemExchangeLayerNormBackward])
def test_launch_takes_the_shared_memory_kernel_only_for_contiguous_rows(cand_type,
                                                                      monkeypatch):
    """Contiguous rows and statistics go to the Gluon launch; a strided row tensor or
    statistic goes to the Triton candidate's launch (both recorded, not run, on the CPU)."""
    cand = cand_type()
    layer, backward = not cand.rms, cand.backward
    calls = []
    monkeypatch.setattr(S, "launch_smem" if not backward else "launch_smem_backward",
                        lambda desc, args, ws, rms: calls.append(("smem", rms)))
    monkeypatch.setattr(P._RowNormCandidate, "launch",
                        lambda self, desc, args, ws: calls.append(("triton", self.rms)))
    shape = (4, 20224)

    def t(strided=False, n=shape):
        full = torch.randn(*n[:-1], 2 * n[-1]) if strided else torch.randn(n)
        return full[..., ::2] if strided else full

    def args(strided_row=False, strided_stat=False):
        stat = torch.randn(4, 2)[:, :1] if strided_stat else torch.randn(4, 1)
        w, b = t(n=shape[-1:]), t(n=shape[-1:])
        if backward:
            kw = dict(dy=t(strided_row), x=t(), rstd=stat, dx=t(), gamma=w, dgamma=t(n=(20224,)))
            if layer:
                return bc.LayerNormBackwardArgs(mean=torch.randn(4, 1), dbeta=b, **kw)
            return bc.RMSNormBackwardArgs(**kw)
        if layer:
            return bc.LayerNormArgs(x=t(strided_row), y=t(), mean=torch.randn(4, 1), rstd=stat,
                                    gamma=w, beta=b)
        return bc.RMSNormArgs(x=t(strided_row), y=t(), rstd=stat, gamma=w)

    desc = (_bwd_desc if backward else _desc)(layer, shape)
    for a in (args(), args(strided_row=True), args(strided_stat=True)):
        cand.launch(desc, a, None)
    assert calls == [("smem", cand.rms), ("triton", cand.rms), ("triton", cand.rms)]
