"""GEMM family descriptors and args.

One descriptor shapes every dense problem: D = epilogue(alpha * A @ B + beta * C) over an
optional batch, with the forward epilogues (bias, activation, saved pre-activation) or the
backward ones (activation derivative from a saved pre-activation, bias gradient).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.errors import InvalidProblem
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

GEMM_ELEMENTS = tuple(sorted(FLOAT_KINDS, key=lambda k: k.value))


class GemmActivation(enum.Enum):
    """Activation applied in the epilogue (forward) or differentiated (backward)."""

    NONE = "none"
    RELU = "relu"
    GELU = "gelu"  # exact, erf form (torch approximate="none")
    GELU_TANH = "gelu_tanh"  # torch approximate="tanh"
    SILU = "silu"

    @property
    def code(self) -> int:
        return _ACT_CODE[self]


_ACT_CODE = {GemmActivation.NONE: 0, GemmActivation.RELU: 1, GemmActivation.GELU: 2,
             GemmActivation.GELU_TANH: 3, GemmActivation.SILU: 4}


def _check_problem(who: str, desc, extents: tuple[str, ...]) -> None:
    """The named extents are ints >= 0 and the element is one the GEMMs take."""
    for name in extents:
        value = getattr(desc, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidProblem(f"{who}: {name} must be an int >= 0, got {value!r}")
    if not isinstance(desc.element, ElementKind):
        raise InvalidProblem(f"{who}: element must be an ElementKind, got {desc.element!r}")
    V.check_element(who, "element", desc.element, GEMM_ELEMENTS)


def _check_epilogue(who: str, desc, acts: tuple[str, ...], flags: tuple[str, ...]) -> None:
    """Activation fields are GemmActivations, flags are bools, and a saved pre-activation has
    an activation to be the input of."""
    for name in acts:
        if not isinstance(getattr(desc, name), GemmActivation):
            raise InvalidProblem(f"{who}: {name} must be a GemmActivation, "
                                 f"got {getattr(desc, name)!r}")
    for flag in flags:
        if not isinstance(getattr(desc, flag), bool):
            raise InvalidProblem(f"{who}: {flag} must be a bool, got {getattr(desc, flag)!r}")
    if desc.save_preact and desc.activation is GemmActivation.NONE:
        raise InvalidProblem(f"{who}: save_preact needs an activation; got activation none")


@dataclass(frozen=True)
class DenseGemmDescriptor(Descriptor):
    """D[*batch, m, n] = epilogue(alpha * A[*batch, m, k] @ B[*batch, k, n] + beta * C).

    Forward epilogue (``dactivation`` NONE, ``bias_grad`` False):
        pre = alpha*A@B + beta*C + bias[n];  D = activation(pre);  preact_out = pre (if saved).
    Backward epilogue (``dactivation`` set and/or ``bias_grad``):
        G = (alpha*A@B + beta*C) * activation'(preact);  D = G;  dbias[n] = sum of D over
        batch and rows.
    C is read only when beta != 0 (BLAS semantics: beta == 0 ignores C, NaNs included).
    """

    m: int
    n: int
    k: int
    element: ElementKind
    batch: tuple[int, ...] = ()
    alpha: float = 1.0
    beta: float = 0.0
    activation: GemmActivation = GemmActivation.NONE
    bias: bool = False
    save_preact: bool = False
    dactivation: GemmActivation = GemmActivation.NONE
    bias_grad: bool = False

    def validate(self, who: str) -> None:
        _check_problem(who, self, ("m", "n", "k"))
        batch = V.check_shape(who, "batch", self.batch)
        V.check_rank(who, "batch", batch, 0, V.MAX_RANK - 2)
        V.check_finite(who, "alpha", self.alpha)
        V.check_finite(who, "beta", self.beta)
        _check_epilogue(who, self, ("activation", "dactivation"),
                        ("bias", "save_preact", "bias_grad"))
        if self.is_backward_epilogue and (self.activation is not GemmActivation.NONE or self.bias
                                          or self.save_preact):
            raise InvalidProblem(
                f"{who}: forward epilogue (activation/bias/save_preact) and backward epilogue "
                f"(dactivation/bias_grad) are exclusive; got {self}")

    @property
    def is_backward_epilogue(self) -> bool:
        return self.dactivation is not GemmActivation.NONE or self.bias_grad

    @property
    def has_c(self) -> bool:
        return self.beta != 0.0

    @property
    def nbatch(self) -> int:
        return math.prod(self.batch)

    @property
    def mn_shape(self) -> tuple[int, ...]:
        return (*self.batch, self.m, self.n)

    @property
    def epilogue_name(self) -> str:
        parts = []
        if self.bias:
            parts.append("bias")
        if self.activation is not GemmActivation.NONE:
            parts.append(self.activation.value)
        if self.save_preact:
            parts.append("aux")
        if self.dactivation is not GemmActivation.NONE:
            parts.append("d" + self.dactivation.value)
        if self.bias_grad:
            parts.append("bgrad")
        return "+".join(parts) or "none"


def _n(d) -> tuple[int]:
    return (d.n,)


@dataclass
class DenseGemmArgs(Args):
    """a [*batch, m, k], b [*batch, k, n] (any strides, batch strides may be 0), c like d (read
    when beta != 0), bias [n], preact [*batch, m, n] (backward epilogue input), d [*batch, m, n],
    preact_out [*batch, m, n] (forward, when save_preact), dbias [n] (when bias_grad)."""

    a: torch.Tensor = operand(lambda d: (*d.batch, d.m, d.k), "element")
    b: torch.Tensor = operand(lambda d: (*d.batch, d.k, d.n), "element")
    d: torch.Tensor = operand("mn_shape", "element", output=True)
    #: BLAS: beta == 0 ignores C (unchecked then); DenseGemmPlan requires it otherwise.
    c: torch.Tensor | None = operand(lambda d: d.mn_shape if d.has_c else None,
                                     lambda d: d.element if d.has_c else None, optional=True)
    bias: torch.Tensor | None = operand(_n, "element", when=lambda d: d.bias)
    preact: torch.Tensor | None = operand(
        "mn_shape", "element", when=lambda d: d.dactivation is not GemmActivation.NONE)
    preact_out: torch.Tensor | None = operand("mn_shape", "element", output=True,
                                              when=lambda d: d.save_preact)
    dbias: torch.Tensor | None = operand(_n, "element", output=True, when=lambda d: d.bias_grad)
    #: BLAS layouts (one unit stride in the last two dims); the rest any non-negative strides
    #: (c and preact may broadcast with stride 0).
    MATRICES: ClassVar[tuple[str, ...]] = ("a", "b", "d")
    STRIDED: ClassVar[tuple[str, ...]] = ("c", "bias", "preact", "preact_out", "dbias")


class BatchedGemmKind(enum.Enum):
    BMM = "bmm"  # out[b] = A[b] @ B[b]
    BADDBMM = "baddbmm"  # out[b] = beta * input[b] + alpha * A[b] @ B[b]
    ADDMM = "addmm"  # out = beta * input + alpha * A @ B   (no batch)
    MM = "mm"


@dataclass(frozen=True)
class BatchedGemmDescriptor(Descriptor):
    """torch's bmm / baddbmm / addmm / mm: out = beta * input + alpha * A @ B, input broadcast
    to out's shape (torch semantics)."""

    kind: BatchedGemmKind
    batch: int
    m: int
    n: int
    k: int
    element: ElementKind
    alpha: float = 1.0
    beta: float = 1.0

    def validate(self, who: str) -> None:
        if not isinstance(self.kind, BatchedGemmKind):
            raise InvalidProblem(f"{who}: kind must be a BatchedGemmKind, got {self.kind!r}")
        _check_problem(who, self, ("batch", "m", "n", "k"))
        V.check_finite(who, "alpha", self.alpha)
        V.check_finite(who, "beta", self.beta)
        if self.kind in (BatchedGemmKind.ADDMM, BatchedGemmKind.MM) and self.batch != 1:
            raise InvalidProblem(f"{who}: {self.kind.value} has no batch; expected batch 1, "
                                 f"got {self.batch}")

    @property
    def batched(self) -> bool:
        return self.kind in (BatchedGemmKind.BMM, BatchedGemmKind.BADDBMM)

    @property
    def has_input(self) -> bool:
        return self.kind in (BatchedGemmKind.BADDBMM, BatchedGemmKind.ADDMM)

    @property
    def lead(self) -> tuple[int, ...]:
        return (self.batch,) if self.batched else ()

    def out_shape(self) -> tuple[int, ...]:
        return (*self.lead, self.m, self.n)


