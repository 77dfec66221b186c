"""`baracuda.errors`: the typed error hierarchy (see core/errors.py)."""

from .core.errors import (  # noqa: F401
    ArgumentTypeError,
    BackendError,
    BaracudaError,
    BufferTooSmall,
    InvalidProblem,
    MisalignedOperand,
    Unsupported,
    WorkspaceTooSmall,
)
