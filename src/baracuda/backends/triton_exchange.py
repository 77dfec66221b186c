"""Chunk exchange: the programs that share one long line swap their partial reductions
through global memory inside one launch, so the line is read from DRAM once.

A line longer than one program's registers is cut into `n_chunks` chunks, one program each
(program id = line * n_chunks + chunk). Each program reduces its chunk in registers, writes its
partial to the workspace, arrives at the line's counter and spins until every chunk of the line
has arrived; then it merges the line's partials in chunk order (every program of the line gets
the same bits) and writes its chunk from the registers it already holds.

Why this cannot hang: the programs of one line have adjacent ids, and the GPU dispatches
programs in id order, so a waiting program only waits on programs already running or next in
line; a line's chunks (128 for a 1M-element bf16 softmax line) are fewer than the programs a
GPU holds at once (several per SM). Should that ever not hold (a grid sharing the GPU, an
unusual scheduler, the interpreter that runs programs one after another), a program stops
spinning after SPIN_LIMIT polls and recomputes the missing partials itself from global memory
with the same code (bit-identical, only slower). Under the interpreter SPIN_LIMIT is 0: every
program but the line's last one takes that path, so CPU tests exercise it.

Where it pays: ops that read more than they write per exchange (softmax backward: dy and y in,
dx out), and f32 forwards. A bf16 forward (one tensor in, one out, the chunk held as f32) is
slower than a two-read loop when calls run back to back.

The counters must be zero at launch: `zero()` is a Triton fill, so a plan call that uses it
stays replayable (backends/launch_replay.py).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .triton_support import INTERPRET

#: Polls of a line's counter before a program computes the other chunks' partials itself.
SPIN_LIMIT = 0 if INTERPRET else 1 << 16

#: Chunks per line at most under the interpreter: its programs run one after another, so all
#: but a line's last recompute the line's partials (SPIN_LIMIT 0), quadratic in chunks.
INTERPRET_MAX_CHUNKS = 4

#: Block of the fill.
FILL_BLOCK = 4096


@triton.jit
def fill_kernel(ptr, n, split, VALUE: tl.constexpr, REST: tl.constexpr, BLOCK: tl.constexpr):
    """ptr[0:split] = VALUE, ptr[split:n] = REST for a contiguous buffer: a fill that stays a
    Triton launch, so a plan call that needs one can still be recorded and replayed
    (backends/launch_replay.py)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    dtype = ptr.dtype.element_ty
    value = tl.where(offs < split, tl.full([BLOCK], VALUE, dtype), tl.full([BLOCK], REST, dtype))
    tl.store(ptr + offs, value, mask=offs < n)


def fill(t: torch.Tensor, value: float = 0, rest: float | None = None,
         split: int | None = None) -> None:
    """t[...] = value; a Triton launch for contiguous tensors (replayable), torch's otherwise.
    With `split`, only the first `split` elements take `value` and the others `rest`, in the
    same launch (contiguous t only)."""
    n = t.numel()
    if not n:
        return
    if t.is_contiguous():
        fill_kernel[(triton.cdiv(n, FILL_BLOCK),)](
            t, n, n if split is None else split, VALUE=value,
            REST=value if rest is None else rest, BLOCK=FILL_BLOCK)
    elif split is None:
        t.fill_(value)
    else:
        raise ValueError(f"fill with a split takes a contiguous tensor, got strides {t.stride()}")


def zero(t: torch.Tensor) -> None:
    """t[...] = 0 (the counters of every exchange)."""
    fill(t, 0)


@triton.jit
def arrive_and_wait(count_ptr, n_chunks, SPIN: tl.constexpr):
    """Count this program in at its line's counter and wait for the line's other chunks.
    True when all arrived (their partials are visible: acquire), False after SPIN polls."""
    tl.debug_barrier()  # every thread's partial store is issued before the arrival (release)
    return _poll(count_ptr, tl.atomic_add(count_ptr, 1, sem="acq_rel") + 1, n_chunks, SPIN)


@triton.jit
def _poll(count_ptr, seen, n_chunks, SPIN: tl.constexpr):
    """Poll (acquire) until the line's count reaches n_chunks, at most SPIN times: the one
    wait of both protocols. True when every chunk arrived."""
    polls = 0
    while (seen < n_chunks) & (polls < SPIN):
        seen = tl.atomic_add(count_ptr, 0, sem="acquire")
        polls += 1
    return seen >= n_chunks


@triton.jit
def arrive(count_ptr):
    """The first half of `arrive_and_wait`, for a program that has loads to issue before it
    waits: count in with release semantics only, so loads issued after the arrival are not
    held back by it (an acquire would order them after the atomic's round trip; a release
    orders only what came before). Returns the count seen."""
    tl.debug_barrier()  # every thread's partial store is issued before the arrival (release)
    return tl.atomic_add(count_ptr, 1, sem="release") + 1


@triton.jit
def wait_all(count_ptr, n_chunks, SPIN: tl.constexpr):
    """The second half: poll (acquire) until the line's chunks all arrived; True when they
    did (their partials are visible), False after SPIN polls. Polls at least once, so the
    last arrival also acquires the others' partials."""
    return _poll(count_ptr, tl.atomic_add(count_ptr, 0, sem="acquire"), n_chunks, SPIN)


def chunk_length(chunk: int, extent: int, unit: int = 1) -> int:
    """Elements of a line per chunk program: `chunk` on a GPU; under the interpreter widened
    (a power of two times `unit`) to at most INTERPRET_MAX_CHUNKS chunks per line, so CPU
    tests of chunked lines stay cheap. The one rule for every family that exchanges."""
    if not INTERPRET:
        return chunk
    per = -(-extent // (unit * INTERPRET_MAX_CHUNKS))
    return max(chunk, unit * (1 << max(per - 1, 0).bit_length()))


def split_workspace(workspace: torch.Tensor, acc: torch.dtype, n_partials: int,
                    n_counters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(partials: n_partials acc values, counters: n_counters int32) carved from a byte
    workspace; see `exchange_bytes`."""
    raw = workspace.view(torch.uint8)
    head = n_partials * acc.itemsize
    partials = raw[:head].view(acc)
    counters = raw[head: head + 4 * n_counters].view(torch.int32)
    return partials, counters


def exchange_bytes(acc: torch.dtype, n_partials: int, n_counters: int) -> int:
    return n_partials * acc.itemsize + 4 * n_counters
