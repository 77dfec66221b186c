"""Random family descriptors and args: one fill of a tensor with draws of a distribution,
from the counter-based stream of backends/philox.py (the stream's (seed, offset) arrive as an
int64 [2] device tensor, `rng_state`)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, ElementKind

E = ElementKind
INT_KINDS = frozenset({E.I8, E.I16, E.I32, E.I64, E.U8})
ALL_ELEMENTS = tuple(sorted(FLOAT_KINDS | INT_KINDS | {E.BOOL}, key=lambda k: k.value))
FLOAT_ELEMENTS = tuple(sorted(FLOAT_KINDS, key=lambda k: k.value))


class Dist(enum.Enum):
    """What element i holds, from its uniform u in [0, 1) (or normal z, or raw word w)."""

    #: a + (b - a) u, in [a, b) (a value that rounds up to b becomes a, as torch)
    UNIFORM = "uniform"
    #: a + b z (a: mean, b: std)
    NORMAL = "normal"
    #: exp(a + b z)
    LOG_NORMAL = "log_normal"
    #: -log(1 - u) / a (a: the rate)
    EXPONENTIAL = "exponential"
    #: a + b tan(pi (u - 1/2)) (a: median, b: scale)
    CAUCHY = "cauchy"
    #: ceil(log(1 - u) / log1p(-a)), at least 1 (a: the success probability)
    GEOMETRIC = "geometric"
    #: u < a (a: the probability of a one)
    BERNOULLI = "bernoulli"
    #: a + w mod b (a: low, b: high - low), w a 32-bit word, or 64 bits when b > 2^32
    RANDINT = "randint"
    #: the element's bits straight from the stream (two words for 64-bit elements)
    BITS = "bits"


#: distributions whose parameter `a` / `b` may be a tensor broadcast to y's shape
TENSOR_A = frozenset({Dist.NORMAL, Dist.BERNOULLI})
TENSOR_B = frozenset({Dist.NORMAL})
CONTINUOUS = frozenset({Dist.UNIFORM, Dist.NORMAL, Dist.LOG_NORMAL, Dist.EXPONENTIAL,
                        Dist.CAUCHY})


def _number(who: str, name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise V.InvalidProblem(f"{who}: {name} must be an int or float, got {value!r}")


@dataclass(frozen=True)
class RandomDescriptor(Descriptor):
    """y (shape, element) filled with draws of `dist` with parameters a, b (see `Dist`).
    `a_element` / `b_element` set: that parameter is a tensor of that dtype broadcast to y's
    shape (NORMAL's mean / std, BERNOULLI's p), and a / b are ignored."""

    shape: tuple[int, ...]
    element: ElementKind
    dist: Dist
    a: int | float = 0.0
    b: int | float = 1.0
    a_element: ElementKind | None = None
    b_element: ElementKind | None = None

    def validate(self, who: str) -> None:
        V.check_shape(who, "shape", self.shape)
        V.check_rank(who, "shape", self.shape, 0)
        if not isinstance(self.dist, Dist):
            raise V.InvalidProblem(f"{who}: dist must be a Dist, got {self.dist!r}")
        if self.dist in CONTINUOUS:
            V.check_element(who, "element", self.element, FLOAT_ELEMENTS)
        elif self.dist is Dist.BITS:
            V.check_element(who, "element", self.element, sorted(INT_KINDS, key=str))
        else:
            V.check_element(who, "element", self.element, ALL_ELEMENTS)
        for name, allowed in (("a_element", TENSOR_A), ("b_element", TENSOR_B)):
            kind = getattr(self, name)
            if kind is None:
                continue
            if self.dist not in allowed:
                raise V.InvalidProblem(f"{who}: {name} (a tensor parameter) is for "
                                       f"{sorted(d.value for d in allowed)}, got {kind!r} "
                                       f"with {self.dist.value}")
            V.check_element(who, name, kind, FLOAT_ELEMENTS)
        _number(who, "a", self.a)
        _number(who, "b", self.b)
        self._check_params(who)

    def _check_params(self, who: str) -> None:
        a, b, d = self.a, self.b, self.dist
        if d is Dist.RANDINT:
            if not (isinstance(a, int) and isinstance(b, int)):
                raise V.InvalidProblem(f"{who}: randint's low and span must be ints, got "
                                       f"{a!r}, {b!r}")
            if not 1 <= b <= 1 << 64 or not -(1 << 63) <= a < 1 << 63:
                raise V.InvalidProblem(f"{who}: randint's span must be in [1, 2^64] and low an "
                                       f"int64, got low {a}, span {b}")
            return
        if self.a_element is None:
            V.check_finite(who, "a", a)
        if self.b_element is None:
            V.check_finite(who, "b", b)
        if d is Dist.UNIFORM and a > b:
            raise V.InvalidProblem(f"{who}: uniform expects a [from, to) range, got from={a} "
                                   f"> to={b}")
        if d in (Dist.NORMAL, Dist.LOG_NORMAL) and self.b_element is None and b < 0:
            raise V.InvalidProblem(f"{who}: the std must be >= 0, got {b}")
        if d is Dist.EXPONENTIAL and not a > 0:
            raise V.InvalidProblem(f"{who}: exponential's rate must be > 0, got {a}")
        if d is Dist.CAUCHY and not b > 0:
            raise V.InvalidProblem(f"{who}: cauchy's scale must be > 0, got {b}")
        if d is Dist.GEOMETRIC and not 0 < a < 1:
            raise V.InvalidProblem(f"{who}: geometric's p must be in (0, 1), got {a}")
        if d is Dist.BERNOULLI and self.a_element is None and not 0 <= a <= 1:
            raise V.InvalidProblem(f"{who}: bernoulli's p must be in [0, 1], got {a}")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def wide(self) -> bool:
        """Two words per element: f64 floats, 64-bit bits, randint over more than 2^32."""
        if self.dist is Dist.BITS:
            return self.element.itemsize == 8
        if self.dist is Dist.RANDINT:
            return self.b > 1 << 32
        return self.element is E.F64


def _rng_shape(desc) -> tuple[int, ...]:
    return (2,)


@dataclass
class RandomArgs(Args):
    y: torch.Tensor = operand("shape", "element", output=True, strides="non_negative")
    rng_state: torch.Tensor = operand(_rng_shape, E.I64)
    a: torch.Tensor | None = operand("shape", "a_element", strides="non_negative",
                                     when=lambda d: d.a_element is not None)
    b: torch.Tensor | None = operand("shape", "b_element", strides="non_negative",
                                     when=lambda d: d.b_element is not None)


#: categories one program holds (a row's probabilities, its cumulative sum or its sort)
MAX_CATEGORIES = 8192


@dataclass(frozen=True)
class MultinomialDescriptor(Descriptor):
    """`samples` category indices per row of a [rows, categories] probability matrix (any
    non-negative weights, normalized per row), with or without replacement."""

    rows: int
    categories: int
    samples: int
    replacement: bool
    element: ElementKind

    def validate(self, who: str) -> None:
        V.check_shape(who, "(rows, categories, samples)",
                      (self.rows, self.categories, self.samples))
        V.check_bool(who, "replacement", self.replacement)
        V.check_element(who, "element", self.element, FLOAT_ELEMENTS)
        if self.categories > MAX_CATEGORIES:
            raise V.Unsupported(f"{who}: at most {MAX_CATEGORIES} categories (one program "
                                f"holds a row), got {self.categories}")
        if self.rows and self.samples and self.categories == 0:
            raise V.InvalidProblem(f"{who}: samples from 0 categories")
        if not self.replacement and self.samples > self.categories:
            raise V.InvalidProblem(f"{who}: cannot sample {self.samples} > "
                                   f"{self.categories} categories without replacement")


@dataclass
class MultinomialArgs(Args):
    probs: torch.Tensor = operand(lambda d: (d.rows, d.categories), "element",
                                  strides="non_negative")
    out: torch.Tensor = operand(lambda d: (d.rows, d.samples), E.I64, output=True,
                                strides="non_negative")
    rng_state: torch.Tensor = operand(_rng_shape, E.I64)
