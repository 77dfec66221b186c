"""Registration by decorator beside the code; families are discovered, never listed by hand."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import warnings
from collections.abc import Callable
from typing import TypeVar

from .errors import InvalidProblem
from .plan import Candidate, Plan

P = TypeVar("P", bound=type[Plan])
C = TypeVar("C", bound=type[Candidate])

_PLANS: dict[str, type[Plan]] = {}
_SPECS: dict[str, object] = {}
_BENCHES: dict[str, list[Callable]] = {}
_DISCOVERED = False
_IMPORT_ERRORS: dict[str, str] = {}


def register_plan(cls: P) -> P:
    """Class decorator: add a Plan subclass to the registry (its family is its package name)."""
    if not getattr(cls, "family", ""):
        parts = cls.__module__.split(".")
        cls.family = parts[parts.index("families") + 1] if "families" in parts else parts[-1]
    if cls.__name__ in _PLANS and _PLANS[cls.__name__] is not cls:
        raise InvalidProblem(f"register_plan: {cls.__name__} is registered twice")
    cls.candidates = []
    _PLANS[cls.__name__] = cls
    return cls


def register_candidate(*plans: type[Plan]) -> Callable[[C], C]:
    """Class decorator: add an instance of a Candidate subclass to each plan's candidates."""

    def deco(cand_cls: C) -> C:
        inst = cand_cls()
        for plan in plans:
            plan.candidates.append(inst)
            plan.candidates.sort(key=lambda c: c.priority)
        return cand_cls

    return deco


def register_spec(spec) -> object:
    """Attach a PlanSpec (test cases, malformed inputs, AOT variants) to its plan."""
    _SPECS[spec.plan.__name__] = spec
    return spec


def register_bench(family: str) -> Callable[[Callable], Callable]:
    """Function decorator: `fn(quick: bool) -> list[BenchCase]` for `baracuda bench`; a
    family's modules may each register one (their rows are listed in registration order)."""

    def deco(fn: Callable) -> Callable:
        fns = _BENCHES.setdefault(family, [])
        if fn not in fns:
            fns.append(fn)
        return fn

    return deco


def discover() -> None:
    """Import every package under baracuda.families (each registers itself on import)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    pkg = importlib.import_module("baracuda.families")
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        # One broken family must not take the others down; the error is kept, reported by
        # `baracuda ops` and failed by tests/test_contract.py.
        try:
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            spec_mod = f"{mod.__name__}.spec"
            if importlib.util.find_spec(spec_mod) is not None:
                importlib.import_module(spec_mod)
        except Exception as exc:  # noqa: BLE001
            _IMPORT_ERRORS[info.name] = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"baracuda: family {info.name!r} failed to import: {exc}", stacklevel=2)


def record_import_error(name: str, message: str) -> None:
    _IMPORT_ERRORS[name] = message


def import_errors() -> dict[str, str]:
    discover()
    return dict(_IMPORT_ERRORS)


def plans(family: str | None = None) -> list[type[Plan]]:
    discover()
    out = [p for p in _PLANS.values() if family is None or p.family == family]
    return sorted(out, key=lambda p: (p.family, p.is_backward, p.__name__))


def plan_named(name: str) -> type[Plan]:
    discover()
    return _PLANS[name]


def spec_for(plan: type[Plan]):
    discover()
    return _SPECS.get(plan.__name__)


def specs(family: str | None = None) -> list:
    discover()
    return [_SPECS[p.__name__] for p in plans(family) if p.__name__ in _SPECS]


def benches(family: str | None = None) -> dict[str, Callable]:
    discover()
    return {f: _joined(fns) for f, fns in sorted(_BENCHES.items())
            if family is None or f == family}


def _joined(fns: list[Callable]) -> Callable:
    """One bench function listing the rows of every function a family registered."""
    if len(fns) == 1:
        return fns[0]
    return lambda quick: [case for fn in fns for case in fn(quick)]


def families() -> list[str]:
    return sorted({p.family for p in plans()})


def export_public(namespace: dict, *modules) -> list[str]:
    """A family package's public names, gathered instead of listed by hand: the registered
    plans, the descriptors, args and kind enums that `modules` define (not those they import),
    bound into `namespace` (the package's globals). Returns the sorted names for `__all__`."""
    import enum

    from .args import Args
    from .plan import Descriptor

    names = []
    for mod in modules:
        for name, obj in vars(mod).items():
            if name.startswith("_") or not isinstance(obj, type):
                continue
            if obj.__module__ != mod.__name__:
                continue
            registered = issubclass(obj, Plan) and _PLANS.get(name) is obj
            if registered or issubclass(obj, (Descriptor, Args, enum.Enum)):
                namespace[name] = obj
                names.append(name)
    return sorted(names)
