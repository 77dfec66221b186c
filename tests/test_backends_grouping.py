"""The grouping-by-key machinery (backends/grouping.py, triton_grouping.py) and the row kernels
on top of it (backends/rows.py, triton_rows.py) against torch, under the interpreter on CPU."""

from __future__ import annotations

import pytest
import torch

from baracuda.backends.grouping import (
    Layout,
    bucket_offsets,
    bucket_sections,
    count_shape,
    radix_sections,
    radix_sort,
    segment_counts,
    segment_offsets,
    sort_layout,
    sort_sections,
)
from baracuda.backends.rows import (
    ReduceKind,
    RowGroups,
    collapses,
    gather_tile,
    inner_layout,
    is_flat,
    run_reduce,
)
from baracuda.backends.triton_grouping import exclusive_scan_kernel
from baracuda.backends.triton_rows import row_gather_kernel
from baracuda.core.errors import Unsupported
from baracuda.core.vocab import ElementKind


def _keys(ids: torch.Tensor, n_seg: int, drop: int = -1) -> torch.Tensor:
    """The sort key of each row: its id, or n_seg (sorts last, dropped) when out of range."""
    return torch.where((ids >= 0) & (ids < n_seg) & (ids != drop), ids, torch.tensor(n_seg))


def _views(layout: Layout, device) -> dict[str, torch.Tensor]:
    ws = torch.full((layout.nbytes,), 0x5A, dtype=torch.uint8, device=device)  # poisoned
    return layout.views(ws)


def test_layout_sections_are_aligned_and_disjoint():
    lay = Layout.build([("a", 3, torch.int32), ("b", 5, torch.float64), ("c", 1, torch.int32)])
    offs = [off for _, off, _, _ in lay.sections]
    assert all(off % 256 == 0 for off in offs) and offs == sorted(set(offs))
    views = _views(lay, "cpu")
    assert [views[n].numel() for n in "abc"] == [3, 5, 1]
    assert views["b"].dtype == torch.float64 and lay.nbytes >= offs[-1] + 4


@pytest.mark.parametrize("n,s", [(0, 4), (1, 1), (37, 5), (300, 40)])
def test_sorted_ids_give_lower_bounds(n, s, device):
    """Sorted ids need no permutation: offsets[k] is the first position with id >= k."""
    gen = torch.Generator().manual_seed(n + s)
    ids = torch.randint(0, s, (n,), generator=gen).sort().values
    views = _views(sort_layout(n, s, False), device)
    assert segment_offsets(ids.to(device), s, views, False) is None
    expect = torch.searchsorted(ids, torch.arange(s + 2))
    assert torch.equal(views["offsets"].cpu().long(), expect)
    assert [name for name, *_ in sort_sections(n, s, False)] == ["offsets"]


@pytest.mark.parametrize("n,s,drop", [(50, 7, -1), (400, 30, 2), (1, 3, -1), (200, 0, -1)])
def test_unsorted_ids_give_the_stable_sort(n, s, drop, device):
    """The permutation is torch's stable sort of the keys, the offsets its group starts."""
    gen = torch.Generator().manual_seed(3 * n + s)
    ids = torch.randint(-2, s + 2, (n,), generator=gen)
    views = _views(sort_layout(n, s, True), device)
    perm = segment_offsets(ids.to(device), s, views, True, drop=drop)
    order = torch.sort(_keys(ids, s, drop), stable=True)
    assert torch.equal(perm[:n].cpu().long(), order.indices)
    assert torch.equal(views["offsets"].cpu().long(),
                       torch.searchsorted(order.values, torch.arange(s + 2)))


def test_radix_sort_is_the_stable_sort(device):
    """The radix sort (the path past the counting sort's limits), run directly on its own
    sections: the same stable permutation and offsets."""
    n, s, drop = 300, 70, 5
    assert count_shape(1 << 19, 1 << 19) is None  # such problems take the radix path
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(-1, s + 1, (n,), generator=gen)
    views = _views(Layout.build([("offsets", s + 2, torch.int32)] + radix_sections(n)), device)
    perm = radix_sort(ids.to(device), s, views, drop=drop)
    order = torch.sort(_keys(ids, s, drop), stable=True)
    assert torch.equal(perm[:n].cpu().long(), order.indices)
    assert torch.equal(views["offsets"].cpu().long(),
                       torch.searchsorted(order.values, torch.arange(s + 2)))


def test_bucket_offsets_group_every_row_once(device):
    n, s = 333, 17
    gen = torch.Generator().manual_seed(9)
    ids = torch.randint(-1, s + 1, (n,), generator=gen)
    views = _views(Layout.build(bucket_sections(n, s)), device)
    perm = bucket_offsets(ids.to(device), s, views).cpu().long()
    off = views["offsets"].cpu().long()
    counts = torch.bincount(ids[(ids >= 0) & (ids < s)], minlength=s)
    assert torch.equal(off[:s + 1], torch.cat([torch.zeros(1, dtype=torch.long),
                                               counts.cumsum(0)]))
    for k in range(s):  # the set of rows per group is fixed, not their order
        rows = perm[off[k]:off[k + 1]]
        assert torch.equal(rows.sort().values, torch.nonzero(ids == k).flatten())


