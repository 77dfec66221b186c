"""Pad test cases, malformed inputs and AOT variants; the family's bench rows."""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import kernels as K
from . import reference as ref
from .descriptors import (
    MODE_CODES,
    PadArgs,
    PadBackwardArgs,
    PadBackwardDescriptor,
    PadDescriptor,
    PadMode,
    fill_bits,
)
from .plans import BACKWARD_WARPS, PadBackwardPlan, PadPlan, bits_type, tile

E = ElementKind
M = PadMode
_Z = (0, 0)

# (shape, pads, layout, mode, element, value): ragged extents, every mode and layout, negative
# pads (crops; circular crops then wraps), empty inputs, rank 8, a replicate band longer than
# a column block
SMALL = [
    ((5, 77), ((1, 2), (3, 4)), "contiguous", M.CONSTANT, E.F32, 1.5),
    ((2, 3, 9, 10), (_Z, _Z, (2, 1), (3, 3)), "strided", M.REFLECT, E.BF16, 0),
    ((3, 4, 11), (_Z, _Z, (4, 0)), "transposed", M.REPLICATE, E.F64, 0),
    ((2, 3, 5, 6, 7), (_Z, _Z, (1, 2), (2, 1), (3, 3)), "contiguous", M.CIRCULAR, E.F32, 0),
    ((6, 40), ((-2, 3), (1, -5)), "contiguous", M.CONSTANT, E.I32, -7),
    ((4, 9), (_Z, (-2, 4)), "strided", M.CIRCULAR, E.F64, 0),
    ((0, 5), ((1, 1), (2, 2)), "contiguous", M.CONSTANT, E.F16, 0.25),
    ((3, 1, 1, 2, 1, 2, 1, 3), ((1, 0), _Z, (0, 1), _Z, _Z, (1, 1), _Z, (2, -1)), "contiguous",
     M.CONSTANT, E.BOOL, 1),
    ((7, 3), (_Z, (2, 2)), "broadcast", M.REPLICATE, E.I64, 0),
    ((2, 2, 30), (_Z, _Z, (5, 70)), "contiguous", M.REPLICATE, E.F32, 0),
    ((2, 5, 6), (_Z, (-1, 2), (1, -2)), "transposed", M.REFLECT, E.F32, 0),
    ((3, 8, 9), (_Z, (2, 1), (1, 2)), "contiguous", M.CONSTANT, E.U8, 200),
    ((3, 7, 6), (_Z, (3, 2), (1, 6)), "strided", M.SYMMETRIC, E.F32, 0),
    ((4, 5), (_Z, (5, 5)), "transposed", M.SYMMETRIC, E.F64, 0),
]
REAL = [
    ((16, 64, 512, 512), (_Z, _Z, (3, 3), (3, 3)), "contiguous", m, E.BF16, 0)
    for m in PadMode
] + [((8, 32, 1023, 1023), (_Z, _Z, (1, 2), (2, 1)), "strided", M.REFLECT, E.F32, 0)]


def _input(shape, element, layout, device, gen):
    x = randn(shape, torch.float64, "cpu", gen, std=3.0)
    if not element.is_float:
        x = (x * 10).round().abs() if element in (E.U8, E.BOOL) else (x * 10).round()
    return with_layout(x.to(device, element.torch_dtype), layout)


def _forward_case(shape, pads, layout, mode, element, value) -> Case:
    desc = PadDescriptor(mode, shape, pads, element, fill_bits(value, element))

    def make(device, gen):
        return PadArgs(x=_input(shape, element, layout, device, gen),
                       y=poisoned(desc.output_shape, element.torch_dtype, device))

    def expect(args):
        x = args.x.cpu()
        if element.is_float:
            x = x.double()
        return {"y": ref.pad(x, pads, mode.value, value)}

    name = f"pad {mode.value} {shape} {pads} {layout} {element.value}"
    return Case(name, desc, make, expect)


def pad_cases(scale: str):
    for row in SMALL if scale == "small" else REAL:
        yield _forward_case(*row)


