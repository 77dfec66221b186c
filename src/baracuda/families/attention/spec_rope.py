"""RoPE and KV-cache-append test cases, malformed inputs and AOT variants."""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.tolerance import EXACT
from ...core.vocab import ElementKind
from . import descriptors as D
from . import reference as ref
from .kernels_rope import rope_kernel
from .plans_rope import KvCacheAppendPlan, RopeBackwardPlan, RopePlan, rope_config

E = ElementKind
L = D.RopeLayout

# (x_shape, seq_axis, rotary_dim, max_positions, layout, element, table_element, pos, x layout)
ROPE_SMALL = [
    ((2, 17, 3, 64), 1, 64, 17, L.HALF_SPLIT, E.BF16, E.F32, False, "contiguous"),
    ((2, 3, 33, 48), 2, 32, 40, L.INTERLEAVED, E.F16, E.F32, True, "strided"),
    ((1, 5, 7, 10), 1, 10, 100, L.HALF_SPLIT, E.F32, E.F32, True, "transposed13"),
    ((2, 2, 9, 16), 2, 8, 9, L.INTERLEAVED, E.F64, E.F64, False, "contiguous"),
    ((1, 0, 3, 8), 1, 8, 4, L.HALF_SPLIT, E.F32, E.F32, False, "contiguous"),
]
ROPE_REAL = [
    ((4, 4096, 32, 128), 1, 128, 4096, L.HALF_SPLIT, E.BF16, E.F32, False, "contiguous"),
    ((4, 32, 2048, 128), 2, 64, 8192, L.INTERLEAVED, E.F16, E.F32, True, "contiguous"),
]


def _tables(p, r, element, gen):
    inv = 1.0 / (10000 ** (torch.arange(0, r, 2, dtype=torch.float64) / r))
    ang = torch.arange(p, dtype=torch.float64)[:, None] * inv[None, :]
    ang = ang + torch.rand(ang.shape, generator=gen, dtype=torch.float64)  # not just integers
    return ang.cos().to(element.torch_dtype), ang.sin().to(element.torch_dtype)


def _x(shape, element, device, gen, layout):
    x = randn(shape, element.torch_dtype, device, gen)
    if layout == "transposed13":  # [B, S, H, D] stored as [B, H, S, D]
        return x.transpose(1, 2).contiguous().transpose(1, 2)
    if layout == "strided":
        big = torch.full((shape[0], shape[1] + 1, shape[2], shape[3] + 3), float("nan"),
                         dtype=x.dtype, device=device)
        view = big[:, 1:, :, :shape[3]]
        view.copy_(x)
        return view
    return with_layout(x, layout)


def _rope_args(row, device, gen, backward):
    shape, axis, r, p, layout, el, tel, has_pos, xl = row
    cos, sin = _tables(p, r, tel, gen)
    pos = None
    if has_pos:
        pos = torch.randint(0, p, (shape[0], shape[axis]), generator=gen).to(device)
        pos = pos.to(torch.int32) if shape[0] == 1 else pos
    x = _x(shape, el, device, gen, xl)
    y = poisoned(shape, el.torch_dtype, device)
    cls = D.RopeBackwardArgs if backward else D.RopeArgs
    return cls(x, cos.to(device), sin.to(device), y, pos)


