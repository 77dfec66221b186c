"""RandomPlan: y filled with draws of a distribution, one Triton candidate.

**Formulas** (u uniform in [0, 1), z standard normal, w a raw word; see `Dist`): uniform
a + (b - a) u; normal a + b z (Box-Muller); log-normal exp(a + b z); exponential -log(1 - u) / a;
cauchy a + b tan(pi (u - 1/2)); geometric ceil(log(1 - u) / log1p(-a)) (at least 1);
bernoulli u < a; randint a + w mod b; bits w. Element i takes its words from Philox4x32-10 at
(seed, offset, i) (backends/philox.py), seed and offset read from the `rng_state` tensor.

**Dtypes / shape**: continuous draws into f32, f16, bf16 (computed in f32; uniform's u has the
dtype's mantissa bits, as torch's CPU generator, so it never rounds up to b) or f64 (53-bit
uniforms, computed in f64); bernoulli, geometric and randint into every dtype; bits into the
integer dtypes. Any rank, any non-negative strides of y; NORMAL's mean / std and BERNOULLI's
p may be tensors broadcast to y (stride-0 views).

**Workspace**: none.

**Precision**: the uniforms, bernoulli, randint and bits are exact functions of the stream;
the transcendental draws are within a few ulps of the float64 formula on the same uniforms.
Deterministic: reruns with one state are bit-identical.
"""

from __future__ import annotations

import math

import torch

from ...backends.philox import DIGITS, element_launches
from ...backends.triton_support import RecipeCache, shifted_view, split_f64
from ...core.errors import InvalidProblem
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.runtime import cdiv
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels as K
from .descriptors import Dist, RandomArgs, RandomDescriptor


@register_plan
class RandomPlan(Plan):
    __doc__ = __doc__
    # (a fill, as creation's: core.vocab has no random category)
    category = OpCategory.SHAPE_LAYOUT
    descriptor_type = RandomDescriptor
    args_type = RandomArgs

    def check_args(self, args) -> None:
        super().check_args(args)
        if args.rng_state.device != args.y.device:
            raise InvalidProblem(f"{type(self).__name__}: rng_state must be on y's device "
                                 f"{args.y.device}, got {args.rng_state.device}")


#: Philox groups per program: 256 groups = 1024 elements (512 for two-word elements); a
#: strided layout's 64-bit offset math per tensor takes registers: fewer there
GROUPS = 256
STRIDED_GROUPS = 64
WARPS = 4
DIST_CODE = {Dist.UNIFORM: K.UNIFORM, Dist.NORMAL: K.NORMAL, Dist.LOG_NORMAL: K.LOG_NORMAL,
             Dist.EXPONENTIAL: K.EXPONENTIAL, Dist.CAUCHY: K.CAUCHY,
             Dist.GEOMETRIC: K.GEOMETRIC, Dist.BERNOULLI: K.BERNOULLI, Dist.RANDINT: K.RANDINT,
             Dist.BITS: K.BITS}


def acc_dtype(desc: RandomDescriptor) -> torch.dtype:
    return torch.float64 if desc.element is ElementKind.F64 else torch.float32


def uniform_digits(desc: RandomDescriptor) -> int:
    """Bits of u: the dtype's mantissa for UNIFORM (as torch's CPU generator), else 24."""
    if desc.dist is Dist.UNIFORM:
        return DIGITS[desc.element.torch_dtype]
    return 53 if desc.element is ElementKind.F64 else 24


def kernel_params(desc: RandomDescriptor) -> dict:
    """Scalar arguments: a and b split for the f64 join (geometric's b is log1p(-p)),
    randint's low and span (as int64 bits)."""
    a, b = float(desc.a), float(desc.b)
    if desc.dist is Dist.GEOMETRIC:
        b = math.log1p(-a)
    low, span, full = 0, 1, False
    if desc.dist is Dist.RANDINT:
        low, span = int(desc.a), int(desc.b)
        full = span == 1 << 64
        span = 1 if full else (span - (1 << 64) if span >= 1 << 63 else span)
        a, b = 0.0, 1.0
    a_hi, a_lo = split_f64(a)
    b_hi, b_lo = split_f64(b)
    return dict(a_hi=a_hi, a_lo=a_lo, b_hi=b_hi, b_lo=b_lo, low=low, span=span, FULL=full)


def _tl(dtype: torch.dtype):
    import triton.language as tl

    return tl.float64 if dtype == torch.float64 else tl.float32


_STEPS = RecipeCache()


def launch_random(desc: RandomDescriptor, args: RandomArgs) -> None:
    n = desc.numel
    if n == 0:
        return
    tensors = [t for t in (args.y, args.a, args.b) if t is not None]
    shape = tuple(args.y.shape) or (1,)
    strides = tuple(tuple(t.stride()) or (1,) for t in tensors)
    steps = _STEPS.get((shape, strides), lambda: element_launches(shape, strides))
    p = kernel_params(desc)
    full = p.pop("FULL")
    per = 2 if desc.wide else 4
    for base, offs, count, (s1, s2, s3), sts, dense in steps:
        views = [t if o == 0 and base == 0 else shifted_view(t, o) for t, o in zip(tensors, offs)]
        y = views[0]
        a = views[1] if args.a is not None else y
        b = views[-1] if args.b is not None else y
        st = list(sts) + [(0, 0, 0, 0)] * (3 - len(sts))
        ast = st[1] if args.a is not None else (0, 0, 0, 0)
        bst = st[len(tensors) - 1] if args.b is not None else (0, 0, 0, 0)
        first = base - base % per
        groups = GROUPS if dense else STRIDED_GROUPS
        grid = (cdiv(base + count - first, groups * per),)
        K.random_kernel[grid](
            y, args.rng_state, a, b, base, count, s1, s2, s3, *st[0], *ast, *bst, **p,
            DIST=DIST_CODE[desc.dist], DIGITS=uniform_digits(desc), WIDE=desc.wide,
            ACC=_tl(acc_dtype(desc)), HAS_A=args.a is not None, HAS_B=args.b is not None,
            DENSE=dense, FULL=full, GROUPS=groups, num_warps=WARPS)


@register_candidate(RandomPlan)
class TritonRandom(Candidate):
    # only Triton launches, and the stream's state is a tensor the kernel loads: a replay
    # passes each call's new state (backends/philox.py)
    replayable = True
    name = "triton_random"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        if desc.dist in (Dist.BERNOULLI, Dist.RANDINT, Dist.BITS):
            return PrecisionGuarantee(MathPrecision.EXACT, desc.element)
        return PrecisionGuarantee.for_element(desc.element)

    def launch(self, desc, args, workspace) -> None:
        launch_random(desc, args)
