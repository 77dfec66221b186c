"""baracuda: every GPU primitive an ML framework needs, forward and backward, one Plan API.

Everything public is re-exported here: the core vocabulary and errors, and every family's
`__all__` (families are discovered, not listed).
"""

from __future__ import annotations

import importlib as _importlib
import os as _os

import torch as _torch

# Without CUDA, kernels run under the Triton interpreter; it must be chosen before triton is
# first imported (an explicit TRITON_INTERPRET, e.g. 0 for the AOT compile check, is respected).
if "TRITON_INTERPRET" not in _os.environ and not _torch.cuda.is_available():
    _os.environ["TRITON_INTERPRET"] = "1"

from . import errors  # noqa: E402
from .core import *  # noqa: E402,F403
from .core import __all__ as _core_all  # noqa: E402
from .core.registry import discover as _discover  # noqa: E402

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
