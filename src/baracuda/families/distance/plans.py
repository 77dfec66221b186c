"""Distance plans: cdist's direct form (and pdist), cdist's matmul form (p = 2), row
distances (pairwise_distance, dist) and cosine similarity, each with its backward.

**Formulas**: ||v||_p = (sum |v_m|^p)^(1/p); p = 0 counts non-zeros, +-inf take max / min
|v_m|. cdist's matmul form: sqrt(max(|x|^2 + |y|^2 - 2 x . y, 0)). Cosine: torch's
sum(x / max(|x|, eps) * y / max(|y|, eps)). Backwards are torch's subgradients (0 where the
norm is 0; norms' +-inf ties share the gradient, cdist / pdist ties each take all of it).

**Dtypes / shape**: direct cdist / pdist f32, f64 (torch's set); the rest f32, f64, f16,
bf16, computed in f32 (f64 in f64). Any non-negative strides (stride 0: broadcast rows).

**Workspace**: dist: one partial per row; the +-inf row-norm backward: per-row maxima and
tie counts; the matmul form: squared norms (forward), the ratio grad / out and its row and
column sums (backward).

**Precision**: deterministic: every output element is reduced by one program in a fixed
order; the backwards gather (sum over the other operand's rows in order), no atomics. The
matmul form's Gram products run on torch.matmul (cuBLAS, deterministic on one GPU model).
"""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import acc_type, next_pow2, split_f64
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory
from .descriptors import (
    P_GENERAL,
    P_INF,
    P_NEG_INF,
    P_TWO,
    CdistArgs,
    CdistBackwardArgs,
    CdistBackwardDescriptor,
    CdistDescriptor,
    CosineArgs,
    CosineBackwardArgs,
    CosineBackwardDescriptor,
    CosineDescriptor,
    EuclidCdistArgs,
    EuclidCdistBackwardArgs,
    EuclidCdistBackwardDescriptor,
    EuclidCdistDescriptor,
    RowDistArgs,
    RowDistBackwardArgs,
    RowDistBackwardDescriptor,
    RowDistDescriptor,
    p_kind,
)
from .kernels import (
    E_AXPY,
    E_DIST,
    E_RATIO,
    M_COMBINE,
    M_NORM,
    M_PARTIAL,
    M_SUM,
    M_TIE,
    cosine_bwd_kernel,
    cosine_fwd_kernel,
    euclid_tile_kernel,
    pair_bwd_kernel,
    pair_fwd_kernel,
    rows_grad_kernel,
    rows_kernel,
)

#: combine (0 sum, 1 max, 2 min) and its identity per p kind; |v| >= 0, so an empty max is 0
COMB = {P_INF: 1, P_NEG_INF: 2}
IDENT = {0: 0.0, 1: 0.0, 2: math.inf}
#: elements one program holds per row-loop step
ROW_TILE = 4096


def acc_dtype(element: ElementKind) -> torch.dtype:
    return torch.float64 if element is ElementKind.F64 else torch.float32


