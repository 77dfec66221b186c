"""Test cases of the kinds with an order or a mask (the norms, logmeanexp, ptp, the bitwise
reductions, hash, torch.masked's reductions), forward and backward; spec.py yields them."""

from __future__ import annotations

import torch

from ...core.spec import Case
from ...core.testing import poisoned, randn, with_layout
from ...core.tolerance import tolerance_for
from ...core.vocab import ElementKind
from . import reference_ext as ref
from .descriptors import (
    CORRECTED,
    ReductionArgs,
    ReductionBackwardArgs,
    ReductionBackwardDescriptor,
    ReductionDescriptor,
    default_out_element,
    needs_x,
    needs_y,
)
from .descriptors import ReductionKind as K

F32, F16, BF16, F64 = ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64
I8, I32, I64, U8, BOOL = (ElementKind.I8, ElementKind.I32, ElementKind.I64, ElementKind.U8,
                          ElementKind.BOOL)
INF = float("inf")

ROW = ((5, 777), (1,), False, "contiguous")
COLUMN = ((300, 24), (0,), True, "contiguous")
MULTI = ((3, 100, 4), (0, 2), False, "strided")
TRANSPOSED = ((6, 33), (1,), False, "transposed")
SPLIT = ((2, 9000), (1,), False, "contiguous")
SCALAR = ((), (0,), False, "contiguous")
FULL_T = ((4, 50), (0, 1), False, "transposed")
EMPTY_R = ((2, 0, 5), (1,), False, "contiguous")
FULL_SPLIT = ((3, 70, 41), (0, 1, 2), False, "channels_last")

ORDERS = (0.0, 1.0, 2.0, INF, -INF, 3.0, 0.5, -1.0, 1.5)

# (kinds, orders, layouts, elements, special, masked)
FORWARD_TABLE = [
    ((K.NORM,), ORDERS, (ROW,), (F32,), None, False),
    ((K.NORM,), (2.0, 3.0, 0.0), (COLUMN, MULTI, TRANSPOSED, SPLIT, SCALAR, EMPTY_R,
                                  FULL_SPLIT), (F32,), None, False),
    ((K.NORM,), (2.0, INF, 1.0), (ROW,), (F16, BF16, F64), "nan", False),
    ((K.NORM,), (INF, -INF), (SPLIT, FULL_T), (F32,), "inf", False),
    ((K.LOGMEANEXP,), (0.0,), (ROW, COLUMN, SPLIT, EMPTY_R), (F32,), "inf", False),
    ((K.LOGMEANEXP,), (0.0,), (ROW,), (BF16, I32), None, False),
    ((K.PTP,), (0.0,), (ROW, FULL_T, SPLIT, SCALAR), (F32,), "nan", False),
    ((K.PTP,), (0.0,), (ROW, COLUMN), (I8, F16), "ties", False),
    ((K.XOR, K.AND, K.OR), (0.0,), (ROW, MULTI, SPLIT, FULL_SPLIT, EMPTY_R), (I32,), None,
     False),
    ((K.XOR, K.AND, K.OR), (0.0,), (ROW,), (I8, U8, I64, BOOL), None, False),
    ((K.HASH,), (0.0,), (ROW, SPLIT, SCALAR), (F32, BF16, F64, I32, BOOL), "nan", False),
    ((K.SUM, K.PROD, K.MEAN, K.AMAX, K.AMIN, K.ARGMAX, K.ARGMIN, K.VAR, K.STD, K.LOGSUMEXP),
     (0.0,), (ROW, MULTI, SPLIT), (F32,), None, True),
    ((K.NORM,), (2.0, -INF, 0.5, 0.0), (ROW, MULTI), (F32,), None, True),
    ((K.SUM, K.AMAX, K.ARGMIN), (0.0,), (ROW,), (I32, BF16), None, True),
]

