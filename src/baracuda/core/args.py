"""Args bundles and their declared operands: each tensor field says once what it must be.

    @dataclass
    class SoftmaxArgs(Args):
        x: torch.Tensor = operand("input_shape", "element")
        y: torch.Tensor = operand("input_shape", "element", output=True)

`Plan.check_args` enforces every declaration with one generic check (`check_operands`); a plan
overrides it only for a rule that is truly its own, and then calls `super().check_args(args)`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import torch

from . import validate as V
from .errors import InvalidProblem
from .vocab import ElementKind

#: A shape rule: a descriptor attribute name, or a function of the descriptor.
ShapeRule = str | Callable[[Any], "tuple[int, ...] | None"] | None
#: An element rule: a descriptor attribute name, fixed kinds, or a function of the descriptor.
ElementRule = str | ElementKind | Iterable[ElementKind] | Callable[[Any], Any] | None


@dataclasses.dataclass(frozen=True)
class Operand:
    """What one tensor field of an Args bundle must be (see `operand`)."""

    shape: ShapeRule = None
    element: ElementRule = None
    output: bool = False
    optional: bool = False
    when: Callable[[Any], bool] | None = None
    strides: str | None = None

    def expected_shape(self, desc) -> tuple[int, ...] | None:
        rule = self.shape
        if rule is None:
            return None
        return getattr(desc, rule) if isinstance(rule, str) else rule(desc)

    def expected_element(self, desc):
        rule = self.element
        if rule is None or isinstance(rule, ElementKind):
            return rule
        if isinstance(rule, str):
            return getattr(desc, rule)
        if callable(rule):
            return rule(desc)
        return tuple(rule)


#: `operand(strides=...)`: any non-negative strides / those and a unit-stride last dim.
NON_NEGATIVE = "non_negative"
UNIT_LAST = "unit_last"


def operand(shape: ShapeRule = None, element: ElementRule = None, *, output: bool = False,
            optional: bool = False, when: Callable[[Any], bool] | None = None,
            strides: str | None = None, default: Any = None) -> Any:
    """Declare a tensor field and its rule.

    - `shape`: a descriptor attribute holding the expected shape (``"input_shape"``), or a
      function of the descriptor returning it (None there: not checked); None: not checked.
    - `element`: a descriptor attribute holding the expected ElementKind (``"element"``), an
      ElementKind or a set of them, or a function of the descriptor returning either.
    - `output`: the plan writes it (it joins `Args.OUTPUTS`).
    - `optional`: None is accepted (the field defaults to None).
    - `when`: the field is present exactly when `when(desc)` is true: required then, and must
      be None otherwise (the field defaults to None).
    - `strides`: the layouts the kernels take: `NON_NEGATIVE` (any non-negative strides) or
      `UNIT_LAST` (those and a unit stride on the last dim); None: not checked here.
    - `default`: the default of an optional or conditional field (None); `dataclasses.MISSING`
      keeps such a field positional and required to be passed.
    """
    if strides not in (None, NON_NEGATIVE, UNIT_LAST):
        raise ValueError(f"operand: strides must be None, {NON_NEGATIVE!r} or {UNIT_LAST!r}, "
                         f"got {strides!r}")
    rule = Operand(shape, element, output, optional, when, strides)
    if not (optional or when is not None):
        default = dataclasses.MISSING
    return dataclasses.field(default=default, metadata={"operand": rule})


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def declared_operands(cls: type) -> tuple[tuple[str, Operand], ...]:
    """(field name, rule) for every field of `cls` declared with `operand`."""
    return tuple((f.name, f.metadata["operand"]) for f in dataclasses.fields(cls)
                 if "operand" in f.metadata)


@functools.cache
def output_names(cls: type) -> tuple[str, ...]:
    """The outputs of an Args class: its explicit `OUTPUTS`, else its `operand(output=True)`
    fields, in declaration order."""
    explicit = cls.__dict__.get("OUTPUTS")
    if explicit:
        return tuple(explicit)
    declared = tuple(n for n, rule in declared_operands(cls) if rule.output)
    if declared:
        return declared
    for base in cls.__mro__[1:]:
        if base.__dict__.get("OUTPUTS"):
            return tuple(base.__dict__["OUTPUTS"])
    return ()


@dataclasses.dataclass
class Args:
    """Base of every args bundle: torch tensors (outputs written in place) and None."""

    OUTPUTS: ClassVar[tuple[str, ...]] = ()

    def tensors(self) -> dict[str, torch.Tensor]:
        out = {}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if isinstance(value, torch.Tensor):
                out[name] = value
        return out

    def outputs(self) -> dict[str, torch.Tensor]:
        return {n: v for n in output_names(type(self)) if (v := getattr(self, n)) is not None}


def check_operands(who: str, desc, args: Args) -> None:
    """Enforce every `operand` declaration of `args` against `desc`: presence, shape, dtype."""
    for name, rule in declared_operands(type(args)):
        value = getattr(args, name)
        if rule.when is not None:
            wanted = bool(rule.when(desc))
            if value is None and wanted:
                raise InvalidProblem(
                    f"{who}: {name} is required by the descriptor, got None")
            if value is not None and not wanted:
                raise InvalidProblem(
                    f"{who}: {name} must be None for this descriptor, "
                    f"got a {type(value).__name__}")
        if value is None:
            if rule.optional or rule.when is not None:
                continue
            raise InvalidProblem(f"{who}: {name} must be a torch.Tensor, got None")
        V.check_tensor(who, name, value, rule.expected_shape(desc), rule.expected_element(desc))
        if rule.strides is not None:
            V.check_nonnegative_strides(who, name, value)
            if rule.strides == UNIT_LAST and value.dim():
                V.check_unit_stride(who, name, value, value.dim() - 1)
