"""Random test cases (every distribution against the host twin of the stream, bit-exact for
the integer draws), malformed inputs, AOT variants and the fill bench rows."""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.philox import STATE_HIGH
from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, rand, with_layout
from ...core.tolerance import Tolerance
from ...core.vocab import ElementKind
from . import kernels as K
from . import reference as ref
from . import spec_multinomial  # noqa: F401 - registers its spec
from .descriptors import Dist, RandomArgs, RandomDescriptor
from .plans import DIST_CODE, GROUPS, STRIDED_GROUPS, WARPS, RandomPlan

E = ElementKind
D = Dist
#: six dims no collapse merges, launched as 6 runs of 315 elements (bases not multiples of 4)
SIX = ((3, 4, 5, 6, 7, 8), tuple(slice(0, n) for n in (2, 3, 3, 5, 3, 7)))
SIX_SHAPE = tuple(len(range(d)[s]) for d, s in zip(*SIX))

#: (dist, shape, element, a, b, layout, tensor params "a" / "ab" / "")
SMALL = [
    (D.UNIFORM, (777,), E.F32, -2.0, 3.0, "contiguous", ""),
    (D.UNIFORM, (5, 33), E.BF16, 0.0, 1.0, "strided", ""),
    (D.UNIFORM, (3, 5, 7), E.F64, 1.0, 1.5, "transposed", ""),
    (D.UNIFORM, (), E.F16, -1.0, 1.0, "contiguous", ""),
    (D.NORMAL, (1001,), E.F32, 1.5, 2.0, "contiguous", ""),
    (D.NORMAL, (6, 100), E.F64, 0.0, 1.0, "transposed", ""),
    (D.NORMAL, (4, 50), E.F32, 0.0, 1.0, "contiguous", "ab"),
    (D.NORMAL, SIX_SHAPE, E.BF16, -1.0, 0.5, "six_dims", ""),
    (D.LOG_NORMAL, (500,), E.F32, 0.5, 0.75, "contiguous", ""),
    (D.EXPONENTIAL, (600,), E.F32, 2.5, 0.0, "contiguous", ""),
    (D.EXPONENTIAL, (97,), E.F64, 0.5, 0.0, "strided", ""),
    (D.CAUCHY, (400,), E.F32, 1.0, 0.5, "contiguous", ""),
    (D.GEOMETRIC, (300,), E.F32, 0.3, 0.0, "contiguous", ""),
    (D.GEOMETRIC, (301,), E.I64, 1e-3, 0.0, "contiguous", ""),
    (D.BERNOULLI, (800,), E.F32, 0.3, 0.0, "contiguous", ""),
    (D.BERNOULLI, (3, 70), E.BOOL, 0.0, 0.0, "transposed", "a"),
    (D.BERNOULLI, (130,), E.F64, 0.6, 0.0, "contiguous", ""),
    (D.RANDINT, (999,), E.I64, -5, 17, "contiguous", ""),
    (D.RANDINT, (6, 40), E.I32, 0, 1 << 31, "strided", ""),
    (D.RANDINT, (333,), E.I64, -(1 << 40), 1 << 41, "contiguous", ""),
    (D.RANDINT, (257,), E.U8, 0, 256, "contiguous", ""),
    (D.RANDINT, (100,), E.F32, 3, 10, "contiguous", ""),
    (D.RANDINT, (65,), E.I64, -(1 << 63), 1 << 64, "contiguous", ""),
    (D.BITS, (1000,), E.I32, 0, 1, "contiguous", ""),
    (D.BITS, (333,), E.I64, 0, 1, "contiguous", ""),
    (D.BITS, (50,), E.I8, 0, 1, "contiguous", ""),
    (D.UNIFORM, (2, 0, 5), E.F32, 0.0, 1.0, "contiguous", ""),
    (D.UNIFORM, (5000,), E.F32, 0.0, 1.0, "contiguous", ""),
]
REAL_N = 1 << 24
REAL = [
    (D.UNIFORM, (REAL_N,), E.F32, 0.0, 1.0, "contiguous", ""),
    (D.NORMAL, (REAL_N,), E.BF16, 0.0, 1.0, "contiguous", ""),
    (D.BERNOULLI, (4096, 4096), E.F32, 0.1, 0.0, "transposed", ""),
    (D.RANDINT, (REAL_N,), E.I64, 0, 1000, "contiguous", ""),
]


