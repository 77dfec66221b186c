"""Loss family: torch's semantics where its OpInfo samples found us wrong (issue 32) — strided
class weights, gradients of probability targets (and their weights), out-of-range class
indices raising as torch does (IndexError on the CPU, a device-side assert on CUDA)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

import baracuda as bc
from baracuda.families.loss import torch_api as bt
from conftest import DEVICE, ON_GPU


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _strided(t: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous layout (every other element of a wider tensor)."""
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    return wide[..., ::2]


def _grads(fn, x, target, weight, **kw):
    loss = fn(x, target, weight, **kw)
    g = torch.randn(loss.shape, generator=_gen(7), dtype=torch.float64).to(loss.device,
                                                                             loss.dtype)
    wants = [t for t in (x, target, weight) if t is not None and t.requires_grad]
    return loss, torch.autograd.grad(loss, wants, g)


# -- strided class weight (OpInfo's non-contiguous samples) --------------------------------
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 2, 2), (6,)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_strided_weight_matches_torch(shape, reduction, fn):
    g = _gen(1)
    axis = 1 if len(shape) > 1 else 0
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    x = _strided(x.to(DEVICE)).requires_grad_()
    sample = [d for i, d in enumerate(shape) if i != axis]
    t = torch.randint(0, shape[axis], sample, generator=g).to(DEVICE)
    w = _strided((torch.rand(shape[axis], generator=g, dtype=torch.float64) + 0.1).to(DEVICE))
    assert not w.is_contiguous() and not x.is_contiguous()
    ours, ref = getattr(bt, fn), getattr(F, fn)
    la, ga = _grads(ours, x, t, w, reduction=reduction)
    lb, gb = _grads(ref, x, t, w, reduction=reduction)
    torch.testing.assert_close(la, lb)
    torch.testing.assert_close(ga, gb)


def test_plan_refuses_strided_weight():
    """The kernels read the weight as a dense vector: the Plan API says so (typed)."""
    x = torch.randn(4, 6, dtype=torch.float64, device=DEVICE)
    t = torch.randint(0, 6, (4,), device=DEVICE)
    w = _strided(torch.rand(6, dtype=torch.float64, device=DEVICE))
    desc = bc.NllLossDescriptor((4, 6), torch.float64, torch.int64, "none", True)
    plan = bc.NllLossPlan.select(desc)
    with pytest.raises(bc.Unsupported, match="weight"):
        plan.run(bc.NllLossArgs(x, t, w, torch.empty(4, dtype=torch.float64, device=DEVICE)))


# -- probability targets: the target (and weight) gradient ---------------------------------
PROB_CASES = [
    # shape, weight, label_smoothing, reduction
    ((5, 7), False, 0.0, "mean"),
    ((5, 7), True, 0.0, "none"),
    ((5, 7), True, 0.3, "sum"),
    ((3, 4, 5), True, 0.2, "mean"),
    ((6,), False, 0.1, "none"),
    ((2, 3, 2, 2), True, 1.0, "mean"),
    ((3, 9000), True, 0.25, "mean"),  # f64 lines this long take the looped kernel
]


