"""`baracuda.torch`: torch-compatible functions (torch's names and signatures), differentiable,
working in eager mode, under torch.compile and in CUDA graphs.

Collected from `baracuda.families.<family>.torch_api` modules (discovered, not listed; a
dotted name in a module's `__all__`, "linalg.vector_norm", is its function linalg_vector_norm
and lands in the namespace `baracuda.torch.linalg`, as in torch); a
family whose frontend fails to import is reported by `baracuda ops`, the others still load.
Each out-of-place function is wrapped by `backends.torch_ops.replayed`: its eager calls that
need no gradient replay whole per signature (its `__wrapped__` is the family's function).
The namespace holds only those functions: the custom-op factory lives in
`baracuda.backends.torch_ops`.
"""

from __future__ import annotations


def _collect() -> dict[str, object]:
    """Every family torch_api's `__all__`, by name."""
    import importlib
    import importlib.util
    import warnings

    from .backends.torch_ops import replayed
    from .core.registry import families, record_import_error

    found: dict[str, object] = {}
    for fam in families():
        name = f"baracuda.families.{fam}.torch_api"
        try:
            if importlib.util.find_spec(name) is None:
                continue
            mod = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - one broken family must not hide the others
            record_import_error(f"{fam}.torch_api", f"{type(exc).__name__}: {exc}")
            warnings.warn(f"baracuda.torch: {name} failed to import: {exc}", stacklevel=3)
            continue
        for sym in getattr(mod, "__all__", ()):
            # a namespaced name ("linalg.vector_norm") is the module's linalg_vector_norm
            fn = getattr(mod, sym.replace(".", "_"))
            # in-place functions keep their own path (a replay would skip the version bump)
            found[sym] = fn if sym.endswith("_") else replayed(fn)
    return found


def _namespaces(found: dict[str, object]) -> dict[str, object]:
    """Top-level names: plain functions as they are, dotted ones ("linalg.vector_norm") in a
    module per namespace (`baracuda.torch.linalg`, as torch.linalg), whose `__all__` lists
    them."""
    import sys
    import types

    top: dict[str, object] = {}
    for name, fn in found.items():
        *path, leaf = name.split(".")
        if not path:
            top[name] = fn
            continue
        owner, dotted = None, __name__
        for part in path:
            dotted += f".{part}"
            holder = top if owner is None else vars(owner)
            if part not in holder:
                mod = types.ModuleType(dotted, f"torch.{dotted.partition('.torch.')[2]} "
                                               "functions on baracuda's plans")
                mod.__all__ = []
                sys.modules[dotted] = mod
                if owner is None:
                    top[part] = mod
                else:
                    setattr(owner, part, mod)
                    owner.__all__.append(part)
            owner = holder[part] if owner is None else getattr(owner, part)
        setattr(owner, leaf, fn)
        owner.__all__.append(leaf)
    return top


_public = _namespaces(_collect())
globals().update(_public)
__all__ = list(_public)
# Only the torch functions (and their namespaces) stay public: not the collector, nor the
# __future__ feature name.
del _collect, _namespaces, _public, annotations
