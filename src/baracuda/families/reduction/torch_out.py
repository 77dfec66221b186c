"""`out=` for the reduction torch functions: torch's checks (autograd, dtype, device), its
resize (and its warning), then the kernel writes into `out` where the layout and dtype fit,
else the result is computed as usual and copied in.

torch's dtype rules differ per function; each kind belongs to one of three groups:
- computed in out's dtype (sum, prod, nansum: the input is cast to it; mean, logsumexp:
  floats; all / any: bool or uint8); an explicit dtype= must equal out's;
- cast into out where `torch.can_cast` allows (nanmean, var, std, max() / min());
- out's dtype must be exactly the result's (amax, amin, max / min with a dim, aminmax, the
  int64 indices of argmax / argmin).
"""

from __future__ import annotations

import warnings

import torch

from ...backends import launch_replay
from ...backends.torch_ops import _plain_eager, run_plan
from ...core.vocab import ElementKind
from .custom_ops import reduce2_any, reduce_any
from .descriptors import (
    DIFFERENTIABLE,
    ELEMENTS,
    SAME_ELEMENT,
    ReductionArgs,
    ReductionDescriptor,
    default_out_element,
    reduced_shape,
)
from .descriptors import ReductionKind as K
from .plans import ReductionPlan

_INTO = frozenset({K.SUM, K.PROD, K.NANSUM, K.MEAN, K.LOGSUMEXP, K.ALL, K.ANY})
_CAST = frozenset({K.NANMEAN, K.VAR, K.STD, K.MAX_ALL, K.MIN_ALL})
_TWO = frozenset({K.MAX, K.MIN, K.AMINMAX})
_RESULT_TYPES = {K.MAX: torch.return_types.max_out, K.MIN: torch.return_types.min_out,
                 K.AMINMAX: torch.return_types.aminmax_out}

#: torch's names for dtypes in its messages: ScalarType names, and the C++ type names of
#: "Expected out tensor to have dtype ..."
_SCALAR = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
           torch.bfloat16: "BFloat16", torch.int64: "Long", torch.int32: "Int",
           torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte", torch.bool: "Bool"}
_CTYPE = {torch.float32: "float", torch.float64: "double", torch.float16: "c10::Half",
          torch.bfloat16: "c10::BFloat16", torch.int64: "long int", torch.int32: "int",
          torch.int16: "short int", torch.int8: "signed char", torch.uint8: "unsigned char",
          torch.bool: "bool"}


def _name(table: dict, dtype: torch.dtype) -> str:
    return table.get(dtype, str(dtype).removeprefix("torch."))


def _exact(out: torch.Tensor, want: torch.dtype) -> None:
    if out.dtype != want:
        raise RuntimeError(f"Expected out tensor to have dtype {_name(_CTYPE, want)}, but got "
                           f"{_name(_CTYPE, out.dtype)} instead")


def _castable(result: torch.dtype, out: torch.Tensor) -> None:
    if not torch.can_cast(result, out.dtype):
        raise RuntimeError(f"result type {_name(_SCALAR, result)} can't be cast to the desired "
                           f"output type {_name(_SCALAR, out.dtype)}")


def _outputs(out, two: bool, who: str) -> tuple[torch.Tensor, ...]:
    if two:
        if not (isinstance(out, (tuple, list)) and len(out) == 2
                and all(isinstance(t, torch.Tensor) for t in out)):
            raise TypeError(f"{who}(): argument 'out' must be a tuple of 2 Tensors, got "
                            f"{type(out).__name__}")
        return tuple(out)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{who}(): argument 'out' must be Tensor, not {type(out).__name__}")
    return (out,)


def check_grad(differentiable: bool, inputs, outs, who: str) -> None:
    """torch refuses out= where autograd would have to record the call."""
    if not torch.is_grad_enabled():
        return
    if (differentiable and any(t.requires_grad for t in inputs)) \
            or any(t.requires_grad for t in outs):
        raise RuntimeError(f"{who}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def _compute_dtype(kind: K, input: torch.Tensor, dtype: torch.dtype | None,
                   outs: tuple[torch.Tensor, ...], who: str) -> torch.dtype:
    """torch's dtype checks of `kind` with out=; the dtype the result is computed in."""
    out = outs[0]
    natural = dtype or default_out_element(kind, ElementKind.of(input.dtype)).torch_dtype
    if dtype is not None:
        _exact(out, dtype)
    if kind in (K.ALL, K.ANY):
        if out.dtype not in (torch.bool, torch.uint8):
            raise RuntimeError(f"{who} only supports bool tensor for result, got: "
                               f"{_name(_SCALAR, out.dtype)}")
        return out.dtype
    if kind is K.LOGSUMEXP:
        if not out.dtype.is_floating_point:
            raise RuntimeError("logsumexp(): Expected floating point type for result tensor, "
                               f"but got: {_name(_SCALAR, out.dtype)}")
        return out.dtype
    if kind in (K.NANSUM, K.NANMEAN) and input.is_floating_point() \
            and not out.dtype.is_floating_point:
        raise NotImplementedError(f'"nansum" not implemented for \'{_name(_SCALAR, out.dtype)}\'')
    if kind is K.MEAN:
        _castable(natural, out)
        return out.dtype
    if kind in _INTO:  # sum, prod, nansum: the input is cast to out's dtype
        return out.dtype
    if kind in _CAST:
        _castable(natural, out)
        return natural
    if kind in (K.AMAX, K.AMIN):
        if out.dtype != input.dtype:
            raise RuntimeError(f"Expected the dtype for input and out to match, but got "
                               f"{_name(_SCALAR, input.dtype)} for input's dtype and "
                               f"{_name(_SCALAR, out.dtype)} for out's dtype.")
        return natural
    if kind in (K.ARGMAX, K.ARGMIN):
        _exact(out, torch.int64)
        return torch.int64
    _exact(out, input.dtype)  # max / min with a dim, aminmax
    _exact(outs[1], torch.int64 if kind in (K.MAX, K.MIN) else input.dtype)
    return natural


