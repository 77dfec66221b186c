"""jnp_pad (numpy's np.pad semantics) and lax_pad (jax.lax.pad, checked against a
hand-written numpy reference) on the pad plans, forward and gradients; the symmetric mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import Unsupported
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0, strided=True):
    g = torch.Generator().manual_seed(seed)
    full = torch.randn((*shape[:-1], 2 * shape[-1]) if shape else (), generator=g,
                       dtype=torch.float64) * 3 + 0.5
    x = full[..., ::2] if shape and strided else full[..., :shape[-1]] if shape else full
    return x.to(DEVICE, dtype).detach().requires_grad_(dtype.is_floating_point)


def _np(t):
    return t.detach().cpu().numpy()


def _grad_of_index_map(idx: np.ndarray, g: torch.Tensor, n: int) -> np.ndarray:
    """The gradient of y = x.flat[idx] (idx < 0: a fill) for the upstream g."""
    out = np.zeros(n)
    keep = idx >= 0
    np.add.at(out, idx[keep], _np(g)[keep])
    return out


JNP = [
    ((3, 4, 5), "constant", ((1, 2), (0, 3), (2, 0))),
    ((3, 4, 5), "edge", 2),
    ((3, 4, 5), "reflect", ((1, 2), (3, 0), (2, 4))),
    ((3, 4, 5), "symmetric", ((3, 1), (4, 4), (0, 5))),
    ((3, 4, 5), "wrap", ((3, 3), (1, 4), (5, 5))),
    ((2, 3, 4, 5), "symmetric", ((1, 2), (0, 0), (2, 1), (1, 1))),  # 4 padded dims: per dim
    ((2, 3, 4, 5), "edge", ((2, 0), (1, 1), (0, 0), (0, 3))),
    ((7,), "reflect", (6,)),
    ((0, 3), "constant", 2),
]


@pytest.mark.parametrize("shape,mode,pw", JNP, ids=[f"{m}-{s}" for s, m, _ in JNP])
def test_jnp_pad_matches_numpy(shape, mode, pw):
    x = _x(*shape)
    y = bt.jnp_pad(x, pw, mode)
    np.testing.assert_array_equal(_np(y), np.pad(_np(x), pw, mode))
    if not y.numel() or not x.numel():
        return
    g = _x(*y.shape, seed=4, strided=False)
    (dx,) = torch.autograd.grad(y, x, g)
    kw = {"constant_values": -1} if mode == "constant" else {}
    idx = np.pad(np.arange(x.numel()).reshape(x.shape), pw, mode, **kw)
    np.testing.assert_allclose(_np(dx).reshape(-1), _grad_of_index_map(idx, g, x.numel()),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int32])
def test_jnp_pad_dtypes_and_constant_values(dtype):
    x = _x(3, 4, dtype=dtype)
    for mode in ("symmetric", "wrap"):
        want = np.pad(_np(x.float()), ((1, 2), (3, 1)), mode)
        np.testing.assert_array_equal(_np(bt.jnp_pad(x, ((1, 2), (3, 1)), mode).float()), want)
    cv = ((1, 2), (3, 4))
    got = bt.jnp_pad(x, ((1, 2), (2, 1)), constant_values=cv)
    np.testing.assert_array_equal(_np(got.float()),
                                  np.pad(_np(x.float()), ((1, 2), (2, 1)), constant_values=cv))
    np.testing.assert_array_equal(_np(bt.jnp_pad(x, 1, constant_values=7).float()),
                                  np.pad(_np(x.float()), 1, constant_values=7))


def test_jnp_pad_errors():
    x = _x(3, 4)
    with pytest.raises(ValueError, match="negative"):
        bt.jnp_pad(x, -1)
    with pytest.raises(Unsupported, match="mode"):
        bt.jnp_pad(x, 1, "mean")
    with pytest.raises(Unsupported, match="at most 2"):
        bt.jnp_pad(x, ((3, 0), (0, 0)), "reflect")  # numpy reflects again; refused
    with pytest.raises(ValueError, match="empty axis"):
        bt.jnp_pad(_x(0, 3), 1, "edge")
    with pytest.raises(ValueError, match="entries"):
        bt.jnp_pad(x, ((1, 1), (1, 1), (1, 1)))
    with pytest.raises(NotImplementedError, match="symmetric"):  # F.pad: torch's 4 modes
        torch.nn.functional.pad(x.detach(), (1, 1), "symmetric")
    with pytest.raises(Unsupported, match="symmetric"):
        bt.pad(x, (1, 1), "symmetric")


def _lax_ref(a: np.ndarray, v, cfg) -> np.ndarray:
    """jax.lax.pad by its definition: interior fill between neighbours, then low / high pad
    (negative: crop), dim by dim."""
    for d, (lo, hi, k) in enumerate(cfg):
        n = a.shape[d]
        shape = list(a.shape)
        shape[d] = n + max(n - 1, 0) * k
        b = np.full(shape, v, dtype=a.dtype)
        sl = [slice(None)] * a.ndim
        sl[d] = slice(None, None, k + 1)
        b[tuple(sl)] = a
        a = b
        if lo < 0:
            a = np.take(a, range(-lo, a.shape[d]), axis=d)
            lo = 0
        if hi < 0:
            a = np.take(a, range(0, a.shape[d] + hi), axis=d)
            hi = 0
        pw = [(0, 0)] * a.ndim
        pw[d] = (lo, hi)
        a = np.pad(a, pw, constant_values=v)
    return a


LAX = [
    ((3, 4, 5), [(1, -2, 2), (-1, 2, 1), (0, 0, 0)]),
    ((5,), [(2, 3, 0)]),
    ((4, 3), [(-3, -2, 3), (0, 1, 2)]),
    ((1, 6), [(1, 1, 5), (-2, -1, 1)]),
    ((0, 3), [(2, 1, 4), (1, 0, 1)]),
    ((), []),
]


@pytest.mark.parametrize("shape,cfg", LAX, ids=[str(s) for s, _ in LAX])
def test_lax_pad_matches_definition(shape, cfg):
    x = _x(*shape) if shape else _x().detach().requires_grad_()
    y = bt.lax_pad(x, 1.5, cfg)
    np.testing.assert_array_equal(_np(y), _lax_ref(_np(x), 1.5, cfg))
    if not y.numel() or not x.numel():
        return
    g = _x(*y.shape, seed=6, strided=False) if y.dim() else _x(seed=6)
    (dx,) = torch.autograd.grad(y, x, g)
    idx = _lax_ref(np.arange(x.numel()).reshape(x.shape), -1, cfg)
    np.testing.assert_allclose(_np(dx).reshape(-1), _grad_of_index_map(idx, g, x.numel()),
                               rtol=1e-12, atol=1e-12)


def test_lax_pad_ints_tensor_value_and_errors():
    x = _x(3, 4, dtype=torch.int64)
    cfg = [(1, 0, 1), (0, -1, 2)]
    got = bt.lax_pad(x, torch.tensor(-7), cfg)
    np.testing.assert_array_equal(_np(got), _lax_ref(_np(x), -7, cfg))
    with pytest.raises(ValueError, match="interior"):
        bt.lax_pad(x, 0, [(0, 0, -1), (0, 0, 0)])
    with pytest.raises(ValueError, match="negative size"):
        bt.lax_pad(x, 0, [(-2, -2, 0), (0, 0, 0)])
    with pytest.raises(ValueError, match="triple"):
        bt.lax_pad(x, 0, [(0, 0, 0)])
