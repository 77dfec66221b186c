"""Per-dtype tolerance table for tests (the one table lives in baracuda.core.tolerance)."""

from baracuda.core.tolerance import EXACT, TOLERANCES, Tolerance, tolerance_for  # noqa: F401
