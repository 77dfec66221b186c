"""The counter-based generator shared by the random and dropout families: Philox4x32-10
(Salmon et al., Random123) in Triton, with its host twin in numpy for the references.

**Stream.** A call draws one (seed, offset) pair; element group g (a 64-bit index) takes the
four 32-bit words of Philox4x32-10 with key = seed (64 bits) and counter
(g mod 2^32, g >> 32, offset mod 2^32, offset >> 32). Every value is a function of
(seed, offset, its element index) alone: no launch configuration changes it, and a tensor of
more than 2^32 elements never reuses a counter (the index takes 64 bits of the counter).

**Where (seed, offset) come from.** Both live in an int64 [2] device tensor the kernels load
(`rng_state`), filled per call by `draw_state`: torch.randint on the caller's generator (or
the default one of the device). That is torch's own graph-safe path: under CUDA-graph capture
torch's Philox generator hands the draw its seed and offset through device memory and advances
them on every replay, and a CPU generator (which keeps no offset: `get_offset` raises) works
the same way. Reading `initial_seed()` / `get_offset()` on the host instead would bake one
pair into a captured graph. The state being a tensor also keeps baracuda's launch replay
(backends/launch_replay.py) correct: a replay passes the new call's tensor, so two calls
never repeat numbers, while the same generator state gives the same numbers.

**Floats.** `unit_float` maps a word to [0, 1) on the grid of the dtype's mantissa (24 bits
for f32, 11 f16, 8 bf16), as torch's CPU `uniform_real_distribution`, so a rounded value
never reaches 1; `unit_f64` joins two words into 53 bits. 1 - u is then in (0, 1] exactly,
which is what logarithms take. `box_muller` turns two uniforms into two normals.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
import triton
import triton.language as tl

from ..core.layout import collapse_dims

#: Philox4x32 round multipliers and Weyl key increments (Random123)
ROUND_A, ROUND_B = 0xD2511F53, 0xCD9E8D57
KEY_A, KEY_B = 0x9E3779B9, 0xBB67AE85
#: draws are in [0, 2^62): non-negative int64 seeds and offsets
STATE_HIGH = 1 << 62
#: mantissa digits per dtype: a uniform float takes this many bits of its word
DIGITS = {torch.float32: 24, torch.float16: 11, torch.bfloat16: 8, torch.float64: 53}


def draw_state(device: torch.device | str, generator: torch.Generator | None = None
               ) -> torch.Tensor:
    """An int64 [2] (seed, offset) tensor on `device`, drawn from `generator` (or torch's
    default generator of that device) on the device itself (see the module docstring)."""
    return torch.randint(0, STATE_HIGH, (2,), dtype=torch.int64, device=device,
                         generator=generator)


#: dims a launch takes (`triton_support.line_offset`'s [S0, S1, S2, S3])
MAX_DIMS = 4


def element_launches(shape, strides):
    """Launches covering a logical shape whose element i's draws come from the stream at i:
    [(base element index, element offset per tensor, elements, (S1, S2, S3), strides per
    tensor (4 each), dense)]. The shape is collapsed jointly over the tensors' `strides`;
    beyond 4 dims the leading ones become separate launches, each starting at its base
    index (so the values do not depend on how the elements were split). `dense`: one run
    of unit stride in every tensor."""
    cshape, cstrides = collapse_dims(shape, strides)
    dense = len(cshape) == 1 and all(s[0] == 1 for s in cstrides)
    lead = max(len(cshape) - MAX_DIMS, 0)
    rest = list(cshape[lead:])
    pad = MAX_DIMS - len(rest)
    rest = [1] * pad + rest
    rest_st = tuple(tuple([0] * pad + list(s[lead:])) for s in cstrides)
    inner = math.prod(rest)
    out = []
    for idx in itertools.product(*[range(d) for d in cshape[:lead]]):
        flat = 0
        for i, d in zip(idx, cshape[:lead]):
            flat = flat * d + i
        offs = tuple(sum(i * s for i, s in zip(idx, st)) for st in cstrides)
        out.append((flat * inner, offs, inner, tuple(rest[1:]), rest_st, dense))
    return out


# -- device side ------------------------------------------------------------------------------
@triton.jit
def load_state(rng_ptr):
    """(seed, offset), int64 scalars, from an int64 [2] state tensor."""
    return tl.load(rng_ptr), tl.load(rng_ptr + 1)


@triton.jit
def philox_words(seed, offset, group):
    """The four uint32 words of element group `group` (an int64 block) of the stream
    (seed, offset): Philox4x32-10, key = seed, counter = (group, offset) as 4x32 bits."""
    c0 = group.to(tl.uint32)
    c1 = (group >> 32).to(tl.uint32)
    zero = tl.zeros_like(c0)
    c2 = zero + offset.to(tl.uint32)
    c3 = zero + (offset >> 32).to(tl.uint32)
    return tl.philox(seed, c0, c1, c2, c3, n_rounds=10)


@triton.jit
def unit_float(word, DIGITS: tl.constexpr):
    """A uint32 word as a float32 in [0, 1): its top DIGITS bits times 2^-DIGITS (exact)."""
    return (word >> (32 - DIGITS)).to(tl.float32) * (1.0 / (1 << DIGITS))


@triton.jit
def unit_f64(hi, lo):
    """Two uint32 words as a float64 in [0, 1) with 53 random bits (exact)."""
    a = (hi >> 5).to(tl.float64) * (1.0 / (1 << 27))
    b = (lo >> 6).to(tl.float64) * (1.0 / (1 << 53))
    return a + b


@triton.jit
def box_muller(u0, u1):
    """Two independent standard normals from two uniforms in [0, 1): the radius from 1 - u0,
    in (0, 1], so the logarithm stays finite."""
    r = tl.sqrt(-2.0 * tl.log(1.0 - u0))
    theta = 6.283185307179586 * u1
    return r * tl.cos(theta), r * tl.sin(theta)


@triton.jit
def pick4(k, w0, w1, w2, w3):
    """[G, K] tile: column k of row g is w_k[g] (k < 4): a group's words laid out along the
    element dim, so element 4 g + k takes word k."""
    return tl.where(k == 0, w0[:, None], tl.where(k == 1, w1[:, None],
                                                  tl.where(k == 2, w2[:, None], w3[:, None])))


# -- host twin (numpy): the references' generator ------------------------------------------------
def _mulhilo(a: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    prod = np.uint64(a) * b.astype(np.uint64)
    return (prod >> np.uint64(32)).astype(np.uint32), (prod & np.uint64(0xFFFFFFFF)).astype(
        np.uint32)


def philox_host(seed: int, offset: int, groups) -> tuple[np.ndarray, ...]:
    """The four uint32 word arrays of `groups` (int64 array) in stream (seed, offset), as
    `philox_words` computes them."""
    g = np.asarray(groups).astype(np.uint64)
    c = [(g & np.uint64(0xFFFFFFFF)).astype(np.uint32), (g >> np.uint64(32)).astype(np.uint32),
         np.full(g.shape, offset & 0xFFFFFFFF, np.uint32),
         np.full(g.shape, (offset >> 32) & 0xFFFFFFFF, np.uint32)]
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    with np.errstate(over="ignore"):
        for _ in range(10):
            hi_b, lo_b = _mulhilo(ROUND_B, c[2])
            hi_a, lo_a = _mulhilo(ROUND_A, c[0])
            c = [hi_b ^ c[1] ^ np.uint32(k0), lo_b, hi_a ^ c[3] ^ np.uint32(k1), lo_a]
            k0, k1 = (k0 + KEY_A) & 0xFFFFFFFF, (k1 + KEY_B) & 0xFFFFFFFF
    return tuple(c)


def words_host(seed: int, offset: int, n: int, per_group: int = 4) -> np.ndarray:
    """Element i's word(s) for i < n: [n] uint32 (per_group 4: element i takes word i % 4 of
    group i // 4) or [n, 2] (per_group 2: words 2 (i % 2) and 2 (i % 2) + 1 of group i // 2)."""
    i = np.arange(n, dtype=np.int64)
    w = np.stack(philox_host(seed, offset, i // per_group), axis=-1)  # [n, 4]
    if per_group == 4:
        return w[np.arange(n), i % 4]
    k = 2 * (i % 2)
    return np.stack([w[np.arange(n), k], w[np.arange(n), k + 1]], axis=-1)


def unit_host(words: np.ndarray, digits: int) -> np.ndarray:
    """`unit_float` / `unit_f64` on the host, in float64 (exact): [n] words, or [n, 2] for
    digits 53."""
    if digits == 53:
        hi = (words[..., 0] >> np.uint32(5)).astype(np.float64)
        lo = (words[..., 1] >> np.uint32(6)).astype(np.float64)
        return hi * 2.0 ** -27 + lo * 2.0 ** -53
    return (words >> np.uint32(32 - digits)).astype(np.float64) * 2.0 ** -digits


def state_values(rng_state: torch.Tensor) -> tuple[int, int]:
    """(seed, offset) of a state tensor, on the host (references and tests only)."""
    seed, offset = rng_state.detach().cpu().tolist()
    return int(seed), int(offset)
