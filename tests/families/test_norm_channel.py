"""Channel normalizations through the torch frontend (group_norm, batch_norm, instance_norm)
against torch: values, gradients, running statistics, gradcheck in f64, opcheck, compile and
torch's error behaviour. The plans are covered by tests/test_contract.py."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from baracuda.families.normalization.torch_api import (
    batch_norm,
    group_norm,
    instance_norm,
)
from conftest import DEVICE
from helpers import assert_close
from helpers import norm_rand as _rand


def _close_to_torch(got, want, dtype=torch.float32, scale=1.0):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert_close(got, want.double(), dtype, scale=scale)


def test_group_norm_matches_torch_and_grads():
    x = _rand((2, 6, 3, 5), torch.float64, requires_grad=True)
    w = _rand((6,), torch.float64, seed=1, requires_grad=True)
    b = _rand((6,), torch.float64, seed=2, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: group_norm(x, 3, w, b), (x, w, b))
    xf = x.detach().float()
    _close_to_torch(group_norm(xf, 2), F.group_norm(xf, 2))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_running_stats_and_grads(training):
    x = _rand((4, 3, 7), torch.float32, requires_grad=True)
    w = _rand((3,), seed=1, requires_grad=True)
    b = _rand((3,), seed=2, requires_grad=True)
    rm, rv = _rand((3,), seed=3), _rand((3,), seed=4).abs() + 0.5
    rm_t, rv_t = rm.clone(), rv.clone()
    y = batch_norm(x, rm, rv, w, b, training, 0.2, 1e-5)
    x2, w2, b2 = (t.detach().clone().requires_grad_() for t in (x, w, b))
    y_t = F.batch_norm(x2, rm_t, rv_t, w2, b2, training, 0.2, 1e-5)
    _close_to_torch(y, y_t.detach())
    assert torch.allclose(rm, rm_t, atol=1e-6) and torch.allclose(rv, rv_t, atol=1e-5)
    dy = _rand((4, 3, 7), seed=5)
    for a, e in zip(torch.autograd.grad(y, (x, w, b), dy),
                    torch.autograd.grad(y_t, (x2, w2, b2), dy)):
        _close_to_torch(a, e, scale=4.0)


def test_batch_norm_gradcheck_f64_and_errors():
    x = _rand((3, 2, 4), torch.float64, requires_grad=True)
    w = _rand((2,), torch.float64, seed=1, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: batch_norm(x, None, None, w, None, True),
                                    (x, w))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        batch_norm(_rand((1, 3)), None, None, training=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(_rand((1, 3)), None, None, training=True)


@pytest.mark.parametrize("running", [False, True])
def test_instance_norm_matches_torch(running):
    x = _rand((2, 3, 11), torch.float32, requires_grad=True)
    w = _rand((3,), seed=1, requires_grad=True)
    rm = _rand((3,), seed=3) if running else None
    rv = (_rand((3,), seed=4).abs() + 0.5) if running else None
    rm_t = rm.clone() if running else None
    rv_t = rv.clone() if running else None
    y = instance_norm(x, rm, rv, w, None, True, 0.1, 1e-5)
    x2, w2 = (t.detach().clone().requires_grad_() for t in (x, w))
    y_t = F.instance_norm(x2, rm_t, rv_t, w2, None, True, 0.1, 1e-5)
    _close_to_torch(y, y_t.detach())
    if running:
        assert torch.allclose(rm, rm_t, atol=1e-6) and torch.allclose(rv, rv_t, atol=1e-5)
    dy = _rand((2, 3, 11), seed=5)
    for a, e in zip(torch.autograd.grad(y, (x, w), dy), torch.autograd.grad(y_t, (x2, w2), dy)):
        _close_to_torch(a, e, scale=4.0)


def test_channel_norms_compile_and_opcheck():
    x = _rand((2, 4, 6))
    w = _rand((4,), seed=1)
    torch.library.opcheck(torch.ops.baracuda.group_norm, (x, 2, w, None, 1e-5))
    rm, rv = torch.zeros(4, device=DEVICE), torch.ones(4, device=DEVICE)
    torch.library.opcheck(torch.ops.baracuda.batch_norm, (x, rm, rv, w, None, True, 0.1, 1e-5))

    def f(x, w):
        return group_norm(batch_norm(x, None, None, w, None, True), 2, w).sum()

    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    out = torch.compile(f, fullgraph=True, backend="aot_eager")(xr, wr)
    assert torch.allclose(out, f(xr, wr), rtol=1e-4, atol=1e-4)


def test_group_norm_error_parity():
    x = _rand((2, 6, 4))
    for fn in (group_norm, F.group_norm):
        with pytest.raises(RuntimeError, match="divisible by num_groups"):
            fn(x, 4)


def _permuted(shape, seed, dtype=torch.float64):
    """[N, C, *spatial] values stored with the spatial dims reversed: they no longer collapse
    to one strided dim."""
    n_sp = len(shape) - 2
    stored = [shape[0], shape[1]] + list(reversed(shape[2:]))
    perm = [0, 1] + list(range(1 + n_sp, 1, -1))
    return _rand(tuple(stored), dtype, seed=seed).permute(perm)


def test_plans_refuse_spatial_dims_that_do_not_collapse_with_a_typed_error():
    """The kernels address the spatial dims as one strided dim: a plan user passing other
    strides gets Unsupported (the torch functions pack such inputs instead, below)."""
    import baracuda as bc
    from baracuda.core.errors import Unsupported

    def _stats(*shape):
        return torch.empty(shape, device=DEVICE)

    x = _permuted((2, 4, 3, 5, 2), 0, torch.float32)
    shape = tuple(x.shape)
    y = torch.empty_like(x)
    w = _rand((4,), seed=1)
    for plan, desc, args in (
        (bc.GroupNormPlan, bc.GroupNormDescriptor(shape, 2, True, False, 1e-5, torch.float32),
         bc.GroupNormArgs(x=x, y=y, mean=_stats(2, 2), rstd=_stats(2, 2), gamma=w)),
        (bc.InstanceNormPlan,
         bc.InstanceNormDescriptor(shape, True, True, False, False, 0.1, 1e-5, torch.float32),
         bc.InstanceNormArgs(x=x, y=y, mean=_stats(2, 4), rstd=_stats(2, 4),
                             gamma=w)),
        (bc.BatchNormPlan,
         bc.BatchNormDescriptor(shape, True, True, False, False, 0.1, 1e-5, torch.float32),
         bc.BatchNormArgs(x=x, y=y, mean=_stats(4), rstd=_stats(4), gamma=w)),
    ):
        with pytest.raises(Unsupported, match="strided dims; the kernel addresses one"):
            plan.select(desc).can_implement(args)


@pytest.mark.parametrize("op", ["group", "instance", "batch"])
def test_functions_take_any_spatial_layout(op):
    """A permuted [N, C, D, H, W] input and a permuted upstream gradient: values and every
    gradient as torch's (the functions pack what the kernels cannot address)."""
    x = _permuted((2, 4, 3, 5, 2), 0).requires_grad_()
    w = _rand((4,), torch.float64, seed=1, requires_grad=True)
    b = _rand((4,), torch.float64, seed=2, requires_grad=True)
    dy = _permuted((2, 4, 3, 5, 2), 3)
    fns = {"group": (lambda t: group_norm(t, 2, w, b), lambda t: F.group_norm(t, 2, w, b)),
           "instance": (lambda t: instance_norm(t, weight=w, bias=b),
                        lambda t: F.instance_norm(t, weight=w, bias=b)),
           "batch": (lambda t: batch_norm(t, None, None, w, b, training=True),
                     lambda t: F.batch_norm(t, None, None, w, b, training=True))}
    ours, theirs = fns[op]
    got, want = ours(x), theirs(x)
    _close_to_torch(got, want, torch.float64)
    for g, r in zip(torch.autograd.grad(got, (x, w, b), dy),
                    torch.autograd.grad(want, (x, w, b), dy)):
        _close_to_torch(g, r, torch.float64)
