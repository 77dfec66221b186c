"""GenericReductionPlan's test cases and malformed inputs: four monoids (sum, max, bitwise or,
max of |x|), each a `@triton.jit` combine with its float64 (or exact) torch reference."""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import generic_kernels as GK
from .generic import GenericReductionArgs, GenericReductionDescriptor, GenericReductionPlan

F32, F16, BF16, F64 = ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64
I8, I32, I64, U8, BOOL = (ElementKind.I8, ElementKind.I32, ElementKind.I64, ElementKind.U8,
                          ElementKind.BOOL)


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def bitwise_or(a, b):
    return a | b


@triton.jit
def max_abs(a, b):
    """max(|a|, |b|): the identity 0 is neutral on the |x| it produces."""
    return tl.maximum(tl.abs(a), tl.abs(b))


def _lowest(element: ElementKind):
    if element.is_float:
        return -float("inf")
    return 0 if element is BOOL else torch.iinfo(element.torch_dtype).min


def _or_reduce(x: torch.Tensor, axes) -> torch.Tensor:
    """Bitwise or over `axes` (torch has no such reduction): fold the flattened axes."""
    moved = x.movedim(axes, tuple(range(x.dim() - len(axes), x.dim())))
    lines = moved.reshape(*moved.shape[:x.dim() - len(axes)], -1)
    out = torch.zeros(lines.shape[:-1], dtype=x.dtype, device=x.device)
    for i in range(lines.shape[-1]):
        out = out | lines[..., i]
    return out


#: name -> (combine, identity for an element, reference (x, axes) -> y in f64 or exact)
MONOIDS = {
    "sum": (add, lambda e: 0, lambda x, a: x.sum(a) if x.is_floating_point()
            else x.to(torch.int64).sum(a)),
    "max": (maximum, _lowest, lambda x, a: x.amax(a) if x.numel() else
            torch.full(_kept(x.shape, a), _lowest(ElementKind.of(x.dtype)), dtype=x.dtype)),
    "or": (bitwise_or, lambda e: 0, _or_reduce),
    "max_abs": (max_abs, lambda e: 0, lambda x, a: x.abs().amax(a) if x.numel() else
                torch.zeros(_kept(x.shape, a), dtype=x.dtype)),
}


