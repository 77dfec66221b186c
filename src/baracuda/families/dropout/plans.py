"""DropoutPlan: dropout forward and backward, one Triton candidate.

**Formulas**: forward y = x * (keep ? s : 0) + (keep ? c_keep : c_drop) with keep = u < 1 - p,
u uniform from Philox4x32-10 at (seed, offset, i) (backends/philox.py; feature dropout draws
at i // inner: one per channel map). Plain dropout s = 1 / (1 - p), c = 0; alpha dropout
s = a, c_keep = alpha' a p, c_drop = (p - 1) alpha' a, a = ((alpha'^2 p + 1)(1 - p))^-1/2
(torch's). GRAD: dx = dy * (keep ? s : 0) with keep regenerated (no stored mask);
FROM_MASK: dx = dy * mask * scale. p = 1 gives x * 0 (torch's: NaN stays NaN).

**Dtypes / shape**: f32, f16, bf16 (computed in f32), f64 (in f64); any rank, any
non-negative strides of x, y and the mask.

**Workspace**: none.

**Precision**: one multiply and one add in the compute type, rounded once; the mask is exact.
Deterministic: the mask is a function of (seed, offset, i), reruns are bit-identical.
"""

from __future__ import annotations

import torch

from ...backends.philox import element_launches
from ...backends.triton_support import RecipeCache, shifted_view, split_f64
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, OpCategory, PrecisionGuarantee
from . import kernels as K
from .descriptors import DropoutArgs, DropoutDescriptor, DropoutMode


@register_plan
class DropoutPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.UNARY_ELEMENTWISE
    descriptor_type = DropoutDescriptor
    args_type = DropoutArgs


#: Philox groups (4 elements each) per program: 1024 elements; strided layouts' 64-bit
#: offset math per tensor takes registers: fewer there
GROUPS = 256
STRIDED_GROUPS = 64
WARPS = 4
_STEPS = RecipeCache()


def _tl(element: ElementKind):
    import triton.language as tl

    return tl.float64 if element is ElementKind.F64 else tl.float32


def launch_dropout(desc: DropoutDescriptor, args: DropoutArgs) -> None:
    if desc.numel == 0:
        return
    mask = args.mask if args.mask is not None else args.mask_in
    tensors = [args.x, args.y] + ([mask] if mask is not None else [])
    shape = tuple(args.x.shape) or (1,)
    strides = tuple(tuple(t.stride()) or (1,) for t in tensors)
    steps = _STEPS.get((shape, strides), lambda: element_launches(shape, strides))
    s, c_keep, c_drop = desc.constants()
    consts = [*split_f64(s), *split_f64(c_keep), *split_f64(c_drop)]
    rng = args.rng_state if args.rng_state is not None else args.x
    feature = desc.inner > 0 and desc.mode is not DropoutMode.FROM_MASK
    for base, offs, count, (s1, s2, s3), sts, dense in steps:
        views = [t if o == 0 and base == 0 else shifted_view(t, o) for t, o in zip(tensors, offs)]
        m = views[2] if mask is not None else views[1]
        mst = sts[2] if mask is not None else (0, 0, 0, 0)
        groups = GROUPS if dense else STRIDED_GROUPS
        first = base - base % 4
        K.dropout_kernel[(cdiv(base + count - first, groups * 4),)](
            views[0], views[1], m, rng, base, count, s1, s2, s3, *sts[0], *sts[1], *mst,
            max(desc.inner, 1), 1.0 - float(desc.p), *consts,
            FEATURE=feature, WRITE_MASK=desc.write_mask,
            READ_MASK=desc.mode is DropoutMode.FROM_MASK, DENSE=dense, ACC=_tl(desc.element),
            GROUPS=groups, num_warps=WARPS)


@register_candidate(DropoutPlan)
class TritonDropout(Candidate):
    # only Triton launches; the stream's state is a tensor the kernel loads, so a replay
    # passes each call's new state (backends/philox.py)
    replayable = True
    name = "triton_dropout"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)

    def launch(self, desc, args, workspace) -> None:
        launch_dropout(desc, args)


def keep_threshold(p: float) -> float:
    """The f32 threshold a uniform is compared with (what the reference mirrors)."""
    return float(torch.tensor(1.0 - float(p), dtype=torch.float32))