BACKWARD_TABLE = [
    ((K.NORM,), ORDERS, (ROW,), (F32, F64), None, False),
    ((K.NORM,), (2.0, INF, 3.0, 0.5), (MULTI, TRANSPOSED, SPLIT, SCALAR), (F32,), "ties",
     False),
    ((K.NORM,), (2.0, 1.5), (ROW,), (BF16,), None, False),
    ((K.LOGMEANEXP, K.PTP), (0.0,), (ROW, FULL_T, SPLIT, SCALAR), (F32,), "ties", False),
    ((K.LOGMEANEXP, K.PTP), (0.0,), (ROW,), (BF16, F64), "ties", False),
    ((K.SUM, K.PROD, K.MEAN, K.AMAX, K.AMIN, K.VAR, K.STD, K.LOGSUMEXP), (0.0,),
     (ROW, MULTI, SPLIT), (F32,), "ties", True),
    ((K.NORM,), (2.0, INF, 0.5, 3.0), (ROW, MULTI), (F32,), None, True),
]


def _axes(shape, axes):
    return axes if shape else (0,)


def _input(shape, element: ElementKind, device, gen, special, layout) -> torch.Tensor:
    dt = element.torch_dtype
    if element is BOOL:
        x = torch.rand(shape, generator=gen) > 0.4
    elif not element.is_float:
        info = torch.iinfo(dt)
        x = torch.randint(max(info.min, -(2**30)), min(info.max, 2**30), shape,
                          generator=gen).to(dt)
    else:
        x = randn(shape, torch.float64, "cpu", gen, std=2.0)
        if special == "ties":
            x = x.round()
        if x.numel():
            x.view(-1)[::11] = 0.0  # zeros: the norms' sgn, |x|^p at 0
            if special == "nan":
                x.view(-1)[3::17] = float("nan")
            elif special == "inf":
                x.view(-1)[::13] = INF
                x.view(-1)[5::13] = -INF
        x = x.to(dt)
    return with_layout(x.to(device), layout)


def _mask(shape, device, gen, layout) -> torch.Tensor:
    """A bool mask (broadcast along dim 1 for the strided layout) with one fully masked-out
    line where there are lines."""
    if not shape:
        return torch.ones((), dtype=torch.bool, device=device)
    mshape = list(shape)
    if layout == "strided" and len(shape) > 2:
        mshape[1] = 1
    m = torch.rand(mshape, generator=gen) > 0.35
    if m.dim() >= 2 and m.shape[0] > 1:
        m[0] = False
    return m.to(device).expand(shape)


def _out(kind, element):
    return default_out_element(kind, element)


def _name(kind, order, shape, axes, keepdim, layout, special, element, masked, bwd=False):
    tag = f"{kind.value}{'_bwd' if bwd else ''}"
    if kind is K.NORM:
        tag += f"{order:g}"
    return (f"{tag}{' masked' if masked else ''} {shape} ax{axes} kd{int(keepdim)} {layout} "
            f"{special} {element.value}")


def _skip(kind, order, shape, axes) -> bool:
    empty = any(shape[a] == 0 for a in axes) if shape else False
    no_identity = kind is K.PTP or (kind is K.NORM and (order < 0 or order == INF))
    return empty and no_identity


