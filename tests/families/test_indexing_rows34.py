"""take / put / index_fill / index_reduce / unravel_index / choose through the torch frontend:
values and gradients vs torch (float64), duplicates, layouts, empty and 0-d, error parity,
determinism."""

from __future__ import annotations

import pytest
import torch

from baracuda.families.indexing import torch_api as bt
from helpers import assert_bitwise_equal

pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _r(*shape, seed=0, dtype=torch.float64, device="cpu"):
    return torch.randn(*shape, generator=_g(seed), dtype=dtype).to(device)


def _grads(fn_ours, fn_torch, inputs, g):
    a = [t.clone().requires_grad_() for t in inputs]
    b = [t.clone().requires_grad_() for t in inputs]
    out_a, out_b = fn_ours(*a), fn_torch(*b)
    torch.testing.assert_close(out_a, out_b, rtol=1e-13, atol=1e-15)
    ga = torch.autograd.grad(out_a, a, g)
    gb = torch.autograd.grad(out_b, b, g)
    for p, q in zip(ga, gb):
        torch.testing.assert_close(p, q)


# -- take ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_take_values_and_grad(layout, device):
    base = _r(6, 10, seed=1, device=device)
    x = {"contiguous": base, "transposed": base.t(), "sliced": base[1:5, ::3]}[layout]
    n = x.numel()
    idx = torch.tensor([[0, n - 1, -1, 3], [3, 3, -n, 1]], device=device)
    g = _r(2, 4, seed=2, device=device)
    _grads(lambda t: bt.take(t, idx), lambda t: torch.take(t, idx), [x], g)


def test_take_empty_zero_dim_and_errors(device):
    x = _r(3, 4, seed=3, device=device)
    empty = torch.empty(0, 2, dtype=torch.int64, device=device)
    assert bt.take(x, empty).shape == (0, 2)
    s = torch.tensor(2.5, dtype=torch.float64, device=device)
    i0 = torch.tensor(-1, device=device)
    assert torch.equal(bt.take(s, i0), torch.take(s, i0))
    with pytest.raises(RuntimeError, match="Expected a long tensor"):
        bt.take(x, torch.tensor([1], dtype=torch.int32, device=device))
    if device.type == "cpu":  # CUDA: a device-side assert, as torch's (it ends the process)
        for bad in (12, -13):
            with pytest.raises(IndexError, match="out of range"):
                bt.take(x, torch.tensor([0, bad], device=device))


# -- put ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("accumulate", [False, True])
def test_put_values_and_grad(accumulate, device):
    x = _r(4, 5, seed=4, device=device)
    idx = torch.tensor([3, -1, 7, 3, 19, 0], device=device)
    src = _r(2, 3, seed=5, device=device)
    out = bt.put(x, idx, src, accumulate)
    exp = x.clone()
    flat = exp.view(-1)
    for i, v in zip(idx.tolist(), src.reshape(-1).tolist()):
        flat[i % 20] = flat[i % 20] + v if accumulate else v  # duplicates: the last one wins
    torch.testing.assert_close(out, exp, rtol=1e-15, atol=1e-15)
    g = _r(4, 5, seed=6, device=device)
    a, s = x.clone().requires_grad_(), src.clone().requires_grad_()
    ga = torch.autograd.grad(bt.put(a, idx, s, accumulate), (a, s), g)
    b, t = x.clone().requires_grad_(), src.clone().requires_grad_()
    gb = torch.autograd.grad(b.put(idx, t, accumulate), (b, t), g)
    for p, q in zip(ga, gb):
        torch.testing.assert_close(p, q)


def test_put_inplace_transposed_and_errors(device):
    x = _r(4, 3, seed=7, device=device).t()
    idx = torch.tensor([0, 5, -2], device=device)
    src = _r(3, seed=8, device=device)
    exp = x.put(idx, src)
    y = x.clone()
    assert bt.put_(y, idx, src) is y
    torch.testing.assert_close(y, exp, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="long tensor"):
        bt.put(x, idx.int(), src)
    with pytest.raises(RuntimeError, match="same dtype"):
        bt.put(x, idx, src.float())
    with pytest.raises(IndexError, match="same number of elements"):
        bt.put(x, idx, src[:2])
    with pytest.raises(IndexError, match="out of range"):
        bt.put(x, torch.tensor([0, 12, 1], device=device), src)


