"""Reduction family descriptors, args and the kind table (what each kind computes and returns)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind


class ReductionKind(enum.Enum):
    SUM = "sum"
    MEAN = "mean"
    PROD = "prod"
    NANSUM = "nansum"
    NANMEAN = "nanmean"
    AMAX = "amax"
    AMIN = "amin"
    #: torch.max() / min() without a dim: amax / amin forward; the gradient goes evenly to
    #: every maximal element, NaNs included (amax's gives a NaN line the NaN gradient)
    MAX_ALL = "max_all"
    MIN_ALL = "min_all"
    #: torch.max(dim) / min(dim): values and int64 indices (the first maximal one; a NaN's)
    MAX = "max"
    MIN = "min"
    ARGMAX = "argmax"
    ARGMIN = "argmin"
    ALL = "all"
    ANY = "any"
    COUNT_NONZERO = "count_nonzero"
    VAR = "var"
    STD = "std"
    VAR_MEAN = "var_mean"
    STD_MEAN = "std_mean"
    LOGSUMEXP = "logsumexp"
    AMINMAX = "aminmax"
    #: the vector norm of order `order`: (sum |x|^p)^(1/p); 0 counts nonzeros, +-inf is the
    #: largest / smallest |x|
    NORM = "norm"
    #: logsumexp - log N (jax.nn.logmeanexp)
    LOGMEANEXP = "logmeanexp"
    #: max - min (jnp.ptp)
    PTP = "ptp"
    #: bitwise reductions of integers / bool, exact in the input's type (jax.lax.reduce_*)
    XOR = "xor"
    AND = "and"
    OR = "or"
    #: torch.hash_tensor: the xor of every element's bits after widening to 64 bits (floats
    #: to float64), as int64 (the torch function views it as uint64)
    HASH = "hash"


K = ReductionKind
_ALL_KINDS = tuple(ElementKind)
_NUMERIC = tuple(k for k in ElementKind if k is not ElementKind.BOOL)
_FLOATS = tuple(sorted(FLOAT_KINDS, key=lambda k: k.value))
_INTEGRAL = tuple(k for k in ElementKind if not k.is_float)

#: kinds whose reduced axes must be one axis (their indices count along it)
INDEXED = frozenset({K.MAX, K.MIN})
#: kinds that return an index (the first extreme one, in row-major order of the reduced axes)
RETURNS_INDEX = frozenset({K.MAX, K.MIN, K.ARGMAX, K.ARGMIN})
#: kinds with a second output (y2): indices, the mean, or the max of aminmax
TWO_OUTPUTS = frozenset({K.MAX, K.MIN, K.VAR_MEAN, K.STD_MEAN, K.AMINMAX})
#: kinds with no identity: an empty reduced extent is an error (torch's IndexError)
NO_IDENTITY = frozenset({K.AMAX, K.AMIN, K.MAX_ALL, K.MIN_ALL, K.MAX, K.MIN, K.ARGMAX,
                         K.ARGMIN, K.AMINMAX, K.PTP})
#: kinds with a correction (Bessel's: divide by N - correction)
CORRECTED = frozenset({K.VAR, K.STD, K.VAR_MEAN, K.STD_MEAN})
#: kinds with a gradient (ReductionBackwardPlan)
DIFFERENTIABLE = frozenset({K.SUM, K.MEAN, K.PROD, K.NANSUM, K.NANMEAN, K.AMAX, K.AMIN,
                            K.MAX_ALL, K.MIN_ALL, K.MAX, K.MIN, K.VAR, K.STD, K.VAR_MEAN,
                            K.STD_MEAN, K.LOGSUMEXP, K.AMINMAX, K.NORM, K.LOGMEANEXP,
                            K.PTP})
#: kinds that take a mask operand (torch.masked): masked-out elements are replaced by the
#: reduction's identity (MASK_SUBSTITUTE), or left out of the count too (mean, var, std)
MASKABLE = frozenset({K.SUM, K.PROD, K.MEAN, K.AMAX, K.AMIN, K.ARGMAX, K.ARGMIN, K.VAR, K.STD,
                      K.LOGSUMEXP, K.NORM})
MASK_EXCLUDES = frozenset({K.MEAN, K.VAR, K.STD})

#: (input elements, output elements) per kind; ints reduce exactly in int64
ELEMENTS: dict[ReductionKind, tuple[tuple[ElementKind, ...], tuple[ElementKind, ...]]] = {
    K.SUM: (_ALL_KINDS, _NUMERIC), K.PROD: (_ALL_KINDS, _NUMERIC),
    K.NANSUM: (_ALL_KINDS, _NUMERIC),
    K.MEAN: (_ALL_KINDS, _FLOATS), K.NANMEAN: (_FLOATS, _FLOATS),
    K.AMAX: (_ALL_KINDS, _ALL_KINDS), K.AMIN: (_ALL_KINDS, _ALL_KINDS),
    K.MAX_ALL: (_ALL_KINDS, _ALL_KINDS), K.MIN_ALL: (_ALL_KINDS, _ALL_KINDS),
    K.MAX: (_ALL_KINDS, _ALL_KINDS), K.MIN: (_ALL_KINDS, _ALL_KINDS),
    K.AMINMAX: (_ALL_KINDS, _ALL_KINDS),
    K.ARGMAX: (_NUMERIC, (ElementKind.I64,)), K.ARGMIN: (_NUMERIC, (ElementKind.I64,)),
    K.ALL: (_ALL_KINDS, (ElementKind.BOOL, ElementKind.U8)),
    K.ANY: (_ALL_KINDS, (ElementKind.BOOL, ElementKind.U8)),
    K.COUNT_NONZERO: (_ALL_KINDS, (ElementKind.I64,)),
    K.VAR: (_FLOATS, _FLOATS), K.STD: (_FLOATS, _FLOATS),
    K.VAR_MEAN: (_FLOATS, _FLOATS), K.STD_MEAN: (_FLOATS, _FLOATS),
    K.LOGSUMEXP: (_ALL_KINDS, _FLOATS), K.LOGMEANEXP: (_ALL_KINDS, _FLOATS),
    K.NORM: (_FLOATS, _FLOATS), K.PTP: (_NUMERIC, _NUMERIC),
    K.XOR: (_INTEGRAL, _INTEGRAL), K.AND: (_INTEGRAL, _INTEGRAL), K.OR: (_INTEGRAL, _INTEGRAL),
    K.HASH: (_ALL_KINDS, (ElementKind.I64,)),
}
#: kinds whose output element must equal the input's
SAME_ELEMENT = frozenset({K.AMAX, K.AMIN, K.MAX_ALL, K.MIN_ALL, K.MAX, K.MIN, K.AMINMAX,
                          K.VAR, K.STD, K.VAR_MEAN, K.STD_MEAN, K.NANMEAN, K.PTP,
                          K.XOR, K.AND, K.OR})


def default_out_element(kind: ReductionKind, element: ElementKind) -> ElementKind:
    """The output element torch gives `kind` on `element` (no dtype= argument)."""
    if kind in (K.SUM, K.PROD, K.NANSUM):
        return element if element.is_float else ElementKind.I64
    if kind in (K.ARGMAX, K.ARGMIN, K.COUNT_NONZERO, K.HASH):
        return ElementKind.I64
    if kind in (K.ALL, K.ANY):
        return ElementKind.U8 if element is ElementKind.U8 else ElementKind.BOOL
    if kind in (K.LOGSUMEXP, K.LOGMEANEXP) and not element.is_float:
        return ElementKind.of(torch.get_default_dtype())
    return element


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool):
    """The output shape: reduced axes dropped, or kept as 1 with `keepdim`."""
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _validate(desc, who: str) -> None:
    if not isinstance(desc.kind, ReductionKind):
        raise V.InvalidProblem(f"{who}: kind must be a ReductionKind, got {desc.kind!r}")
    for name in ("element", "out_element"):
        if not isinstance(getattr(desc, name), ElementKind):
            raise V.InvalidProblem(f"{who}: {name} must be an ElementKind, "
                                   f"got {getattr(desc, name)!r}")
    shape = V.check_shape(who, "input_shape", desc.input_shape)
    V.check_rank(who, "input_shape", shape, lo=0)
    if not isinstance(desc.axes, tuple) or not desc.axes:
        raise V.InvalidProblem(f"{who}: axes must be a non-empty tuple of ints, got {desc.axes!r}")
    rank = max(len(shape), 1)
    norm = [V.check_axis(who, "axes", a, rank) for a in desc.axes]
    if len(set(norm)) != len(norm):
        raise V.InvalidProblem(f"{who}: axes must be distinct, got {desc.axes}")
    if norm != sorted(norm):
        raise V.InvalidProblem(f"{who}: axes must be sorted ascending, got {desc.axes}")
    if not isinstance(desc.keepdim, bool):
        raise V.InvalidProblem(f"{who}: keepdim must be a bool, got {desc.keepdim!r}")
    inputs, outputs = ELEMENTS[desc.kind]
    V.check_element(who, "element", desc.element, inputs)
    V.check_element(who, "out_element", desc.out_element, outputs)
    if desc.kind in SAME_ELEMENT and desc.out_element is not desc.element:
        raise V.InvalidProblem(f"{who}: {desc.kind.value} returns the input's element "
                               f"{desc.element.value}, got out_element {desc.out_element.value}")
    if desc.kind in INDEXED and len(norm) != 1:
        raise V.InvalidProblem(f"{who}: {desc.kind.value} reduces one axis, got {desc.axes}")
    V.check_finite(who, "correction", desc.correction)
    if desc.kind not in CORRECTED and desc.correction != 0:
        raise V.InvalidProblem(f"{who}: correction applies to var/std only, "
                               f"got {desc.correction} for {desc.kind.value}")
    _validate_order(desc, who)
    if not isinstance(desc.masked, bool):
        raise V.InvalidProblem(f"{who}: masked must be a bool, got {desc.masked!r}")
    if desc.masked and desc.kind not in MASKABLE:
        raise V.InvalidProblem(f"{who}: {desc.kind.value} takes no mask; expected one of "
                               f"{sorted(k.value for k in MASKABLE)}")
    if desc.kind is K.NORM and desc.out_element is not desc.element and (
            desc.out_element.itemsize <= desc.element.itemsize):
        raise V.InvalidProblem(f"{who}: the norm's out_element widens the input's "
                               f"{desc.element.value} (f32 or f64, wider), got "
                               f"{desc.out_element.value}")
    # the +-inf norms and negative orders have no identity (torch refuses them on empty dims)
    no_identity = desc.kind in NO_IDENTITY or (
        desc.kind is K.NORM and (desc.order < 0 or desc.order == math.inf))
    if no_identity and shape and any(shape[a] == 0 for a in norm):
        first = next(a for a in norm if shape[a] == 0)
        raise V.InvalidProblem(f"{who}: {desc.kind.value} has no identity: reduced axis "
                               f"{first} must be non-empty, got input_shape {shape}")


def _validate_order(desc, who: str) -> None:
    order = desc.order
    if isinstance(order, bool) or not isinstance(order, (int, float)):
        raise V.InvalidProblem(f"{who}: order must be a float, got {order!r}")
    if order != order:
        raise V.InvalidProblem(f"{who}: order must be finite or +-inf, got {order}")
    if desc.kind is not K.NORM and order != 0:
        raise V.InvalidProblem(f"{who}: order applies to the norm only, got {order} for "
                               f"{desc.kind.value}")


class ReducedAxes:
    """The shapes of a descriptor with `input_shape`, sorted `axes` (rank-0 inputs reduce axis
    0) and `keepdim`."""

    @property
    def output_shape(self) -> tuple[int, ...]:
        return reduced_shape(self.input_shape, self.axes if self.input_shape else (),
                             self.keepdim)

    @property
    def reduced_extent(self) -> int:
        return math.prod(self.input_shape[a] for a in self.axes) if self.input_shape else 1


@dataclass(frozen=True)
class ReductionDescriptor(ReducedAxes, Descriptor):
    """y = reduce_kind(x) over `axes` (sorted, non-negative; rank-0 inputs reduce axis 0),
    output `out_element`, reduced axes kept as 1 with `keepdim`. `correction` is var/std's
    (divide by N - correction), 0 for every other kind; `order` the norm's p (finite or
    +-inf), 0 for every other kind; `masked`: a bool mask operand (input-shaped, broadcast
    by strides) keeps the elements it marks (torch.masked)."""

    kind: ReductionKind
    input_shape: tuple[int, ...]
    axes: tuple[int, ...]
    keepdim: bool
    element: ElementKind
    out_element: ElementKind
    correction: float = 0.0
    order: float = 0.0
    masked: bool = False

    def validate(self, who: str) -> None:
        _validate(self, who)

    @property
    def aux_element(self) -> ElementKind | None:
        """The second output's element: int64 indices, else the first output's (ptp's
        gradient reads the line's max there)."""
        if self.kind in (K.MAX, K.MIN):
            return ElementKind.I64
        return self.out_element if self.kind in TWO_OUTPUTS or self.kind is K.PTP else None


@dataclass(frozen=True)
class ReductionBackwardDescriptor(ReductionDescriptor):
    """dx of a reduction: `out_element` is the gradient's (the forward's output) element,
    `element` the input's and dx's; the forward kind says which operands come along."""

    def validate(self, who: str) -> None:
        _validate(self, who)
        if self.kind not in DIFFERENTIABLE:
            raise V.InvalidProblem(f"{who}: {self.kind.value} has no gradient")
        V.check_element(who, "element", self.element, _FLOATS)


def _second(desc) -> bool:
    return desc.kind in TWO_OUTPUTS


@dataclass
class ReductionArgs(Args):
    x: torch.Tensor = operand("input_shape", "element")
    y: torch.Tensor = operand(lambda d: d.output_shape,
                              lambda d: ElementKind.I64 if d.kind in (K.ARGMAX, K.ARGMIN)
                              else d.out_element, output=True)
    #: indices (max / min), the mean (var_mean / std_mean) or the max (aminmax)
    y2: torch.Tensor | None = operand(lambda d: d.output_shape, lambda d: d.aux_element,
                                      output=True, when=_second)
    #: True where x counts (torch.masked); broadcast dims may have stride 0
    mask: torch.Tensor | None = operand("input_shape", ElementKind.BOOL,
                                        when=lambda d: d.masked)


def needs_x(kind: ReductionKind) -> bool:
    """The gradient reads the forward's input."""
    return kind not in (K.SUM, K.MEAN, K.MAX, K.MIN)


def needs_y(kind: ReductionKind) -> bool:
    """The gradient reads the forward's (first) output."""
    return kind in (K.AMAX, K.AMIN, K.MAX_ALL, K.MIN_ALL, K.STD, K.STD_MEAN, K.LOGSUMEXP,
                    K.AMINMAX, K.NORM, K.LOGMEANEXP, K.PTP)


def needs_y2(kind: ReductionKind) -> bool:
    """The gradient reads the forward's second output (indices, aminmax's max); ptp's reads
    the line's min (y) and max (y2), recomputed from x."""
    return kind in (K.MAX, K.MIN, K.AMINMAX, K.PTP)


@dataclass
class ReductionBackwardArgs(Args):
    """dy: the gradient of y; dy2 of y2 (var_mean / std_mean's mean, aminmax's max); y, y2
    the forward's outputs (y2: max / min's indices, aminmax's max) where the formula reads
    them."""

    dy: torch.Tensor = operand(lambda d: d.output_shape, "out_element")
    dx: torch.Tensor = operand("input_shape", "element", output=True)
    x: torch.Tensor | None = operand("input_shape", "element", when=lambda d: needs_x(d.kind))
    y: torch.Tensor | None = operand(lambda d: d.output_shape, "out_element",
                                     when=lambda d: needs_y(d.kind))
    dy2: torch.Tensor | None = operand(lambda d: d.output_shape, lambda d: d.out_element,
                                       when=lambda d: d.kind in (K.VAR_MEAN, K.STD_MEAN,
                                                                 K.AMINMAX))
    y2: torch.Tensor | None = operand(lambda d: d.output_shape, lambda d: d.aux_element,
                                      when=lambda d: needs_y2(d.kind))
    mask: torch.Tensor | None = operand("input_shape", ElementKind.BOOL,
                                        when=lambda d: d.masked)