def _forward_case(kind, order, shape, axes, keepdim, layout, element, special, masked):
    out = _out(kind, element)
    corr = 1.0 if kind in CORRECTED else 0.0
    desc = ReductionDescriptor(kind, shape, _axes(shape, axes), keepdim, element, out, corr,
                               order, masked)
    y_dt = torch.int64 if kind in (K.ARGMAX, K.ARGMIN) else out.torch_dtype

    def make(device, gen, d=desc):
        x = _input(shape, element, device, gen, special, layout)
        mask = _mask(shape, device, gen, layout) if masked else None
        return ReductionArgs(x=x, y=poisoned(d.output_shape, y_dt, device), mask=mask)

    def expect(args, d=desc):
        want = ref.forward_ext(args.x, kind, d.axes, keepdim, order, args.mask, corr,
                               out.torch_dtype)
        return {k: v.to(torch.float64) if v.is_floating_point() else v for k, v in want.items()}

    tol = {}
    if kind is K.NORM and order not in (0.0, 1.0, 2.0, INF, -INF) and out.is_float:
        # |x|^p and its root as exp2(p log2 |x|): a few ulps more than a sum's
        tol = {"y": tolerance_for(out).scaled(8)}
    elif out.is_float and not element.is_float:  # (an integer input's tolerance is exact)
        tol = {"y": tolerance_for(out)}
    name = _name(kind, order, shape, axes, keepdim, layout, special, element, masked)
    return Case(name, desc, make, expect, tol=tol)


def forward_cases():
    for kinds, orders, layouts, elements, special, masked in FORWARD_TABLE:
        for kind in kinds:
            for order in orders if kind is K.NORM else (0.0,):
                for (shape, axes, keepdim, layout) in layouts:
                    if _skip(kind, order, shape, axes):
                        continue
                    for element in elements:
                        yield _forward_case(kind, order, shape, axes, keepdim, layout,
                                            element, special, masked)


def _backward_case(kind, order, shape, axes, keepdim, layout, element, special, masked):
    corr = 1.0 if kind in CORRECTED else 0.0
    desc = ReductionBackwardDescriptor(kind, shape, _axes(shape, axes), keepdim, element,
                                       element, corr, order, masked)
    dt = element.torch_dtype

    def make(device, gen, d=desc):
        x = _input(shape, element, device, gen, special, layout)
        mask = _mask(shape, device, gen, layout) if masked else None
        fw = ref.forward_ext(x, kind, d.axes, keepdim, order, mask, corr)
        y = y2 = None
        if kind is K.PTP:
            y = torch.amin(x, d.axes if shape else (), keepdim=keepdim)
            y2 = torch.amax(x, d.axes if shape else (), keepdim=keepdim)
        elif needs_y(kind):
            y = fw["y"].to(device, dt)
        return ReductionBackwardArgs(
            dy=with_layout(randn(d.output_shape, dt, device, gen), "strided"),
            dx=poisoned(shape, dt, device), x=x if needs_x(kind) else None, y=y, y2=y2,
            mask=mask)

    def expect(args, d=desc):
        x = args.x if args.x is not None else torch.zeros(shape, dtype=torch.float64)
        if kind is K.LOGMEANEXP:  # the formula reads the stored (rounded) output
            y, g = _wide(args.y), _wide(args.dy)
            if not keepdim:
                for a in (d.axes if shape else ()):
                    y, g = y.unsqueeze(a), g.unsqueeze(a)
            return {"dx": g * torch.exp(_wide(x) - y) / max(1, _count(shape, d.axes))}
        return {"dx": ref.backward_ext(kind, x, args.dy, d.axes, keepdim, order, args.mask,
                                       corr)}

    tol = {}
    if kind is K.NORM and order not in (0.0, 1.0, 2.0, INF, -INF):
        tol = {"dx": tolerance_for(element).scaled(8)}
    name = _name(kind, order, shape, axes, keepdim, layout, special, element, masked, True)
    return Case(name, desc, make, expect, tol=tol)


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().to(torch.float64)


def _count(shape, axes) -> int:
    n = 1
    for a in axes if shape else ():
        n *= shape[a]
    return n


def backward_cases():
    for kinds, orders, layouts, elements, special, masked in BACKWARD_TABLE:
        for kind in kinds:
            for order in orders if kind is K.NORM else (0.0,):
                for (shape, axes, keepdim, layout) in layouts:
                    if _skip(kind, order, shape, axes):
                        continue
                    for element in elements:
                        yield _backward_case(kind, order, shape, axes, keepdim, layout,
                                             element, special, masked)
