"""RMSNormPlan / LayerNormPlan and their backward plans, on one Triton row-norm candidate each.

**Formulas**: over the normalized suffix (M = prod of its extents), per row:
RMSNorm   rstd = 1 / sqrt(mean(x^2) + eps),            y = x * rstd * gamma
LayerNorm mean = mean(x), rstd = 1 / sqrt(var(x) + eps) (biased), y = (x - mean) rstd gamma + beta
Backward (xhat = (x - mean) * rstd, mean = 0 for RMSNorm, g = dy * gamma):
dx = rstd * (g - xhat * mean(g * xhat) - mean(g)) (the mean(g) term for LayerNorm only),
dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy.
Fused residual variant (``has_residual``): h = x + residual (rounded to the element type) is
written to ``residual_out`` and normalized; its backward takes h as x and adds the gradient of
residual_out (``dresidual_out``) to dx, which is then the gradient of both x and residual.

**Dtypes / shape**: {f32, f16, bf16, f64}, rank 1..8, norm_axes a non-empty suffix; gamma /
beta / dgamma / dbeta have the normalized shape. Saved statistics (mean, rstd) have the input
shape with the normalized axes set to 1 and are f32 (f64 for f64 inputs). Any non-negative
strides: outer dims collapse to at most 3, the normalized suffix to at most 2.

**Workspace**: forward none, except f32 rows longer than a tile (chunk exchange: two
partial sums per chunk and one arrival counter per row); backward (has_gamma + has_beta) *
G * M accumulator floats for the per-program dgamma / dbeta partials (G = a few programs per
SM, at most the row groups), then for rows longer than a register tile two partial sums per
chunk of each row and one arrival counter per row (chunk exchange), or two coefficients per
row (the column split, rows of more than 64 chunks).

**Precision**: f16/bf16 accumulate in f32, f64 in f64. Deterministic and bit-stable on the same
hardware: each row is reduced in a fixed order (by one program, or by its chunk programs, which
add the row's partial sums in chunk order), dgamma / dbeta by fixed-order two-stage sums
(partials in the workspace, no atomics).
"""

from __future__ import annotations

import functools

from ...backends.triton_exchange import exchange_bytes, split_workspace, zero
from ...backends.triton_support import acc_type, maxnreg_option, split_f64
from ...core import validate as V
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import OpCategory
from .descriptors import (
    LayerNormArgs,
    LayerNormBackwardArgs,
    LayerNormBackwardDescriptor,
    LayerNormDescriptor,
    RMSNormArgs,
    RMSNormBackwardArgs,
    RMSNormBackwardDescriptor,
    RMSNormDescriptor,
)
from .kernels import row_norm_bwd_kernel, row_norm_fwd_kernel, sum_partials
from .kernels_colsplit import col_grad_kernel, row_grad_stats_kernel
from .kernels_exchange import row_norm_bwd_exchange_kernel, row_norm_fwd_exchange_kernel
from .layout import (
    bwd_config,
    fwd_config,
    pads_last,
    partial_config,
    row_layout,
)

#: What the family package re-exports from this module.
__all__ = [
    "LayerNormBackwardPlan", "LayerNormPlan", "RMSNormBackwardPlan", "RMSNormPlan",
]


def make_plan(name: str, desc_t, args_t, partner: str, backward: bool, op_name, doc: str,
              module: str = __name__):
    """Register a normalization plan: its argument checks are the Args' declared operands;
    `op_name(desc)` names the torch op it serves."""
    plan = type(name, (Plan,), {
        "__doc__": doc, "__module__": module, "category": OpCategory.NORMALIZATION,
        "descriptor_type": desc_t, "args_type": args_t, "partner": partner,
        "is_backward": backward, "op_name": classmethod(lambda cls, d: op_name(d)),
    })
    return register_plan(plan)


def _row_plan(name: str, desc_t, args_t, partner: str, op: str, backward: bool = False):
    def op_name(d) -> str:
        return op + ("_residual" if d.has_residual else "") + ("_backward" if backward else "")

    return make_plan(name, desc_t, args_t, partner, backward, op_name, __doc__)


RMSNormPlan = _row_plan("RMSNormPlan", RMSNormDescriptor, RMSNormArgs, "RMSNormBackwardPlan",
                        "rms_norm")
