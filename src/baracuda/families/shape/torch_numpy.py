"""jax.numpy's delete and insert (numpy's semantics) as `jnp_delete` / `jnp_insert`: torch has
neither, and plain `delete` / `insert` would read like in-place list operations to torch users.
Indices are host values (a tensor of them is read once, as jnp needs them static); the result
is the concatenation of narrow views of the input (and the inserted values) in one launch per
eight pieces; differentiable through the concatenation."""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import normalize_dim


def _flat_axis(arr: torch.Tensor, axis):
    """(array, axis): axis None works on the flattened array, as numpy."""
    if axis is None:
        from .torch_api import contiguous

        return contiguous(arr).view(-1), 0
    return arr, normalize_dim(axis, arr.dim(), "jnp")


def _host_indices(obj, n: int, who: str) -> list[int]:
    """obj (an int, a slice, a sequence or tensor of ints, or a boolean mask of length n) as
    a list of indices in [0, n)."""
    if isinstance(obj, slice):
        return list(range(n))[obj]
    if isinstance(obj, torch.Tensor):
        if obj.dtype == torch.bool:
            if obj.dim() != 1 or obj.shape[0] != n:
                raise ValueError(f"{who}: a boolean mask must have shape ({n},), got "
                                 f"{tuple(obj.shape)}")
            return [i for i, keep in enumerate(obj.tolist()) if keep]
        if obj.is_floating_point():
            raise TypeError(f"{who}: indices must be integers, got {obj.dtype}")
        obj = obj.reshape(-1).tolist()
    if isinstance(obj, bool):
        raise TypeError(f"{who}: indices must be integers, got a bool")
    values = [obj] if isinstance(obj, int) else list(obj)
    out = []
    for i in values:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"{who}: indices must be integers, got {i!r}")
        if not -n <= i < n:
            raise IndexError(f"{who}: index {i} is out of bounds for axis with size {n}")
        out.append(i % n)
    return out


def _runs(keep: list[int]) -> list[tuple[int, int]]:
    """Sorted indices as (start, length) runs of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for i in keep:
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def jnp_delete(arr: torch.Tensor, obj, axis: int | None = None) -> torch.Tensor:
    """jnp.delete: arr without the entries `obj` (an int, slice, index sequence or boolean
    mask) along `axis` (None: of the flattened array)."""
    from .torch_api import cat, copy_of

    x, ax = _flat_axis(arr, axis)
    n = x.shape[ax]
    gone = set(_host_indices(obj, n, "jnp_delete"))
    keep = [i for i in range(n) if i not in gone]
    pieces = [x.narrow(ax, s, length) for s, length in _runs(keep)]
    if not pieces:
        return copy_of(x.narrow(ax, 0, 0))
    return cat(pieces, ax) if len(pieces) > 1 else copy_of(pieces[0])


def jnp_insert(arr: torch.Tensor, obj, values, axis: int | None = None) -> torch.Tensor:
    """jnp.insert: `values` inserted before the entries `obj` along `axis` (None: into the
    flattened array), numpy's rules: a scalar index inserts `values` as one block (its
    leading dim moved to `axis`), a sequence inserts one broadcast slice per index, each
    before its original position, equal positions in their given order."""
    from .torch_api import cat, copy_of

    x, ax = _flat_axis(arr, axis)
    n = x.shape[ax]
    if not isinstance(values, torch.Tensor):
        values = torch.tensor(values, device=x.device)
    values = values.to(x.device, x.dtype)  # jnp takes values from anywhere
    scalar = isinstance(obj, int) and not isinstance(obj, bool) or (
        isinstance(obj, torch.Tensor) and obj.dim() == 0)
    if isinstance(obj, slice):
        idx = list(range(n))[obj]
    elif isinstance(obj, torch.Tensor):
        if obj.is_floating_point() or obj.dtype == torch.bool:
            raise TypeError(f"jnp_insert: indices must be integers, got {obj.dtype}")
        idx = obj.reshape(-1).tolist()
    else:
        idx = [obj] if scalar else list(obj)
    for i in idx:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"jnp_insert: indices must be integers, got {i!r}")
        if not -n <= i <= n:
            raise IndexError(f"jnp_insert: index {i} is out of bounds for axis {ax} with size "
                             f"{n}")
    idx = [i + n if i < 0 else i for i in idx]
    if scalar:
        v = values.reshape((1,) * max(x.dim() - values.dim(), 0) + tuple(values.shape))
        v = v.movedim(0, ax) if v.dim() else v
        shape = list(x.shape)
        shape[ax] = v.shape[ax] if v.dim() else 1
        blocks = [(idx[0], v.expand(shape))]
    else:
        shape = list(x.shape)
        shape[ax] = len(idx)
        v = values.expand(shape) if values.dim() <= len(shape) else values
        order: list[int] = []  # stable by position (an insertion sort: traced ints compare)
        for k in range(len(idx)):
            at = len(order)
            while at and idx[order[at - 1]] > idx[k]:
                at -= 1
            order.insert(at, k)
        blocks = [(idx[k], v.narrow(ax, k, 1)) for k in order]
    pieces, start = [], 0
    for at, block in blocks:
        if at > start:
            pieces.append(x.narrow(ax, start, at - start))
            start = at
        pieces.append(block)
    if start < n:
        pieces.append(x.narrow(ax, start, n - start))
    return cat(pieces, ax) if len(pieces) > 1 else copy_of(pieces[0])


def jnp_resize(a: torch.Tensor, new_shape) -> torch.Tensor:
    """jnp.resize: the flattened input repeated cyclically to fill `new_shape` (a copy, not
    numpy's in-place ndarray.resize); zeros when the input or the result is empty, as jax.
    Built from the family's copies (contiguous, repeat), so differentiable: an element's
    gradient is the sum over its repeats."""
    from .torch_api import contiguous, repeat

    if isinstance(new_shape, bool) or not isinstance(new_shape, (int, list, tuple, torch.Size)):
        raise TypeError(f"jnp_resize: new_shape must be an int or a sequence of ints, got "
                        f"{type(new_shape).__name__}")
    shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"jnp_resize: new_shape must hold ints, got {n!r}")
    if any(n < 0 for n in shape):
        raise ValueError(f"jnp_resize: all elements of `new_shape` must be non-negative, got "
                         f"{shape}")
    size = math.prod(shape)
    if a.numel() == 0 or size == 0:
        return a.new_zeros(shape)
    flat = contiguous(a).reshape(-1)
    reps = -(-size // flat.numel())
    return repeat(flat, reps).narrow(0, 0, size).reshape(shape)
