"""Shared vocabulary: element kinds, categories, backends, SKUs, guarantees, preferences.

Everything here is a frozen value type, so plans, SKUs and descriptors can be cache keys.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch


def coerce_enum(kind: type[enum.Enum], value, who: str, name: str):
    """`value` as a member of `kind`: a member, or a string naming one by value or by name,
    case-insensitively (``"bf16"``, ``"BF16"``, ``"softmax"``). Anything else is a typed
    error (InvalidProblem) that lists the members."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        key = value.lower()
        for member in kind:
            if key in (str(member.value).lower(), member.name.lower()):
                return member
    from .errors import InvalidProblem

    options = ", ".join(repr(m.value) for m in kind)
    raise InvalidProblem(f"{who}: {name} must be a {kind.__name__} or one of {options}, "
                         f"got {value!r}")


class ElementKind(enum.Enum):
    """Element type of a tensor operand; maps one-to-one onto a torch dtype."""

    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"
    F64 = "f64"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    BOOL = "bool"

    @property
    def torch_dtype(self) -> torch.dtype:
        return _TO_TORCH[self]

    @property
    def itemsize(self) -> int:
        return _TO_TORCH[self].itemsize

    @property
    def is_float(self) -> bool:
        return self in FLOAT_KINDS

    @property
    def compute_kind(self) -> ElementKind:
        """The kind arithmetic runs in: halves compute in f32, f64 in f64."""
        if self in (ElementKind.F16, ElementKind.BF16):
            return ElementKind.F32
        return self

    @classmethod
    def of(cls, value: ElementKind | torch.dtype | str) -> ElementKind:
        """Accept an ElementKind, a torch dtype, or a short name ("bf16")."""
        if isinstance(value, ElementKind):
            return value
        if isinstance(value, torch.dtype):
            kind = _FROM_TORCH.get(value)
            if kind is None:
                from .errors import Unsupported

                raise Unsupported(
                    f"ElementKind: torch dtype {value} has no element kind; "
                    f"expected one of {sorted(str(d) for d in _FROM_TORCH)}"
                )
            return kind
        if isinstance(value, str):
            try:
                return cls(value.lower())
            except ValueError:
                pass
        from .errors import InvalidProblem

        raise InvalidProblem(
            f"ElementKind: expected an ElementKind, torch.dtype or name, got {value!r}"
        )


_TO_TORCH = {
    ElementKind.F32: torch.float32,
    ElementKind.F16: torch.float16,
    ElementKind.BF16: torch.bfloat16,
    ElementKind.F64: torch.float64,
    ElementKind.I8: torch.int8,
    ElementKind.I16: torch.int16,
    ElementKind.I32: torch.int32,
    ElementKind.I64: torch.int64,
    ElementKind.U8: torch.uint8,
    ElementKind.BOOL: torch.bool,
}
_FROM_TORCH = {v: k for k, v in _TO_TORCH.items()}

FLOAT_KINDS = frozenset({ElementKind.F32, ElementKind.F16, ElementKind.BF16, ElementKind.F64})
INDEX_KINDS = frozenset({ElementKind.I32, ElementKind.I64})


class OpCategory(enum.Enum):
    GEMM = "gemm"
    UNARY_ELEMENTWISE = "unary_elementwise"
    BINARY_ELEMENTWISE = "binary_elementwise"
    TERNARY_ELEMENTWISE = "ternary_elementwise"
    GATED_ACTIVATION = "gated_activation"
    REDUCTION = "reduction"
    SCAN = "scan"
    NORMALIZATION = "normalization"
    SOFTMAX = "softmax"
    CONVOLUTION = "convolution"
    POOLING = "pooling"
    ATTENTION = "attention"
    INDEXING = "indexing"
    EMBEDDING = "embedding"
    SHAPE_LAYOUT = "shape_layout"
    SORTING = "sorting"
    QUANTIZATION = "quantization"
    RANDOM = "random"
    LOSS = "loss"
    SEGMENT_OPS = "segment_ops"
    IMAGE = "image"
    FFT = "fft"
    LINALG = "linalg"
    MOE = "moe"


