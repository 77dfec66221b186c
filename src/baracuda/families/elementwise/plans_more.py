"""Ternary and gated-activation plans (see `plans.py` for the shared contract notes)."""

from __future__ import annotations

import torch

from ...core import validate as V
from ...core.plan import Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import OpCategory
from .descriptors import (
    GatedArgs,
    GatedBackwardArgs,
    GatedBackwardDescriptor,
    GatedDescriptor,
    TernaryArgs,
    TernaryBackwardArgs,
    TernaryBackwardDescriptor,
    TernaryDescriptor,
    TernaryKind,
)
from .kernels import binary_bwd_kernel, binary_kernel, ternary_bwd_kernel, ternary_kernel
from .launch import acc_type, launch_map, params, reduction_for, workspace_bytes
from .plans import __doc__ as _PLANS_DOC
from .plans import _guarantee, _run_backward, _Triton
from .table import FLOATS, GATED, TERNARY, ternary_types

__doc__ = _PLANS_DOC  # noqa: A001 - the plans share one contract docstring


# -- ternary --------------------------------------------------------------------------------------


def _check_ternary_inputs(who: str, d, args) -> None:
    for n in ("a", "b", "c"):
        V.check_tensor(who, n, getattr(args, n), getattr(d, f"{n}_shape"),
                       getattr(d, f"{n}_element"))


@register_plan
class TernaryPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.TERNARY_ELEMENTWISE
    descriptor_type = TernaryDescriptor
    args_type = TernaryArgs
    partner = "TernaryBackwardPlan"

    def check_args(self, args) -> None:
        who, d = type(self).__name__, self.desc
        _check_ternary_inputs(who, d, args)
        V.check_tensor(who, "y", args.y, d.shape, ternary_types(who, d)[0])


@register_candidate(TernaryPlan)
class TritonTernary(_Triton):
    name = "triton_ternary"

    def guarantee(self, desc, pref):
        return _guarantee(ternary_types("TernaryPlan", desc)[0])

    def launch(self, desc, args, workspace) -> None:
        result, _ = ternary_types("TernaryPlan", desc)
        launch_map(ternary_kernel, desc.shape, [args.a, args.b, args.c, args.y],
                   params(desc.value), OP=TERNARY[desc.kind].code, ACC=acc_type(result))


@register_plan
class TernaryBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.TERNARY_ELEMENTWISE
    descriptor_type = TernaryBackwardDescriptor
    args_type = TernaryBackwardArgs
    partner = "TernaryPlan"
    is_backward = True

    def check_args(self, args) -> None:
        who, d = type(self).__name__, self.desc
        _check_ternary_inputs(who, d, args)
        V.check_tensor(who, "dy", args.dy, d.shape, ternary_types(who, d)[0])
        for i, n in enumerate(("a", "b", "c")):
            t = getattr(args, f"d{n}")
            if d.needs[i]:
                V.check_tensor(who, f"d{n}", t, getattr(d, f"{n}_shape"),
                               getattr(d, f"{n}_element"))
            elif t is not None:
                raise V.InvalidProblem(f"{who}: d{n} must be None when needs is {d.needs}")


@register_candidate(TernaryBackwardPlan)
class TritonTernaryBackward(_Triton):
    name = "triton_ternary_backward"

    def supports(self, desc, pref, arch):
        result, _ = ternary_types("TernaryBackwardPlan", desc)
        if result not in FLOATS:
            return f"gradients need floating elements, got {result.value}"
        if desc.kind is TernaryKind.WHERE and desc.needs[0]:
            return "where's condition has no gradient (needs[0] must be False)"
        if not any(desc.needs):
            return "needs asks for no gradient"
        for i, n in enumerate("abc"):
            el = getattr(desc, f"{n}_element")
            if desc.needs[i] and el not in FLOATS:
                return f"gradient of {n} needs a floating element, got {el.value}"
        return None

    def _reductions(self, desc):
        shapes = (desc.a_shape, desc.b_shape, desc.c_shape)
        return [reduction_for(s, desc.shape) if n else None for s, n in zip(shapes, desc.needs)]

    def workspace_size(self, desc) -> int:
        return workspace_bytes(self._reductions(desc), ternary_types("", desc)[0])

    def launch(self, desc, args, workspace) -> None:
        result, _ = ternary_types("TernaryBackwardPlan", desc)
        _run_backward(ternary_bwd_kernel, desc.shape, args.dy, [args.a, args.b, args.c],
                      [args.da, args.db, args.dc], self._reductions(desc), result, workspace,
                      params(desc.value), TERNARY[desc.kind].code)


# -- gated activations ----------------------------------------------------------------------------


def _halves(t: torch.Tensor, axis: int):
    h = t.shape[axis] // 2
    return t.narrow(axis, 0, h), t.narrow(axis, h, h)


@register_plan
class GatedActivationPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.GATED_ACTIVATION
    descriptor_type = GatedDescriptor
    args_type = GatedArgs
    partner = "GatedActivationBackwardPlan"

    def check_args(self, args) -> None:
        who, d = type(self).__name__, self.desc
        V.check_tensor(who, "x", args.x, d.shape, d.element)
        V.check_tensor(who, "y", args.y, d.out_shape, d.element)


@register_plan
class GatedActivationBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.GATED_ACTIVATION
    descriptor_type = GatedBackwardDescriptor
    args_type = GatedBackwardArgs
    partner = "GatedActivationPlan"
    is_backward = True

    def check_args(self, args) -> None:
        who, d = type(self).__name__, self.desc
        V.check_tensor(who, "dy", args.dy, d.out_shape, d.element)
        V.check_tensor(who, "x", args.x, d.shape, d.element)
        V.check_tensor(who, "dx", args.dx, d.shape, d.element)


@register_candidate(GatedActivationPlan)
class TritonGated(_Triton):
    name = "triton_gated"

    def launch(self, desc, args, workspace) -> None:
        a, b = _halves(args.x, desc.axis % len(desc.shape))
        launch_map(binary_kernel, desc.out_shape, [a, b, args.y], params(0.0, 0.0),
                   OP=GATED[desc.kind], ACC=acc_type(desc.element))


@register_candidate(GatedActivationBackwardPlan)
class TritonGatedBackward(_Triton):
    name = "triton_gated_backward"

    def launch(self, desc, args, workspace) -> None:
        ax = desc.axis % len(desc.shape)
        a, b = _halves(args.x, ax)
        da, db = _halves(args.dx, ax)
        launch_map(binary_bwd_kernel, desc.out_shape, [args.dy, a, b, da, db],
                   params(0.0, 0.0), OP=GATED[desc.kind], ACC=acc_type(desc.element),
                   LOAD_A=True, LOAD_B=True, WRITE_A=True, WRITE_B=True)
