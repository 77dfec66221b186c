"""jax's pads on the pad plans: `jnp_pad` (jnp.pad / np.pad: constant, edge, reflect,
symmetric, wrap) and `lax_pad` (jax.lax.pad: per-dim (low, high, interior), negative pads
crop, interior pads go between elements). Differentiable: edge / reflect / symmetric / wrap
through PadBackwardPlan, constant pads through the negated constant pad, interior padding
through a strided slice of the gradient."""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core.errors import Unsupported
from ...core.vocab import ElementKind
from .descriptors import PadArgs, PadDescriptor, PadMode
from .plans import PadPlan

#: jnp.pad's modes on the pad plans' (edge = replicate, wrap = circular)
_JNP_MODES = {"constant": PadMode.CONSTANT, "edge": PadMode.REPLICATE,
              "reflect": PadMode.REFLECT, "symmetric": PadMode.SYMMETRIC,
              "wrap": PadMode.CIRCULAR}


def _int(v, who: str) -> int:
    if isinstance(v, torch.Tensor) and v.dim() == 0 and not v.is_floating_point():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{who}: pad widths must be integers, got {v!r}")
    return v


def _pad_width(pad_width, rank: int, who: str) -> list[tuple[int, int]]:
    """numpy's pad_width: an int, (before, after), ((before, after),) or one pair per dim,
    broadcast to one (before, after) pair per dim."""
    if isinstance(pad_width, torch.Tensor):
        pad_width = pad_width.tolist()
    if not isinstance(pad_width, (list, tuple)):
        pad_width = (pad_width,)
    rows = list(pad_width)
    if rows and not isinstance(rows[0], (list, tuple)):  # (w,) or (before, after)
        rows = [tuple(rows)]
    pairs = []
    for row in rows:
        row = tuple(row) if isinstance(row, (list, tuple)) else (row,)
        if len(row) not in (1, 2):
            raise ValueError(f"{who}: each pad_width entry is (before, after), got {row}")
        pairs.append((_int(row[0], who), _int(row[-1], who)))
    if len(pairs) == 1:
        pairs = pairs * rank
    if len(pairs) != rank:
        raise ValueError(f"{who}: pad_width has {len(pairs)} entries for an array of rank "
                         f"{rank}")
    if any(lo < 0 or hi < 0 for lo, hi in pairs):
        raise ValueError(f"{who}: index can't contain negative values, got {pairs}")
    return pairs


def _pad_dims(x: torch.Tensor, pairs, mode: PadMode, value) -> torch.Tensor:
    """x padded per dim: one launch when the padded dims are the last three or fewer (the
    backward's reach), else one dim at a time (the modes are separable: the same result)."""
    from .torch_api import _run

    padded = [d for d, p in enumerate(pairs) if p != (0, 0)]
    if not padded:
        return _run(x, tuple(pairs), PadMode.CONSTANT, 0)  # a copy, as jnp.pad
    if mode is PadMode.CONSTANT or x.dim() - padded[0] <= 3:
        return _run(x, tuple(pairs), mode, value)
    out = x
    for d in padded:
        one = [(0, 0)] * x.dim()
        one[d] = pairs[d]
        moved = out.movedim(d, -1)
        out = _run(moved, tuple(one[:d] + one[d + 1:] + [one[d]]), mode, value).movedim(-1, d)
    return out


def jnp_pad(array: torch.Tensor, pad_width, mode: str = "constant", *, constant_values=0
            ) -> torch.Tensor:
    """jnp.pad (numpy's semantics) for mode constant / edge / reflect / symmetric / wrap.
    constant_values: a scalar, or numpy's per-dim (before, after) values (applied dim after
    dim, as numpy: later dims' values win at the corners). reflect pads at most size - 1,
    symmetric and wrap at most the size (numpy's repeated reflections are refused)."""
    who = "jnp_pad"
    if not isinstance(array, torch.Tensor):
        raise TypeError(f"{who}: array must be a Tensor, got {type(array).__name__}")
    if mode not in _JNP_MODES:
        raise Unsupported(f"{who}: mode must be one of {sorted(_JNP_MODES)}, got {mode!r}")
    pairs = _pad_width(pad_width, array.dim(), who)
    m = _JNP_MODES[mode]
    if m is PadMode.CONSTANT:
        values = constant_values
        if isinstance(values, torch.Tensor):
            values = values.item() if values.numel() == 1 else values.tolist()
        if isinstance(values, (list, tuple)):
            per = _value_pairs(values, array.dim(), who)
            if len({v for p in per for v in p}) > 1:  # numpy: dim after dim, side by side
                out = array
                for d, ((lo, hi), (vlo, vhi)) in enumerate(zip(pairs, per)):
                    for side, (w, v) in enumerate(((lo, vlo), (hi, vhi))):
                        if w:
                            one = [(0, 0)] * array.dim()
                            one[d] = (w, 0) if side == 0 else (0, w)
                            out = _pad_dims(out, one, PadMode.CONSTANT, v)
                return out
            values = per[0][0] if per else 0
        return _pad_dims(array, pairs, m, values)
    for d, ((lo, hi), n) in enumerate(zip(pairs, array.shape)):
        if (lo, hi) == (0, 0):
            continue
        if n == 0:
            raise ValueError(f"{who}: can't extend empty axis {d} using modes other than "
                             "'constant' or 'empty'")
        limit = n - 1 if m is PadMode.REFLECT else n
        if lo > limit or hi > limit:
            raise Unsupported(f"{who}: {mode} pads at most {limit} on dim {d} of size {n} "
                              f"(one reflection / wrap), got ({lo}, {hi})")
    return _pad_dims(array, pairs, m, 0)


