"""Dropout test cases (the mask against the host twin of the stream, exact; the values in
float64), malformed inputs, AOT variants and the bench rows."""

from __future__ import annotations

import torch
import triton.language as tl

from ...backends.philox import STATE_HIGH
from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import kernels as K
from . import reference as ref
from .descriptors import DropoutArgs, DropoutDescriptor, DropoutMode
from .plans import GROUPS, STRIDED_GROUPS, WARPS, DropoutPlan

E = ElementKind
M = DropoutMode
#: six dims no collapse merges, launched as 6 runs of 315 elements (bases not multiples of 4)
SIX = ((3, 4, 5, 6, 7, 8), tuple(slice(0, n) for n in (2, 3, 3, 5, 3, 7)))
SIX_SHAPE = tuple(len(range(d)[s]) for d, s in zip(*SIX))

#: (shape, element, p, mode, alpha, inner, write_mask, layout)
SMALL = [
    ((1001,), E.F32, 0.3, M.FORWARD, False, 0, False, "contiguous"),
    ((6, 100), E.BF16, 0.5, M.FORWARD, False, 0, True, "transposed"),
    ((5, 33), E.F64, 0.1, M.GRAD, False, 0, False, "strided"),
    ((4, 6, 7), E.F16, 0.25, M.FORWARD, False, 7, True, "contiguous"),
    ((3, 5, 2, 3), E.F32, 0.4, M.GRAD, False, 6, False, "channels_last"),
    ((700,), E.F32, 0.2, M.FORWARD, True, 0, False, "contiguous"),
    ((4, 5, 9), E.F64, 0.3, M.GRAD, True, 9, False, "contiguous"),
    ((300,), E.F32, 0.0, M.FORWARD, False, 0, True, "contiguous"),
    ((300,), E.F32, 1.0, M.FORWARD, False, 0, True, "contiguous"),
    ((513,), E.BF16, 0.5, M.FROM_MASK, False, 0, False, "contiguous"),
    (SIX_SHAPE, E.F32, 0.5, M.FORWARD, False, 0, False, "six_dims"),
    ((), E.F32, 0.5, M.FORWARD, False, 0, True, "contiguous"),
    ((2, 0, 5), E.F32, 0.5, M.FORWARD, False, 0, False, "contiguous"),
]
REAL_N = 1 << 24
REAL = [
    ((REAL_N,), E.BF16, 0.1, M.FORWARD, False, 0, False, "contiguous"),
    ((REAL_N,), E.BF16, 0.1, M.GRAD, False, 0, False, "contiguous"),
    ((64, 256, 32, 32), E.F32, 0.2, M.FORWARD, False, 1024, True, "contiguous"),
    ((4096, 4096), E.F32, 0.3, M.FORWARD, True, 0, False, "transposed"),
]


def _tensor(shape, dtype, device, layout, fill):
    if layout == "six_dims":
        t = fill(SIX[0], dtype, device)
        return t[SIX[1]]
    return with_layout(fill(shape, dtype, device), layout)


def dropout_case(shape, element, p, mode, alpha, inner, write_mask, layout) -> Case:
    scale = 1.0 / (1.0 - p) if p < 1 else 0.0
    desc = DropoutDescriptor(shape, element, p, mode, alpha, inner, write_mask,
                             scale if mode is M.FROM_MASK else 1.0)
    dt = element.torch_dtype

    def make(device, gen):
        x = _tensor(shape, dt, device, layout, lambda s, d, dev: randn(s, d, dev, gen))
        y = _tensor(shape, dt, device, layout, poisoned)
        state = torch.randint(0, STATE_HIGH, (2,), generator=gen, dtype=torch.int64)
        mask = torch.zeros(shape, dtype=torch.bool, device=device) if write_mask else None
        mask_in = None
        if mode is M.FROM_MASK:
            mask_in = (torch.rand(shape, generator=gen) < 0.5).to(device)
        return DropoutArgs(x=x, y=y, rng_state=None if mode is M.FROM_MASK else
                           state.to(device), mask=mask, mask_in=mask_in)

    def expect(args):
        return ref.dropout(desc, args.x, args.rng_state, args.mask_in)

    name = (f"{mode.value} {shape} {element.value} p={p} alpha={alpha} inner={inner} "
            f"mask={write_mask} {layout}")
    return Case(name, desc, make, expect)


