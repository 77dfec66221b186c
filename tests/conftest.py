"""Test setup: the Triton interpreter on machines without CUDA (chosen before any kernel module
is imported), CUDA where present; shared fixtures."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

import baracuda  # noqa: E402,F401  - imports (and registers) every family under the right mode

ON_GPU = torch.cuda.is_available()
DEVICE = torch.device("cuda" if ON_GPU else "cpu")
#: Small cases everywhere; real sizes only on the GPU (BARACUDA_SCALE=small skips them there).
SCALES = ("small", "real") if ON_GPU and os.environ.get("BARACUDA_SCALE") != "small" else ("small",)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device")


def pytest_collection_modifyitems(config, items):
    if ON_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (runs in scripts/gpu_run.sh on an H100)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device() -> torch.device:
    return DEVICE


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(1234)