RMSNormBackwardPlan = _row_plan("RMSNormBackwardPlan", RMSNormBackwardDescriptor,
                                RMSNormBackwardArgs, "RMSNormPlan", "rms_norm", backward=True)
LayerNormPlan = _row_plan("LayerNormPlan", LayerNormDescriptor, LayerNormArgs,
                          "LayerNormBackwardPlan", "layer_norm")
LayerNormBackwardPlan = _row_plan("LayerNormBackwardPlan", LayerNormBackwardDescriptor,
                                  LayerNormBackwardArgs, "LayerNormPlan", "layer_norm",
                                  backward=True)


# -- launch ------------------------------------------------------------------------------------
def _forward_ops(args):
    return getattr(args, "mean", None), getattr(args, "beta", None)


def _fwd_layout(who, desc, args):
    mean, beta = _forward_ops(args)
    rows_ops = [args.x, args.residual, args.residual_out, args.y]
    return row_layout(who, desc.input_shape, desc.n_norm, rows_ops, [mean, args.rstd],
                      [args.gamma, beta])


def _bwd_layout(who, desc, args):
    rows_ops = [args.dy, args.x, args.dresidual_out, args.dx]
    params = [args.gamma, args.dgamma, getattr(args, "dbeta", None)]
    return row_layout(who, desc.input_shape, desc.n_norm, rows_ops,
                      [getattr(args, "mean", None), args.rstd], params)


@functools.lru_cache(maxsize=2048)
def _fwd_recipe(desc, rms: bool, lay, n_rows, o1, o2, o):
    """Grid, scalar tail and constexprs of one forward launch (cached: host time matters)."""
    m = desc.norm_total_extent
    cfg = fwd_config(m, n_rows, desc.element, _layer(desc))
    warps, g = cfg.pop("num_warps"), cfg.pop("G")
    i = lay.inner
    scalars = (n_rows, m, o1, o2, lay.in1, lay.in2, g, *split_f64(desc.eps),
               *o[0], *i[0], *o[1], *i[1], *o[2], *i[2], *o[3], *i[3],
               *i[4], *i[5], *o[4], *o[5])
    kw = dict(RMS=rms, HAS_W=desc.has_gamma, HAS_B=getattr(desc, "has_beta", False),
              HAS_RES=desc.has_residual, NI=lay.ni, COL64=lay.col64,
              ACC=acc_type(desc.element), num_warps=warps, **cfg)
    return (g,), scalars, kw


@functools.lru_cache(maxsize=2048)
def _fwd_exchange_recipe(desc, rms: bool, lay, n_rows, o1, o2, o):
    """Grid, scalar tail and constexprs of one chunk-exchange forward launch."""
    m = desc.norm_total_extent
    cfg = fwd_config(m, n_rows, desc.element, _layer(desc))
    i = lay.inner
    scalars = (n_rows, m, o1, o2, lay.in1, lay.in2, cfg["N_CHUNKS"], *split_f64(desc.eps),
               *o[0], *i[0], *o[1], *i[1], *o[2], *i[2], *o[3], *i[3],
               *i[4], *i[5], *o[4], *o[5])
    kw = dict(RMS=rms, HAS_W=desc.has_gamma, HAS_B=getattr(desc, "has_beta", False),
              HAS_RES=desc.has_residual, NI=lay.ni, COL64=lay.col64,
              ACC=acc_type(desc.element), BLOCK_N=cfg["BLOCK_N"], PARTS=cfg["PARTS"],
              SPIN=cfg["SPIN"], num_warps=cfg["num_warps"], **maxnreg_option(cfg.get("maxnreg")))
    return (cfg["G"],), scalars, kw


def forward_workspace(desc) -> int:
    """Bytes: none, or (chunk exchange) two partial sums per chunk and one counter per row."""
    m = desc.norm_total_extent
    if m == 0 or desc.rows == 0:
        return 0
    cfg = fwd_config(m, desc.rows, desc.element, _layer(desc))
    if not cfg.get("EXCHANGE"):
        return 0
    return exchange_bytes(desc.element.compute_kind.torch_dtype, 2 * cfg["G"], desc.rows)


