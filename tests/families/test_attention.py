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


def test_backward_follows_torch_deterministic_algorithms(monkeypatch):
    """torch.use_deterministic_algorithms(True) makes the frontend ask for a deterministic
    backward plan (on CUDA the default cuDNN backward sums dQ with float atomics)."""
    seen = []
    real = api.run_plan

    def spy(plan_cls, desc, args, pref=api._DEFAULT):
        seen.append((plan_cls.__name__, pref.require_deterministic))
        return real(plan_cls, desc, args, pref)

    monkeypatch.setattr(api, "run_plan", spy)
    q, k, v = _qkv(1, 2, 2, 9, 13, 16, 16, torch.float32, grad=True)
    prev = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        torch.use_deterministic_algorithms(True, warn_only=True)
        det = torch.autograd.grad(sdpa(q, k, v, is_causal=True).sum(), (q, k, v))
    finally:
        torch.use_deterministic_algorithms(prev, warn_only=warn)
    assert ("SdpaBackwardPlan", True) in seen
    seen.clear()
    again = torch.autograd.grad(sdpa(q, k, v, is_causal=True).sum(), (q, k, v))
    assert ("SdpaBackwardPlan", False) in seen
    for a, b in zip(det, again):  # the Triton backward is deterministic either way
        assert torch.equal(a, b)


def _registered(op):
    """The torch custom op behind a frontend callable (the factory may wrap it in an eager
    fast path)."""
    return getattr(op, "custom_op", op)


def test_opcheck_forward_and_backward():
    q, k, v = _qkv(1, 2, 1, 5, 6, 16, 16, torch.float32, grad=True)
    mask = torch.zeros(1, 2, 5, 6, device=DEVICE)
    torch.library.opcheck(_registered(api._sdpa_fwd), (q, k, v, mask, None, 0.0, 1, 0.25))
    out, lse = api._sdpa_fwd(q, k, v, None, None, 0.0, 0, 0.25)
    torch.library.opcheck(_registered(api._sdpa_bwd), (
        torch.randn_like(out), q.detach(), k.detach(), v.detach(), out.detach(), lse, None, None,
        0.0, 0, 0.25))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_compile_fullgraph(dtype):
    # (bf16: the frontend's layout checks must trace: no data pointer under the compiler)
    q, k, v = _qkv(1, 2, 2, 8, 8, 16, 16, dtype, grad=True)

    def f(q, k, v):
        return sdpa(q, k, v, is_causal=True).float().sum()

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
    torch.library.opcheck(_registered(torch_rope._rope_op), (x, cos, sin, None, 1, False))


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


# -- cuDNN candidates ---------------------------------------------------------------------------

from baracuda.core.tolerance import compare, tolerance_for  # noqa: E402
from baracuda.core.vocab import ArchSku, BackendKind, PlanPreference  # noqa: E402
from baracuda.families.attention import plans_cudnn  # noqa: E402

C = bc.CausalKind


@pytest.mark.parametrize("dtype,sq,sk,causal", [
    (torch.float64, 48, 80, "top_left"),
    (torch.float64, 48, 80, "bottom_right"),
    (torch.float64, 80, 48, "bottom_right"),  # rows that see no key at all
    (torch.float64, 48, 80, "none"),
    (torch.float32, 64, 96, "top_left"),
    (torch.float32, 96, 64, "bottom_right"),
])
def test_triton_backward_even_tiles_and_causal_split(dtype, sq, sk, causal):
    """Tile-aligned lengths and head dims take the kernels' EVEN path (no bound masks) and the
    causal split (only the tiles across the diagonal are masked); against the f64 reference,
    with GQA, and rerun bit-identically (the Triton backward is deterministic)."""
    d = 16 if dtype is torch.float64 else 32
    ck = bc.CausalKind(causal)
    desc = bc.SdpaBackwardDescriptor(2, 4, 2, sq, sk, d, d, 0.3, dtype, ck)
    plan = bc.SdpaBackwardPlan.select(desc, PlanPreference(prefer_backend=BackendKind.TRITON))
    g = torch.Generator().manual_seed(sq * 7 + sk)
    mk = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(DEVICE, dtype)  # noqa
    q, k, v, do = mk(2, 4, sq, d), mk(2, 2, sk, d), mk(2, 2, sk, d), mk(2, 4, sq, d)
    off = None if ck is C.NONE else desc.causal_offset
    out, lse = ref.sdpa_forward(q, k, v, scale=0.3, causal_offset=off)
    out, lse = out.to(DEVICE, dtype), lse.to(DEVICE, dtype if dtype is torch.float64
                                              else torch.float32)
    grads = [torch.full_like(x, float("nan")) for x in (q, k, v)]
    args = bc.SdpaBackwardArgs(q, k, v, out, do, lse, *grads)
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device=DEVICE)
    plan.run(args, workspace=ws)
    want = ref.sdpa_backward(q, k, v, do, scale=0.3, causal_offset=off)
    tol = 1e-10 if dtype is torch.float64 else 2e-4
    for got, exp in zip(grads, want):
        torch.testing.assert_close(got.cpu().double(), exp, atol=tol, rtol=tol)
    first = [x.clone() for x in grads]
    plan.run(args, workspace=ws)
    assert all(torch.equal(a, b) for a, b in zip(first, grads))


