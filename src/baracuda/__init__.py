"""baracuda: every GPU primitive an ML framework needs, forward and backward, one Plan API.

Everything public is re-exported here: the core vocabulary and errors, and every family's
`__all__` (families are discovered, not listed).
"""

from __future__ import annotations

import importlib as _importlib

# core.runtime, imported first by core, chooses the Triton interpreter on machines without
# CUDA before triton is imported.
from . import errors
from .core import *  # noqa: F403
from .core import __all__ as _core_all
from .core.registry import discover as _discover

__version__ = "0.1.0"

_discover()
__all__ = list(_core_all) + ["errors", "__version__"]
for _fam in sorted({p.family for p in plans()}):  # noqa: F405
    _mod = _importlib.import_module(f"{__name__}.families.{_fam}")
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)

from .backends.triton_support import enable_fast_launch as _enable_fast_launch  # noqa: E402

_enable_fast_launch()


# `baracuda.torch` (the torch frontend) is imported on demand: it registers torch.library ops.
