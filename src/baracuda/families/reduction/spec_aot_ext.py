"""AOT sm_90a variants of the kinds with an order or a mask: the norms' element transforms and
roots (forward) and formulas (backward, the +-inf one with its tie count), logmeanexp, ptp
(its gradient's min / max tie counts), the bitwise states, hash's bit widening, and a mask
operand in both of its modes."""

from __future__ import annotations

import torch

from ...backends.triton_support import triton_dtype
from ...core.spec import AotVariant
from ...core.vocab import ElementKind
from . import kernels as KN
from . import kernels_backward as KB
from .descriptors import ReductionBackwardDescriptor, ReductionDescriptor, default_out_element
from .descriptors import ReductionKind as K
from .plans import (
    _bounds,
    accumulator,
    backward_code,
    backward_stats,
    forward_codes,
    mask_codes,
    state_type,
    tile_config,
    tile_warps,
)

INF = float("inf")
SHAPE = (4096, 16384)
F32, BF16, I32 = ElementKind.F32, ElementKind.BF16, ElementKind.I32

#: (kind, element, order, masked)
FORWARD = [(K.NORM, BF16, 2.0, False), (K.NORM, F32, 3.0, False), (K.NORM, F32, INF, False),
           (K.NORM, BF16, 0.0, False), (K.LOGMEANEXP, BF16, 0.0, False),
           (K.PTP, F32, 0.0, False), (K.XOR, I32, 0.0, False), (K.AND, I32, 0.0, False),
           (K.OR, ElementKind.U8, 0.0, False), (K.HASH, F32, 0.0, False),
           (K.HASH, ElementKind.F16, 0.0, False),
           (K.SUM, F32, 0.0, True), (K.AMAX, I32, 0.0, True), (K.VAR, F32, 0.0, True),
           (K.MEAN, BF16, 0.0, True), (K.NORM, F32, -INF, True)]
BACKWARD = [(K.NORM, BF16, 2.0, False), (K.NORM, F32, INF, False), (K.NORM, F32, 0.5, False),
            (K.NORM, F32, 3.0, False), (K.LOGMEANEXP, BF16, 0.0, False),
            (K.PTP, F32, 0.0, False), (K.SUM, F32, 0.0, True), (K.STD, F32, 0.0, True),
            (K.AMAX, F32, 0.0, True)]


def _ptr(element: ElementKind) -> str:
    dt = element.torch_dtype
    return "*" + triton_dtype(torch.uint8 if dt == torch.bool else dt)


def _sig(kernel, pointers: dict, const: dict, unit: dict) -> dict:
    sig = {}
    for name in kernel.arg_names:
        if name in pointers:
            sig[name] = pointers[name]
        elif name in const or name in unit:
            sig[name] = "constexpr"
        elif name.startswith("corr"):
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    return sig


def _row_units(kernel) -> dict:
    """A contiguous row reduction's unit strides: the reduced axis of x (and the mask), the
    kept axis of the per-line operands."""
    unit = {}
    for n in kernel.arg_names:
        if len(n) == 3 and n[2] == "3" and n[1] in "kr":
            if n[1] == "r" and n[0] in "xdm" or n[1] == "k" and n[0] not in "xdm":
                unit[n] = 1
    return unit


def _forward(kind, element, order, masked):
    out = default_out_element(kind, element)
    desc = ReductionDescriptor(kind, SHAPE, (1,), False, element, out, 0.0, order, masked)
    acc = accumulator(kind, element, out)
    block_k, block_r = tile_config(SHAPE[0], SHAPE[1], True, False,
                                   wide=acc.is_floating_point and acc.itemsize == 8)
    op, pre, post = forward_codes(desc)
    lowest, highest = _bounds(acc)
    unit = _row_units(KN.reduce_kernel)
    const = dict(OP=op, PRE=pre, POST=post, INDEX=False, ACC=state_type(acc),
                 IS_FLOAT=acc.is_floating_point, LOWEST=lowest, HIGHEST=highest,
                 BLOCK_K=block_k, BLOCK_R=block_r, K_DIMS=1, R_DIMS=1, PARTIAL=False,
                 COUNT=masked and op == KN.OP_SUM and kind is K.MEAN,
                 **mask_codes(desc, acc), **unit)
    t = _ptr(element)
    ptrs = {"x_ptr": t, "m_ptr": "*u8" if masked else t, "y_ptr": _ptr(out),
            "y2_ptr": _ptr(out), "wsf_ptr": "*" + triton_dtype(acc), "wsi_ptr": "*i64"}
    sig = _sig(KN.reduce_kernel, ptrs, const, unit)
    name = f"reduce_kernel {kind.value}{order:g} {element.value} row masked={masked}"
    return AotVariant(name, KN.reduce_kernel, sig, const,
                      num_warps=tile_warps(block_k, block_r),
                      divisible=tuple(n for n in sig if sig[n] == "i32"))


def _backward(kind, element, order, masked):
    desc = ReductionBackwardDescriptor(kind, SHAPE, (1,), False, element, element,
                                       1.0 if kind is K.STD else 0.0, order, masked)
    acc = accumulator(kind, element, element)
    block_k, block_r = tile_config(SHAPE[0], SHAPE[1], True, False)
    code, stats = backward_code(desc), backward_stats(desc)
    t = _ptr(element)
    ptrs = {"dy_ptr": t, "dy2_ptr": t, "y_ptr": t, "y2_ptr": t, "x_ptr": t, "dx_ptr": t,
            "m_ptr": "*u8" if masked else t, "wsf_ptr": "*" + triton_dtype(acc),
            "wsi_ptr": "*i64"}
    unit = _row_units(KB.reduce_bwd_kernel)
    for mode in (KB.MODE_STATS, KB.MODE_APPLY) if stats else (KB.MODE_APPLY,):
        const = dict(KIND=code, MODE=mode, ACC=state_type(acc), BLOCK_K=block_k,
                     BLOCK_R=block_r, SPLIT_P=64, K_DIMS=1, R_DIMS=1,
                     HAS_X=kind is not K.SUM, HAS_Y=kind is not K.SUM,
                     HAS_Y2=kind is K.PTP, HAS_G2=False, STATS=stats,
                     **mask_codes(desc, acc), **unit)
        sig = _sig(KB.reduce_bwd_kernel, ptrs, const, unit)
        yield AotVariant(f"reduce_bwd_kernel {kind.value}{order:g} {element.value} row "
                         f"masked={masked} mode={mode}", KB.reduce_bwd_kernel, sig, const,
                         num_warps=tile_warps(block_k, block_r),
                         divisible=tuple(n for n in sig if sig[n] == "i32"))


def ext_variants():
    for row in FORWARD:
        yield _forward(*row)
    for row in BACKWARD:
        yield from _backward(*row)
