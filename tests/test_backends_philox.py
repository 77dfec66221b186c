"""backends/philox.py: the host twin against Random123's known answers, the Triton words and
floats against the host twin (64-bit group indices and offsets included), and the state draw
(torch's generator: reproducible, advancing)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from baracuda.backends import philox as P
from conftest import DEVICE


def test_host_matches_random123_known_answers():
    # Random123's kat_vectors for philox4x32_10: (counter, key) -> output
    def run(ctr, key):
        out = [0] * 4
        c = [np.array([x], np.uint32) for x in ctr]
        k0, k1 = key
        with np.errstate(over="ignore"):
            for _ in range(10):
                hi_b, lo_b = P._mulhilo(P.ROUND_B, c[2])
                hi_a, lo_a = P._mulhilo(P.ROUND_A, c[0])
                c = [hi_b ^ c[1] ^ np.uint32(k0), lo_b, hi_a ^ c[3] ^ np.uint32(k1), lo_a]
                k0, k1 = (k0 + P.KEY_A) & 0xFFFFFFFF, (k1 + P.KEY_B) & 0xFFFFFFFF
        out = [int(x[0]) for x in c]
        return out

    assert run((0, 0, 0, 0), (0, 0)) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert run((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6,
                                                          0x6D5451FD]
    pi = (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344)
    assert run(pi, (0xA4093822, 0x299F31D0)) == [0xD16CFE09, 0x94FDCCEB, 0x5001E420,
                                                 0x24126EA1]
    # philox_host's counter layout: group (c0, c1) and offset (c2, c3), key = seed
    seed = (0x299F31D0 << 32) | 0xA4093822
    group = (pi[1] << 32) | pi[0]
    offset = (pi[3] << 32) | pi[2]
    words = P.philox_host(seed, offset, np.array([group], np.uint64))
    assert [int(w[0]) for w in words] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@triton.jit
def _words_kernel(rng_ptr, g_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    g = tl.load(g_ptr + i, mask=m, other=0)
    seed, offset = P.load_state(rng_ptr)
    w0, w1, w2, w3 = P.philox_words(seed, offset, g)
    tl.store(out_ptr + 4 * i, w0.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 4 * i + 1, w1.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 4 * i + 2, w2.to(tl.int32, bitcast=True), mask=m)
    tl.store(out_ptr + 4 * i + 3, w3.to(tl.int32, bitcast=True), mask=m)


@triton.jit
def _floats_kernel(w_ptr, f32_ptr, f64_ptr, n, DIGITS: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    w = tl.load(w_ptr + i, mask=m, other=0).to(tl.uint32, bitcast=True)
    w2 = tl.load(w_ptr + n + i, mask=m, other=0).to(tl.uint32, bitcast=True)
    tl.store(f32_ptr + i, P.unit_float(w, DIGITS), mask=m)
    tl.store(f64_ptr + i, P.unit_f64(w, w2), mask=m)


@pytest.mark.parametrize("seed,offset", [(0, 0), (12345, 7), ((1 << 61) + 99, (1 << 40) + 3)])
def test_kernel_words_match_host(seed, offset):
    groups = torch.tensor([0, 1, 2, 3, 1000, (1 << 31) + 5, (1 << 32) + 1, (1 << 40) + 17,
                           (1 << 62) + 3], dtype=torch.int64)
    rng = torch.tensor([seed, offset], dtype=torch.int64, device=DEVICE)
    out = torch.empty(groups.numel(), 4, dtype=torch.int32, device=DEVICE)
    _words_kernel[(1,)](rng, groups.to(DEVICE), out, groups.numel(), BLOCK=16)
    want = np.stack(P.philox_host(seed, offset, groups.numpy()), axis=-1).view(np.int32)
    np.testing.assert_array_equal(out.cpu().numpy(), want)
    # the 64-bit index: groups 2^32 apart differ (no wrap of the counter)
    assert not np.array_equal(want[1], want[6])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_unit_floats_exact_and_below_one(dtype):
    digits = P.DIGITS[dtype]
    w = np.array([0, 1, 0xFFFFFFFF, 0x80000000, 0x12345678, 0xFFFFFF00], np.uint32)
    w2 = np.array([0xFFFFFFFF, 0, 0xFFFFFFFF, 7, 0x9ABCDEF0, 0xFFFFFFFF], np.uint32)
    n = len(w)
    words = torch.from_numpy(np.concatenate([w, w2]).view(np.int32)).to(DEVICE)
    f32 = torch.empty(n, dtype=torch.float32, device=DEVICE)
    f64 = torch.empty(n, dtype=torch.float64, device=DEVICE)
    _floats_kernel[(1,)](words, f32, f64, n, DIGITS=digits, BLOCK=8)
    want = P.unit_host(w, digits)
    np.testing.assert_array_equal(f32.cpu().double().numpy(), want)
    assert float(f32.max()) < 1.0 and float(f32.to(dtype).float().max()) < 1.0
    want64 = P.unit_host(np.stack([w, w2], -1), 53)
    np.testing.assert_array_equal(f64.cpu().numpy(), want64)
    assert float(f64.max()) < 1.0


def test_words_host_layouts():
    four = P.words_host(5, 9, 10, 4)
    groups = np.stack(P.philox_host(5, 9, np.arange(3)), -1)
    np.testing.assert_array_equal(four, groups.reshape(-1)[:10])
    two = P.words_host(5, 9, 5, 2)
    np.testing.assert_array_equal(two, groups.reshape(-1, 2)[:5])


def test_draw_state_follows_the_generator():
    g = torch.Generator(device=DEVICE).manual_seed(3)
    a = P.draw_state(DEVICE, g)
    b = P.draw_state(DEVICE, g)
    assert a.dtype == torch.int64 and a.shape == (2,)
    assert not torch.equal(a, b)  # the generator advances per call
    g.manual_seed(3)
    assert torch.equal(P.draw_state(DEVICE, g), a)  # the same state, the same draw
    assert bool((a >= 0).all()) and P.state_values(a) == tuple(a.tolist())


def test_element_launches_cover_the_logical_order():
    """Every element once, at its row-major index: base + local index, offsets per tensor."""
    full = torch.arange(3 * 4 * 5 * 6 * 7 * 8).reshape(3, 4, 5, 6, 7, 8)
    view = full[:2, :3, :4, :5, :6, :7]  # six dims no collapse merges: several launches
    dense = torch.empty(view.shape)
    steps = P.element_launches(tuple(view.shape), (view.stride(), dense.stride()))
    assert len(steps) > 1 and not steps[0][5]
    seen = torch.full((view.numel(),), -1, dtype=torch.int64)
    for base, offs, count, (s1, s2, s3), sts, _ in steps:
        i = torch.arange(count)
        i3, r = i % s3, i // s3
        i2, r = r % s2, r // s2
        st = sts[0]
        where = offs[0] + (r // s1) * st[0] + (r % s1) * st[1] + i2 * st[2] + i3 * st[3]
        seen[base + i] = full.flatten()[view.storage_offset() + where]
    assert torch.equal(seen, view.flatten())
    (step,) = P.element_launches((4, 5), ((5, 1),))
    assert step[0] == 0 and step[2] == 20 and step[5]  # one dense run
