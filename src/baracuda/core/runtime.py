"""Where kernels run, decided once per process: on a CUDA device, or under the Triton
interpreter on the CPU.

The interpreter must be chosen before any `@triton.jit` module is imported, so this module is
imported first (by `baracuda/__init__.py`). Without CUDA the interpreter is the only way to run
a kernel, so it is the default there; an explicit TRITON_INTERPRET (e.g. 0 for the
ahead-of-time compile check) is respected.
"""

from __future__ import annotations

import os
import warnings

import torch

if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"

#: True when Triton kernels run under the interpreter (CPU tensors are then accepted).
INTERPRET: bool = os.environ.get("TRITON_INTERPRET", "0") == "1"

if INTERPRET:
    # The interpreter evaluates masked-out lanes too (e.g. -inf - -inf): numpy's warnings
    # about those lanes say nothing about the user's results, so they stay out of user scripts.
    warnings.filterwarnings("ignore", category=RuntimeWarning,
                            module=r"triton\.runtime\.interpreter")


def interpreter_active() -> bool:
    return INTERPRET


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ints (grid sizes, chunk counts)."""
    return -(-a // b)