def test_cudnn_candidates_give_reasons():
    d = bc.SdpaDescriptor(1, 2, 2, 20, 24, 32, 32, 0.2, torch.bfloat16,
                          mask=bc.MaskKind.ADDITIVE, mask_shape=(1, 1, 20, 24))
    for plan, desc in ((bc.SdpaPlan, d), (bc.SdpaBackwardPlan, bc.SdpaBackwardDescriptor(
            **{f: getattr(d, f) for f in d.__dataclass_fields__}))):
        assert plan.select(desc).sku.backend is BackendKind.TRITON  # masks: Triton only
        with pytest.raises(bc.Unsupported) as info:
            plan.select(desc, PlanPreference(prefer_backend=BackendKind.CUDNN))
        assert "cudnn_" in str(info.value) and ("mask" in str(info.value)
                                                 or "CUDA" in str(info.value))
    assert bc.SdpaBackwardPlan.select(bc.SdpaBackwardDescriptor(
        1, 2, 2, 20, 24, 32, 32, 0.2, torch.bfloat16),
        PlanPreference(require_deterministic=True)).precision_guarantee.deterministic


def _half_problem(b, h, hkv, sq, sk, dh, causal, seed=0):
    g = torch.Generator().manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=g).to(DEVICE, torch.bfloat16)  # noqa: E731
    q, k, v, do = mk(b, h, sq, dh), mk(b, hkv, sk, dh), mk(b, hkv, sk, dh), mk(b, h, sq, dh)
    fields = (b, h, hkv, sq, sk, dh, dh, 1 / math.sqrt(dh), torch.bfloat16, causal)
    return q, k, v, do, bc.SdpaDescriptor(*fields), bc.SdpaBackwardDescriptor(*fields)


def _supported(plan_cls, desc):
    arch = ArchSku.current()
    return [plan_cls(desc, c, PlanPreference(), arch) for c in plan_cls.candidates
            if c.supports(desc, PlanPreference(), arch) is None]


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [C.NONE, C.TOP_LEFT, C.BOTTOM_RIGHT])
def test_every_candidate_matches_reference_and_lse_pairs_across_backends(causal):
    """Each forward candidate (cuDNN, Triton) against the f64 reference; the lse of each
    forward drives each backward candidate, so a cuDNN backward after a Triton forward (and the
    other way round) is correct; deterministic candidates rerun bit-identically."""
    if plans_cudnn.cudnn_missing():
        pytest.skip(plans_cudnn.cudnn_missing())
    # top-left with Sq != Sk is the Triton kernels' alone (see the test below)
    q, k, v, do, d, db = _half_problem(2, 8, 2, 900 if causal is C.TOP_LEFT else 700, 900, 128,
                                       causal)
    kw = {"scale": d.scale, "causal_offset": None if causal is C.NONE else d.causal_offset}
    want_out, want_lse = ref.sdpa_forward(q, k, v, **kw)
    want = ref.sdpa_backward(q, k, v, do, **kw)
    fwd, bwd = _supported(bc.SdpaPlan, d), _supported(bc.SdpaBackwardPlan, db)
    assert {p.sku.backend for p in fwd} == {BackendKind.CUDNN, BackendKind.TRITON}
    assert bc.SdpaPlan.select(d).sku.backend is BackendKind.CUDNN  # the default
    tol = tolerance_for(bc.ElementKind.BF16)
    for fp in fwd:
        out = torch.full_like(q, float("nan"))
        lse = torch.full(d.lse_shape, float("nan"), device=DEVICE)
        fp.run(bc.SdpaArgs(q, k, v, out, lse),
               workspace=torch.empty(fp.workspace_size(), dtype=torch.uint8, device=DEVICE))
        for name, got, exp, t in (("out", out, want_out, tol),
                                  ("lse", lse, want_lse, tolerance_for(bc.ElementKind.F32)
                                   .scaled(2000.0))):
            res = compare(got, exp, t, f"{fp.sku.candidate} {name}")
            assert res.ok, res.message
        for bp in bwd:
            grads = [torch.full_like(x, float("nan")) for x in (q, k, v)]
            ws = torch.empty(bp.workspace_size(), dtype=torch.uint8, device=DEVICE)
            args = bc.SdpaBackwardArgs(q, k, v, out, do, lse, *grads)
            bp.run(args, workspace=ws)
            for name, got, exp in zip(("dq", "dk", "dv"), grads, want):
                res = compare(got, exp, tol.scaled(3.0),
                              f"{fp.sku.candidate} -> {bp.sku.candidate} {name}")
                assert res.ok, res.message
            if bp.precision_guarantee.deterministic:
                first = [g.clone() for g in grads]
                bp.run(args, workspace=ws)
                assert all(torch.equal(a, b) for a, b in zip(first, grads)), bp.sku.candidate


