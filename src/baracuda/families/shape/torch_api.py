"""torch's shape-movement functions on the shape family's plans: copies (clone, contiguous,
the *_copy views), concatenation and stacking, flip / roll / rot90 / repeat / tile, pixel
shuffles; views are torch's own views (views.py, no kernel)."""

from __future__ import annotations

import functools

import torch

from ...backends.torch_ops import normalize_dim
from . import views
from .ops import FORMAT_NAMES, broadcast_copy, cat_op, copy_of, run_copy
from .torch_gather import combinations  # noqa: F401 - part of this frontend
from .torch_numpy import jnp_delete, jnp_insert, jnp_resize  # noqa: F401 - this frontend's
from .views import *  # noqa: F403 - the views are part of this frontend

__all__ = [
    "clone", "contiguous", "view_copy", "permute_copy", "transpose_copy", "t_copy",
    "expand_copy", "squeeze_copy", "unsqueeze_copy", "diagonal_copy", "as_strided_copy",
    "unfold_copy", "unbind_copy", "split_with_sizes_copy", "alias_copy",
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
    "column_stack",
    "flip", "fliplr", "flipud", "roll", "rot90", "tile", "repeat",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "cartesian_prod",
    "jnp_delete", "jnp_insert", "jnp_resize", "resize_", "resize_as_", "combinations",
    *views.TORCH_NAMES,
]


def _format_name(memory_format) -> str:
    name = FORMAT_NAMES.get(memory_format)
    if name is None:
        raise RuntimeError(f"unsupported memory format {memory_format}")
    return name


# -- copies ---------------------------------------------------------------------------------------
def clone(input: torch.Tensor, *, memory_format=torch.preserve_format) -> torch.Tensor:
    """torch.clone: one strided-copy launch into torch's layout for `memory_format`."""
    return copy_of(input, _format_name(memory_format))


def contiguous(input: torch.Tensor, memory_format=torch.contiguous_format) -> torch.Tensor:
    """Tensor.contiguous as a function: the input itself when already so laid out, else one
    copy (a transposed layout goes through the tiled transpose)."""
    if input.is_contiguous(memory_format=memory_format):
        return input
    return copy_of(input, _format_name(memory_format))


def _copy_out(view: torch.Tensor, out: torch.Tensor | None, who: str) -> torch.Tensor:
    """A copy of `view`; with out=, torch's *_copy.out rules: out's dtype must be the
    result's (no casting), same device, resized to the result's shape, written without
    autograd (torch records no gradient into out either)."""
    if out is None:
        return copy_of(view)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{who}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.dtype != view.dtype:
        raise RuntimeError(f"{who}: Expected out tensor to have dtype {view.dtype}, but got "
                           f"{out.dtype} instead")
    if out.device != view.device:
        raise RuntimeError(f"{who}: Expected out tensor to have device {view.device}, but got "
                           f"{out.device} instead")
    with torch.no_grad():
        if tuple(out.shape) != tuple(view.shape):
            out.resize_(view.shape)
        if view.numel():
            run_copy(view.detach(), out)
    return out


def _copies_out(parts, out, who: str) -> None:
    """torch's list out= (unbind_copy, split_with_sizes_copy): one out tensor per part,
    each written as _copy_out; returns None as torch."""
    if isinstance(out, torch.Tensor) or not isinstance(out, (list, tuple)):
        raise TypeError(f"{who}: argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != len(parts):
        raise RuntimeError(f"{who} expected an out= argument of size {len(parts)}, got size "
                           f"{len(out)}")
    for p, o in zip(parts, out):
        _copy_out(p, o, who)
    return None


def view_copy(input, size, *, out=None) -> torch.Tensor:
    """torch.view_copy: a contiguous copy of input.view(size)."""
    return _copy_out(input.view(size), out, "view_copy")


def permute_copy(input, dims, *, out=None) -> torch.Tensor:
    return _copy_out(torch.permute(input, dims), out, "permute_copy")


def transpose_copy(input, dim0: int, dim1: int, *, out=None) -> torch.Tensor:
    return _copy_out(torch.transpose(input, dim0, dim1), out, "transpose_copy")


def t_copy(input, *, out=None) -> torch.Tensor:
    return _copy_out(torch.t(input), out, "t_copy")


def expand_copy(input, size, *, implicit: bool = False, out=None) -> torch.Tensor:
    """torch.expand_copy; its gradient is the ordered sum over the broadcast dims."""
    view = input.expand(size)
    if out is not None:
        return _copy_out(view, out, "expand_copy")
    return broadcast_copy(input, list(view.shape))


def squeeze_copy(input, dim=None, *, out=None) -> torch.Tensor:
    return _copy_out(input.squeeze() if dim is None else input.squeeze(dim), out,
                     "squeeze_copy")


def unsqueeze_copy(input, dim: int, *, out=None) -> torch.Tensor:
    return _copy_out(input.unsqueeze(dim), out, "unsqueeze_copy")


def diagonal_copy(input, offset: int = 0, dim1: int = 0, dim2: int = 1, *, out=None
                  ) -> torch.Tensor:
    return _copy_out(torch.diagonal(input, offset, dim1, dim2), out, "diagonal_copy")


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None) -> torch.Tensor:
    return _copy_out(torch.as_strided(input, size, stride, storage_offset), out,
                     "as_strided_copy")