@dataclass
class BatchedGemmArgs(Args):
    a: torch.Tensor = operand(lambda d: (*d.lead, d.m, d.k), "element")
    b: torch.Tensor = operand(lambda d: (*d.lead, d.k, d.n), "element")
    out: torch.Tensor = operand(lambda d: d.out_shape(), "element", output=True)
    #: broadcastable to out's shape (BatchedGemmPlan's rule)
    input: torch.Tensor | None = operand(None, "element", when=lambda d: d.has_input)
    MATRICES: ClassVar[tuple[str, ...]] = ("a", "b", "out")
    STRIDED: ClassVar[tuple[str, ...]] = ("input",)


@dataclass(frozen=True)
class LinearDescriptor(Descriptor):
    """y[tokens, out] = activation(x[tokens, in] @ weight[out, in]^T + bias[out]); with
    ``save_preact`` the pre-activation is written too (for the backward)."""

    tokens: int
    in_features: int
    out_features: int
    element: ElementKind
    bias: bool = True
    activation: GemmActivation = GemmActivation.NONE
    save_preact: bool = False

    def validate(self, who: str) -> None:
        _check_problem(who, self, ("tokens", "in_features", "out_features"))
        _check_epilogue(who, self, ("activation",), ("bias", "save_preact"))

    @property
    def y_shape(self) -> tuple[int, int]:
        return (self.tokens, self.out_features)

    @property
    def x_shape(self) -> tuple[int, int]:
        return (self.tokens, self.in_features)

    @property
    def weight_shape(self) -> tuple[int, int]:
        return (self.out_features, self.in_features)