@pytest.mark.gpu
def test_frontend_on_cudnn_matches_torch_within_its_error():
    """bf16 fwd+bwd through baracuda.torch (cuDNN by default) errs no more than 2x torch's own
    bf16 SDPA against the f64 reference (FlashAttention's test rule), on a [B, S, H, D] view."""
    g = torch.Generator().manual_seed(4)
    base = [torch.randn(2, 640, 8, 64, generator=g).to(DEVICE, torch.bfloat16)
            for _ in range(4)]
    q, k, v, do = (t.transpose(1, 2) for t in base)
    want = ref.sdpa_forward(q, k, v, scale=0.125, causal_offset=0)[0]
    want_g = ref.sdpa_backward(q, k, v, do, scale=0.125, causal_offset=0)
    for fn in (sdpa, F.scaled_dot_product_attention):
        qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
        out = fn(qq, kk, vv, is_causal=True)
        grads = torch.autograd.grad(out, (qq, kk, vv), do)
        errs = [(a.double().cpu() - b.cpu()).abs().max().item()
                for a, b in zip((out, *grads), (want, *want_g))]
        if fn is sdpa:
            ours = errs
    for a, b in zip(ours, errs):
        assert a <= 2 * b + 1e-3, (ours, errs)


@pytest.mark.gpu
def test_cudnn_plan_refuses_misaligned_operands_and_frontend_packs_them():
    if plans_cudnn.cudnn_missing():
        pytest.skip(plans_cudnn.cudnn_missing())
    q, k, v, do, d, db = _half_problem(1, 2, 2, 100, 100, 64, C.NONE)
    plan = bc.SdpaBackwardPlan.select(db)
    assert plan.sku.backend is BackendKind.CUDNN
    odd = torch.empty(1, 2, 100, 69, dtype=q.dtype, device=DEVICE)[..., :64]  # stride 69
    odd.copy_(do)
    out, lse = torch.empty_like(q), torch.empty(d.lse_shape, device=DEVICE)
    fwd = bc.SdpaPlan.select(d)
    fwd.run(bc.SdpaArgs(q, k, v, out, lse),
            workspace=torch.empty(fwd.workspace_size(), dtype=torch.uint8, device=DEVICE))
    args = bc.SdpaBackwardArgs(q, k, v, out, odd, lse, torch.empty_like(q), torch.empty_like(k),
                               torch.empty_like(v))
    with pytest.raises(bc.MisalignedOperand):
        plan.can_implement(args)
    qq = q.detach().requires_grad_()
    got = torch.autograd.grad(sdpa(qq, k, v), qq, odd)[0]  # packed by the frontend
    want = torch.autograd.grad(sdpa(qq, k, v), qq, do)[0]
    # cuDNN's default backward sums dQ with atomics: equal up to summation order
    torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2)
    # a base off 16 bytes (a view at an odd offset) is packed by the implementation
    shifted = torch.empty(q.numel() + 1, dtype=q.dtype, device=DEVICE)[1:].view(q.shape)
    shifted.copy_(q)
    qs = shifted.requires_grad_()
    out_s = sdpa(qs, k, v)
    torch.testing.assert_close(out_s, sdpa(q, k, v), atol=0, rtol=0)
    got = torch.autograd.grad(out_s, qs, do)[0]
    torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2)