def _launch_forward(desc, args, rms: bool, workspace=None) -> None:
    m, rows = desc.norm_total_extent, desc.rows
    mean, beta = _forward_ops(args)
    if rows == 0:
        return
    if m == 0:  # torch: mean 0, rstd NaN for an empty normalized extent
        args.rstd.fill_(float("nan"))
        if mean is not None:
            mean.zero_()
        return
    lay = _fwd_layout("RMSNormPlan" if rms else "LayerNormPlan", desc, args)
    outer_ops = [args.x, args.residual, args.residual_out, args.y, mean, args.rstd]
    cfg = fwd_config(m, rows, desc.element, _layer(desc))
    exchange = cfg.get("EXCHANGE", False)
    if exchange:
        part, counters = split_workspace(workspace, desc.element.compute_kind.torch_dtype,
                                         2 * cfg["G"], rows)
    pad_last = pads_last(cfg, desc.element, _layer(desc), False)
    for views, n_rows, o1, o2, o in lay.launches(outer_ops, pad_last):
        x, r, h, y, mu, rs = views
        ptrs = [x if t is None else t for t in (x, r, h, y, args.gamma, beta, mu, rs)]
        if exchange:  # groups run one after another and reuse the partials and counters
            grid, scalars, kw = _fwd_exchange_recipe(desc, rms, lay, n_rows, o1, o2, tuple(o))
            zero(counters[:n_rows])
            row_norm_fwd_exchange_kernel[grid](*ptrs, part, counters, *scalars, **kw)
        else:
            grid, scalars, kw = _fwd_recipe(desc, rms, lay, n_rows, o1, o2, tuple(o))
            row_norm_fwd_kernel[grid](*ptrs, *scalars, **kw)


def _layer(desc) -> bool:
    """layer_norm (mean subtracted, a dbeta partial) rather than rms_norm: its own tiles. The
    one rule every tile lookup uses (forward and backward, launch and workspace size)."""
    return isinstance(desc, (LayerNormDescriptor, LayerNormBackwardDescriptor))


def backward_workspace(desc) -> int:
    """Bytes: the [G, M] dgamma / dbeta partials in the accumulator type, then (column
    split) the [2, rows] row coefficients, or (chunk exchange) two partial sums per chunk of
    a row and one arrival counter per row."""
    if desc.norm_total_extent == 0:
        return 0
    n_part = int(desc.has_gamma) + int(getattr(desc, "has_beta", False))
    cfg = bwd_config(desc.norm_total_extent, desc.rows, desc.element, _layer(desc))
    acc = desc.element.compute_kind.torch_dtype
    n = n_part * cfg["G"] * desc.norm_total_extent
    if cfg.get("EXCHANGE"):
        return n * acc.itemsize + exchange_bytes(acc, 2 * desc.rows * cfg["N_CHUNKS"],
                                                 desc.rows)
    if not cfg["SINGLE"]:
        n += 2 * desc.rows
    return n * acc.itemsize


def _bwd_strides(lay, o) -> tuple:
    """The stride tail every backward row kernel takes: dy, x, dresidual_out, dx (outer and
    inner), gamma (inner), mean and rstd (outer), in the kernels' parameter order."""
    i = lay.inner
    return (*o[0], *i[0], *o[1], *i[1], *o[2], *i[2], *o[3], *i[3], *i[4], *o[4], *o[5])


def _bwd_flags(desc, rms: bool, lay, accum: bool) -> dict:
    """The constexprs every backward row kernel that writes dx takes."""
    return dict(RMS=rms, HAS_W=desc.has_gamma, HAS_DB=getattr(desc, "has_beta", False),
                HAS_RES=desc.has_residual, ACCUM=accum, NI=lay.ni, COL64=lay.col64,
                ACC=acc_type(desc.element))


@functools.lru_cache(maxsize=2048)
def _bwd_recipe(desc, rms: bool, lay, n_rows, o1, o2, o, accum: bool):
    """Scalar tail and constexprs of one backward launch (cached: host time matters)."""
    m = desc.norm_total_extent
    cfg = bwd_config(m, desc.rows, desc.element, _layer(desc))
    warps, g = cfg.pop("num_warps"), cfg.pop("G")
    cfg.pop("SINGLE")
    scalars = (n_rows, m, o1, o2, lay.in1, lay.in2, g, *_bwd_strides(lay, o))
    return scalars, dict(_bwd_flags(desc, rms, lay, accum), num_warps=warps, **cfg)


