"""Shape family test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import math

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec
from ...core.testing import poisoned, randn, with_layout
from ...core.tolerance import tolerance_for
from ...core.vocab import ElementKind
from . import kernels as K
from .descriptors import (
    CatArgs,
    CatDescriptor,
    CopyArgs,
    CopyDescriptor,
    SumDimsArgs,
    SumDimsDescriptor,
)
from .plans import SUM_BLOCK, CatPlan, CopyPlan, SumDimsPlan, cat_config, copy_config

E = ElementKind


def _values(shape, element, device, gen) -> torch.Tensor:
    x = randn(shape, torch.float64, "cpu", gen, std=3.0)
    if not element.is_float:
        x = x.round().abs() if element in (E.U8, E.BOOL) else x.round()
    return x.to(device, element.torch_dtype)


def _source(x: torch.Tensor, flips, rolls) -> torch.Tensor:
    """The copy's definition: y[i] = x[src(i)] (flipped dims reversed, rolled dims read
    from (i + r) mod n)."""
    out = x.flip(list(flips)) if flips else x
    if rolls and any(rolls):
        out = out.roll([-r for r in rolls], list(range(x.dim())))
    return out


# (shape, layout, flips, rolls, element, output element)
COPIES = [
    ((5, 7, 9), "contiguous", (), (), E.F32, None),
    ((37, 65), "transposed", (), (), E.BF16, None),
    ((3, 4, 33, 17), "channels_last", (), (), E.F16, None),
    ((6, 5, 7), "strided", (0, 2), (), E.F64, None),
    ((4, 9, 11), "broadcast", (1,), (), E.I32, None),
    ((6, 7, 10), "transposed", (), (2, 0, 3), E.F32, None),
    ((2, 3, 2, 3, 2, 3, 2, 3), "strided", (7,), (), E.U8, None),
    ((4, 0, 3), "contiguous", (), (), E.F32, None),
    ((), "contiguous", (), (), E.I64, None),
    ((100, 3), "transposed", (), (), E.F32, E.BF16),
    ((9, 13), "contiguous", (), (), E.BOOL, None),
]


def copy_case(shape, layout, flips, rolls, element, output) -> Case:
    desc = CopyDescriptor(shape, element, output, flips, rolls)

    def make(device, gen):
        x = with_layout(_values(shape, element, device, gen), layout)
        return CopyArgs(x=x, y=poisoned(shape, desc.output_element.torch_dtype, device))

    def expect(args):
        return {"y": _source(args.x.cpu(), flips, rolls).to(desc.output_element.torch_dtype)}

    name = f"copy {shape} {layout} flips={flips} rolls={rolls} {element.value}->" \
           f"{desc.output_element.value}"
    return Case(name, desc, make, expect, tol={"y": tolerance_for(desc.output_element)})


class CopySpec(PlanSpec):
    plan = CopyPlan

    def cases(self, scale):
        if scale == "small":
            for row in COPIES:
                yield copy_case(*row)
            return
        yield copy_case((16384, 8192), "transposed", (), (), E.BF16, None)
        yield copy_case((4096, 4096), "contiguous", (1,), (), E.F32, None)
        yield copy_case((4096, 4096), "contiguous", (), (7, 1000), E.BF16, None)

    def malformed_descriptors(self):
        yield Malformed("rank 9", lambda: CopyDescriptor((1,) * 9, E.F32), Unsupported)
        yield Malformed("negative extent", lambda: CopyDescriptor((3, -1), E.F32),
                        InvalidProblem)
        yield Malformed("flip out of range", lambda: CopyDescriptor((3, 4), E.F32, None, (2,)),
                        InvalidProblem)
        yield Malformed("roll too large", lambda: CopyDescriptor((3, 4), E.F32, None, (),
                                                                  (0, 4)), InvalidProblem)
        yield Malformed("rolls of the wrong rank",
                        lambda: CopyDescriptor((3, 4), E.F32, None, (), (1,)), InvalidProblem)
        yield Malformed("flipped and rolled",
                        lambda: CopyDescriptor((3, 4), E.F32, None, (1,), (0, 1)),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        shape = d.shape
        good = lambda: _values(shape, d.element, device, torch.Generator().manual_seed(1))  # noqa: E731,E501
        out = lambda s=shape: torch.empty(s, dtype=d.output_element.torch_dtype,  # noqa: E731
                                          device=device)
        yield Malformed("y wrong shape", lambda: CopyArgs(good(), out((*shape, 2))),
                        InvalidProblem)
        yield Malformed("not a tensor", lambda: CopyArgs([1.0], out()), InvalidProblem)
        if math.prod(shape) > 0:
            yield Malformed("y aliases x", lambda: (lambda x: CopyArgs(x, x))(good())
                            if d.output_element is d.element else CopyArgs(good(), good()),
                            InvalidProblem)

    def aot_variants(self):
        yield from copy_aot_variants()


def sum_case(shape, dims, layout, element) -> Case:
    desc = SumDimsDescriptor(shape, dims, element)

    def make(device, gen):
        x = with_layout(_values(shape, element, device, gen), layout)
        return SumDimsArgs(x=x, y=poisoned(desc.output_shape, element.torch_dtype, device))

    def expect(args):
        x = args.x.cpu().double()
        return {"y": x.sum(dims, keepdim=True) if dims else x}

    k = math.prod(shape[d] for d in dims) if dims else 1
    tol = tolerance_for(element).scaled(max(1.0, math.sqrt(k / 64)))
    return Case(f"sum_dims {shape} dims={dims} {layout} {element.value}", desc, make, expect,
                tol={"y": tol})


class SumDimsSpec(PlanSpec):
    plan = SumDimsPlan

    def cases(self, scale):
        if scale == "small":
            yield sum_case((3, 5, 4, 7), (0, 2), "contiguous", E.F32)
            yield sum_case((6, 300), (1,), "transposed", E.BF16)
            yield sum_case((2, 3, 2, 3, 2, 3, 2, 3), (0, 3, 5, 6), "strided", E.F64)
            yield sum_case((5, 4), (), "contiguous", E.F16)
            yield sum_case((0, 4), (0,), "contiguous", E.F32)
            yield sum_case((2000, 3), (0,), "transposed", E.BF16)  # chunked: two launches
            return
        yield sum_case((8, 8192, 8192), (0,), "contiguous", E.BF16)

    def malformed_descriptors(self):
        yield Malformed("integer", lambda: SumDimsDescriptor((3, 4), (0,), E.I32), Unsupported)
        yield Malformed("dims unsorted", lambda: SumDimsDescriptor((3, 4), (1, 0), E.F32),
                        InvalidProblem)
        yield Malformed("dim out of range", lambda: SumDimsDescriptor((3, 4), (2,), E.F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        x = lambda: torch.ones(d.input_shape, dtype=dt, device=device)  # noqa: E731
        y = lambda s=d.output_shape: torch.empty(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("y not reduced", lambda: SumDimsArgs(x(), y(d.input_shape))
                        if d.dims else SumDimsArgs(x(), y((*d.input_shape, 2))),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: SumDimsArgs(x().to(torch.int32), y()),
                        InvalidProblem)

    def aot_variants(self):
        for el in (E.F32, E.BF16, E.F16, E.F64):
            io = "*" + triton_dtype(el.torch_dtype)
            yield AotVariant.auto(f"sum_dims_kernel {el.value}", K.sum_dims_kernel,
                                  {"x_ptr": io, "y_ptr": io},
                                  {"BLOCK": SUM_BLOCK, "ACC": acc_type(el)},
                                  scalars={"M": "i64", "K": "i64"}, num_warps=4)


def cat_case(rows, widths, elements, output, layout="contiguous") -> Case:
    desc = CatDescriptor(rows, widths, elements, output)

    def make(device, gen):
        xs = [_values((rows, w + 3 if layout == "row_strided" else w), e, device, gen)
              for w, e in zip(widths, elements)]
        xs = [x[:, :w] for x, w in zip(xs, widths)]  # row_strided: rows 3 elements apart
        return CatArgs(poisoned(desc.output_shape, output.torch_dtype, device), *xs)

    def expect(args):
        return {"y": torch.cat([t.cpu().to(output.torch_dtype) for t in args.inputs()], 1)}

    return Case(f"cat rows={rows} widths={widths} {[e.value for e in elements]}->"
                f"{output.value} {layout}", desc, make, expect,
                tol={"y": tolerance_for(output)})


class CatSpec(PlanSpec):
    plan = CatPlan

    def cases(self, scale):
        if scale == "small":
            yield cat_case(7, (10, 3), (E.F32, E.F32), E.F32)
            yield cat_case(5, (33, 0, 2), (E.BF16, E.F32, E.I32), E.F32, "row_strided")
            yield cat_case(1, (5,) * 8, (E.F64,) * 8, E.F64)
            yield cat_case(3, (4, 9, 1), (E.BOOL, E.U8, E.I64), E.I64)
            yield cat_case(0, (4, 9), (E.F16, E.F16), E.F16)
            return
        yield cat_case(8192, (8192, 8192), (E.BF16, E.BF16), E.BF16)

    def malformed_descriptors(self):
        yield Malformed("nine inputs", lambda: CatDescriptor(2, (1,) * 9, (E.F32,) * 9, E.F32),
                        Unsupported)
        yield Malformed("elements of the wrong count",
                        lambda: CatDescriptor(2, (1, 2), (E.F32,), E.F32), InvalidProblem)
        yield Malformed("negative rows", lambda: CatDescriptor(-1, (1,), (E.F32,), E.F32),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        xs = [torch.zeros((d.rows, w), dtype=e.torch_dtype, device=device)
              for w, e in zip(d.widths, d.elements)]
        y = torch.empty(d.output_shape, dtype=d.output_element.torch_dtype, device=device)
        yield Malformed("missing input", lambda: CatArgs(y, *xs[:-1]), InvalidProblem)
        yield Malformed("y wrong shape", lambda: CatArgs(
            torch.empty((d.rows + 1, sum(d.widths)), dtype=y.dtype, device=device), *xs),
            InvalidProblem)

    def aot_variants(self):
        for n, el, rows, width in ((2, E.BF16, 8192, 8192), (8, E.BF16, 4096, 4096),
                                   (2, E.F32, 4096, 4096), (3, E.F32, 64, 100)):
            desc = CatDescriptor(rows, (width,) * n, (el,) * n, el)
            cfg = cat_config(desc, [width] * n, width * n)
            io = "*" + triton_dtype(el.torch_dtype)
            ptrs = {"y_ptr": io, **{f"x{i}": io for i in range(8)}}
            yield AotVariant.auto(f"cat_kernel N={n} {el.value} TR={cfg['TR']} TC={cfg['TC']}",
                                  K.cat_kernel, ptrs,
                                  {"N": n, "TR": cfg["TR"], "TC": cfg["TC"],
                                   "WIDE": cfg["WIDE"]}, num_warps=cfg["num_warps"],
                                  divisible=tuple(f"r{i}" for i in range(8)) + ("ys_row",))


register_spec(CopySpec())
register_spec(SumDimsSpec())
register_spec(CatSpec())


def copy_aot_variants():
    """The copy kernel's tiles: contiguous (16 KB per program for each element size),
    transposed (64 x 64 through shared memory), rolled, flipped, and 64-bit offsets."""
    rows = []
    for el in (E.BF16, E.F32, E.F64, E.U8):
        rows.append((CopyDescriptor((4096, 8192), el), "contiguous"))
        rows.append((CopyDescriptor((8192, 4096), el), "transposed"))
    rows.append((CopyDescriptor((16, 32, 4096, 128), E.BF16), "permute"))
    rows.append((CopyDescriptor((4096, 4096), E.BF16, None, (), (5, 7)), "contiguous"))
    rows.append((CopyDescriptor((4096, 4096), E.F32, None, (1,)), "contiguous"))
    rows.append((CopyDescriptor((16384, 8192), E.BF16, None, (1,)), "contiguous"))
    rows.append((CopyDescriptor((16384, 8192), E.BF16, None, (0,)), "contiguous"))
    rows.append((CopyDescriptor((1 << 16, 1 << 16), E.BF16), "transposed"))
    for desc, layout in rows:
        shape = desc.shape
        y_strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        if layout == "transposed":
            x_strides = [1, shape[0]]
        elif layout == "permute":  # y = x.permute(0, 2, 1, 3) of a contiguous [B, S, H, D]
            _, h, s, d = shape
            x_strides = [s * h * d, d, h * d, 1]
        else:
            x_strides = y_strides
        cfg = copy_config(desc, x_strides, y_strides)
        const = {"TB": cfg["TB"], "TA": cfg["TA"], "ROLL": cfg["ROLL"], "WIDE": cfg["WIDE"]}
        const["ysa"] = 1
        unit = "xsb" if cfg["transposed"] else "xsa"
        if cfg["dims"][-2 if cfg["transposed"] else -1][1] == 1:  # (a flipped A runs at -1)
            const[unit] = 1
        ptrs = {"x_ptr": "*" + triton_dtype(desc.element.torch_dtype),
                "y_ptr": "*" + triton_dtype(desc.output_element.torch_dtype)}
        scalars = {}
        if cfg["WIDE"]:
            scalars = {n: "i64" for n in ("xsb", "xsa", "ysb")}
        yield AotVariant.auto(
            f"copy_kernel {desc.element.value} {layout} TB={cfg['TB']} TA={cfg['TA']} "
            f"roll={cfg['ROLL']} wide={cfg['WIDE']} flips={desc.flips}", K.copy_kernel,
            ptrs, const, scalars=scalars, num_warps=cfg["num_warps"],
            divisible=("NB", "NA", "xs5", "ys5", "xsb", "ysb"))


# -- benchmarks -----------------------------------------------------------------------------------
def _label(shape, dtype, extra: str = "") -> str:
    return f"{list(shape)} {str(dtype).removeprefix('torch.')}{extra}"


@register_bench("shape")
def shape_benches(quick: bool):
    from . import torch_api as bt

    bf16 = torch.bfloat16
    out = []

    def tensor(shape):
        return lambda device: {"x": torch.randn(shape, device=device, dtype=bf16)}

    def add(name, shape, setup, ours, eager, nbytes, extra=""):
        out.append(BenchCase(name, _label(shape, bf16, extra), setup, ours=ours,
                             torch_eager=eager, bytes=nbytes))

    big = (16384, 8192)
    n = 2 * math.prod(big)  # bf16 bytes of one [16384, 8192]
    add("contiguous x.t()", big, tensor(big), lambda x: bt.contiguous(x.t()),
        lambda x: x.t().contiguous(), 2 * n)
    bshd = (16, 4096, 32, 128)
    m = 2 * math.prod(bshd)
    add("permute(0,2,1,3).contiguous()", bshd, tensor(bshd),
        lambda x: bt.contiguous(x.permute(0, 2, 1, 3)),
        lambda x: x.permute(0, 2, 1, 3).contiguous(), 2 * m)
    clone_shape = (16384, 16384)
    add("clone", clone_shape, tensor(clone_shape), lambda x: bt.clone(x),
        lambda x: torch.clone(x),
        2 * 2 * math.prod(clone_shape))
    for parts, shape in ((2, (8192, 8192)), (8, (4096, 4096))):
        def cat_setup(device, parts=parts, shape=shape):
            return {"xs": [torch.randn(shape, device=device, dtype=bf16) for _ in range(parts)]}

        add(f"cat of {parts} dim=1", shape, cat_setup, lambda xs: bt.cat(xs, 1),
            lambda xs: torch.cat(xs, 1), 2 * 2 * parts * math.prod(shape), f" x{parts}")
    add("flip dim=-1", big, tensor(big), lambda x: bt.flip(x, (-1,)),
        lambda x: torch.flip(x, (-1,)), 2 * n)
    add("roll (1000, 7) dims=(1, 0)", big, tensor(big), lambda x: bt.roll(x, (1000, 7), (1, 0)),
        lambda x: torch.roll(x, (1000, 7), (1, 0)), 2 * n)
    rep = (8192, 8192)
    add("repeat(2, 1)", rep, tensor(rep), lambda x: bt.repeat(x, 2, 1),
        lambda x: x.repeat(2, 1), 3 * 2 * math.prod(rep))
    return out


# the table gather's specs register on import (discovery imports spec)
from . import spec_gather  # noqa: E402,F401
