"""`baracuda.torch`: torch-compatible functions (torch's names and signatures), differentiable,
working in eager mode, under torch.compile and in CUDA graphs.

Collected from `baracuda.families.<family>.torch_api` modules (discovered, not listed); a
family whose frontend fails to import is reported by `baracuda ops`, the others still load.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings

from .backends.torch_ops import define_op, normalize_dim, run_plan
from .core.registry import families as _families
from .core.registry import record_import_error as _record_import_error

__all__: list[str] = []
for _fam in _families():
    _name = f"baracuda.families.{_fam}.torch_api"
    try:
        if importlib.util.find_spec(_name) is None:
            continue
        _mod = importlib.import_module(_name)
    except Exception as _exc:  # noqa: BLE001 - one broken family must not hide the others
        _record_import_error(f"{_fam}.torch_api", f"{type(_exc).__name__}: {_exc}")
        warnings.warn(f"baracuda.torch: {_name} failed to import: {_exc}", stacklevel=2)
        continue
    for _sym in getattr(_mod, "__all__", ()):
        globals()[_sym] = getattr(_mod, _sym)
        __all__.append(_sym)

__all__ += ["define_op", "normalize_dim", "run_plan"]