class PadSpec(PlanSpec):
    plan = PadPlan

    def cases(self, scale):
        return pad_cases(scale)

    def malformed_descriptors(self):
        F = E.F32
        yield Malformed("negative size", lambda: PadDescriptor(M.CONSTANT, (4,), ((-3, -2),), F),
                        InvalidProblem)
        yield Malformed("reflect pad = size",
                        lambda: PadDescriptor(M.REFLECT, (2, 4), (_Z, (4, 0)), F),
                        InvalidProblem)
        yield Malformed("symmetric past the size",
                        lambda: PadDescriptor(M.SYMMETRIC, (2, 4), (_Z, (5, 0)), F),
                        InvalidProblem)
        yield Malformed("circular wraps twice",
                        lambda: PadDescriptor(M.CIRCULAR, (2, 4), (_Z, (-1, 4)), F),
                        InvalidProblem)
        yield Malformed("reflect of an empty dim",
                        lambda: PadDescriptor(M.REFLECT, (2, 0), (_Z, (1, 1)), F),
                        InvalidProblem)
        yield Malformed("pads per dim", lambda: PadDescriptor(M.CONSTANT, (2, 4), ((1, 1),), F),
                        InvalidProblem)
        yield Malformed("pad not an int",
                        lambda: PadDescriptor(M.CONSTANT, (4,), ((1.0, 1),), F),
                        InvalidProblem)
        yield Malformed("rank 9", lambda: PadDescriptor(M.CONSTANT, (1,) * 9, (_Z,) * 9, F),
                        Unsupported)
        yield Malformed("bad mode", lambda: PadDescriptor("mirror", (4,), ((1, 1),), F),
                        InvalidProblem)
        yield Malformed("float fill", lambda: PadDescriptor(M.CONSTANT, (4,), ((1, 1),), F, 1.5),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        other = torch.float64 if dt != torch.float64 else torch.float32
        x = lambda: torch.zeros(d.input_shape, dtype=dt, device=device)  # noqa: E731
        y = lambda s=d.output_shape: torch.zeros(s, dtype=dt, device=device)  # noqa: E731
        wrong = tuple(s + 1 for s in d.output_shape)
        yield Malformed("y wrong shape", lambda: PadArgs(x(), y(wrong)), InvalidProblem)
        yield Malformed("x wrong dtype", lambda: PadArgs(x().to(other), y()), InvalidProblem)
        yield Malformed("not a tensor", lambda: PadArgs([1.0], y()), InvalidProblem)

    def aot_variants(self):
        yield from aot_variants()


def _backward_case(fw: Case) -> Case:
    d = fw.desc
    desc = PadBackwardDescriptor(d.mode, d.input_shape, d.pads, d.element)

    def make(device, gen):
        dy = with_layout(randn(desc.output_shape, d.element.torch_dtype, device, gen),
                         "strided")
        return PadBackwardArgs(dy=dy, dx=poisoned(d.input_shape, d.element.torch_dtype, device))

    def expect(args):
        return {"dx": ref.pad_backward(args.dy, d.input_shape, d.pads, d.mode.value)}

    return Case(fw.name.replace("pad", "pad_backward", 1), desc, make, expect)


class PadBackwardSpec(PlanSpec):
    plan = PadBackwardPlan

    def cases(self, scale):
        for fw in pad_cases(scale):
            if fw.desc.mode is not M.CONSTANT and fw.desc.element.is_float:
                yield _backward_case(fw)

    def malformed_descriptors(self):
        yield Malformed("constant mode",
                        lambda: PadBackwardDescriptor(M.CONSTANT, (2, 4), (_Z, (1, 1)), E.F32),
                        InvalidProblem)
        yield Malformed("integer element",
                        lambda: PadBackwardDescriptor(M.REFLECT, (2, 4), (_Z, (1, 1)), E.I32),
                        Unsupported)
        yield Malformed("four padded dims",
                        lambda: PadBackwardDescriptor(M.REPLICATE, (2, 3, 4, 5),
                                                      ((1, 1),) * 4, E.F32), Unsupported)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        dy = lambda s=d.output_shape: torch.zeros(s, dtype=dt, device=device)  # noqa: E731
        dx = lambda: torch.zeros(d.input_shape, dtype=dt, device=device)  # noqa: E731
        yield Malformed("dy wrong shape", lambda: PadBackwardArgs(dy(d.input_shape), dx()),
                        InvalidProblem)


register_spec(PadSpec())
register_spec(PadBackwardSpec())

#: (element, last-dim width) of the forward variants: the bench's 518 and a narrow 9
_AOT_ELEMENTS = (E.BF16, E.F32, E.F64, E.I64, E.U8, E.BOOL)


def aot_variants():
    """The forward in every mode for every element size, at a wide and a narrow last dim;
    the backward in every non-constant mode for bf16, f32 and f64. Contiguous tensors: the
    JIT specializes their unit strides as constants."""
    seen = set()
    for mode in PadMode:
        for element in _AOT_ELEMENTS:
            for width in (518, 9):
                if mode is not M.CONSTANT and not element.is_float and width == 9:
                    continue
                rows, bw = tile(width, element.itemsize)
                key = (mode, element, rows, bw)
                if key in seen:
                    continue
                seen.add(key)
                ptr = "*" + triton_dtype(element.torch_dtype)
                yield AotVariant.auto(
                    f"pad_kernel {mode.value} {element.value} R={rows} W={bw}", K.pad_kernel,
                    {"x_ptr": ptr, "y_ptr": ptr},
                    dict(MODE=MODE_CODES[mode], BITS=bits_type(element), ROWS=rows,
                         BLOCK_W=bw, xsw=1, ysw=1),
                    scalars={"value_bits": "i64"})
    for mode in (M.REFLECT, M.REPLICATE, M.CIRCULAR, M.SYMMETRIC):
        for element in (E.BF16, E.F32, E.F64):
            rows, bw = tile(512, element.itemsize)
            rows = max(1, rows // 2)
            ptr = "*" + triton_dtype(element.torch_dtype)
            yield AotVariant.auto(
                f"pad_backward_kernel {mode.value} {element.value} R={rows} W={bw}",
                K.pad_backward_kernel, {"dy_ptr": ptr, "dx_ptr": ptr},
                dict(MODE=MODE_CODES[mode], ACC=acc_type(element), ROWS=rows, BLOCK_W=bw,
                     dys_w=1, dxs_w=1), num_warps=BACKWARD_WARPS)


# -- bench rows ---------------------------------------------------------------------------------
PAD_SHAPE = (16, 64, 512, 512)


def _label(shape, dtype, extra="") -> str:
    return f"{list(shape)} {str(dtype).removeprefix('torch.')}{extra}"


def _pad_benches() -> list[BenchCase]:
    from . import torch_api as bt

    dtype = torch.bfloat16
    pad = (3, 3, 3, 3)
    out_shape = (*PAD_SHAPE[:2], PAD_SHAPE[2] + 6, PAD_SHAPE[3] + 6)
    moved = (math.prod(PAD_SHAPE) + math.prod(out_shape)) * dtype.itemsize
    label = _label(PAD_SHAPE, dtype, " pad 3 on H, W")
    rows = []
    for mode in ("constant", "reflect", "replicate"):
        def setup(device):
            return {"x": torch.randn(PAD_SHAPE, device=device, dtype=dtype)}

        rows.append(BenchCase(f"pad {mode} fwd", label, setup,
                              ours=lambda x, mode=mode: bt.pad(x, pad, mode=mode),
                              torch_eager=lambda x, mode=mode: torch.nn.functional.pad(
                                  x, pad, mode=mode),
                              bytes=moved, quick=mode != "replicate"))

    def grad_setup(device):
        # x only gives torch's backward the input's shape
        return {"dy": torch.randn(out_shape, device=device, dtype=dtype),
                "x": torch.empty(PAD_SHAPE, device=device, dtype=dtype)}

    rows.append(BenchCase(
        "pad reflect bwd", label, grad_setup,
        ours=lambda dy, x: bt._pad_backward(dy, [0, 0, 0, 0, 3, 3, 3, 3], "reflect",
                                            list(PAD_SHAPE)),
        torch_eager=lambda dy, x: torch.ops.aten.reflection_pad2d_backward(dy, x, pad),
        bytes=moved))
    rows += _jax_pad_benches(dtype)
    return rows


def _jax_pad_benches(dtype) -> list[BenchCase]:
    """jnp_pad symmetric (torch's peer: the flipped edges concatenated) and lax_pad with
    interior 1 on H, W (torch's peer: a fill, a strided assignment and F.pad)."""
    from . import torch_api as bt

    def setup(device):
        return {"x": torch.randn(PAD_SHAPE, device=device, dtype=dtype)}

    def symmetric_eager(x):
        x = torch.cat([x[..., :3, :].flip(-2), x, x[..., -3:, :].flip(-2)], -2)
        return torch.cat([x[..., :3].flip(-1), x, x[..., -3:].flip(-1)], -1)

    n, c, h, w = PAD_SHAPE
    sym_out = n * c * (h + 6) * (w + 6)
    dil = (n, c, 2 * h - 1 + 2, 2 * w - 1 + 2)

    def lax_eager(x):
        y = x.new_full((n, c, 2 * h - 1, 2 * w - 1), 0.5)
        y[..., ::2, ::2] = x
        return torch.nn.functional.pad(y, (1, 1, 1, 1), value=0.5)

    return [
        BenchCase("jnp_pad symmetric fwd", _label(PAD_SHAPE, dtype, " pad 3 on H, W"), setup,
                  ours=lambda x: bt.jnp_pad(x, ((0, 0), (0, 0), (3, 3), (3, 3)), "symmetric"),
                  torch_eager=symmetric_eager,
                  bytes=(math.prod(PAD_SHAPE) + sym_out) * dtype.itemsize),
        BenchCase("lax_pad interior 1 fwd", _label(PAD_SHAPE, dtype, " (1, 1, 1) on H, W"),
                  setup,
                  ours=lambda x: bt.lax_pad(x, 0.5, [(0, 0, 0), (0, 0, 0), (1, 1, 1),
                                                     (1, 1, 1)]),
                  torch_eager=lax_eager,
                  bytes=(math.prod(PAD_SHAPE) + 2 * math.prod(dil)) * dtype.itemsize,
                  quick=False),
    ]


@register_bench("shape_pattern")
def shape_pattern_benches(quick: bool):
    from .spec_matrix import matrix_benches
    from .spec_repeat import repeat_benches

    return _pad_benches() + matrix_benches() + repeat_benches()


# the other patterns' specs register on import (discovery imports spec)
from . import spec_matrix, spec_repeat  # noqa: E402,F401
