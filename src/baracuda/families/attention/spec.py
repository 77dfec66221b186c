"""SDPA test cases, malformed inputs, AOT variants and benchmarks (RoPE / KV cache in
spec_rope.py, imported at the bottom)."""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.tolerance import tolerance_for
from ...core.vocab import BackendKind, ElementKind, PlanPreference
from . import descriptors as D
from . import reference as ref
from .plans import SdpaBackwardPlan, SdpaPlan, backward_launches, forward_launches

E = ElementKind
C = D.CausalKind
M = D.MaskKind

# (B, H, Hkv, Sq, Sk, Dk, Dv, causal, mask, mask_shape, layout, element): ragged lengths,
# GQA / MQA, both causal alignments, both mask kinds (broadcast), Dk != Dv, tiny and big heads.
SMALL = [
    (1, 2, 2, 17, 33, 16, 16, C.NONE, M.NONE, None, "contiguous", E.BF16),
    (2, 4, 2, 65, 40, 32, 64, C.TOP_LEFT, M.NONE, None, "bshd", E.F16),
    (1, 4, 1, 40, 100, 64, 32, C.BOTTOM_RIGHT, M.NONE, None, "strided", E.F32),
    (1, 2, 2, 1, 130, 24, 24, C.NONE, M.BOOLEAN, (1, 1, 1, 130), "contiguous", E.BF16),
    (2, 2, 1, 33, 17, 40, 8, C.BOTTOM_RIGHT, M.ADDITIVE, (2, 1, 33, 17), "bshd", E.F64),
    (1, 2, 2, 100, 1, 16, 16, C.NONE, M.NONE, None, "strided", E.F32),
    (1, 1, 1, 20, 20, 256, 200, C.TOP_LEFT, M.NONE, None, "contiguous", E.F16),
    (1, 3, 3, 19, 23, 8, 12, C.TOP_LEFT, M.BOOLEAN, (1, 3, 19, 23), "contiguous", E.F64),
    (1, 2, 1, 30, 30, 64, 64, C.NONE, M.ADDITIVE, (1, 2, 1, 30), "contiguous", E.BF16),
    (1, 2, 2, 0, 10, 16, 16, C.NONE, M.NONE, None, "contiguous", E.F32),
    (1, 2, 2, 9, 0, 16, 16, C.NONE, M.NONE, None, "contiguous", E.F32),
]
REAL = [
    (2, 16, 16, 1000, 1000, 128, 128, C.NONE, M.NONE, None, "contiguous", E.BF16),
    (2, 16, 4, 1024, 777, 128, 128, C.BOTTOM_RIGHT, M.NONE, None, "bshd", E.BF16),
    (1, 8, 1, 513, 2048, 64, 64, C.TOP_LEFT, M.NONE, None, "contiguous", E.F16),
    (1, 4, 4, 300, 300, 256, 256, C.NONE, M.BOOLEAN, (1, 1, 300, 300), "contiguous", E.BF16),
    (1, 4, 2, 333, 222, 96, 80, C.NONE, M.ADDITIVE, (1, 4, 333, 222), "strided", E.F16),
    (1, 4, 4, 256, 256, 64, 64, C.TOP_LEFT, M.NONE, None, "contiguous", E.F32),
    (1, 2, 2, 128, 100, 64, 64, C.NONE, M.NONE, None, "contiguous", E.F64),
    # cells the cuDNN candidates take: GQA causal, bottom-right with Sq < Sk, Dk != Dv
    (2, 16, 4, 1000, 1000, 128, 128, C.TOP_LEFT, M.NONE, None, "bshd", E.BF16),
    (1, 8, 8, 513, 2048, 64, 64, C.BOTTOM_RIGHT, M.NONE, None, "contiguous", E.F16),
    (1, 4, 4, 300, 300, 96, 64, C.NONE, M.NONE, None, "contiguous", E.BF16),
]
#: REAL rows rerun under other preferences: the deterministic backward and the Triton path
#: (which cuDNN would otherwise take on the GPU).
REAL_PREFS = [(0, PlanPreference(require_deterministic=True), "deterministic"),
              (7, PlanPreference(require_deterministic=True), "deterministic"),
              (0, PlanPreference(prefer_backend=BackendKind.TRITON), "triton"),
              (7, PlanPreference(prefer_backend=BackendKind.TRITON), "triton")]


def _rows(scale):
    if scale == "small":
        yield from ((row, PlanPreference(), "") for row in SMALL)
        return
    yield from ((row, PlanPreference(), "") for row in REAL)
    yield from ((REAL[i], pref, f" [{tag}]") for i, pref, tag in REAL_PREFS)


