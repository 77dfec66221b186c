"""Test cases of the set-membership and packbits plans, and the AOT variants of the issue-34
rows (predicates with bool results, frexp's int32 exponent, nan_to_num, reduce_precision,
spacing, the integer bit ops); their forward and gradient cases come from the table rows in
`spec.py` / `spec_nary.py`."""

from __future__ import annotations

import numpy as np
import torch

from ...backends.triton_support import triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_spec
from ...core.spec import AotVariant, Case, Malformed, PlanSpec
from ...core.tolerance import tolerance_for
from .isin import IsinArgs, IsinDescriptor, IsinPlan, isin_kernel
from .kernels import binary_kernel, unary_bwd_kernel, unary_kernel
from .launch import compute_type
from .packbits import BLOCK, PackbitsArgs, PackbitsDescriptor, PackbitsPlan, packbits_kernel
from .spec_inputs import E, N, make_input, poison
from .table import BINARY, UNARY, UNARY_PARAM, BinaryKind, UnaryKind, UnaryParamKind

# -- isin -----------------------------------------------------------------------------------------

ISIN_CASES = [  # (shape, element, test count, test element, invert, layout)
    ((N,), E.I32, 7, E.I32, False, "contiguous"),
    ((N,), E.F32, 5, E.F32, True, "contiguous"),
    ((6, 33), E.BF16, 9, E.F32, False, "transposed"),
    ((3, 100, 4), E.I64, 40, E.I8, False, "strided"),
    ((N,), E.F64, 3, E.I32, False, "contiguous"),
    ((), E.I16, 2, E.I16, True, "contiguous"),
    ((2, 0, 5), E.F32, 4, E.F32, False, "contiguous"),
    ((7, 5), E.U8, 0, E.U8, False, "broadcast"),
]


def _small_values(shape, el, gen, device, layout="contiguous"):
    """Values drawn from a small range (integers, or halves for floats) so that hits happen."""
    x = make_input(shape, E.I32, gen, device, layout=layout).to(el.torch_dtype)
    if el.is_float:
        x = x / 2
        if x.dim() and x.shape[-1] > 2:
            x[..., :2] = torch.tensor([float("nan"), -0.0])  # never found / found as 0
    return x


