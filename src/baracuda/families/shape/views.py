"""torch's views on the shape family's frontend: no kernel, the result shares the input's
storage (torch's own view functions; their gradients are torch autograd's view rules).

`Tensor.unfold` (sliding windows along one dim) is `baracuda.torch.Tensor.unfold`, torch's own
name for it: torch has no top-level `torch.unfold`, and the plain name `unfold` is F.unfold
(im2col, the convolution family's; baracuda.torch spells nn.functional names plainly).
jax's `collapse(x, start, stop)` merges dims [start, stop)."""

from __future__ import annotations

import torch

#: the torch names (a dotted one is the module attribute with "_": Tensor.unfold is
#: Tensor_unfold), as baracuda.torch collects them from torch_api's __all__
TORCH_NAMES = [
    "reshape", "view", "flatten", "unflatten", "ravel", "squeeze", "unsqueeze", "permute",
    "movedim", "moveaxis", "transpose", "swapaxes", "swapdims", "t", "adjoint", "expand",
    "expand_as", "broadcast_to", "broadcast_tensors", "broadcast_shapes", "split",
    "split_with_sizes", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "unbind",
    "diagonal", "narrow", "as_strided", "Tensor.unfold", "atleast_1d", "atleast_2d",
    "atleast_3d", "collapse", "meshgrid",
]
__all__ = [n.replace(".", "_") for n in TORCH_NAMES]


def reshape(input: torch.Tensor, shape) -> torch.Tensor:
    """torch.reshape: a view when the layout allows, else torch's copy."""
    return torch.reshape(input, shape)


def view(input: torch.Tensor, *shape) -> torch.Tensor:
    """Tensor.view as a function (a shape, or a dtype to reinterpret the bytes as)."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple, torch.Size, torch.dtype)):
        shape = shape[0]
        # one tuple: an empty one is a 0-d view (view() with no arguments is an error)
        return input.view(shape) if isinstance(shape, torch.dtype) else input.view(tuple(shape))
    return input.view(shape)


def flatten(input, start_dim: int = 0, end_dim: int = -1):
    return torch.flatten(input, start_dim, end_dim)


def unflatten(input, dim: int, sizes):
    return torch.unflatten(input, dim, sizes)


def ravel(input):
    return torch.ravel(input)


def squeeze(input, dim=None):
    return torch.squeeze(input) if dim is None else torch.squeeze(input, dim)


def unsqueeze(input, dim: int):
    return torch.unsqueeze(input, dim)


def permute(input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple, torch.Size)):
        dims = tuple(dims[0])
    return torch.permute(input, dims)


def movedim(input, source, destination):
    return torch.movedim(input, source, destination)


def moveaxis(input, source, destination):
    return torch.moveaxis(input, source, destination)


def transpose(input, dim0: int, dim1: int):
    return torch.transpose(input, dim0, dim1)


def swapaxes(input, axis0: int, axis1: int):
    return torch.swapaxes(input, axis0, axis1)


def swapdims(input, dim0: int, dim1: int):
    return torch.swapdims(input, dim0, dim1)


def t(input):
    return torch.t(input)


def adjoint(input):
    return torch.adjoint(input)


def expand(input, *sizes, implicit: bool = False):
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, torch.Size)):
        sizes = tuple(sizes[0])
    return input.expand(sizes)  # as one tuple: a 0-d tensor's expand(()) has no sizes


def expand_as(input, other):
    return input.expand_as(other)


def broadcast_to(input, size):
    return torch.broadcast_to(input, size)


def broadcast_tensors(*tensors):
    return torch.broadcast_tensors(*tensors)


def broadcast_shapes(*shapes):
    return torch.broadcast_shapes(*shapes)


def split(tensor, split_size_or_sections, dim: int = 0):
    return torch.split(tensor, split_size_or_sections, dim)


def split_with_sizes(input, split_sizes, dim: int = 0):
    return torch.split_with_sizes(input, split_sizes, dim)


def chunk(input, chunks: int, dim: int = 0):
    return torch.chunk(input, chunks, dim)


def tensor_split(input, indices_or_sections, dim: int = 0):
    return torch.tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    return torch.hsplit(input, indices_or_sections)


def vsplit(input, indices_or_sections):
    return torch.vsplit(input, indices_or_sections)


def dsplit(input, indices_or_sections):
    return torch.dsplit(input, indices_or_sections)


def unbind(input, dim: int = 0):
    return torch.unbind(input, dim)


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    return torch.diagonal(input, offset, dim1, dim2)


def narrow(input, dim: int, start, length: int):
    return torch.narrow(input, dim, start, length)


def as_strided(input, size, stride, storage_offset=None):
    return torch.as_strided(input, size, stride, storage_offset)


def Tensor_unfold(input, dimension: int, size: int, step: int):  # noqa: N802 - torch's name
    """Tensor.unfold: the windows of `size` every `step` along `dimension`, as a new last dim
    (a view)."""
    return input.unfold(dimension, size, step)


def atleast_1d(*tensors):
    return torch.atleast_1d(*tensors)


def atleast_2d(*tensors):
    return torch.atleast_2d(*tensors)


def atleast_3d(*tensors):
    return torch.atleast_3d(*tensors)


def collapse(input, start_dim: int, stop_dim: int | None = None):
    """jax.lax.collapse: dims [start_dim, stop_dim) merged into one (a view when the layout
    allows, as reshape)."""
    rank = input.dim()
    stop = rank if stop_dim is None else stop_dim
    start = start_dim + rank if start_dim < 0 else start_dim
    stop = stop + rank if stop < 0 else stop
    if not 0 <= start <= stop <= rank:
        raise IndexError(f"collapse: need 0 <= start_dim <= stop_dim <= {rank}, got "
                         f"{start_dim}, {stop_dim}")
    if start == stop:
        return input.unsqueeze(start) if rank else input.reshape(1)
    return input.flatten(start, stop - 1) if stop - start > 1 else input.view(input.shape)


def meshgrid(*tensors, indexing: str | None = None):
    return torch.meshgrid(*tensors, indexing=indexing or "ij")