def test_segment_counts_are_exact(device):
    ids = torch.tensor([3, 0, 3, 9, -1, 3, 1])
    counts = torch.full((5,), 77, dtype=torch.int32, device=device)
    segment_counts(ids.to(device), 5, counts)
    assert counts.cpu().tolist() == [1, 1, 0, 3, 0]


@pytest.mark.parametrize("m,block,total", [(10, 4, False), (37, 16, True), (1, 8, True)])
def test_exclusive_scan_kernel(m, block, total, device):
    gen = torch.Generator().manual_seed(m)
    x = torch.randint(0, 9, (m,), generator=gen, dtype=torch.int32)
    out = torch.full((m + 1,), -7, dtype=torch.int32, device=device)
    exclusive_scan_kernel[(1,)](x.to(device), out, m, BLOCK=block, TOTAL=total)
    expect = torch.cat([torch.zeros(1, dtype=torch.int32), x.cumsum(0).int()])
    got = out.cpu()
    assert torch.equal(got[:m], expect[:m])
    assert got[m].item() == (expect[m].item() if total else -7)


def test_exclusive_scan_in_place_with_cursor(device):
    x = torch.tensor([2, 0, 5, 1], dtype=torch.int32, device=device)
    out = torch.zeros(5, dtype=torch.int32, device=device)
    exclusive_scan_kernel[(1,)](x, out, 4, BLOCK=2, TOTAL=True, CURSOR=True)
    assert out.cpu().tolist() == [0, 2, 2, 7, 8] and x.cpu().tolist() == [0, 2, 2, 7]


def test_inner_layout_collapses_and_refuses():
    a = torch.empty(4, 3, 5)
    shape, strides = inner_layout("t", a.shape[1:], [a])
    assert shape == [1, 1, 1, 15] and strides == [[0, 0, 0, 1]] and is_flat(shape)
    b = torch.empty(4, 2, 3, 4, 5, 6).permute(0, 5, 3, 1, 4, 2)
    assert collapses(a.shape[1:], [a]) and not collapses(b.shape[1:], [b])
    with pytest.raises(Unsupported, match="at most 4"):
        inner_layout("t", b.shape[1:], [b])


def test_gather_tile_fits_the_row():
    rows, cols, warps = gather_tile(3, 4)
    assert cols >= 3 and rows >= 1 and warps >= 1


@pytest.mark.parametrize("kind", [ReduceKind.SUM, ReduceKind.MEAN, ReduceKind.MAX,
                                  ReduceKind.LAST])
def test_run_reduce_over_sorted_groups(kind, device):
    n, s, d = 60, 7, 5
    gen = torch.Generator().manual_seed(int(kind))
    ids = torch.randint(-1, s + 1, (n,), generator=gen)
    data = torch.randn(n, d, generator=gen)
    views = _views(sort_layout(n, s, True), device)
    perm = segment_offsets(ids.to(device), s, views, True)
    out = torch.full((s, d), float("nan"), device=device)
    arg = torch.full((s, d), -5, dtype=torch.int64, device=device) if kind is ReduceKind.MAX \
        else None
    base = torch.randn(s, d, generator=gen).to(device) if kind is ReduceKind.LAST else None
    run_reduce(RowGroups((n, d), s, ElementKind.F32), kind, data.to(device), perm,
               views["offsets"], out, arg, base=base)
    for k in range(s):
        rows = torch.nonzero(ids == k).flatten()
        x = data[rows]
        if kind is ReduceKind.SUM:
            want = x.sum(0)
        elif kind is ReduceKind.MEAN:
            want = x.sum(0) / max(len(rows), 1)
        elif kind is ReduceKind.MAX:
            want = x.max(0).values if len(rows) else torch.full((d,), -float("inf"))
            first = rows[x.argmax(0)] if len(rows) else torch.full((d,), -1)
            assert torch.equal(arg[k].cpu(), first)
        else:
            want = x[-1] if len(rows) else base[k].cpu()
        torch.testing.assert_close(out[k].cpu(), want, rtol=1e-5, atol=1e-5)


def test_row_gather_kernel_matches_index_select(device):
    src = torch.randn(9, 6)
    idx = torch.tensor([4, 0, 8, 4, 2])
    dst = torch.full((5, 6), float("nan"), device=device)
    s = src.to(device)
    row_gather_kernel[(1, 1)](s, idx.to(device), dst, 5, 9, 6, 1, 1, 1, 1,
                              s.stride(0), 0, 0, 0, 1, dst.stride(0), 0, 0, 0, 1,
                              BLOCK_K=8, BLOCK_D=8, FLAT=True, CHECK=False)
    assert torch.equal(dst.cpu(), src.index_select(0, idx))
