"""Descriptor / Args / Candidate / Plan bases: the contract every op follows.

    desc = SoftmaxDescriptor(...)                  # frozen, hashable: the only cache key
    plan = SoftmaxPlan.select(desc, preference)    # validates desc, picks a candidate
    plan.can_implement(args)                       # typed error, or None
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device=...)
    plan.run(args, workspace=ws, stream=None)      # None = torch's current stream
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import sys
import typing
from collections.abc import Iterator
from typing import Any, ClassVar

import torch

from . import validate as V
from .args import Args, _field_names, check_operands
from .errors import BaracudaError, InvalidProblem, Unsupported
from .runtime import interpreter_active
from .vocab import (
    ArchSku,
    BackendKind,
    ElementKind,
    KernelSku,
    OpCategory,
    PlanPreference,
    PrecisionGuarantee,
    coerce_enum,
)

_ATOMS = (int, float, bool, str, type(None))


def _normalize(value: Any) -> Any:
    """Lists become tuples and torch dtypes become ElementKinds, so descriptors hash.
    Values already in canonical form are returned as the same object (the common, fast case)."""
    kind = type(value)
    if kind in _ATOMS or isinstance(value, enum.Enum):
        return value
    if kind is tuple and all(type(v) is int for v in value):
        return value
    if isinstance(value, torch.dtype):
        return ElementKind.of(value)
    if isinstance(value, (list, tuple, torch.Size)):
        items = tuple(_normalize(v) for v in value)
        if type(value) is tuple and all(a is b for a, b in zip(items, value)):
            return value
        return items
    return value


@dataclasses.dataclass(frozen=True)
class Descriptor:
    """Base of every descriptor: a frozen dataclass holding everything that shapes the kernel.

    Subclasses override `validate(who)`, which `select` calls; it raises typed errors and may
    return nothing. Field values are normalized on construction (lists -> tuples,
    torch dtypes -> ElementKind); string element names are accepted for fields named
    ``element`` / ``*_element``.
    """

    def __post_init__(self) -> None:
        cls = type(self)
        enums = _enum_fields(cls)
        for name in _field_names(cls):
            value = getattr(self, name)
            norm = _normalize(value)
            if isinstance(norm, str) and name in enums:
                norm = coerce_enum(enums[name], norm, cls.__name__, name)
            if norm is not value:
                object.__setattr__(self, name, norm)
        # Descriptors are dictionary keys on every eager call (descriptor, select and launch
        # caches): hash the fields once per instance instead of on every lookup.
        if cls.__dict__.get("__hash__") is not _stored_hash:
            cls.__hash__ = _stored_hash

    @classmethod
    def cached(cls, *args, **kwargs):
        """The descriptor for these arguments, built once: eager frontends repeat a few shapes,
        and construction (field normalization) is a visible share of a call's host time.
        Arguments must be hashable (tuples, not lists)."""
        return _cached_descriptor(cls, *args, **kwargs)

    def checked(self, who: str):
        """`validate(who)` once per distinct descriptor; returns self."""
        return _checked_descriptor(self, who)

    def validate(self, who: str) -> None:  # pragma: no cover - overridden
        """Raise InvalidProblem / Unsupported for malformed descriptors."""


class Candidate:
    """One implementation of a plan. Subclass, set the class attributes, register with
    `@register_candidate(PlanClass)`.

    `supports` answers with the reason it can't run a descriptor (or None); `launch` runs it.
    """

    name: ClassVar[str] = "candidate"
    backend: ClassVar[BackendKind] = BackendKind.TRITON
    priority: ClassVar[int] = 0  # lower is tried first
    #: True promises that `launch` issues only Triton launches whose grids and scalars follow
    #: from the descriptor, the preference and the arguments' signature, with pointers inside
    #: the arguments and the workspace: eager frontends then replay recorded launches
    #: (backends/launch_replay.py, which also refuses any call that breaks the promise).
    replayable: ClassVar[bool] = False

    def supports(self, desc: Descriptor, pref: PlanPreference, arch: ArchSku) -> str | None:
        return None

    def guarantee(self, desc: Descriptor, pref: PlanPreference) -> PrecisionGuarantee:
        return PrecisionGuarantee.for_element(desc.element)  # type: ignore[attr-defined]

    def workspace_size(self, desc: Descriptor) -> int:
        return 0

    def can_implement(self, desc: Descriptor, args: Args) -> None:
        """Candidate-specific argument checks (strides, alignment); raise typed errors."""

    def launch(self, desc: Descriptor, args: Args, workspace: torch.Tensor | None) -> None:
        raise NotImplementedError

    def launch_with(self, desc: Descriptor, args: Args, workspace: torch.Tensor | None,
                    preference: PlanPreference) -> None:
        """What plans call: candidates whose kernels depend on the preference (TF32, inner
        plans' backends) override this; the rest implement `launch`."""
        self.launch(desc, args, workspace)


@functools.lru_cache(maxsize=16)
def _arch_for(device_index: int | None) -> ArchSku:
    return ArchSku.current(device_index)


class Plan:
    """Base of every plan. Subclasses set the class attributes, implement `check_args`, and are
    registered with `@register_plan`.
    """

    family: ClassVar[str] = ""
    category: ClassVar[OpCategory]
    descriptor_type: ClassVar[type[Descriptor]]
    args_type: ClassVar[type[Args]]
    #: Name of the partner plan: the backward of a forward plan, or the forward of a backward.
    partner: ClassVar[str | None] = None
    is_backward: ClassVar[bool] = False
    #: The op name in the SKU when it does not follow from the descriptor's kind.
    OP_NAME: ClassVar[str | None] = None
    candidates: ClassVar[list[Candidate]]

    def __init__(self, desc: Descriptor, candidate: Candidate, preference: PlanPreference,
                 arch: ArchSku):
        self.desc = desc
        self.candidate = candidate
        self.preference = preference
        self.arch = arch
        guarantee = candidate.guarantee(desc, preference)
        self._sku = KernelSku(
            category=self.category,
            op=self.op_name(desc),
            element=getattr(desc, "element", ElementKind.F32),
            aux_element=getattr(desc, "aux_element", None),
            layout=None,
            epilogue=None,
            arch=arch,
            backend=candidate.backend,
            precision_guarantee=guarantee,
            candidate=candidate.name,
        )
        self._workspace = int(candidate.workspace_size(desc))

    # -- selection ---------------------------------------------------------------------------
    @classmethod
    def op_name(cls, desc: Descriptor) -> str:
        """The SKU's op: the class's `OP_NAME` when set, else the descriptor's kind."""
        if cls.OP_NAME:
            return cls.OP_NAME
        kind = getattr(desc, "kind", None)
        return kind.value if hasattr(kind, "value") else cls.__name__

    @classmethod
    def select(cls, desc: Descriptor, preference: PlanPreference | None = None,
               stream: Any = None) -> Plan:
        """Validate `desc` and pick the first candidate that supports it (cached per desc)."""
        if type(desc) is not cls.descriptor_type:
            raise InvalidProblem(
                f"{cls.__name__}: descriptor must be {cls.descriptor_type.__name__}, "
                f"got {type(desc).__name__}"
            )
        preference = preference or PlanPreference()
        device = getattr(stream, "device", None)
        index = device.index if isinstance(device, torch.device) else None
        return _select_cached(cls, desc, preference, _arch_for(index))

    @classmethod
    def _select(cls, desc: Descriptor, pref: PlanPreference, arch: ArchSku) -> Plan:
        desc.validate(cls.__name__)
        reasons = []
        for cand in cls.candidates:
            reason = cls._exclusion(cand, desc, pref, arch)
            if reason is None:
                return cls(desc, cand, pref, arch)
            reasons.append(f"{cand.name} [{cand.backend.value}]: {reason}")
        listing = "; ".join(reasons) if reasons else "no candidates registered"
        raise Unsupported(f"{cls.__name__}: no candidate supports {desc}: {listing}")

    @staticmethod
    def _exclusion(cand: Candidate, desc: Descriptor, pref: PlanPreference,
                   arch: ArchSku) -> str | None:
        if pref.prefer_backend is not None and cand.backend is not pref.prefer_backend:
            want = pref.prefer_backend.value
            return f"backend is {cand.backend.value}, preference asks for {want}"
        reason = cand.supports(desc, pref, arch)
        if reason is not None:
            return reason
        if pref.require_deterministic and not cand.guarantee(desc, pref).deterministic:
            return "not deterministic and the preference requires determinism"
        if pref.max_workspace_bytes is not None:
            need = cand.workspace_size(desc)
            if need > pref.max_workspace_bytes:
                cap = pref.max_workspace_bytes
                return f"needs {need} workspace bytes > max_workspace_bytes {cap}"
        return None

    # -- contract ----------------------------------------------------------------------------
    @property
    def sku(self) -> KernelSku:
        return self._sku

    @property
    def precision_guarantee(self) -> PrecisionGuarantee:
        return self._sku.precision_guarantee

    def workspace_size(self) -> int:
        return self._workspace

    def check_args(self, args: Args) -> None:
        """Checks of the tensors against the descriptor: every `operand` declaration of the
        Args class (presence, shape, dtype). Override only for a rule of the plan's own, and
        call `super().check_args(args)`."""
        check_operands(type(self).__name__, self.desc, args)

    def can_implement(self, args: Args) -> None:
        who = type(self).__name__
        if not isinstance(args, self.args_type):
            raise InvalidProblem(
                f"{who}: args must be {self.args_type.__name__}, got {type(args).__name__}"
            )
        tensors = args.tensors()
        V.check_one_device(who, tensors, allow_cpu=interpreter_active())
        self.check_args(args)
        for out_name, out in args.outputs().items():
            V.check_output_writable(who, out_name, out)
            for in_name, inp in tensors.items():
                if in_name != out_name:
                    V.check_no_overlap(who, out_name, out, in_name, inp)
        self.candidate.can_implement(self.desc, args)

    def is_empty(self, args: Args) -> bool:
        """True when there is nothing to compute (every output is empty)."""
        outs = args.outputs()
        return bool(outs) and all(t.numel() == 0 for t in outs.values())

    def run_trusted(self, args: Args, workspace: torch.Tensor | None) -> None:
        """For frontends that allocated the outputs themselves: every check of `can_implement`
        runs (device, shapes, dtypes, the candidate's stride rules) except the output
        overlap/aliasing scan, which holds by construction for fresh outputs. This keeps the
        eager overhead per call low; the public `run` keeps the full contract."""
        who = type(self).__name__
        tensors = args.tensors()
        devices = {t.device for t in tensors.values()}
        if len(devices) > 1 or any(d.type != "cuda" for d in devices):
            V.check_one_device(who, tensors, allow_cpu=interpreter_active())
        self.check_args(args)
        self.candidate.can_implement(self.desc, args)
        if self.is_empty(args):
            return
        V.check_workspace(who, workspace, self._workspace)
        self.candidate.launch_with(self.desc, args, workspace, self.preference)

    def run(self, args: Args, workspace: torch.Tensor | None = None, stream: Any = None) -> None:
        self.can_implement(args)
        if self.is_empty(args):
            return
        V.check_workspace(type(self).__name__, workspace, self._workspace)
        if stream is None:
            self.candidate.launch_with(self.desc, args, workspace, self.preference)
            return
        with torch.cuda.stream(stream):
            self.candidate.launch_with(self.desc, args, workspace, self.preference)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.desc}, candidate={self.candidate.name})"


