"""MultinomialPlan: category indices drawn per row of a probability matrix.

**Formulas**: with replacement, sample s of row r is the first category whose cumulative
weight exceeds u * (row total), u the uniform of stream element r * samples + s; without
replacement, the categories in increasing order of E_c / p_c, E_c the exponential of stream
element r * categories + c (the exponential race), the first `samples` of them.

**Dtypes / shape**: probabilities f32, f16, bf16, f64 (read as f32), [rows, categories] with
any non-negative strides, categories <= 8192; out int64 [rows, samples].

**Workspace**: none.

**Precision**: exact for the f32 row sums; deterministic (one program per row, its draws
from (seed, offset, element)).
"""

from __future__ import annotations

from ...backends.triton_support import next_pow2
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import ElementKind, MathPrecision, OpCategory, PrecisionGuarantee
from . import kernels_multinomial as K
from .descriptors import MultinomialArgs, MultinomialDescriptor


@register_plan
class MultinomialPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.SORTING
    descriptor_type = MultinomialDescriptor
    args_type = MultinomialArgs


#: elements of the [samples, categories] comparison tile a program holds at once
TILE = 8192


def multinomial_blocks(desc: MultinomialDescriptor) -> tuple[int, int, int]:
    """(BLOCK_C, BLOCK_S, warps)."""
    block_c = next_pow2(max(desc.categories, 2))
    block_s = max(2, min(TILE // block_c, next_pow2(max(desc.samples, 2))))
    return block_c, block_s, 4 if block_c <= 2048 else 8


@register_candidate(MultinomialPlan)
class TritonMultinomial(Candidate):
    replayable = True  # only Triton launches; the state is a tensor (backends/philox.py)
    name = "triton_multinomial"

    def guarantee(self, desc, pref) -> PrecisionGuarantee:
        return PrecisionGuarantee(MathPrecision.EXACT, ElementKind.I64)

    def launch(self, desc, args, workspace) -> None:
        if desc.rows == 0 or desc.samples == 0:
            return
        block_c, block_s, warps = multinomial_blocks(desc)
        p, out = args.probs, args.out
        K.multinomial_kernel[(desc.rows,)](
            p, out, args.rng_state, desc.categories, desc.samples, p.stride(0), p.stride(1),
            out.stride(0), out.stride(1), REPLACEMENT=desc.replacement, BLOCK_C=block_c,
            BLOCK_S=block_s, num_warps=warps)
