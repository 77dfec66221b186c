"""Segment family through the torch frontend: values vs the float64 reference, gradcheck,
tie / NaN / empty-segment / dropped-id semantics, opcheck, torch.compile, determinism."""

from __future__ import annotations

import pytest
import torch

from baracuda.core.errors import ArgumentTypeError, BaracudaError, InvalidProblem, Unsupported
from baracuda.families.segment import reference as ref
from baracuda.families.segment.torch_api import (
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
)
from helpers import assert_bitwise_equal, assert_close

FNS = {"sum": segment_sum, "mean": segment_mean, "max": segment_max, "min": segment_min,
       "prod": segment_prod}


@pytest.mark.parametrize("kind", list(FNS))
@pytest.mark.parametrize("sort", [False, True])
def test_values_and_gradcheck(kind, sort, device):
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(-1, 6, (12,), generator=gen)
    if sort:
        ids = ids.sort().values
    x = torch.rand(12, 2, generator=gen, dtype=torch.float64) + 0.5
    x = x.to(device).requires_grad_()
    ids = ids.to(device)
    out = FNS[kind](x, ids, 6, indices_are_sorted=sort)
    expect, _ = ref.segment_reduce(x, ids, 6, kind)
    assert_close(out, expect, torch.float64)
    torch.autograd.gradcheck(lambda t: FNS[kind](t, ids, 6, indices_are_sorted=sort), (x,),
                             fast_mode=True)


def test_identity_for_empty_segments_and_dropped_ids(device):
    x = torch.arange(8, dtype=torch.float32, device=device)[:, None].repeat(1, 2)
    ids = torch.tensor([0, 0, 9, -1, 2, 2, 5, 0], device=device)
    assert segment_sum(x, ids, 4)[:, 0].tolist() == [8.0, 0.0, 9.0, 0.0]
    assert segment_mean(x, ids, 4)[:, 0].tolist() == pytest.approx([8.0 / 3, 0.0, 4.5, 0.0])
    assert segment_max(x, ids, 4)[:, 0].tolist() == [7.0, -float("inf"), 5.0, -float("inf")]
    assert segment_min(x, ids, 4)[:, 0].tolist() == [0.0, float("inf"), 4.0, float("inf")]
    assert segment_prod(x, ids, 4)[:, 0].tolist() == [0.0, 1.0, 20.0, 1.0]


def _torch_segment_reduce(x, ids, s, red, g):
    """torch.segment_reduce's output and gradient for any ids: rows grouped by a stable sort
    of the kept ids (dropped rows get no gradient). Upstream gradients must be positive: its
    CPU backward (torch 2.13) gives every tied row the whole of a negative gradient."""
    x, ids, g = x.detach().cpu(), ids.cpu().long(), g.cpu()
    rows = torch.nonzero((ids >= 0) & (ids < s)).flatten()
    order = rows[torch.sort(ids[rows], stable=True).indices]
    xs = x[order].clone().requires_grad_()
    out = torch.segment_reduce(xs, red, lengths=torch.bincount(ids[order], minlength=s),
                               axis=0, unsafe=True)
    (gs,) = torch.autograd.grad(out, xs, g)
    dx = torch.zeros_like(x)
    dx[order] = gs
    return out, dx


def _torch_scatter_amax(x, ids, s, red, g):
    """scatter_reduce("amax" / "amin", include_self=False): output and gradient (no empty
    segments). The base is NaN: torch's backward counts a base element equal to the result
    as one more tie even with include_self=False (a zero base took a share of min's zeros)."""
    x, ids, g = x.detach().cpu().requires_grad_(), ids.cpu().long(), g.cpu()
    rows = torch.nonzero((ids >= 0) & (ids < s)).flatten()
    idx = ids[rows].view(-1, *[1] * (x.dim() - 1)).expand_as(x[rows])
    out = torch.full((s, *x.shape[1:]), float("nan"), dtype=x.dtype).scatter_reduce(
        0, idx, x[rows], "a" + red, include_self=False)
    (dx,) = torch.autograd.grad(out, x, g)
    return out, dx