@functools.lru_cache(maxsize=2048)
def _bwd_exchange_recipe(desc, rms: bool, lay, n_rows, o1, o2, o, accum: bool):
    """Grid, scalar tail and constexprs of one chunk-exchange backward launch: the G groups
    of the whole problem (the workspace holds G partial rows) share this launch's rows."""
    m = desc.norm_total_extent
    cfg = bwd_config(m, desc.rows, desc.element, _layer(desc))
    g, n_chunks = cfg["G"], cfg["N_CHUNKS"]
    scalars = (n_rows, m, o1, o2, lay.in1, lay.in2, g, n_chunks, cdiv(n_rows, g),
               *_bwd_strides(lay, o))
    kw = dict(_bwd_flags(desc, rms, lay, accum), BLOCK_N=cfg["BLOCK_N"], PARTS=cfg["PARTS"],
              SPIN=cfg["SPIN"], AHEAD=cfg["AHEAD"], num_warps=cfg["num_warps"],
              **maxnreg_option(cfg.get("maxnreg")))
    return (g * n_chunks,), scalars, kw


@functools.lru_cache(maxsize=2048)
def _bwd_partials(desc, n_part: int):
    """(G, partial-buffer elements, path, pad last) of one backward problem, path "single"
    (rows in registers), "exchange" or "colsplit", pad last the launches' outer layout
    (layout.pads_last). G and the tile come from the whole problem (the workspace was sized
    from it); a problem split over several launches accumulates into the same partial rows."""
    m = desc.norm_total_extent
    cfg = bwd_config(m, desc.rows, desc.element, _layer(desc))
    g = cfg["G"]
    path = ("single" if cfg["SINGLE"] else "exchange" if cfg.get("EXCHANGE")
            else "colsplit")
    return g, n_part * g * m, path, pads_last(cfg, desc.element, _layer(desc), True)


