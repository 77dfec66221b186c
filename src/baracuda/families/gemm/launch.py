"""Host-side helpers shared by the GEMM candidates: layout checks, batch collapsing, the Triton
tile table and launchers."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import torch

from ...backends.triton_support import INTERP, acc_type, split_f64
from ...core.errors import InvalidProblem, Unsupported
from ...core.layout import collapse_dims
from ...core.runtime import cdiv
from ...core.vocab import ArchSku, ElementKind, PlanPreference
from .kernels import act_rows_kernel, colsum_kernel, colsum_split_kernel, gemm_kernel


def check_matrix_layout(who: str, name: str, t: torch.Tensor) -> None:
    """The last two dims: one is unit-stride and the other's stride (the leading dimension)
    covers the unit-stride extent, as BLAS requires."""
    rows, cols = t.shape[-2], t.shape[-1]
    sr, sc = t.stride(-2), t.stride(-1)
    if any(s < 0 for s in t.stride()):
        raise Unsupported(f"{who}: {name} has negative strides {t.stride()}; expected >= 0")
    if rows <= 1 or cols <= 1:
        return
    if sc == 1:
        if sr < cols:
            raise InvalidProblem(f"{who}: {name} is row-major with leading dimension {sr}; "
                                 f"expected >= {cols} (its column count)")
    elif sr == 1:
        if sc < rows:
            raise InvalidProblem(f"{who}: {name} is column-major with leading dimension {sc}; "
                                 f"expected >= {rows} (its row count)")
    else:
        raise Unsupported(f"{who}: {name} needs unit stride in one of its last two dims "
                          f"(row- or column-major), got strides {t.stride()}")


@dataclass(frozen=True)
class Tile:
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    warps: int
    stages: int
    math: int  # kernels.py MATH code
    epi_split: int = 1  # 2: the epilogue runs on two column halves (fewer live registers)


def tile_for(element: ElementKind, m: int, n: int, arch: ArchSku, pref: PlanPreference,
             epilogue_math: bool = False) -> Tile:
    """Tile table per dtype and arch. tl.dot needs every block dim >= 16 on the GPU.
    128x256 tiles leave no registers for an activation epilogue (ptxas spills): 128x128 then."""
    if element is ElementKind.F64:
        return Tile(32, 32, 8, 8, 4, 2, 3) if arch is not ArchSku.INTERPRETER else \
            Tile(16, 16, 8, 1, 4, 1, 3)
    f32_math = 1 if pref.allow_tf32 else 0
    math = f32_math if element is ElementKind.F32 else 2
    if arch is ArchSku.INTERPRETER:
        return Tile(32, 32, 16, 2, 4, 1, math)
    if element is ElementKind.F32:
        if f32_math == 0:
            return Tile(64, 64, 32, 8, 4, 3, 0)
        return Tile(128, 128, 32, 8, 8, 3, 1)
    if m <= 64 or n <= 64:
        return Tile(64, 64, 64, 8, 4, 4, math)
    if epilogue_math:
        # 128x256 spills (gelu_tanh with a saved pre-activation, sm_90a AOT check)
        # even with the activation on column quarters: 128x128, halves.
        return Tile(128, 128, 64, 8, 8, 3, math, 2)
    return Tile(128, 256, 64, 8, 8, 3, math)


def _view(t: torch.Tensor, nb: int, offset: int) -> torch.Tensor:
    return t.as_strided(tuple(t.shape[nb:]), tuple(t.stride()[nb:]), t.storage_offset() + offset)


def batch_groups(batch: tuple[int, ...], tensors: dict[str, torch.Tensor | None]):
    """Yield (views, nb, batch strides) covering the batch with one collapsed batch dim each;
    views are 2-D (matrix) views of every tensor, shifted to the group's first batch."""
    live = {k: t for k, t in tensors.items() if t is not None}
    nb = len(batch)
    if nb == 0:
        yield dict(tensors), 1, {k: 0 for k in live}
        return
    shape, strides = collapse_dims(batch, [t.stride()[:nb] for t in live.values()])
    per = dict(zip(live, strides))
    lead = shape[:-1]
    for idx in itertools.product(*[range(d) for d in lead]):
        views: dict[str, torch.Tensor | None] = dict.fromkeys(tensors)
        for k, t in live.items():
            off = sum(i * s for i, s in zip(idx, per[k][:-1]))
            views[k] = _view(t, nb, off)
        yield views, shape[-1], {k: per[k][-1] for k in live}


def launch_gemm(desc, args, arch: ArchSku, pref: PlanPreference) -> None:
    """The Triton GEMM over the whole (possibly batched) problem, epilogue fused."""
    m, n = desc.m, desc.n
    if m == 0 or n == 0 or desc.nbatch == 0:
        _bias_grad(desc, args)
        return
    tile = tile_for(desc.element, m, n, arch, pref,
                    desc.activation.code != 0 or desc.dactivation.code != 0)
    if _tunable(desc, arch):
        tile = _tuned_tile(desc, args, arch, pref, tile)
    _launch_tile(desc, args, tile)
    _bias_grad(desc, args)


