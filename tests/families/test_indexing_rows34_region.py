"""select (a view), narrow_copy / slice_copy, the region scatters and JAX's dynamic
slices through the torch frontend: values and gradients vs torch (float64), strided inputs,
clamped and tensor start indices, error parity."""

from __future__ import annotations

import pytest
import torch

from baracuda.families.indexing import torch_api as bt

pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")


def _r(*shape, seed=0, dtype=torch.float64, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype).to(device)


def _grads(fn_ours, fn_torch, inputs, g):
    a = [t.clone().requires_grad_() for t in inputs]
    b = [t.clone().requires_grad_() for t in inputs]
    out_a, out_b = fn_ours(*a), fn_torch(*b)
    assert torch.equal(out_a, out_b)
    for p, q in zip(torch.autograd.grad(out_a, a, g), torch.autograd.grad(out_b, b, g)):
        assert torch.equal(p, q)


def test_views_and_copies(device):
    x = _r(5, 6, 3, seed=1, device=device).transpose(0, 2)
    v = bt.select(x, 1, -2)
    assert v.data_ptr() == x.select(1, -2).data_ptr() and torch.equal(v, x.select(1, -2))
    c = bt.narrow_copy(x, 2, 1, 3)
    assert torch.equal(c, x.narrow(2, 1, 3)) and c.is_contiguous()
    assert c.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    s = bt.slice_copy(x, 1, -4, None, 2)
    assert torch.equal(s, x[:, -4::2])
    assert torch.equal(bt.index_in_dim(x, -1, 1), x[:, -1:])
    assert torch.equal(bt.index_in_dim(x, 2, 0, keepdims=False), x[2])
    assert torch.equal(bt.slice_in_dim(x, 1, 5, 2, axis=1), x[:, 1:5:2])
    a = x.clone().requires_grad_()
    torch.autograd.gradcheck(lambda t: bt.narrow_copy(t, 1, 2, 3), (a,), fast_mode=True)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_region_scatters_match_torch(layout, device):
    base = _r(6, 8, seed=2, device=device)
    x = {"contiguous": base, "transposed": base.t().contiguous().t(),
         "strided": _r(6, 16, seed=3, device=device)[:, ::2]}[layout]
    g = _r(6, 8, seed=4, device=device)
    cases = [
        (lambda t, s: bt.select_scatter(t, s, 1, -3),
         lambda t, s: torch.select_scatter(t, s, 1, -3), (6,)),
        (lambda t, s: bt.slice_scatter(t, s, 1, 1, -1, 3),
         lambda t, s: torch.slice_scatter(t, s, 1, 1, -1, 3), (6, 2)),
        (lambda t, s: bt.slice_scatter(t, s), lambda t, s: torch.slice_scatter(t, s), (6, 8)),
        (lambda t, s: bt.slice_scatter(t, s, 0, 4, 100),
         lambda t, s: torch.slice_scatter(t, s, 0, 4, 100), (2, 8)),
        (lambda t, s: bt.diagonal_scatter(t, s, 2), lambda t, s: torch.diagonal_scatter(t, s, 2),
         (6,)),
        (lambda t, s: bt.diagonal_scatter(t, s, -1, 1, 0),
         lambda t, s: torch.diagonal_scatter(t, s, -1, 1, 0), (6,)),
    ]
    for k, (ours, theirs, sshape) in enumerate(cases):
        _grads(ours, theirs, [x, _r(*sshape, seed=10 + k, device=device)], g)


def test_as_strided_scatter(device):
    x = _r(4, 5, seed=5, device=device)
    src = _r(2, 3, seed=6, device=device)
    out = bt.as_strided_scatter(x, src, (2, 3), (5, 2), 6)
    assert torch.equal(out, torch.as_strided_scatter(x, src, (2, 3), (5, 2), 6))
    a, s = x.clone().requires_grad_(), src.clone().requires_grad_()
    g = _r(4, 5, seed=7, device=device)
    ga, gs = torch.autograd.grad(bt.as_strided_scatter(a, s, (2, 3), (5, 2), 6), (a, s), g)
    # the region's gradient goes to src, the rest to input (torch's own input gradient is
    # the region's instead: tests/opinfo_known.py)
    region = torch.zeros(20, dtype=torch.bool, device=device)
    region.as_strided((2, 3), (5, 2), 6).fill_(True)
    assert torch.equal(ga, g.masked_fill(region.view(4, 5), 0))
    assert torch.equal(gs, g.reshape(-1).as_strided((2, 3), (5, 2), 6))
    with pytest.raises(RuntimeError, match="size equal to the slice"):
        bt.as_strided_scatter(x, src, (3, 2), (5, 2), 6)
    with pytest.raises(RuntimeError):
        bt.as_strided_scatter(x, src, (2, 3), (5, 2), 19)  # past the storage


