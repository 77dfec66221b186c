"""Indexing through the torch frontend: values and gradients vs torch, duplicates, error
parity, opcheck, torch.compile, determinism."""

from __future__ import annotations

import pytest
import torch

from baracuda.families.indexing import torch_api as bt
from helpers import assert_bitwise_equal


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_index_select_values_and_grad(device):
    x = torch.randn(7, 5, 3, generator=_g(), dtype=torch.float64).to(device)
    idx = torch.tensor([6, 0, 0, 3, 6, 6], device=device)
    for dim in (0, 1, -1):
        i = idx % x.shape[dim]
        a = x.clone().requires_grad_()
        b = x.clone().requires_grad_()
        out = bt.index_select(a, dim, i)
        exp = torch.index_select(b, dim, i)
        assert torch.equal(out, exp)
        g = torch.randn(exp.shape, generator=_g(1), dtype=torch.float64).to(device)
        torch.testing.assert_close(torch.autograd.grad(out, a, g)[0],
                                   torch.autograd.grad(exp, b, g)[0])


def test_index_select_int_and_strided(device):
    x = torch.arange(60, device=device).view(6, 10)[:, ::2]
    idx = torch.tensor([4, 1, 1], dtype=torch.int32, device=device)
    assert torch.equal(bt.index_select(x, 1, idx), x.index_select(1, idx))


def test_gather_and_take_along_dim(device):
    x = torch.randn(4, 6, generator=_g(2), dtype=torch.float64).to(device).requires_grad_()
    idx = torch.randint(0, 6, (3, 9), generator=_g(3)).to(device)
    out = bt.gather(x, 1, idx)
    assert torch.equal(out, torch.gather(x, 1, idx))
    torch.autograd.gradcheck(lambda t: bt.gather(t, 1, idx), (x,), fast_mode=True)
    i2 = torch.randint(0, 4, (5, 1), generator=_g(4)).to(device)
    assert torch.equal(bt.take_along_dim(x, i2, 0), torch.take_along_dim(x, i2, 0))
    i3 = torch.randint(0, 24, (7,), generator=_g(5)).to(device)
    assert torch.equal(bt.take_along_dim(x, i3), torch.take_along_dim(x, i3))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(reduce, include_self, device):
    x = torch.randn(5, 7, generator=_g(6), dtype=torch.float64).to(device)
    src = torch.randn(5, 9, generator=_g(7), dtype=torch.float64).to(device)
    idx = torch.randint(0, 7, (5, 8), generator=_g(8)).to(device)
    out = bt.scatter_reduce(x, 1, idx, src, reduce, include_self=include_self)
    exp = x.scatter_reduce(1, idx, src, reduce, include_self=include_self)
    torch.testing.assert_close(out, exp)
    if reduce != "prod":
        a, s = x.clone().requires_grad_(), src.clone().requires_grad_()
        torch.autograd.gradcheck(
            lambda a, s: bt.scatter_reduce(a, 1, idx, s, reduce, include_self=include_self),
            (a, s), fast_mode=True)


def test_scatter_add_index_add_and_scatter(device):
    x = torch.randn(6, 4, generator=_g(9), dtype=torch.float64).to(device)
    src = torch.randn(8, 4, generator=_g(10), dtype=torch.float64).to(device)
    idx = torch.randint(0, 6, (8, 4), generator=_g(11)).to(device)
    torch.testing.assert_close(bt.scatter_add(x, 0, idx, src), x.scatter_add(0, idx, src))
    vec = torch.tensor([5, 0, 5, 2, 1, 5, 0, 3], device=device)
    torch.testing.assert_close(bt.index_add(x, 0, vec, src, alpha=2.0),
                               x.index_add(0, vec, src, alpha=2.0))
    uniq = torch.stack([torch.randperm(6, generator=_g(12))[:3] for _ in range(4)], 1).to(device)
    torch.testing.assert_close(bt.scatter(x, 0, uniq, src[:3]), x.scatter(0, uniq, src[:3]))
    torch.testing.assert_close(bt.scatter(x, 0, uniq, value=1.5), x.scatter(0, uniq, 1.5))
    # duplicates: the last index along dim wins
    dup = torch.zeros(3, 1, dtype=torch.int64, device=device)
    out = bt.scatter(x[:, :1], 0, dup, torch.tensor([[1.0], [2.0], [3.0]], device=device,
                                                    dtype=torch.float64))
    assert out[0, 0] == 3.0