def _output(shape, dtype, device, layout):
    if layout == "six_dims":
        return poisoned(SIX[0], dtype, device)[SIX[1]]
    return with_layout(poisoned(shape, dtype, device), layout)


def random_case(dist, shape, element, a, b, layout, params) -> Case:
    a_el = E.F32 if "a" in params else None
    b_el = E.F32 if "b" in params else None
    desc = RandomDescriptor(shape, element, dist, a, b, a_el, b_el)

    def make(device, gen):
        state = torch.randint(0, STATE_HIGH, (2,), generator=gen, dtype=torch.int64)
        pa = pb = None
        if a_el is not None:  # a row broadcast down the columns (stride 0)
            pa = rand(shape[-1:], torch.float32, device, gen, 0.0, 1.0 if dist is D.BERNOULLI
                      else 3.0).expand(shape)
        if b_el is not None:
            pb = rand(shape[:1] + (1,), torch.float32, device, gen, 0.1, 2.0).expand(shape)
        return RandomArgs(y=_output(shape, element.torch_dtype, device, layout),
                          rng_state=state.to(device), a=pa, b=pb)

    def expect(args):
        return {"y": ref.draws(desc, args.rng_state, args.a, args.b)}

    tol = {}
    if dist in (D.NORMAL, D.LOG_NORMAL, D.EXPONENTIAL, D.CAUCHY) and element is E.F32:
        # f32 log / sqrt / cos of the same uniforms: a few ulps of the result, and cauchy's
        # tan near +-pi/2 amplifies the argument's rounding
        tol = {"y": Tolerance(1e-5 if dist is not D.CAUCHY else 1e-4, 1e-5)}
    name = f"{dist.value} {shape} {element.value} a={a} b={b} {layout} {params or 'scalars'}"
    return Case(name, desc, make, expect, tol=tol)


