"""Softmax test cases, malformed inputs, AOT variants and benchmarks."""

from __future__ import annotations

import itertools

import torch

from ...backends.triton_support import acc_type, triton_dtype
from ...core.errors import InvalidProblem, Unsupported
from ...core.registry import register_bench, register_spec
from ...core.spec import AotVariant, BenchCase, Case, Malformed, PlanSpec, single_threaded_autograd
from ...core.testing import poisoned, randn, with_layout
from ...core.vocab import ElementKind
from . import reference as ref
from .descriptors import (
    SoftmaxArgs,
    SoftmaxBackwardArgs,
    SoftmaxBackwardDescriptor,
    SoftmaxDescriptor,
    SoftmaxKind,
)
from .kernels import softmax_bwd_kernel, softmax_fwd_kernel
from .plans import SoftmaxBackwardPlan, SoftmaxPlan, launch_config, register_cap

FLOATS = (ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64)

# (shape, axis, layout, special) — ragged extents, every layout, masked and degenerate lines.
SMALL = [
    ((5, 777), 1, "contiguous", None),
    ((3, 100, 4), 1, "strided", None),
    ((1000,), 0, "contiguous", "neg_inf"),
    ((6, 33), -1, "transposed", "all_neg_inf_row"),
    ((4, 50), 1, "contiguous", "constant_rows"),
    ((2, 0, 5), 2, "contiguous", None),
    ((2, 20000), 1, "contiguous", "neg_inf"),  # few long lines: split path
    ((3, 140000), 1, "contiguous", "all_neg_inf_row"),  # very long lines: split path
    ((2, 1, 3, 2, 2, 1, 2, 5), 3, "transposed", None),  # rank 8, many outer dims
    ((7,), 0, "broadcast", None),
]
REAL = [
    ((32768, 1024), 1, "contiguous", None),
    ((4096, 16384), 1, "contiguous", "neg_inf"),
    ((1024, 65536), 1, "contiguous", None),
    ((64, 262144), 1, "contiguous", None),
    ((4, 1048576), 1, "contiguous", None),
    ((512, 128, 33), 1, "strided", "all_neg_inf_row"),
    ((1000, 777), 0, "transposed", None),
]


def _input(shape, element, device, gen, special, layout):
    x = randn(shape, element.torch_dtype, device, gen, std=2.0)
    if special == "neg_inf" and x.numel():
        x[..., ::7] = -float("inf")
    elif special == "all_neg_inf_row" and x.numel():
        x[0] = -float("inf")
    elif special == "constant_rows" and x.numel():
        x[:] = 0.5
    return with_layout(x, layout)