def test_index_add_gradcheck(device):
    x = torch.randn(5, 3, generator=_g(13), dtype=torch.float64).to(device).requires_grad_()
    src = torch.randn(4, 3, generator=_g(14), dtype=torch.float64).to(device).requires_grad_()
    vec = torch.tensor([4, 0, 4, 2], device=device)
    torch.autograd.gradcheck(lambda a, s: bt.index_add(a, 0, vec, s, alpha=0.5), (x, src),
                             fast_mode=True)


def test_index_copy_and_index_put(device):
    x = torch.randn(6, 4, generator=_g(20), dtype=torch.float64).to(device)
    src = torch.randn(3, 4, generator=_g(21), dtype=torch.float64).to(device)
    idx = torch.tensor([5, 0, 2], device=device)
    torch.testing.assert_close(bt.index_copy(x, 0, idx, src), x.index_copy(0, idx, src))
    a, s = x.clone().requires_grad_(), src.clone().requires_grad_()
    torch.autograd.gradcheck(lambda a, s: bt.index_copy(a, 0, idx, s), (a, s), fast_mode=True)
    dup = torch.tensor([1, 1, 4], device=device)
    out = bt.index_copy(x, 0, dup, src)
    assert torch.equal(out[1], src[1])  # the last duplicate wins
    rows = torch.tensor([0, -1, 2, 0], device=device)
    cols = torch.tensor([1, 3, 0, 1], device=device)
    v = torch.randn(4, generator=_g(22), dtype=torch.float64).to(device)
    torch.testing.assert_close(bt.index_put(x, (rows, cols), v, accumulate=True),
                               x.index_put((rows, cols), v, accumulate=True))
    torch.testing.assert_close(bt.index_put(x, (rows[1:],), src, accumulate=False),
                               x.index_put((rows[1:],), src, accumulate=False))
    vv = v.clone().requires_grad_()
    torch.autograd.gradcheck(lambda a, v: bt.index_put(a, (rows, cols), v, accumulate=True),
                             (a, vv), fast_mode=True)
    with pytest.raises(IndexError):
        bt.index_put(x, (torch.tensor([6], device=device),), v[:1])


def test_errors(device):
    x = torch.randn(4, 3, device=device)
    if device.type == "cpu":  # CUDA: a device-side assert, as torch (it would end the process)
        with pytest.raises(IndexError):
            bt.index_select(x, 0, torch.tensor([4], device=device))
    with pytest.raises(IndexError):
        bt.index_select(x, 2, torch.tensor([0], device=device))
    with pytest.raises(RuntimeError):
        bt.index_add(x, 0, torch.tensor([7], device=device), x[:1])
    with pytest.raises(RuntimeError):
        bt.gather(x, 1, torch.tensor([[3]], device=device))
    with pytest.raises(RuntimeError):
        bt.gather(x, 0, torch.zeros(5, 4, dtype=torch.int64, device=device))
    with pytest.raises(RuntimeError):
        bt.scatter_reduce(x, 0, torch.zeros(1, 1, dtype=torch.int64, device=device),
                          x, "max")


def test_deterministic_backward(device):
    x = torch.randn(50, 6, generator=_g(15)).to(device).requires_grad_()
    idx = torch.randint(0, 50, (400,), generator=_g(16)).to(device)
    g = torch.randn(400, 6, generator=_g(17)).to(device)
    (a,) = torch.autograd.grad(bt.index_select(x, 0, idx), x, g)
    (b,) = torch.autograd.grad(bt.index_select(x, 0, idx), x, g)
    assert_bitwise_equal(a, b)


def test_opcheck_and_compile(device):
    from baracuda.families.indexing.torch_api import _gather, _index_select

    x = torch.randn(5, 4, dtype=torch.float64, device=device, requires_grad=True)
    idx = torch.tensor([1, 4, 4], device=device)
    torch.library.opcheck(_index_select.custom_op, (x, 0, idx))
    torch.library.opcheck(_gather.custom_op, (x, 1, torch.tensor([[0, 3]] * 5, device=device)))

    def f(x, idx):
        return bt.index_select(x, 0, idx).sum() + bt.gather(x, 0, idx[None].expand(2, 3)).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    (g1,) = torch.autograd.grad(compiled(x, idx), x)
    (g2,) = torch.autograd.grad(f(x, idx), x)
    assert torch.equal(g1, g2)