def _tie_case(red, dtype, sort, device):
    """[12, 4] rows into 3 segments (row 7 dropped, row 10 out of range): column 0 has 2 tied
    maxima in segment 0 and 3 in segment 1, column 1 has 3, 2 and 2, column 2 none, column 3
    every row of each segment tied."""
    gen = torch.Generator().manual_seed(21)
    ids = torch.tensor([0, 1, 2, 0, 1, 0, 2, -1, 0, 1, 3, 2])
    x = torch.rand(12, 4, generator=gen, dtype=torch.float64)
    x[[0, 5], 0] = x[[1, 4, 9], 0] = 5.0
    x[[0, 3, 8], 1] = x[[1, 9], 1] = x[[2, 11], 1] = 5.0
    x[:, 3] = 2.0
    x[[7, 10]] = 5.0  # dropped rows: no share of any gradient
    if red == "min":
        x = -x
    if sort:
        order = torch.sort(ids, stable=True).indices
        ids, x = ids[order], x[order]
    g = torch.rand(3, 4, generator=gen, dtype=torch.float64) + 0.5
    return x.to(device, dtype).requires_grad_(), ids.to(device), g.to(device, dtype)


@pytest.mark.parametrize("fn,red", [(segment_max, "max"), (segment_min, "min")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("sort", [False, True])
def test_ties_split_the_gradient_evenly(fn, red, dtype, sort, device):
    """Every row equal to its segment's extremum (per column) gets grad / count, as
    torch.segment_reduce and scatter_reduce("amax" / "amin") give; the whole gradient went to
    the first tied row."""
    x, ids, g = _tie_case(red, dtype, sort, device)
    out = fn(x, ids, 3, indices_are_sorted=sort)
    (dx,) = torch.autograd.grad(out, x, g)
    for peer in (_torch_segment_reduce, _torch_scatter_amax):
        want_out, want = peer(x, ids, 3, red, g)
        assert torch.equal(out.cpu(), want_out)
        if dtype is torch.bfloat16:  # the interpreter truncates casts to bf16
            assert_close(dx.cpu(), want.double(), dtype, "grad")
        else:
            assert_bitwise_equal(dx.cpu(), want, "grad")
    assert_close(dx, ref.segment_backward(g, ids, red, 12, x), dtype, "grad")
    hit = (x.detach() == out[ids.clamp(0, 2)]) & ((ids >= 0) & (ids < 3))[:, None]
    counts = [[int(hit[ids == s_, c].sum()) for c in range(4)] for s_ in range(3)]
    assert counts == [[2, 3, 1, 4], [3, 2, 1, 3], [1, 2, 1, 3]]
    assert bool((dx[~hit] == 0).all()) and bool((dx[hit] != 0).all())


@pytest.mark.parametrize("fn,red", [(segment_max, "max"), (segment_min, "min")])
def test_nan_rows_share_the_gradient(fn, red, device):
    """A NaN output (NaN wins) splits its gradient among the segment's NaN rows, numbers get
    0, as torch.segment_reduce does. (scatter_reduce("amax") gives every row of such a
    segment a NaN gradient: not followed.) Columns without NaN split among tied numbers."""
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, inf, 2.0], [nan, inf, 2.0], [5.0, 1.0, 2.0], [nan, -inf, nan],
                      [3.0, 0.0, -inf], [3.0, 0.0, -inf]], device=device)
    if red == "min":
        x = -x
    x.requires_grad_()
    ids = torch.tensor([0, 0, 0, 0, 1, 1], device=device)
    g = torch.tensor([[4.0, 8.0, 16.0], [32.0, 64.0, 128.0]], device=device)
    out = fn(x, ids, 2)
    (dx,) = torch.autograd.grad(out, x, g)
    want_out, want = _torch_segment_reduce(x, ids, 2, red, g)
    assert torch.equal(out.cpu().nan_to_num(7.0), want_out.nan_to_num(7.0))
    assert_bitwise_equal(dx.cpu(), want, "grad")
    assert dx[:, 0].tolist() == [0.0, 2.0, 0.0, 2.0, 16.0, 16.0]
    assert dx[:, 2].tolist() == [0.0, 0.0, 0.0, 16.0, 64.0, 64.0]


@pytest.mark.parametrize("fn,red", [(segment_max, "max"), (segment_min, "min")])
def test_infinite_ties(fn, red, device):
    """+-inf ties like numbers: [inf, inf, 1] splits max's gradient in two, [-inf, -inf]
    (every row the extremum) splits both's."""
    inf = float("inf")
    x = torch.tensor([inf, inf, 1.0, -inf, -inf, inf, -inf, 2.0], device=device,
                     requires_grad=True)
    ids = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2], device=device)
    g = torch.tensor([2.0, 4.0, 8.0], device=device)
    out = fn(x, ids, 3)
    (dx,) = torch.autograd.grad(out, x, g)
    for peer in (_torch_segment_reduce, _torch_scatter_amax):
        want_out, want = peer(x, ids, 3, red, g)
        assert torch.equal(out.cpu(), want_out)
        assert_bitwise_equal(dx.cpu(), want, "grad")
    assert dx[3:5].tolist() == [2.0, 2.0]


