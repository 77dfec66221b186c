"""Differential fuzzing of baracuda.torch.scaled_dot_product_attention against torch's, and of
baracuda.torch.apply_rotary_emb against a float64 reference written here from its docstring
(tests/fuzz.py)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import baracuda.torch as bt
from baracuda.core.errors import Unsupported
from fuzz import DEVICE, ON_GPU, case_ids, differential, floats, random_layout, rng_for

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
HALF = (torch.float16, torch.bfloat16)


# -- scaled_dot_product_attention -------------------------------------------------------------
def _seq_len(r) -> int:
    """Sequence lengths: 1, short, one past a tile, odd ones; long ones on the GPU (flash
    kernels' multi-tile loops, cuDNN)."""
    if ON_GPU and r.random() < 0.35:
        return r.choice([r.randint(100, 2048), 1024, 2048, 1000, 513])
    return r.choice([1, 1, r.randint(2, 9), 16, 17, 33, r.randint(10, 40)])


def _head_dim(r) -> int:
    if ON_GPU and r.random() < 0.5:
        return r.choice([64, 128, 64, 128, 256, 96, 80, 40, 192])
    if r.random() < 0.03:
        return 0  # torch takes empty head dims (uniform weights / an empty output)
    return r.choice([16, 16, 32, 64, 24, 40, r.randint(1, 15)])


def _mask_shape(r, full: list[int]) -> list[int]:
    """A random shape broadcastable to `full` = [*lead, Sq, Sk]: trailing dims kept, each dim
    full or 1 (a 1-D [Sk] mask is one ours documents as accepted; torch does not)."""
    rank = r.randint(2, len(full)) if r.random() < 0.95 else 1
    return [d if r.random() < 0.6 else 1 for d in full[len(full) - rank:]]


def _draw_mask(r, shape, dtype, full_rows: bool):
    g = torch.Generator().manual_seed(r.getrandbits(62))
    keep = torch.rand(tuple(shape), generator=g) < r.choice([0.5, 0.8, 0.95])
    if full_rows and len(shape) >= 2 and shape[-2] > 0:
        keep[..., r.randrange(shape[-2]), :] = False  # a row (or all rows) attends to nothing
    if dtype == torch.bool:
        return keep.to(DEVICE)
    vals = torch.randn(tuple(shape), generator=g, dtype=torch.float64) * r.choice([0.5, 3.0])
    vals = vals.masked_fill(~keep, float("-inf")) if r.random() < 0.6 else vals
    return vals.to(DEVICE, dtype)


def _lead_of(qs, ks, vs, gqa: bool) -> list[int]:
    """The leading dims of torch's output (all but the last two): q, k, v broadcast, k / v
    heads repeated to q's under enable_gqa. q's own when they do not broadcast."""
    ks, vs = list(ks), list(vs)
    if gqa and len(qs) >= 3 and len(ks) >= 3 and len(vs) >= 3:
        ks[-3] = vs[-3] = qs[-3]
    try:
        return list(torch.broadcast_shapes(tuple(qs[:-2]), tuple(ks[:-2]), tuple(vs[:-2])))
    except RuntimeError:
        return list(qs[:-2])


def _sdpa_case(r, case: int):
    """(q, k, v, mask, kwargs, dtype, invalid, description): valid per torch's semantics, or
    (5-10%) a call torch rejects (`invalid` names how)."""
    dtype = r.choice(DTYPES)
    invalid = r.choice([None] * 14 + ["gqa_nodiv", "heads", "dk", "len", "dtype", "mask_shape",
                                      "mask_dtype", "rank1", "batch", "gqa_2d"])
    rank = r.choice([4, 4, 4, 3, 2, 5] if ON_GPU else [4, 4, 4, 3, 3, 2, 5])
    if invalid == "gqa_2d":
        rank = 2
    elif invalid in ("gqa_nodiv", "heads", "batch"):
        rank = max(rank, 4)
    sq, sk = _seq_len(r), _seq_len(r)
    dk = _head_dim(r)
    dv = dk if r.random() < 0.6 else _head_dim(r)
    if invalid:  # torch skips some checks on empty inputs: keep the invalid ones non-empty
        dk, dv = max(dk, 1), max(dv, 1)
    big = max(sq, sk) > 64 or max(dk, dv) > 64
    batch = [r.choice([1, 2, 3] if not big else [1, 2]) for _ in range(rank - 3)]
    hkv = r.choice([1, 2, 3] if not big else [1, 2]) if rank >= 3 else 1
    gqa = rank >= 3 and r.random() < 0.35
    hq = hkv * r.choice([1, 2, 3]) if gqa else hkv
    if invalid == "gqa_nodiv":
        gqa, hkv, hq = True, 2, 3
    elif invalid == "heads":
        gqa, hkv, hq = False, 2, 4
    elif invalid == "gqa_2d":
        gqa = True
    qb, kb, vb = list(batch), list(batch), list(batch)
    qh, kh, vh = hq, hkv, hkv
    if r.random() < 0.15 and rank >= 3:  # broadcast batch / head dims (torch's math backend)
        which = r.choice(["q", "k", "v", "kv"])
        for name, lst in (("q", qb), ("k", kb), ("v", vb)):
            if name in which:
                lst[:] = [1 if r.random() < 0.7 else e for e in lst]
        if r.random() < 0.5:
            if gqa and which != "q":  # k and v repeat by different factors
                if "k" in which:
                    kh = 1
                if "v" in which:
                    vh = 1
            elif not gqa:
                if which == "q":
                    qh = 1
                if "k" in which:
                    kh = 1
                if "v" in which:
                    vh = 1
    if invalid == "batch":
        qb[0], kb[0] = 2, 3
    ranks = [rank, rank, rank]
    if r.random() < 0.08 and rank >= 4:  # different ranks broadcast too
        ranks[r.randrange(3)] = r.randint(3, rank - 1)

    def shape(lead, h, s, d, rk):
        full = [*lead, h, s, d]
        return full[len(full) - rk:]

    qs = shape(qb, qh, sq, dk, ranks[0])
    ks = shape(kb, kh, sk, dk + (1 if invalid == "dk" else 0), ranks[1])
    vs = shape(vb, vh, sk + (2 if invalid == "len" else 0), dv, ranks[2])
    if invalid == "rank1":
        qs, ks, vs = [dk], [dk], [dv]
    mag = r.choice([0.5, 1.0, 1.0, 3.0])
    q = floats(r, qs, dtype, scale=mag)
    k = floats(r, ks, dtype if invalid != "dtype" else
               (torch.float32 if dtype != torch.float32 else torch.float64))
    v = floats(r, vs, dtype)
    q, k, v = (random_layout(r, t).requires_grad_(True) for t in (q, k, v))

    kw = {}
    if gqa:
        kw["enable_gqa"] = True
    if r.random() < 0.3:
        kw["is_causal"] = True
    mask = None
    if (r.random() < 0.4 or invalid in ("mask_shape", "mask_dtype")) and invalid != "rank1":
        mshape = _mask_shape(r, [*_lead_of(qs, ks, vs, gqa), sq, sk])
        if invalid == "mask_shape":
            mshape[-1] = sk + 1
        mdt = r.choice([torch.bool, torch.bool, dtype, torch.float32])
        if invalid == "mask_dtype":
            mdt = {torch.float16: torch.bfloat16, torch.bfloat16: torch.float16,
                   torch.float32: torch.float64, torch.float64: torch.float16}[dtype]
            mdt = r.choice([mdt, torch.int32])
        if mdt == torch.int32:
            mask = torch.ones(mshape, dtype=torch.int32, device=DEVICE)
        else:
            mask = _draw_mask(r, mshape, mdt, r.random() < 0.3)
        mask = random_layout(r, mask)
    if r.random() < 0.35:
        kw["scale"] = r.choice([r.uniform(0.01, 1.0), r.uniform(-1.0, -0.01), 1.0, 0.125])
    desc = (f"case {case}: sdpa {dtype} q{tuple(q.shape)}{tuple(q.stride())} "
            f"k{tuple(k.shape)}{tuple(k.stride())} v{tuple(v.shape)}{tuple(v.stride())} "
            f"mask={None if mask is None else (mask.dtype, tuple(mask.shape))} {kw}"
            f"{' invalid=' + invalid if invalid else ''}")
    return q, k, v, mask, kw, dtype, invalid, desc


@pytest.mark.parametrize("case", case_ids(default_cpu=56, default_gpu=300))
def test_sdpa_matches_torch(case):
    r = rng_for("sdpa", case)
    q, k, v, mask, kw, dtype, invalid, desc = _sdpa_case(r, case)
    sq, sk = (q.shape[-2], k.shape[-2]) if q.dim() >= 2 and k.dim() >= 2 else (0, 0)

    def call_ours(q, k, v):
        return bt.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)

    def call_torch(q, k, v):
        if invalid == "dtype":  # keep k's dtype unlike q's in the float64 reference too
            k = k.to(torch.float32 if q.dtype == torch.float64 else torch.float64)
        m, opts = mask, dict(kw)
        if m is not None and m.is_floating_point() and q.dtype == torch.float64 and \
                m.dtype in (dtype, torch.float32):
            m = m.to(torch.float64)  # the float64 reference of a mask torch accepts
        if invalid == "mask_dtype" and m.is_floating_point() and m.dtype == q.dtype:
            m = m.to(torch.float16)  # (an f64 mask with an f32 query stays invalid)
        if m is not None and m.dim() == 1:
            m = m.expand(sq, sk)  # ours takes a 1-D mask by design (its docstring)
        if m is not None and opts.pop("is_causal", False):
            # ours applies attn_mask and is_causal together by design; torch raises
            tri = torch.ones(sq, sk, dtype=torch.bool, device=m.device).tril()
            m = (m & tri) if m.dtype == torch.bool else m.masked_fill(~tri, float("-inf"))
        if q.dtype != torch.float64:  # torch's own error in the inputs' dtype
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m, **opts)
        # the float64 reference on the math backend: torch 2.13's CPU flash path returns NaN
        # for is_causal with a negative scale
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m, **opts)

    half = dtype in HALF
    # the error of a softmax-weighted sum grows with the dot length and the score magnitude
    dk = max(q.shape[-1], 1)
    scale = (4.0 if half else 8.0) * max(1.0, math.sqrt(dk / 16))
    # dQ = scale·Σ_j P (dP - Σ P dP) K and dK cancel (exactly 0 with a single key): their
    # atol is relative to the terms, |scale|·|dP|·|K or Q|, |dP| ~ sqrt(Dv)·|dO|·|V| (rms)
    sm = abs(kw.get("scale", 1.0 / math.sqrt(dk)))

    def rms(t):
        return float(t.detach().double().pow(2).mean().sqrt()) if t.numel() else 0.0

    terms = sm * math.sqrt(max(v.shape[-1], 1)) * rms(v) * max(rms(q), rms(k))
    differential(call_ours, call_torch, [q, k, v], grad_of=[0, 1, 2], element=dtype,
                 scale=scale, describe=desc, allowed_extra=(Unsupported,), grad_terms=terms)