class BackendKind(enum.Enum):
    TRITON = "triton"
    CUBLASLT = "cublaslt"
    CUDNN = "cudnn"
    CUFFT = "cufft"
    CURAND = "curand"
    CUSOLVER = "cusolver"
    CUSPARSE = "cusparse"
    TORCH = "torch"  # torch's own kernels, used only where a library call is the fastest route


class ArchSku(enum.Enum):
    """The architecture a kernel was selected for."""

    INTERPRETER = "interpreter"  # Triton interpreter on the CPU
    SM80 = "sm80"
    SM89 = "sm89"
    SM90 = "sm90"
    SM90A = "sm90a"
    SM100 = "sm100"

    @classmethod
    def current(cls, device: torch.device | None = None) -> ArchSku:
        if not torch.cuda.is_available():
            return cls.INTERPRETER
        major, minor = torch.cuda.get_device_capability(device)
        if major >= 10:
            return cls.SM100
        if major == 9:
            return cls.SM90A
        if (major, minor) >= (8, 9):
            return cls.SM89
        return cls.SM80


class MathPrecision(enum.Enum):
    F64 = "f64"
    F32 = "f32"
    TF32 = "tf32"
    BF16 = "bf16"
    F16 = "f16"
    EXACT = "exact"  # integer / bitwise / data movement: no rounding at all


@dataclass(frozen=True)
class PrecisionGuarantee:
    """What a kernel promises about its numbers.

    - ``deterministic``: bit-identical results on reruns with the same inputs.
    - ``bit_stable_on_same_hardware``: also across streams and launch orders.
    """

    math_precision: MathPrecision
    accumulator: ElementKind
    deterministic: bool = True
    bit_stable_on_same_hardware: bool = True

    @classmethod
    def for_element(cls, element: ElementKind, **kw) -> PrecisionGuarantee:
        """The default guarantee of a kernel that computes in `element`'s compute kind."""
        acc = element.compute_kind
        if not acc.is_float:
            return cls(MathPrecision.EXACT, acc, **kw)
        math = MathPrecision.F64 if acc is ElementKind.F64 else MathPrecision.F32
        return cls(math, acc, **kw)


@dataclass(frozen=True)
class KernelSku:
    """Exactly which kernel runs: frozen and hashable."""

    category: OpCategory
    op: str
    element: ElementKind
    aux_element: ElementKind | None
    layout: str | None
    epilogue: str | None
    arch: ArchSku
    backend: BackendKind
    precision_guarantee: PrecisionGuarantee
    candidate: str = ""


@dataclass(frozen=True)
class PlanPreference:
    """What the caller wants from `select`.

    - ``max_workspace_bytes``: candidates needing more scratch are excluded (None = no cap).
    - ``prefer_backend``: only candidates of this backend are considered (never a silent fallback).
    - ``require_deterministic``: only candidates whose guarantee is deterministic.
    - ``allow_tf32``: f32 matrix math may use TF32.
    """

    max_workspace_bytes: int | None = None
    prefer_backend: BackendKind | None = None
    require_deterministic: bool = False
    allow_tf32: bool = False

    def __post_init__(self) -> None:
        from .errors import InvalidProblem

        who = "PlanPreference"
        if self.prefer_backend is not None:
            backend = coerce_enum(BackendKind, self.prefer_backend, who, "prefer_backend")
            object.__setattr__(self, "prefer_backend", backend)
        for flag in ("require_deterministic", "allow_tf32"):
            if not isinstance(getattr(self, flag), bool):
                raise InvalidProblem(f"{who}: {flag} must be a bool, "
                                     f"got {getattr(self, flag)!r}")
        cap = self.max_workspace_bytes
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise InvalidProblem(f"{who}: max_workspace_bytes must be None or an int >= 0, "
                                 f"got {cap!r}")
