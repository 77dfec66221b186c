"""AOT sm_90a variants of the reduction kernels: rows and columns, bf16 and f32, the kinds
with the most state (var, argmax, logsumexp), the chunk combine and both gradient launches."""

from __future__ import annotations

import itertools

import torch

from ...backends.triton_support import triton_dtype
from ...core.spec import AotVariant
from ...core.vocab import ElementKind
from . import kernels as KN
from . import kernels_backward as KB
from .descriptors import ReductionKind as K
from .plans import (
    BACKWARD_CODES,
    FORWARD_CODES,
    FULL_MAX_SPLIT,
    MAX_SPLIT,
    TILE_WARPS,
    accumulator,
    combine_block,
    state_type,
    tile_config,
)
from .spec_aot_ext import ext_variants

#: the constexprs of a launch without a mask operand
UNMASKED = dict(MASK=KN.MASK_NONE, IDENT=0)
_SHAPES = {"row": (4096, 16384, True, False), "column": (4096, 4096, False, True)}


def _sig(kernel, pointers: dict, const: dict) -> dict:
    sig = {}
    for name in kernel.arg_names:
        if name in pointers:
            sig[name] = pointers[name]
        elif name in const:
            sig[name] = "constexpr"
        elif name.startswith("corr"):
            sig[name] = "fp32"
        elif name == "m_ptr":  # the mask operand (unmasked launches pass x, never read)
            sig[name] = "*u8"
        else:
            sig[name] = "i32"
    return sig


def _unit_strides(kernel, pattern: str) -> dict:
    """Contiguous operands as the JIT specializes them (an int equal to 1 is a constant): the
    per-line operands' stride, and the input's along the reduced axis (row) or along the kept
    one (column)."""
    unit = {}
    for n in kernel.arg_names:
        if len(n) != 3 or n[2] != "3" or n[1] not in "kr":
            continue
        full = n[0] in "xdm"
        if (n[1] == "r" and pattern == "row") or (n[1] == "k" and (not full or
                                                                    pattern == "column")):
            unit[n] = 1
    return unit


#: integer, bool and f64 rows: int64 states and bounds, f64 exp / log / sqrt
_EXTRA_ROWS = [(K.AMAX, ElementKind.I32), (K.SUM, ElementKind.U8), (K.ALL, ElementKind.U8),
               (K.LOGSUMEXP, ElementKind.F64), (K.STD_MEAN, ElementKind.F64),
               (K.ARGMIN, ElementKind.I64), (K.PROD, ElementKind.F32)]


def _extra_variants():
    from .descriptors import default_out_element
    from .plans import _bounds

    K_lines, R, row, column = _SHAPES["row"]
    for kind, element in _EXTRA_ROWS:
        out = default_out_element(kind, element)
        if kind is K.ARGMIN:
            out = ElementKind.I64
        acc = accumulator(kind, element, out)
        block_k, block_r = tile_config(K_lines, R, row, column,
                                       wide=acc.is_floating_point and acc.itemsize == 8)
        op, pre, post = FORWARD_CODES[kind]
        lowest, highest = _bounds(acc)
        const = dict(OP=op, PRE=pre, POST=post, INDEX=kind is K.ARGMIN,
                     ACC=state_type(acc), IS_FLOAT=acc.is_floating_point,
                     LOWEST=lowest, HIGHEST=highest, BLOCK_K=block_k, BLOCK_R=block_r,
                     K_DIMS=1, R_DIMS=1, PARTIAL=False, **UNMASKED, COUNT=False,
                     **_unit_strides(KN.reduce_kernel, "row"))
        t = "*" + triton_dtype(element.torch_dtype)
        t2 = "*" + triton_dtype(out.torch_dtype if out is not ElementKind.BOOL else torch.uint8)
        ptrs = {"x_ptr": t, "y_ptr": t2, "y2_ptr": t2, "wsf_ptr": "*" + triton_dtype(acc),
                "wsi_ptr": "*i64"}
        sig = _sig(KN.reduce_kernel, ptrs, const)
        yield AotVariant(f"reduce_kernel {kind.value} {element.value} row", KN.reduce_kernel,
                         sig, const, num_warps=TILE_WARPS,
                         divisible=tuple(n for n in sig if sig[n] == "i32"))


