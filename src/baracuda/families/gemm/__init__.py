"""GEMM family: dense / batched / grouped GEMM and Linear forward/backward with fused
epilogues, on cuBLASLt (nvmath-python) and Triton."""

from ...core.registry import export_public
from . import composite, cublaslt, descriptors, plans  # cublaslt registers the cuBLASLt candidate

__all__ = export_public(globals(), descriptors, plans, composite, cublaslt)