def unfold_copy(input, dimension: int, size: int, step: int, *, out=None) -> torch.Tensor:
    return _copy_out(input.unfold(dimension, size, step), out, "unfold_copy")


def unbind_copy(input, dim: int = 0, *, out=None) -> tuple[torch.Tensor, ...] | None:
    parts = torch.unbind(input, dim)
    if out is not None:
        return _copies_out(parts, out, "unbind_copy_int_out")
    return tuple(copy_of(t) for t in parts)


def split_with_sizes_copy(input, split_sizes, dim: int = 0, *, out=None
                          ) -> list[torch.Tensor] | None:
    parts = torch.split_with_sizes(input, split_sizes, dim)
    if out is not None:
        return _copies_out(parts, out, "split_with_sizes_copy_out")
    return [copy_of(t) for t in parts]


def alias_copy(input, *, out=None) -> torch.Tensor:
    return _copy_out(input, out, "alias_copy")


# -- resize_ / resize_as_ -----------------------------------------------------------------------
def resize_(input: torch.Tensor, size, *, memory_format=None) -> torch.Tensor:
    """Tensor.resize_ as a function: torch's own, since it is a memory operation (the storage
    is reused or grown by torch's allocator, new elements unspecified; a tensor that requires
    grad raises as torch's)."""
    return input.resize_(size, memory_format=memory_format)


def resize_as_(input: torch.Tensor, the_template: torch.Tensor, *, memory_format=None
               ) -> torch.Tensor:
    """Tensor.resize_as_ as a function: torch's own (see resize_)."""
    return input.resize_as_(the_template, memory_format=memory_format)


# -- concatenation ------------------------------------------------------------------------------
def _tensor_list(tensors, who: str) -> list[torch.Tensor]:
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{who}(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{who}(): argument 'tensors' must be tuple of Tensors, but found "
                            f"element of type {type(t).__name__}")
    return list(tensors)


def _write_out(result: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    if torch.is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError("cat(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead")
    if out.dtype != result.dtype and not torch.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype} can't be cast to the desired output "
                           f"type {out.dtype}")
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    return out.copy_(result)


def cat(tensors, dim: int = 0, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cat in one launch for up to eight non-empty inputs (more: one launch per eight),
    each read in its own dtype and cast to torch's promoted one; 1-D empty inputs are skipped
    as torch's legacy rule says; differentiable (the gradients are views of dy)."""
    parts = _tensor_list(tensors, "cat")
    if not parts:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(parts):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    devices = {t.device for t in parts}
    if len(devices) > 1:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, {sorted(map(str, devices))}!")
    dtype = functools.reduce(torch.promote_types, (t.dtype for t in parts))
    kept = [t for t in parts if not (t.dim() == 1 and t.shape[0] == 0)]
    if not kept:
        result = parts[0].new_empty((0,), dtype=dtype)
        return result if out is None else _write_out(result, out)
    ref = kept[0]
    d = normalize_dim(dim, ref.dim(), "cat")
    for i, t in enumerate(parts):
        if t.dim() == 1 and t.shape[0] == 0:
            continue
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} "
                               f"and {t.dim()}")
        for k in range(ref.dim()):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref.shape[k]} but got size {t.shape[k]} "
                                   f"for tensor number {i} in the list.")
    result = cat_op(kept, d, dtype)
    return result if out is None else _write_out(result, out)


def concat(tensors, dim: int = 0, *, out=None) -> torch.Tensor:
    return cat(tensors, dim, out=out)


def concatenate(tensors, axis: int = 0, *, dim: int | None = None, out=None) -> torch.Tensor:
    """torch.concatenate (numpy's name: `axis`; torch also takes `dim`)."""
    return cat(tensors, axis if dim is None else dim, out=out)


def stack(tensors, dim: int = 0, *, out=None) -> torch.Tensor:
    """torch.stack: the inputs unsqueezed (views) and concatenated in one launch."""
    parts = _tensor_list(tensors, "stack")
    if not parts:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(parts[1:], 1):
        if t.shape != parts[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(parts[0].shape)} at entry 0 and {list(t.shape)} at "
                               f"entry {i}")
    d = normalize_dim(dim, parts[0].dim() + 1, "stack")
    return cat([t.unsqueeze(d) for t in parts], d, out=out)


def hstack(tensors, *, out=None) -> torch.Tensor:
    parts = views.atleast_1d(*_tensor_list(tensors, "hstack"))
    parts = parts if isinstance(parts, tuple) else (parts,)
    if not parts:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(parts, 0 if parts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None) -> torch.Tensor:
    parts = views.atleast_2d(*_tensor_list(tensors, "vstack"))
    parts = parts if isinstance(parts, tuple) else (parts,)
    if not parts:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat(parts, 0, out=out)


