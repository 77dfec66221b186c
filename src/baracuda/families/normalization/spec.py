"""Row-norm (RMSNorm / LayerNorm) test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import dataclasses
import functools
import itertools

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec, single_threaded_autograd
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import reference as ref
from .kernels import partial_sum_kernel, row_norm_bwd_kernel, row_norm_fwd_kernel
from .kernels_colsplit import col_grad_kernel, row_grad_stats_kernel
from .kernels_exchange import row_norm_bwd_exchange_kernel, row_norm_fwd_exchange_kernel
from .layout import bwd_config, fwd_config, pads_last, partial_config
from .plans import LayerNormBackwardPlan, LayerNormPlan, RMSNormBackwardPlan, RMSNormPlan
from .spec_channel import edited  # (importing spec_channel registers its specs)

FLOATS = (ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64)
F32_BF16 = (ElementKind.F32, ElementKind.BF16)

# (shape, n_norm, layout, gamma, beta, residual, elements): ragged extents, multi-axis
# suffixes, strided / transposed / broadcast layouts, the streamed path, empty batches.
SMALL = [
    ((5, 777), 1, "contiguous", True, True, False, FLOATS),
    ((3, 4, 50), 2, "strided", True, False, True, FLOATS),
    ((6, 33), 1, "transposed", False, True, False, FLOATS),
    ((4, 7, 6), 2, "transposed", True, True, True, F32_BF16),  # suffix stays 2 strided dims
    ((300, 8), 1, "broadcast", True, True, False, F32_BF16),  # many rows, stride-0 rows
    ((2, 20000), 1, "contiguous", True, True, True, F32_BF16),  # streamed rows
    ((1, 262144), 1, "contiguous", True, False, False, (ElementKind.F32,)),  # huge extent
    ((0, 16), 1, "contiguous", True, True, False, (ElementKind.F32,)),  # empty batch
    ((5, 1), 1, "contiguous", True, True, False, (ElementKind.F64,)),  # extent 1
    ((7,), 1, "contiguous", True, True, False, (ElementKind.F64, ElementKind.BF16)),  # rank 1
    ((2, 1, 3, 2, 2, 1, 2, 5), 3, "transposed", True, True, False, (ElementKind.F32,)),
]
REAL = [
    ((32768, 1024), 1, "contiguous", True, True, False, F32_BF16),
    ((16384, 4096), 1, "contiguous", True, True, True, F32_BF16),
    ((4096, 16384), 1, "contiguous", True, True, False, F32_BF16),
    ((1024, 65536), 1, "contiguous", True, True, True, F32_BF16),
    ((64, 262144), 1, "contiguous", True, False, False, (ElementKind.BF16,)),
    ((512, 33, 100), 2, "strided", True, True, False, (ElementKind.F32,)),
    ((1000, 777), 1, "transposed", True, True, False, (ElementKind.F16,)),
]

EPS = 1e-5
#: Unit inner strides, as the JIT specializes them (contiguous rows) for the AOT variants.
_UNIT_FWD = {**{f"{p}sc": 1 for p in "xrhywb"}, "IN1": 1}
_UNIT_BWD = {**{f"{p}sc": 1 for p in "gxhdw"}, "IN1": 1}

#: The forward kernel's defaulted constexprs (else the AOT signature would take them as ints).
FWD_DEFAULTS = {"KEEP": "", "STREAM": "", "W_FIRST": False}


def _unit_outer(pad_last: bool) -> dict:
    """The unit outer extents and contiguous stat strides of a 2-D problem, as the JIT
    specializes them in the layout its launch uses (layout.pads_last, the plans' rule):
    padded last, O1 = O2 = 1 and the stat strides in slot 0; padded first, O1 = 1, O2 = rows
    (a runtime int) and the stat strides in slot 2."""
    return {"O1": 1, "O2": 1, "ms0": 1, "ts0": 1} if pad_last else {"O1": 1, "ms2": 1, "ts2": 1}


def _pad_name(pad_last: bool) -> str:
    return " pad-last" if pad_last else ""


def _axes(shape, n_norm):
    return tuple(range(len(shape) - n_norm, len(shape)))


def _stats(desc, device):
    return poisoned(desc.stats_shape, desc.stats_element.torch_dtype, device)


def _table(scale):
    return SMALL if scale == "small" else REAL


def _param(desc, device, gen, present, layout="contiguous"):
    if not present:
        return None
    t = randn(desc.normalized_shape, desc.element.torch_dtype, device, gen)
    return with_layout(t, layout)


class _FwdSpec(PlanSpec):
    rms = True

    def _desc(self, shape, n_norm, gamma, beta, res, element):
        beta = {} if self.rms else {"has_beta": beta}
        return self.plan.descriptor_type(input_shape=shape, norm_axes=_axes(shape, n_norm),
                                         has_gamma=gamma, eps=EPS, element=element,
                                         has_residual=res, **beta)

    def cases(self, scale):
        for shape, n_norm, layout, gamma, beta, res, elements in _table(scale):
            for element in elements:
                desc = self._desc(shape, n_norm, gamma, beta, res, element)
                yield Case(f"{'rms' if self.rms else 'ln'} {shape}/{n_norm} {layout} "
                           f"g{int(gamma)}b{int(beta)}r{int(res)} {element.value}",
                           desc, self._maker(desc, layout), self._expect(desc))

    def _maker(self, desc, layout):
        rms, args_t = self.rms, self.plan.args_type

        def make(device, gen):
            dt = desc.element.torch_dtype
            x = with_layout(randn(desc.input_shape, dt, device, gen, std=2.0) + 0.5, layout)
            g = _param(desc, device, gen, desc.has_gamma, "strided")
            r = (with_layout(randn(desc.input_shape, dt, device, gen), "strided")
                 if desc.has_residual else None)
            ro = poisoned(desc.input_shape, dt, device) if desc.has_residual else None
            y = poisoned(desc.input_shape, dt, device)
            layer = {} if rms else {"mean": _stats(desc, device),
                                    "beta": _param(desc, device, gen, desc.has_beta)}
            return args_t(x=x, y=y, rstd=_stats(desc, device), gamma=g, residual=r,
                          residual_out=ro, **layer)

        return make

    def _expect(self, desc):
        def expect(args):
            out = ref.row_norm_forward(args.x, desc.n_norm, args.gamma,
                                       getattr(args, "beta", None), desc.eps, self.rms,
                                       args.residual)
            return out

        return expect

    def malformed_descriptors(self):
        E = ElementKind.F32

        def mk(s, a, **kw):
            return dataclasses.replace(self._desc(s, 1, True, True, False, E), norm_axes=a, **kw)

        yield Malformed("non-suffix norm axes", lambda: mk((4, 8, 3), (0, 1)), InvalidProblem)
        yield Malformed("gap in norm axes", lambda: mk((4, 8, 3), (0, 2)), InvalidProblem)
        yield Malformed("empty norm axes", lambda: mk((4, 8), ()), InvalidProblem)
        yield Malformed("axis out of range", lambda: mk((4, 8), (2,)), InvalidProblem)
        yield Malformed("negative extent", lambda: mk((4, -8), (1,)), InvalidProblem)
        yield Malformed("rank 9", lambda: mk((1,) * 9, (8,)), Unsupported)
        yield Malformed("integer element", lambda: mk((4, 8), (1,), element=ElementKind.I32),
                        Unsupported)
        yield Malformed("infinite eps", lambda: mk((4, 8), (1,), eps=float("inf")),
                        InvalidProblem)
        yield Malformed("nan eps", lambda: mk((4, 8), (1,), eps=float("nan")), InvalidProblem)
        yield Malformed("has_gamma not a bool", lambda: mk((4, 8), (1,), has_gamma=1),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        edit = functools.partial(edited, case, device)
        dt = d.element.torch_dtype
        bad_len = tuple(s + 1 for s in d.normalized_shape)
        yield Malformed("gamma of the wrong length",
                        lambda: edit(gamma=torch.ones(bad_len, dtype=dt, device=device)),
                        InvalidProblem)
        yield Malformed("missing saved statistics", lambda: edit(rstd=None), InvalidProblem)
        yield Malformed("rstd wrong dtype", lambda: edit(rstd=lambda a: a.rstd.to(torch.int32)),
                        InvalidProblem)
        yield Malformed("x wrong shape",
                        lambda: edit(x=torch.ones(tuple(s + 1 for s in d.input_shape), dtype=dt,
                                                  device=device)), InvalidProblem)
        yield Malformed("y aliases x", lambda: edit(y=lambda a: a.x), InvalidProblem)
        yield Malformed("gamma given without has_gamma" if not d.has_gamma else "gamma missing",
                        lambda: edit(gamma=None if d.has_gamma else
                                     torch.ones(d.normalized_shape, dtype=dt, device=device)),
                        InvalidProblem)
        yield Malformed("not a tensor", lambda: edit(x=[1.0]), InvalidProblem)

    def aot_variants(self):
        for element, extent in itertools.product(F32_BF16, (1024, 4096, 16384, 65536)):
            cfg = fwd_config(extent, 16384, element, not self.rms)
            last = pads_last(cfg, element, not self.rms, False)
            warps = cfg.pop("num_warps")
            cfg.pop("G")
            kernel = row_norm_fwd_kernel
            if cfg.pop("EXCHANGE", False):
                kernel = row_norm_fwd_exchange_kernel
                cfg = {k: cfg[k] for k in ("BLOCK_N", "PARTS", "SPIN")}
            t = "*" + triton_dtype(element.torch_dtype)
            s = "*" + triton_dtype(element.compute_kind.torch_dtype)
            sig = {n: t for n in kernel.arg_names[:6]}
            sig.update({n: v for n, v in (("mean_ptr", s), ("rstd_ptr", s), ("ws_ptr", s),
                                          ("cnt_ptr", "*i32")) if n in kernel.arg_names})
            defaults = FWD_DEFAULTS if kernel is row_norm_fwd_kernel else {}
            const = dict(defaults, **cfg, RMS=self.rms, HAS_W=True, HAS_B=not self.rms,
                         HAS_RES=False, NI=1, COL64=False, ACC=acc_type(element), **_UNIT_FWD,
                         **_unit_outer(last))
            for n in kernel.arg_names:
                if n not in sig and n not in const:
                    sig[n] = "fp32" if n.startswith("eps") else "i64"
            sig.update({n: "constexpr" for n in const})
            yield AotVariant(f"fwd {'rms' if self.rms else 'ln'} {element.value} N={extent}"
                             f"{_pad_name(last)}", kernel, sig, const, num_warps=warps,
                             divisible=_aligned_ints(sig))
        yield from _smem_fwd_variants(self.rms)


def _smem_fwd_variants(rms: bool):
    """The Hopper shared-memory exchange forward (Gluon), each chunk config it launches."""
    from ...backends.gluon_chunks import n_chunks
    from .kernels_smem import row_norm_fwd_smem_kernel as kernel
    from .plans_smem import F32_FORWARD, fwd_chunk_config, fwd_even, fwd_slots

    elements = (ElementKind.BF16, ElementKind.F16) + ((ElementKind.F32,) if F32_FORWARD[rms]
                                                      else ())
    for element, extent in itertools.product(elements, (65536, 262144)):
        cfg = dict(fwd_chunk_config(extent, element, rms))
        t = "*" + triton_dtype(element.torch_dtype)
        sig = {n: t for n in kernel.arg_names[:4]}
        sig.update({"mean_ptr": "*fp32", "rstd_ptr": "*fp32", "part_ptr": "*fp32",
                    "count_ptr": "*i32", "M": "i32", "stride_x": "i32", "stride_y": "i32",
                    "eps": "fp32", "SPIN": "i32"})
        nch = n_chunks(extent, cfg)
        const = dict(cfg, NCH=nch, NCH_P2=nch, RMS=rms, HAS_W=True, HAS_B=not rms,
                     EVEN=fwd_even(extent, element, cfg), SLOTS=fwd_slots(extent, element, rms))
        sig.update({n: "constexpr" for n in const})
        yield AotVariant(f"fwd smem {'rms' if rms else 'ln'} {element.value} N={extent}",
                         kernel, sig, const, num_warps=cfg["num_warps"],
                         divisible=("M", "stride_x", "stride_y"))


def _smem_bwd_variants(rms: bool):
    """The Hopper shared-memory ring backward (Gluon), each row of its table; the check fails
    when a variant's registers would not let PER_SM programs share an SM (its grid must be
    resident at once)."""
    from ...backends.gluon_chunks import n_chunks
    from .kernels_smem import row_norm_bwd_smem_kernel as kernel
    from .plans_smem import ring_constexprs, smem_bwd_config

    for element, extent in itertools.product((ElementKind.BF16, ElementKind.F16),
                                             (16384, 65536, 131072, 262144)):
        table = smem_bwd_config(not rms, extent)
        cfg = {k: v for k, v in table.items() if k not in ("PER_SM", "maxnreg")}
        t = "*" + triton_dtype(element.torch_dtype)
        sig = {n: t for n in ("dy_ptr", "x_ptr", "w_ptr", "dx_ptr")}
        sig.update({"mean_ptr": "*fp32", "rstd_ptr": "*fp32", "part_ptr": "*fp32",
                    "slot_ptr": "*fp32", "n_rows": "i32", "M": "i32",
                    "G": "i32", "group_rows": "i32", "SPIN": "i32"})
        const = dict(cfg, **ring_constexprs(n_chunks(extent, cfg), cfg), RMS=rms, HAS_W=True,
                     HAS_DB=not rms)
        sig.update({n: "constexpr" for n in const})
        yield AotVariant(f"bwd smem {'rms' if rms else 'ln'} {element.value} N={extent}",
                         kernel, sig, const, num_warps=cfg["num_warps"], divisible=("M",),
                         maxnreg=table["maxnreg"],
                         max_registers=65536 // (table["PER_SM"] * 32 * cfg["num_warps"]))


def _aligned_ints(sig: dict) -> tuple[str, ...]:
    """The benchmarked shapes (extents and strides multiples of 16) as the JIT specializes
    them: every integer argument divisible by 16."""
    return tuple(n for n, t in sig.items() if t in ("i32", "i64"))


class _BwdSpec(PlanSpec):
    rms = True

    def cases(self, scale):
        fw_spec = SPECS[self.rms, False]()
        for fw in fw_spec.cases(scale):
            d = fw.desc
            beta = {} if self.rms else {"has_beta": d.has_beta}
            desc = self.plan.descriptor_type(d.input_shape, d.norm_axes, d.has_gamma,
                                             element=d.element, has_residual=d.has_residual,
                                             **beta)
            yield Case(fw.name.replace(" ", " bwd ", 1), desc, self._maker(fw, desc),
                       self._expect(desc))

    def _maker(self, fw, desc):
        rms, args_t = self.rms, self.plan.args_type

        def make(device, gen):
            fargs = fw.make_args(device, gen)
            x = fargs.x
            if desc.has_residual:
                x = ref.residual_sum(fargs.x, fargs.residual).to(device)
            out = ref.row_norm_forward(x, desc.n_norm, None, None, EPS, rms)
            sdt = desc.stats_element.torch_dtype
            dt = desc.element.torch_dtype
            dy = with_layout(randn(desc.input_shape, dt, device, gen), "strided")
            dh = randn(desc.input_shape, dt, device, gen) if desc.has_residual else None
            dg = poisoned(desc.normalized_shape, dt, device) if desc.has_gamma else None
            dx = poisoned(desc.input_shape, dt, device)
            layer = {} if rms else {
                "mean": out["mean"].to(device, sdt),
                "dbeta": poisoned(desc.normalized_shape, dt, device) if desc.has_beta else None}
            return args_t(dy=dy, x=x, rstd=out["rstd"].to(device, sdt), dx=dx,
                          gamma=fargs.gamma, dgamma=dg, dresidual_out=dh, **layer)

        return make

    def _expect(self, desc):
        def expect(args):
            return ref.row_norm_backward(args.dy, args.x, args.rstd, desc.n_norm,
                                         getattr(args, "mean", None), args.gamma,
                                         getattr(desc, "has_beta", False), args.dresidual_out)

        return expect

    def malformed_descriptors(self):
        beta = {} if self.rms else {"has_beta": True}
        mk = lambda s, a: self.plan.descriptor_type(s, a, True, element=ElementKind.BF16, **beta)
        yield Malformed("non-suffix norm axes", lambda: mk((4, 8, 3), (1,)), InvalidProblem)
        yield Malformed("negative extent", lambda: mk((-4, 8), (1,)), InvalidProblem)
        yield Malformed("norm axes not a tuple", lambda: mk((4, 8), 1), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        edit = functools.partial(edited, case, device)
        dt = d.element.torch_dtype

        bad_len = tuple(s + 1 for s in d.normalized_shape)
        yield Malformed("missing saved statistics", lambda: edit(rstd=None), InvalidProblem)
        yield Malformed("dgamma of the wrong length",
                        lambda: edit(dgamma=torch.ones(bad_len, dtype=dt, device=device)),
                        InvalidProblem)
        yield Malformed("dx overlaps dy", lambda: edit(dx=lambda a: a.dy), InvalidProblem)
        yield Malformed("dy wrong dtype", lambda: edit(dy=lambda a: a.dy.to(torch.float64)
                                                       if dt != torch.float64 else
                                                       a.dy.to(torch.float32)),
                        InvalidProblem)
        if not self.rms:
            yield Malformed("missing mean", lambda: edit(mean=None), InvalidProblem)

    def _colsplit_variants(self, cfg, element, extent, t, s, outer):
        """The two kernels of the column-split backward (long rows); `outer`: _unit_outer."""
        name = f"{'rms' if self.rms else 'ln'} {element.value} N={extent}"
        unit = dict(_UNIT_BWD, **outer)
        common = dict(RMS=self.rms, HAS_W=True, NI=1, COL64=False, ACC=acc_type(element))
        for kernel, const, warps in (
                (row_grad_stats_kernel, dict(common, BLOCK_N=cfg["BLOCK_N"]), cfg["num_warps"]),
                (col_grad_kernel, dict(common, HAS_DB=not self.rms, HAS_RES=False, ACCUM=False,
                                       BLOCK_C=cfg["BLOCK_C"]), 4)):
            const.update({k: v for k, v in unit.items() if k in kernel.arg_names})
            sig = {"dy_ptr": t, "x_ptr": t, "w_ptr": t, "mean_ptr": s, "rstd_ptr": s,
                   "c_ptr": s, "dh_ptr": t, "dx_ptr": t, "part_ptr": s}
            sig = {n: sig.get(n, "constexpr" if n in const else "i64")
                   for n in kernel.arg_names}
            yield AotVariant(f"bwd {kernel.__name__.split('_kernel')[0]} {name}", kernel, sig,
                             const, num_warps=warps, divisible=_aligned_ints(sig))

    def _exchange_variant(self, cfg, element, extent, t, s, outer):
        """The chunk-exchange backward of long rows; `outer`: _unit_outer."""
        kernel = row_norm_bwd_exchange_kernel
        const = dict(RMS=self.rms, HAS_W=True, HAS_DB=not self.rms, HAS_RES=False,
                     ACCUM=False, NI=1, COL64=False, ACC=acc_type(element),
                     **{k: cfg[k] for k in ("BLOCK_N", "PARTS", "SPIN", "AHEAD")},
                     **{k: v for k, v in dict(_UNIT_BWD, **outer).items()
                        if k in kernel.arg_names})
        sig = {"dy_ptr": t, "x_ptr": t, "w_ptr": t, "mean_ptr": s, "rstd_ptr": s, "dh_ptr": t,
               "dx_ptr": t, "part_ptr": s, "ws_ptr": s, "cnt_ptr": "*i32"}
        sig = {n: sig.get(n, "constexpr" if n in const else "i64") for n in kernel.arg_names}
        # layer_norm under its register cap (layout.BWD_EXCHANGE_TILE) spills a little with
        # these 64-bit ints and the launch's layout (padded first: O2 = rows at run time):
        # still faster than uncapped, whose residency is lower
        allowed = 0 if self.rms else {ElementKind.F32: 512, ElementKind.BF16: 308}[element]
        return AotVariant(f"bwd exchange {'rms' if self.rms else 'ln'} {element.value} "
                          f"N={extent}", kernel, sig, const, num_warps=cfg["num_warps"],
                          divisible=_aligned_ints(sig), max_spill_bytes=allowed,
                          maxnreg=cfg["maxnreg"])

    def aot_variants(self):
        # 262144: rows of more chunks than the exchange takes (the column split)
        for element, extent in itertools.product(F32_BF16, (1024, 4096, 16384, 65536, 262144)):
            cfg = bwd_config(extent, 16384, element, not self.rms)
            t = "*" + triton_dtype(element.torch_dtype)
            s = "*" + triton_dtype(element.compute_kind.torch_dtype)
            last = pads_last(cfg, element, not self.rms, True)
            outer = _unit_outer(last)
            if cfg.get("EXCHANGE"):
                yield self._exchange_variant(cfg, element, extent, t, s, outer)
                continue
            if not cfg["SINGLE"]:
                yield from self._colsplit_variants(cfg, element, extent, t, s, outer)
                continue
            warps = cfg.pop("num_warps")
            cfg.pop("G")
            cfg.pop("SINGLE")
            sig = {"dy_ptr": t, "x_ptr": t, "w_ptr": t, "mean_ptr": s, "rstd_ptr": s,
                   "dh_ptr": t, "dx_ptr": t, "part_ptr": s}
            const = dict(cfg, RMS=self.rms, HAS_W=True, HAS_DB=not self.rms, HAS_RES=False,
                         ACCUM=False, NI=1, COL64=False, ACC=acc_type(element),
                         **_UNIT_BWD, **outer)
            for n in row_norm_bwd_kernel.arg_names:
                if n not in sig and n not in const:
                    sig[n] = "i64"
            sig.update({n: "constexpr" for n in const})
            # rms f32 16K rows in registers spill a little with these 64-bit ints padded
            # first (gamma re-read per row already), and still beat the column split
            allowed = 400 if self.rms and extent == 16384 and element is ElementKind.F32 \
                else 0
            yield AotVariant(f"bwd {'rms' if self.rms else 'ln'} {element.value} N={extent}"
                             f"{_pad_name(last)}", row_norm_bwd_kernel, sig, const, num_warps=warps,
                             divisible=_aligned_ints(sig), max_spill_bytes=allowed)
        yield from _smem_bwd_variants(self.rms)
        if self.rms:
            for extent in (1024, 65536):
                pcfg = partial_config(extent, 264)
                warps = pcfg.pop("num_warps")
                const = dict(pcfg, NI=1, ACC=acc_type(ElementKind.F32), osc=1, os2c=1)
                sig = {"part_ptr": "*fp32", "out_ptr": "*bf16", "out2_ptr": "*bf16", "G": "i64",
                       "M": "i64", "IN1": "i64", "IN2": "i64", "osa": "i64", "osb": "i64",
                       "os2a": "i64", "os2b": "i64"}
                sig.update({n: "constexpr" for n in const})
                yield AotVariant(f"partial sum N={extent}", partial_sum_kernel, sig, const,
                                 num_warps=warps, divisible=_aligned_ints(sig))


#: One spec class per plan (RMSNormSpec, LayerNormBackwardSpec, ...), by (rms?, backward?).
SPECS = {
    (rms, plan.is_backward): type(plan.__name__.replace("Plan", "Spec"),
                                  (_BwdSpec if plan.is_backward else _FwdSpec,),
                                  {"plan": plan, "rms": rms, "__module__": __name__})
    for plan, rms in ((RMSNormPlan, True), (LayerNormPlan, False), (RMSNormBackwardPlan, True),
                      (LayerNormBackwardPlan, False))
}
for _cls in SPECS.values():
    register_spec(_cls())


BENCH_SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536)]


@register_bench("normalization")
def normalization_benches(quick: bool):
    """rms_norm / layer_norm, forward (bytes x + y) and forward+backward (x, y, dy, x, dx)."""
    import torch.nn.functional as F

    from .torch_api import layer_norm, rms_norm

    ours = {"rms_norm": lambda x, w, b: rms_norm(x, [x.shape[-1]], w, 1e-6),
            "layer_norm": lambda x, w, b: layer_norm(x, [x.shape[-1]], w, b, 1e-5)}
    peer = {"rms_norm": lambda x, w, b: F.rms_norm(x, [x.shape[-1]], w, 1e-6),
            "layer_norm": lambda x, w, b: F.layer_norm(x, [x.shape[-1]], w, b, 1e-5)}
    liger = {}
    try:  # the third peer, when its wheel is installed
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction

        liger = {"rms_norm": lambda x, w, b: LigerRMSNormFunction.apply(x, w, 1e-6),
                 "layer_norm": lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, 1e-5)}
    except Exception:  # noqa: BLE001 - optional peer
        pass
    out = []
    for dtype in (torch.bfloat16, torch.float32):
        for op in ("rms_norm", "layer_norm"):
            for shape in BENCH_SHAPES:
                nbytes = shape[0] * shape[1] * dtype.itemsize
                label = f"{list(shape)} {str(dtype).replace('torch.', '')}"

                def setup(device, shape=shape, dtype=dtype, grad=False):
                    x = torch.randn(shape, device=device, dtype=dtype, requires_grad=grad)
                    w = torch.randn(shape[-1:], device=device, dtype=dtype, requires_grad=grad)
                    b = torch.randn(shape[-1:], device=device, dtype=dtype, requires_grad=grad)
                    return {"x": x, "w": w, "b": b}

                def fwbw_setup(device, setup=setup):
                    s = setup(device, grad=True)
                    s["dy"] = torch.randn_like(s["x"])
                    return s

                def fb(fn, bias=op == "layer_norm"):
                    def run(x, w, b, dy):
                        return torch.autograd.grad(fn(x, w, b), (x, w, b) if bias else (x, w), dy)

                    return run

                headline = dtype == torch.bfloat16
                extra = {"liger": liger[op]} if liger else {}
                extra_fb = {"liger": fb(liger[op])} if liger else {}
                out.append(BenchCase(f"{op} fwd", label, setup, ours=ours[op],
                                     torch_eager=peer[op], bytes=2 * nbytes, quick=headline,
                                     extra_peers=extra))
                fwbw = BenchCase(f"{op} fwd+bwd", label, fwbw_setup, ours=fb(ours[op]),
                                 torch_eager=fb(peer[op]), bytes=5 * nbytes, quick=headline,
                                 extra_peers=extra_fb)
                out += [fwbw, single_threaded_autograd(fwbw)]
    return out