class SoftmaxSpec(PlanSpec):
    plan = SoftmaxPlan

    def cases(self, scale):
        table = SMALL if scale == "small" else REAL
        for (shape, axis, layout, special), element, kind in itertools.product(
            table, FLOATS if scale == "small" else FLOATS[:3], SoftmaxKind
        ):
            desc = SoftmaxDescriptor(kind, shape, axis, element)

            def make(device, gen, shape=shape, element=element, special=special, layout=layout):
                x = _input(shape, element, device, gen, special, layout)
                return SoftmaxArgs(x=x, y=poisoned(shape, element.torch_dtype, device))

            def expect(args, axis=axis, kind=kind):
                return {"y": ref.softmax_forward(args.x, axis, kind is SoftmaxKind.LOG_SOFTMAX)}

            yield Case(f"{kind.value} {shape} ax{axis} {layout} {special} {element.value}",
                       desc, make, expect)

    def malformed_descriptors(self):
        K, E = SoftmaxKind.SOFTMAX, ElementKind.F32
        yield Malformed("axis out of range", lambda: SoftmaxDescriptor(K, (4, 8), 2, E),
                        InvalidProblem)
        yield Malformed("negative extent", lambda: SoftmaxDescriptor(K, (4, -1), 1, E),
                        InvalidProblem)
        yield Malformed("rank 9", lambda: SoftmaxDescriptor(K, (1,) * 9, 0, E), Unsupported)
        yield Malformed("rank 0", lambda: SoftmaxDescriptor(K, (), 0, E), Unsupported)
        yield Malformed("integer element", lambda: SoftmaxDescriptor(K, (4, 8), 1, ElementKind.I32),
                        Unsupported)
        yield Malformed("bad kind", lambda: SoftmaxDescriptor("no_such_kind", (4, 8), 1, E),
                        InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        shape = d.input_shape
        good = lambda: randn(shape, dt, device, torch.Generator().manual_seed(1))
        wrong_shape = tuple(s + 1 for s in shape)
        other = torch.float64 if dt != torch.float64 else torch.float32
        empty = lambda s: torch.empty(s, dtype=dt, device=device)  # noqa: E731
        yield Malformed("y wrong shape", lambda: SoftmaxArgs(good(), empty(wrong_shape)),
                        InvalidProblem)
        yield Malformed("x wrong dtype", lambda: SoftmaxArgs(good().to(other), empty(shape)),
                        InvalidProblem)
        yield Malformed("y aliases x", lambda: (lambda x: SoftmaxArgs(x, x))(good()),
                        InvalidProblem)
        yield Malformed("not a tensor", lambda: SoftmaxArgs([1.0], good()), InvalidProblem)

    def aot_variants(self):
        for element, extent in itertools.product((ElementKind.BF16, ElementKind.F32),
                                                  (1024, 4096, 16384, 65536, 262144)):
            t = "*" + triton_dtype(element.torch_dtype)
            for kernel, ptrs in ((softmax_fwd_kernel, ("x_ptr", "y_ptr")),
                                 (softmax_bwd_kernel, ("dy_ptr", "y_ptr", "dx_ptr"))):
                backward = kernel is softmax_bwd_kernel
                # many lines (TILE / LOOP / EXCHANGE) and, past a block, few lines (EXCHANGE)
                cfgs = {}
                for rows in (4096, 64):
                    cfg = launch_config(extent, element, rows=rows, backward=backward)
                    cfgs.setdefault(cfg["MODE"], cfg)
                for (mode, cfg), log in itertools.product(cfgs.items(), (False, True)):
                    cfg = dict(cfg)
                    warps = cfg.pop("num_warps")
                    del cfg["MODE"]
                    cfg.pop("SEG", None)  # a launch argument (seg_len), not a constexpr
                    sig = {p: t for p in ptrs}
                    sig["ws_ptr"] = "*fp32"
                    sig["cnt_ptr"] = "*i32"
                    # as the JIT specializes a contiguous line: unit strides along it are
                    # constants, the other ints (row strides, extents) multiples of 16
                    const = dict({"KEEP": "", "STREAM": "", "SPIN": 0}, **cfg, MODE=mode,
                                 LOG=False, ACC=acc_type(element), WIDE=False,
                                 **{n: 1 for n in kernel.arg_names if n[1:] == "sn"})
                    sig.update({n: "i32" for n in kernel.arg_names
                                if n not in sig and n not in const})
                    sig.update({n: "constexpr" for n in const})
                    yield AotVariant(
                        f"{kernel.__name__} {element.value} N={extent} mode={mode} "
                        f"log={log}", kernel, sig, dict(const, LOG=log), num_warps=warps,
                        maxnreg=register_cap(mode, log, backward, element),
                        divisible=tuple(n for n in sig if sig[n] == "i32"))
        yield from smem_aot_variants()


def smem_aot_variants():
    """The Hopper shared-memory exchange (Gluon): both chunk configs, softmax and log."""
    from ...backends.gluon_chunks import chunk_config, n_chunks
    from .kernels_smem import softmax_fwd_smem_kernel

    for element, extent, log in itertools.product((ElementKind.BF16, ElementKind.F16),
                                                  (65536, 262144), (False, True)):
        cfg = dict(chunk_config(extent))
        warps = cfg.pop("num_warps")
        ptr = "*" + triton_dtype(element.torch_dtype)
        sig = {"x_ptr": ptr, "y_ptr": ptr, "part_ptr": "*fp32", "count_ptr": "*i32",
               "N": "i32", "stride_x": "i32", "stride_y": "i32", "SPIN": "i32"}
        nch = n_chunks(extent)
        const = dict(cfg, NCH=nch, NCH_P2=nch, LOG=log, num_warps=warps)
        sig.update({n: "constexpr" for n in const})
        yield AotVariant(f"softmax_fwd_smem_kernel {element.value} N={extent} log={log}",
                         softmax_fwd_smem_kernel, sig, const, num_warps=warps,
                         divisible=("N", "stride_x", "stride_y"))


class SoftmaxBackwardSpec(PlanSpec):
    plan = SoftmaxBackwardPlan

    def cases(self, scale):
        for fw in SoftmaxSpec().cases(scale):
            d = fw.desc
            desc = SoftmaxBackwardDescriptor(d.kind, d.input_shape, d.softmax_axis, d.element)

            def make(device, gen, fw=fw, d=d):
                fargs = fw.make_args(device, gen)
                log = d.kind is SoftmaxKind.LOG_SOFTMAX
                y = ref.softmax_forward(fargs.x, d.softmax_axis, log).to(device, fargs.x.dtype)
                dy = with_layout(randn(d.input_shape, y.dtype, device, gen), "strided")
                return SoftmaxBackwardArgs(dy=dy, y=y, dx=poisoned(d.input_shape, y.dtype, device))

            def expect(args, d=d):
                return {"dx": ref.softmax_backward(args.dy, args.y, d.softmax_axis,
                                                   d.kind is SoftmaxKind.LOG_SOFTMAX)}

            yield Case(fw.name.replace(d.kind.value, d.kind.value + "_bwd", 1), desc, make, expect)

    def malformed_descriptors(self):
        K, E = SoftmaxKind.LOG_SOFTMAX, ElementKind.BF16
        yield Malformed("axis out of range",
                        lambda: SoftmaxBackwardDescriptor(K, (4, 8), -3, E), InvalidProblem)
        yield Malformed("negative extent",
                        lambda: SoftmaxBackwardDescriptor(K, (-4, 8), 0, E), InvalidProblem)

    def malformed_args(self, case, device):
        d = case.desc
        dt = d.element.torch_dtype
        mk = lambda s=d.input_shape: randn(s, dt, device, torch.Generator().manual_seed(2))
        bad = tuple(s + 1 for s in d.input_shape)
        yield Malformed("dy wrong shape", lambda: SoftmaxBackwardArgs(mk(bad), mk(), mk()),
                        InvalidProblem)
        yield Malformed("dx overlaps y", lambda: (lambda y: SoftmaxBackwardArgs(mk(), y, y))(mk()),
                        InvalidProblem)


register_spec(SoftmaxSpec())
register_spec(SoftmaxBackwardSpec())


BENCH_SHAPES = [(32768, 1024), (16384, 4096), (4096, 16384), (1024, 65536), (256, 262144)]
QUICK_FWBW = (1024, 16384, 65536)  # line lengths whose fwd+bwd is in the quick set (<= 8 cases)


@register_bench("softmax")
def softmax_benches(quick: bool):
    from .torch_api import log_softmax, softmax  # noqa: F401 - registers ops

    liger = None
    try:  # the third peer, when its wheel is installed
        from liger_kernel.ops.softmax import LigerSoftmaxFunction

        liger = LigerSoftmaxFunction.apply
    except Exception:  # noqa: BLE001 - optional peer
        pass
    out = []
    for dtype in (torch.bfloat16, torch.float32):
        for shape in BENCH_SHAPES:
            nbytes = shape[0] * shape[1] * dtype.itemsize
            label = f"{list(shape)} {str(dtype).replace('torch.', '')}"

            def setup(device, shape=shape, dtype=dtype):
                x = torch.randn(shape, device=device, dtype=dtype)
                return {"x": x, "dy": torch.randn_like(x)}

            out.append(BenchCase("softmax fwd", label, setup,
                                 ours=lambda x, dy: softmax(x, -1),
                                 torch_eager=lambda x, dy: torch.softmax(x, -1),
                                 bytes=2 * nbytes, quick=dtype == torch.bfloat16,
                                 extra_peers={"liger": lambda x, dy: liger(x)} if liger else {}))

            def fwbw_setup(device, shape=shape, dtype=dtype):
                x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
                return {"x": x, "dy": torch.randn_like(x)}

            def ours_fb(x, dy):
                return torch.autograd.grad(softmax(x, -1), x, dy)

            def torch_fb(x, dy):
                return torch.autograd.grad(torch.softmax(x, -1), x, dy)

            liger_fb = {"liger": lambda x, dy: torch.autograd.grad(liger(x), x, dy)} if liger \
                else {}
            fwbw = BenchCase("softmax fwd+bwd", label, fwbw_setup, ours=ours_fb,
                             torch_eager=torch_fb, bytes=5 * nbytes, extra_peers=liger_fb,
                             quick=dtype == torch.bfloat16 and shape[1] in QUICK_FWBW)
            out += [fwbw, single_threaded_autograd(fwbw)]
            out.append(BenchCase("log_softmax fwd", label, setup,
                                 ours=lambda x, dy: log_softmax(x, -1),
                                 torch_eager=lambda x, dy: torch.log_softmax(x, -1),
                                 bytes=2 * nbytes, quick=False))

            def bwd_setup(device, shape=shape, dtype=dtype):
                y = torch.softmax(torch.randn(shape, device=device, dtype=torch.float32), -1)
                return {"y": y.to(dtype), "dy": torch.randn(shape, device=device, dtype=dtype)}

            # backward alone: the op behind autograd (dy + y read, dx written)
            out.append(BenchCase("softmax bwd", label, bwd_setup,
                                 ours=lambda y, dy: _softmax_backward_op(dy, y, y.dim() - 1,
                                                                         False),
                                 torch_eager=lambda y, dy: torch._softmax_backward_data(
                                     dy, y, y.dim() - 1, y.dtype),
                                 bytes=3 * nbytes, quick=dtype == torch.bfloat16))
    return out


def _softmax_backward_op(dy, y, dim, log):
    from .torch_api import _softmax_backward

    return _softmax_backward(dy, y, dim, log)