def row_stack(tensors, *, out=None) -> torch.Tensor:
    return vstack(tensors, out=out)


def dstack(tensors, *, out=None) -> torch.Tensor:
    parts = views.atleast_3d(*_tensor_list(tensors, "dstack"))
    parts = parts if isinstance(parts, tuple) else (parts,)
    if not parts:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return cat(parts, 2, out=out)


def column_stack(tensors, *, out=None) -> torch.Tensor:
    parts = _tensor_list(tensors, "column_stack")
    if not parts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    return cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in parts], 1, out=out)


# -- gathers: flip, roll, rot90, repeat, tile -------------------------------------------------
def _dims(dims, rank: int, who: str) -> list[int]:
    dims = [dims] if isinstance(dims, int) else list(dims)
    out = [normalize_dim(d, rank, who) for d in dims]
    if len(set(out)) != len(out):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(dims)}, but "
                           f"unique flip dims size={len(set(out))}")
    return out


def flip(input: torch.Tensor, dims) -> torch.Tensor:
    """torch.flip: one copy whose source strides run backwards along `dims`; its gradient is
    the same flip."""
    d = sorted(_dims(dims, input.dim(), "flip"))
    if input.dim() == 0:
        return copy_of(input)
    return copy_of(input, flips=d)


def fliplr(input: torch.Tensor) -> torch.Tensor:
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, [1])


def flipud(input: torch.Tensor) -> torch.Tensor:
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, [0])


def roll(input: torch.Tensor, shifts, dims=None) -> torch.Tensor:
    """torch.roll: one copy whose source index along each rolled dim wraps around; the
    gradient is the opposite roll. Without dims the flattened tensor is rolled (a
    non-contiguous input is made contiguous first)."""
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               "dims:0")
        flat = contiguous(input).view(-1)
        return roll(flat, shifts, 0).view(input.shape)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    if not dims:
        raise RuntimeError("`shifts` required")
    rolls = [0] * input.dim()
    for s, d in zip(shifts, dims):
        d = normalize_dim(d, input.dim(), "roll")
        n = input.shape[d]
        if n:
            rolls[d] = (rolls[d] - s) % n
    if input.dim() == 0:
        return copy_of(input)
    return copy_of(input, rolls=rolls)


def rot90(input: torch.Tensor, k: int = 1, dims=(0, 1)) -> torch.Tensor:
    """torch.rot90: one copy (a transposed view with one dim flipped)."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (normalize_dim(d, input.dim(), "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 0:
        return copy_of(input)
    if k == 2:
        return copy_of(input, flips=sorted((d0, d1)))
    # k = 1: flip(d1) then transpose(d0, d1), i.e. the transposed view flipped along d0
    return copy_of(input.transpose(d0, d1), flips=[d0 if k == 1 else d1])


def repeat(input: torch.Tensor, *sizes) -> torch.Tensor:
    """Tensor.repeat as a function: one copy of a broadcast view (each dim split into
    [repeats, extent], the repeats with stride 0); the gradient is the ordered sum over the
    repeats."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, torch.Size)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) < input.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    shape = (1,) * (len(sizes) - input.dim()) + tuple(input.shape)
    split = []
    for n in shape:
        split += [1, n]
    big = [v for r, n in zip(sizes, shape) for v in (r, n)]
    out = broadcast_copy(input.reshape(split), big)
    return out.view([r * n for r, n in zip(sizes, shape)])


def tile(input: torch.Tensor, dims) -> torch.Tensor:
    dims = tuple(dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return repeat(input, dims)


# -- pixel / channel shuffles, cartesian_prod ----------------------------------------------------
def pixel_shuffle(input: torch.Tensor, upscale_factor: int) -> torch.Tensor:
    """F.pixel_shuffle: one copy of the permuted view [..., C, H, r, W, r]."""
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c}"
                           f" is not divisible by {r * r}")
    oc = c // (r * r)
    n = len(lead)
    v = input.reshape(*lead, oc, r, r, h, w).permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return copy_of(v).view(*lead, oc, h * r, w * r)


def pixel_unshuffle(input: torch.Tensor, downscale_factor: int) -> torch.Tensor:
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError("pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but got {h} and {w} for factor {r}")
    n = len(lead)
    v = input.reshape(*lead, c, h // r, r, w // r, r).permute(*range(n), n, n + 2, n + 4,
                                                              n + 1, n + 3)
    return copy_of(v).view(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: torch.Tensor, groups: int) -> torch.Tensor:
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dims")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    v = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return copy_of(v).view(input.shape)


def cartesian_prod(*tensors: torch.Tensor) -> torch.Tensor:
    """torch.cartesian_prod: the meshgrid's broadcast views stacked in one launch."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return copy_of(tensors[0])
    grids = views.meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) if g.is_contiguous() else g.flatten() for g in grids], 1)
