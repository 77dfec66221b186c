"""Random family: tensors filled with draws (uniform, normal, log-normal, exponential,
cauchy, geometric, bernoulli, randint, raw bits) and multinomial draws, from the
counter-based Philox stream of backends/philox.py."""

from ...core.registry import export_public
from . import descriptors, plans, plans_multinomial

__all__ = [*export_public(globals(), descriptors, plans, plans_multinomial)]
# Poisson counts; spec_poisson registers its spec and bench rows
from . import descriptors_poisson, plans_poisson, spec_poisson  # noqa: E402,F401

__all__ += export_public(globals(), descriptors_poisson, plans_poisson)
