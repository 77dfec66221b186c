"""Structured-loss plans: multi_margin, multilabel_margin, cosine_embedding, triplet_margin
and the distance hinge of triplet_margin_with_distance (forward and backward each).

**Formulas** (torch.nn.functional semantics, rows of a (N, D) batch, g the upstream gradient):
- multi_margin: l = sum_{c != y} max(0, margin - x[y] + x[c])^p w[y] / C, p in {1, 2}.
- multilabel_margin: targets are a row's leading entries before the first -1;
  l = sum_j sum_{k not a target} max(0, 1 - x[t_j] + x[k]) / C.
- cosine_embedding: cos = <a, b> / sqrt((|a|^2 + 1e-12)(|b|^2 + 1e-12));
  l = 1 - cos (y = 1), max(0, cos - margin) (y = -1), 0 otherwise.
- triplet_margin: l = max(0, margin + d(a, p) - d(a, n)), d(x, y) = ||x - y + eps||_p,
  swap: d(a, n) -> min(d(a, n), d(p, n)).
- margin hinge: the same hinge on distances a caller computed.
Reduction none keeps the N row losses; sum adds them; mean divides by N (NaN for N = 0).

**Dtypes**: f32, f16, bf16, f64 inputs, f32 math (f64 for f64); class indices i32 / i64.

**Workspace**: mean / sum forward: N accumulator elements (the row losses, then one program
sums them in a fixed order); backward: 0.

**Precision**: deterministic and bit-stable: one program per row, no atomics.
"""

from __future__ import annotations

from ...backends.rows import ASSERT_LAUNCH
from ...backends.triton_support import acc_type, next_pow2, split_f64
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory
from .descriptors import LossReduction
from .descriptors_structured import (
    CosineEmbeddingLossArgs,
    CosineEmbeddingLossBackwardArgs,
    CosineEmbeddingLossBackwardDescriptor,
    CosineEmbeddingLossDescriptor,
    MarginHingeLossArgs,
    MarginHingeLossBackwardArgs,
    MarginHingeLossBackwardDescriptor,
    MarginHingeLossDescriptor,
    MultilabelMarginLossArgs,
    MultilabelMarginLossBackwardArgs,
    MultilabelMarginLossBackwardDescriptor,
    MultilabelMarginLossDescriptor,
    MultiMarginLossArgs,
    MultiMarginLossBackwardArgs,
    MultiMarginLossBackwardDescriptor,
    MultiMarginLossDescriptor,
    TripletMarginLossArgs,
    TripletMarginLossBackwardArgs,
    TripletMarginLossBackwardDescriptor,
    TripletMarginLossDescriptor,
)
from .kernels_structured import (
    cosine_embedding_kernel,
    margin_hinge_kernel,
    multi_margin_kernel,
    multilabel_margin_kernel,
    reduce_rows_kernel,
    triplet_margin_kernel,
)

#: What the family package re-exports from this module.
__all__ = [
    "CosineEmbeddingLossBackwardPlan", "CosineEmbeddingLossPlan", "MarginHingeLossBackwardPlan",
    "MarginHingeLossPlan", "MultiMarginLossBackwardPlan", "MultiMarginLossPlan",
    "MultilabelMarginLossBackwardPlan", "MultilabelMarginLossPlan",
    "TripletMarginLossBackwardPlan", "TripletMarginLossPlan",
]

#: multilabel_margin holds a row in one block: wider rows are refused (typed).
MULTILABEL_MAX_C = 32768