@pytest.mark.parametrize("fn,red", [(segment_max, "max"), (segment_min, "min")])
@pytest.mark.parametrize("sort", [False, True])
def test_tie_gradient_is_deterministic(fn, red, sort, device):
    """Values from {0, 1, 2, 3}: most extrema are tied across many rows. Reruns are
    bit-identical (counts are exact integer sums, no float atomics) and match torch."""
    gen = torch.Generator().manual_seed(13)
    n, s = 3000, 40
    ids = torch.randint(-1, s + 1, (n,), generator=gen)
    if sort:
        ids = ids.sort().values
    x = torch.randint(0, 4, (n, 5), generator=gen).float().to(device).requires_grad_()
    ids = ids.to(device)
    g = torch.randn(s, 5, generator=gen).to(device)  # both signs: scatter_reduce's peer
    runs = []
    for _ in range(3):
        out = fn(x, ids, s, indices_are_sorted=sort)
        runs.append(torch.autograd.grad(out, x, g)[0])
    for dx in runs[1:]:
        assert_bitwise_equal(dx, runs[0], "grad")
    _, want = _torch_scatter_amax(x, ids, s, red, g)
    assert_bitwise_equal(runs[0].cpu(), want, "grad")
    _, want = _torch_segment_reduce(x, ids, s, red, g.abs())
    (dx,) = torch.autograd.grad(fn(x, ids, s, indices_are_sorted=sort), x, g.abs())
    assert_bitwise_equal(dx.cpu(), want, "grad")


def test_nan_wins_max(device):
    x = torch.tensor([[1.0], [float("nan")], [5.0], [float("nan")]], device=device,
                     requires_grad=True)
    ids = torch.zeros(4, dtype=torch.int64, device=device)
    out = segment_max(x, ids, 1)
    assert torch.isnan(out).all()
    (g,) = torch.autograd.grad(out, x, torch.ones_like(out))
    assert g[:, 0].tolist() == [0.0, 0.5, 0.0, 0.5]


def test_prod_gradient_with_zeros(device):
    x = torch.tensor([2.0, 0.0, 3.0, 0.0, 0.0, 4.0, 5.0], dtype=torch.float64, device=device,
                     requires_grad=True)
    ids = torch.tensor([0, 0, 0, 1, 1, 2, 2], device=device)
    (g,) = torch.autograd.grad(segment_prod(x, ids, 3).sum(), x)
    assert g.tolist() == [0.0, 6.0, 0.0, 0.0, 0.0, 5.0, 4.0]


def test_strided_inputs_and_int32_ids(device):
    gen = torch.Generator().manual_seed(3)
    big = torch.randn(50, 12, generator=gen).to(device)
    x = big[::2, 1::3]  # [25, 4] strided
    ids = torch.randint(0, 5, (50,), generator=gen, dtype=torch.int32).to(device)[::2]
    expect, _ = ref.segment_reduce(x, ids, 5, "sum")
    assert_close(segment_sum(x, ids, 5), expect, torch.float32)


def test_bf16_and_multidim_rows(device):
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(30, 2, 3, generator=gen).to(device, torch.bfloat16)
    ids = torch.randint(0, 4, (30,), generator=gen).to(device)
    out = segment_max(x, ids, 4)
    expect, _ = ref.segment_reduce(x, ids, 4, "max")
    assert out.shape == (4, 2, 3) and out.dtype == torch.bfloat16
    assert_close(out, expect, torch.bfloat16)


def test_num_segments_default_and_zero_rows(device):
    x = torch.ones(5, 2, device=device)
    ids = torch.tensor([0, 3, 3, 1, 0], device=device)
    assert segment_sum(x, ids).shape == (4, 2)
    empty = segment_max(torch.ones(0, 2, device=device), ids[:0], 2)
    assert torch.equal(empty, torch.full((2, 2), -float("inf"), device=device))