def _value_pairs(values, rank: int, who: str) -> list[tuple[float, float]]:
    """numpy's constant_values: (v,), (before, after), or one such pair per dim."""
    rows = list(values)
    if rows and not isinstance(rows[0], (list, tuple)):
        rows = [tuple(rows)]
    pairs = [(r[0], r[-1]) for r in rows]
    if len(pairs) == 1:
        pairs = pairs * rank
    if len(pairs) != rank:
        raise ValueError(f"{who}: constant_values has {len(pairs)} entries for an array of "
                         f"rank {rank}")
    return pairs


# -- lax.pad's interior padding ------------------------------------------------------------------
def _dilated_shape(shape, interior) -> list[int]:
    return [n + max(n - 1, 0) * k for n, k in zip(shape, interior)]


def _dilate_impl(x: torch.Tensor, interior: list[int], value: float, ivalue: int
                 ) -> torch.Tensor:
    """x with `interior[d]` fill elements between neighbours along each dim d: the fill
    (a constant pad of an empty input) and x copied into its strided view (the pad plan
    with no pads, writing through the view's strides)."""
    from .torch_api import _fill, _pad_impl

    shape = _dilated_shape(x.shape, interior)
    empty = x.new_empty((0, *shape[1:]))
    y = _pad_impl(empty, [0, shape[0]] + [0, 0] * (len(shape) - 1), "constant", value, ivalue)
    if x.numel():
        element = ElementKind.of(x.dtype)
        view = y[tuple(slice(None, None, k + 1) for k in interior)]
        desc = PadDescriptor.cached(PadMode.CONSTANT, tuple(x.shape), ((0, 0),) * x.dim(),
                                    element, _fill(value, ivalue, element))
        run_plan(PadPlan, desc, PadArgs(x=x, y=view))
    return y


def _dilate_fake(x, interior, value, ivalue):
    return x.new_empty(_dilated_shape(x.shape, interior))


def _dilate_setup(ctx, inputs, output):
    ctx.interior = inputs[1]


def _dilate_backward(ctx, grad):
    # dy at the positions that hold x: a strided slice
    return grad[tuple(slice(None, None, k + 1) for k in ctx.interior)], None, None, None


_dilate = define_op("lax_pad_dilate", _dilate_impl, _dilate_fake, backward=_dilate_backward,
                    setup_context=_dilate_setup)


def lax_pad(operand: torch.Tensor, padding_value, padding_config) -> torch.Tensor:
    """jax.lax.pad: per dim (low, high, interior); interior >= 0 fill elements go between
    neighbours, then low / high pad (negative: crop) with `padding_value` (a scalar or a
    0-d tensor, read once on the host)."""
    from .torch_api import _check_sizes, _run

    who = "lax_pad"
    if not isinstance(operand, torch.Tensor):
        raise TypeError(f"{who}: operand must be a Tensor, got {type(operand).__name__}")
    if isinstance(padding_value, torch.Tensor):
        if padding_value.numel() != 1 or padding_value.dim() != 0:
            raise TypeError(f"{who}: padding_value must be a scalar, got shape "
                            f"{tuple(padding_value.shape)}")
        padding_value = padding_value.item()
    config = [tuple(c) for c in padding_config]
    if len(config) != operand.dim() or any(len(c) != 3 for c in config):
        raise ValueError(f"{who}: padding_config must hold one (low, high, interior) triple "
                         f"per dim of the operand ({operand.dim()}), got {padding_config}")
    config = [tuple(_int(v, who) for v in c) for c in config]
    interior = [c[2] for c in config]
    if any(k < 0 for k in interior):
        raise ValueError(f"{who}: interior padding must be non-negative, got {config}")
    dilated = _dilated_shape(operand.shape, interior)
    for d, (n, (lo, hi, _)) in enumerate(zip(dilated, config)):
        if n + lo + hi < 0:
            raise ValueError(f"{who}: dimension {d} of size {n} (after interior padding) "
                             f"with padding ({lo}, {hi}) has a negative size")
    x = operand
    if any(interior):
        fval = float(padding_value)
        ival = int(padding_value) if math.isfinite(fval) else 0
        x = _dilate(x, interior, fval, ival)
    per_dim = tuple((lo, hi) for lo, hi, _ in config)
    _check_sizes(x, per_dim, who)
    if x.dim() == 0:
        return _run(x, (), PadMode.CONSTANT, padding_value)
    return _run(x, per_dim, PadMode.CONSTANT, padding_value)