def test_cudnn_graph_cache_is_bounded(monkeypatch):
    """Each distinct problem adds a cuDNN graph; the cache starts over at CACHE_LIMIT."""
    from baracuda.families.attention import plans_cudnn as pc

    built = []
    monkeypatch.setattr(pc, "_GRAPHS", {})
    monkeypatch.setattr(pc, "CACHE_LIMIT", 3)
    monkeypatch.setattr(pc, "_build", lambda *a: built.append(a) or object())
    for s in range(1, 8):
        desc = bc.SdpaDescriptor(1, 2, 2, s, s, 16, 16, 0.25, torch.float16)
        first = pc._graph(desc, False, False, {"q": (1,)}, 0, None)
        assert pc._graph(desc, False, False, {"q": (1,)}, 0, None) is first  # cached
        assert len(pc._GRAPHS) <= 3
    assert len(built) == 7


def test_one_dimensional_mask_broadcasts_over_queries():
    """A 1-D [S] additive mask (torch's math path raises on it) broadcasts to [B, H, L, S],
    as the docstring says: the same values as the explicit 4-D mask."""
    q, k, v = _qkv(2, 3, 3, 4, 6, 8, 8)
    m = torch.randn(6, dtype=torch.float64, device=DEVICE)
    got = sdpa(q, k, v, attn_mask=m)
    want, _ = ref.sdpa_forward(q, k, v, m.expand(2, 3, 4, 6), scale=1 / math.sqrt(8))
    torch.testing.assert_close(got.cpu(), want, atol=1e-12, rtol=1e-10)


# -- torch's is_causal with Sq != Sk (issue #32): the diagonal starts top-left ----------------
_RECT = [((4, 3, 8), (4, 6, 8)), ((4, 4, 3, 8), (4, 4, 6, 8)), ((2, 3, 7, 8), (2, 3, 5, 8))]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shapes", _RECT)
def test_is_causal_rectangular_matches_torch(shapes, dtype):
    """Forward and gradients against torch's float64 result, within 2x torch's own error in
    this dtype (+ one ulp-scale margin): torch's query i sees keys 0..i, for any Sq, Sk."""
    sq, sk = shapes
    g = torch.Generator().manual_seed(sum(sq) + sum(sk))
    base = [torch.randn(s, generator=g, dtype=torch.float64) for s in (sq, sk, sk)]
    do = torch.randn(sq, generator=g, dtype=torch.float64)
    gold = [t.clone().requires_grad_() for t in base]
    want = F.scaled_dot_product_attention(*gold, is_causal=True)
    want_g = torch.autograd.grad(want, gold, do)
    low = [t.to(dtype).requires_grad_() for t in base]
    theirs = F.scaled_dot_product_attention(*low, is_causal=True)
    theirs_g = torch.autograd.grad(theirs, low, do.to(dtype))
    ours_in = [t.to(DEVICE, dtype).requires_grad_() for t in base]
    ours = sdpa(*ours_in, is_causal=True)
    ours_g = torch.autograd.grad(ours, ours_in, do.to(DEVICE, dtype))
    eps = torch.finfo(dtype).eps
    for name, a, b, w in zip(("out", "dq", "dk", "dv"), (ours, *ours_g), (theirs, *theirs_g),
                             (want, *want_g)):
        err = (a.detach().cpu().double() - w).abs().max().item()
        ref_err = (b.detach().double() - w).abs().max().item()
        assert err <= 2 * ref_err + 4 * eps, (name, dtype, err, ref_err)


