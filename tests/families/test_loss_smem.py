"""The Hopper shared-memory exchange candidate of CrossEntropyLossFusedPlan
(loss/plans_smem.py).

Its kernel is Gluon (cp.async), which the Triton interpreter does not run: on the CPU the
selection rules and the workspace are tested, and the kernel's sm_90a compile is in the AOT
check; the GPU tests run it at real sizes.
"""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
import baracuda.torch as bt
from baracuda.core.vocab import ArchSku, ElementKind, PlanPreference
from baracuda.families.loss import plans as P
from baracuda.families.loss import plans_smem as S
from conftest import ON_GPU
from helpers import assert_bitwise_equal, assert_close

R = bc.LossReduction


def _desc(shape, dtype=torch.bfloat16, reduction=R.MEAN, weight=False, smoothing=0.0,
          target=ElementKind.I64, ignore_index=-100):
    return bc.CrossEntropyLossDescriptor(shape, dtype, target, reduction, weight, ignore_index,
                                         label_smoothing=smoothing)


def test_supports_only_long_16_bit_class_index_lines_on_hopper():
    cand, pref = S.SmemExchangeCrossEntropyFused(), PlanPreference()
    assert cand.supports(_desc((8192, 32768)), pref, ArchSku.SM90) is None
    assert cand.supports(_desc((4, 131072), torch.float16, R.NONE, True), pref,
                         ArchSku.SM90A) is None
    for reason in (cand.supports(_desc((8192, 32768)), pref, ArchSku.SM80),
                   cand.supports(_desc((8192, 32768)), pref, ArchSku.INTERPRETER),
                   cand.supports(_desc((8, 32768), torch.float32), pref, ArchSku.SM90),
                   cand.supports(_desc((8, 16384)), pref, ArchSku.SM90),
                   cand.supports(_desc((8, 32776)), pref, ArchSku.SM90),
                   cand.supports(_desc((8, 32768, 3)), pref, ArchSku.SM90),
                   cand.supports(_desc((8, 32768), smoothing=0.1), pref, ArchSku.SM90),
                   cand.supports(_desc((8, 32768), target=ElementKind.BF16), pref,
                                 ArchSku.SM90)):
        assert reason


@pytest.mark.parametrize("reduction", list(R))
def test_workspace_holds_the_reduction_and_the_exchange(reduction):
    d = _desc((4096, 131072), reduction=reduction)
    own = S.SmemExchangeCrossEntropyFused().workspace_size(d)
    assert own >= P.ce_workspace(d, loss=True, grad=True) + 4096 * S._chunks(131072) * 8 + 4 * 4096


def _reference(x, t, w, reduction, ignore_index):
    xd = x.double().requires_grad_()
    loss = torch.nn.functional.cross_entropy(xd, t, weight=None if w is None else w.double(),
                                             reduction=reduction.value,
                                             ignore_index=ignore_index)
    (g,) = torch.autograd.grad(loss.sum(), xd)
    return loss.detach(), g


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("reduction", list(R))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(512, 32768), (64, 131072), (37, 20224)])
def test_gpu_matches_reference_reruns_and_no_wait_path(shape, weighted, reduction):
    """Loss and gradient against float64 torch, with ignored samples; reruns and the path
    where no program waits give the same bits."""
    g = torch.Generator(device="cuda").manual_seed(7)
    n, c = shape
    x = (torch.randn(shape, device="cuda", generator=g) * 2).to(torch.bfloat16)
    t = torch.randint(0, c, (n,), device="cuda", generator=g)
    t[::5] = -100
    w = (torch.rand(c, device="cuda", generator=g) + 0.5).to(torch.bfloat16) if weighted \
        else None
    desc = _desc(shape, reduction=reduction, weight=weighted)
    plan = bc.CrossEntropyLossFusedPlan.select(desc)
    assert plan.candidate.name == S.SmemExchangeCrossEntropyFused.name
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    outs = []
    for spin in (None, None, 0):
        loss = torch.full(desc.loss_shape, float("nan"), device="cuda", dtype=torch.bfloat16)
        dx = torch.full_like(x, float("nan"))
        args = bc.CrossEntropyLossFusedArgs(x, t, w, loss, dx)
        if spin is None:
            plan.run(args, ws)
        else:
            S.launch_smem(plan.desc, args, ws, spin=spin)
        outs.append((loss, dx))
    loss_ref, g_ref = _reference(x, t, w, reduction, -100)
    assert_close(outs[0][0], loss_ref, torch.bfloat16, "loss")
    assert_close(outs[0][1], g_ref, torch.bfloat16, "grad_input")
    assert (outs[0][1][::5] == 0).all()  # ignored samples
    for loss, dx in outs[1:]:
        assert_bitwise_equal(loss, outs[0][0], "loss")
        assert_bitwise_equal(dx, outs[0][1], "grad_input")


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_gpu_contiguous_and_strided_calls_agree_with_the_reference():
    """The shared-memory path (contiguous rows) and the Triton launch (strided rows) of one
    plan. An out-of-range target is a device-side assert on both (as torch's kernels; it
    ends the CUDA context, so test_loss_torch_semantics checks it in a subprocess)."""
    x = (torch.randn(16, 2 * 32768, device="cuda")).to(torch.bfloat16)
    t = torch.randint(0, 32768, (16,), device="cuda")
    desc = _desc((16, 32768), reduction=R.NONE)
    plan = bc.CrossEntropyLossFusedPlan.select(desc)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    for xin in (x[:, :32768].contiguous(), x[:, ::2]):  # the second: the Triton launch
        loss = torch.full((16,), float("nan"), device="cuda", dtype=torch.bfloat16)
        dx = torch.full((16, 32768), float("nan"), device="cuda", dtype=torch.bfloat16)
        plan.run(bc.CrossEntropyLossFusedArgs(xin, t, None, loss, dx), ws)
        loss_ref, g_ref = _reference(xin, t, None, R.NONE, -100)
        assert_close(loss, loss_ref, torch.bfloat16, "loss")
        assert_close(dx, g_ref, torch.bfloat16, "grad_input")


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_gpu_frontend_cross_entropy_uses_it():
    x = (torch.randn(256, 32768, device="cuda") * 2).to(torch.bfloat16).requires_grad_()
    t = torch.randint(0, 32768, (256,), device="cuda")
    loss = bt.cross_entropy(x, t)
    (dx,) = torch.autograd.grad(loss, x)
    loss_ref, g_ref = _reference(x.detach(), t, None, R.MEAN, -100)
    assert_close(loss, loss_ref, torch.bfloat16, "loss")
    assert_close(dx, g_ref, torch.bfloat16, "grad_input")