def _desc(row, cls=D.SdpaDescriptor):
    b, h, hkv, sq, sk, dk, dv, causal, mask, mshape, _, el = row
    return cls(b, h, hkv, sq, sk, dk, dv, 1.0 / math.sqrt(dk), el, causal, mask, mshape)


def _tensor(shape, dtype, device, gen, layout, std=1.0):
    """[B, H, S, D] values; 'bshd' stores them as [B, S, H, D] (the usual activation layout)."""
    t = randn(shape, dtype, device, gen, std=std)
    if layout == "bshd":
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    if layout in ("strided", "strided16"):  # padded outer strides, unit stride on the head dim
        # "strided": odd strides; "strided16": 16-byte aligned ones (what cuDNN's TMA loads
        # take; the cuDNN candidates raise MisalignedOperand on the odd ones)
        b, h, s, d = t.shape
        pad = 8 if layout == "strided16" else 5
        big = torch.full((b, h + 1, s + 3, d + pad), float("nan"), dtype=t.dtype,
                         device=t.device)
        view = big[:, 1:, 2:s + 2, :d]
        view.copy_(t)
        return view
    return with_layout(t, layout)


def _mask(d, device, gen):
    if d.mask is M.NONE:
        return None
    if d.mask is M.BOOLEAN:
        m = torch.rand(d.mask_shape, generator=gen) > 0.3
        if m.shape[2] > 1:
            m[..., 0, :] = False  # a fully masked row: zeros out, zero gradients
        return m.to(device)
    return randn(d.mask_shape, torch.float32, device, gen, std=2.0).to(d.element.torch_dtype)


def _ref_kw(d):
    return {"scale": d.scale, "causal_offset": None if d.causal is C.NONE else d.causal_offset,
            "mask_is_bool": d.mask is M.BOOLEAN}


def _tol(d, factor):
    return tolerance_for(d.element).scaled(factor if d.element in (E.F16, E.BF16) else 4.0)


def _forward_args(d, layout, device, gen):
    dt = d.element.torch_dtype
    q = _tensor(d.q_shape, dt, device, gen, layout)
    k = _tensor(d.k_shape, dt, device, gen, layout)
    v = _tensor(d.v_shape, dt, device, gen, layout)
    return q, k, v, _mask(d, device, gen)


