"""AssociativeScanPlan: an inclusive scan with the caller's combine function, the analogue of
`jax.lax.associative_scan` and `tl.associative_scan`, and `associative_scan`, its function on
torch tensors.

**Formula**: along the scan axis (from its end when `reverse`), y_i = x_0 . x_1 . ... . x_i
for the combine `.`, a `@triton.jit` function of two values returning one: it must be
associative ((a . b) . c == (a . b . c) in any grouping: the scan combines in a tree, not left to
right) and elementwise (it is called on broadcastable tiles of values, earlier operand first).
It need not be commutative, nor have an identity (no padding is ever combined).

**Dtypes / shape**: {f32, f16, bf16, f64} and {i8, i16, i32, i64, u8, bool}; the result keeps
the input's dtype. The combine sees f16 / bf16 as f32 (one rounding, at the store), bool as
int8 (0 / 1), every other dtype as itself. Rank 1..8, any axis, any non-negative strides.

**Workspace**: none when the lines fill the GPU; otherwise lines are cut into chunks along the
scan axis (the family's scan passes, see kernels.py) and each chunk's total is kept.

**Precision**: deterministic and bit-stable on the same hardware (fixed tree order in a tile,
tiles carried in order, chunk totals folded in order, no atomics); exact for exact combines
(max, min, bitwise, integer sums).

**Gradients**: none: a user combine has no derivative here. `associative_scan` raises
`Unsupported` for an input that requires grad while grad mode is on (detach it, or use the
differentiable cumsum / cumprod / cummax / cummin / logcumsumexp).

**torch.compile**: `associative_scan` is an eager function (the combine is a Python object,
not an operator argument); a compiled region calling it breaks its graph there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from triton.runtime.jit import KernelInterface

from ...backends.torch_ops import normalize_dim, run_plan
from ...backends.triton_support import triton_dtype
from ...core import validate as V
from ...core.args import Args, operand
from ...core.errors import Unsupported
from ...core.plan import Candidate, Descriptor, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from . import generic_kernels as GK
from . import plans as P
from .descriptors import ALL_ELEMENTS

__all__ = ["associative_scan"]


@dataclass(frozen=True)
class AssociativeScanDescriptor(Descriptor):
    """y[..., i, ...] = x[..., 0, ...] . ... . x[..., i, ...] along `scan_axis` (from the end
    when `reverse`) for `combine`, a `@triton.jit` function (a, b) -> a . b, associative and
    elementwise; descriptors with the same function object share compiled kernels."""

    input_shape: tuple[int, ...]
    scan_axis: int
    element: ElementKind
    combine: KernelInterface
    reverse: bool = False

    @property
    def axis(self) -> int:
        return self.scan_axis % len(self.input_shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.input_shape

    def validate(self, who: str) -> None:
        if not isinstance(self.element, ElementKind):
            raise V.InvalidProblem(f"{who}: element must be an ElementKind, got {self.element!r}")
        if not isinstance(self.combine, KernelInterface):
            raise V.InvalidProblem(f"{who}: combine must be a @triton.jit function of two "
                                   f"values, got {type(self.combine).__name__}")
        if not isinstance(self.reverse, bool):
            raise V.InvalidProblem(f"{who}: reverse must be a bool, got {self.reverse!r}")
        shape = V.check_shape(who, "input_shape", self.input_shape)
        V.check_rank(who, "input_shape", shape)
        V.check_axis(who, "scan_axis", self.scan_axis, len(shape))
        V.check_element(who, "element", self.element, ALL_ELEMENTS)


@dataclass
class AssociativeScanArgs(Args):
    x: torch.Tensor = operand("input_shape", "element", strides="non_negative")
    y: torch.Tensor = operand("input_shape", "element", output=True, strides="non_negative")


@register_plan
class AssociativeScanPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SCAN
    descriptor_type = AssociativeScanDescriptor
    args_type = AssociativeScanArgs


def compute_dtype(element: ElementKind) -> torch.dtype:
    """What the combine sees: f32 for 16-bit floats, int8 for bool, else the element."""
    if element in (ElementKind.F16, ElementKind.BF16):
        return torch.float32
    if element is ElementKind.BOOL:
        return torch.int8
    return element.torch_dtype


def _tl(dtype: torch.dtype):
    import triton.language as tl

    return getattr(tl, {"fp32": "float32", "fp64": "float64", "fp16": "float16",
                        "bf16": "bfloat16", "i1": "int1", "u8": "uint8", "i8": "int8",
                        "i16": "int16", "i32": "int32", "i64": "int64"}[triton_dtype(dtype)])


def workspace_bytes(desc) -> int:
    cfg = P.launch_config(desc)
    if cfg["chunks"] <= 1:
        return 0
    lines = P.lines_and_extent(desc)[0]
    return lines * cfg["chunks"] * compute_dtype(desc.element).itemsize


#: (desc, strides) -> launches
_STEPS = P.RecipeCache()


def launch(desc, x: torch.Tensor, y: torch.Tensor, workspace: torch.Tensor | None) -> None:
    tensors = [x, y]
    key = (desc, x.stride(), y.stride())
    steps = _STEPS.get(key, lambda: P._cacheable(desc, tensors))
    if steps is None:
        steps, _ = P._steps(desc, tensors)
    cfg = P.launch_config(desc)
    acc = compute_dtype(desc.element)
    if cfg["chunks"] > 1:
        n = P.lines_and_extent(desc)[0] * cfg["chunks"]
        tot, phases = workspace[:n * acc.itemsize].view(acc), (1, 0)
    else:
        tot, phases = y, (0,)  # never dereferenced by one-chunk launches
    const = dict(COMBINE=desc.combine, ACC=_tl(acc), REVERSE=desc.reverse, BLOCK=cfg["BLOCK"],
                 TOTALS=cfg["TOTALS"], num_warps=cfg["num_warps"])
    for views, grid, ints, lines_per_tile in steps:
        ptrs = tensors if views is None else views
        for phase in phases:
            GK.associative_scan_kernel[grid](*ptrs, tot, *ints, PHASE=phase,
                                             LINES=lines_per_tile, **const)


@register_candidate(AssociativeScanPlan)
class TritonAssociativeScan(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    name = "triton_associative_scan"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def workspace_size(self, desc) -> int:
        return workspace_bytes(desc)

    def launch(self, desc, args, workspace) -> None:
        launch(desc, args.x, args.y, workspace)


def associative_scan(fn, x: torch.Tensor, dim: int = 0, reverse: bool = False) -> torch.Tensor:
    """The inclusive scan of `x` along `dim` with `fn`, a `@triton.jit` function (a, b) ->
    a . b, associative and elementwise (see AssociativeScanPlan); from the end of `dim` when
    `reverse`. The result has x's shape and dtype. Not differentiable: an input that requires
    grad (grad mode on) raises `Unsupported`."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"associative_scan: x must be a tensor, got {type(x).__name__}")
    if not isinstance(fn, KernelInterface):
        raise TypeError("associative_scan: fn must be a @triton.jit function of two values, "
                        f"got {type(fn).__name__}")
    if x.requires_grad and torch.is_grad_enabled():
        raise Unsupported("associative_scan: no gradient for a user combine function; "
                          "expected an input that does not require grad (detach it), got one "
                          "that does")
    d = normalize_dim(dim, x.dim(), "associative_scan")
    y = torch.empty_like(x)
    xl, yl = (x.reshape(1), y.reshape(1)) if x.dim() == 0 else (x, y)
    desc = AssociativeScanDescriptor.cached(tuple(xl.shape), d, x.dtype, fn, bool(reverse))
    run_plan(AssociativeScanPlan, desc, AssociativeScanArgs(x=xl, y=yl))
    return y