def _stored_hash(desc: Descriptor) -> int:
    """Hash of the (normalized, frozen) fields, computed on first use (subclasses may still
    normalize fields after the base __post_init__)."""
    h = desc.__dict__.get("_hash")
    if h is None:
        h = hash((type(desc), *(getattr(desc, n) for n in _field_names(type(desc)))))
        object.__setattr__(desc, "_hash", h)
    return h


@functools.cache
def _enum_fields(cls: type) -> dict[str, type[enum.Enum]]:
    """Fields annotated with an Enum (or an Enum | None): a string there names a member."""
    module = vars(sys.modules[cls.__module__])
    found = {}
    for f in dataclasses.fields(cls):
        try:
            hint = eval(f.type, module) if isinstance(f.type, str) else f.type  # noqa: S307
        except Exception:  # noqa: BLE001 - an annotation we cannot resolve takes no strings
            continue
        options = typing.get_args(hint) or (hint,)
        kinds = [t for t in options if isinstance(t, type) and issubclass(t, enum.Enum)]
        if len(kinds) == 1:
            found[f.name] = kinds[0]
    if "element" in _field_names(cls) and "element" not in found:
        found["element"] = ElementKind
    return found


@functools.lru_cache(maxsize=8192)
def _cached_descriptor(cls, *args, **kwargs):
    return cls(*args, **kwargs)


@functools.lru_cache(maxsize=8192)
def _checked_descriptor(desc: Descriptor, who: str) -> Descriptor:
    desc.validate(who)
    return desc


@functools.lru_cache(maxsize=4096)
def _select_cached(cls: type[Plan], desc: Descriptor, pref: PlanPreference, arch: ArchSku) -> Plan:
    return cls._select(desc, pref, arch)


def iter_errors() -> Iterator[type[BaracudaError]]:
    yield from BaracudaError.__subclasses__()