# -- apply_rotary_emb ----------------------------------------------------------------------------
def _rope_reference(x, cos, sin, interleaved=False, position_ids=None, seq_dim=1):
    """apply_rotary_emb's docstring in float64: the first R = 2·cos.shape[1] features of x
    [batch, d1, d2, headdim] (sequence on seq_dim) rotate by the angles of the table rows at
    position_ids [batch, seqlen] (else 0..seqlen-1); pairs (i, i + R/2) (rotate_half) or
    (2i, 2i + 1) (interleaved); the rest pass through. Raises where the docstring's contract
    is broken."""
    if x.dim() != 4:
        raise RuntimeError(f"x must be 4-d, got {tuple(x.shape)}")
    if seq_dim < 0:
        seq_dim += 4
    if seq_dim not in (1, 2):
        raise RuntimeError(f"seq_dim must be 1 or 2 (or -3, -2), got {seq_dim}")
    if cos.dim() != 2 or sin.shape != cos.shape:
        raise RuntimeError(f"cos/sin must be [P, R/2], got {tuple(cos.shape)}, "
                           f"{tuple(sin.shape)}")
    half = cos.shape[1]
    rot = 2 * half
    if rot == 0 or rot > x.shape[-1]:
        raise RuntimeError(f"rotary dim {rot} not in 1..{x.shape[-1]}")
    b, s = x.shape[0], x.shape[seq_dim]
    if position_ids is None:
        if cos.shape[0] < s:
            raise RuntimeError("table shorter than the sequence")
        pos = torch.arange(s, device=x.device).expand(b, s)
    else:
        if tuple(position_ids.shape) != (b, s) or position_ids.dtype not in (torch.int32,
                                                                             torch.int64):
            raise RuntimeError(f"position_ids must be int [B, S], got {position_ids.dtype} "
                               f"{tuple(position_ids.shape)}")
        pos = position_ids.long()
    c, sn = cos.to(x.dtype)[pos], sin.to(x.dtype)[pos]  # [B, S, R/2]
    if interleaved:
        c, sn = c.repeat_interleave(2, -1), sn.repeat_interleave(2, -1)
    else:
        c, sn = torch.cat((c, c), -1), torch.cat((sn, sn), -1)
    shape = [b, 1, 1, rot]
    shape[seq_dim] = s
    c, sn = c.reshape(shape), sn.reshape(shape)
    xr = x[..., :rot]
    if interleaved:
        turned = torch.stack((-xr[..., 1::2], xr[..., 0::2]), -1).flatten(-2)
    else:
        turned = torch.cat((-xr[..., half:], xr[..., :half]), -1)
    return torch.cat((xr * c + turned * sn, x[..., rot:]), -1)


