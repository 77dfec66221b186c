"""Test setup: the Triton interpreter on machines without CUDA (chosen before any kernel module
is imported), CUDA where present; shared fixtures."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

#: tests/memcheck.py on every interpreted launch: accesses inside their arguments' storages,
#: torch.empty poisoned (about 7% of a CPU run's time); BARACUDA_MEMCHECK=0 turns it off
MEMCHECK = os.environ.get("BARACUDA_MEMCHECK", "storage,poison")
if MEMCHECK not in ("", "0") and not torch.cuda.is_available():
    import memcheck  # noqa: E402

    memcheck.install(MEMCHECK)

import baracuda  # noqa: E402,F401  - imports (and registers) every family under the right mode

ON_GPU = torch.cuda.is_available()
DEVICE = torch.device("cuda" if ON_GPU else "cpu")
#: Small cases everywhere, real sizes on the GPU; BARACUDA_SCALE=small|real|small,real overrides
#: (a GPU run short on time can take only the real sizes).
SCALES = tuple(os.environ.get("BARACUDA_SCALE", "small,real" if ON_GPU else "small").split(","))


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


#: Real-size cases that may run at once across pytest-xdist workers sharing one GPU: each can
#: hold ~10 GB (inputs, float64 references, poisoned outputs); 15 workers unrestricted ran an
#: 80 GB H100 out of memory.
REAL_CASE_SLOTS = int(os.environ.get("BARACUDA_REAL_SLOTS", "4"))


@pytest.fixture(autouse=True)
def _limit_concurrent_real_cases(request):
    """Hold one of REAL_CASE_SLOTS file locks (shared by all workers) during a real-size case."""
    if not ON_GPU or "-real-" not in request.node.name:
        yield
        return
    import fcntl
    import time

    handle = None
    while handle is None:
        for slot in range(REAL_CASE_SLOTS):
            f = open(f"/tmp/baracuda_real_case_{slot}.lock", "w")  # noqa: SIM115 - held open
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                handle = f
                break
            except BlockingIOError:
                f.close()
        if handle is None:
            time.sleep(0.05)
    try:
        yield
    finally:
        torch.cuda.empty_cache()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
