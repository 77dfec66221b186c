"""Elementwise plans: unary, unary with parameters, binary (+ lerp with a scalar weight),
ternary, comparison, cast and gated activations, forward and backward.

**Formulas**: one row per kind (`table.py`: op code, dtype rule, float64 reference, test
domain); forward and derivative formulas are that code's branch in `ops.py` / `ops_nary.py`.
Torch's conventions at kinks, singularities, +-inf and NaN.

**Dtypes / shape**: floats f32/f16/bf16/f64 (halves compute in f32, f64 in f64; nextafter
steps in each type's own bits); integer and bool inputs where the kind's rule allows
(`table.py`). Ranks 0..8; binary, ternary and
comparison operands broadcast like torch and promote like torch. Any non-negative strides
(stride 0 = broadcast); dims are collapsed on the host and the kernels index up to 4 collapsed
dims per launch (unit-stride operands are vectorized on the flat path).

**Workspace**: backward plans with a broadcast input: one float32 (float64 for f64)
accumulator of the output's size per broadcast input, plus the partial row sums. None
otherwise.

**Precision**: deterministic and bit-stable on the same hardware: every element is computed
by one program; gradients of broadcast inputs are row sums in a fixed order (no atomics).
"""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import INTERPRET
from ...core import validate as V
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from .descriptors import (
    BinaryArgs,
    BinaryBackwardArgs,
    BinaryBackwardDescriptor,
    BinaryDescriptor,
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamDescriptor,
    CastDescriptor,
    CompareDescriptor,
    CompareKind,
    UnaryArgs,
    UnaryBackwardArgs,
    UnaryBackwardDescriptor,
    UnaryDescriptor,
    UnaryParamBackwardDescriptor,
    UnaryParamDescriptor,
)
from .kernels import binary_bwd_kernel, binary_kernel, unary_bwd_kernel, unary_kernel
from .launch import (
    compute_type,
    expand_strides,
    launch_map,
    params,
    reduction_for,
    workspace_bytes,
    workspace_regions,
)
from .table import (
    BINARY,
    COMPARE,
    FLOATS,
    IDENTITY_CODE,
    ISCLOSE_NAN_CODE,
    UNARY,
    UNARY_PARAM,
    Row,
    binary_types,
    promote,
)


class _Triton(Candidate):
    """Shared candidate behaviour: Triton, any non-negative strides."""
    replayable = True  # only Triton launches (backends/launch_replay.py)

    def can_implement(self, desc, args) -> None:
        who = type(self).__name__
        for name, t in args.tensors().items():
            V.check_nonnegative_strides(who, name, t)


class _TritonGrad(_Triton):
    """A backward candidate of a kind whose forward may take integers: gradients are float."""

    def supports(self, desc, pref, arch):
        if desc.element not in FLOATS:
            return f"gradients need floating elements, got {desc.element.value}"
        return None


def _guarantee(element: ElementKind) -> PrecisionGuarantee:
    return PrecisionGuarantee.for_element(element)


def run_row(kernel, shape, tensors, scalars, row: Row, acc, **constexprs) -> None:
    """One elementwise launch of a table row's op code."""
    launch_map(kernel, shape, tensors, scalars, OP=row.code, ACC=acc, heavy=row.heavy,
               **constexprs)


# -- unary ----------------------------------------------------------------------------------------


@register_plan
class UnaryPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = UnaryDescriptor
    args_type = UnaryArgs
    partner = "UnaryBackwardPlan"


@register_plan
class UnaryBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = UnaryBackwardDescriptor
    args_type = UnaryBackwardArgs
    partner = "UnaryPlan"
    is_backward = True


@register_candidate(UnaryPlan)
class TritonUnary(_Triton):
    name = "triton_unary"

    def guarantee(self, desc, pref):
        return _guarantee(desc.out_element)

    def launch(self, desc, args, workspace) -> None:
        # predicate and exponent kinds (bool / int32 results) compute in the input's type
        out, row = desc.out_element, UNARY[desc.kind]
        run_row(unary_kernel, desc.shape, [args.x, args.y], params(0.0, 0.0, 0.0), row,
                compute_type(out if out.is_float else desc.element, row.native))


@register_candidate(UnaryBackwardPlan)
class TritonUnaryBackward(_TritonGrad):
    name = "triton_unary_backward"

    def supports(self, desc, pref, arch):
        if not UNARY[desc.kind].diff:
            return f"{desc.kind.value} has no gradient"
        return super().supports(desc, pref, arch)

    def launch(self, desc, args, workspace) -> None:
        run_row(unary_bwd_kernel, desc.shape, [args.dy, args.x, args.dx],
                params(0.0, 0.0, 0.0), UNARY[desc.kind], compute_type(desc.element))


