"""Fused linear + cross-entropy: the torch frontend against torch's F.linear_cross_entropy
(where the installed torch has it) and the unfused float64 composition, soft-cap and z-loss
against the float64 reference, every gradient, chunking, the in-place gradient hand-off,
opcheck, torch.compile, error parity, empty and 1-d inputs, determinism."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import baracuda as bc
from baracuda.families.loss import reference_linear as ref
from baracuda.families.loss import torch_api as bt
from conftest import DEVICE, ON_GPU

HAS_TORCH_LCE = hasattr(F, "linear_cross_entropy")
needs_torch_lce = pytest.mark.skipif(not HAS_TORCH_LCE, reason="this torch has no "
                                     "F.linear_cross_entropy (added after 2.11)")


def _inputs(n, h, c, dtype=torch.float64, bias=False, weight=False, ignore=False, seed=0,
            strided=False):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=1.0):
        return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(DEVICE, dtype)

    x = rnd(n, 2 * h if strided else h)
    x = x[:, ::2] if strided else x
    w_lin = rnd(c, h, scale=2 * h ** -0.5)
    b = rnd(c) if bias else None
    w = ((torch.rand(c, generator=g, dtype=torch.float64) + 0.2).to(DEVICE, dtype)
         if weight else None)
    t = torch.randint(0, c, (n,), generator=g)
    if ignore and n:
        t[::3] = -100
    return x, w_lin, t.to(DEVICE), b, w


def _grads(loss, tensors, g=None):
    return torch.autograd.grad(loss, tensors, g)


CASES = [
    # n, h, c, bias, weight, ignore, smoothing, reduction
    (13, 8, 29, False, False, False, 0.0, "mean"),
    (13, 8, 29, True, True, True, 0.1, "sum"),
    (9, 5, 17, True, False, True, 0.0, "none"),
    (10, 6, 33, False, True, True, 0.25, "mean"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_unfused_float64_and_gradients(case):
    n, h, c, bias, weight, ignore, eps, red = case
    x, w_lin, t, b, w = _inputs(n, h, c, bias=bias, weight=weight, ignore=ignore)
    leaves = [x.requires_grad_(), w_lin.requires_grad_()] + ([b.requires_grad_()] if bias else [])
    kw = dict(weight=w, reduction=red, label_smoothing=eps)
    # a small chunk: several chunks per problem (the chunk loop and dW accumulation)
    got = bt.linear_cross_entropy(x, w_lin, t, linear_bias=b, options=_chunk(4), **kw)
    want = F.cross_entropy(F.linear(x, w_lin, b), t, **kw)
    torch.testing.assert_close(got, want)
    up = torch.randn_like(want) * 3
    for a, r in zip(_grads(got, leaves, up), _grads(want, leaves, up)):
        torch.testing.assert_close(a, r)


def _chunk(rows):
    return type("Options", (), {"batch_chunk_size": rows})()


@needs_torch_lce
@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_matches_torch_linear_cross_entropy(red):
    x, w_lin, t, b, w = _inputs(11, 7, 23, bias=True, weight=True, ignore=True,
                                dtype=torch.float32, strided=True)
    leaves = [x.requires_grad_(), w_lin.requires_grad_(), b.requires_grad_()]
    kw = dict(linear_bias=b, weight=w, reduction=red, label_smoothing=0.05)
    got = bt.linear_cross_entropy(x, w_lin, t, **kw)
    want = F.linear_cross_entropy(x, w_lin, t, **kw)
    torch.testing.assert_close(got, want)
    up = torch.randn_like(want)
    for a, r in zip(_grads(got, leaves, up), _grads(want, leaves, up)):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_softcap_and_z_loss_against_reference(red, dtype):
    x, w_lin, t, b, w = _inputs(14, 8, 37, dtype=dtype, bias=True, weight=True, ignore=True)
    leaves = [x.requires_grad_(), w_lin.requires_grad_(), b.requires_grad_()]
    opts = dict(reduction=red, label_smoothing=0.1, softcap=2.5, z_loss=0.02)
    loss, z = bt.linear_cross_entropy(x, w_lin, t, linear_bias=b, weight=w,
                                      return_z_loss=True, options=_chunk(5), **opts)
    assert not z.requires_grad
    up = torch.randn(loss.shape, dtype=torch.float64).to(DEVICE, dtype)
    got = _grads(loss, leaves, up)
    want_loss, want_z, want = ref.linear_cross_entropy(x, w_lin, t, b, w, grad=up, **opts)
    tol = dict(rtol=1e-9, atol=1e-11) if dtype == torch.float64 else dict(rtol=3e-2, atol=3e-2)
    torch.testing.assert_close(loss.double().cpu(), want_loss, **tol)
    torch.testing.assert_close(z.double().cpu(), want_z, **tol)
    for a, r in zip(got, want):
        scale = r.abs().max().item()
        torch.testing.assert_close(a.double().cpu() / scale, r / scale, **tol)


def test_z_loss_convention_is_mean_over_kept_tokens():
    """z-loss = coef * mean over kept tokens of lse^2 (Liger / PaLM), added to the loss."""
    x, w_lin, t, _, w = _inputs(12, 6, 19, weight=True, ignore=True)
    loss, z = bt.linear_cross_entropy(x, w_lin, t, weight=w, z_loss=0.5, return_z_loss=True)
    logits = F.linear(x, w_lin)
    keep = t != -100
    lse = torch.logsumexp(logits, -1)[keep]
    torch.testing.assert_close(z, 0.5 * (lse ** 2).mean())
    torch.testing.assert_close(loss, F.cross_entropy(logits, t, w) + z)


def test_unbatched_input_and_empty():
    x, w_lin, t, b, _ = _inputs(1, 6, 10, bias=True)
    for red in ("mean", "sum", "none"):
        got = bt.linear_cross_entropy(x[0], w_lin, t[0], linear_bias=b, reduction=red)
        want = F.cross_entropy(F.linear(x[0], w_lin, b), t[0], reduction=red)
        assert got.shape == want.shape == ()
        torch.testing.assert_close(got, want)
    xe = torch.randn(0, 6, dtype=torch.float64, device=DEVICE, requires_grad=True)
    te = torch.zeros(0, dtype=torch.int64, device=DEVICE)
    w_req = w_lin.clone().requires_grad_()
    loss = bt.linear_cross_entropy(xe, w_req, te)
    assert torch.isnan(loss)
    loss_sum = bt.linear_cross_entropy(xe, w_req, te, reduction="sum")
    assert loss_sum.item() == 0
    (dw,) = torch.autograd.grad(loss_sum, w_req)
    assert torch.equal(dw, torch.zeros_like(dw))
    assert bt.linear_cross_entropy(xe, w_lin, te, reduction="none").shape == (0,)


def test_probability_targets_and_k_dimensional_weights_compose():
    x, w_lin, _, _, _ = _inputs(5, 4, 6)
    g = torch.Generator().manual_seed(3)
    prob = torch.softmax(torch.randn(5, 6, generator=g, dtype=torch.float64), 1).to(DEVICE)
    torch.testing.assert_close(bt.linear_cross_entropy(x, w_lin, prob),
                               F.cross_entropy(F.linear(x, w_lin), prob))
    w3 = torch.randn(3, 2, 4, dtype=torch.float64, device=DEVICE)
    t3 = torch.randint(0, 3, (5, 2), device=DEVICE)
    want = F.cross_entropy(F.linear(x, w3.reshape(6, 4)).reshape(5, 3, 2), t3)
    torch.testing.assert_close(bt.linear_cross_entropy(x, w3, t3), want)


def test_fused_backward_scales_and_retain_graph_recomputes():
    x, w_lin, t, b, _ = _inputs(9, 5, 21, bias=True, ignore=True)
    leaves = [x.requires_grad_(), w_lin.requires_grad_(), b.requires_grad_()]
    loss = bt.linear_cross_entropy(x, w_lin, t, linear_bias=b, softcap=3.0)
    want = ref.linear_cross_entropy(x, w_lin, t, b, None, softcap=3.0, grad="ones")[2]
    for g in (2.5, 1.0, -0.5):  # the first hands out the forward's gradients, later ones recompute
        got = torch.autograd.grad(loss, leaves, torch.tensor(g, dtype=torch.float64,
                                                             device=DEVICE), retain_graph=True)
        for a, r in zip(got, want):
            torch.testing.assert_close(a.cpu(), r * g)


def test_only_the_gradients_asked_for():
    x, w_lin, t, b, _ = _inputs(7, 4, 11, bias=True)
    w_lin.requires_grad_()
    loss = bt.linear_cross_entropy(x, w_lin, t, linear_bias=b)
    (dw,) = torch.autograd.grad(loss, w_lin)
    torch.testing.assert_close(dw.cpu(), ref.linear_cross_entropy(x, w_lin, t, b, None,
                                                                  grad="ones")[2][1])
    with torch.no_grad():
        torch.testing.assert_close(bt.linear_cross_entropy(x, w_lin, t, linear_bias=b),
                                   loss.detach())


def test_deterministic_reruns():
    x, w_lin, t, b, _ = _inputs(23, 8, 31, dtype=torch.float32, bias=True, ignore=True)
    leaves = [x.requires_grad_(), w_lin.requires_grad_(), b.requires_grad_()]

    def step():
        loss = bt.linear_cross_entropy(x, w_lin, t, linear_bias=b, z_loss=1e-3,
                                       options=_chunk(6))
        return (loss, *_grads(loss, leaves))

    first = step()
    for a, r in zip(step(), first):
        assert torch.equal(a, r)


def test_opcheck():
    x, w_lin, t, b, w = _inputs(6, 4, 9, bias=True, weight=True, ignore=True)
    ops = torch.ops.baracuda
    opts = ("mean", -100, 0.1, 2.0, 0.01, 4)
    torch.library.opcheck(ops.linear_cross_entropy, (x, w_lin, t, b, w, *opts))
    torch.library.opcheck(ops.linear_cross_entropy_fused,
                          (x, w_lin, t, b, w, *opts, True, True, True))
    g = torch.randn(6, dtype=torch.float64, device=DEVICE)
    torch.library.opcheck(ops.linear_cross_entropy_backward,
                          (g, x, w_lin, t, b, w, "none", -100, 0.0, 0.0, 0.0, 0, True, True,
                           False))


def test_torch_compile_fullgraph():
    x, w_lin, t, b, _ = _inputs(8, 5, 13, bias=True, ignore=True)
    leaves = [x.requires_grad_(), w_lin.requires_grad_()]

    def f(x, w_lin):
        return bt.linear_cross_entropy(x, w_lin, t, linear_bias=b, z_loss=0.01)

    out = torch.compile(f, fullgraph=True, backend="aot_eager")(*leaves)
    got = _grads(out * 2, leaves)
    want_loss, _, want = ref.linear_cross_entropy(x, w_lin, t, b, None, z_loss=0.01,
                                                  grad=torch.tensor(2.0, dtype=torch.float64))
    torch.testing.assert_close(out.detach().cpu(), want_loss)
    for a, r in zip(got, want):
        torch.testing.assert_close(a.cpu(), r)


def test_errors_match_torch():
    x, w_lin, t, b, w = _inputs(4, 3, 5, dtype=torch.float32)
    bad = [
        dict(args=(x, w_lin.double(), t)),
        dict(args=(x, w_lin, t), kw=dict(linear_bias=torch.randn(5).double().to(DEVICE))),
        dict(args=(x, w_lin, t), kw=dict(weight=torch.rand(4, device=DEVICE))),
        dict(args=(x, w_lin, t), kw=dict(reduction="avg")),
        dict(args=(x, w_lin, t), kw=dict(label_smoothing=1.5)),
        dict(args=(x, w_lin, t.float())),
        dict(args=(x, w_lin, t[:3])),
        dict(args=(x[:, :2], w_lin, t)),
        dict(args=(x.unsqueeze(0), w_lin, t)),
    ]
    if not ON_GPU:  # CUDA kernels fail a device-side assert instead (no sync per call)
        bad.append(dict(args=(x, w_lin, t + 10)))
    for item in bad:
        kw = item.get("kw", {})
        with pytest.raises(Exception) as ours:
            bt.linear_cross_entropy(*item["args"], **kw)
        if HAS_TORCH_LCE:
            with pytest.raises(Exception) as theirs:
                F.linear_cross_entropy(*item["args"], **kw)
            assert type(ours.value) is type(theirs.value), (item, ours.value, theirs.value)
    with pytest.raises(ValueError, match="softcap"):
        bt.linear_cross_entropy(x, w_lin, t, softcap=-1.0)
    with pytest.raises(ValueError, match="z_loss"):
        bt.linear_cross_entropy(x, w_lin, t, z_loss=float("nan"))


def test_plan_api_refuses_fused_gradients_for_reduction_none():
    d = bc.LinearCrossEntropyDescriptor(4, 3, 5, torch.float32, reduction="none")
    plan = bc.LinearCrossEntropyPlan.select(d)
    x, w_lin, t, _, _ = _inputs(4, 3, 5, dtype=torch.float32)
    args = bc.LinearCrossEntropyArgs(x, w_lin, t, None, None, torch.empty(4, device=DEVICE),
                                     torch.empty(4, device=DEVICE),
                                     torch.empty(4, 3, device=DEVICE))
    with pytest.raises(bc.InvalidProblem, match="reduction"):
        plan.can_implement(args)


def test_auto_chunk_holds_the_memory_budget():
    from baracuda.families.loss.plans_linear import CHUNK_BYTES, chunk_rows
    d = bc.LinearCrossEntropyDescriptor(8192, 4096, 128256, torch.bfloat16)
    rows = chunk_rows(d)
    assert rows % 128 == 0 and rows * 128256 * 2 <= CHUNK_BYTES
    assert bc.LinearCrossEntropyPlan.select(d).workspace_size() < CHUNK_BYTES + 2**20


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device")
def test_gpu_bf16_large_vocab_memory_and_values():
    """A real vocabulary in bf16: values against the unfused path in f32, and the peak memory
    of ours well under the unfused path's."""
    n, h, c = 2048, 1024, 65536
    x = torch.randn(n, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w_lin = (torch.randn(c, h, device="cuda", dtype=torch.bfloat16) * h ** -0.5
             ).requires_grad_()
    t = torch.randint(0, c, (n,), device="cuda")

    def peak(fn):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        out = fn()
        torch.cuda.synchronize()
        return out, torch.cuda.max_memory_allocated() - base

    opts = _chunk(512)  # 64 MiB of logits per chunk: a quarter of the whole logits
    (loss, dx, dw), ours = peak(lambda: (lambda lo: (lo, *_grads(lo, (x, w_lin))))(
        bt.linear_cross_entropy(x, w_lin, t, options=opts)))
    (rl, rdx, rdw), unfused = peak(lambda: (lambda lo: (lo, *_grads(lo, (x, w_lin))))(
        F.cross_entropy(F.linear(x, w_lin), t)))
    torch.testing.assert_close(loss.float(), rl.float(), rtol=1e-2, atol=1e-2)
    for a, r in ((dx, rdx), (dw, rdw)):  # bf16 gradients, relative to their largest entry
        scale = r.float().abs().max()
        assert ((a.float() - r.float()).abs().max() / scale).item() < 2e-2
    assert ours <= 0.5 * unfused, (ours, unfused)