@pytest.mark.parametrize("shape,weight,ls,reduction", PROB_CASES)
def test_probability_target_gradients_match_torch(shape, weight, ls, reduction):
    g = _gen(2)
    axis = 1 if len(shape) > 1 else 0
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(DEVICE)
    q = torch.softmax(torch.randn(shape, generator=g, dtype=torch.float64), axis).to(DEVICE)
    w = (torch.rand(shape[axis], generator=g, dtype=torch.float64) + 0.1).to(DEVICE) \
        if weight else None
    results = []
    for fn in (bt.cross_entropy, F.cross_entropy):
        leaves = [t.clone().requires_grad_() if t is not None else None for t in (x, q, w)]
        results.append(_grads(fn, *leaves, reduction=reduction, label_smoothing=ls))
    (la, ga), (lb, gb) = results
    assert len(ga) == (3 if weight else 2)
    torch.testing.assert_close(la, lb)
    torch.testing.assert_close(ga, gb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_probability_target_gradient_low_precision(dtype):
    """Target only (the input a constant), in the input's dtype, against a float64 torch."""
    g = _gen(3)
    x = torch.randn(6, 33, generator=g, dtype=torch.float64)
    q = torch.softmax(torch.randn(6, 33, generator=g, dtype=torch.float64), 1)
    qa = q.to(DEVICE, dtype).requires_grad_()
    (dt,) = torch.autograd.grad(bt.cross_entropy(x.to(DEVICE, dtype), qa, label_smoothing=0.1),
                                qa)
    qr = q.clone().requires_grad_()
    (ref,) = torch.autograd.grad(F.cross_entropy(x, qr, label_smoothing=0.1), qr)
    assert dt.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(dt.double().cpu(), ref, rtol=tol, atol=tol)


def test_probability_target_gradcheck():
    g = _gen(4)
    x = torch.randn(3, 5, generator=g, dtype=torch.float64).to(DEVICE).requires_grad_()
    q = torch.rand(3, 5, generator=g, dtype=torch.float64).to(DEVICE).requires_grad_()
    w = (torch.rand(5, generator=g, dtype=torch.float64) + 0.1).to(DEVICE).requires_grad_()
    for red in ("mean", "none"):
        assert torch.autograd.gradcheck(
            lambda a, b, c, red=red: bt.cross_entropy(a, b, c, reduction=red,
                                                      label_smoothing=0.2),
            (x, q, w))


def test_probability_target_opcheck_and_compile():
    g = _gen(6)
    x = torch.randn(3, 6, generator=g, dtype=torch.float64).to(DEVICE)
    q = torch.rand(3, 6, generator=g, dtype=torch.float64).to(DEVICE)
    w = (torch.rand(6, generator=g, dtype=torch.float64) + 0.1).to(DEVICE)
    gl = torch.tensor(1.5, dtype=torch.float64, device=DEVICE)
    torch.library.opcheck(torch.ops.baracuda.cross_entropy_backward_target,
                          (gl, x, q, w, "mean", -100, 0.1))
    qa, qb = q.clone().requires_grad_(), q.clone().requires_grad_()
    out = torch.compile(lambda t: bt.cross_entropy(x, t, w, label_smoothing=0.1),
                        fullgraph=True, backend="aot_eager")(qa)
    (da,) = torch.autograd.grad(out, qa, gl)
    (db,) = torch.autograd.grad(F.cross_entropy(x, qb, w, label_smoothing=0.1), qb, gl)
    torch.testing.assert_close(da, db)


def test_plan_refuses_grad_target_for_class_indices():
    desc = bc.CrossEntropyLossBackwardDescriptor((4, 6), torch.float64, torch.int64, "sum")
    plan = bc.CrossEntropyLossBackwardPlan.select(desc)
    f64 = dict(dtype=torch.float64, device=DEVICE)
    x, gl = torch.randn(4, 6, **f64), torch.ones((), **f64)
    t = torch.randint(0, 6, (4,), device=DEVICE)
    with pytest.raises(bc.InvalidProblem):
        plan.run(bc.CrossEntropyLossBackwardArgs(gl, x, t, None, torch.empty_like(x),
                                                 torch.empty(4, **f64)))


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_weight_requiring_grad_with_class_targets_raises_as_torch(fn):
    x = torch.randn(4, 6, dtype=torch.float64, device=DEVICE)
    t = torch.randint(0, 6, (4,), device=DEVICE)
    w = torch.rand(6, dtype=torch.float64, device=DEVICE).requires_grad_()
    with pytest.raises(RuntimeError) as ref:
        getattr(F, fn)(x, t, w)
    with pytest.raises(RuntimeError) as ours:
        getattr(bt, fn)(x, t, w)
    assert str(ours.value) == str(ref.value)


# -- class indices out of range -------------------------------------------------------------
OUT_OF_RANGE = [
    # shape, bad target value, position, ignore_index, kwargs
    ((4, 8), 99, (1,), -100, {}),
    ((4, 8), -5, (2,), -100, {}),
    ((4, 8), 8, (0,), 3, {"label_smoothing": 0.1}),
    ((2, 8, 3), 99, (1, 2), -100, {}),
    ((8,), 99, (), -100, {}),
]


@pytest.mark.skipif(ON_GPU, reason="CPU tensors: the host check (CUDA asserts on the device)")
@pytest.mark.parametrize("shape,bad,pos,ignore,kw", OUT_OF_RANGE)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_out_of_range_target_raises_torch_index_error(shape, bad, pos, ignore, kw, reduction,
                                                      fn):
    if fn == "nll_loss" and kw:
        return
    axis = 1 if len(shape) > 1 else 0
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    sample = [d for i, d in enumerate(shape) if i != axis]
    t = torch.randint(0, shape[axis], sample, generator=_gen(5))
    t[pos] = bad
    args = dict(ignore_index=ignore, reduction=reduction, **kw)
    with pytest.raises(IndexError) as ref:
        getattr(F, fn)(x, t, **args)
    with pytest.raises(IndexError) as ours:
        getattr(bt, fn)(x, t, **args)
    assert str(ours.value) == str(ref.value)
    # the same value as ignore_index is no error, in torch and here
    args["ignore_index"] = bad
    torch.testing.assert_close(getattr(bt, fn)(x, t, **args), getattr(F, fn)(x, t, **args),
                               equal_nan=True)  # one sample, ignored: mean is 0 / 0


_ASSERT_SCRIPT = textwrap.dedent("""
    import sys, torch
    from baracuda.families.loss import torch_api as bt
    x = torch.randn(64, 8, device="cuda", requires_grad=sys.argv[3] == "grad")
    t = torch.randint(0, 8, (64,), device="cuda")
    t[17] = int(sys.argv[2])
    getattr(bt, sys.argv[1])(x, t, reduction="mean")
    torch.cuda.synchronize()
    print("NO ASSERT")
""")


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("fn,bad,grad", [("cross_entropy", 99, ""), ("cross_entropy", -5, "grad"),
                                         ("nll_loss", 99, ""), ("nll_loss", -5, "grad")])
def test_out_of_range_target_device_assert_on_cuda(fn, bad, grad):
    """As torch's CUDA kernels: a device-side assert, no host sync (a subprocess: the assert
    ends its CUDA context)."""
    run = subprocess.run([sys.executable, "-c", _ASSERT_SCRIPT, fn, str(bad), grad],
                         capture_output=True, text=True, timeout=600)
    assert "NO ASSERT" not in run.stdout
    assert run.returncode != 0
    assert "out of bounds" in run.stderr or "device-side assert" in run.stderr, run.stderr[-2000:]
