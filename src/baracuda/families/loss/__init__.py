"""Loss family: cross-entropy (class indices or probabilities, weights, ignore_index, label
smoothing) and NLL with a fused loss + gradient plan; the fused linear + cross-entropy; the
pointwise losses (bce, kl_div, mse, l1, smooth_l1, huber, ...); the margin and triplet losses;
CTC. Each part's spec module registers its specs and bench rows on import."""

from ...core.registry import export_public
from . import (  # noqa: F401 - the spec modules register on import
    descriptors,
    descriptors_ctc,
    descriptors_linear,
    descriptors_pointwise,
    descriptors_structured,
    plans,
    plans_ctc,
    plans_linear,
    plans_pointwise,
    plans_smem,  # the Hopper candidates
    plans_structured,
    spec_ctc,
    spec_linear,
    spec_pointwise,
    spec_structured,
)

__all__ = export_public(globals(), descriptors, plans, plans_smem, descriptors_linear,
                        plans_linear, descriptors_structured, plans_structured, descriptors_ctc,
                        plans_ctc, descriptors_pointwise, plans_pointwise)