def _launch_backward(desc, args, workspace, rms: bool) -> None:
    m, rows = desc.norm_total_extent, desc.rows
    dbeta = getattr(args, "dbeta", None)
    mean = getattr(args, "mean", None)
    if m == 0:
        return
    n_part = int(args.dgamma is not None) + int(dbeta is not None)
    g, n_elems, path, pad_last = _bwd_partials(desc, n_part)
    part = args.dx
    acc = desc.element.compute_kind.torch_dtype
    if workspace is not None:  # sized by backward_workspace: partials, then the rest
        flat = workspace[: workspace.numel() // acc.itemsize * acc.itemsize].view(acc)
        if n_part and g:
            part = flat[:n_elems]
    lay = _bwd_layout("RMSNormBackwardPlan" if rms else "LayerNormBackwardPlan", desc, args)
    if rows > 0:
        outer_ops = [args.dy, args.x, args.dresidual_out, args.dx, mean, args.rstd]
        if path == "exchange":
            n_chunks = bwd_config(m, rows, desc.element, _layer(desc))["N_CHUNKS"]
            sums, counters = split_workspace(workspace[n_elems * acc.itemsize:], acc,
                                             2 * rows * n_chunks, rows)
        for n, (views, n_rows, o1, o2, o) in enumerate(lay.launches(outer_ops, pad_last)):
            dy, x, dh, dx, mu, rs = views
            if path == "single":
                scalars, kw = _bwd_recipe(desc, rms, lay, n_rows, o1, o2, tuple(o), n > 0)
                ptrs = [dy, x, args.gamma, mu, rs, dh, dx]
                row_norm_bwd_kernel[(g,)](*[x if t is None else t for t in ptrs], part,
                                          *scalars, **kw)
                continue
            if path == "exchange":  # launches run one after another: counters zeroed each
                grid, scalars, kw = _bwd_exchange_recipe(desc, rms, lay, n_rows, o1, o2,
                                                         tuple(o), n > 0)
                zero(counters[:n_rows])
                ptrs = [dy, x, args.gamma, mu, rs, dh, dx]
                row_norm_bwd_exchange_kernel[grid](*[x if t is None else t for t in ptrs],
                                                   part, sums, counters, *scalars, **kw)
                continue
            coef = flat[n_elems:n_elems + 2 * n_rows]
            stats, cols = _colsplit_recipe(desc, rms, lay, n_rows, o1, o2, tuple(o), n > 0)
            ptrs = [dy, x, args.gamma, mu, rs]
            row_grad_stats_kernel[(n_rows,)](*[x if t is None else t for t in ptrs], coef,
                                             *stats[0], **stats[1])
            ptrs = [dy, x, args.gamma, mu, rs, coef, dh, dx]
            col_grad_kernel[cols[0]](*[x if t is None else t for t in ptrs], part, *cols[1],
                                     **cols[2])
    # no rows: no program wrote a partial (a long row's G counts chunks, not rows, so it
    # is not 0 here); dgamma / dbeta are the sums over no rows, zeros
    reduce_param_partials(desc, args, part, g if rows > 0 else 0, lay)


def reduce_param_partials(desc, args, part, g: int, lay) -> None:
    """dgamma / dbeta = the column sums of the [g, M] partials in `part` (dgamma's first),
    in a fixed order: the second stage of every backward path (kernels.sum_partials)."""
    i = lay.inner
    outs = [(out, stride) for out, stride in ((args.dgamma, i[5]),
                                              (getattr(args, "dbeta", None), i[6]))
            if out is not None]
    m = desc.norm_total_extent
    sum_partials(part, outs, g, m, lay.in1, lay.in2, lay.ni, acc_type(desc.element),
                 _partial_cfg(m, g))


@functools.lru_cache(maxsize=2048)
def _partial_cfg(m: int, g: int) -> dict:
    """Constexprs of the partial sum over g rows of M columns (cached: host time per call)."""
    return partial_config(m, g)


@functools.lru_cache(maxsize=2048)
def _colsplit_recipe(desc, rms: bool, lay, n_rows, o1, o2, o, accum: bool):
    """(stats scalars, constexprs), (grid, scalars, constexprs) of one column-split launch:
    the row chunks are as many as the workspace holds (G of the whole problem)."""
    m = desc.norm_total_extent
    cfg = bwd_config(m, desc.rows, desc.element, _layer(desc))
    chunks = cfg["G"]
    chunk_rows = cdiv(n_rows, chunks)
    i = lay.inner
    common = dict(RMS=rms, HAS_W=desc.has_gamma, NI=lay.ni, ACC=acc_type(desc.element),
                  COL64=lay.col64)
    stats = ((n_rows, m, o1, o2, lay.in1, lay.in2, *o[0], *i[0], *o[1], *i[1], *i[4], *o[4],
              *o[5]), dict(common, BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"]))
    cols = ((cdiv(m, cfg["BLOCK_C"]), chunks),
            (n_rows, m, o1, o2, lay.in1, lay.in2, chunk_rows, chunks, *_bwd_strides(lay, o)),
            dict(_bwd_flags(desc, rms, lay, accum), BLOCK_C=cfg["BLOCK_C"], num_warps=4))
    return stats, cols


class _RowNormCandidate(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    rms: bool = True
    backward: bool = False

    def workspace_size(self, desc) -> int:
        return backward_workspace(desc) if self.backward else forward_workspace(desc)

    def can_implement(self, desc, args) -> None:
        who = type(self).__name__
        for name, t in args.tensors().items():
            V.check_nonnegative_strides(who, name, t)
        (_bwd_layout if self.backward else _fwd_layout)(who, desc, args)

    def launch(self, desc, args, workspace) -> None:
        if self.backward:
            _launch_backward(desc, args, workspace, self.rms)
        else:
            _launch_forward(desc, args, self.rms, workspace)


def register_row_candidates(base, class_prefix: str, name_prefix: str) -> tuple:
    """Subclass `base` once per row-norm plan and register each: the candidates of rms_norm,
    its backward, layer_norm and its backward, classes <class_prefix>RMSNorm... named
    <name_prefix>_rms_norm..."""
    made = []
    for plan in (RMSNormPlan, RMSNormBackwardPlan, LayerNormPlan, LayerNormBackwardPlan):
        op = plan.__name__.removesuffix("Plan")
        rms, backward = op.startswith("RMS"), plan.is_backward
        attrs = {"name": f"{name_prefix}_{'rms' if rms else 'layer'}_norm"
                         + ("_backward" if backward else ""),
                 "rms": rms, "backward": backward, "__module__": base.__module__}
        made.append(register_candidate(plan)(type(class_prefix + op, (base,), attrs)))
    return tuple(made)


TritonRMSNorm, TritonRMSNormBackward, TritonLayerNorm, TritonLayerNormBackward = \
    register_row_candidates(_RowNormCandidate, "Triton", "triton_row")
