"""The Hopper shared-memory exchange candidate of SoftmaxPlan (softmax/plans_smem.py).

Its kernel is Gluon (TMA, mbarriers), which the Triton interpreter does not run: on the CPU the
selection rules and the workspace are tested, and the kernel's sm_90a compile is in the AOT
check; the GPU tests run it at real sizes.
"""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
import baracuda.torch as bt
from baracuda.backends.gluon_chunks import n_chunks
from baracuda.core.vocab import ArchSku, PlanPreference
from baracuda.families.softmax import plans as P
from baracuda.families.softmax import plans_smem as S
from conftest import ON_GPU
from helpers import assert_bitwise_equal, assert_close

SOFTMAX, LOG = bc.SoftmaxKind.SOFTMAX, bc.SoftmaxKind.LOG_SOFTMAX


def _desc(shape, dtype=torch.bfloat16, kind=SOFTMAX, axis=-1):
    return bc.SoftmaxDescriptor(kind, shape, axis % len(shape), dtype)


def test_supports_only_long_16_bit_lines_on_hopper():
    cand, pref = S.SmemExchangeSoftmaxForward(), PlanPreference()
    assert cand.supports(_desc((1024, 65536)), pref, ArchSku.SM90) is None
    assert cand.supports(_desc((3, 20224), torch.float16), pref, ArchSku.SM90A) is None
    refused = {
        "sm_90": cand.supports(_desc((1024, 65536)), pref, ArchSku.SM80),
        "16-bit": cand.supports(_desc((1024, 65536), torch.float32), pref, ArchSku.SM90),
        "more than": cand.supports(_desc((1024, 16384)), pref, ArchSku.SM90),
        "multiple of 256": cand.supports(_desc((1024, 65537)), pref, ArchSku.SM90),
        "interpreter": cand.supports(_desc((1024, 65536)), pref, ArchSku.INTERPRETER),
    }
    for what, reason in refused.items():
        assert reason, what
    assert "16-bit" in refused["16-bit"] and "65537" in refused["multiple of 256"]
    assert "sm_90" in refused["sm_90"] and "interpreter" in refused["interpreter"]


@pytest.mark.parametrize("shape", [(1024, 65536), (256, 262144), (7, 20224), (2, 3, 40960)])
def test_workspace_covers_the_triton_launch_it_may_run(shape):
    """A call the TMA view cannot take runs the Triton candidate in the same workspace."""
    d = _desc(shape)
    own = S.SmemExchangeSoftmaxForward().workspace_size(d)
    lines = 1
    for n in shape[:-1]:
        lines *= n
    assert own >= P.workspace_bytes(d)
    assert own >= lines * n_chunks(shape[-1]) * 8 + 4 * lines


def test_cpu_selection_keeps_the_triton_candidate():
    if ON_GPU:
        pytest.skip("CPU selection rule: on a GPU the next tests run the kernel")
    plan = bc.SoftmaxPlan.select(_desc((4, 65536)))
    assert plan.candidate.name == P.TritonSoftmaxForward.name


def _ref(x, kind):
    fn = torch.log_softmax if kind is LOG else torch.softmax
    return fn(x.double(), -1)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("kind", [SOFTMAX, LOG])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1024, 65536), (256, 262144), (37, 20224), (8, 1048576)])
def test_gpu_matches_reference_reruns_and_no_wait_path(shape, dtype, kind):
    """Against float64; -inf entries and one all -inf line (NaN, as torch); reruns and the
    path where no program waits (every program computes its line's partials) give the same
    bits."""
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randn(shape, device="cuda", generator=g) * 3).to(dtype)
    x[0, :: 7] = float("-inf")
    x[1] = float("-inf")
    plan = bc.SoftmaxPlan.select(_desc(shape, dtype, kind))
    assert plan.candidate.name == S.SmemExchangeSoftmaxForward.name
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    outs = []
    for spin in (None, None, 0):
        y = torch.full_like(x, float("nan"))
        if spin is None:
            plan.run(bc.SoftmaxArgs(x, y), ws)
        else:
            S.launch_smem(plan.desc, x, y, ws, spin=spin)
        outs.append(y)
    ref = _ref(x, kind)
    assert_close(outs[0], ref, dtype, "y")  # NaN lines where the reference has them
    assert torch.isnan(outs[0][1]).all()
    for y in outs[1:]:
        assert_bitwise_equal(y, outs[0], "y")


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_gpu_strided_calls_run_the_triton_launch():
    """A transposed input (the axis is not the last) or a strided output: the same plan, the
    Triton kernels, the same results as torch."""
    x = (torch.randn(65536, 64, device="cuda") * 3).to(torch.bfloat16)
    plan = bc.SoftmaxPlan.select(_desc((64, 65536)))
    assert plan.candidate.name == S.SmemExchangeSoftmaxForward.name
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    xt = x.t()
    y = torch.full((64, 65536), float("nan"), device="cuda", dtype=torch.bfloat16)
    plan.run(bc.SoftmaxArgs(xt, y), ws)
    assert_close(y, _ref(xt, SOFTMAX), torch.bfloat16, "y")
    y2 = torch.full((65536, 64), float("nan"), device="cuda", dtype=torch.bfloat16).t()
    plan.run(bc.SoftmaxArgs(xt.contiguous(), y2), ws)
    assert_close(y2, _ref(xt, SOFTMAX), torch.bfloat16, "y (strided output)")


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_gpu_frontend_uses_it_and_backward_still_works():
    x = (torch.randn(512, 65536, device="cuda") * 2).to(torch.bfloat16).requires_grad_()
    y = bt.softmax(x, -1)
    assert_close(y, _ref(x.detach(), SOFTMAX), torch.bfloat16, "y")
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    yf = y.float()
    ref = yf * (dy.float() - (yf * dy.float()).sum(-1, keepdim=True))
    assert_close(dx, ref.double(), torch.bfloat16, "dx")
