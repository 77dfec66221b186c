"""Issue 34 integer bit ops of the elementwise family: bitwise_not, gcd / lcm against torch;
jax.lax's shift_right_logical, population_count, clz and mulhi against Python integer
references; jnp.packbits / jnp.unpackbits against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import InvalidProblem, Unsupported
from conftest import DEVICE

INTS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _ints(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)
    flat = x.view(-1)
    edge = [0, 1, info.max, info.min, info.min + 1, 2, info.max - 1]
    flat[: len(edge)] = torch.tensor(edge, dtype=torch.int64).to(dtype)
    return x.to(DEVICE)


def _python(values, dtype, fn):
    """fn on Python ints of each element, wrapped to dtype."""
    bits = torch.iinfo(dtype).bits
    signed = torch.iinfo(dtype).min < 0

    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    return torch.tensor([wrap(fn(v)) for v in values], dtype=dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_unary_bit_ops(dtype):
    x = _ints((5, 7), dtype)
    bits = torch.iinfo(dtype).bits
    assert torch.equal(bt.bitwise_not(x.t()), torch.bitwise_not(x.t()))
    u = [v & ((1 << bits) - 1) for v in x.cpu().view(-1).tolist()]
    pop = bt.population_count(x).cpu().view(-1)
    assert torch.equal(pop, _python(u, dtype, lambda v: bin(v).count("1")))
    lz = bt.clz(x).cpu().view(-1)
    assert torch.equal(lz, _python(u, dtype, lambda v: bits - v.bit_length()))
    assert bt.population_count(x[:0]).shape == (0, 7)


def test_bitwise_not_bool_and_inplace():
    b = torch.tensor([True, False], device=DEVICE)
    assert torch.equal(bt.bitwise_not(b), torch.bitwise_not(b))
    y = torch.arange(4, device=DEVICE)
    bt.bitwise_not_(y)
    assert torch.equal(y, torch.bitwise_not(torch.arange(4, device=DEVICE)))
    with pytest.raises(Unsupported):
        bt.bitwise_not(torch.ones(2, device=DEVICE))


@pytest.mark.parametrize("dtype", INTS)
def test_shift_right_logical_and_mulhi(dtype):
    x = _ints((40,), dtype)
    bits = torch.iinfo(dtype).bits
    s = torch.arange(-2, 38, device=DEVICE).to(dtype) % (bits + 3) - 1
    got = bt.shift_right_logical(x, s).cpu()
    ref = [((a & ((1 << bits) - 1)) >> b) if 0 <= b < bits else 0
           for a, b in zip(x.cpu().tolist(), s.cpu().tolist())]
    assert torch.equal(got, _python(ref, dtype, lambda v: v))
    y = _ints((40,), dtype, seed=1)
    got = bt.mulhi(x, y).cpu()
    ref = [a * b >> bits for a, b in zip(x.cpu().tolist(), y.cpu().tolist())]
    assert torch.equal(got, _python(ref, dtype, lambda v: v))
    assert torch.equal(bt.shift_right_logical(x, 1), bt.shift_right_logical(
        x, torch.ones_like(x)))
    with pytest.raises(InvalidProblem):
        bt.mulhi(x, y.to(torch.int64) if dtype != torch.int64 else y.to(torch.int32))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8, torch.uint8])
def test_gcd_lcm_match_torch(dtype):
    g = torch.Generator().manual_seed(5)
    lo = 0 if dtype == torch.uint8 else -60
    a = torch.randint(lo, 60, (9, 8), generator=g).to(dtype).to(DEVICE)
    b = torch.randint(lo, 60, (8,), generator=g).to(dtype).to(DEVICE)
    a[0, :3] = 0
    b[:2] = 0
    for fn in ("gcd", "lcm"):
        assert torch.equal(getattr(bt, fn)(a, b), getattr(torch, fn)(a, b))
        assert torch.equal(getattr(bt, fn)(a.t(), b[:, None]), getattr(torch, fn)(a.t(),
                                                                                  b[:, None]))
    with pytest.raises(Unsupported):
        bt.gcd(a.float(), b.float())


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_matches_numpy(axis, bitorder):
    g = torch.Generator().manual_seed(2)
    a = torch.randint(-1, 2, (3, 13, 5), generator=g)
    for t in (a.bool(), a.to(torch.int32), a.transpose(0, 2)):
        got = bt.packbits(t.to(DEVICE), axis, bitorder).cpu().numpy()
        ref = np.packbits(t.numpy() != 0, axis=axis, bitorder=bitorder)
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_unpackbits_matches_numpy(axis):
    g = torch.Generator().manual_seed(4)
    a = torch.randint(0, 256, (3, 5), generator=g, dtype=torch.uint8)
    for t in (a, a.t()):
        for bitorder in ("big", "little"):
            for count in (None, 3, -2):
                got = bt.unpackbits(t.to(DEVICE), axis, count, bitorder).cpu().numpy()
                ref = np.unpackbits(t.numpy(), axis=axis, count=count, bitorder=bitorder)
                np.testing.assert_array_equal(got, ref)
    with pytest.raises(Unsupported):
        bt.unpackbits(a.to(torch.int32).to(DEVICE))


def test_packbits_errors():
    with pytest.raises(Unsupported):
        bt.packbits(torch.ones(8, device=DEVICE))
    with pytest.raises(InvalidProblem):
        bt.packbits(torch.ones(8, dtype=torch.bool, device=DEVICE), bitorder="middle")
