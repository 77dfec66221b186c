"""GEMM family: dense / batched / grouped GEMM and Linear forward/backward with fused
epilogues, on cuBLASLt (nvmath-python) and Triton."""

from . import cublaslt as _cublaslt  # noqa: F401 - registers the cuBLASLt candidate
from .composite import BatchedGemmPlan, GroupedGemmPlan, LinearBackwardPlan, LinearPlan
from .descriptors import (
    BatchedGemmArgs,
    BatchedGemmDescriptor,
    BatchedGemmKind,
    DenseGemmArgs,
    DenseGemmDescriptor,
    GemmActivation,
    GroupedGemmArgs,
    GroupedGemmDescriptor,
    LinearArgs,
    LinearBackwardArgs,
    LinearBackwardDescriptor,
    LinearDescriptor,
)
from .plans import DenseGemmPlan

__all__ = [
    "BatchedGemmArgs", "BatchedGemmDescriptor", "BatchedGemmKind", "BatchedGemmPlan",
    "DenseGemmArgs", "DenseGemmDescriptor", "DenseGemmPlan", "GemmActivation",
    "GroupedGemmArgs", "GroupedGemmDescriptor", "GroupedGemmPlan", "LinearArgs",
    "LinearBackwardArgs", "LinearBackwardDescriptor", "LinearBackwardPlan", "LinearDescriptor",
    "LinearPlan",
]