def _out_features(d) -> tuple[int]:
    return (d.out_features,)


@dataclass
class LinearArgs(Args):
    x: torch.Tensor = operand("x_shape", "element")
    weight: torch.Tensor = operand("weight_shape", "element")
    y: torch.Tensor = operand("y_shape", "element", output=True)
    bias: torch.Tensor | None = operand(_out_features, "element", when=lambda d: d.bias)
    preact: torch.Tensor | None = operand("y_shape", "element", output=True,
                                          when=lambda d: d.save_preact)
    MATRICES: ClassVar[tuple[str, ...]] = ("x", "weight", "y", "preact")
    STRIDED: ClassVar[tuple[str, ...]] = ("bias",)


@dataclass(frozen=True)
class LinearBackwardDescriptor(LinearDescriptor):
    """From dy (and the saved pre-activation when there is an activation):
    dh = dy * activation'(preact); dx = dh @ weight; dweight = dh^T @ x; dbias = sum_rows dh.
    Each gradient is computed only when its output tensor is given."""

    save_preact: bool = False


@dataclass
class LinearBackwardArgs(Args):
    """Each gradient output is optional (at least one; dbias only with bias=True)."""

    dy: torch.Tensor = operand("y_shape", "element")
    x: torch.Tensor = operand("x_shape", "element")
    weight: torch.Tensor = operand("weight_shape", "element")
    preact: torch.Tensor | None = operand(
        "y_shape", "element", when=lambda d: d.activation is not GemmActivation.NONE)
    dx: torch.Tensor | None = operand("x_shape", "element", output=True, optional=True)
    dweight: torch.Tensor | None = operand("weight_shape", "element", output=True,
                                           optional=True)
    dbias: torch.Tensor | None = operand(_out_features, "element", output=True, optional=True)
    MATRICES: ClassVar[tuple[str, ...]] = ("dy", "x", "weight", "dx", "dweight")
    STRIDED: ClassVar[tuple[str, ...]] = ("preact", "dx", "dweight", "dbias")


@dataclass(frozen=True)
class GroupedGemmDescriptor(Descriptor):
    """Mixture-of-experts grouped GEMM: rows of A are split into groups of ``group_sizes``
    consecutive rows; group g multiplies by B[g]:
    D[rows of g] = A[rows of g] @ B[g]  (A [sum sizes, k], B [groups, k, n], D [sum sizes, n])."""

    group_sizes: tuple[int, ...]
    n: int
    k: int
    element: ElementKind

    def validate(self, who: str) -> None:
        sizes = V.check_shape(who, "group_sizes", self.group_sizes)
        if not sizes:
            raise InvalidProblem(f"{who}: group_sizes must name at least one group, got ()")
        _check_problem(who, self, ("n", "k"))

    @property
    def total_rows(self) -> int:
        return sum(self.group_sizes)


@dataclass
class GroupedGemmArgs(Args):
    a: torch.Tensor = operand(lambda d: (d.total_rows, d.k), "element")
    b: torch.Tensor = operand(lambda d: (len(d.group_sizes), d.k, d.n), "element")
    d: torch.Tensor = operand(lambda d: (d.total_rows, d.n), "element", output=True)
    MATRICES: ClassVar[tuple[str, ...]] = ("a", "b", "d")
    STRIDED: ClassVar[tuple[str, ...]] = ()