class RopeSpec(PlanSpec):
    plan = RopePlan
    backward = False

    def _desc(self, row):
        shape, axis, r, p, layout, el, tel, has_pos, _ = row
        cls = D.RopeBackwardDescriptor if self.backward else D.RopeDescriptor
        return cls(shape, axis, r, p, layout, el, tel, has_pos)

    def cases(self, scale):
        for row in ROPE_SMALL if scale == "small" else ROPE_REAL:
            d = self._desc(row)

            def make(device, gen, row=row):
                return _rope_args(row, device, gen, self.backward)

            def expect(a, d=d):
                x = a.dy if self.backward else a.x
                y = ref.rope(x, a.cos, a.sin, a.position_ids, d.seq_axis, d.rotary_dim,
                             d.layout is L.INTERLEAVED, inverse=self.backward)
                return {"dx" if self.backward else "y": y}

            yield Case(f"{'rope_bwd' if self.backward else 'rope'} {row[0]} ax{row[1]} "
                       f"R={row[2]} {row[4].value} {row[5].value} pos={row[7]} {row[8]}",
                       d, make, expect)

    def malformed_descriptors(self):
        cls = D.RopeBackwardDescriptor if self.backward else D.RopeDescriptor
        ok = dict(x_shape=(1, 8, 2, 16), seq_axis=1, rotary_dim=16, max_positions=8,
                  layout=L.HALF_SPLIT, element=E.F16)

        def mk(**kw):
            return lambda: cls(**{**ok, **kw})
        yield Malformed("odd rotary dim", mk(rotary_dim=7), InvalidProblem)
        yield Malformed("rotary dim > head dim", mk(rotary_dim=32), InvalidProblem)
        yield Malformed("3-d x", mk(x_shape=(8, 2, 16)), Unsupported)
        yield Malformed("seq axis 3", mk(seq_axis=3), InvalidProblem)
        yield Malformed("table too short", mk(max_positions=4), InvalidProblem)
        yield Malformed("bad layout", mk(layout="half"), InvalidProblem)
        yield Malformed("integer element", mk(element=E.I32), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        gen = torch.Generator().manual_seed(3)
        cls = D.RopeBackwardArgs if self.backward else D.RopeArgs
        dt = d.element.torch_dtype

        def fresh(x=None, cos=None, y=None, pos=None):
            xx = randn(d.x_shape, dt, device, gen) if x is None else x
            c = torch.zeros(d.table_shape, dtype=d.table_element.torch_dtype, device=device)
            yy = torch.empty(d.x_shape, dtype=dt, device=device) if y is None else y
            return cls(xx, c if cos is None else cos, c.clone(), yy, pos)

        yield Malformed("x wrong shape", lambda: fresh(x=torch.zeros(1, 1, 1, 1, dtype=dt)),
                        InvalidProblem)
        yield Malformed("table wrong shape", lambda: fresh(cos=torch.zeros(3, 3)), InvalidProblem)
        yield Malformed("position_ids not expected",
                        lambda: fresh(pos=torch.zeros(d.x_shape[0], d.seq_len,
                                                      dtype=torch.int64)), InvalidProblem)
        yield Malformed("y aliases x", lambda: (lambda x: fresh(x=x, y=x))(
            randn(d.x_shape, dt, device, gen)), InvalidProblem)

    def aot_variants(self):
        for row in ROPE_REAL:
            d = self._desc(row)
            cfg = rope_config(d)
            warps = cfg.pop("num_warps")
            t = "*" + triton_dtype(d.element.torch_dtype)
            const = dict(cfg, R=d.rotary_dim, D=d.x_shape[3], SEQ_AXIS=d.seq_axis,
                         INTERLEAVED=d.layout is L.INTERLEAVED, HAS_POS=d.has_position_ids,
                         SIGN=-1 if self.backward else 1,
                         ACC=tl.float32)
            sig = {}
            for n in rope_kernel.arg_names:
                sig[n] = ("constexpr" if n in const else t if n in ("x_ptr", "y_ptr") else
                          "*fp32" if n in ("cos_ptr", "sin_ptr") else "*i64" if n == "pos_ptr"
                          else "i32")
            yield AotVariant(f"rope {d.layout.value} {d.element.value} bwd={self.backward}",
                             rope_kernel, sig, const, num_warps=warps)


class RopeBackwardSpec(RopeSpec):
    plan = RopeBackwardPlan
    backward = True


# (B, Hkv, capacity, new_len, Dk, Dv, element)
KV_SMALL = [(2, 3, 40, 7, 16, 24, E.BF16), (1, 2, 10, 10, 8, 8, E.F32), (3, 1, 16, 5, 33, 20,
                                                                          E.F64),
            (2, 2, 12, 3, 40, 8, E.F16)]
KV_REAL = [(8, 8, 4096, 128, 128, 128, E.BF16)]


class KvCacheAppendSpec(PlanSpec):
    plan = KvCacheAppendPlan

    def cases(self, scale):
        for row in KV_SMALL if scale == "small" else KV_REAL:
            b, h, cap, n, dk, dv, el = row
            d = D.KvCacheAppendDescriptor(b, h, cap, n, dk, dv, el)

            def make(device, gen, b=b, h=h, cap=cap, n=n, dk=dk, dv=dv, el=el):
                dt = el.torch_dtype
                starts = torch.randint(0, cap, (b,), generator=gen)
                starts[0] = cap - n  # exactly fills the cache; others may run past the end
                return D.KvCacheAppendArgs(
                    randn((b, h, n, dk), dt, device, gen), randn((b, h, n, dv), dt, device, gen),
                    starts.to(device=device, dtype=torch.int32),
                    with_layout(randn((b, h, cap, dk), dt, device, gen), "contiguous"),
                    randn((b, h, cap, dv), dt, device, gen))

            def expect(a):
                return {"k_cache": ref.kv_cache_append(a.k_cache, a.k_new, a.cache_seqlens),
                        "v_cache": ref.kv_cache_append(a.v_cache, a.v_new, a.cache_seqlens)}

            yield Case(f"kv_append {row[:6]} {el.value}", d, make, expect,
                       {"k_cache": EXACT, "v_cache": EXACT})

    def malformed_descriptors(self):
        yield Malformed("new longer than capacity", lambda: D.KvCacheAppendDescriptor(
            1, 1, 4, 5, 8, 8, E.F16), InvalidProblem)
        yield Malformed("negative extent", lambda: D.KvCacheAppendDescriptor(
            1, -1, 4, 2, 8, 8, E.F16), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype

        def fresh(**kw):
            e = lambda *s: torch.zeros(s, dtype=dt, device=device)  # noqa: E731
            base = dict(k_new=e(d.batch, d.num_kv_heads, d.new_len, d.head_dim),
                        v_new=e(d.batch, d.num_kv_heads, d.new_len, d.value_dim),
                        cache_seqlens=torch.zeros(d.batch, dtype=torch.int32, device=device),
                        k_cache=e(d.batch, d.num_kv_heads, d.capacity, d.head_dim),
                        v_cache=e(d.batch, d.num_kv_heads, d.capacity, d.value_dim))
            base.update(kw)
            return D.KvCacheAppendArgs(**base)

        yield Malformed("seqlens float", lambda: fresh(cache_seqlens=torch.zeros(
            d.batch, device=device)), InvalidProblem)
        yield Malformed("k_cache wrong shape", lambda: fresh(k_cache=torch.zeros(
            1, 1, 1, 1, dtype=dt, device=device)), InvalidProblem)

register_spec(RopeSpec())
register_spec(RopeBackwardSpec())
register_spec(KvCacheAppendSpec())