#: Tiles timed once per problem and operand layout for large f16/bf16 GEMMs with a fused
#: activation on sm_90 (which wins depends on how much of the epilogue overlaps other tiles'
#: main loops). All use BLOCK_K 64: every candidate adds the k-products in the same order, so
#: the result is the same bits whichever tile wins (the plan stays deterministic).
EPILOGUE_TILES = (Tile(128, 128, 64, 8, 8, 3, 2, 2), Tile(128, 128, 64, 8, 4, 3, 2, 2))
#: Smallest problem (multiply-adds) that is timed; smaller ones take the table's tile.
TUNE_MACS = 1 << 32
_TUNED: dict = {}


def _tunable(desc, arch: ArchSku) -> bool:
    return (arch in (ArchSku.SM90, ArchSku.SM90A) and len(EPILOGUE_TILES) > 1
            and desc.element in (ElementKind.BF16, ElementKind.F16) and not desc.has_c
            and (desc.activation.code != 0 or desc.dactivation.code != 0)
            and desc.m * desc.n * desc.k * desc.nbatch >= TUNE_MACS)


def _tuned_tile(desc, args, arch, pref, default: Tile) -> Tile:
    """The fastest of EPILOGUE_TILES on these operands, timed on the first call (outputs are
    rewritten by the winner afterwards; C is never read here, so reruns are harmless). Not
    timed while a CUDA graph is being captured: the table's tile then."""
    lay = tuple(None if t is None else (tuple(t.stride()), t.data_ptr() % 16)
                for t in (args.a, args.b, args.d, args.preact, args.preact_out))
    key = (desc, lay, args.d.device.index)
    tile = _TUNED.get(key)
    if tile is not None:
        return tile
    if torch.cuda.is_current_stream_capturing():
        return default
    from ...backends.timing import CudaEventChain

    times = []
    for cand in EPILOGUE_TILES:
        try:
            # one warm-up call compiles; then the fastest of 3 timed calls
            chain = CudaEventChain(functools.partial(_launch_tile, desc, args, cand), 3)
            times.append((min(chain.ms()), cand))
        except Exception:  # noqa: BLE001 - a tile that fails to compile/launch is not a choice
            continue
    tile = min(times, key=lambda x: x[0])[1] if times else default
    _TUNED[key] = tile
    return tile


def _launch_tile(desc, args, tile: Tile) -> None:
    m, n, k = desc.m, desc.n, desc.k
    tensors = {"a": args.a, "b": args.b, "c": args.c if desc.has_c else None,
               "pre": args.preact if desc.dactivation.code else None, "d": args.d,
               "preo": args.preact_out if desc.save_preact else None}
    a_hi, a_lo = split_f64(desc.alpha)
    b_hi, b_lo = split_f64(desc.beta)
    bias = args.bias if desc.bias else None
    for v, nb, bs in batch_groups(desc.batch, tensors):
        def st(name, i, v=v):
            t = v[name]
            return 0 if t is None else t.stride(i)

        grid = (cdiv(m, tile.block_m) * cdiv(n, tile.block_n) * nb,)
        d = v["d"]
        gemm_kernel[grid](
            v["a"], v["b"], v["c"] if v["c"] is not None else d,
            bias if bias is not None else d,
            v["pre"] if v["pre"] is not None else d, d,
            v["preo"] if v["preo"] is not None else d,
            m, n, k,
            bs.get("a", 0), st("a", 0), st("a", 1), bs.get("b", 0), st("b", 0), st("b", 1),
            bs.get("c", 0), st("c", 0), st("c", 1), bias.stride(0) if bias is not None else 0,
            bs.get("pre", 0), st("pre", 0), st("pre", 1), bs.get("d", 0), st("d", 0),
            st("d", 1), bs.get("preo", 0), st("preo", 0), st("preo", 1),
            a_hi, a_lo, b_hi, b_lo,
            HAS_C=desc.has_c, HAS_BIAS=desc.bias, ACT=desc.activation.code,
            SAVE_PRE=desc.save_preact, DACT=desc.dactivation.code, MATH=tile.math,
            ACC=acc_type(desc.element), EVEN_K=k % tile.block_k == 0,
            BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, BLOCK_K=tile.block_k,
            GROUP_M=tile.group_m, IDX64=_needs_idx64(v), INTERPRETING=INTERP,
            EPI_SPLIT=tile.epi_split, num_warps=tile.warps, num_stages=tile.stages,
        )


def _needs_idx64(views) -> bool:
    """True when some matrix's in-tile offsets could pass 2**31 (then the kernel uses int64)."""
    for t in views.values():
        if t is not None and t.dim() >= 2:
            span = sum((d - 1) * s for d, s in zip(t.shape[-2:], t.stride()[-2:]) if d > 0)
            if span + 4096 >= 2**31:
                return True
    return False


