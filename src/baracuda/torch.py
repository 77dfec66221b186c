"""`baracuda.torch`: torch-compatible functions (torch's names and signatures), differentiable,
working in eager mode, under torch.compile and in CUDA graphs.

Collected from `baracuda.families.<family>.torch_api` modules (discovered, not listed); a
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
            fn = getattr(mod, sym)
            # in-place functions keep their own path (a replay would skip the version bump)
            found[sym] = fn if sym.endswith("_") else replayed(fn)
    return found


_public = _collect()
globals().update(_public)
__all__ = list(_public)
# Only the torch functions stay public: not the collector, nor the __future__ feature name.
del _collect, _public, annotations
