"""Plan API inputs: a string is accepted wherever an enum is (by value or name, any case);
every other wrong type is a typed error that names the field and the options."""

from __future__ import annotations

import pytest

import baracuda as bc
from baracuda.core.errors import BaracudaError, InvalidProblem


def test_strings_name_enum_members_case_insensitively():
    a = bc.SoftmaxDescriptor("SOFTMAX", (4, 8), 1, "BF16")
    b = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, (4, 8), 1, bc.ElementKind.BF16)
    assert a == b and hash(a) == hash(b)
    assert bc.SoftmaxDescriptor("Log_Softmax", (4, 8), 1, "f32").kind is bc.SoftmaxKind.LOG_SOFTMAX
    assert bc.PlanPreference(prefer_backend="Triton").prefer_backend is bc.BackendKind.TRITON


@pytest.mark.parametrize("build, words", [
    (lambda: bc.SoftmaxDescriptor("softmaxx", (4, 8), 1, "f32"), "kind must be a SoftmaxKind"),
    (lambda: bc.SoftmaxDescriptor("softmax", (4, 8), 1, "f8"), "element must be a ElementKind"),
    (lambda: bc.PlanPreference(prefer_backend="cuda"), "prefer_backend must be a BackendKind"),
    (lambda: bc.PlanPreference(require_deterministic="yes"), "require_deterministic must be"),
    (lambda: bc.PlanPreference(allow_tf32=1), "allow_tf32 must be a bool"),
    (lambda: bc.PlanPreference(max_workspace_bytes=-1), "max_workspace_bytes must be"),
    (lambda: bc.SoftmaxPlan.select(bc.SoftmaxDescriptor("softmax", (4, 8), 1.0, "f32")),
     "softmax_axis must be an int"),
])
def test_wrong_values_and_types_are_typed_errors(build, words):
    with pytest.raises(InvalidProblem) as err:
        build()
    assert isinstance(err.value, BaracudaError) and words in str(err.value)


def test_a_string_backend_preference_selects_like_the_enum():
    desc = bc.SoftmaxDescriptor("softmax", (4, 8), 1, "f32")
    plan = bc.SoftmaxPlan.select(desc, bc.PlanPreference(prefer_backend="TRITON"))
    assert plan.sku.backend is bc.BackendKind.TRITON
