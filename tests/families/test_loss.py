"""Loss family: the torch frontend (cross_entropy / nll_loss against torch.nn.functional,
gradcheck in f64, opcheck, torch.compile, error parity, empty / strided / N-d inputs) and the
fused plan's in-place gradient hand-off."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import baracuda as bc
from baracuda.families.loss import torch_api as bt
from conftest import DEVICE, ON_GPU

F64 = dict(dtype=torch.float64, device=DEVICE)


def _inputs(shape, dtype=torch.float64, prob=False, ignore=None, weight=False, gen_seed=0,
            target_dtype=torch.int64):
    g = torch.Generator().manual_seed(gen_seed)
    axis = 1 if len(shape) >= 2 else 0
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(DEVICE, dtype)
    sample = tuple(d for i, d in enumerate(shape) if i != axis)
    if prob:
        t = torch.softmax(torch.randn(shape, generator=g, dtype=torch.float64), axis)
        t = t.to(DEVICE, dtype)
    else:
        t = torch.randint(0, shape[axis], sample, generator=g)
        if ignore is not None and t.numel():
            t.view(-1)[::3] = ignore
        t = t.to(DEVICE, target_dtype)
    w = (torch.rand(shape[axis], generator=g, dtype=torch.float64) + 0.1).to(DEVICE, dtype) \
        if weight else None
    return x, t, w


CE_CASES = [
    # shape, prob, ignore_index, weight, smoothing, reduction
    ((6, 40), False, None, False, 0.0, "mean"),
    ((6, 40), False, -100, True, 0.1, "sum"),
    ((6, 40), False, 3, True, 0.0, "none"),
    ((3, 9, 4), False, 1, True, 0.2, "mean"),
    ((5, 12), True, None, True, 0.1, "mean"),
    ((2, 7, 3), True, None, False, 0.0, "none"),
    ((11,), False, None, True, 0.3, "sum"),
]


@pytest.mark.parametrize("case", CE_CASES, ids=str)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_cross_entropy_matches_torch(case, grad):
    shape, prob, ig, weight, eps, red = case
    x, t, w = _inputs(shape, prob=prob, ignore=ig, weight=weight)
    kw = dict(weight=w, reduction=red, label_smoothing=eps,
              ignore_index=-100 if ig is None else ig)
    xa = x.clone().requires_grad_(grad)
    got = bt.cross_entropy(xa, t, **kw)
    xb = x.clone().requires_grad_(True)
    want = F.cross_entropy(xb, t, **kw)
    torch.testing.assert_close(got, want.detach() if not grad else want)
    if grad:
        g = torch.randn_like(want) * 3
        (ga,) = torch.autograd.grad(got, xa, g)
        (gb,) = torch.autograd.grad(want, xb, g)
        torch.testing.assert_close(ga, gb)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_nll_loss_matches_torch(red):
    x, t, w = _inputs((3, 8, 5), ignore=2, weight=True)
    x = torch.log_softmax(x, 1)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    got = bt.nll_loss(xa, t, w, ignore_index=2, reduction=red)
    want = F.nll_loss(xb, t, w, ignore_index=2, reduction=red)
    torch.testing.assert_close(got, want)
    g = torch.randn_like(want)
    torch.testing.assert_close(torch.autograd.grad(got, xa, g)[0],
                               torch.autograd.grad(want, xb, g)[0])


def test_int32_targets_and_strided_logits():
    x, t, w = _inputs((7, 30), weight=True, target_dtype=torch.int32)
    xs = torch.randn(30, 7, **F64).t()  # class axis strided
    xs.copy_(x)
    got = bt.cross_entropy(xs, t, w)
    torch.testing.assert_close(got, F.cross_entropy(x, t.long(), w))
    got = bt.nll_loss(xs, t[::1], w, reduction="none")
    torch.testing.assert_close(got, F.nll_loss(x, t.long(), w, reduction="none"))


@pytest.mark.parametrize("fn,kw", [
    ("cross_entropy", dict(label_smoothing=0.1)),
    ("cross_entropy", dict(reduction="none")),
    ("cross_entropy_prob", dict(reduction="sum")),
    ("nll_loss", dict()),
])
def test_gradcheck_f64(fn, kw):
    prob = fn.endswith("prob")
    x, t, w = _inputs((3, 5), prob=prob, weight=True, ignore=None if prob else -100)
    x.requires_grad_()
    f = getattr(bt, fn.removesuffix("_prob"))
    assert torch.autograd.gradcheck(lambda x: f(x, t, w, **kw), (x,), fast_mode=True)


def test_fused_backward_scales_by_upstream_and_retain_graph():
    x, t, w = _inputs((4, 9), weight=True)
    x.requires_grad_()
    loss = bt.cross_entropy(x, t, w, label_smoothing=0.1)
    ref = F.cross_entropy(x, t, w, label_smoothing=0.1)
    for g in (2.5, 1.0, -0.5):  # first backward rescales in place, later ones recompute
        gt = torch.tensor(g, **F64)
        (a,) = torch.autograd.grad(loss, x, gt, retain_graph=True)
        (b,) = torch.autograd.grad(ref, x, gt, retain_graph=True)
        torch.testing.assert_close(a, b)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_fused_backward_scale_covers_every_block_of_a_large_gradient():
    """The in-place rescale runs on a persistent grid: at this size each program strides over
    several blocks, and the unused dx output gets no materialized (zero-filled) gradient."""
    x = torch.randn(520, 32771, device="cuda", dtype=torch.bfloat16).requires_grad_()
    t = torch.randint(0, x.shape[1], (x.shape[0],), device="cuda")
    for g in (2.5, -0.75):
        (a,) = torch.autograd.grad(bt.cross_entropy(x, t) * g, x)
        (b,) = torch.autograd.grad(F.cross_entropy(x.float(), t) * g, x)
        torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=1e-6)


def test_backward_accumulates_into_grad():
    x, t, _ = _inputs((4, 9))
    x.requires_grad_()
    bt.cross_entropy(x, t).backward()
    bt.cross_entropy(x, t, reduction="sum").backward()
    xr = x.detach().clone().requires_grad_()
    F.cross_entropy(xr, t).backward()
    F.cross_entropy(xr, t, reduction="sum").backward()
    torch.testing.assert_close(x.grad, xr.grad)


def test_opcheck():
    x, t, w = _inputs((3, 6), weight=True)
    x.requires_grad_()
    ops = torch.ops.baracuda
    torch.library.opcheck(ops.cross_entropy, (x, t, w, "mean", -100, 0.1))
    torch.library.opcheck(ops.cross_entropy_fused, (x, t, w, "sum", -100, 0.0))
    torch.library.opcheck(ops.nll_loss, (x, t, w, "none", -100))
    g = torch.randn((), **F64)
    torch.library.opcheck(ops.cross_entropy_backward, (g, x.detach(), t, w, "mean", -100, 0.1))
    torch.library.opcheck(ops.nll_loss_backward, (g, x.detach(), t, w, "sum", -100))


def test_torch_compile_fullgraph():
    x, t, w = _inputs((4, 7), weight=True)
    x.requires_grad_()

    def f(x):
        return bt.cross_entropy(x, t, w, label_smoothing=0.2) + bt.nll_loss(x, t, w)

    out = torch.compile(f, fullgraph=True, backend="aot_eager")(x)
    out.backward(torch.tensor(2.0, **F64))
    xr = x.detach().clone().requires_grad_()
    ref = F.cross_entropy(xr, t, w, label_smoothing=0.2) + F.nll_loss(xr, t, w)
    ref.backward(torch.tensor(2.0, **F64))
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(x.grad, xr.grad)


def test_empty_and_all_ignored():
    x = torch.randn(0, 5, **F64)
    t = torch.zeros(0, dtype=torch.int64, device=DEVICE)
    assert torch.isnan(bt.cross_entropy(x, t))
    assert bt.cross_entropy(x, t, reduction="sum").item() == 0
    assert bt.cross_entropy(x, t, reduction="none").shape == (0,)
    x2 = torch.randn(2, 5, **F64)
    t2 = torch.tensor([-100, -100], device=DEVICE)
    assert torch.isnan(bt.cross_entropy(x2, t2)) and torch.isnan(F.cross_entropy(x2, t2))
    assert torch.isnan(bt.nll_loss(x2, t2))


def test_masked_logits_and_all_masked_row():
    x, t, _ = _inputs((3, 10))
    x[:, ::2] = -float("inf")
    t = torch.tensor([1, 3, 5], device=DEVICE)
    torch.testing.assert_close(bt.cross_entropy(x, t, reduction="none"),
                               F.cross_entropy(x, t, reduction="none"))
    x[1] = -float("inf")
    got, want = bt.cross_entropy(x, t, reduction="none"), F.cross_entropy(x, t, reduction="none")
    assert torch.isnan(got[1]) and torch.isnan(want[1])
    torch.testing.assert_close(got[[0, 2]], want[[0, 2]])


@pytest.mark.skipif(ON_GPU, reason="CUDA kernels fail a device-side assert instead")
def test_out_of_range_target_plan_gives_nan_under_interpreter():
    # the torch functions raise torch's IndexError first (test_loss_torch_semantics.py); the
    # interpreted kernels cannot raise, so the Plan API poisons that sample
    x, _, _ = _inputs((3, 5))
    t = torch.tensor([1, 7, 2], device=DEVICE)
    desc = bc.CrossEntropyLossDescriptor((3, 5), torch.float64, torch.int64, "none")
    loss = torch.empty(3, **F64)
    bc.CrossEntropyLossPlan.select(desc).run(bc.CrossEntropyLossArgs(x, t, None, loss))
    assert torch.isnan(loss[1]) and not torch.isnan(loss[[0, 2]]).any()


def test_legacy_reduction_args():
    x, t, _ = _inputs((4, 6))
    with pytest.warns(UserWarning):
        want = F.cross_entropy(x, t, size_average=False)
    got = bt.cross_entropy(x, t, size_average=False)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("bad", [
    dict(reduction="avg"),
    dict(label_smoothing=1.5),
    dict(target=torch.zeros(3, dtype=torch.int64)),
    dict(weight=torch.ones(4, dtype=torch.float64)),
    dict(target=torch.rand(4, 6, dtype=torch.float64), ignore_index=2),
])
def test_error_parity(bad):
    x, t, _ = _inputs((4, 6))
    kw = dict(bad)
    t = kw.pop("target", t)
    if isinstance(t, torch.Tensor):
        t = t.to(DEVICE)
    if kw.get("weight") is not None:
        kw["weight"] = kw["weight"].to(DEVICE)
    with pytest.raises((ValueError, RuntimeError)):
        F.cross_entropy(x, t, **kw)
    with pytest.raises((ValueError, RuntimeError)) as info:
        bt.cross_entropy(x, t, **kw)
    assert isinstance(info.value, bc.BaracudaError)


def test_require_deterministic_selects_plans():
    desc = bc.CrossEntropyLossDescriptor((4, 8), torch.bfloat16, torch.int64, "mean")
    plan = bc.CrossEntropyLossFusedPlan.select(desc, bc.PlanPreference(require_deterministic=True))
    assert plan.precision_guarantee.deterministic
    assert plan.workspace_size() > 0


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("shape", [(64, 262144), (256, 32768)])
def test_large_vocab_bf16_fused_matches_torch(shape):
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 3
    t = torch.randint(0, shape[1], (shape[0],), device="cuda")
    t[::5] = -100
    xa, xb = x.clone().requires_grad_(), x.float().requires_grad_()
    la = bt.cross_entropy(xa, t, label_smoothing=0.1)
    lb = F.cross_entropy(xb, t, label_smoothing=0.1)
    la.backward()
    lb.backward()
    torch.testing.assert_close(la.float(), lb, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(xa.grad.float(), xb.grad, rtol=2e-2, atol=1e-5)
    # deterministic: a rerun is bit-identical
    xc = x.clone().requires_grad_()
    lc = bt.cross_entropy(xc, t, label_smoothing=0.1)
    lc.backward()
    assert torch.equal(la, lc) and torch.equal(xa.grad, xc.grad)


def test_wide_offsets_variant(monkeypatch):
    # 64-bit class offsets (lines whose offsets pass 2**31): forced on a small problem
    from baracuda.families.loss import plans as LP

    monkeypatch.setattr(LP, "WIDE_LIMIT", 0)
    x, t, w = _inputs((3, 9, 4), ignore=1, weight=True)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    la = bt.cross_entropy(xa, t, w, ignore_index=1, label_smoothing=0.1)
    lb = F.cross_entropy(xb, t, w, ignore_index=1, label_smoothing=0.1)
    torch.testing.assert_close(la, lb)
    torch.testing.assert_close(torch.autograd.grad(la, xa)[0], torch.autograd.grad(lb, xb)[0])
    lp = torch.log_softmax(x, 1).requires_grad_()
    lq = lp.detach().clone().requires_grad_()
    na, nb = bt.nll_loss(lp, t, w, ignore_index=1), F.nll_loss(lq, t, w, ignore_index=1)
    torch.testing.assert_close(na, nb)
    torch.testing.assert_close(torch.autograd.grad(na, lp)[0], torch.autograd.grad(nb, lq)[0])



CONFIDENT = [(torch.float32, (16, 300)), (torch.float32, (16, 20000))] + ([
    (torch.bfloat16, (16, 65536)), (torch.float16, (16, 131072)), (torch.float32, (16, 131072)),
] if ON_GPU else [])


@pytest.mark.parametrize("reduction", ["none", "sum"])
@pytest.mark.parametrize("dtype,shape", CONFIDENT, ids=str)
def test_confident_gradient_keeps_precision_at_large_logits(dtype, shape, reduction):
    """Logits near 100-130 with each target ~12 above the rest: 1 - p_t is ~1e-4, where a p
    computed from lse = m + log(s) (rounded to the ulp of m, up to 3.8e-6 in f32) loses
    digits: 46x torch's CUDA error at f32 [143, 131072] (GPU fuzz case 20363). The target
    entries' error must stay within a few ulps of 1 (what p_t - 1 carries for anyone) times
    w * upstream, plus the output's rounding, for every kernel variant (one block, looping
    lines; on the GPU the shared-memory fused kernel). Not torch's own error: its CPU kernel
    has the rounding (2-3.5e-6 at (2, 20000)), its CUDA kernel does not."""
    n, c = shape
    g = torch.Generator().manual_seed(c)
    x64 = torch.randn(shape, generator=g, dtype=torch.float64) * 2
    x64 += 100 + 30 * torch.rand(n, 1, generator=g, dtype=torch.float64)  # m differs per line
    t = torch.randint(0, c, (n,), generator=g)
    rows = torch.arange(n)
    x64[rows, t] += 12 + torch.log(torch.tensor(float(c)))  # 1 - p_t ~ 1e-4 at any c
    w = (torch.rand(c, generator=g, dtype=torch.float64) + 0.5).to(DEVICE, dtype)
    up = (torch.rand(n if reduction == "none" else (), generator=g, dtype=torch.float64)
          + 0.5).to(DEVICE, dtype)
    x, t = x64.to(DEVICE, dtype), t.to(DEVICE)

    def grad(fn, x, w, up):
        x = x.detach().clone().requires_grad_(True)
        return torch.autograd.grad(fn(x, t, w, reduction=reduction), x, up)[0]

    ref = grad(F.cross_entropy, x.double(), w.double(), up.double())[rows, t]
    got = grad(bt.cross_entropy, x, w, up)[rows, t].double()
    err = float((got - ref).abs().max())
    bound = (4 * torch.finfo(torch.float32).eps * 2.25
             + 2 * torch.finfo(dtype).eps * float(ref.abs().max()))
    assert err <= bound, (err, bound)