def test_region_scatter_errors_and_dtypes(device):
    x = _r(2, 3, seed=8, device=device)
    with pytest.raises(RuntimeError, match="size equal to the slice"):
        bt.slice_scatter(x, torch.ones(2, 2, dtype=x.dtype, device=device), 1, 0, 1)
    with pytest.raises(IndexError, match="out of range"):
        bt.select_scatter(x, torch.ones(2, dtype=x.dtype, device=device), 1, 5)
    with pytest.raises(RuntimeError, match="size equal to the slice"):
        bt.diagonal_scatter(x, torch.ones(3, dtype=x.dtype, device=device))
    with pytest.raises(RuntimeError, match="step must be positive"):
        bt.slice_scatter(x, torch.ones(2, 1, dtype=x.dtype, device=device), 1, 0, 1, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        bt.select_scatter(x, torch.ones(3, dtype=x.dtype, device=device), 2, 0)
    src32 = torch.ones(2, 1, dtype=torch.float32, device=device)
    assert torch.equal(bt.slice_scatter(x, src32, 1, 0, 1), torch.slice_scatter(x, src32.double(),
                                                                                1, 0, 1))
    xi = torch.arange(6, device=device).view(2, 3)
    si = torch.tensor([7, 8], device=device)
    assert torch.equal(bt.select_scatter(xi, si, 1, 0), torch.select_scatter(xi, si, 1, 0))
    empty = bt.slice_scatter(x, x[:, :0], 1, 5, 9)
    assert torch.equal(empty, x)


def test_dynamic_slice_clamps_like_jax(device):
    x = _r(5, 7, seed=9, device=device)
    for starts, exp in (([3, 6], x[2:5, 3:7]), ([-1, -9], x[2:5, 0:4]), ([0, 2], x[0:3, 2:6])):
        assert torch.equal(bt.dynamic_slice(x, starts, [3, 4]), exp)
        ts = [torch.tensor(s, device=device) for s in starts]
        assert torch.equal(bt.dynamic_slice(x, ts, [3, 4]), exp)
        assert torch.equal(bt.dynamic_slice(x, torch.tensor(starts, device=device), [3, 4]), exp)
    assert torch.equal(bt.dynamic_slice_in_dim(x, torch.tensor(9, device=device), 2, axis=1),
                       x[:, 5:7])
    assert torch.equal(bt.dynamic_index_in_dim(x, -2, 0, keepdims=False), x[3])
    assert bt.dynamic_slice(x, [1, 1], [0, 3]).shape == (0, 3)
    a = x.clone().requires_grad_()
    for st in ([torch.tensor(4), torch.tensor(1)], [1, 5]):
        st = [s.to(device) if isinstance(s, torch.Tensor) else s for s in st]
        torch.autograd.gradcheck(lambda t, st=st: bt.dynamic_slice(t, st, [2, 3]), (a,),
                                 fast_mode=True)
    with pytest.raises(TypeError, match="slice_sizes"):
        bt.dynamic_slice(x, [0, 0], [6, 1])
    with pytest.raises(TypeError, match="length of start indices"):
        bt.dynamic_slice(x, [0], [1, 1])
    with pytest.raises(TypeError, match="integer scalars"):
        bt.dynamic_slice(x, [torch.tensor(1.0, device=device), 0], [1, 1])


def test_dynamic_update_slice(device):
    x = _r(5, 7, seed=10, device=device).t()  # strided operand
    u = _r(3, 2, seed=11, device=device)
    for starts, (r, c) in (([9, 4], (4, 3)), ([-2, 1], (4, 1)), ([1, -9], (1, 0))):
        exp = x.clone()
        exp[r:r + 3, c:c + 2] = u
        assert torch.equal(bt.dynamic_update_slice(x, u, starts), exp)
        ts = [torch.tensor(s, device=device) for s in starts]
        assert torch.equal(bt.dynamic_update_slice(x, u, ts), exp)
    row = _r(7, seed=12, device=device)
    exp = x.clone()
    exp[:, 4] = row
    assert torch.equal(bt.dynamic_update_index_in_dim(x, row, torch.tensor(8, device=device), 1),
                       exp)
    assert torch.equal(bt.dynamic_update_slice_in_dim(x, row[:, None], -1, 1), exp)
    a, w = x.clone().requires_grad_(), u.clone().requires_grad_()
    st = [torch.tensor(2, device=device), torch.tensor(3, device=device)]
    torch.autograd.gradcheck(lambda t, v: bt.dynamic_update_slice(t, v, st), (a, w),
                             fast_mode=True)
    with pytest.raises(TypeError, match="exceeds"):
        bt.dynamic_update_slice(x, _r(8, 1, device=device), [0, 0])
    with pytest.raises(TypeError, match="rank"):
        bt.dynamic_update_slice(x, row, [0, 0])


def test_compile_region_ops(device):
    x = _r(4, 6, seed=13, device=device).requires_grad_()
    src = _r(4, 2, seed=14, device=device).requires_grad_()

    def f(x, src, s):
        return (bt.slice_scatter(x, src, 1, 1, 5, 2).sum()
                + bt.dynamic_slice(x, [s, torch.zeros_like(s)], [2, 3]).sum())

    s = torch.tensor(3, device=device)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    g1 = torch.autograd.grad(compiled(x, src, s), (x, src))
    g2 = torch.autograd.grad(f(x, src, s), (x, src))
    for p, q in zip(g1, g2):
        assert torch.equal(p, q)


@pytest.mark.gpu
def test_real_size_slice_scatter_gpu(device):
    x = torch.randn(8192, 8192, device=device)
    src = torch.randn(8192, 4096, device=device)
    assert torch.equal(bt.slice_scatter(x, src, 1, 0, None, 2),
                       torch.slice_scatter(x, src, 1, 0, None, 2))
    st = torch.tensor([100, 9000], device=device)
    assert torch.equal(bt.dynamic_slice(x, st, [4096, 512]), x[100:4196, 7680:])


def test_out_variants(device):
    x = _r(4, 6, seed=15, device=device)
    idx = torch.tensor([[1, -2], [0, 23]], device=device)
    for out in (torch.empty(0, dtype=x.dtype, device=device),
                torch.full((4, 2), float("nan"), dtype=x.dtype, device=device)[::2]):
        assert bt.take(x, idx, out=out) is out and torch.equal(out, torch.take(x, idx))
    src = _r(4, 2, seed=16, device=device)
    out = torch.empty(6, 4, dtype=x.dtype, device=device).t()
    assert bt.slice_scatter(x, src, 1, 1, 5, 2, out=out) is out
    assert torch.equal(out, torch.slice_scatter(x, src, 1, 1, 5, 2))
    out = torch.empty(0, dtype=x.dtype, device=device)
    bt.narrow_copy(x, 1, 2, 3, out=out)
    assert torch.equal(out, x[:, 2:5])
    bt.slice_copy(x, 0, 1, None, 2, out=out)
    assert torch.equal(out, x[1::2])
    rows = torch.tensor([0, 0, 3], device=device)
    s3 = _r(3, 6, seed=17, device=device)
    out = torch.empty_like(x)
    bt.index_reduce(x, 0, rows, s3, "amax", out=out)
    assert torch.equal(out, x.index_reduce(0, rows, s3, "amax"))
    with pytest.raises(RuntimeError, match="same dtype"):
        bt.take(x, idx, out=torch.empty(4, dtype=torch.float32, device=device))
    with pytest.raises(RuntimeError, match="dtype"):
        bt.slice_scatter(x, src, 1, 1, 5, 2, out=torch.empty(4, 6, device=device))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        bt.take(x.clone().requires_grad_(), idx, out=torch.empty_like(x))