def test_mask_ops_match_torch(device):
    x = torch.randn(4, 5, generator=_g(30), dtype=torch.float64).to(device)
    x[x.abs() < 0.5] = 0
    m = (torch.rand(1, 5, generator=_g(31)) > 0.5).to(device)
    assert torch.equal(bt.masked_fill(x, m, 2.0), x.masked_fill(m, 2.0))
    assert torch.equal(bt.nonzero(x), torch.nonzero(x))
    for a, b in zip(bt.nonzero(x, as_tuple=True), torch.nonzero(x, as_tuple=True)):
        assert torch.equal(a, b)
    assert torch.equal(bt.masked_select(x, m), torch.masked_select(x, m))
    mm = m.expand(4, 5)
    src = torch.randn(30, generator=_g(32), dtype=torch.float64).to(device)
    assert torch.equal(bt.masked_scatter(x, mm, src), x.masked_scatter(mm, src))
    i = torch.tensor([[0, 3], [2, 2]], device=device)
    assert torch.equal(bt.one_hot(i), torch.nn.functional.one_hot(i))
    assert torch.equal(bt.one_hot(i, 6), torch.nn.functional.one_hot(i, 6))
    xr = x.clone().requires_grad_()
    torch.autograd.gradcheck(lambda t: bt.masked_fill(t, m, 1.0), (xr,), fast_mode=True)
    torch.autograd.gradcheck(lambda t: bt.masked_select(t, m), (xr,), fast_mode=True)
    sr = src.clone().requires_grad_()
    torch.autograd.gradcheck(lambda t, s: bt.masked_scatter(t, mm, s), (xr, sr),
                             fast_mode=True)


def test_mask_errors(device):
    x = torch.randn(3, device=device)
    with pytest.raises(RuntimeError):
        bt.masked_fill(x, torch.ones(3, device=device), 1.0)
    with pytest.raises(RuntimeError):
        bt.one_hot(torch.tensor([-1], device=device))
    with pytest.raises(RuntimeError):
        bt.one_hot(torch.tensor([3], device=device), 3)
    with pytest.raises(RuntimeError):
        bt.masked_scatter(x, torch.ones(3, dtype=torch.bool, device=device), x[:2])


def test_sorted_scatter_path_long_lines(device):
    # a long scatter dim (the GNN message-passing shape) takes the sorted-key candidate
    from baracuda.families.indexing.descriptors import ScatterDescriptor, ScatterKind
    from baracuda.families.indexing.plans import ScatterReducePlan

    desc = ScatterDescriptor((50, 4), (600, 4), 0, "f64", "i64", ScatterKind.SUM, True, True)
    assert ScatterReducePlan.select(desc).candidate.name == "triton_sorted_scatter"
    x = torch.randn(50, 4, generator=_g(40), dtype=torch.float64).to(device)
    src = torch.randn(600, 4, generator=_g(41), dtype=torch.float64).to(device)
    idx = torch.randint(0, 50, (600, 4), generator=_g(42)).to(device)
    out = bt.scatter_add(x, 0, idx, src)
    torch.testing.assert_close(out, x.scatter_add(0, idx, src))
    assert_bitwise_equal(out, bt.scatter_add(x, 0, idx, src))
    torch.testing.assert_close(bt.scatter(x, 0, idx[:1], src[:1]), x.scatter(0, idx[:1], src[:1]))


def test_compile_scatter_and_masks(device):
    x = torch.randn(6, 4, dtype=torch.float64, device=device, requires_grad=True)
    idx = torch.tensor([[0, 5, 5, 1]] * 3, device=device)
    m = torch.tensor([True, False, True, False], device=device)

    def f(x):
        a = bt.scatter_add(x, 0, idx, x[:3])
        b = bt.index_add(x, 0, idx[0], x[:4])
        return (a * b).sum() + bt.masked_fill(x, m, 0.5).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    (g1,) = torch.autograd.grad(compiled(x), x)
    (g2,) = torch.autograd.grad(f(x), x)
    torch.testing.assert_close(g1, g2)


