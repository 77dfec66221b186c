"""GenericReductionPlan: a reduction with the caller's combine function, the analogue of
`jax.lax.reduce` and `tl.reduce`, and `reduce`, its function on torch tensors.

**Formula**: y = x_0 . x_1 . ... . x_{n-1} over the reduced axes for the combine `.`, a
`@triton.jit` function of two values returning one of their type, and `identity`, a Python
number e with e . a == a for every a. Together they must form a commutative monoid: the
combine associative ((a . b) . c == a . (b . c)) and commutative (a . b == b . a), since lanes
take strided elements of a line and merge in a tree, not left to right; the identity fills
masked lanes and is the value of an empty reduction. The combine is called on broadcastable
tiles of values (it must be elementwise).

**Dtypes / shape**: {f32, f16, bf16, f64} and {i8, i16, i32, i64, u8, bool}; the result keeps
the input's dtype. The combine sees f16 / bf16 as f32 (one rounding, at the store), bool as
int8 (0 / 1), every other dtype as itself; the identity must be representable there (an
integer for integer inputs, 0 or 1 for bool; not NaN). Rank 0..8, any set of axes, any
non-negative strides (dims merged on the host as the family's other kinds; reduced dims that
stay more than four apart after merging are refused).

**Workspace**: lines split over several programs keep one value per line and chunk.

**Precision**: deterministic and bit-stable on the same hardware: each lane folds its elements
in order, lanes merge in a fixed tree, chunks in a fixed tree over chunk order; no atomics.
Exact for exact combines (max, min, bitwise, integer sums); float sums round as any tree sum.

**Gradients**: none: a user combine has no derivative here (JAX refuses too). `reduce` raises
`Unsupported` for an input that requires grad while grad mode is on.

**torch.compile**: `reduce` is an eager function (the combine is a Python object, not an
operator argument); a compiled region calling it breaks its graph there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton.language as tl
from triton.runtime.jit import KernelInterface

from ...backends.torch_ops import normalize_dim, run_plan
from ...backends.triton_support import next_pow2
from ...core import validate as V
from ...core.args import NON_NEGATIVE, Args, operand
from ...core.errors import InvalidProblem, Unsupported
from ...core.plan import Candidate, Descriptor, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from . import generic_kernels as GK
from .descriptors import ReducedAxes
from .layout import MAX_DIMS, launches, merged_dims
from .plans import COMBINE_ELEMS, TILE_WARPS, max_split_count, split_count, tile_config

__all__ = ["reduce"]

ELEMENTS = tuple(ElementKind)
#: what the combine computes in, per element (halves widen; bool as 0 / 1 in int8)
_COMPUTE = {ElementKind.F16: torch.float32, ElementKind.BF16: torch.float32,
            ElementKind.BOOL: torch.int8}
_TL = {torch.float32: tl.float32, torch.float64: tl.float64, torch.int8: tl.int8,
       torch.int16: tl.int16, torch.int32: tl.int32, torch.int64: tl.int64,
       torch.uint8: tl.uint8}


def compute_dtype(element: ElementKind) -> torch.dtype:
    """The dtype the combine sees for `element`."""
    return _COMPUTE.get(element, element.torch_dtype)


def _check_identity(who: str, identity, element: ElementKind) -> None:
    if isinstance(identity, bool):
        identity = int(identity)
    if not isinstance(identity, (int, float)):
        raise InvalidProblem(f"{who}: identity must be a Python int or float, got "
                             f"{type(identity).__name__}")
    if identity != identity:
        raise InvalidProblem(f"{who}: identity must not be NaN (NaN is no monoid's identity), "
                             "got nan")
    if element.is_float:
        return
    if isinstance(identity, float) and not identity.is_integer():
        raise InvalidProblem(f"{who}: identity of a {element.value} reduction must be an "
                             f"integer, got {identity!r}")
    if element is ElementKind.BOOL:
        lo, hi = 0, 1
    else:
        info = torch.iinfo(compute_dtype(element))
        lo, hi = info.min, info.max
    if not lo <= identity <= hi:
        raise InvalidProblem(f"{who}: identity of a {element.value} reduction must be in "
                             f"[{lo}, {hi}], got {identity!r}")


@dataclass(frozen=True)
class GenericReductionDescriptor(ReducedAxes, Descriptor):
    """y = fold of `combine` over `axes` (sorted, non-negative; rank-0 inputs reduce axis 0)
    starting from `identity`, in the input's element, reduced axes kept as 1 with `keepdim`.
    `combine` is a `@triton.jit` function (a, b) -> a . b of a commutative monoid whose
    neutral element is `identity`; descriptors with the same function object share compiled
    kernels."""

    input_shape: tuple[int, ...]
    axes: tuple[int, ...]
    keepdim: bool
    element: ElementKind
    combine: KernelInterface
    identity: float | int

    def validate(self, who: str) -> None:
        if not isinstance(self.element, ElementKind):
            raise InvalidProblem(f"{who}: element must be an ElementKind, got {self.element!r}")
        if not isinstance(self.combine, KernelInterface):
            raise InvalidProblem(f"{who}: combine must be a @triton.jit function of two "
                                 f"values, got {type(self.combine).__name__}")
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape, lo=0)
        if not isinstance(self.axes, tuple) or not self.axes:
            raise InvalidProblem(f"{who}: axes must be a non-empty tuple of ints, got "
                                 f"{self.axes!r}")
        norm = [V.check_axis(who, "axes", a, max(len(shape), 1)) for a in self.axes]
        if len(set(norm)) != len(norm):
            raise InvalidProblem(f"{who}: axes must be distinct, got {self.axes}")
        if list(self.axes) != sorted(norm):
            raise InvalidProblem(f"{who}: axes must be sorted and non-negative, got "
                                 f"{self.axes}")
        if not isinstance(self.keepdim, bool):
            raise InvalidProblem(f"{who}: keepdim must be a bool, got {self.keepdim!r}")
        V.check_element(who, "element", self.element, ELEMENTS)
        _check_identity(who, self.identity, self.element)


@dataclass
class GenericReductionArgs(Args):
    x: torch.Tensor = operand("input_shape", "element", strides=NON_NEGATIVE)
    y: torch.Tensor = operand(lambda d: d.output_shape, "element", output=True,
                              strides=NON_NEGATIVE)


@register_plan
class GenericReductionPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.REDUCTION
    descriptor_type = GenericReductionDescriptor
    args_type = GenericReductionArgs
    OP_NAME = "generic_reduce"


def _lines(desc) -> int:
    return math.prod(desc.output_shape)


def workspace_bytes(desc) -> int:
    K_lines = _lines(desc)
    n_split = max_split_count(K_lines, desc.reduced_extent)
    return 0 if n_split <= 1 else n_split * K_lines * compute_dtype(desc.element).itemsize


def _u8(t: torch.Tensor) -> torch.Tensor:
    """Bool tensors travel as uint8 (same bytes): the kernels never see 1-bit pointers."""
    return t.view(torch.uint8) if t.dtype == torch.bool else t


def _flat(strides) -> list[int]:
    return [s for st in strides for s in st]


@register_candidate(GenericReductionPlan)
class TritonGenericReduction(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_generic_reduction"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def workspace_size(self, desc) -> int:
        return workspace_bytes(desc)

    def can_implement(self, desc, args) -> None:
        x = args.x
        if x.dim():
            _, r_dims = merged_dims(x.shape, desc.axes, x.stride(), False)
            if r_dims > MAX_DIMS:
                raise Unsupported(f"{type(self).__name__}: x's reduced axes {desc.axes} stay "
                                  f"{r_dims} dims apart after merging (strides {x.stride()}); "
                                  f"expected at most {MAX_DIMS}: pass a tensor whose reduced "
                                  "axes merge")

    def launch(self, desc, args, workspace) -> None:
        acc = compute_dtype(desc.element)
        ident = float(desc.identity) if desc.element.is_float else int(desc.identity)
        const = dict(COMBINE=desc.combine, IDENTITY=ident, ACC=_TL[acc])
        lines = _lines(desc)
        for step in launches(desc.input_shape, desc.axes, desc.keepdim, [_u8(args.x)],
                             [_u8(args.y)], ordered=False):
            (x,), (y,) = step.full, step.kept
            row = step.reduced_strides[0][-1] == 1 and step.R > 1
            column = step.kept_strides[0][-1] == 1 and step.K > 1
            block_k, block_r = tile_config(step.K, step.R, row, column, wide=acc.itemsize == 8)
            # the descriptor's lines (not this launch's share) keep the workspace bound valid
            split = split_count(lines, step.R, block_k, block_r)
            chunk = cdiv(cdiv(max(step.R, 1), split), block_r) * block_r
            n_split = cdiv(max(step.R, 1), chunk)
            ws = workspace[:n_split * step.K * acc.itemsize].view(acc) if n_split > 1 else y
            ks = step.kept_shape[1:]
            GK.generic_reduce_kernel[(cdiv(step.K, block_k), n_split)](
                x, y, ws, step.K, step.R, chunk, *ks, *_flat(step.kept_strides),
                *step.reduced_shape[1:], *_flat(step.reduced_strides), BLOCK_K=block_k,
                BLOCK_R=block_r, K_DIMS=step.k_dims, R_DIMS=step.r_dims,
                PARTIAL=n_split > 1, num_warps=TILE_WARPS, **const)
            if n_split > 1:
                split_p = next_pow2(n_split)
                per = max(1, min(next_pow2(max(step.K, 1)), COMBINE_ELEMS // split_p))
                GK.generic_combine_kernel[(cdiv(step.K, per),)](
                    ws, y, step.K, n_split, *ks, *_flat(step.kept_strides[1:]),
                    BLOCK_K=per, SPLIT_P=split_p, K_DIMS=step.k_dims, num_warps=4, **const)


def _dims(x: torch.Tensor, dims) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(x.dim())) if x.dim() else (0,)
    if isinstance(dims, bool) or not isinstance(dims, (int, tuple, list)):
        raise TypeError(f"reduce: dims must be an int, a sequence of ints or None, got "
                        f"{type(dims).__name__}")
    seq = [dims] if isinstance(dims, int) else list(dims)
    if not seq:
        raise InvalidProblem("reduce: dims must name at least one dim (None reduces every "
                             "dim), got ()")
    norm = [normalize_dim(d, x.dim(), "reduce") for d in seq]
    if len(set(norm)) != len(norm):
        raise InvalidProblem(f"reduce: dims must be distinct, got {tuple(seq)}")
    return tuple(sorted(norm))


def reduce(x: torch.Tensor, combine_fn, identity, dims=None,
           keepdim: bool = False) -> torch.Tensor:
    """Fold `combine_fn`, a `@triton.jit` function (a, b) -> a . b, over `dims` of `x` (an
    int, a sequence of ints, or None for every dim) starting from `identity`, the monoid's
    neutral element (see GenericReductionPlan: associative and commutative, elementwise). The
    result has x's dtype; reduced dims are dropped, or kept as 1 with `keepdim`; an empty
    reduction gives `identity`. Not differentiable: an input that requires grad (grad mode on)
    raises `Unsupported`."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"reduce: x must be a tensor, got {type(x).__name__}")
    if not isinstance(combine_fn, KernelInterface):
        raise TypeError("reduce: combine_fn must be a @triton.jit function of two values, "
                        f"got {type(combine_fn).__name__}")
    if x.requires_grad and torch.is_grad_enabled():
        raise Unsupported("reduce: no gradient for a user combine function; expected an input "
                          "that does not require grad (detach it), got one that does")
    if not isinstance(keepdim, bool):
        raise TypeError(f"reduce: keepdim must be a bool, got {type(keepdim).__name__}")
    axes = _dims(x, dims)
    desc = GenericReductionDescriptor.cached(tuple(x.shape), axes, keepdim, x.dtype,
                                             combine_fn, identity)
    y = torch.empty(desc.output_shape, dtype=x.dtype, device=x.device)
    run_plan(GenericReductionPlan, desc, GenericReductionArgs(x=x, y=y))
    return y


from . import spec_generic  # noqa: E402,F401 - registers the plan's spec
