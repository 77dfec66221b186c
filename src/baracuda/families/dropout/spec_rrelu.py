"""RReLU test cases (the slopes against the host twin of the stream, values in float64),
malformed inputs, AOT variants and the bench rows."""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.philox import STATE_HIGH
from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn
from ...core.vocab import ElementKind
from . import kernels_rrelu as K
from . import reference_rrelu as ref
from .descriptors_rrelu import RreluArgs, RreluDescriptor
from .plans import GROUPS, STRIDED_GROUPS, WARPS
from .plans_rrelu import RreluPlan
from .spec import SIX_SHAPE, _tensor

E = ElementKind
#: (shape, element, lower, upper, training, grad, layout)
SMALL = [
    ((1001,), E.F32, 0.125, 1 / 3, True, False, "contiguous"),
    ((6, 100), E.BF16, 0.1, 0.3, True, True, "transposed"),
    ((5, 33), E.F64, 0.2, 0.5, True, True, "strided"),
    ((4, 6, 7), E.F16, 0.125, 1 / 3, False, False, "contiguous"),
    ((3, 5, 2, 3), E.F32, 0.125, 1 / 3, False, True, "channels_last"),
    ((300,), E.F32, 0.25, 0.25, True, False, "contiguous"),
    (SIX_SHAPE, E.F32, 0.1, 0.9, True, False, "six_dims"),
    ((), E.F32, 0.1, 0.3, True, True, "contiguous"),
    ((2, 0, 5), E.F32, 0.1, 0.3, True, False, "contiguous"),
]
REAL_N = 1 << 24
REAL = [
    ((REAL_N,), E.BF16, 0.125, 1 / 3, True, False, "contiguous"),
    ((REAL_N,), E.BF16, 0.125, 1 / 3, True, True, "contiguous"),
    ((4096, 4096), E.F32, 0.125, 1 / 3, True, False, "transposed"),
    ((4096, 4096), E.F32, 0.125, 1 / 3, False, True, "contiguous"),
]


def rrelu_case(shape, element, lower, upper, training, grad, layout) -> Case:
    desc = RreluDescriptor(shape, element, lower, upper, training, grad)
    dt = element.torch_dtype

    def make(device, gen):
        def fill(s, d, dev):
            return randn(s, d, dev, gen)
        x = _tensor(shape, dt, device, layout, fill)
        dy = _tensor(shape, dt, device, layout, fill) if grad else None
        y = _tensor(shape, dt, device, layout, poisoned)
        state = torch.randint(0, STATE_HIGH, (2,), generator=gen, dtype=torch.int64)
        return RreluArgs(x=x, y=y, dy=dy, rng_state=state.to(device) if training else None)

    def expect(args):
        return ref.rrelu(desc, args.x, args.rng_state, args.dy)

    name = (f"{'grad' if grad else 'forward'} {shape} {element.value} [{lower:.3g}, "
            f"{upper:.3g}] training={training} {layout}")
    return Case(name, desc, make, expect)


class RreluSpec(PlanSpec):
    plan = RreluPlan

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            yield rrelu_case(*row)

    def malformed_descriptors(self):
        yield Malformed("lower > upper", lambda: RreluDescriptor((4,), E.F32, 0.5, 0.1),
                        InvalidProblem)
        yield Malformed("int input", lambda: RreluDescriptor((4,), E.I32), Unsupported)
        yield Malformed("infinite upper", lambda: RreluDescriptor((4,), E.F32, 0.1,
                                                                  float("inf")), InvalidProblem)
        yield Malformed("training not a bool", lambda: RreluDescriptor((4,), E.F32,
                                                                       training=1),
                        InvalidProblem)
        yield Malformed("rank 9", lambda: RreluDescriptor((1,) * 9, E.F32), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        other = torch.float64 if dt != torch.float64 else torch.float32
        state = torch.zeros(2, dtype=torch.int64, device=device) if d.training else None
        wrong = tuple(s + 1 for s in d.shape)

        def empty(shape=d.shape, dtype=dt):
            return torch.empty(shape, dtype=dtype, device=device)

        def args(x=None, y=None, dy=None, st=state):
            return RreluArgs(empty() if x is None else x, empty() if y is None else y,
                             (empty() if dy is None else dy) if d.grad else None, st)

        yield Malformed("y wrong shape", lambda: args(y=empty(wrong)), InvalidProblem)
        yield Malformed("x wrong dtype", lambda: args(x=empty(dtype=other)), InvalidProblem)
        if d.grad:
            yield Malformed("dy wrong shape", lambda: args(dy=empty(wrong)), InvalidProblem)
        if d.training:
            yield Malformed("state int32", lambda: args(st=torch.zeros(2, dtype=torch.int32,
                                                                       device=device)),
                            InvalidProblem)

    def aot_variants(self):
        scalars = {n: "fp32" for n in ("lo_hi", "lo_lo", "span_hi", "span_lo")}
        scalars.update(base="i64", n="i64")
        rows = [(E.BF16, True, False, True), (E.BF16, True, True, True),
                (E.F32, False, False, True), (E.F16, True, True, False),
                (E.F32, True, False, False), (E.F64, True, True, False)]
        for el, training, grad, dense in rows:
            ty = f"*{triton_dtype(el.torch_dtype)}"
            yield AotVariant.auto(
                f"rrelu {el.value} training={training} grad={grad} dense={dense}",
                K.rrelu_kernel, {"x_ptr": ty, "dy_ptr": ty, "y_ptr": ty, "rng_ptr": "*i64"},
                dict(TRAINING=training, GRAD=grad, DENSE=dense,
                     ACC=tl.float64 if el is E.F64 else tl.float32,
                     GROUPS=GROUPS if dense else STRIDED_GROUPS),
                scalars=scalars, num_warps=WARPS)


register_spec(RreluSpec())


# -- bench rows -----------------------------------------------------------------------------
BENCH_N = 1 << 28


@register_bench("dropout")
def rrelu_benches(quick: bool):
    from . import torch_rrelu as bt

    def setup(device):
        return {"x": torch.randn(BENCH_N, dtype=torch.bfloat16, device=device)}

    def fwbw_setup(device):
        x = torch.randn(BENCH_N, dtype=torch.bfloat16, device=device, requires_grad=True)
        return {"x": x, "dy": torch.randn_like(x)}

    def fwd_bwd(fn):
        return lambda x, dy: torch.autograd.grad(fn(x, training=True), x, dy)

    label = f"[{BENCH_N}] bfloat16 training"
    return [
        # memory bound: x read, y written
        BenchCase("rrelu", label, setup, ours=lambda x: bt.rrelu(x, training=True),
                  torch_eager=lambda x: torch.nn.functional.rrelu(x, training=True),
                  bytes=2 * BENCH_N * 2, compare=False),
        # forward x read, y written; backward x and dy read, dx written (torch also
        # writes and reads its stored noise)
        BenchCase("rrelu fwd+bwd", label, fwbw_setup, ours=fwd_bwd(bt.rrelu),
                  torch_eager=fwd_bwd(torch.nn.functional.rrelu), bytes=5 * BENCH_N * 2,
                  compare=False),
    ]