def test_deterministic_reruns(device):
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(1000, 7, generator=gen).to(device)
    ids = torch.randint(0, 11, (1000,), generator=gen).to(device)
    first = segment_sum(x, ids, 11)
    for _ in range(2):
        assert_bitwise_equal(first, segment_sum(x, ids, 11))


def test_errors(device):
    """Malformed calls raise typed errors (a wrong type also as a TypeError, a wrong value as
    a ValueError), before anything is allocated: a negative num_segments raised torch's
    RuntimeError from new_empty, 2.5 was truncated to 2, 2**40 tried to allocate the output."""
    x = torch.ones(4, 2, device=device)
    ids = torch.zeros(4, dtype=torch.int64, device=device)
    with pytest.raises(InvalidProblem, match="segment_ids must be 1-D"):
        segment_sum(x, ids[:3], 2)
    for bad in (torch.zeros(4, device=device), ids.short(), [0, 0, 0, 0]):
        with pytest.raises(TypeError) as info:
            segment_sum(x, bad, 2)
        assert isinstance(info.value, InvalidProblem) and isinstance(info.value, ArgumentTypeError)
    for s, err in ((-1, InvalidProblem), (2.5, TypeError), (True, TypeError),
                   (torch.tensor(2.0), TypeError), (1 << 40, Unsupported)):
        with pytest.raises(err, match="num_segments") as info:
            segment_max(x, ids, s)
        assert isinstance(info.value, BaracudaError)
    assert segment_sum(x, ids, torch.tensor(3)).shape == (3, 2)


@pytest.mark.parametrize("kind", list(FNS))
@pytest.mark.parametrize("rows", [5, 0])
def test_inner_dims_beyond_the_kernels_collapse(kind, rows, device):
    """Inner dims that collapse to more than the kernels' 4 strided dims (a permuted 6-D row,
    or a padded one; a permuted upstream gradient) run on a contiguous copy: they raised
    Unsupported, empty data included (an empty tensor is 'contiguous' whatever its strides)."""
    gen = torch.Generator().manual_seed(7)
    x0 = torch.rand(rows, 2, 3, 2, 3, 2, 3, generator=gen, dtype=torch.float64) + 0.5
    x = x0.permute(0, 6, 2, 4, 1, 5, 3).contiguous().permute(0, 4, 2, 6, 3, 5, 1)
    assert torch.equal(x, x0) and (rows == 0 or not x.is_contiguous())
    x = x.to(device).requires_grad_()
    ids = torch.tensor([0, 2, 2, 0, 3][:rows], dtype=torch.int64, device=device)
    out = FNS[kind](x, ids, 4)
    assert_close(out, ref.segment_reduce(x0, ids.cpu(), 4, kind)[0], torch.float64)
    g = torch.rand(4, 3, 2, 3, 2, 3, 2, generator=gen, dtype=torch.float64).to(device)
    g = g.permute(0, 6, 5, 4, 3, 2, 1)  # [4, 2, 3, 2, 3, 2, 3], strides reversed
    (dx,) = torch.autograd.grad(out, x, g)
    (dx_dense,) = torch.autograd.grad(FNS[kind](x, ids, 4), x, g.contiguous())
    assert_bitwise_equal(dx, dx_dense)
    assert_close(dx, ref.segment_backward(g, ids, kind, rows, x0), torch.float64)


def test_mean_backward_without_segments(device):
    """segment_mean's backward with num_segments=0 (every id dropped): its workspace (one
    count per segment) was empty, and the plan got no buffer to carve it from."""
    x = torch.randn(6, 3, device=device, requires_grad=True)
    ids = torch.tensor([0, 1, 1, 2, 0, 5], device=device)
    out = segment_mean(x, ids, 0)
    assert out.shape == (0, 3)
    (dx,) = torch.autograd.grad(out, x, torch.empty(0, 3, device=device))
    assert torch.equal(dx, torch.zeros_like(x))


def test_opcheck(device):
    from baracuda.families.segment.torch_api import _segment_reduce

    x = torch.randn(9, 3, dtype=torch.float64, device=device, requires_grad=True)
    ids = torch.tensor([0, 2, 2, 1, 0, 0, 3, 1, 2], device=device)
    for kind in ("sum", "max"):
        torch.library.opcheck(_segment_reduce.custom_op, (x, ids, 4, kind, False))


