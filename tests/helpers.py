"""Test helpers: re-exports of the package's data helpers plus assertion wrappers."""

from __future__ import annotations

import torch

from baracuda.core.testing import Canary, poisoned, rand, randn, with_layout  # noqa: F401
from baracuda.core.tolerance import Tolerance, compare, tolerance_for  # noqa: F401
from baracuda.core.vocab import ElementKind


def assert_close(got: torch.Tensor, ref: torch.Tensor, element: ElementKind | torch.dtype,
                 name: str = "out", scale: float = 1.0) -> None:
    """Compare against a float64 reference with the per-dtype table (scaled by `scale`)."""
    tol = tolerance_for(ElementKind.of(element)).scaled(scale)
    result = compare(got, ref, tol, name)
    assert result.ok, result.message


def assert_bitwise_equal(a: torch.Tensor, b: torch.Tensor, name: str = "out") -> None:
    ab = a.detach().contiguous().flatten().view(torch.uint8)
    bb = b.detach().contiguous().flatten().view(torch.uint8)
    assert torch.equal(ab, bb), f"{name}: reruns differ bitwise"


def norm_rand(shape, dtype=torch.float32, seed=0, requires_grad=False):
    """Fresh normal values (std 1.5, mean 0.3) on the test device: the norm tests' inputs."""
    from conftest import DEVICE

    g = torch.Generator().manual_seed(seed)
    t = (torch.randn(shape, generator=g, dtype=torch.float64) * 1.5 + 0.3).to(DEVICE, dtype)
    return t.requires_grad_(requires_grad)


def assert_same_value_and_grads(got: torch.Tensor, want: torch.Tensor, wrt) -> None:
    """Two scalar results of the same inputs: equal values and equal gradients for `wrt`."""
    torch.testing.assert_close(got, want)
    for a, b in zip(torch.autograd.grad(got, wrt), torch.autograd.grad(want, wrt)):
        torch.testing.assert_close(a, b)
