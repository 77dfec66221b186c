"""Normalization: any finite eps and momentum, as torch (issue 32). A negative eps gives NaN
exactly where var + eps < 0, as torch's; a momentum outside [0, 1] extrapolates the running
statistics. F.batch_norm's own eps checks stay (its ValueErrors)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import baracuda as bc
from baracuda.families.normalization import torch_api as bt
from conftest import DEVICE

F64 = dict(dtype=torch.float64, device=DEVICE)


def _leaves(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 6, 5, generator=g, dtype=torch.float64)
    p = [torch.rand(n, generator=g, dtype=torch.float64) + 0.5 for n in (5, 5, 6, 6)]
    return [t.to(DEVICE) for t in (x, *p)]


CALLS = {
    "layer_norm": lambda m, x, w, b, wc, bc_, e: m.layer_norm(x, (5,), w, b, eps=e),
    "layer_norm_2d": lambda m, x, w, b, wc, bc_, e: m.layer_norm(x, (6, 5), eps=e),
    "rms_norm": lambda m, x, w, b, wc, bc_, e: m.rms_norm(x, (5,), w, eps=e),
    "group_norm": lambda m, x, w, b, wc, bc_, e: m.group_norm(x, 3, wc, bc_, eps=e),
    "instance_norm": lambda m, x, w, b, wc, bc_, e: m.instance_norm(x, weight=wc, bias=bc_,
                                                                     eps=e),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("eps", [-0.5, -1e-3, -3.0])
def test_negative_eps_matches_torch(name, eps):
    """Forward (NaN where torch's is) and every gradient, against torch in float64."""
    results = []
    for mod in (bt, F):
        leaves = [t.clone().requires_grad_() for t in _leaves(1)]
        y = CALLS[name](mod, *leaves, eps)
        g = torch.randn(y.shape, generator=torch.Generator().manual_seed(2),
                        dtype=torch.float64).to(DEVICE)
        grads = torch.autograd.grad(y, leaves, g, allow_unused=True)
        results.append((y, *[t for t in grads if t is not None]))
    ours, ref = results
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, equal_nan=True)
    if eps == -3.0:  # var + eps < 0 on most lines
        assert ref[0].isnan().any()


@pytest.mark.parametrize("momentum", [-0.5, 1.5, 2.0])
@pytest.mark.parametrize("name", ["batch_norm", "instance_norm"])
def test_momentum_outside_unit_interval_matches_torch(name, momentum):
    results = []
    for mod in (bt, F):
        x = _leaves(3)[0].clone().requires_grad_()
        rm, rv = torch.zeros(6, **F64), torch.ones(6, **F64)
        if name == "batch_norm":
            y = mod.batch_norm(x, rm, rv, training=True, momentum=momentum)
        else:
            y = mod.instance_norm(x, rm, rv, momentum=momentum)
        (dx,) = torch.autograd.grad(y.sum(), x)
        results.append((y, dx, rm, rv))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b)


def test_plan_descriptors_take_any_finite_eps_and_momentum():
    bc.LayerNormDescriptor((4, 8), (1,), True, True, -1e-3, torch.float32).validate("t")
    bc.RMSNormDescriptor((4, 8), (1,), True, -1e-3, torch.float32).validate("t")
    bc.GroupNormDescriptor((4, 6, 5), 3, True, True, -1e-3, torch.float32).validate("t")
    for bad in (float("nan"), float("inf")):
        with pytest.raises(bc.InvalidProblem):
            bc.LayerNormDescriptor((4, 8), (1,), True, True, bad, torch.float32).validate("t")


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_keeps_torch_eps_checks(training):
    """F.batch_norm itself refuses eps <= 0 in training and eps < 0 in eval (ValueError)."""
    x = torch.randn(4, 6, 5, **F64)
    stats = (torch.zeros(6, **F64), torch.ones(6, **F64))
    with pytest.raises(ValueError) as ref:
        F.batch_norm(x, *stats, training=training, eps=-1e-3)
    with pytest.raises(ValueError) as ours:
        bt.batch_norm(x, *stats, training=training, eps=-1e-3)
    assert str(ours.value) == str(ref.value)