def test_compile_fullgraph(device):
    x = torch.randn(9, 3, device=device, requires_grad=True)
    ids = torch.tensor([0, 2, 2, 1, 0, 0, 3, 1, 2], device=device)

    def f(x, ids):
        return segment_max(x, ids, 4).sum() + segment_mean(x, ids, 4).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    (g1,) = torch.autograd.grad(compiled(x, ids), x)
    (g2,) = torch.autograd.grad(f(x, ids), x)
    assert torch.equal(g1, g2)


@pytest.mark.parametrize("n,s,drop", [(777, 13, -1), (5000, 5, 3), (1000, 300, -1),
                                      (100, 9, 0), (1, 1, -1), (301, 0, -1)])
def test_counting_sort_is_the_stable_sort(n, s, drop, device):
    """The one-pass counting sort (several chunks, several key blocks, dropped ids) gives
    torch's stable-sort permutation and the segment offsets, whatever the chunking."""
    from baracuda.backends.grouping import count_shape, segment_offsets, sort_layout

    assert count_shape(n, s) is not None
    gen = torch.Generator().manual_seed(n + s)
    ids = torch.randint(-2, s + 3, (n,), generator=gen)
    lay = sort_layout(n, s, True)
    ws = torch.full((lay.nbytes,), 0x5A, dtype=torch.uint8, device=device)  # poisoned
    views = lay.views(ws)
    perm = segment_offsets(ids.to(device), s, views, True, drop=drop)
    key = torch.where((ids >= 0) & (ids < s) & (ids != drop), ids, torch.tensor(s))
    order = torch.sort(key, stable=True)
    assert torch.equal(perm[:n].cpu().long(), order.indices)
    expect = torch.searchsorted(order.values, torch.arange(s + 2))
    assert torch.equal(views["offsets"].cpu().long(), expect)


@pytest.mark.parametrize("n,s,drop", [(1500, 11, -1), (777, 13, 4)])
def test_counting_and_radix_sorts_agree(n, s, drop, device):
    """Both sorts are the stable sort: the same permutation and offsets, so the reduction adds
    each segment's rows in the same (ascending row) order and the sums agree bit for bit."""
    from baracuda.backends.grouping import (
        Layout,
        count_shape,
        radix_sections,
        radix_sort,
        segment_offsets,
        sort_layout,
    )

    assert count_shape(n, s) is not None
    gen = torch.Generator().manual_seed(n)
    ids = torch.randint(-1, s + 2, (n,), generator=gen).to(device)
    got = []
    for lay in (sort_layout(n, s, True),
                Layout.build([("offsets", s + 2, torch.int32)] + radix_sections(n))):
        views = lay.views(torch.full((lay.nbytes,), 0x5A, dtype=torch.uint8, device=device))
        if "perm" in views:
            perm = segment_offsets(ids, s, views, True, drop=drop)
        else:
            perm = radix_sort(ids, s, views, drop=drop)
        got.append((perm[:n].clone(), views["offsets"].clone()))
    assert torch.equal(got[0][0], got[1][0]) and torch.equal(got[0][1], got[1][1])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("fn,red", [(segment_max, "max"), (segment_min, "min")])
def test_many_ties_at_scale_split_and_bitwise_reruns_gpu(fn, red):
    """Unsorted ids, values from {0, 1, 2, 3}: almost every (segment, column) extremum is
    tied across hundreds of rows; each tied row gets grad / count, the same bits on every
    rerun (counts are exact integer sums, whatever order the rows are grouped in)."""
    gen = torch.Generator().manual_seed(11)
    n, d, s = 1 << 18, 64, 512
    x = torch.randint(0, 4, (n, d), generator=gen).float().cuda().requires_grad_()
    ids = torch.randint(0, s, (n,), generator=gen).cuda()
    g_out = torch.randn(s, d, generator=gen).cuda()
    runs = []
    for _ in range(3):
        out = fn(x, ids, s)
        (g,) = torch.autograd.grad(out, x, g_out)
        runs.append((out, g))
    for out, g in runs[1:]:
        assert_bitwise_equal(out, runs[0][0])
        assert_bitwise_equal(g, runs[0][1])
    out, g = runs[0]
    hit = x.detach() == out[ids]  # rows attaining their segment's extremum, per column
    count = torch.zeros(s, d, device="cuda").index_add_(0, ids, hit.float())
    want = torch.where(hit, g_out[ids] / count[ids], 0.0)
    assert_bitwise_equal(g, want)
    _, want_torch = _torch_scatter_amax(x, ids, s, red, g_out)
    assert_close(g, want_torch.double(), torch.float32, "grad")
