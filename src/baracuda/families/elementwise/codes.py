"""The op codes as `tl.constexpr` globals, one per kind-table row (`table.op_codes`):
U_<UnaryKind>, P_<UnaryParamKind>, B_<BinaryKind>, G_<GatedKind>, C_<CompareKind>,
T_<TernaryKind>, plus U_IDENTITY (casts) and C_ISCLOSE_NAN (isclose with equal_nan).

The op tables (`ops.py`, `ops_nary.py`) star-import them and branch on `OP == U_SILU`: each
branch resolves at compile time, and Triton hashes the globals a kernel reads, so a reordered
table recompiles rather than reusing a cached kernel of the old numbering.
"""

from __future__ import annotations

import triton.language as tl

from .table import op_codes

_CODES = op_codes()
globals().update({name: tl.constexpr(code) for name, code in _CODES.items()})
__all__ = sorted(_CODES)