def row_config(width: int, element: ElementKind) -> tuple[int, int]:
    """(BLOCK, num_warps) of a one-program-per-row kernel looping over the row."""
    cap = 2048 if element is ElementKind.F64 else 4096
    block = min(next_pow2(max(width, 1)), cap)
    return block, max(1, min(8, block // 128))


def _s(t, dim: int = 0) -> int:
    return t.stride(dim) if t is not None and t.dim() > dim else 0


def _modes(desc, backward: bool) -> tuple[int, int]:
    """(LOSS, GRAD) of the kernels (kernels_structured's header)."""
    none = desc.reduction is LossReduction.NONE
    if backward:
        return 0, 1 if none else 3 if desc.reduction is LossReduction.MEAN else 2
    return (1 if none else 2), 0


def _ws(desc, workspace):
    if workspace is None:
        return None
    dt = desc.element.compute_kind.torch_dtype
    return workspace[: desc.rows * dt.itemsize].view(dt)


def _finish(desc, ws, loss) -> None:
    if desc.reduction is not LossReduction.NONE:
        reduce_rows_kernel[(1,)](ws, loss, desc.rows, MEAN=desc.reduction is LossReduction.MEAN,
                                 ACC=acc_type(desc.element), BLOCK=1024)


class _RowsPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LOSS


class _RowsCandidate(Candidate):
    """Forward: the row losses (into the workspace for mean / sum) and their reduction."""

    replayable = True  # only Triton launches (backends/launch_replay.py)
    backward = False

    def workspace_size(self, desc) -> int:
        if self.backward or desc.reduction is LossReduction.NONE:
            return 0
        return desc.rows * desc.element.compute_kind.torch_dtype.itemsize

    def launch(self, desc, a, workspace) -> None:
        ws = _ws(desc, workspace)
        loss_mode, grad_mode = _modes(desc, self.backward)
        out = a.grad_loss if self.backward else a.loss
        if desc.rows > 0:
            self.rows(desc, a, ws if ws is not None else out, loss_mode, grad_mode)
        if not self.backward:
            _finish(desc, ws if ws is not None else out, a.loss)


# -- multi_margin ----------------------------------------------------------------------------
@register_plan
class MultiMarginLossPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = MultiMarginLossDescriptor
    args_type = MultiMarginLossArgs
    partner = "MultiMarginLossBackwardPlan"


@register_plan
class MultiMarginLossBackwardPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = MultiMarginLossBackwardDescriptor
    args_type = MultiMarginLossBackwardArgs
    partner = "MultiMarginLossPlan"
    is_backward = True


class _TritonMultiMargin(_RowsCandidate):
    def rows(self, desc, a, ws, loss_mode, grad_mode) -> None:
        block, warps = row_config(desc.width, desc.element)
        x, t, w = a.input, a.target, a.weight
        loss = getattr(a, "loss", None)
        g, dx = getattr(a, "grad_loss", None), getattr(a, "grad_input", None)
        multi_margin_kernel[(desc.rows,)](
            x, t, w if w is not None else x, g if g is not None else x,
            loss if loss is not None else x, dx if dx is not None else x, ws,
            desc.rows, desc.width, x.stride(0), x.stride(1), t.stride(0), _s(loss), _s(g),
            _s(dx), _s(dx, 1), *split_f64(desc.margin), HAS_W=w is not None, P=desc.p,
            LOSS=loss_mode, GRAD=grad_mode, ACC=acc_type(desc.element), BLOCK=block,
            num_warps=warps, **ASSERT_LAUNCH)


@register_candidate(MultiMarginLossPlan)
class TritonMultiMargin(_TritonMultiMargin):
    name = "triton_row_multi_margin"


@register_candidate(MultiMarginLossBackwardPlan)
class TritonMultiMarginBackward(_TritonMultiMargin):
    name = "triton_row_multi_margin_backward"
    backward = True


# -- multilabel_margin -----------------------------------------------------------------------
@register_plan
class MultilabelMarginLossPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = MultilabelMarginLossDescriptor
    args_type = MultilabelMarginLossArgs
    partner = "MultilabelMarginLossBackwardPlan"


@register_plan
class MultilabelMarginLossBackwardPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = MultilabelMarginLossBackwardDescriptor
    args_type = MultilabelMarginLossBackwardArgs
    partner = "MultilabelMarginLossPlan"
    is_backward = True


class _TritonMultilabel(_RowsCandidate):
    def supports(self, desc, pref, arch):
        if desc.width > MULTILABEL_MAX_C:
            return f"rows of at most {MULTILABEL_MAX_C} classes (held in one block), got " \
                   f"{desc.width}"
        return None

    def rows(self, desc, a, ws, loss_mode, grad_mode) -> None:
        block = next_pow2(desc.width)
        x, t = a.input, a.target
        loss = getattr(a, "loss", None)
        g, dx = getattr(a, "grad_loss", None), getattr(a, "grad_input", None)
        multilabel_margin_kernel[(desc.rows,)](
            x, t, g if g is not None else x, loss if loss is not None else x,
            dx if dx is not None else x, ws, desc.rows, desc.width, x.stride(0), x.stride(1),
            t.stride(0), t.stride(1), _s(loss), _s(g), _s(dx), _s(dx, 1),
            LOSS=loss_mode, GRAD=grad_mode, ACC=acc_type(desc.element), BLOCK=block,
            num_warps=max(1, min(8, block // 256)), **ASSERT_LAUNCH)


@register_candidate(MultilabelMarginLossPlan)
class TritonMultilabelMargin(_TritonMultilabel):
    name = "triton_row_multilabel_margin"


@register_candidate(MultilabelMarginLossBackwardPlan)
class TritonMultilabelMarginBackward(_TritonMultilabel):
    name = "triton_row_multilabel_margin_backward"
    backward = True


# -- cosine_embedding ------------------------------------------------------------------------
@register_plan
class CosineEmbeddingLossPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = CosineEmbeddingLossDescriptor
    args_type = CosineEmbeddingLossArgs
    partner = "CosineEmbeddingLossBackwardPlan"


@register_plan
class CosineEmbeddingLossBackwardPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = CosineEmbeddingLossBackwardDescriptor
    args_type = CosineEmbeddingLossBackwardArgs
    partner = "CosineEmbeddingLossPlan"
    is_backward = True


class _TritonCosine(_RowsCandidate):
    def rows(self, desc, a, ws, loss_mode, grad_mode) -> None:
        block, warps = row_config(desc.width, desc.element)
        x1, x2, t = a.input1, a.input2, a.target
        loss = getattr(a, "loss", None)
        g = getattr(a, "grad_loss", None)
        d1, d2 = getattr(a, "grad_input1", None), getattr(a, "grad_input2", None)
        cosine_embedding_kernel[(desc.rows,)](
            x1, x2, t, g if g is not None else x1, loss if loss is not None else x1,
            d1 if d1 is not None else x1, d2 if d2 is not None else x1, ws,
            desc.rows, desc.width, x1.stride(0), x1.stride(1), x2.stride(0), x2.stride(1),
            t.stride(0), _s(loss), _s(g), _s(d1), _s(d1, 1), _s(d2), _s(d2, 1),
            *split_f64(desc.margin), LOSS=loss_mode, GRAD=grad_mode, ACC=acc_type(desc.element),
            BLOCK=block, num_warps=warps)


@register_candidate(CosineEmbeddingLossPlan)
class TritonCosineEmbedding(_TritonCosine):
    name = "triton_row_cosine_embedding"


@register_candidate(CosineEmbeddingLossBackwardPlan)
class TritonCosineEmbeddingBackward(_TritonCosine):
    name = "triton_row_cosine_embedding_backward"
    backward = True


# -- triplet_margin --------------------------------------------------------------------------
@register_plan
class TripletMarginLossPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = TripletMarginLossDescriptor
    args_type = TripletMarginLossArgs
    partner = "TripletMarginLossBackwardPlan"


@register_plan
class TripletMarginLossBackwardPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = TripletMarginLossBackwardDescriptor
    args_type = TripletMarginLossBackwardArgs
    partner = "TripletMarginLossPlan"
    is_backward = True


def norm_kind(p: float) -> int:
    """The kernels' NORM: 2 and 1 exact, 0 any other p > 0 (through exp / log)."""
    return 2 if p == 2 else 1 if p == 1 else 0


class _TritonTriplet(_RowsCandidate):
    def rows(self, desc, a, ws, loss_mode, grad_mode) -> None:
        block, warps = row_config(desc.width, desc.element)
        x, y, z = a.anchor, a.positive, a.negative
        loss = getattr(a, "loss", None)
        g = getattr(a, "grad_loss", None)
        da, dp, dn = (getattr(a, n, None) for n in ("grad_anchor", "grad_positive",
                                                     "grad_negative"))
        triplet_margin_kernel[(desc.rows,)](
            x, y, z, g if g is not None else x, loss if loss is not None else x,
            da if da is not None else x, dp if dp is not None else x,
            dn if dn is not None else x, ws, desc.rows, desc.width,
            x.stride(0), x.stride(1), y.stride(0), y.stride(1), z.stride(0), z.stride(1),
            _s(loss), _s(g), _s(da), _s(da, 1), _s(dp), _s(dp, 1), _s(dn), _s(dn, 1),
            *split_f64(desc.margin), *split_f64(desc.p), *split_f64(desc.eps),
            NORM=norm_kind(desc.p), SWAP=desc.swap, LOSS=loss_mode, GRAD=grad_mode,
            ACC=acc_type(desc.element), BLOCK=block, num_warps=warps)


@register_candidate(TripletMarginLossPlan)
class TritonTripletMargin(_TritonTriplet):
    name = "triton_row_triplet_margin"


@register_candidate(TripletMarginLossBackwardPlan)
class TritonTripletMarginBackward(_TritonTriplet):
    name = "triton_row_triplet_margin_backward"
    backward = True


# -- distance hinge --------------------------------------------------------------------------
@register_plan
class MarginHingeLossPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = MarginHingeLossDescriptor
    args_type = MarginHingeLossArgs
    partner = "MarginHingeLossBackwardPlan"


@register_plan
class MarginHingeLossBackwardPlan(_RowsPlan):
    __doc__ = __doc__
    descriptor_type = MarginHingeLossBackwardDescriptor
    args_type = MarginHingeLossBackwardArgs
    partner = "MarginHingeLossPlan"
    is_backward = True


HINGE_BLOCK = 1024


class _TritonHinge(_RowsCandidate):
    def rows(self, desc, a, ws, loss_mode, grad_mode) -> None:
        dp, dn, dsw = a.dist_pos, a.dist_neg, a.dist_swap
        loss = getattr(a, "loss", None)
        g = getattr(a, "grad_loss", None)
        gp, gn, gsw = (getattr(a, n, None) for n in ("grad_pos", "grad_neg", "grad_swap"))
        margin_hinge_kernel[(cdiv(desc.rows, HINGE_BLOCK),)](
            dp, dn, dsw if dsw is not None else dp, g if g is not None else dp,
            loss if loss is not None else dp, gp if gp is not None else dp,
            gn if gn is not None else dp, gsw if gsw is not None else dp, ws,
            desc.rows, dp.stride(0), dn.stride(0), _s(dsw), _s(loss), _s(g), _s(gp), _s(gn),
            _s(gsw), *split_f64(desc.margin), SWAP=desc.swap, LOSS=loss_mode, GRAD=grad_mode,
            ACC=acc_type(desc.element), BLOCK=HINGE_BLOCK, num_warps=4)


@register_candidate(MarginHingeLossPlan)
class TritonMarginHinge(_TritonHinge):
    name = "triton_margin_hinge"


@register_candidate(MarginHingeLossBackwardPlan)
class TritonMarginHingeBackward(_TritonHinge):
    name = "triton_margin_hinge_backward"
    backward = True