class DropoutSpec(PlanSpec):
    plan = DropoutPlan

    def cases(self, scale):
        for row in SMALL if scale == "small" else REAL:
            yield dropout_case(*row)

    def malformed_descriptors(self):
        yield Malformed("p > 1", lambda: DropoutDescriptor((4,), E.F32, 1.5), InvalidProblem)
        yield Malformed("p < 0", lambda: DropoutDescriptor((4,), E.F32, -0.1), InvalidProblem)
        yield Malformed("int input", lambda: DropoutDescriptor((4,), E.I32, 0.5), Unsupported)
        yield Malformed("negative inner", lambda: DropoutDescriptor((4,), E.F32, 0.5,
                                                                    inner=-1), InvalidProblem)
        yield Malformed("mask written by a backward", lambda: DropoutDescriptor(
            (4,), E.F32, 0.5, M.GRAD, write_mask=True), InvalidProblem)
        yield Malformed("alpha not a bool", lambda: DropoutDescriptor((4,), E.F32, 0.5,
                                                                      alpha=1), InvalidProblem)
        yield Malformed("bad mode", lambda: DropoutDescriptor((4,), E.F32, 0.5, "no_such"),
                        InvalidProblem)
        yield Malformed("rank 9", lambda: DropoutDescriptor((1,) * 9, E.F32, 0.5), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        other = torch.float64 if dt != torch.float64 else torch.float32
        state = None if d.mode is M.FROM_MASK else torch.zeros(2, dtype=torch.int64,
                                                                device=device)
        mask = torch.zeros(d.shape, dtype=torch.bool, device=device) if d.write_mask else None
        mask_in = torch.zeros(d.shape, dtype=torch.bool, device=device) \
            if d.mode is M.FROM_MASK else None
        wrong = tuple(s + 1 for s in d.shape)

        def args(x=None, y=None, st=state):
            return DropoutArgs(torch.empty(d.shape, dtype=dt, device=device) if x is None
                               else x, torch.empty(d.shape, dtype=dt, device=device) if y is None
                               else y, st, mask, mask_in)

        yield Malformed("y wrong shape", lambda: args(y=torch.empty(wrong, dtype=dt,
                                                                     device=device)),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: args(x=torch.empty(d.shape, dtype=other,
                                                                     device=device)),
                        InvalidProblem)
        if state is not None:
            yield Malformed("state int32", lambda: args(st=torch.zeros(2, dtype=torch.int32,
                                                                       device=device)),
                            InvalidProblem)

    def aot_variants(self):
        scalars = {n: "fp32" for n in ("keep_p", "s_hi", "s_lo", "ck_hi", "ck_lo", "cd_hi",
                                       "cd_lo")}
        scalars.update(base="i64", n="i64")
        rows = [(E.BF16, False, False, False, True), (E.BF16, False, True, False, True),
                (E.F32, False, False, False, True), (E.F16, False, False, True, True),
                (E.BF16, True, True, False, True), (E.F32, False, False, False, False),
                (E.F64, True, False, False, False), (E.BF16, False, False, True, False)]
        for el, feature, write, read, dense in rows:
            ty = f"*{triton_dtype(el.torch_dtype)}"
            yield AotVariant.auto(
                f"dropout {el.value} feature={feature} write={write} read={read} "
                f"dense={dense}", K.dropout_kernel,
                {"x_ptr": ty, "y_ptr": ty, "mask_ptr": "*i1" if write or read else ty,
                 "rng_ptr": "*i64"},
                dict(FEATURE=feature, WRITE_MASK=write, READ_MASK=read, DENSE=dense,
                     ACC=tl.float64 if el is E.F64 else tl.float32,
                     GROUPS=GROUPS if dense else STRIDED_GROUPS),
                scalars=scalars, num_warps=WARPS)


register_spec(DropoutSpec())


# -- bench rows -----------------------------------------------------------------------------
BENCH_N = 1 << 28


@register_bench("dropout")
def dropout_benches(quick: bool):
    from . import torch_api as bt

    def setup(device):
        return {"x": torch.randn(BENCH_N, dtype=torch.bfloat16, device=device)}

    def fwbw_setup(device):
        x = torch.randn(BENCH_N, dtype=torch.bfloat16, device=device, requires_grad=True)
        return {"x": x, "dy": torch.randn_like(x)}

    def fwd_bwd(fn):
        return lambda x, dy: torch.autograd.grad(fn(x, 0.1, True), x, dy)

    label = f"[{BENCH_N}] bfloat16 p=0.1"
    return [
        # target: >= 2.8 TB/s (x read, y written)
        BenchCase("dropout", label, setup, ours=lambda x: bt.dropout(x, 0.1, True),
                  torch_eager=lambda x: torch.nn.functional.dropout(x, 0.1, True),
                  bytes=2 * BENCH_N * 2, compare=False),
        # target: >= 2.6 TB/s (forward: x read, y written; backward: dy read, dx written)
        BenchCase("dropout fwd+bwd", label, fwbw_setup,
                  ours=fwd_bwd(bt.dropout), torch_eager=fwd_bwd(torch.nn.functional.dropout),
                  bytes=4 * BENCH_N * 2, compare=False),
    ]