def _bias_grad(desc, args) -> None:
    if desc.bias_grad:
        colsum(args.d, desc.batch, args.dbias, desc.element)


#: Rows per first-stage chunk of the two-stage column sum.
COLSUM_CHUNK = 256


def colsum_workspace(rows: int, cols: int, element: ElementKind) -> int:
    """Bytes of f32 (f64) partial sums the two-stage column sum needs."""
    size = element.compute_kind.itemsize
    return cdiv(rows, COLSUM_CHUNK) * cols * size if rows > COLSUM_CHUNK else 0


def colsum(x: torch.Tensor, batch: tuple[int, ...], out: torch.Tensor,
           element: ElementKind, workspace: torch.Tensor | None = None) -> None:
    """out[n] = x summed over batch and rows, in a fixed order (deterministic). With a
    workspace (colsum_workspace bytes) and no batch, rows are split into fixed chunks whose
    partial sums are reduced by a second pass: many more programs, same bits every run."""
    n = out.shape[0]
    if n == 0:
        return
    if workspace is not None and not batch and colsum_workspace(x.shape[0], n, element):
        rows = x.shape[0]
        splits = cdiv(rows, COLSUM_CHUNK)
        acc_dt = element.compute_kind.torch_dtype
        part = workspace[: splits * n * acc_dt.itemsize].view(acc_dt).view(splits, n)
        colsum_split_kernel[(cdiv(n, 64), splits)](
            x, part, rows, n, COLSUM_CHUNK, x.stride(0), x.stride(1), ACC=acc_type(element),
            BLOCK_R=32, BLOCK_C=64, num_warps=4)
        x, batch = part, ()
    nb = len(batch)
    if nb:
        shape, strides = collapse_dims(batch, [x.stride()[:nb]])
        if len(shape) > 1:
            raise Unsupported(f"colsum: batch dims of the gradient must collapse to one, got "
                              f"strides {x.stride()}")
        nbatch, sb = shape[0], strides[0][0]
        if any(d == 0 for d in batch):
            nbatch = 0
        x2 = _view(x, nb, 0)
    else:
        nbatch, sb, x2 = 1, 0, x
    block_c = 64
    colsum_kernel[(cdiv(n, block_c),)](
        x2, out, nbatch, x2.shape[0], n, sb, x2.stride(0), x2.stride(1), out.stride(0),
        ACC=acc_type(element), BLOCK_R=32, BLOCK_C=block_c, num_warps=4,
    )


#: Rows per program of the activation kernel; with bias-gradient partials, also the rows
#: each partial sum covers (R/ACT_ROWS x C f32 partials, a few MB at most).
ACT_ROWS = 64
#: (rows per step, warps) of the activation kernel for 1-2 byte elements (256 columns a
#: program) and for 4-8 byte ones (128 columns).
ACT_TILE_HALF = (16, 4)
ACT_TILE_WIDE = (8, 4)


def act_partials_workspace(rows: int, cols: int, element: ElementKind) -> int:
    """Bytes of the partial column sums `activation_2d(..., dbias=...)` writes."""
    return cdiv(rows, ACT_ROWS) * cols * element.compute_kind.itemsize


def activation_2d(x: torch.Tensor, y: torch.Tensor, act_code: int, element: ElementKind,
                  grad: torch.Tensor | None = None, dbias: torch.Tensor | None = None,
                  workspace: torch.Tensor | None = None) -> None:
    """y = act(x), or y = grad * act'(x) when grad is given; 2-D strided tensors. With dbias
    (and act_partials_workspace bytes of workspace) dbias = column sums of y as well, in two
    fixed-order stages (deterministic) without reading y back."""
    r, c = x.shape
    if c == 0:
        return
    if r == 0:
        if dbias is not None:
            dbias.zero_()
        return
    g = grad if grad is not None else x
    partial = dbias is not None
    acc_dt = element.compute_kind.torch_dtype
    splits = cdiv(r, ACT_ROWS)
    part = (workspace[: splits * c * acc_dt.itemsize].view(acc_dt).view(splits, c)
            if partial else y)
    half = element.itemsize <= 2
    block_c = 256 if half else 128
    block_r, warps = ACT_TILE_HALF if half else ACT_TILE_WIDE
    act_rows_kernel[(splits, cdiv(c, block_c))](
        x_ptr=x, g_ptr=g, y_ptr=y, part_ptr=part, R=r, C=c, ROWS=ACT_ROWS,
        s_xr=x.stride(0), s_xc=x.stride(1), s_gr=g.stride(0), s_gc=g.stride(1),
        s_yr=y.stride(0), s_yc=y.stride(1), ACT=act_code, GRAD=grad is not None,
        PARTIAL=partial, ACC=acc_type(element), BLOCK_R=block_r, BLOCK_C=block_c,
        num_warps=warps,
    )
    if partial:
        colsum(part, (), dbias, element)
