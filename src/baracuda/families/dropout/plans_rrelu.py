"""RreluPlan: randomized leaky ReLU forward and backward, one Triton candidate.

**Formulas**: forward y = x * (x <= 0 ? r : 1); training: r = lower + (upper - lower) u with u
uniform on the f32 grid from Philox4x32-10 at (seed, offset, i) (backends/philox.py), eval:
r = (lower + upper) / 2 (torch's leaky_relu with the mean slope). GRAD: dx = dy * (x <= 0 ? r :
1) with r regenerated from the same state (nothing stored), torch's rrelu_with_noise_backward.

**Dtypes / shape**: f32, f16, bf16 (computed in f32), f64 (in f64, u still on the f32 grid);
any rank, any non-negative strides of x, dy and y.

**Workspace**: none.

**Precision**: one multiply in the compute type, rounded once. Deterministic: the slopes are
a function of (seed, offset, i); reruns are bit-identical.
"""

from __future__ import annotations

from ...backends.philox import element_launches
from ...backends.triton_support import RecipeCache, shifted_view, split_f64
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import OpCategory, PrecisionGuarantee
from . import kernels_rrelu as K
from .descriptors_rrelu import RreluArgs, RreluDescriptor
from .plans import GROUPS, STRIDED_GROUPS, WARPS, _tl


@register_plan
class RreluPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = RreluDescriptor
    args_type = RreluArgs


_STEPS = RecipeCache()


def slope_constants(desc: RreluDescriptor) -> tuple[float, float]:
    """(r0, span): r = r0 + span * u (training) or r0 (eval: the mean slope)."""
    lo, up = float(desc.lower), float(desc.upper)
    if desc.training:
        return lo, up - lo
    return (lo + up) / 2.0, 0.0


def launch_rrelu(desc: RreluDescriptor, args: RreluArgs) -> None:
    if desc.numel == 0:
        return
    dy = args.dy if args.dy is not None else args.x
    tensors = [args.x, dy, args.y]
    shape = tuple(args.x.shape) or (1,)
    strides = tuple(tuple(t.stride()) or (1,) for t in tensors)
    steps = _STEPS.get((shape, strides), lambda: element_launches(shape, strides))
    r0, span = slope_constants(desc)
    rng = args.rng_state if args.rng_state is not None else args.x
    for base, offs, count, (s1, s2, s3), sts, dense in steps:
        views = [t if o == 0 and base == 0 else shifted_view(t, o) for t, o in zip(tensors, offs)]
        groups = GROUPS if dense else STRIDED_GROUPS
        first = base - base % 4
        K.rrelu_kernel[(cdiv(base + count - first, groups * 4),)](
            views[0], views[1], views[2], rng, base, count, s1, s2, s3, *sts[0], *sts[1],
            *sts[2], *split_f64(r0), *split_f64(span),
            TRAINING=desc.training, GRAD=desc.grad, DENSE=dense, ACC=_tl(desc.element),
            GROUPS=groups, num_warps=WARPS)


@register_candidate(RreluPlan)
class TritonRrelu(Candidate):
    # only Triton launches; the stream's state is a tensor the kernel loads (replay-safe)
    replayable = True
    name = "triton_rrelu"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def launch(self, desc, args, workspace) -> None:
        launch_rrelu(desc, args)