class RandomSpec(PlanSpec):
    plan = RandomPlan

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            yield random_case(*row)

    def malformed_descriptors(self):
        yield Malformed("from > to", lambda: RandomDescriptor((4,), E.F32, D.UNIFORM, 2.0, 1.0),
                        InvalidProblem)
        yield Malformed("negative std", lambda: RandomDescriptor((4,), E.F32, D.NORMAL, 0.0,
                                                                 -1.0), InvalidProblem)
        yield Malformed("zero rate", lambda: RandomDescriptor((4,), E.F32, D.EXPONENTIAL, 0.0),
                        InvalidProblem)
        yield Malformed("geometric p = 1", lambda: RandomDescriptor((4,), E.F32, D.GEOMETRIC,
                                                                    1.0), InvalidProblem)
        yield Malformed("bernoulli p > 1", lambda: RandomDescriptor((4,), E.F32, D.BERNOULLI,
                                                                    1.5), InvalidProblem)
        yield Malformed("randint span 0", lambda: RandomDescriptor((4,), E.I64, D.RANDINT, 0, 0),
                        InvalidProblem)
        yield Malformed("normal into ints", lambda: RandomDescriptor((4,), E.I32, D.NORMAL),
                        Unsupported)
        yield Malformed("bits into floats", lambda: RandomDescriptor((4,), E.F32, D.BITS),
                        Unsupported)
        yield Malformed("bad dist", lambda: RandomDescriptor((4,), E.F32, "no_such"),
                        InvalidProblem)
        yield Malformed("nan mean", lambda: RandomDescriptor((4,), E.F32, D.NORMAL,
                                                             float("nan")), InvalidProblem)
        yield Malformed("tensor a for uniform", lambda: RandomDescriptor(
            (4,), E.F32, D.UNIFORM, 0.0, 1.0, E.F32), InvalidProblem)
        yield Malformed("rank 9", lambda: RandomDescriptor((1,) * 9, E.F32, D.UNIFORM),
                        Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        other = torch.float64 if dt != torch.float64 else torch.float32
        state = torch.zeros(2, dtype=torch.int64, device=device)
        a = torch.zeros(d.shape, device=device) if d.a_element is not None else None
        b = torch.zeros(d.shape, device=device) if d.b_element is not None else None
        wrong = tuple(s + 1 for s in d.shape)
        yield Malformed("y wrong shape", lambda: RandomArgs(
            torch.empty(wrong, dtype=dt, device=device), state, a, b), InvalidProblem)
        yield Malformed("y wrong dtype", lambda: RandomArgs(
            torch.empty(d.shape, dtype=other, device=device), state, a, b), InvalidProblem)
        yield Malformed("state int32", lambda: RandomArgs(
            torch.empty(d.shape, dtype=dt, device=device),
            torch.zeros(2, dtype=torch.int32, device=device), a, b), InvalidProblem)
        yield Malformed("state of 3", lambda: RandomArgs(
            torch.empty(d.shape, dtype=dt, device=device),
            torch.zeros(3, dtype=torch.int64, device=device), a, b), InvalidProblem)

    def aot_variants(self):
        scalars = {n: "fp32" for n in ("a_hi", "a_lo", "b_hi", "b_lo")}
        scalars.update(base="i64", n="i64", low="i64", span="i64")
        rows = [(D.UNIFORM, E.F32, True, False), (D.UNIFORM, E.BF16, True, False),
                (D.NORMAL, E.F32, True, False), (D.NORMAL, E.BF16, True, False),
                (D.NORMAL, E.F64, True, False), (D.NORMAL, E.F32, False, True),
                (D.EXPONENTIAL, E.F32, True, False), (D.CAUCHY, E.F16, True, False),
                (D.GEOMETRIC, E.I64, True, False), (D.LOG_NORMAL, E.F32, False, False),
                (D.BERNOULLI, E.BOOL, False, True), (D.BERNOULLI, E.F32, True, False),
                (D.RANDINT, E.I64, True, False), (D.BITS, E.I32, True, False),
                (D.BITS, E.I64, True, False)]
        for dist, el, dense, tensors in rows:
            ty = f"*{triton_dtype(el.torch_dtype)}"
            wide = (el is E.F64) if dist not in (D.BITS, D.RANDINT) else el is E.I64 and \
                dist is D.BITS
            digits = {E.F32: 24, E.BF16: 8, E.F16: 11, E.F64: 53}.get(el, 24) \
                if dist is D.UNIFORM else (53 if el is E.F64 else 24)
            yield AotVariant.auto(
                f"random {dist.value} {el.value} dense={dense} tensors={tensors}",
                K.random_kernel, {"y_ptr": ty, "rng_ptr": "*i64", "a_ptr": "*fp32" if tensors
                                  else ty, "b_ptr": "*fp32" if tensors else ty},
                dict(DIST=DIST_CODE[dist], DIGITS=digits, WIDE=wide,
                     ACC=tl.float64 if el is E.F64 else tl.float32, HAS_A=tensors,
                     HAS_B=tensors and dist is D.NORMAL, DENSE=dense, FULL=False,
                     GROUPS=GROUPS if dense else STRIDED_GROUPS), scalars=scalars,
                num_warps=WARPS)


register_spec(RandomSpec())


# -- bench rows -----------------------------------------------------------------------------
FILL_N = 1 << 28


def _on(device):
    return {"device": device}


@register_bench("random")
def random_benches(quick: bool):
    from . import torch_api as bt

    out = []
    for dtype in (torch.float32, torch.bfloat16):
        label = f"[{FILL_N}] {str(dtype).removeprefix('torch.')}"
        # target: >= 2.8 TB/s of output
        out.append(BenchCase("rand", label, _on,
                             ours=lambda device, dtype=dtype: bt.rand(
                                 FILL_N, dtype=dtype, device=device),
                             torch_eager=lambda device, dtype=dtype: torch.rand(
                                 FILL_N, dtype=dtype, device=device),
                             bytes=FILL_N * dtype.itemsize, quick=dtype == torch.bfloat16,
                             compare=False))
        out.append(BenchCase("randn", label, _on,
                             ours=lambda device, dtype=dtype: bt.randn(
                                 FILL_N, dtype=dtype, device=device),
                             torch_eager=lambda device, dtype=dtype: torch.randn(
                                 FILL_N, dtype=dtype, device=device),
                             bytes=FILL_N * dtype.itemsize, quick=dtype == torch.bfloat16,
                             compare=False))
    return out
