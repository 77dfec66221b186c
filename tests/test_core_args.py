"""core.args: an Args field's declared rule is enforced by the one generic check."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from baracuda.core.args import UNIT_LAST, Args, check_operands, operand, output_names
from baracuda.core.errors import InvalidProblem, Unsupported
from baracuda.core.vocab import ElementKind


@dataclass(frozen=True)
class _Desc:
    shape: tuple[int, ...]
    element: ElementKind
    has_bias: bool


@dataclass
class _Args(Args):
    x: torch.Tensor = operand("shape", "element", strides=UNIT_LAST)
    y: torch.Tensor = operand("shape", "element", output=True)
    idx: torch.Tensor = operand(lambda d: (d.shape[0],), (ElementKind.I32, ElementKind.I64))
    bias: torch.Tensor | None = operand(lambda d: d.shape[-1:], "element",
                                        when=lambda d: d.has_bias)
    scale: torch.Tensor | None = operand(optional=True)


DESC = _Desc((3, 5), ElementKind.F32, True)


def _args(**kw) -> _Args:
    base = dict(x=torch.randn(3, 5), y=torch.empty(3, 5), idx=torch.zeros(3, dtype=torch.int64),
                bias=torch.randn(5))
    base.update(kw)
    return _Args(**base)


def test_valid_args_pass_and_outputs_follow_the_declarations():
    check_operands("P", DESC, _args())
    assert output_names(_Args) == ("y",)
    assert list(_args().outputs()) == ["y"]


@pytest.mark.parametrize("change, error, words", [
    (dict(x=torch.randn(3, 4)), InvalidProblem, "x.shape (3, 4) != expected (3, 5)"),
    (dict(y=torch.empty(3, 5, dtype=torch.float64)), InvalidProblem, "y.dtype"),
    (dict(idx=torch.zeros(3, dtype=torch.int16)), InvalidProblem, "idx.dtype"),
    (dict(bias=None), InvalidProblem, "bias is required"),
    (dict(x=torch.randn(5, 3).t()), Unsupported, "unit stride"),
    (dict(x=None), InvalidProblem, "x must be a torch.Tensor, got None"),
    (dict(x=[1.0]), InvalidProblem, "x must be a torch.Tensor, got list"),
])
def test_each_rule_raises_its_typed_error(change, error, words):
    with pytest.raises(error, match="^P: ") as err:
        check_operands("P", DESC, _args(**change))
    assert words in str(err.value)


def test_when_false_forbids_the_field():
    with pytest.raises(InvalidProblem, match="bias must be None"):
        check_operands("P", _Desc((3, 5), ElementKind.F32, False), _args())
    check_operands("P", _Desc((3, 5), ElementKind.F32, False), _args(bias=None))


def test_unknown_stride_rule_is_refused_at_declaration():
    with pytest.raises(ValueError, match="strides must be"):
        operand("shape", strides="rows")


def test_first_out_of_range_reports_the_first_bad_value_and_skips_ignore():
    from baracuda.core.validate import first_out_of_range

    idx = torch.tensor([3, 0, -100, 7, 9, -1])
    assert first_out_of_range(idx, 8) == -100
    assert first_out_of_range(idx, 8, ignore=-100) == 9
    assert first_out_of_range(torch.tensor([0, 7]), 8) is None
    assert first_out_of_range(torch.tensor([], dtype=torch.int64), 0) is None
    assert first_out_of_range(torch.tensor([-100, -100]), 2, ignore=-100) is None
