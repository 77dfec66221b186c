"""Ternary and gated-activation plans (see `plans.py` for the shared contract notes)."""

from __future__ import annotations

import torch

from ...core.plan import Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import ElementKind, OpCategory
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
from .launch import compute_type, params
from .plans import __doc__ as _PLANS_DOC
from .plans import _guarantee, _Triton, _TritonReduced, run_backward, run_row
from .table import FLOATS, GATED, TERNARY, ternary_types

__doc__ = _PLANS_DOC  # noqa: A001 - the plans share one contract docstring


# -- ternary --------------------------------------------------------------------------------------


@register_plan
class TernaryPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.TERNARY_ELEMENTWISE
    descriptor_type = TernaryDescriptor
    args_type = TernaryArgs
    partner = "TernaryBackwardPlan"


@register_candidate(TernaryPlan)
class TritonTernary(_Triton):
    name = "triton_ternary"

    def guarantee(self, desc, pref):
        return _guarantee(desc.element)

    def launch(self, desc, args, workspace) -> None:
        run_row(ternary_kernel, desc.shape, [args.a, args.b, args.c, args.y], params(desc.value),
                TERNARY[desc.kind], compute_type(desc.element))


@register_plan
class TernaryBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.TERNARY_ELEMENTWISE
    descriptor_type = TernaryBackwardDescriptor
    args_type = TernaryBackwardArgs
    partner = "TernaryPlan"
    is_backward = True


@register_candidate(TernaryBackwardPlan)
class TritonTernaryBackward(_TritonReduced):
    name = "triton_ternary_backward"

    def compute(self, desc) -> ElementKind:
        return ternary_types("TernaryBackwardPlan", desc)[0]

    def supports(self, desc, pref, arch):
        result = self.compute(desc)
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

    def launch(self, desc, args, workspace) -> None:
        run_backward(ternary_bwd_kernel, desc, args.dy, [args.a, args.b, args.c],
                     [args.da, args.db, args.dc], self._reductions(desc), self.compute(desc),
                     workspace, params(desc.value), TERNARY[desc.kind])


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


@register_plan
class GatedActivationBackwardPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.GATED_ACTIVATION
    descriptor_type = GatedBackwardDescriptor
    args_type = GatedBackwardArgs
    partner = "GatedActivationPlan"
    is_backward = True


@register_candidate(GatedActivationPlan)
class TritonGated(_Triton):
    name = "triton_gated"

    def launch(self, desc, args, workspace) -> None:
        a, b = _halves(args.x, desc.axis % len(desc.shape))
        run_row(binary_kernel, desc.out_shape, [a, b, args.y], params(0.0, 0.0),
                GATED[desc.kind], compute_type(desc.element))


@register_candidate(GatedActivationBackwardPlan)
class TritonGatedBackward(_Triton):
    name = "triton_gated_backward"

    def launch(self, desc, args, workspace) -> None:
        ax = desc.axis % len(desc.shape)
        a, b = _halves(args.x, ax)
        da, db = _halves(args.dx, ax)
        run_row(binary_bwd_kernel, desc.out_shape, [args.dy, a, b, da, db], params(0.0, 0.0),
                GATED[desc.kind], compute_type(desc.element), LOAD_A=True, LOAD_B=True,
                WRITE_A=True, WRITE_B=True)