# -- torch's semantics on its own OpInfo samples (issue #32) ---------------------------------
def _same_as_torch(ours, theirs, *inputs, seed=50, defined=lambda y: y):
    """ours(*inputs) against theirs(*inputs): values (the part `defined` selects) and the
    gradient of every float input."""
    a = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    b = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out, exp = ours(*a), theirs(*b)
    torch.testing.assert_close(defined(out), defined(exp))
    wrt = [(x, y) for x, y in zip(a, b) if x.requires_grad]
    g = torch.randn(exp.shape, generator=_g(seed), dtype=exp.dtype).to(exp.device)
    got = torch.autograd.grad(out, [x for x, _ in wrt], g, allow_unused=True)
    want = torch.autograd.grad(exp, [y for _, y in wrt], g, allow_unused=True)
    for gx, gy, (x, _) in zip(got, want, wrt):
        torch.testing.assert_close(torch.zeros_like(x) if gx is None else gx,
                                   torch.zeros_like(x) if gy is None else gy)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_copy_duplicates_source_grad(dim, device):
    # torch's source gradient is grad.index_select(dim, index): every duplicate gets it
    x = torch.randn(5, 6, generator=_g(60), dtype=torch.float64).to(device)
    idx = torch.tensor([0, 0, 3, 0, 3], device=device) % x.shape[dim]
    shape = list(x.shape)
    shape[dim] = idx.numel()
    src = torch.randn(shape, generator=_g(61), dtype=torch.float64).to(device)
    # which duplicate's value lands is unspecified on CUDA (torch's too): the rows no index
    # names are compared, the gradients everywhere
    untouched = torch.tensor([1, 2, 4], device=device) % x.shape[dim]
    _same_as_torch(lambda a, s: bt.index_copy(a, dim, idx, s),
                   lambda a, s: torch.index_copy(a, dim, idx, s), x, src,
                   defined=lambda y: y.index_select(dim, untouched))


def test_scatter_duplicates_source_grad(device):
    x = torch.randn(4, 5, generator=_g(62), dtype=torch.float64).to(device)
    src = torch.randn(3, 5, generator=_g(63), dtype=torch.float64).to(device)
    idx = torch.zeros(3, 5, dtype=torch.int64, device=device)  # all onto row 0
    g = torch.randn(4, 5, generator=_g(64), dtype=torch.float64).to(device)
    s1, s2 = src.clone().requires_grad_(), src.clone().requires_grad_()
    (a,) = torch.autograd.grad(bt.scatter(x, 0, idx, s1), s1, g)
    (b,) = torch.autograd.grad(torch.scatter(x, 0, idx, s2), s2, g)
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((4,), (3, 4)), ((), ())])
def test_masked_fill_tensor_value_grad(shapes, device):
    xs, ms = shapes
    x = torch.randn(xs, generator=_g(65), dtype=torch.float64).to(device)
    m = (torch.rand(ms, generator=_g(66)) > 0.4).to(device)
    v = torch.randn((), generator=_g(67), dtype=torch.float64).to(device)
    _same_as_torch(lambda a, v: bt.masked_fill(a, m, v),
                   lambda a, v: torch.masked_fill(a, m, v), x, v)


@pytest.mark.filterwarnings("ignore:The reduce argument")
def test_scatter_zero_dim_and_reduce(device):
    x, s = (torch.randn((), generator=_g(s), dtype=torch.float64).to(device) for s in (68, 69))
    i = torch.tensor(0, device=device)
    _same_as_torch(lambda a, b: bt.scatter(a, 0, i, b), lambda a, b: torch.scatter(a, 0, i, b),
                   x, s)
    _same_as_torch(lambda a: bt.scatter(a, 0, i, value=2.5),
                   lambda a: torch.scatter(a, 0, i, value=2.5), x)
    y = torch.randn(5, 4, generator=_g(70), dtype=torch.float64).to(device)
    idx = torch.randint(0, 5, (3, 4), generator=_g(71)).to(device)
    src = torch.randn(3, 4, generator=_g(72), dtype=torch.float64).to(device)
    for r in ("add", "multiply"):  # deprecated in torch, still computed
        torch.testing.assert_close(bt.scatter(y, 0, idx, src, reduce=r),
                                   torch.scatter(y, 0, idx, src, reduce=r))
        torch.testing.assert_close(bt.scatter(x, 0, i, value=1.5, reduce=r),
                                   torch.scatter(x, 0, i, value=1.5, reduce=r))
    with pytest.raises(RuntimeError, match="add or multiply"):
        bt.scatter(y, 0, idx, src, reduce="mean")


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_grad(include_self, device):
    x = torch.randn(6, 4, generator=_g(73), dtype=torch.float64).to(device)
    src = torch.randn(8, 4, generator=_g(74), dtype=torch.float64).to(device)
    x[1, 2] = 0.0
    src[0, 0] = src[3, 1] = src[5, 1] = 0.0  # a lone zero and two zeros sharing a target
    idx = torch.randint(0, 6, (8, 4), generator=_g(75)).to(device)
    idx[3, 1] = idx[5, 1] = 2
    _same_as_torch(lambda a, s: bt.scatter_reduce(a, 0, idx, s, "prod",
                                                  include_self=include_self),
                   lambda a, s: torch.scatter_reduce(a, 0, idx, s, "prod",
                                                     include_self=include_self), x, src)