def aot_variants():
    yield from _extra_variants()
    for element, kind, pattern in itertools.product(
            (ElementKind.BF16, ElementKind.F32),
            (K.SUM, K.VAR_MEAN, K.ARGMAX, K.LOGSUMEXP), ("row", "column")):
        K_lines, R, row, column = _SHAPES[pattern]
        block_k, block_r = tile_config(K_lines, R, row, column)
        out = ElementKind.I64 if kind is K.ARGMAX else element
        acc = accumulator(kind, element, out)
        op, pre, post = FORWARD_CODES[kind]
        lowest, highest = (-float("inf"), float("inf"))
        t = "*" + triton_dtype(element.torch_dtype)
        t2 = "*i64" if kind is K.ARGMAX else t
        ws = "*" + triton_dtype(acc)
        # the chunked form (few long lines) on rows of the kinds with the most state
        split = pattern == "row" and kind is not K.LOGSUMEXP
        for partial in (False, True) if split else (False,):
            const = dict(OP=op, PRE=pre, POST=post, INDEX=kind is K.ARGMAX,
                         ACC=state_type(acc), IS_FLOAT=True, LOWEST=lowest,
                         HIGHEST=highest, BLOCK_K=block_k, BLOCK_R=block_r, K_DIMS=1,
                         R_DIMS=1, PARTIAL=partial, **UNMASKED, COUNT=False,
                         **_unit_strides(KN.reduce_kernel, pattern))
            ptrs = {"x_ptr": t, "y_ptr": t2, "y2_ptr": t2, "wsf_ptr": ws, "wsi_ptr": "*i64"}
            sig = _sig(KN.reduce_kernel, ptrs, const)
            yield AotVariant(f"reduce_kernel {kind.value} {element.value} {pattern} "
                             f"partial={partial}", KN.reduce_kernel, sig, const,
                             num_warps=TILE_WARPS,
                             divisible=tuple(n for n in sig if sig[n] == "i32"))
        if not split:
            continue
        # a split of many lines, and a full reduction's (one line, the most chunks)
        for lines, split_p in ((K_lines, MAX_SPLIT), (1, FULL_MAX_SPLIT)):
            const = dict(OP=op, POST=post, INDEX=kind is K.ARGMAX, ACC=state_type(acc),
                         IS_FLOAT=True, LOWEST=lowest, HIGHEST=highest,
                         BLOCK_K=combine_block(lines, split_p), SPLIT_P=split_p, K_DIMS=1)
            sig = _sig(KN.reduce_combine_kernel, {"wsf_ptr": ws, "wsi_ptr": "*i64",
                                                  "y_ptr": t2, "y2_ptr": t2}, const)
            yield AotVariant(f"reduce_combine_kernel {kind.value} {element.value} {pattern} "
                             f"split={split_p}", KN.reduce_combine_kernel, sig, const,
                             num_warps=4)
    yield from _backward_variants()
    yield from ext_variants()


def _backward_variants():
    for element, kind, pattern in itertools.product(
            (ElementKind.BF16,), (K.SUM, K.STD_MEAN, K.AMAX, K.MAX), ("row", "column")):
        K_lines, R, row, column = _SHAPES[pattern]
        block_k, block_r = tile_config(K_lines, R, row, column)
        acc = accumulator(kind, element, element)
        code = BACKWARD_CODES[kind]
        stats = code in KB.NEEDS_STATS
        t = "*" + triton_dtype(element.torch_dtype)
        ptrs = {"dy_ptr": t, "dy2_ptr": t, "y_ptr": t, "y2_ptr": "*i64" if kind is K.MAX else t,
                "x_ptr": t, "dx_ptr": t, "wsf_ptr": "*" + triton_dtype(acc), "wsi_ptr": "*i64"}
        for mode in ((KB.MODE_STATS, KB.MODE_APPLY) if stats else (KB.MODE_APPLY,)):
            const = dict(KIND=code, MODE=mode, ACC=state_type(acc),
                         BLOCK_K=block_k, BLOCK_R=block_r, SPLIT_P=64, K_DIMS=1, R_DIMS=1,
                         HAS_X=kind is not K.MAX, HAS_Y=kind in (K.STD_MEAN, K.AMAX),
                         HAS_Y2=kind is K.MAX, HAS_G2=kind is K.STD_MEAN, STATS=stats, **UNMASKED,
                         **_unit_strides(KB.reduce_bwd_kernel, pattern))
            sig = _sig(KB.reduce_bwd_kernel, ptrs, const)
            yield AotVariant(f"reduce_bwd_kernel {kind.value} {element.value} {pattern} "
                             f"mode={mode}", KB.reduce_bwd_kernel, sig, const,
                             num_warps=TILE_WARPS,
                             divisible=tuple(n for n in sig if sig[n] == "i32"))