class SdpaSpec(PlanSpec):
    plan = SdpaPlan

    def cases(self, scale):
        for row, pref, tag in _rows(scale):
            d = _desc(row)
            layout = row[10]

            def make(device, gen, d=d, layout=layout):
                q, k, v, mask = _forward_args(d, layout, device, gen)
                return D.SdpaArgs(q, k, v, poisoned(d.out_shape, q.dtype, device),
                                poisoned(d.lse_shape, d.lse_element.torch_dtype, device), mask)

            def expect(a, d=d):
                out, lse = ref.sdpa_forward(a.q, a.k, a.v, a.mask, **_ref_kw(d))
                return {"out": out, "lse": lse}

            # lse in f32 is compared at f32-ish accuracy of the half scores it comes from
            tol = {"out": _tol(d, 1.0), "lse": _tol(d, 1.0)}
            if d.element in (E.F16, E.BF16):
                tol["lse"] = tolerance_for(E.F32).scaled(2000.0)
            yield Case(f"sdpa {row[:7]} {d.causal.value} {d.mask.value} {layout} "
                       f"{d.element.value}{tag}", d, make, expect, tol, pref)

    def malformed_descriptors(self):
        ok = dict(batch=1, num_heads=4, num_kv_heads=2, query_len=8, key_len=8, head_dim=16,
                  value_dim=16, scale=0.25, element=E.F16)

        def mk(**kw):
            return lambda: D.SdpaDescriptor(**{**ok, **kw})
        yield Malformed("heads do not divide", mk(num_kv_heads=3), InvalidProblem)
        yield Malformed("kv heads zero", mk(num_kv_heads=0), InvalidProblem)
        yield Malformed("head dim 300", mk(head_dim=300), Unsupported)
        yield Malformed("value dim 0", mk(value_dim=0), Unsupported)
        yield Malformed("negative length", mk(query_len=-1), InvalidProblem)
        yield Malformed("scale nan", mk(scale=float("nan")), InvalidProblem)
        yield Malformed("dropout 1", mk(dropout_p=1.0), InvalidProblem)
        yield Malformed("integer element", mk(element=E.I32), Unsupported)
        yield Malformed("bad mask shape", mk(mask=M.BOOLEAN, mask_shape=(1, 3, 8, 8)),
                        InvalidProblem)
        yield Malformed("3-d mask shape", mk(mask=M.ADDITIVE, mask_shape=(4, 8, 8)),
                        InvalidProblem)
        yield Malformed("mask shape without mask", mk(mask_shape=(1, 1, 8, 8)), InvalidProblem)
        yield Malformed("causal not a kind", mk(causal=True), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        gen = torch.Generator().manual_seed(5)
        dt = d.element.torch_dtype

        def fresh(**kw):
            q, k, v, _ = _forward_args(d, "contiguous", device, gen)
            base = dict(q=q, k=k, v=v, out=torch.empty(d.out_shape, dtype=dt, device=device),
                        lse=torch.empty(d.lse_shape, dtype=torch.float32, device=device))
            base.update({n: f(base) for n, f in kw.items()})
            return D.SdpaArgs(**base)

        yield Malformed("q wrong shape", lambda: fresh(q=lambda b: b["q"][:, :1]), InvalidProblem)
        yield Malformed("k wrong dtype", lambda: fresh(k=lambda b: b["k"].double()),
                        InvalidProblem)
        yield Malformed("lse wrong dtype", lambda: fresh(lse=lambda b: b["lse"].half()),
                        InvalidProblem)
        yield Malformed("out aliases q",
                        lambda: fresh(out=lambda b: b["q"][..., :d.value_dim]), InvalidProblem)
        yield Malformed("unexpected mask",
                        lambda: fresh(mask=lambda b: torch.ones(1, 1, 1, 1, dtype=torch.bool,
                                                                device=device)),
                        InvalidProblem)
        yield Malformed("head dim not unit stride",
                        lambda: fresh(v=lambda b: torch.empty(
                            (*d.v_shape[:3], d.value_dim * 2), dtype=dt,
                            device=device)[..., ::2]), Unsupported)

    def aot_variants(self):
        yield from _aot_variants(self.plan)


def _aot_variants(plan):
    """Representative specializations: bf16 at each head-dim tile (MHA at the benchmarked
    B=4 H=16 S=4096 and GQA), f16, masks and dropout, f32 and f64 exact paths. Each is built
    from the launch the plan would make on meta tensors, so the signature carries exactly what
    the JIT specializes: ints equal to 1 as constexprs, multiples of 16 as divisible."""
    rows = [(E.BF16, 64, 16, False, M.NONE, 0.0), (E.BF16, 128, 16, False, M.NONE, 0.0),
            (E.BF16, 128, 16, True, M.NONE, 0.0), (E.BF16, 128, 4, False, M.NONE, 0.0),
            (E.BF16, 128, 4, True, M.NONE, 0.0), (E.BF16, 256, 16, False, M.NONE, 0.0),
            (E.F16, 128, 16, True, M.NONE, 0.0), (E.BF16, 128, 16, True, M.BOOLEAN, 0.1),
            (E.BF16, 64, 16, False, M.ADDITIVE, 0.0), (E.F32, 128, 16, False, M.NONE, 0.0),
            (E.F64, 16, 16, False, M.NONE, 0.0), (E.BF16, 256, 4, True, M.ADDITIVE, 0.1),
            (E.F32, 128, 16, False, M.BOOLEAN, 0.1)]
    meta = torch.device("meta")
    for element, dh, hkv, causal, mask, p in rows:
        s = 4096
        d = D.SdpaDescriptor(4, 16, hkv, s, s, dh, dh, 0.1, element,
                           C.TOP_LEFT if causal else C.NONE, mask,
                           None if mask is M.NONE else (1, 1, s, s), p)
        dt = element.torch_dtype
        q, k, v = (torch.empty(shape, dtype=dt, device=meta)
                   for shape in (d.q_shape, d.k_shape, d.v_shape))
        out = torch.empty(d.out_shape, dtype=dt, device=meta)
        lse = torch.empty(d.lse_shape, dtype=d.lse_element.torch_dtype, device=meta)
        mk = None
        if mask is not M.NONE:
            mk = torch.empty(d.mask_shape, dtype=torch.bool if mask is M.BOOLEAN else dt,
                             device=meta)
        rng = torch.empty(2, dtype=torch.int64, device=meta) if p else None
        if plan is SdpaPlan:
            launches = forward_launches(d, D.SdpaArgs(q, k, v, out, lse, mk, rng), False)
        else:
            ws = torch.empty(lse.numel() * lse.element_size(), dtype=torch.uint8, device=meta)
            a = D.SdpaBackwardArgs(q, k, v, out, torch.empty_like(out), lse, torch.empty_like(q),
                                 torch.empty_like(k), torch.empty_like(v), mk, rng)
            launches = backward_launches(d, a, ws, False)
        for launch in launches:
            yield _variant(launch, f"{element.value} D={dh} H/Hkv=16/{hkv} causal={causal} "
                                   f"mask={mask.value} dropout={p}")


def _variant(launch, label):
    """AotVariant of one Launch, specialized as the JIT would for these argument values."""
    kernel = launch.kernel
    kw = dict(launch.kwargs)
    warps, stages = kw.pop("num_warps", 4), kw.pop("num_stages", 3)
    const = dict(kw, INTERP=False) if "INTERP" in kernel.arg_names else kw
    sig, divisible = {}, []
    for name, value in zip(kernel.arg_names, launch.args):
        if isinstance(value, torch.Tensor):
            sig[name] = "*" + triton_dtype(value.dtype)
        elif isinstance(value, float):
            sig[name] = "fp32"
        elif value == 1:
            sig[name] = "constexpr"
            const[name] = 1
        else:
            sig[name] = "i32" if -2**31 <= value < 2**31 else "i64"
            if value % 16 == 0:
                divisible.append(name)
    for name in kernel.arg_names:
        if name in const:
            sig[name] = "constexpr"
    tile = f"({kw.get('BLOCK_M')}, {kw.get('BLOCK_N')}, {warps}, {stages})"
    return AotVariant(f"{kernel.__name__} {label} {tile}", kernel, sig, const, warps, stages,
                      tuple(divisible))


class SdpaBackwardSpec(PlanSpec):
    plan = SdpaBackwardPlan

    def cases(self, scale):
        for row, pref, tag in _rows(scale):
            d = _desc(row, D.SdpaBackwardDescriptor)
            layout = row[10]

            def make(device, gen, d=d, layout=layout):
                q, k, v, mask = _forward_args(d, layout, device, gen)
                out, lse = ref.sdpa_forward(q, k, v, mask, **_ref_kw(d))
                dt = q.dtype
                dout = _tensor(d.out_shape, dt, device, gen,
                               "strided16" if d.element in (E.F16, E.BF16) else "strided")
                return D.SdpaBackwardArgs(
                    q, k, v, out.to(device, dt), dout, lse.to(device, d.lse_element.torch_dtype),
                    poisoned(d.q_shape, dt, device), poisoned(d.k_shape, dt, device),
                    poisoned(d.v_shape, dt, device), mask)

            def expect(a, d=d):
                dq, dk, dv = ref.sdpa_backward(a.q, a.k, a.v, a.dout, a.mask, **_ref_kw(d))
                if d.key_len == 1:
                    # one key: P == 1, so dQ and dK are exactly 0 in exact math and rounding
                    # noise of delta has no scale to be judged against (tested for smallness
                    # in tests/families/test_attention.py)
                    return {"dv": dv}
                return {"dq": dq, "dk": dk, "dv": dv}

            # halves: P and dS are rounded to the element type before the second dots, as in
            # every flash kernel (torch's own bf16 flash backward has errors of this size)
            tol = {n: _tol(d, 3.0) for n in ("dq", "dk", "dv")}
            yield Case(f"sdpa_bwd {row[:7]} {d.causal.value} {d.mask.value} {layout} "
                       f"{d.element.value}{tag}", d, make, expect, tol, pref)

    def malformed_descriptors(self):
        yield Malformed("heads do not divide", lambda: D.SdpaBackwardDescriptor(
            1, 6, 4, 8, 8, 16, 16, 0.25, E.BF16), InvalidProblem)
        yield Malformed("mask shape", lambda: D.SdpaBackwardDescriptor(
            1, 2, 2, 8, 8, 16, 16, 0.25, E.BF16, mask=M.ADDITIVE, mask_shape=(1, 2, 8, 9)),
            InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        gen = torch.Generator().manual_seed(6)
        dt = d.element.torch_dtype

        def fresh(**kw):
            q, k, v, _ = _forward_args(d, "contiguous", device, gen)
            e = lambda s: torch.empty(s, dtype=dt, device=device)  # noqa: E731
            base = dict(q=q, k=k, v=v, out=e(d.out_shape), dout=e(d.out_shape),
                        lse=torch.empty(d.lse_shape, dtype=torch.float32, device=device),
                        dq=e(d.q_shape), dk=e(d.k_shape), dv=e(d.v_shape))
            base.update({n: f(base) for n, f in kw.items()})
            return D.SdpaBackwardArgs(**base)

        yield Malformed("dk wrong shape", lambda: fresh(dk=lambda b: b["dq"]), InvalidProblem)
        yield Malformed("dout wrong dtype", lambda: fresh(dout=lambda b: b["dout"].double()),
                        InvalidProblem)
        yield Malformed("dq aliases q", lambda: fresh(dq=lambda b: b["q"]), InvalidProblem)
        yield Malformed("missing lse", lambda: fresh(lse=lambda b: None), InvalidProblem)

    def aot_variants(self):
        yield from _aot_variants(self.plan)


register_spec(SdpaSpec())
register_spec(SdpaBackwardSpec())


# -- benchmarks --------------------------------------------------------------------------------
@register_bench("attention")
def attention_benches(quick: bool):
    from .torch_api import scaled_dot_product_attention as ours_sdpa

    sdpa = torch.nn.functional.scaled_dot_product_attention
    shapes = [(4, 16, 4096, 128, False), (4, 16, 4096, 128, True), (8, 16, 2048, 64, False),
              (8, 16, 2048, 64, True)]
    out = []
    for b, h, s, dh, causal in shapes:
        flops = 4 * b * h * s * s * dh // (2 if causal else 1)
        label = f"B={b} H={h} S={s} D={dh}{' causal' if causal else ''} bf16"

        def setup(device, b=b, h=h, s=s, dh=dh):
            mk = lambda: torch.randn(b, h, s, dh, device=device, dtype=torch.bfloat16)  # noqa
            return {"q": mk(), "k": mk(), "v": mk()}

        def fwbw_setup(device, b=b, h=h, s=s, dh=dh):
            mk = lambda: torch.randn(b, h, s, dh, device=device, dtype=torch.bfloat16,  # noqa
                                     requires_grad=True)
            q = mk()
            return {"q": q, "k": mk(), "v": mk(), "g": torch.randn_like(q)}

        def fb(fn, causal=causal):
            def run(q, k, v, g):
                return torch.autograd.grad(fn(q, k, v, is_causal=causal), (q, k, v), g)
            return run

        # both shapes are the targets for the default plan
        out.append(BenchCase("sdpa fwd", label, setup,
                             ours=lambda q, k, v, c=causal: ours_sdpa(q, k, v, is_causal=c),
                             torch_eager=lambda q, k, v, c=causal: sdpa(q, k, v, is_causal=c),
                             flops=flops, quick=True))
        out.append(BenchCase("sdpa fwd+bwd", label, fwbw_setup, ours=fb(ours_sdpa),
                             torch_eager=fb(sdpa), flops=int(3.5 * flops), quick=True))
        # the "deterministic backward within 0.85x of the fastest backward": our
        # deterministic backward plan alone vs torch eager's backward (cuDNN, float-atomic dQ)
        out.append(BenchCase("sdpa bwd deterministic", label, _bwd_setup(b, h, s, dh, causal),
                             ours=_det_backward(causal), torch_eager=_torch_backward,
                             flops=int(2.5 * flops), compile_peer=False, quick=True))
    return out


def _bwd_setup(b, h, s, dh, causal):
    def setup(device):
        from .torch_api import _fwd

        mk = lambda: torch.randn(b, h, s, dh, device=device, dtype=torch.bfloat16,  # noqa
                                 requires_grad=True)
        q, k, v = mk(), mk(), mk()
        out_t = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out, lse = _fwd(q.detach(), k.detach(), v.detach(), None, None, 0.0, int(causal),
                        1 / math.sqrt(dh))
        return {"q": q, "k": k, "v": v, "g": torch.randn_like(out), "out_t": out_t,
                "out": out, "lse": lse}
    return setup


def _det_backward(causal: bool):
    from ...backends.torch_ops import run_plan
    from .torch_api import _desc

    pref = PlanPreference(require_deterministic=True)

    def run(q, k, v, g, out_t, out, lse):
        q, k, v = q.detach(), k.detach(), v.detach()
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        desc = _desc(D.SdpaBackwardDescriptor, q, k, v, None, 0.0, int(causal),
                     1 / math.sqrt(q.shape[-1]))
        run_plan(SdpaBackwardPlan, desc, D.SdpaBackwardArgs(q, k, v, out, g, lse, dq, dk, dv),
                 pref)
        return dq, dk, dv
    return run


def _torch_backward(q, k, v, g, out_t, out, lse):
    return torch.autograd.grad(out_t, (q, k, v), g, retain_graph=True)


from . import spec_rope  # noqa: E402,F401  - registers the RoPE / KV-cache specs
