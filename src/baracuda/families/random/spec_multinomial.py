"""Multinomial cases (the draws against the host twin, exact), malformed inputs, AOT
variants."""

from __future__ import annotations

import torch

from ...backends.philox import STATE_HIGH
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.testing import poisoned, rand, with_layout
from ...core.vocab import ElementKind
from . import kernels_multinomial as K
from . import reference as ref
from .descriptors import MultinomialArgs, MultinomialDescriptor
from .plans_multinomial import MultinomialPlan, multinomial_blocks

E = ElementKind
#: (rows, categories, samples, replacement, element, layout of the probabilities)
SMALL = [(5, 7, 20, True, E.F32, "contiguous"), (3, 100, 50, False, E.F32, "contiguous"),
         (4, 33, 10, False, E.BF16, "transposed"), (2, 1000, 300, True, E.F64, "strided"),
         (6, 5, 5, False, E.F32, "contiguous"), (0, 4, 3, True, E.F32, "contiguous")]
REAL = [(1024, 8192, 256, True, E.F32, "contiguous"),
        (4096, 1000, 100, False, E.F32, "contiguous")]


def multinomial_case(rows, cats, samples, replacement, element, layout) -> Case:
    desc = MultinomialDescriptor(rows, cats, samples, replacement, element)

    def make(device, gen):
        p = rand((rows, cats), torch.float32, "cpu", gen, 0.0, 1.0)
        if cats > samples:  # zero weights that must never be drawn
            p[:, ::3] = 0.0
        p = with_layout(p.to(device, element.torch_dtype), layout)
        state = torch.randint(0, STATE_HIGH, (2,), generator=gen, dtype=torch.int64)
        return MultinomialArgs(probs=p, out=poisoned((rows, samples), torch.int64, device),
                               rng_state=state.to(device))

    def expect(args):
        return {"out": ref.multinomial(desc, args.probs, args.rng_state)}

    name = f"multinomial {rows}x{cats} samples={samples} replacement={replacement} " \
           f"{element.value} {layout}"
    return Case(name, desc, make, expect)


class MultinomialSpec(PlanSpec):
    plan = MultinomialPlan

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            yield multinomial_case(*row)

    def malformed_descriptors(self):
        yield Malformed("too many categories", lambda: MultinomialDescriptor(
            2, 9000, 3, True, E.F32), Unsupported)
        yield Malformed("more samples than categories", lambda: MultinomialDescriptor(
            2, 4, 5, False, E.F32), InvalidProblem)
        yield Malformed("replacement not a bool", lambda: MultinomialDescriptor(
            2, 4, 2, 1, E.F32), InvalidProblem)
        yield Malformed("integer weights", lambda: MultinomialDescriptor(
            2, 4, 2, True, E.I64), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        state = torch.zeros(2, dtype=torch.int64, device=device)
        p = torch.ones(d.rows, d.categories, dtype=d.element.torch_dtype, device=device)
        yield Malformed("out int32", lambda: MultinomialArgs(
            p, torch.empty(d.rows, d.samples, dtype=torch.int32, device=device), state),
            InvalidProblem)
        yield Malformed("out wrong shape", lambda: MultinomialArgs(
            p, torch.empty(d.rows, d.samples + 1, dtype=torch.int64, device=device), state),
            InvalidProblem)

    def aot_variants(self):
        for cats, replacement in ((1000, True), (8192, True), (1000, False), (8192, False)):
            d = MultinomialDescriptor(4, cats, 64, replacement, E.F32)
            block_c, block_s, warps = multinomial_blocks(d)
            yield AotVariant.auto(
                f"multinomial categories={cats} replacement={replacement}",
                K.multinomial_kernel, {"p_ptr": "*fp32", "out_ptr": "*i64", "rng_ptr": "*i64"},
                dict(REPLACEMENT=replacement, BLOCK_C=block_c, BLOCK_S=block_s),
                num_warps=warps)


register_spec(MultinomialSpec())
