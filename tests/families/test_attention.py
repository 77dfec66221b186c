"""Attention frontend tests: torch parity, gradcheck (f64), opcheck, torch.compile, error
parity, dropout statistics and exact replay, RoPE and KV-cache frontends."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import baracuda as bc
from baracuda.families.attention import reference as ref
from baracuda.families.attention import torch_api as api
from baracuda.families.attention import torch_rope
from conftest import DEVICE

sdpa = api.scaled_dot_product_attention


def _qkv(b, h, hkv, sq, sk, d, dv, dtype=torch.float64, grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(DEVICE, dtype)  # noqa
    q, k, v = mk(b, h, sq, d), mk(b, hkv, sk, d), mk(b, hkv, sk, dv)
    if grad:
        for t in (q, k, v):
            t.requires_grad_()
    return q, k, v


@pytest.mark.parametrize("case", [
    dict(kw={}, hkv=2),
    dict(kw={"is_causal": True}, hkv=2),
    dict(kw={"enable_gqa": True}, hkv=1),
    dict(kw={"scale": 0.3, "enable_gqa": True}, hkv=1, mask="bool2d"),
    dict(kw={}, hkv=2, mask="float"),
])
def test_matches_torch_f32(case):
    q, k, v = _qkv(2, 2, case["hkv"], 9, 13, 16, 8, torch.float32)
    kw = dict(case["kw"])
    if case.get("mask") == "bool2d":
        m = torch.rand(9, 13, generator=torch.Generator().manual_seed(1)) > 0.3
        kw["attn_mask"] = m.to(DEVICE)
    elif case.get("mask") == "float":
        kw["attn_mask"] = torch.randn(2, 1, 9, 13).to(DEVICE)
    got = sdpa(q, k, v, **kw)
    want = F.scaled_dot_product_attention(q.cpu(), k.cpu(), v.cpu(),
                                          **{a: (b.cpu() if torch.is_tensor(b) else b)
                                             for a, b in kw.items()})
    torch.testing.assert_close(got.cpu(), want, atol=2e-5, rtol=2e-5)


def test_three_d_inputs_and_causal_lower_right():
    from torch.nn.attention.bias import causal_lower_right

    q, k, v = _qkv(1, 3, 3, 5, 9, 8, 8)
    got = sdpa(q[0], k[0], v[0], attn_mask=causal_lower_right(5, 9))
    want, _ = ref.sdpa_forward(q, k, v, scale=1 / math.sqrt(8), causal_offset=4)
    torch.testing.assert_close(got.cpu(), want[0], atol=1e-12, rtol=1e-10)


def test_gradcheck_f64_gqa_mask_causal():
    q, k, v = _qkv(1, 2, 1, 5, 7, 8, 4, grad=True)
    mask = torch.randn(1, 1, 5, 7, dtype=torch.float64, device=DEVICE)
    fn = lambda q, k, v: sdpa(q, k, v, attn_mask=mask, is_causal=True,  # noqa: E731
                              enable_gqa=True)
    assert torch.autograd.gradcheck(fn, (q, k, v), fast_mode=True)


def test_backward_matches_reference_bool_mask_fully_masked_row():
    q, k, v = _qkv(1, 2, 2, 6, 5, 16, 16, grad=True)
    m = torch.ones(6, 5, dtype=torch.bool)
    m[2] = False
    out = sdpa(q, k, v, attn_mask=m.to(DEVICE))
    assert torch.all(out[:, :, 2] == 0)
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, (q, k, v), g)
    want = ref.sdpa_backward(q, k, v, g, m, scale=0.25, mask_is_bool=True)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.cpu(), b, atol=1e-12, rtol=1e-10)


def test_single_key_gradients_are_zero():
    q, k, v = _qkv(1, 1, 1, 7, 1, 16, 16, torch.float32, grad=True)
    out = sdpa(q, k, v)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), torch.randn_like(out))
    assert dq.abs().max() < 1e-5 and dk.abs().max() < 1e-5


def test_opcheck_forward_and_backward():
    q, k, v = _qkv(1, 2, 1, 5, 6, 16, 16, torch.float32, grad=True)
    mask = torch.zeros(1, 2, 5, 6, device=DEVICE)
    torch.library.opcheck(api._sdpa_fwd, (q, k, v, mask, None, 0.0, 1, 0.25))
    out, lse = api._sdpa_fwd(q, k, v, None, None, 0.0, 0, 0.25)
    torch.library.opcheck(api._sdpa_bwd, (torch.randn_like(out), q.detach(), k.detach(),
                                         v.detach(), out.detach(), lse, None, None, 0.0, 0,
                                         0.25))


def test_torch_compile_fullgraph():
    q, k, v = _qkv(1, 2, 2, 8, 8, 16, 16, torch.float32, grad=True)

    def f(q, k, v):
        return sdpa(q, k, v, is_causal=True).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = torch.autograd.grad(compiled(q, k, v), (q, k, v))
    want = torch.autograd.grad(f(q, k, v), (q, k, v))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def test_error_parity():
    q, k, v = _qkv(1, 4, 2, 5, 6, 8, 8, torch.float32)
    with pytest.raises(RuntimeError):
        sdpa(q, k, v)  # GQA without enable_gqa
    with pytest.raises(RuntimeError):
        sdpa(q, k[:, :1].expand(1, 3, 6, 8), v[:, :1].expand(1, 3, 6, 8), enable_gqa=True)
    with pytest.raises(RuntimeError):
        sdpa(q, k, v, attn_mask=torch.zeros(5, 6, dtype=torch.float64), enable_gqa=True)
    with pytest.raises(RuntimeError):
        sdpa(q, k, v, attn_mask=torch.zeros(5, 7, dtype=torch.bool), enable_gqa=True)
    with pytest.raises(RuntimeError):
        sdpa(q, k[..., :4], v, enable_gqa=True)


def test_descriptor_errors_are_typed():
    with pytest.raises(bc.InvalidProblem):
        bc.SdpaPlan.select(bc.SdpaDescriptor(1, 6, 4, 8, 8, 16, 16, 0.25, torch.float16))
    with pytest.raises(bc.Unsupported):
        bc.SdpaPlan.select(bc.SdpaDescriptor(1, 4, 4, 8, 8, 512, 16, 0.25, torch.float16))


def test_empty_and_strided_inputs():
    q, k, v = _qkv(1, 2, 2, 0, 4, 8, 8, torch.float32)
    assert sdpa(q, k, v).shape == (1, 2, 0, 8)
    q, k, v = _qkv(2, 3, 3, 7, 7, 16, 16, torch.float32)
    qt = q.transpose(1, 2).contiguous().transpose(1, 2)  # [B, S, H, D] memory
    torch.testing.assert_close(sdpa(qt, k, v), sdpa(q, k, v), atol=0, rtol=0)


def _dropout_run(p, seed, grad=False):
    """V = identity (Sk = Dv), so out = dropout(P) V = dropout(P): the keep-mask is visible."""
    q, k, _ = _qkv(1, 2, 2, 64, 16, 16, 16, torch.float32, seed=3)
    v = torch.eye(16, device=DEVICE).expand(1, 2, 16, 16).contiguous()
    if grad:
        for t in (q, k, v):
            t.requires_grad_()
    torch.manual_seed(seed)
    return q, k, v, sdpa(q, k, v, dropout_p=p)


def test_dropout_statistics_and_replay():
    p = 0.3
    q, k, v, out = _dropout_run(p, seed=11)
    keep = out != 0
    frac = keep.double().mean().item()
    assert abs(frac - (1 - p)) < 0.03, frac  # 2048 draws: 4 sigma is about 0.04
    probs, _ = ref.sdpa_forward(q, k, v.detach(), scale=0.25)
    torch.testing.assert_close(out.cpu().double()[keep.cpu()],
                               (probs / (1 - p))[keep.cpu()], atol=1e-6, rtol=1e-5)
    _, _, _, again = _dropout_run(p, seed=11)
    assert torch.equal(out, again)
    _, _, _, other = _dropout_run(p, seed=12)
    assert not torch.equal(out != 0, other != 0)


def test_dropout_backward_replays_mask():
    p = 0.25
    q, k, v, out = _dropout_run(p, seed=5, grad=True)
    keep = (out.detach() != 0).cpu()
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, (q, k, v), g)
    want = ref.sdpa_backward(q, k, v, g, scale=0.25, keep=keep, dropout_p=p)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.cpu().double(), b, atol=2e-5, rtol=2e-4)


def _tables(p, r):
    ang = torch.rand(p, r // 2, dtype=torch.float64) * 6
    return ang.cos(), ang.sin()


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_gradcheck_and_reference(interleaved):
    x = torch.randn(2, 5, 3, 12, dtype=torch.float64, device=DEVICE, requires_grad=True)
    cos, sin = (t.to(DEVICE) for t in _tables(9, 8))
    pos = torch.randint(0, 9, (2, 5), device=DEVICE)
    y = torch_rope.apply_rotary_emb(x, cos, sin, interleaved, pos)
    want = ref.rope(x, cos, sin, pos, 1, 8, interleaved)
    torch.testing.assert_close(y.cpu(), want, atol=1e-12, rtol=1e-10)
    fn = lambda x: torch_rope.apply_rotary_emb(x, cos, sin, interleaved, pos)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))


def test_rope_matches_llama_rotate_half_and_compiles():
    x = torch.randn(1, 6, 2, 8, device=DEVICE)
    cos, sin = (t.float().to(DEVICE) for t in _tables(6, 8))
    c, s = torch.cat([cos, cos], -1)[None, :, None], torch.cat([sin, sin], -1)[None, :, None]
    rot = torch.cat([-x[..., 4:], x[..., :4]], -1)
    want = x * c + rot * s
    f = torch.compile(lambda x: torch_rope.apply_rotary_emb(x, cos, sin), fullgraph=True,
                      backend="aot_eager")
    torch.testing.assert_close(f(x), want, atol=1e-6, rtol=1e-5)
    torch.library.opcheck(torch_rope._rope_op, (x, cos, sin, None, 1, False))


def test_kv_cache_append_plan():
    d = bc.KvCacheAppendDescriptor(2, 1, 8, 3, 16, 16, torch.float32)
    plan = bc.KvCacheAppendPlan.select(d)
    kc = torch.zeros(2, 1, 8, 16, device=DEVICE)
    vc = torch.zeros(2, 1, 8, 16, device=DEVICE)
    kn, vn = torch.randn(2, 1, 3, 16, device=DEVICE), torch.randn(2, 1, 3, 16, device=DEVICE)
    starts = torch.tensor([0, 6], dtype=torch.int32, device=DEVICE)
    plan.run(bc.KvCacheAppendArgs(kn, vn, starts, kc, vc))
    assert torch.equal(kc[0, :, :3], kn[0]) and torch.equal(kc[1, :, 6:], kn[1, :, :2])
    assert torch.equal(vc[0, :, 3:], torch.zeros_like(vc[0, :, 3:]))


def test_tf32_candidate_only_when_allowed():
    d = bc.SdpaDescriptor(1, 2, 2, 20, 24, 32, 32, 0.2, torch.float32)
    assert bc.SdpaPlan.select(d).sku.candidate == "triton_flash_fwd"
    plan = bc.SdpaPlan.select(d, bc.PlanPreference(allow_tf32=True))
    assert plan.sku.candidate == "triton_flash_fwd_tf32"
    assert plan.precision_guarantee.math_precision is bc.MathPrecision.TF32
    q, k, v = _qkv(1, 2, 2, 20, 24, 32, 32, torch.float32)
    out = torch.empty(1, 2, 20, 32, device=DEVICE)
    lse = torch.empty(1, 2, 20, device=DEVICE)
    plan.run(bc.SdpaArgs(q, k, v, out, lse))
    want, _ = ref.sdpa_forward(q, k, v, scale=0.2)
    torch.testing.assert_close(out.cpu().double(), want, atol=5e-3, rtol=5e-3)
    assert bc.SdpaBackwardPlan.select(bc.SdpaBackwardDescriptor(
        1, 2, 2, 20, 24, 32, 32, 0.2, torch.float32),
        bc.PlanPreference(require_deterministic=True)).precision_guarantee.deterministic
