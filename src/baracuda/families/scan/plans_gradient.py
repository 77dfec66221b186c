"""GradientPlan / GradientBackwardPlan: the three-point stencil of torch.gradient and its
transpose, on one Triton candidate.

**Formulas**: along the axis, y_i = (w_i0 x_{s_i} + w_i1 x_{s_i+1} + w_i2 x_{s_i+2}) / h_i with
s_i = clamp(i - 1, 0, max(N - 3, 0)) and one table row (w0, w1, w2, h) per position (torch's
central differences inside and one-sided ones of edge order 1 or 2 at the ends, uniform
spacing as weights over h, coordinates as weights with h = 1); a zero weight skips its tap.
Backward: dx_j = sum over the (i, k) with s_i + k = j of (w_ik / h_i) dy_i.

**Dtypes / shape**: {f32, f16, bf16, f64}; the table f64 for f64, else f32; f16/bf16 compute
in f32. Rank 1..8, any axis, any non-negative strides (non-scanned dims collapsed on the host).

**Workspace**: none. **Precision**: each output is one fixed expression of at most five
terms: deterministic, bit-stable, no atomics.
"""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import RecipeCache, acc_type, next_pow2, outer_launch_groups
from ...core.layout import axis_view
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import OpCategory, PrecisionGuarantee
from . import kernels_stencil as K
from .descriptors_gradient import (
    GradientArgs,
    GradientBackwardArgs,
    GradientBackwardDescriptor,
    GradientDescriptor,
)
from .plans import _inner_first


@register_plan
class GradientPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SCAN
    descriptor_type = GradientDescriptor
    args_type = GradientArgs
    partner = "GradientBackwardPlan"


@register_plan
class GradientBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SCAN
    descriptor_type = GradientBackwardDescriptor
    args_type = GradientBackwardArgs
    partner = "GradientPlan"
    is_backward = True


#: Elements of one [LINES, BLOCK] tile (halved for f64: registers).
TILE_ELEMS = 2048
#: Neighbouring lines a tile takes when the axis is not the innermost one (coalesced rows).
COLUMN_LINES = 64
#: Lines a tile takes along an innermost axis (sharing the tile's coefficient rows).
ROW_LINES = 16
WARPS = 4


def launch_config(desc) -> dict:
    """LINES and BLOCK: whole stretches of one line along an innermost axis, a run of
    COLUMN_LINES neighbouring lines along an outer one."""
    shape, axis = desc.input_shape, desc.axis
    n = shape[axis]
    lines = math.prod(d for i, d in enumerate(shape) if i != axis)
    inner = math.prod(shape[axis + 1:])
    elems = TILE_ELEMS // (2 if desc.element.itemsize == 8 else 1)
    if inner > 1:
        per_tile = min(next_pow2(inner), COLUMN_LINES)
        block = max(1, min(next_pow2(n), elems // per_tile))
    else:
        # several lines a tile even along the innermost axis: the tile's table rows (16 bytes
        # a position) are read once for all of its lines, not once a line
        per_tile = max(1, min(next_pow2(lines), ROW_LINES))
        block = max(1, min(next_pow2(n), elems // per_tile))
    return {"LINES": per_tile, "BLOCK": block, "blocks": max(cdiv(n, block), 1),
            "num_warps": WARPS}


_STEPS = RecipeCache()


def _steps(desc, tensors):
    """[(views or None, grid, int args, lines per tile)] over src, dst, and whether one launch
    covers every line (only then is the recipe cacheable)."""
    cfg = launch_config(desc)
    view = axis_view(desc.input_shape, tensors, desc.axis)
    outer, inner = _inner_first(view, view.outer_strides[0])
    n_lines = view.outer_shape[inner]
    lines_per_tile = min(cfg["LINES"], next_pow2(n_lines))
    inner_strides = [st[inner] for st in view.outer_strides]
    single, out = True, []
    for group, shape, strides in outer_launch_groups(outer, tensors, pad_last=True):
        single = single and group is tensors
        stride_args = []
        for k, st in enumerate(strides):
            stride_args += [*st, inner_strides[k], view.axis_strides[k]]
        grid = (math.prod(shape) * cdiv(n_lines, lines_per_tile) * cfg["blocks"],)
        ints = (n_lines, view.extent, cfg["blocks"], *shape[1:], *stride_args)
        out.append((None if group is tensors else group, grid, ints, lines_per_tile))
    return out, single


def _cacheable(desc, tensors):
    steps, single = _steps(desc, tensors)
    return steps if single else None


def launch(desc, src: torch.Tensor, table: torch.Tensor, dst: torch.Tensor) -> None:
    tensors = [src, dst]
    key = (desc, src.stride(), dst.stride())
    steps = _STEPS.get(key, lambda: _cacheable(desc, tensors))
    if steps is None:
        steps, _ = _steps(desc, tensors)
    cfg = launch_config(desc)
    backward = isinstance(desc, GradientBackwardDescriptor)
    tn, tk = table.stride()
    for views, grid, ints, lines_per_tile in steps:
        s, d = tensors if views is None else views
        n_lines, n, blocks, *rest = ints
        K.stencil_kernel[grid](s, table, d, n_lines, n, blocks, tn, tk, *rest,
                               ACC=acc_type(desc.element), BACKWARD=backward,
                               LINES=lines_per_tile, BLOCK=cfg["BLOCK"],
                               num_warps=cfg["num_warps"])


@register_candidate(GradientPlan)
class TritonStencilForward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_stencil"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def workspace_size(self, desc) -> int:
        return 0

    def launch(self, desc, args, workspace) -> None:
        launch(desc, args.x, args.table, args.y)


@register_candidate(GradientBackwardPlan)
class TritonStencilBackward(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_stencil_backward"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def workspace_size(self, desc) -> int:
        return 0

    def launch(self, desc, args, workspace) -> None:
        launch(desc, args.dy, args.table, args.dx)