def row_config(cols: int, element: ElementKind) -> dict:
    """BLOCK_M covers a row up to 1024 elements (512 in f64), BLOCK_R rows fill the tile."""
    block_m = min(next_pow2(max(cols, 1)), 512 if element is ElementKind.F64 else 1024)
    block_r = max(1, min(64, ROW_TILE // block_m))
    return {"BLOCK_R": block_r, "BLOCK_M": block_m,
            "num_warps": 8 if block_r * block_m >= ROW_TILE else 4}


def pair_config(element: ElementKind, backward: bool, kind: int = 1) -> dict:
    """[BLOCK_I, BLOCK_J, BLOCK_K] register tiles of the direct form: f64 values and the
    general order's powers (log2, exp2 temporaries; in f64 also p = 2's division) each halve
    the backward's tile so that it stays in registers (no spills)."""
    wide = element is ElementKind.F64
    if backward:
        heavy = kind == P_GENERAL or (wide and kind == P_TWO)
        block_m = 32 // (2 if wide else 1) // (2 if heavy else 1)
        return {"BLOCK_I": 16, "BLOCK_J": 16, "BLOCK_M": block_m, "num_warps": 4}
    return {"BLOCK_I": 32, "BLOCK_J": 16 if wide else 32, "BLOCK_K": 8, "num_warps": 4}


TILE_CFG = {"BLOCK_I": 32, "BLOCK_J": 64, "num_warps": 4}
#: CUDA's limit on a grid's y and z extents (the tiled kernels put column tiles and the batch
#: there)
GRID_YZ = 65535


def grid_reason(desc, block_j: int) -> str | None:
    """Why a [rows, columns / block_j, batch] grid does not fit, or None."""
    if desc.batch > GRID_YZ:
        return f"batch {desc.batch} > {GRID_YZ} (the grid's z limit)"
    if cdiv(max(desc.rows_y, desc.cols), block_j) > GRID_YZ:
        return f"{max(desc.rows_y, desc.cols)} columns > {GRID_YZ} tiles of {block_j}"
    return None


def _rows(x, y, ref, out, rows, cols, *, sx, sy=(0, 0), sref=0, sout=1, p=2.0, eps=0.0,
          kind=2, mode=M_NORM, comb=0, element=ElementKind.F32) -> None:
    """One rows_kernel launch; y None reduces x alone."""
    if rows == 0:
        return
    cfg = row_config(cols, element)
    rows_kernel[(cdiv(rows, cfg["BLOCK_R"]),)](
        x, x if y is None else y, x if ref is None else ref, out, rows, cols, *sx, *sy, sref,
        sout, *split_f64(p), *split_f64(eps), KIND=kind, MODE=mode, COMB=comb, IDENT=IDENT[comb],
        HAS_Y=y is not None, ACC=acc_type(element), **cfg)


def _acc_view(workspace, element: ElementKind, n: int) -> torch.Tensor:
    return workspace[: n * acc_dtype(element).itemsize].view(acc_dtype(element))


# -- direct cdist / pdist ---------------------------------------------------------------------

@register_plan
class CdistPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = CdistDescriptor
    args_type = CdistArgs
    partner = "CdistBackwardPlan"
    OP_NAME = "cdist"


@register_plan
class CdistBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = CdistBackwardDescriptor
    args_type = CdistBackwardArgs
    partner = "CdistPlan"
    is_backward = True
    OP_NAME = "cdist_backward"


def _strides3(t: torch.Tensor, condensed: bool) -> tuple[int, int, int]:
    return (0, *t.stride()) if condensed else tuple(t.stride())


@register_candidate(CdistPlan)
class TritonCdist(Candidate):
    replayable = True  # only Triton launches
    name = "triton_pair_tiles"

    def supports(self, desc, pref, arch) -> str | None:
        return grid_reason(desc, 16)

    def launch(self, desc, args, workspace) -> None:
        c = desc.condensed
        y = args.x if c else args.y
        cfg = pair_config(desc.element, backward=False)
        kind = p_kind(desc.p)
        so = (0, 0, args.out.stride(0)) if c else args.out.stride()
        grid = (cdiv(desc.rows_x, cfg["BLOCK_I"]), cdiv(desc.rows_y, cfg["BLOCK_J"]),
                desc.batch)
        pair_fwd_kernel[grid](
            args.x, y, args.out, desc.rows_x, desc.rows_y, desc.cols, *_strides3(args.x, c),
            *_strides3(y, c), *so, *split_f64(desc.p), KIND=kind, COMB=COMB.get(kind, 0),
            CONDENSED=c, ACC=acc_type(desc.element), **cfg)


@register_candidate(CdistBackwardPlan)
class TritonCdistBackward(Candidate):
    replayable = True  # only Triton launches
    name = "triton_pair_tiles_gather"

    def supports(self, desc, pref, arch) -> str | None:
        return grid_reason(desc, 8)

    def launch(self, desc, args, workspace) -> None:
        c = desc.condensed
        cfg = pair_config(desc.element, backward=True, kind=p_kind(desc.p))
        common = dict(KIND=p_kind(desc.p), CONDENSED=c, ACC=acc_type(desc.element), **cfg)
        sg = (0, 0, args.grad.stride(0)) if c else args.grad.stride()
        sd = (0, 0, args.out.stride(0)) if c else args.out.stride()
        y = args.x if c else args.y
        grid = (cdiv(desc.rows_x, cfg["BLOCK_I"]), cdiv(desc.cols, cfg["BLOCK_M"]), desc.batch)
        pair_bwd_kernel[grid](
            args.grad, args.x, y, args.out, args.gx, desc.rows_x, desc.rows_y, desc.cols, *sg,
            *_strides3(args.x, c), *_strides3(y, c), *sd, *_strides3(args.gx, c),
            *split_f64(desc.p), **common)
        if c:
            return
        # y's gradient: the same gather with the operands swapped, grad and out transposed
        grid = (cdiv(desc.rows_y, cfg["BLOCK_I"]), cdiv(desc.cols, cfg["BLOCK_M"]), desc.batch)
        pair_bwd_kernel[grid](
            args.grad, args.y, args.x, args.out, args.gy, desc.rows_y, desc.rows_x, desc.cols,
            sg[0], sg[2], sg[1], *args.y.stride(), *args.x.stride(), sd[0], sd[2], sd[1],
            *args.gy.stride(), *split_f64(desc.p), **common)


# -- cdist's matmul form (p = 2) ----------------------------------------------------------------

@register_plan
class EuclidCdistPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = EuclidCdistDescriptor
    args_type = EuclidCdistArgs
    partner = "EuclidCdistBackwardPlan"
    OP_NAME = "cdist_mm"


@register_plan
class EuclidCdistBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = EuclidCdistBackwardDescriptor
    args_type = EuclidCdistBackwardArgs
    partner = "EuclidCdistPlan"
    is_backward = True
    OP_NAME = "cdist_mm_backward"


def _row_sums(t, out, batch, rows, cols, strides, element, mode, kind=2) -> None:
    """out[b * rows + r] = sum over m of t[b, r, m] (mode M_SUM) or its squares (M_PARTIAL,
    kind 2); one launch when the batch steps evenly over the rows."""
    sb, sr, sm = strides
    if batch == 1 or sb == rows * sr:
        _rows(t, None, None, out, batch * rows, cols, sx=(sr, sm), mode=mode, kind=kind,
              element=element)
        return
    for b in range(batch):
        _rows(t[b], None, None, out[b * rows:], rows, cols, sx=(sr, sm), mode=mode, kind=kind,
              element=element)


def _tile(mode, a, u, v, out, batch, rows, cols, sa, su, sv, so, element, b=None, sb=(0, 0)):
    cfg = TILE_CFG
    grid = (cdiv(rows, cfg["BLOCK_I"]), cdiv(cols, cfg["BLOCK_J"]), batch)
    euclid_tile_kernel[grid](a, u, u if v is None else v, out, rows, cols, *sa, *sb, *su,
                             *(sv or (0, 0, 0)), *so, a if b is None else b, MODE=mode,
                             ACC=acc_type(element), **cfg)


@register_candidate(EuclidCdistPlan)
class MatmulEuclidCdist(Candidate):
    name = "matmul_euclid"  # torch.matmul between Triton launches: not replayable

    def supports(self, desc, pref, arch) -> str | None:
        return grid_reason(desc, TILE_CFG["BLOCK_J"])

    def workspace_size(self, desc) -> int:
        return desc.batch * (desc.rows_x + desc.rows_y) * acc_dtype(desc.element).itemsize

    def launch(self, desc, args, workspace) -> None:
        B, P, Q, M = desc.batch, desc.rows_x, desc.rows_y, desc.cols
        norms = _acc_view(workspace, desc.element, B * (P + Q))
        xn, yn = norms[: B * P], norms[B * P:]
        _row_sums(args.x, xn, B, P, M, args.x.stride(), desc.element, M_PARTIAL)
        _row_sums(args.y, yn, B, Q, M, args.y.stride(), desc.element, M_PARTIAL)
        torch.matmul(args.x, args.y.mT, out=args.out)  # the Gram product, finished in place
        so = args.out.stride()
        _tile(E_DIST, xn, args.out, None, args.out, B, P, Q, (P, 1), so, None, so,
              desc.element, b=yn, sb=(Q, 1))


@register_candidate(EuclidCdistBackwardPlan)
class MatmulEuclidCdistBackward(Candidate):
    name = "matmul_euclid_backward"

    def supports(self, desc, pref, arch) -> str | None:
        return grid_reason(desc, TILE_CFG["BLOCK_J"])

    @staticmethod
    def _ratio_bytes(desc) -> int:
        n = desc.batch * desc.rows_x * desc.rows_y * desc.element.torch_dtype.itemsize
        return cdiv(n, 16) * 16

    def workspace_size(self, desc) -> int:
        sums = desc.batch * (desc.rows_x + desc.rows_y) * acc_dtype(desc.element).itemsize
        return self._ratio_bytes(desc) + sums

    def launch(self, desc, args, workspace) -> None:
        B, P, Q, M = desc.batch, desc.rows_x, desc.rows_y, desc.cols
        nr = self._ratio_bytes(desc)
        r = workspace[: B * P * Q * desc.element.torch_dtype.itemsize].view(
            desc.element.torch_dtype).view(B, P, Q)
        sums = _acc_view(workspace[nr:], desc.element, B * (P + Q))
        rs, cs = sums[: B * P], sums[B * P:]
        rst = r.stride()
        _tile(E_RATIO, args.grad, args.grad, args.out, r, B, P, Q, (0, 0), args.grad.stride(),
              args.out.stride(), rst, desc.element)
        _row_sums(r, rs, B, P, Q, rst, desc.element, M_SUM)
        for b in range(B):  # column sums: r[b] transposed
            _rows(r[b], None, None, cs[b * Q:], Q, P, sx=(1, Q), mode=M_SUM,
                  element=desc.element)
        for g, t, other, s, n in ((args.gx, args.x, args.y, rs, P),
                                  (args.gy, args.y, args.x, cs, Q)):
            ratio = r if g is args.gx else r.mT
            torch.matmul(ratio, other, out=g)
            _tile(E_AXPY, s, t, g, g, B, n, M, (n, 1), t.stride(), g.stride(), g.stride(),
                  desc.element)


# -- row distances: pairwise_distance, dist ----------------------------------------------------

@register_plan
class RowDistPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = RowDistDescriptor
    args_type = RowDistArgs
    partner = "RowDistBackwardPlan"
    OP_NAME = "row_distance"


@register_plan
class RowDistBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = RowDistBackwardDescriptor
    args_type = RowDistBackwardArgs
    partner = "RowDistPlan"
    is_backward = True
    OP_NAME = "row_distance_backward"


def _is_extreme(desc) -> bool:
    return p_kind(desc.p) in (P_INF, P_NEG_INF)


@register_candidate(RowDistPlan)
class TritonRowDist(Candidate):
    replayable = True  # only Triton launches
    name = "triton_rows"

    def workspace_size(self, desc) -> int:
        return desc.rows * acc_dtype(desc.element).itemsize if desc.reduce_all else 0

    def launch(self, desc, args, workspace) -> None:
        kind = p_kind(desc.p)
        k = dict(p=desc.p, kind=kind, comb=COMB.get(kind, 0), element=desc.element)
        R, M = desc.rows, desc.cols
        sx, sy = args.x.stride(), args.y.stride()
        if not desc.reduce_all:
            _rows(args.x, args.y, None, args.out, R, M, sx=sx, sy=sy, sout=args.out.stride(0),
                  eps=desc.eps, mode=M_NORM, **k)
            return
        part = _acc_view(workspace, desc.element, R) if R else args.out
        _rows(args.x, args.y, None, part, R, M, sx=sx, sy=sy, eps=desc.eps, mode=M_PARTIAL,
              **k)
        _rows(part, None, None, args.out, 1, R, sx=(0, 1), sout=0, mode=M_COMBINE, **k)


@register_candidate(RowDistBackwardPlan)
class TritonRowDistBackward(Candidate):
    replayable = True  # only Triton launches
    name = "triton_rows_backward"

    def workspace_size(self, desc) -> int:
        if not _is_extreme(desc):
            return 0
        return (2 * desc.rows + 2 * desc.reduce_all) * acc_dtype(desc.element).itemsize

    def launch(self, desc, args, workspace) -> None:
        kind = p_kind(desc.p)
        R, M = desc.rows, desc.cols
        sx, sy = args.x.stride(), args.y.stride()
        k = dict(p=desc.p, kind=kind, element=desc.element)
        red = desc.reduce_all
        d, sd = args.out, 0 if red else args.out.stride(0)
        cnt, scnt = args.out, 0
        if _is_extreme(desc):
            # the max / min and its ties again in the accumulator's precision: the stored
            # 16-bit output need not equal any |x - y + eps| computed in f32
            ws = _acc_view(workspace, desc.element, 2 * R + 2 * red)
            ext, ties = ws[:R], ws[R: 2 * R]
            comb = COMB[kind]
            _rows(args.x, args.y, None, ext, R, M, sx=sx, sy=sy, eps=desc.eps,
                  mode=M_PARTIAL, comb=comb, **k)
            d, sd, cnt, scnt = ext, 1, ties, 1
            if red:
                d, cnt, sd, scnt = ws[2 * R:], ws[2 * R + 1:], 0, 0
                _rows(ext, None, None, d, 1, R, sx=(0, 1), mode=M_COMBINE, comb=comb, **k)
            _rows(args.x, args.y, d, ties, R, M, sx=sx, sy=sy, sref=sd, eps=desc.eps,
                  mode=M_TIE, **k)
            if red:
                _rows(ties, None, None, cnt, 1, R, sx=(0, 1), mode=M_SUM, **k)
        cfg = row_config(M, desc.element)
        rows_grad_kernel[(cdiv(R, cfg["BLOCK_R"]),)](
            args.grad, args.x, args.y, d, cnt, args.gx, args.gy, R, M,
            0 if red else args.grad.stride(0), *sx, *sy, sd, scnt, *args.gx.stride(),
            *args.gy.stride(), *split_f64(desc.p), *split_f64(desc.eps), KIND=kind,
            ACC=acc_type(desc.element), **cfg)


# -- cosine similarity ---------------------------------------------------------------------------

@register_plan
class CosinePlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = CosineDescriptor
    args_type = CosineArgs
    partner = "CosineBackwardPlan"
    OP_NAME = "cosine_similarity"


@register_plan
class CosineBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LINALG
    descriptor_type = CosineBackwardDescriptor
    args_type = CosineBackwardArgs
    partner = "CosinePlan"
    is_backward = True
    OP_NAME = "cosine_similarity_backward"


@register_candidate(CosinePlan)
class TritonCosine(Candidate):
    replayable = True  # only Triton launches
    name = "triton_rows_cosine"

    def launch(self, desc, args, workspace) -> None:
        cfg = row_config(desc.cols, desc.element)
        cosine_fwd_kernel[(cdiv(desc.rows, cfg["BLOCK_R"]),)](
            args.x, args.y, args.out, desc.rows, desc.cols, *args.x.stride(), *args.y.stride(),
            args.out.stride(0), *split_f64(desc.eps), ACC=acc_type(desc.element), **cfg)


@register_candidate(CosineBackwardPlan)
class TritonCosineBackward(Candidate):
    replayable = True  # only Triton launches
    name = "triton_rows_cosine_backward"

    def launch(self, desc, args, workspace) -> None:
        cfg = row_config(desc.cols, desc.element)
        cosine_bwd_kernel[(cdiv(desc.rows, cfg["BLOCK_R"]),)](
            args.grad, args.x, args.y, args.gx, args.gy, desc.rows, desc.cols,
            args.grad.stride(0), *args.x.stride(), *args.y.stride(), *args.gx.stride(),
            *args.gy.stride(), *split_f64(desc.eps), ACC=acc_type(desc.element), **cfg)
