"""Chunk exchange: the programs that share one long line swap their partial reductions
through global memory inside one launch, so the line is read from DRAM once.

A line longer than one program's registers is cut into `n_chunks` chunks, one program each
(program id = line * n_chunks + chunk). Each program reduces its chunk in registers and writes
its partial to the workspace as one 8-byte word (two f32 values, `pack_pair`; the word is
never 0 once written), then polls the line's words until all are written, merges them in
chunk order (every program of the line gets the same bits) and writes its chunk from the
registers it already holds. Deterministic: integer words, no float atomics, a fixed merge
order. f64 partials do not fit a word: f64 lines keep a two-launch split.

Why this cannot hang: the programs of one line have adjacent ids, and the GPU dispatches
programs in id order, so a waiting program only waits on programs already running or next in
line. Should that ever not hold (a grid sharing the GPU, an unusual scheduler, the interpreter
that runs programs one after another), a program stops spinning after SPIN_LIMIT polls and
recomputes the missing partials itself from global memory with the same code (bit-identical,
only slower). Under the interpreter SPIN_LIMIT is 0: every program but the line's last one
takes that path, so CPU tests exercise it.

The words must be zero at launch: `zero()` is a Triton fill, so a plan call that uses it stays
replayable (backends/launch_replay.py).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .triton_support import INTERPRET

#: Polls of a line's words before a program computes the other chunks' partials itself.
SPIN_LIMIT = 0 if INTERPRET else 1 << 16

#: Block of the zero fill.
ZERO_BLOCK = 4096


@triton.jit
def zero_kernel(ptr, n, BLOCK: tl.constexpr):
    """ptr[0:n] = 0 for a contiguous buffer: a fill that stays a Triton launch, so a plan call
    that needs one can still be recorded and replayed (backends/launch_replay.py)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.zeros([BLOCK], ptr.dtype.element_ty), mask=offs < n)


def zero(t: torch.Tensor) -> None:
    """t[...] = 0; a Triton launch for contiguous tensors (replayable), torch's otherwise."""
    n = t.numel()
    if not n:
        return
    if t.is_contiguous():
        zero_kernel[(triton.cdiv(n, ZERO_BLOCK),)](t, n, BLOCK=ZERO_BLOCK)
    else:
        t.zero_()


@triton.jit
def pack_pair(a, b):
    """Two f32 values as one int64 word (a low, b high), stored and loaded whole. Unsigned
    throughout: no literal masks, whose integer type Triton picks (0xFFFFFFFF is not i64)."""
    lo = a.to(tl.uint32, bitcast=True).to(tl.uint64)
    hi = b.to(tl.uint32, bitcast=True).to(tl.uint64) << 32
    return (lo | hi).to(tl.int64, bitcast=True)


@triton.jit
def unpack_pair(w):
    u = w.to(tl.uint64, bitcast=True)
    a = u.to(tl.uint32).to(tl.float32, bitcast=True)
    b = (u >> 32).to(tl.uint32).to(tl.float32, bitcast=True)
    return a, b


@triton.jit
def wait_for_words(word_ptr, n_words, PARTS: tl.constexpr, SPIN: tl.constexpr):
    """Poll a line's n_words partial words (zeroed before the launch; a written word is never
    0) until all are written or SPIN polls have passed. Returns (words, all written); lanes
    past n_words read as 1. One 8-byte word carries a partial and its 'written' mark at once,
    so no fence or counter is needed: a poll is one load round trip."""
    j = tl.arange(0, PARTS)
    w = tl.load(word_ptr + j, mask=j < n_words, other=1, volatile=True)
    polls = 0
    while (tl.sum((w == 0).to(tl.int32), 0) > 0) & (polls < SPIN):
        w = tl.load(word_ptr + j, mask=j < n_words, other=1, volatile=True)
        polls += 1
    return w, tl.sum((w == 0).to(tl.int32), 0) == 0


def words(workspace: torch.Tensor, n: int) -> torch.Tensor:
    """The first n int64 partial words of a byte workspace."""
    return workspace.view(torch.uint8)[: 8 * n].view(torch.int64)