@pytest.mark.parametrize("case", case_ids(default_cpu=60, default_gpu=300))
def test_rotary_matches_reference(case):
    r = rng_for("rope", case)
    dtype = r.choice(DTYPES)
    invalid = r.choice([None] * 14 + ["rank", "rot_dim", "tables", "short_table", "seq_dim",
                                      "pos_shape", "pos_float"])
    long = 2048 if ON_GPU else 40
    b = r.randint(1, 3)
    s = r.choice([1, r.randint(2, 9), 17, r.randint(2, long)])
    h = r.randint(1, 4)
    d = r.choice([2, 8, 16, 64, r.randint(2, 64), 128 if ON_GPU else 32])
    seq_dim = r.choice([1, 2, -3, -2])
    shape = [b, s, h, d] if seq_dim in (1, -3) else [b, h, s, d]
    if invalid == "seq_dim":
        seq_dim = r.choice([0, 3, -1, -4])
    if invalid == "rank":
        shape = shape[1:]
    rot = 2 * r.randint(1, max(1, d // 2)) if r.random() < 0.5 else d - d % 2
    if invalid == "rot_dim":
        rot = d + 2 - d % 2
    use_pos = r.random() < 0.4 or invalid in ("pos_shape", "pos_float")
    max_pos = s + r.choice([0, 0, 3]) if not use_pos else r.randint(1, 2 * s + 2)
    if invalid == "short_table":
        use_pos, max_pos, s = False, s - 1, s
    x = floats(r, shape, dtype, scale=r.choice([1.0, 10.0]))
    tdt = r.choice([torch.float32, torch.float32, dtype, torch.float64])
    g = torch.Generator().manual_seed(r.getrandbits(62))
    theta = torch.rand(max_pos, rot // 2, generator=g, dtype=torch.float64) * 100.0
    cos = theta.cos().to(DEVICE, tdt)
    sin = theta.sin().to(DEVICE, tdt)
    if invalid == "tables":
        sin = sin[:, : max(0, rot // 2 - 1)] if r.random() < 0.5 else sin[: max(0, max_pos - 1)]
    pos = None
    if use_pos:
        pdt = r.choice([torch.int64, torch.int32])
        pshape = [b, s] if r.random() < 0.8 else [1, s]
        pos = torch.randint(0, max_pos, pshape, generator=g).to(DEVICE, pdt)
        if pshape[0] == 1:
            pos = pos.expand(b, s)  # one position row shared by the batch (stride 0)
        if invalid == "pos_shape":
            pos = pos[0]
        elif invalid == "pos_float":
            pos = pos.float()
    x, cos, sin = (random_layout(r, t) for t in (x, cos, sin))
    if pos is not None:
        pos = random_layout(r, pos)
    x.requires_grad_(True)
    interleaved = r.random() < 0.5

    def call_ours(x, cos, sin):
        return bt.apply_rotary_emb(x, cos, sin, interleaved=interleaved, position_ids=pos,
                                   seq_dim=seq_dim)

    def call_ref(x, cos, sin):
        return _rope_reference(x, cos, sin, interleaved, pos, seq_dim)

    desc = (f"case {case}: rope {dtype} x{tuple(x.shape)}{tuple(x.stride())} cos "
            f"{cos.dtype}{tuple(cos.shape)}{tuple(cos.stride())} sin{tuple(sin.shape)}"
            f"{tuple(sin.stride())} pos={None if pos is None else (pos.dtype, tuple(pos.shape))}"
            f" interleaved={interleaved} seq_dim={seq_dim}"
            f"{' invalid=' + invalid if invalid else ''}")
    differential(call_ours, call_ref, [x, cos, sin], grad_of=[0], element=dtype, scale=2.0,
                 describe=desc)
