"""PoissonPlan: Poisson counts from per-element rates, one Triton candidate.

**Formulas**: rate < 10: the multiplication method (the count of uniforms whose running
product stays above exp(-rate)); rate >= 10: PTRS (Hormann 1993, transformed rejection with
squeeze), the two methods of torch's CPU sampler. Iteration t of element i draws from Philox
group i + t 2^40 (kernels_poisson.py); rate 0 gives 0.

**Dtypes / shape**: rates and counts f32, f16, bf16, f64, computed in f64; flat contiguous
(the torch function makes the rates contiguous).

**Workspace**: none.

**Precision**: counts are exact integers (rounded to the dtype only beyond its integer
range); deterministic: each count is a function of (seed, offset, i). Rates are not checked
here (the torch function refuses negative and NaN rates, as torch).
"""

from __future__ import annotations

from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import OpCategory, PrecisionGuarantee
from . import kernels_poisson as K
from .descriptors_poisson import PoissonArgs, PoissonDescriptor


@register_plan
class PoissonPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = PoissonDescriptor
    args_type = PoissonArgs


#: elements per program: a block loops until its slowest element accepts, so blocks stay
#: small enough that one high-iteration element holds few others
BLOCK = 256
WARPS = 4


def launch_poisson(desc: PoissonDescriptor, args: PoissonArgs) -> None:
    if desc.n == 0:
        return
    K.poisson_kernel[(cdiv(desc.n, BLOCK),)](args.rate, args.y, args.rng_state, desc.n,
                                             BLOCK=BLOCK, num_warps=WARPS)


@register_candidate(PoissonPlan)
class TritonPoisson(Candidate):
    # only a Triton launch; the stream's state is a tensor the kernel loads (replay-safe)
    replayable = True
    name = "triton_poisson"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def launch(self, desc, args, workspace) -> None:
        launch_poisson(desc, args)