# -- index_fill ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_fill_values_and_value_grad(dim, device):
    x = _r(4, 6, 3, seed=9, device=device)
    n = x.shape[dim]
    idx = torch.tensor([1, -1, 1, 0], device=device)
    for value in (2.5, -7):
        assert torch.equal(bt.index_fill(x, dim, idx, value), x.index_fill(dim, idx, value))
    pos = idx % n  # torch's own backward does not wrap negative indices
    v = torch.tensor(1.5, dtype=torch.float64, device=device)
    g = _r(*x.shape, seed=10, device=device)
    _grads(lambda t, w: bt.index_fill(t, dim, pos, w), lambda t, w: t.index_fill(dim, pos, w),
           [x, v], g)


def test_index_fill_ints_zero_dim_inplace_and_errors(device):
    x = torch.arange(24, device=device).view(4, 6)[:, ::2]
    idx = torch.tensor([2], device=device)
    assert torch.equal(bt.index_fill(x, 1, idx, 9), x.index_fill(1, idx, 9))
    s = torch.tensor(3.0, device=device)
    assert torch.equal(bt.index_fill(s, 0, torch.tensor([0], device=device), 1.0),
                       s.index_fill(0, torch.tensor([0], device=device), 1.0))
    y = _r(3, 4, seed=11, device=device)
    exp = y.index_fill(0, torch.tensor([2], device=device), 0.5)
    bt.index_fill_(y, 0, torch.tensor([2], device=device), 0.5)
    assert torch.equal(y, exp)
    assert bt.index_fill(y, 0, idx[:0], 1.0).equal(y)
    with pytest.raises(IndexError, match="int64"):
        bt.index_fill(y, 0, idx.int(), 1.0)
    with pytest.raises(IndexError, match="out of bounds"):
        bt.index_fill(y, 1, torch.tensor([4], device=device), 1.0)
    with pytest.raises(RuntimeError, match="vector/scalar"):
        bt.index_fill(y, 1, idx[None, None], 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value"):
        bt.index_fill(y, 1, idx, torch.ones(2, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        bt.index_fill(y, 2, idx, 1.0)


# -- index_reduce -------------------------------------------------------------------------------
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_values_and_grads(reduce, include_self, device):
    x = _r(7, 5, seed=12, device=device)
    idx = torch.tensor([0, 2, 2, 5, 0, 0, 2], device=device)  # rows 1, 3, 4, 6: no source
    src = _r(7, 5, seed=13, device=device)
    g = _r(7, 5, seed=14, device=device)
    for dim, xs, ss, gg in ((0, x, src, g), (1, x.t(), src.t(), g.t())):
        _grads(lambda t, s, d=dim: bt.index_reduce(t, d, idx, s, reduce,
                                                   include_self=include_self),
               lambda t, s, d=dim: t.index_reduce(d, idx, s, reduce, include_self=include_self),
               [xs, ss], gg)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_index_reduce_ties_share_gradient(reduce, device):
    x = torch.tensor([[1.0, 2.0], [3.0, 0.0], [5.0, 5.0]], dtype=torch.float64, device=device)
    src = torch.tensor([[1.0, 2.0], [1.0, 7.0], [5.0, 2.0], [5.0, 5.0]], dtype=torch.float64,
                       device=device)
    idx = torch.tensor([0, 0, 2, 2], device=device)
    g = _r(3, 2, seed=15, device=device)
    for inc in (True, False):
        _grads(lambda t, s, i=inc: bt.index_reduce(t, 0, idx, s, reduce, include_self=i),
               lambda t, s, i=inc: t.index_reduce(0, idx, s, reduce, include_self=i), [x, src],
               g)


def test_index_reduce_zeros_in_prod_grad(device):
    x = torch.tensor([[2.0, 0.0], [1.0, 3.0]], dtype=torch.float64, device=device)
    src = torch.tensor([[0.0, 4.0], [5.0, 0.0], [0.0, 2.0]], dtype=torch.float64, device=device)
    idx = torch.tensor([0, 0, 1], device=device)
    g = _r(2, 2, seed=16, device=device)
    for inc in (True, False):
        _grads(lambda t, s, i=inc: bt.index_reduce(t, 0, idx, s, "prod", include_self=i),
               lambda t, s, i=inc: t.index_reduce(0, idx, s, "prod", include_self=i), [x, src],
               g)


def test_index_reduce_edges_and_errors(device):
    x = _r(5, 3, seed=17, device=device)
    empty = torch.empty(0, dtype=torch.int64, device=device)
    assert torch.equal(bt.index_reduce(x, 0, empty, x[:0], "amax"), x)
    i32 = torch.tensor([4, 4, 1], dtype=torch.int32, device=device)
    src = _r(3, 3, seed=18, device=device)
    assert torch.equal(bt.index_reduce(x, 0, i32, src, "amin", include_self=False),
                       x.index_reduce(0, i32, src, "amin", include_self=False))
    s = torch.tensor(2.0, dtype=torch.float64, device=device)
    one = torch.tensor([0], device=device)
    assert torch.equal(bt.index_reduce(s, 0, one, torch.tensor(3.0, dtype=torch.float64,
                                                               device=device), "prod"),
                       s.index_reduce(0, one, torch.tensor(3.0, dtype=torch.float64,
                                                           device=device), "prod"))
    y = x.clone()
    assert bt.index_reduce_(y, 0, i32, src, "mean") is y
    torch.testing.assert_close(y, x.index_reduce(0, i32, src, "mean"))
    with pytest.raises(RuntimeError, match="one of prod, mean, amax or amin"):
        bt.index_reduce(x, 0, i32, src, "sum")
    with pytest.raises(IndexError, match="out of range"):
        bt.index_reduce(x, 0, torch.tensor([0, -1, 1], device=device), src, "amax")
    with pytest.raises(RuntimeError, match="Number of indices"):
        bt.index_reduce(x, 0, i32[:2], src, "amax")
    with pytest.raises(RuntimeError, match="same scalar type"):
        bt.index_reduce(x, 0, i32, src.float(), "amax")
    with pytest.raises(RuntimeError, match="int32/int64"):
        bt.index_reduce(x, 0, i32.float(), src, "amax")


def test_index_reduce_nan_as_torch(device):
    nan = float("nan")
    x = torch.tensor([[1.0, nan], [2.0, 3.0]], dtype=torch.float64, device=device)
    src = torch.tensor([[nan, 1.0], [5.0, 2.0], [0.0, 9.0]], dtype=torch.float64, device=device)
    idx = torch.tensor([0, 0, 1], device=device)
    for reduce in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            got = bt.index_reduce(x, 0, idx, src, reduce, include_self=inc)
            exp = x.index_reduce(0, idx, src, reduce, include_self=inc)
            torch.testing.assert_close(got, exp, equal_nan=True)


def test_index_reduce_deterministic(device):
    x = torch.randn(9, 2, generator=_g(19)).to(device)
    idx = torch.randint(0, 9, (60,), generator=_g(20)).to(device)
    src = torch.randn(60, 2, generator=_g(21)).to(device)
    for reduce in ("mean",):
        a = bt.index_reduce(x, 0, idx, src, reduce)
        b = bt.index_reduce(x, 0, idx, src, reduce)
        assert_bitwise_equal(a, b)
        torch.testing.assert_close(a, x.index_reduce(0, idx, src, reduce), rtol=1e-4, atol=1e-5)


# -- unravel_index / choose ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_unravel_index_matches_torch(dtype, device):
    idx = torch.tensor([[0, 7, -1], [23, 100, -25]], dtype=dtype, device=device)
    for shape in ((2, 3, 4), 24, (1, 24), [4, 1, 6]):
        got, exp = bt.unravel_index(idx, shape), torch.unravel_index(idx, shape)
        assert len(got) == len(exp)
        for a, b in zip(got, exp):
            assert a.dtype == torch.int64 and torch.equal(a, b)
    z = torch.tensor(5, device=device)
    assert [t.item() for t in bt.unravel_index(z, (2, 3))] == [1, 2]
    assert bt.unravel_index(z, ()) == ()
    assert bt.unravel_index(idx[:, :0], (2, 3))[0].shape == (2, 0)


def test_unravel_index_errors(device):
    with pytest.raises(TypeError, match="integer dtype"):
        bt.unravel_index(torch.tensor([1.0], device=device), (2, 3))
    with pytest.raises(TypeError, match="integer dtype"):
        bt.unravel_index(torch.tensor([True], device=device), (2, 3))
    with pytest.raises(ValueError, match="negative values"):
        bt.unravel_index(torch.tensor([1], device=device), (2, -3))
    with pytest.raises(TypeError, match="only contain ints"):
        bt.unravel_index(torch.tensor([1], device=device), (2, 3.0))


def test_choose_modes_and_grad(device):
    a = torch.tensor([[0, 2, 1, -1], [3, 1, 0, 2]], device=device)
    c = [_r(2, 4, seed=22, device=device), _r(4, seed=23, device=device),
         _r(2, 1, seed=24, device=device)]
    full = torch.stack([t.expand(2, 4) for t in c])
    for mode, ai in (("wrap", a % 3), ("clip", a.clamp(0, 2))):
        exp = full.gather(0, ai[None]).squeeze(0)
        assert torch.equal(bt.choose(a, c, mode=mode), exp)
    ok = a.clamp(0, 2)
    assert torch.equal(bt.choose(ok, full), full.gather(0, ok[None]).squeeze(0))
    with pytest.raises(ValueError, match="invalid entry"):
        bt.choose(a, c)
    with pytest.raises(ValueError, match="not understood"):
        bt.choose(ok, c, mode="nope")
    with pytest.raises(TypeError):
        bt.choose(ok.double(), c)
    leaves = [t.clone().requires_grad_() for t in c]
    torch.autograd.gradcheck(lambda *ts: bt.choose(ok, list(ts)), leaves, fast_mode=True)


def test_opcheck_new_ops(device):
    from baracuda.families.indexing.torch_flat import _index_reduce

    x = _r(5, 4, seed=25, device=device).requires_grad_()
    torch.library.opcheck(_index_reduce.custom_op, (x, 0, torch.tensor([1, 1, 3], device=device),
                                                    _r(3, 4, seed=26, device=device), "amax",
                                                    True))


@pytest.mark.gpu
def test_real_size_take_and_index_reduce_gpu(device):
    x = torch.randn(8192, 1024, device=device)
    idx = torch.randint(-x.numel(), x.numel(), (1 << 22,), device=device)
    assert torch.equal(bt.take(x, idx), torch.take(x, idx))
    rows = torch.randint(0, 8192, (20000,), device=device)
    src = torch.randn(20000, 1024, device=device)
    for reduce in ("amax", "mean"):
        a = bt.index_reduce(x, 0, rows, src, reduce)
        assert_bitwise_equal(a, bt.index_reduce(x, 0, rows, src, reduce))
        torch.testing.assert_close(a, x.index_reduce(0, rows, src, reduce))


def test_compile_flat_ops(device):
    x = _r(5, 4, seed=27, device=device).requires_grad_()
    src = _r(3, 4, seed=28, device=device).requires_grad_()
    idx = torch.tensor([1, 1, 3], device=device)

    def f(x, src):
        return bt.index_reduce(x, 0, idx, src, "prod").sum() + bt.take(x, idx * 5).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    g1 = torch.autograd.grad(compiled(x, src), (x, src))
    g2 = torch.autograd.grad(f(x, src), (x, src))
    for p, q in zip(g1, g2):
        torch.testing.assert_close(p, q)