# -- unary with parameters ------------------------------------------------------------------------


def _param_values(desc) -> tuple[float, float, float]:
    ps = tuple(float(p) for p in desc.params)
    return (ps + (0.0, 0.0))[:3]


@register_plan
class UnaryParamPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = UnaryParamDescriptor
    args_type = UnaryArgs
    partner = "UnaryParamBackwardPlan"


@register_plan
class UnaryParamBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = UnaryParamBackwardDescriptor
    args_type = UnaryBackwardArgs
    partner = "UnaryParamPlan"
    is_backward = True


@register_candidate(UnaryParamPlan)
class TritonUnaryParam(_Triton):
    name = "triton_unary_param"

    def guarantee(self, desc, pref):
        return _guarantee(desc.out_element)

    def launch(self, desc, args, workspace) -> None:
        out = desc.out_element
        run_row(unary_kernel, desc.shape, [args.x, args.y], params(*_param_values(desc)),
                UNARY_PARAM[desc.kind], compute_type(out if out.is_float else desc.element))


@register_candidate(UnaryParamBackwardPlan)
class TritonUnaryParamBackward(_TritonGrad):
    name = "triton_unary_param_backward"

    def launch(self, desc, args, workspace) -> None:
        run_row(unary_bwd_kernel, desc.shape, [args.dy, args.x, args.dx],
                params(*_param_values(desc)), UNARY_PARAM[desc.kind],
                compute_type(desc.element))


# -- cast -----------------------------------------------------------------------------------------


@register_plan
class CastPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = CastDescriptor
    args_type = UnaryArgs

    @classmethod
    def op_name(cls, desc) -> str:
        return f"cast_{desc.element.value}_{desc.out_element.value}"


@register_candidate(CastPlan)
class TritonCast(_Triton):
    name = "triton_cast"

    def guarantee(self, desc, pref):
        return _guarantee(desc.out_element)

    def launch(self, desc, args, workspace) -> None:
        # Floats out: through f32 (f64 when either side is f64); integers out: through the
        # source type, so integer-to-integer casts wrap like torch.
        src, dst = desc.element, desc.out_element
        if dst.is_float:
            wide = ElementKind.F64 in (src, dst) and not (INTERPRET and dst.itemsize == 2)
            # (the interpreter's f64 -> bf16/f16 conversion reinterprets bits: go through f32)
            acc = compute_type(ElementKind.F64 if wide else ElementKind.F32)
        else:
            acc = compute_type(src)
        launch_map(unary_kernel, desc.shape, [args.x, args.y], params(0.0, 0.0, 0.0),
                   OP=IDENTITY_CODE, ACC=acc)


# -- binary ---------------------------------------------------------------------------------------


@register_plan
class BinaryPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.BINARY_ELEMENTWISE
    descriptor_type = BinaryDescriptor
    args_type = BinaryArgs
    partner = "BinaryBackwardPlan"


@register_candidate(BinaryPlan)
class TritonBinary(_Triton):
    name = "triton_binary"

    def guarantee(self, desc, pref):
        return _guarantee(binary_types("BinaryPlan", desc)[1])

    def launch(self, desc, args, workspace) -> None:
        _, compute = binary_types("BinaryPlan", desc)
        row = BINARY[desc.kind]
        run_row(binary_kernel, desc.shape, [args.a, args.b, args.y], params(desc.alpha, 0.0),
                row, compute_type(compute, row.native))


@register_plan
class BinaryBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.BINARY_ELEMENTWISE
    descriptor_type = BinaryBackwardDescriptor
    args_type = BinaryBackwardArgs
    partner = "BinaryPlan"
    is_backward = True


class _TritonReduced(_Triton):
    """A backward candidate whose broadcast inputs' gradients are reduced in the workspace."""

    def _reductions(self, desc):
        shapes = (desc.a_shape, desc.b_shape, getattr(desc, "c_shape", None))
        return [reduction_for(s, desc.shape) if n else None for s, n in zip(shapes, desc.needs)]

    def workspace_size(self, desc) -> int:
        return workspace_bytes(self._reductions(desc), self.compute(desc))


