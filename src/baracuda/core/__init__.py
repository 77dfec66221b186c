"""baracuda.core: vocabulary, errors, Plan contract, registry, validators, layout, specs."""

from . import runtime  # noqa: F401  (first: picks the Triton interpreter before triton loads)
from .errors import (
    ArgumentTypeError,
    BackendError,
    BaracudaError,
    BufferTooSmall,
    InvalidProblem,
    MisalignedOperand,
    Unsupported,
    WorkspaceTooSmall,
)
from .layout import AxisView, axis_view, collapse_dims
from .plan import Args, Candidate, Descriptor, Plan
from .registry import (
    discover,
    families,
    plan_named,
    plans,
    register_bench,
    register_candidate,
    register_plan,
    register_spec,
    spec_for,
    specs,
)
from .vocab import (
    FLOAT_KINDS,
    INDEX_KINDS,
    ArchSku,
    BackendKind,
    ElementKind,
    KernelSku,
    MathPrecision,
    OpCategory,
    PlanPreference,
    PrecisionGuarantee,
)

__all__ = [
    "ArgumentTypeError", "Args", "ArchSku", "AxisView", "BackendError", "BackendKind",
    "BaracudaError", "BufferTooSmall", "Candidate", "Descriptor", "ElementKind", "FLOAT_KINDS",
    "INDEX_KINDS", "InvalidProblem", "KernelSku", "MathPrecision", "MisalignedOperand",
    "OpCategory", "Plan", "PlanPreference", "PrecisionGuarantee", "Unsupported",
    "WorkspaceTooSmall", "axis_view", "collapse_dims", "discover", "families", "plan_named",
    "plans", "register_bench", "register_candidate", "register_plan", "register_spec", "spec_for",
    "specs",
]