class IsinSpec(PlanSpec):
    plan = IsinPlan

    def cases(self, scale):
        table = ISIN_CASES if scale == "small" else [((1 << 22,), E.BF16, 64, E.BF16, False,
                                                      "contiguous")]
        for shape, el, count, tel, invert, layout in table:
            desc = IsinDescriptor(shape, el, count, tel, invert)

            def make(device, gen, desc=desc, layout=layout):
                x = _small_values(desc.shape, desc.element, gen, device, layout)
                test = _small_values((desc.test_count,), desc.test_element, gen, device)
                return IsinArgs(x=x, test=test, y=poison(desc.shape, torch.bool, device))

            def expect(args, desc=desc):
                x, t = args.x.cpu(), args.test.cpu()
                common = torch.promote_types(x.dtype, t.dtype)
                hit = (x.to(common).unsqueeze(-1) == t.to(common)).any(-1)
                return {"y": hit != desc.invert}

            yield Case(f"isin {el.value}{shape} in {count} {tel.value} inv{invert} {layout}",
                       desc, make, expect, tol={"y": tolerance_for(E.BOOL)})

    def malformed_descriptors(self):
        yield Malformed("bool", lambda: IsinDescriptor((4,), E.BOOL, 2, E.BOOL), Unsupported)
        yield Malformed("negative count", lambda: IsinDescriptor((4,), E.I32, -1, E.I32),
                        InvalidProblem)
        yield Malformed("invert not bool", lambda: IsinDescriptor((4,), E.I32, 2, E.I32, 1),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        mk = lambda s, el: torch.zeros(s, dtype=el.torch_dtype, device=device)  # noqa: E731
        yield Malformed("y not bool", lambda: IsinArgs(
            mk(d.shape, d.element), mk(d.test_shape, d.test_element), mk(d.shape, E.I32)),
            InvalidProblem)
        yield Malformed("test wrong size", lambda: IsinArgs(
            mk(d.shape, d.element), mk((d.test_count + 1,), d.test_element),
            mk(d.shape, E.BOOL)), InvalidProblem)

    def aot_variants(self):
        for el in (E.BF16, E.F32, E.I32, E.I64):
            sig = {n: "i32" for n in isin_kernel.arg_names}
            sig.update(x_ptr="*" + triton_dtype(el.torch_dtype),
                       t_ptr="*" + triton_dtype(el.torch_dtype), y_ptr="*i1")
            const = dict(INVERT=False, ACC=compute_type(el), MODE=0, BIG=False, BLOCK=1024)
            sig.update({n: "constexpr" for n in const})
            yield AotVariant(f"isin_kernel {el.value}", isin_kernel, sig, const)


# -- packbits -------------------------------------------------------------------------------------

PACK_CASES = [((5, 37, 3), E.BOOL, False), ((1, 1003, 1), E.I32, True), ((4, 8, 1), E.U8, False),
              ((2, 0, 3), E.I64, False), ((1, 5, 7), E.I8, True)]


class PackbitsSpec(PlanSpec):
    plan = PackbitsPlan

    def cases(self, scale):
        table = PACK_CASES if scale == "small" else [((1, 1 << 25, 1), E.BOOL, False)]
        for shape, el, little in table:
            desc = PackbitsDescriptor(shape, el, little)

            def make(device, gen, desc=desc):
                x = torch.randint(-1, 2, desc.shape, generator=gen)
                x = (x.abs() if desc.element is E.U8 else x).to(desc.element.torch_dtype)
                return PackbitsArgs(x=x.to(device), y=poison(desc.out_shape, torch.uint8,
                                                             device))

            def expect(args, desc=desc):
                bits = (args.x.cpu() != 0).numpy()
                order = "little" if desc.little else "big"
                return {"y": torch.from_numpy(np.packbits(bits, axis=1, bitorder=order))}

            yield Case(f"packbits {el.value}{shape} little{little}", desc, make, expect,
                       tol={"y": tolerance_for(E.U8)})

    def malformed_descriptors(self):
        yield Malformed("float", lambda: PackbitsDescriptor((1, 8, 1), E.F32), Unsupported)
        yield Malformed("rank 2", lambda: PackbitsDescriptor((8, 1), E.I32), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        yield Malformed("y wrong shape", lambda: PackbitsArgs(
            torch.zeros(d.shape, dtype=d.element.torch_dtype, device=device),
            torch.zeros(d.shape, dtype=torch.uint8, device=device)
            if d.shape != d.out_shape else torch.zeros(7, dtype=torch.uint8, device=device)),
            InvalidProblem)

    def aot_variants(self):
        for el in (E.BOOL, E.I32):
            for little in (False, True):
                sig = {n: "i32" for n in packbits_kernel.arg_names}
                sig.update(x_ptr="*" + triton_dtype(el.torch_dtype), y_ptr="*u8")
                const = dict(LITTLE=little, BIG=False, BLOCK=BLOCK)
                sig.update({n: "constexpr" for n in const})
                yield AotVariant(f"packbits_kernel {el.value} little{little}", packbits_kernel,
                                 sig, const)


# -- AOT variants of the issue-34 table rows ------------------------------------------------------


def row_variant(kernel, row, label, ins, out, acc, native=False, **extra):
    """An AOT variant of a row on the flat path: pointers typed per operand (`ins` for the
    inputs, `out` for the outputs), `acc` the compute element."""
    names = [n for n in kernel.arg_names if n.endswith("_ptr")]
    const = dict(OP=row.code, ACC=compute_type(acc, native), MODE=0, BIG=False,
                 BLOCK=512 if row.heavy else 1024, **extra)
    sig = {}
    n_in = len(names) - 1
    for n in kernel.arg_names:
        if n in const:
            continue
        if n.endswith("_ptr"):
            el = ins if names.index(n) < n_in else out
            sig[n] = "*" + triton_dtype(el.torch_dtype)
        elif n.startswith("p") and n[-1] in "hl":
            sig[n] = "fp32"
        else:
            sig[n] = "i32"
    sig.update({n: "constexpr" for n in const})
    return AotVariant(f"{kernel.__name__} {label} {ins.value}->{out.value}", kernel, sig, const)


def row_variants():
    """Compile-only variants of the issue-34 rows (their cases are the table specs');
    `UnarySpec.aot_variants` yields them."""
    U = UnaryKind
    for el in (E.BF16, E.F32):
        for kind in (U.ISNAN, U.ISFINITE, U.SIGNBIT, U.LOGICAL_NOT, U.ISINF):
            yield row_variant(unary_kernel, UNARY[kind], kind.value, el, E.BOOL, el)
        yield row_variant(unary_kernel, UNARY[U.FREXP_EXPONENT], "frexp_exponent", el, E.I32,
                          el)
        for kind in (U.FREXP_MANTISSA, U.DEG2RAD, U.SPACING):
            yield row_variant(unary_kernel, UNARY[kind], kind.value, el, el, el,
                              native=UNARY[kind].native)
        for kind in (UnaryParamKind.NAN_TO_NUM, UnaryParamKind.REDUCE_PRECISION):
            for kernel in (unary_kernel, unary_bwd_kernel):
                yield row_variant(kernel, UNARY_PARAM[kind], kind.value, el, el, el)
        for kind in (BinaryKind.LDEXP, BinaryKind.HEAVISIDE):
            yield row_variant(binary_kernel, BINARY[kind], kind.value, el, el, el)
    for el in (E.I32, E.I64, E.U8):
        for kind in (U.BITWISE_NOT, U.POPULATION_COUNT, U.CLZ):
            yield row_variant(unary_kernel, UNARY[kind], kind.value, el, el, el)
        for kind in (BinaryKind.GCD, BinaryKind.LCM, BinaryKind.SHIFT_RIGHT_LOGICAL,
                     BinaryKind.MULHI, BinaryKind.BIT_AT):
            yield row_variant(binary_kernel, BINARY[kind], kind.value, el, el, el)


for _spec in (IsinSpec(), PackbitsSpec()):
    register_spec(_spec)
