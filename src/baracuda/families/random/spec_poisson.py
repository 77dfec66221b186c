"""Poisson test cases (the counts against the host twin of the sampler, exact), malformed
inputs, AOT variants and the bench rows."""

from __future__ import annotations

import torch

from ...backends.philox import STATE_HIGH
from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned
from ...core.vocab import ElementKind
from . import kernels_poisson as K
from . import reference_poisson as ref
from .descriptors_poisson import PoissonArgs, PoissonDescriptor
from .plans_poisson import BLOCK, WARPS, PoissonPlan

E = ElementKind
#: rates spanning both methods (and 0, and the switch at 10)
RATES = (0.0, 0.3, 2.5, 9.99, 10.0, 17.5, 140.0, 3.0e4)
#: (n, element)
SMALL = [(37, E.F32), (261, E.F64), (19, E.BF16), (24, E.F16), (0, E.F32)]
REAL = [(1 << 24, E.F32), (1 << 22, E.F64)]


def poisson_case(n, element) -> Case:
    desc = PoissonDescriptor(n, element)
    dt = element.torch_dtype

    def make(device, gen):
        pick = torch.randint(0, len(RATES), (n,), generator=gen)
        scale = torch.rand(n, generator=gen, dtype=torch.float64) + 0.5
        rate = (torch.tensor(RATES, dtype=torch.float64)[pick] * scale).to(dt)
        state = torch.randint(0, STATE_HIGH, (2,), generator=gen, dtype=torch.int64)
        return PoissonArgs(rate=rate.to(device), y=poisoned((n,), dt, device),
                           rng_state=state.to(device))

    def expect(args):
        return ref.poisson(args.rate, args.rng_state)

    return Case(f"poisson n={n} {element.value}", desc, make, expect)


class PoissonSpec(PlanSpec):
    plan = PoissonPlan

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            yield poisson_case(*row)

    def malformed_descriptors(self):
        yield Malformed("int rates", lambda: PoissonDescriptor(4, E.I32), Unsupported)
        yield Malformed("negative n", lambda: PoissonDescriptor(-1, E.F32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        other = torch.float64 if dt != torch.float64 else torch.float32
        state = torch.zeros(2, dtype=torch.int64, device=device)

        def empty(n=d.n, dtype=dt):
            return torch.empty(n, dtype=dtype, device=device)

        yield Malformed("y wrong size", lambda: PoissonArgs(empty(), empty(d.n + 1), state),
                        InvalidProblem)
        yield Malformed("rate wrong dtype", lambda: PoissonArgs(empty(dtype=other), empty(),
                                                               state), InvalidProblem)
        yield Malformed("state int32", lambda: PoissonArgs(
            empty(), empty(), torch.zeros(2, dtype=torch.int32, device=device)),
            InvalidProblem)
        if d.n > 1:
            yield Malformed("strided rate", lambda: PoissonArgs(
                torch.empty(2 * d.n, dtype=dt, device=device)[::2], empty(), state),
                Unsupported)

    def aot_variants(self):
        for el in (E.F32, E.F64, E.BF16, E.F16):
            ty = f"*{triton_dtype(el.torch_dtype)}"
            yield AotVariant.auto(f"poisson {el.value}", K.poisson_kernel,
                                  {"rate_ptr": ty, "y_ptr": ty, "rng_ptr": "*i64"},
                                  dict(BLOCK=BLOCK), scalars={"n": "i64"}, num_warps=WARPS)


register_spec(PoissonSpec())


# -- bench rows -----------------------------------------------------------------------------
BENCH_N = 1 << 26


@register_bench("random")
def poisson_benches(quick: bool):
    from .torch_poisson import poisson

    def setup(rate):
        def make(device):
            return {"x": torch.full((BENCH_N,), rate, dtype=torch.float32, device=device)}
        return make

    # rates read, counts written; small rates take ~rate + 1 rounds, large ones ~1.2 (PTRS)
    return [BenchCase("poisson", f"[{BENCH_N}] float32 rate={rate}", setup(rate),
                      ours=lambda x: poisson(x), torch_eager=lambda x: torch.poisson(x),
                      bytes=2 * BENCH_N * 4, compare=False)
            for rate in (3.0, 100.0)]


@register_bench("random")
def gumbel_randperm_benches(quick: bool):
    from .torch_gumbel import gumbel_softmax
    from .torch_randperm import randperm

    rows, cols, n = 32768, 1024, 1 << 24

    def logits(device):
        return {"x": torch.randn(rows, cols, dtype=torch.bfloat16, device=device)}

    def size(device):
        return {"device": device}

    return [
        # logits read, noise written and read, output written (a composition today)
        BenchCase("gumbel_softmax", f"[{rows}, {cols}] bfloat16 tau=0.5", logits,
                  ours=lambda x: gumbel_softmax(x, 0.5),
                  torch_eager=lambda x: torch.nn.functional.gumbel_softmax(x, 0.5),
                  bytes=rows * cols * (2 + 4 + 4 + 2), compare=False),
        # keys written, sorted (argsort), permutation written
        BenchCase("randperm", f"[{n}] int64", size,
                  ours=lambda device: randperm(n, device=device),
                  torch_eager=lambda device: torch.randperm(n, device=device),
                  bytes=n * (8 + 8 + 8), compare=False),
    ]