def test_take_along_dim_negative_indices(device):
    x = torch.randn(4, 5, generator=_g(76), dtype=torch.float64).to(device)
    i = torch.randint(-5, 5, (4, 3), generator=_g(81)).to(device)
    _same_as_torch(lambda a: bt.take_along_dim(a, i, 1),
                   lambda a: torch.take_along_dim(a, i, 1), x)
    i0 = torch.tensor([[-4, -1, 3, 0, -2]], device=device)
    _same_as_torch(lambda a: bt.take_along_dim(a, i0, 0),
                   lambda a: torch.take_along_dim(a, i0, 0), x)
    with pytest.raises(RuntimeError):  # torch too: no wrap when dim is None
        bt.take_along_dim(x, torch.tensor([-1], device=device))


def test_masked_scatter_input_broadcasts(device):
    x = torch.randn(5, generator=_g(77), dtype=torch.float64).to(device)
    m = (torch.rand(4, 5, generator=_g(78)) > 0.5).to(device)
    src = torch.randn(4, 5, generator=_g(79), dtype=torch.float64).to(device)
    _same_as_torch(lambda a, s: bt.masked_scatter(a, m, s),
                   lambda a, s: torch.masked_scatter(a, m, s), x, src)


@pytest.mark.parametrize("index", [(0,), (2, 0), (0, 3, 2)])
@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.float32])
def test_gather_empty_index(index, dtype, device):
    # torch takes an empty index of any rank, extents and dtype
    x = torch.randn(5, generator=_g(80), dtype=torch.float64).to(device)
    idx = torch.empty(index, dtype=dtype, device=device)
    _same_as_torch(lambda a: bt.gather(a, 0, idx), lambda a: torch.gather(a, 0, idx), x)


@pytest.mark.parametrize("mask_shape", [(5,), (5, 6)])
def test_index_put_boolean_mask_as_torch(mask_shape, device):
    """A boolean index stands for its nonzero() positions (a CPU mask with a tensor on the
    device too); a mask of the wrong shape raises torch's IndexError."""
    x = torch.randn(5, 6, generator=_g(70), dtype=torch.float64).to(device)
    mask = torch.rand(mask_shape, generator=_g(71)) > 0.4
    n = int(mask.sum())
    values = torch.randn((n, 6) if len(mask_shape) == 1 else (n,), generator=_g(72),
                         dtype=torch.float64).to(device)
    for accumulate in (False, True):
        _same_as_torch(lambda a, v, acc=accumulate: bt.index_put(a, (mask,), v, acc),
                       lambda a, v, acc=accumulate: torch.index_put(a, (mask.to(device),), v,
                                                                    acc),
                       x, values)
    with pytest.raises(IndexError, match="shape of the mask"):
        bt.index_put(x, (torch.ones(4, dtype=torch.bool),), values)


@pytest.mark.parametrize("selected", [True, False])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("vshape", [(), (4,), (3, 4)])
def test_index_put_lone_zero_dim_bool(selected, accumulate, vshape):
    """A lone 0-d boolean index writes every element (True) or none (False); values broadcast
    to the input's shape. (torch's kernels assert internally for most of these, so the
    expectation is written out; scalar values without accumulate are compared with CPU torch.)"""
    from conftest import DEVICE

    x = torch.randn(3, 4, device=DEVICE)
    x[0, 0] = float("inf")
    v = torch.randn(vshape, device=DEVICE)
    got = bt.index_put(x, (torch.tensor(selected, device=DEVICE),), v, accumulate=accumulate)
    full = v.expand(3, 4)
    want = (x + full if accumulate else full) if selected else x
    assert torch.equal(got, want)
    if vshape == () and not accumulate:  # torch's CUDA kernel asserts here too: CPU torch
        want = torch.index_put(x.cpu(), (torch.tensor(selected),), v.cpu())
        assert torch.equal(got.cpu(), want)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        bt.index_put(x, (torch.tensor(selected, device=DEVICE),), torch.randn(2, 4,
                                                                             device=DEVICE))


def test_index_put_none_index_is_a_type_error_as_torch():
    x = torch.randn(3, 4)
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 1"):
        torch.index_put(x, (None, torch.tensor([0])), torch.tensor(1.0))
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 1"):
        bt.index_put(x, (None, torch.tensor([0])), torch.tensor(1.0))