def _cast_input(kind: K, input: torch.Tensor, compute: torch.dtype) -> torch.Tensor:
    """torch computes sum / prod / nansum into an integer out, and all / any into a uint8
    one, on the input cast to out's dtype (0.6 counts as 0): so do we."""
    if compute == input.dtype:
        return input
    if kind in (K.SUM, K.PROD, K.NANSUM) and input.is_floating_point() \
            and not compute.is_floating_point:
        return input.to(compute)
    if kind in (K.ALL, K.ANY) and compute == torch.uint8:
        return input.to(compute)
    return input


def resize(out: torch.Tensor, shape: tuple[int, ...]) -> None:
    """torch's resize of an out= tensor: a wrong shape is replaced (contiguous), with torch's
    deprecation warning when the tensor held elements."""
    if tuple(out.shape) == tuple(shape):
        return
    if out.numel():
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{list(out.shape)}, which does not match the required output shape {list(shape)}. "
            "This behavior is deprecated, and in a future PyTorch release outputs will not be "
            "resized unless they have zero elements. You can explicitly reuse an out tensor t "
            "by resizing it, inplace, to zero elements with t.resize_(0).", UserWarning,
            stacklevel=4)
    out.resize_(shape)


def check_device(input: torch.Tensor, outs, who: str) -> None:
    for o in outs:
        if o.device != input.device:
            raise RuntimeError(f"{who}(): Expected all tensors to be on the same device, but "
                               f"found at least two devices, {input.device} and {o.device}! "
                               "(out must be on the input's device)")


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _writes(kind: K, input: torch.Tensor, dtype: torch.dtype) -> bool:
    """The kernel computes `kind` of `input` into `dtype` (descriptors.ELEMENTS)."""
    element, out_element = _KINDS.get(input.dtype), _KINDS.get(dtype)
    if element is None or out_element is None:
        return False
    inputs, outputs = ELEMENTS[kind]
    if element not in inputs or out_element not in outputs:
        return False
    return kind not in SAME_ELEMENT or out_element is element


_KINDS = {k.torch_dtype: k for k in ElementKind}


def _direct(kind: K, input: torch.Tensor, outs, compute: torch.dtype) -> bool:
    """The kernel can write into `outs`: plain eager tensors, an element the kind writes,
    outputs that overlap neither the input, each other nor themselves."""
    if not _plain_eager() or any(type(t) is not torch.Tensor for t in (input, *outs)):
        return False
    if outs[0].dtype != compute or not _writes(kind, input, compute):
        return False
    for i, o in enumerate(outs):
        if _shares_memory(o, input) or torch._debug_has_internal_overlap(o) != 0:
            return False
        if any(_shares_memory(o, p) for p in outs[i + 1:]):
            return False
    return True


def reduce_into(kind: K, input: torch.Tensor, dims: list[int], keepdim: bool,
                dtype: torch.dtype | None, correction: float, out, who: str):
    """`kind` of `input` over `dims` written into `out` (a tensor, or a pair for max / min
    with a dim and aminmax), as torch's out= variants do; returns `out`."""
    two = kind in _TWO
    outs = _outputs(out, two, who)
    check_grad(kind in DIFFERENTIABLE, (input,), outs, who)
    compute = _compute_dtype(kind, input, dtype, outs, who)
    check_device(input, outs, who)
    input = _cast_input(kind, input, compute)
    shape = reduced_shape(tuple(input.shape), tuple(dims) if input.dim() else (), keepdim)
    for o in outs:
        resize(o, shape)
    rec = launch_replay.active()
    if rec is not None:  # a replay keys on layouts, not on whether out aliases the input
        rec.refuse("out= writes into an argument")
    if _direct(kind, input, outs, compute):
        desc = ReductionDescriptor.cached(kind, tuple(input.shape),
                                          tuple(dims) if input.dim() else (0,), bool(keepdim),
                                          input.dtype, compute, float(correction))
        run_plan(ReductionPlan, desc, ReductionArgs(x=input, y=outs[0],
                                                    y2=outs[1] if two else None))
        return _RESULT_TYPES[kind](outs) if two else outs[0]
    if not _writes(kind, input, compute):  # sum into bool: computed as usual, then cast
        compute = default_out_element(kind, ElementKind.of(input.dtype)).torch_dtype
    if two:
        for o, r in zip(outs, reduce2_any(input, kind.value, dims, bool(keepdim),
                                         float(correction))):
            o.copy_(r)
    else:
        outs[0].copy_(reduce_any(input, kind.value, dims, bool(keepdim), float(correction),
                                compute))
    return _RESULT_TYPES[kind](outs) if two else outs[0]


def copy_into(result: torch.Tensor, out, inputs, who: str) -> torch.Tensor:
    """out= of a result computed elsewhere (max / min's elementwise form): torch's checks,
    then a copy."""
    (o,) = _outputs(out, False, who)
    check_grad(True, inputs, (o,), who)
    _castable(result.dtype, o)
    check_device(result, (o,), who)
    resize(o, tuple(result.shape))
    o.copy_(result)
    return o

