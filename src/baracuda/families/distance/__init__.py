"""Distance family: cdist, pdist, pairwise_distance, cosine_similarity, dist; forward and
backward."""

from ...core.registry import export_public
from . import descriptors, plans, spec_bench  # noqa: F401 - spec_bench registers bench rows

__all__ = export_public(globals(), descriptors, plans)
