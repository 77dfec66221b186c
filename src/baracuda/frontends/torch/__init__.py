"""Torch frontend plumbing: the custom-op factory. The public functions are collected by
`baracuda.torch` from each family's `torch_api` module (kept out of this package's import, so
a family importing the factory never re-enters its own half-imported module)."""

from .factory import define_op, normalize_dim, run_plan

__all__ = ["define_op", "normalize_dim", "run_plan"]