def test_cudnn_refuses_top_left_causal_with_unequal_lengths(monkeypatch):
    """cuDNN takes torch's is_causal only where Sq == Sk; the rest goes to the Triton kernels,
    which align the diagonal top-left (checked on the CPU without a GPU: the static rule)."""
    from baracuda.core.vocab import ArchSku

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(plans_cudnn, "cudnn_missing", lambda: None)

    def reason(sq, sk, causal):
        d = bc.SdpaDescriptor(4, 4, 4, sq, sk, 8, 8, 0.35, torch.bfloat16, causal)
        return plans_cudnn._static_reason(d, ArchSku.SM90A)

    assert "top-left" in reason(3, 6, C.TOP_LEFT) and "top-left" in reason(6, 3, C.TOP_LEFT)
    assert reason(6, 6, C.TOP_LEFT) is None
    assert reason(3, 6, C.BOTTOM_RIGHT) is None and reason(3, 6, C.NONE) is None


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("sq,sk", [(3, 6), (6, 3), (200, 333)])
def test_every_candidate_top_left_causal_rectangular(sq, sk, dtype):
    """Every candidate that accepts top-left causal with Sq != Sk (cuDNN must decline it)
    against the f64 reference, forward and backward, on the GPU."""
    g = torch.Generator().manual_seed(sq + sk)
    mk = lambda *s: torch.randn(*s, generator=g).to(DEVICE, dtype)  # noqa: E731
    q, k, v, do = mk(4, 4, sq, 8), mk(4, 4, sk, 8), mk(4, 4, sk, 8), mk(4, 4, sq, 8)
    fields = (4, 4, 4, sq, sk, 8, 8, 1 / math.sqrt(8), dtype, C.TOP_LEFT)
    d, db = bc.SdpaDescriptor(*fields), bc.SdpaBackwardDescriptor(*fields)
    want_out, _ = ref.sdpa_forward(q, k, v, scale=d.scale, causal_offset=0)
    want = ref.sdpa_backward(q, k, v, do, scale=d.scale, causal_offset=0)
    fwd, bwd = _supported(bc.SdpaPlan, d), _supported(bc.SdpaBackwardPlan, db)
    assert fwd and bwd and all(p.sku.backend is not BackendKind.CUDNN for p in fwd + bwd)
    tol = tolerance_for(bc.ElementKind.of(dtype))
    for fp in fwd:
        out = torch.full_like(q, float("nan"))
        lse = torch.full(d.lse_shape, float("nan"), device=DEVICE)
        fp.run(bc.SdpaArgs(q, k, v, out, lse),
               workspace=torch.empty(fp.workspace_size(), dtype=torch.uint8, device=DEVICE))
        res = compare(out, want_out, tol, f"{fp.sku.candidate} out")
        assert res.ok, res.message
        for bp in bwd:
            grads = [torch.full_like(x, float("nan")) for x in (q, k, v)]
            bp.run(bc.SdpaBackwardArgs(q, k, v, out, do, lse, *grads),
                   workspace=torch.empty(bp.workspace_size(), dtype=torch.uint8, device=DEVICE))
            for name, got, exp in zip(("dq", "dk", "dv"), grads, want):
                res = compare(got, exp, tol.scaled(3.0), f"{bp.sku.candidate} {name}")
                assert res.ok, res.message


@pytest.mark.parametrize("mask_shape,causal,hkv", [((3, 6), False, 4), ((4, 1, 3, 6), True, 2),
                                                   ((6,), False, 1)])
def test_additive_mask_gradient_matches_torch(mask_shape, causal, hkv):
    """An additive attn_mask that requires grad gets torch's gradient (dS, summed over the
    dims it broadcasts along), with GQA and the causal diagonal (torch's OpInfo sample)."""
    g = torch.Generator().manual_seed(len(mask_shape) + hkv)
    mk = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    q, k, v, m, do = mk(4, 4, 3, 8), mk(4, hkv, 6, 8), mk(4, hkv, 6, 8), mk(*mask_shape), \
        mk(4, 4, 3, 8)
    gold = [t.clone().requires_grad_() for t in (q, k, v, m)]
    # torch takes no 1-D mask and no mask with is_causal: its explicit equivalent
    ref_mask = gold[3].expand(3, 6) if len(mask_shape) == 1 else gold[3]
    if causal:
        ref_mask = ref_mask + torch.full((3, 6), -math.inf, dtype=torch.float64).triu(1)
    want = F.scaled_dot_product_attention(*gold[:3], attn_mask=ref_mask, enable_gqa=hkv != 4)
    want_g = torch.autograd.grad(want, gold, do)
    ours_in = [t.to(DEVICE).requires_grad_() for t in (q, k, v, m)]
    got = sdpa(*ours_in[:3], attn_mask=ours_in[3], is_causal=causal, enable_gqa=hkv != 4)
    got_g = torch.autograd.grad(got, ours_in, do.to(DEVICE))
    torch.testing.assert_close(got.cpu(), want, atol=1e-10, rtol=1e-9)
    for a, b in zip(got_g, want_g):
        torch.testing.assert_close(a.cpu(), b, atol=1e-10, rtol=1e-9)
    with pytest.raises(bc.Unsupported):  # with dropout: refused, typed
        sdpa(*ours_in[:3], attn_mask=ours_in[3], dropout_p=0.5)