@register_candidate(BinaryBackwardPlan)
class TritonBinaryBackward(_TritonReduced):
    name = "triton_binary_backward"

    def compute(self, desc) -> ElementKind:
        return binary_types("BinaryBackwardPlan", desc)[1]

    def supports(self, desc, pref, arch):
        if not BINARY[desc.kind].diff:
            return f"{desc.kind.value} has no gradient"
        out, _ = binary_types("BinaryBackwardPlan", desc)
        for el in (desc.a_element, desc.b_element, out):
            if el not in FLOATS:
                return f"gradients need floating elements, got {el.value}"
        if not any(desc.needs):
            return "needs asks for no gradient"
        return None

    def launch(self, desc, args, workspace) -> None:
        row = BINARY[desc.kind]
        run_backward(binary_bwd_kernel, desc, args.dy, [args.a, args.b], [args.da, args.db],
                     self._reductions(desc), self.compute(desc), workspace,
                     params(desc.alpha, 0.0), row, LOAD_A=row.grad_reads,
                     LOAD_B=row.grad_reads)


def run_backward(kernel, desc, dy, inputs, grads, reductions, compute, workspace, scalars,
                 row: Row, **constexprs) -> None:
    """Write each needed gradient directly, or into its workspace accumulator and reduce."""
    out_shape = desc.shape
    if math.prod(out_shape) == 0:
        for g, red in zip(grads, reductions):
            if g is not None and red is not None:
                g.zero_()
        return
    regions = workspace_regions(reductions, compute, workspace)
    targets, strides, writes = [], [], []
    for g, red, reg in zip(grads, reductions, regions):
        if g is None:
            targets.append(dy)
            strides.append([0] * len(out_shape))
            writes.append(False)
        elif red is None:
            targets.append(g)
            strides.append(_direct_strides(g, out_shape))
            writes.append(True)
        else:
            view = red.full_view(reg)
            targets.append(view)
            strides.append(list(view.stride()))
            writes.append(True)

    in_strides = [expand_strides(t, out_shape) for t in inputs]
    all_strides = [expand_strides(dy, out_shape)] + in_strides + strides
    consts = {f"WRITE_{'ABC'[i]}": w for i, w in enumerate(writes)}
    consts.update(constexprs)
    launch_map(kernel, out_shape, [dy, *inputs, *targets], scalars, strides=all_strides,
               heavy=row.heavy, OP=row.code, ACC=compute_type(compute), **consts)
    for g, red, reg in zip(grads, reductions, regions):
        if g is not None and red is not None:
            red.finish(reg, g)


def _direct_strides(g: torch.Tensor, out_shape) -> list[int]:
    """Strides of a non-broadcast gradient at out_shape (its dims may lack leading 1s)."""
    off = len(out_shape) - g.dim()
    return [0 if j < off else g.stride(j - off) for j in range(len(out_shape))]


# -- lerp with a scalar weight (the seed) ---------------------------------------------------------


@register_plan
class BinaryParamPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.BINARY_ELEMENTWISE
    descriptor_type = BinaryParamDescriptor
    args_type = BinaryArgs
    partner = "BinaryParamBackwardPlan"


@register_plan
class BinaryParamBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.BINARY_ELEMENTWISE
    descriptor_type = BinaryParamBackwardDescriptor
    args_type = BinaryParamBackwardArgs
    partner = "BinaryParamPlan"
    is_backward = True


@register_candidate(BinaryParamPlan)
class TritonBinaryParam(_Triton):
    name = "triton_lerp_scalar"

    def launch(self, desc, args, workspace) -> None:
        run_row(binary_kernel, desc.shape, [args.a, args.b, args.y], params(desc.param, 0.0),
                BINARY[desc.kind], compute_type(desc.element))


@register_candidate(BinaryParamBackwardPlan)
class TritonBinaryParamBackward(_Triton):
    name = "triton_lerp_scalar_backward"

    def launch(self, desc, args, workspace) -> None:
        dy = args.dy
        run_row(binary_bwd_kernel, desc.shape, [dy, dy, dy, args.da, args.db],
                params(desc.param, 0.0), BINARY[desc.kind], compute_type(desc.element),
                LOAD_A=False, LOAD_B=False, WRITE_A=True, WRITE_B=True)


# -- comparison -----------------------------------------------------------------------------------


@register_plan
class BinaryCmpPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.BINARY_ELEMENTWISE
    descriptor_type = CompareDescriptor
    args_type = BinaryArgs


@register_candidate(BinaryCmpPlan)
class TritonCompare(_Triton):
    name = "triton_compare"

    def guarantee(self, desc, pref):
        return _guarantee(ElementKind.BOOL)

    def launch(self, desc, args, workspace) -> None:
        common = promote(desc.a_element, desc.b_element)
        code = COMPARE[desc.kind].code
        if desc.kind is CompareKind.ISCLOSE and desc.equal_nan:
            code = ISCLOSE_NAN_CODE
        launch_map(binary_kernel, desc.shape, [args.a, args.b, args.y],
                   params(desc.rtol, desc.atol), OP=code, ACC=compute_type(common))
