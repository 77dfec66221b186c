"""pytest -p gpu_shapes_plugin: the indexing / segment / embedding launches take their GPU
tiles, chunk sizes and scan blocks under the interpreter (the module constants chosen with
`INTERPRET` set as on CUDA), so tests/memcheck.py can check the GPU's launch geometry on the
CPU. Slow (blocks of thousands of lanes); for debugging, not CI."""

from __future__ import annotations


def pytest_configure(config):
    import baracuda.backends.grouping as grouping
    import baracuda.backends.rows as rows
    import baracuda.families.embedding.plans as ep
    import baracuda.families.embedding.plans_bag as bag
    import baracuda.families.indexing.plans as ip
    import baracuda.families.indexing.plans_mask as im
    import baracuda.families.segment.plans as sp

    for m in (bag, ep, ip, im, sp, grouping, rows):
        m.INTERPRET = False
    grouping.COUNT_CHUNK, grouping.COUNT_TILE = 2048, 4096
    # the device asserts stay off: the interpreter's CPU path checks bounds on the host
    rows.ASSERT_LAUNCH = {"CHECK": False}
    ep.ASSERT_LAUNCH = ip.ASSERT_LAUNCH = rows.ASSERT_LAUNCH


def pytest_collection_modifyitems(config, items):
    """Larger fuzz extents than the CPU default (BARACUDA_FUZZ_TOTAL elements, lines of up to
    3000), so that launches take several chunks / programs as on the GPU."""
    import os
    import sys

    mod = sys.modules.get("test_fuzz_indexing")
    if mod is not None:
        mod.TOTAL = int(os.environ.get("BARACUDA_FUZZ_TOTAL", "20000"))
        mod.LONG = 3000
