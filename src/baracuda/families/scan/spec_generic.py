"""AssociativeScanPlan test cases (three combines with torch references), malformed inputs
and AOT variants."""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.tolerance import tolerance_for
from ...core.vocab import ElementKind
from . import generic_kernels as GK
from . import plans as P
from . import reference as ref
from .generic import (
    AssociativeScanArgs,
    AssociativeScanDescriptor,
    AssociativeScanPlan,
    _tl,
    compute_dtype,
)


@triton.jit
def combine_add(a, b):
    return a + b


@triton.jit
def combine_max_abs(a, b):
    """max(|a|, |b|): associative, with no identity the kernel could pad with; a one-element
    prefix is the element itself, sign and all (as the left-to-right reference's)."""
    return tl.maximum(tl.abs(a), tl.abs(b))


@triton.jit
def combine_or(a, b):
    return a | b


def _max_abs(a, b):
    return torch.maximum(a.abs(), b.abs())


#: name -> (combine, its torch form on two tensors)
COMBINES = {
    "add": (combine_add, torch.add),
    "max_abs": (combine_max_abs, _max_abs),
    "or": (combine_or, torch.bitwise_or),
}

E = ElementKind
# (shape, axis, layout, reverse, combine, element)
SMALL = [
    ((3, 777), 1, "contiguous", False, "add", E.F32),
    ((2, 100, 4), 1, "strided", True, "max_abs", E.BF16),
    ((300,), 0, "contiguous", False, "or", E.I32),
    ((6, 33), -1, "transposed", True, "add", E.F64),
    ((40, 24), 0, "contiguous", False, "max_abs", E.F16),
    ((2, 0, 5), 2, "contiguous", False, "add", E.F32),
    ((2, 1, 3, 2, 2, 1, 2, 5), 0, "contiguous", True, "or", E.I64),
    ((7, 3), 0, "broadcast", False, "or", E.BOOL),
    ((5, 9), 1, "contiguous", False, "or", E.U8),
    ((20000,), 0, "contiguous", False, "max_abs", E.F32),  # chunked on the interpreter
]


def _input(shape, element, device, gen, layout):
    x = randn(shape, torch.float64, "cpu", gen, std=2.0)
    if not element.is_float:
        x = (x * 1000).round().abs() if element is not E.BOOL else x > 1.0
        if element is E.U8:
            x = x % 256
    return with_layout(x.to(device, element.torch_dtype), layout)


def _case(shape, axis, layout, reverse, name, element) -> Case:
    fn, op = COMBINES[name]
    desc = AssociativeScanDescriptor(shape, axis, element, fn, reverse)

    def make(device, gen):
        x = _input(shape, element, device, gen, layout)
        return AssociativeScanArgs(x=x, y=poisoned(shape, element.torch_dtype, device))

    def expect(args):
        x = args.x.cpu()
        x = x.double() if x.is_floating_point() else x
        return {"y": ref.associative_scan(x, desc.axis, op, reverse)}

    tol = {}
    if name == "add" and shape[desc.axis] > 64:  # a sum of n terms rounds like one
        tol = {"y": tolerance_for(element).scaled(math.sqrt(shape[desc.axis] / 64))}
    return Case(f"associative_scan {name} {shape} ax{axis} {layout} rev={reverse} "
                f"{element.value}", desc, make, expect, tol=tol)


class AssociativeScanSpec(PlanSpec):
    plan = AssociativeScanPlan

    def cases(self, scale):
        if scale != "small":
            rows = [((4096, 4096), 1, "contiguous", False, "add", E.F32),
                    ((16384, 4096), 0, "contiguous", True, "max_abs", E.BF16),
                    ((1 << 24,), 0, "contiguous", False, "or", E.I32)]
        else:
            rows = SMALL
        for row in rows:
            yield _case(*row)

    def malformed_descriptors(self):
        yield Malformed("combine not a jit function",
                        lambda: AssociativeScanDescriptor((4, 8), 1, E.F32, max), InvalidProblem)
        yield Malformed("axis out of range",
                        lambda: AssociativeScanDescriptor((4, 8), 2, E.F32, combine_add),
                        InvalidProblem)
        yield Malformed("rank 9",
                        lambda: AssociativeScanDescriptor((1,) * 9, 0, E.F32, combine_add),
                        Unsupported)
        yield Malformed("reverse not a bool",
                        lambda: AssociativeScanDescriptor((4, 8), 1, E.F32, combine_add, 1),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        shape = d.input_shape
        good = lambda: torch.ones(shape, dtype=dt, device=device)  # noqa: E731
        other = torch.float64 if dt != torch.float64 else torch.float32
        yield Malformed("y wrong dtype",
                        lambda: AssociativeScanArgs(good(), good().to(other)), InvalidProblem)
        yield Malformed("y aliases x", lambda: (lambda x: AssociativeScanArgs(x, x))(good()),
                        InvalidProblem)
        yield Malformed("y wrong shape",
                        lambda: AssociativeScanArgs(good(), torch.empty(
                            tuple(s + 1 for s in shape), dtype=dt, device=device)),
                        InvalidProblem)

    def aot_variants(self):
        """add on f32 lines, max_abs on bf16 columns, both passes of a chunked line."""
        rows = [(AssociativeScanDescriptor((64, 65536), 1, E.F32, combine_add), 0),
                (AssociativeScanDescriptor((16384, 4096), 0, E.BF16, combine_max_abs), 0),
                (AssociativeScanDescriptor((64, 65536), 1, E.I32, combine_or), 0)]
        rows += [(AssociativeScanDescriptor((1 << 28,), 0, E.F32, combine_add), phase)
                 for phase in (1, 0)]
        for desc, phase in rows:
            cfg = P.launch_config(desc)
            io = "*" + triton_dtype(desc.element.torch_dtype)
            acc = compute_dtype(desc.element)
            const = dict(COMBINE=desc.combine, ACC=_tl(acc), REVERSE=desc.reverse,
                         LINES=cfg["LINES"], BLOCK=cfg["BLOCK"], PHASE=phase,
                         TOTALS=cfg["TOTALS"])
            unit = ("an", "dn") if desc.axis == len(desc.input_shape) - 1 else ("ai", "di")
            const.update({n: 1 for n in unit})
            yield AotVariant.auto(
                f"associative_scan_kernel {desc.combine.__name__} {desc.element.value} "
                f"L={cfg['LINES']} B={cfg['BLOCK']} phase={phase}",
                GK.associative_scan_kernel, {"x": io, "y": io, "tot": "*" + triton_dtype(acc)},
                const, num_warps=cfg["num_warps"], divisible=("N", "chunk_len", "a0", "d0"))


register_spec(AssociativeScanSpec())