def _kept(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# (shape, axes, keepdim, layout): rows, columns, several axes, strided / transposed inputs,
# lines split over programs, rank 0, an empty reduction (the identity), an empty output
ROW = ((5, 777), (1,), False, "contiguous")
COLUMN = ((300, 24), (0,), True, "contiguous")
MULTI = ((3, 100, 4), (0, 2), False, "strided")
TRANSPOSED = ((6, 33), (1,), False, "transposed")
SPLIT = ((2, 9000), (1,), False, "contiguous")
SCALAR = ((), (0,), False, "contiguous")
FULL = ((4, 50), (0, 1), False, "channels_last")
EMPTY_R = ((2, 0, 5), (1,), True, "contiguous")
EMPTY_OUT = ((0, 5), (1,), False, "contiguous")

TABLE = [
    ("sum", (ROW, COLUMN, MULTI, TRANSPOSED, SPLIT, SCALAR, FULL, EMPTY_R, EMPTY_OUT), (F32,)),
    ("sum", (ROW, MULTI), (F64, BF16, I32)),
    ("max", (ROW, COLUMN, TRANSPOSED, SPLIT, EMPTY_R), (F32,)),
    ("max", (ROW, MULTI), (F16, BF16, I8, I64)),
    ("or", (ROW, COLUMN, MULTI, SPLIT, EMPTY_R), (I32,)),
    ("or", (ROW, TRANSPOSED), (U8, I64, BOOL)),
    ("max_abs", (ROW, MULTI, FULL, SPLIT, EMPTY_R), (F32,)),
    ("max_abs", (ROW,), (F64, BF16)),
]


def _input(shape, element: ElementKind, device, gen, layout) -> torch.Tensor:
    if element is BOOL:
        x = torch.rand(shape, generator=gen) > 0.8
    elif element.is_float:
        x = randn(shape, torch.float64, "cpu", gen, std=2.0).to(element.torch_dtype)
    else:
        hi = 64 if element in (I8, U8) else 1 << 20
        lo = 0 if element is U8 else -hi
        x = torch.randint(lo, hi, shape, generator=gen).to(element.torch_dtype)
    return with_layout(x.to(device), layout)


def _case(monoid: str, shape, axes, keepdim, layout, element) -> Case:
    combine, ident, reference = MONOIDS[monoid]
    desc = GenericReductionDescriptor(shape, axes, keepdim, element, combine, ident(element))

    def make(device, gen, d=desc):
        x = _input(shape, element, device, gen, layout)
        return GenericReductionArgs(x=x, y=poisoned(d.output_shape, element.torch_dtype,
                                                    device))

    def expect(args, d=desc):
        x = args.x.detach().cpu()
        x = x.double() if x.is_floating_point() else x
        red = tuple(d.axes) if x.dim() else ()
        y = reference(x, red) if red else x.clone()
        y = y.reshape(d.output_shape)
        return {"y": y if y.is_floating_point() else y.to(element.torch_dtype)}

    def scale(args, d=desc):  # a float sum's rounding follows its terms' size
        x = args.x.detach().cpu().double()
        red = tuple(d.axes) if x.dim() else ()
        total = x.abs().sum(red) if red else x.abs()
        return {"y": float(total.max()) if total.numel() else 0.0}

    name = f"{monoid} {shape} ax{axes} kd{int(keepdim)} {layout} {element.value}"
    sums = monoid == "sum" and element.is_float
    return Case(name, desc, make, expect, error_scale=scale if sums else None)


def cases():
    for monoid, layouts, elements in TABLE:
        for shape, axes, keepdim, layout in layouts:
            for element in elements:
                yield _case(monoid, shape, axes, keepdim, layout, element)


class GenericReductionSpec(PlanSpec):
    plan = GenericReductionPlan

    def cases(self, scale):
        if scale == "small":
            yield from cases()
        else:
            for shape, axes in (((4096, 16384), (1,)), ((16384, 4096), (0,)),
                                ((1 << 24,), (0,)), ((512, 128, 33), (0, 2))):
                yield _case("max", shape, axes, False, "contiguous", BF16)
                yield _case("or", shape, axes, False, "contiguous", I32)

    def aot_variants(self):
        """The caller's combine reaches tl.reduce as a constexpr (backends.reduce_with):
        add on f32 rows, max on bf16 split rows, or on i32 columns, and the chunk fold."""
        rows = ((add, "*fp32", tl.float32, 0.0, 1, 4096, True, False),
                (maximum, "*bf16", tl.float32, float("-inf"), 1, 4096, True, True),
                (bitwise_or, "*i32", tl.int32, 0, 128, 16, False, False))
        for fn, io, acc, ident, block_k, block_r, row, partial in rows:
            acc_ptr = "*fp32" if acc == tl.float32 else "*i32"
            const = dict(COMBINE=fn, IDENTITY=ident, ACC=acc, BLOCK_K=block_k,
                         BLOCK_R=block_r, K_DIMS=1, R_DIMS=1, PARTIAL=partial)
            const["xr3" if row else "xk3"] = 1
            yield AotVariant.auto(
                f"generic_reduce_kernel {fn.__name__} {io[1:]} {'row' if row else 'column'}"
                f"{' partial' if partial else ''}", GK.generic_reduce_kernel,
                {"x_ptr": io, "y_ptr": io, "ws_ptr": acc_ptr}, const, num_warps=8,
                divisible=("K", "R", "chunk"))
        yield AotVariant.auto(
            "generic_combine_kernel maximum bf16", GK.generic_combine_kernel,
            {"ws_ptr": "*fp32", "y_ptr": "*bf16"},
            dict(COMBINE=maximum, IDENTITY=float("-inf"), ACC=tl.float32, BLOCK_K=2,
                 SPLIT_P=1024, K_DIMS=1), num_warps=4)

    def malformed_descriptors(self):
        D = GenericReductionDescriptor
        yield Malformed("axis out of range", lambda: D((4, 8), (2,), False, F32, add, 0),
                        InvalidProblem)
        yield Malformed("unsorted axes", lambda: D((4, 8), (1, 0), False, F32, add, 0),
                        InvalidProblem)
        yield Malformed("repeated axes", lambda: D((4, 8), (1, 1), False, F32, add, 0),
                        InvalidProblem)
        yield Malformed("no axes", lambda: D((4, 8), (), False, F32, add, 0), InvalidProblem)
        yield Malformed("rank 9", lambda: D((1,) * 9, (0,), False, F32, add, 0), Unsupported)
        yield Malformed("combine not jitted", lambda: D((4, 8), (1,), False, F32,
                                                       lambda a, b: a + b, 0), InvalidProblem)
        yield Malformed("NaN identity", lambda: D((4, 8), (1,), False, F32, add,
                                                  float("nan")), InvalidProblem)
        yield Malformed("fractional identity for ints", lambda: D((4, 8), (1,), False, I32,
                                                                  add, 0.5), InvalidProblem)
        yield Malformed("identity outside int8", lambda: D((4, 8), (1,), False, I8, maximum,
                                                           -129), InvalidProblem)
        yield Malformed("bool identity 2", lambda: D((4, 8), (1,), False, BOOL, bitwise_or,
                                                     2), InvalidProblem)
        yield Malformed("identity not a number", lambda: D((4, 8), (1,), False, F32, add, "0"),
                        InvalidProblem)
        yield Malformed("keepdim not a bool", lambda: D((4, 8), (1,), 1, F32, add, 0),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        gen = functools.partial(torch.Generator().manual_seed, 1)
        good = lambda: _input(d.input_shape, d.element, device, gen(), "contiguous")  # noqa: E731
        out = lambda s=d.output_shape: torch.empty(s, dtype=dt, device=device)  # noqa: E731
        other = torch.float64 if dt != torch.float64 else torch.float32
        bad_shape = tuple(s + 1 for s in d.output_shape)
        yield Malformed("y wrong shape", lambda: GenericReductionArgs(good(), out(bad_shape)),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: GenericReductionArgs(good().to(other), out()),
                        InvalidProblem)
        yield Malformed("not a tensor", lambda: GenericReductionArgs([1.0], out()),
                        InvalidProblem)
        yield Malformed("y overlaps x", lambda: _into_itself(good(), d.output_shape),
                        InvalidProblem)


def _into_itself(x: torch.Tensor, out_shape) -> GenericReductionArgs:
    """Args whose output is a view of the input's first elements."""
    n = 1
    for e in out_shape:
        n *= e
    return GenericReductionArgs(x, x.reshape(-1)[:n].reshape(out_shape))


register_spec(GenericReductionSpec())
