"""Chunks of long lines held in shared memory (Gluon, sm_90): the pieces every family's
shared-memory exchange shares (softmax/kernels_smem.py, normalization/kernels_smem.py).

A line of N elements is cut into chunks of R x LANE elements, one program each (program id =
line * NCH + chunk). A program copies its chunk into shared memory with cp.async (16 bytes
per copy, no registers held while the copies fly), reduces it slice by slice (SL x LANE,
re-read from shared memory rather than held), swaps its partials with the line's other
chunks through the workspace (backends/triton_exchange.py's protocol: integer arrival count,
release / acquire; or the fenceless counted slots below), and writes its chunk from shared
memory. Why shared memory: a chunk held in registers as f32 keeps half the bytes in flight
per register that a 16-bit chunk has, which starves the 16-bit forwards of memory
parallelism; a chunk in shared memory costs few registers and lets many programs per SM
keep their chunks in flight.

Not run by the Triton interpreter; plans select these kernels on sm_90 only.
"""

from __future__ import annotations

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from .triton_exchange import _poll as triton_poll
from .triton_exchange import exchange_bytes, fill, split_workspace, zero

#: Columns of one chunk row: a chunk is R x LANE elements, held as R // SL slices.
LANE = gl.constexpr(256)
#: Chunks are stored row by row as loaded: each thread reads back the 16 bytes it copied.
UNSWIZZLED = gl.constexpr(gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
#: exp(x) = exp2(x * LOG2E): the chunk reductions use the hardware's exp2.
LOG2E = gl.constexpr(1.4426950408889634)


@gluon.constexpr_function
def slice_layout(num_warps):
    """Register layout of one [SL, LANE] slice: 8 contiguous elements (16 B) per thread."""
    return gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])


@gluon.constexpr_function
def partials_layout(num_warps):
    """Layout of a line's partials, one per chunk."""
    return gl.BlockedLayout([1], [32], [num_warps], [0])


@gluon.jit
def slice_cols(c, s, R: gl.constexpr, SL: gl.constexpr, num_warps: gl.constexpr):
    """Line columns of slice s of chunk c, as an [SL, LANE] tensor."""
    layout: gl.constexpr = slice_layout(num_warps)
    r_idx = gl.arange(0, SL, layout=gl.SliceLayout(1, layout))
    l_idx = gl.arange(0, LANE, layout=gl.SliceLayout(0, layout))
    return c * (R * LANE) + s * (SL * LANE) + gl.expand_dims(r_idx, 1) * LANE \
        + gl.expand_dims(l_idx, 0)


@gluon.jit
def copy_slice(dst, line_ptr, c, s, N, R: gl.constexpr, SL: gl.constexpr,
               num_warps: gl.constexpr):
    """Issue the cp.async copies of slice s of chunk c of a contiguous line into the
    [SL, LANE] shared buffer `dst` (elements past N are left unset); not waited for."""
    cols = slice_cols(c, s, R, SL, num_warps)
    async_copy.async_copy_global_to_shared(dst, line_ptr + cols, mask=cols < N)


@gluon.jit
def copy_chunk(line_ptr, c, N, R: gl.constexpr, SL: gl.constexpr, num_warps: gl.constexpr):
    """Chunk c of a contiguous line into new shared memory; returns its [R // SL, SL, LANE]
    slices once every thread's copies have landed (elements past N are left unset)."""
    slices = gl.allocate_shared_memory(line_ptr.dtype.element_ty, [R // SL, SL, LANE],
                                       UNSWIZZLED)
    for s in gl.static_range(R // SL):  # every copy issued before any wait
        copy_slice(slices.index(s), line_ptr, c, s, N, R, SL, num_warps)
    async_copy.commit_group()
    async_copy.wait_group(0)
    gl.thread_barrier()
    return slices


@gluon.jit
def load_slice(slices, line_ptr, c, s, N, other, FROM_GLOBAL: gl.constexpr, R: gl.constexpr,
               SL: gl.constexpr, num_warps: gl.constexpr):
    """Slice s of chunk c as f32, `other` past the line's end: from shared memory (this
    program's chunk) or from global memory (another chunk, the no-wait path): the same
    values, so both paths reduce to the same bits."""
    cols = slice_cols(c, s, R, SL, num_warps)
    if FROM_GLOBAL:
        x = gl.load(line_ptr + cols, mask=cols < N, other=other).to(gl.float32)
    else:
        x = slices.index(s).load(slice_layout(num_warps)).to(gl.float32)
    return gl.where(cols < N, x, other)


# -- the (max, sum of exp) pair of softmax-like lines (line_reduce.py's Triton twins) -------

@gluon.jit
def chunk_max_sum(slices, line_ptr, c, N, aux, FROM_GLOBAL: gl.constexpr, R: gl.constexpr,
                  SL: gl.constexpr, num_warps: gl.constexpr):
    """Chunk c's (max, sum of exp(x - max)); 0 for the sum of an all -inf chunk (`aux`:
    unused, the shape exchange_pairs calls)."""
    layout: gl.constexpr = slice_layout(num_warps)
    macc = gl.full([SL, LANE], float("-inf"), gl.float32, layout)
    for s in range(R // SL):  # a loop, not unrolled: slices are re-read, not held
        macc = gl.maximum(macc, load_slice(slices, line_ptr, c, s, N, float("-inf"),
                                           FROM_GLOBAL, R, SL, num_warps))
    m = gl.max(gl.max(macc, axis=1), axis=0)
    m_safe = gl.where(m == float("-inf"), 0.0, m) * LOG2E
    sacc = gl.zeros([SL, LANE], gl.float32, layout)
    for s in range(R // SL):
        x = load_slice(slices, line_ptr, c, s, N, float("-inf"), FROM_GLOBAL, R, SL, num_warps)
        sacc += gl.exp2(x * LOG2E - m_safe)
    return m, gl.sum(gl.sum(sacc, axis=1), axis=0)


@gluon.jit
def merge_max_sum(pm, ps):
    """A line's (max, sum of exp(x - max)) from its chunks' pairs, in chunk order; the sum is
    NaN for an all -inf line, as torch's softmax."""
    big = gl.max(pm, axis=0)
    total = gl.sum(gl.where(pm > float("-inf"), ps * gl.exp2((pm - big) * LOG2E), 0.0), axis=0)
    return big, gl.where(big == float("-inf"), float("nan"), total)


@gluon.jit
def wait_prior_grid():
    """griddepcontrol.wait: block until the grid launched before this one (the counter fill)
    has completed and its writes are visible. The kernels launch with programmatic dependent
    launch, so their copies and chunk reductions overlap the fill; a no-op without it."""
    gl.inline_asm_elementwise("griddepcontrol.wait; // dummy $0", "=r", [], dtype=gl.int32,
                              is_pure=False, pack=1)


@gluon.jit
def count_in_and_poll(count_ptr, NCH: gl.constexpr, SPIN):
    """Arrive at the line's counter (after this program's partial stores) and poll until all
    NCH chunks arrived, at most SPIN times. True when they did (their partials visible)."""
    wait_prior_grid()  # the counters are zeroed by the launch before this one
    gl.thread_barrier()  # every thread's partial store is issued before the arrival (release)
    # the Triton exchange's poll (backends/triton_exchange.py): one wait for both dialects
    return triton_poll(count_ptr, gl.atomic_add(count_ptr, 1, sem="acq_rel") + 1, NCH, SPIN)


#: Most chunks per line (a line's partials are merged as one vector).
MAX_CHUNKS = 1024


#: (longest line or None, R, SL, warps) per kernel kind, first match, each the best of its
#: sweep. "line" (softmax, rms / layer norm): smaller chunks up to 64K elements, larger
#: beyond. "cross_entropy" (more work per element in the gradient): one config throughout.
#: "line_f32" (layer_norm's f32 forward, the one f32 user): one config at every length.
#: "layer_line" (layer_norm's 16-bit forward): slices of 8 chunk rows, its gamma and beta
#: loads for twice the columns in flight at once (rms_norm gains nothing: it keeps "line").
CHUNK_TABLE = {
    "line": ((65536, 32, 4, 4), (None, 64, 8, 8)),
    "layer_line": ((65536, 32, 8, 4), (None, 64, 8, 8)),
    "line_f32": ((None, 32, 4, 4),),
    "cross_entropy": ((None, 64, 4, 4),),
}


def chunk_config(extent: int, kind: str = "line") -> dict:
    """R (chunk rows of LANE), SL (slice rows) and warps for lines of `extent` elements."""
    for longest, r, sl, warps in CHUNK_TABLE[kind]:
        if longest is None or extent <= longest:
            return {"R": r, "SL": sl, "num_warps": warps}
    raise AssertionError("every table ends with a catch-all row")


def n_chunks(extent: int, cfg: dict | None = None) -> int:
    cfg = cfg or chunk_config(extent)
    return -(-extent // (cfg["R"] * int(LANE)))


def unsupported(arch, element, extent: int, min_extent: int, kind: str = "line",
                with_f32: bool = False) -> str | None:
    """Why a family's shared-memory candidate cannot take lines of `extent` elements (None:
    it can): sm_90, 16-bit elements (and f32 where the family found it faster, with_f32),
    longer than `min_extent` (shorter lines fit one program's registers), whole 16-byte
    copies of LANE columns, at most MAX_CHUNKS chunks."""
    from ..core.vocab import ArchSku, ElementKind

    if arch not in (ArchSku.SM90, ArchSku.SM90A):
        return f"needs sm_90 (Hopper), got {arch.value}"
    allowed = (ElementKind.BF16, ElementKind.F16) + ((ElementKind.F32,) if with_f32 else ())
    if element not in allowed:
        return (f"{'16-bit or f32' if with_f32 else '16-bit'} elements "
                f"({', '.join(e.value for e in allowed)}) only, got {element.value}")
    if extent <= min_extent or extent % int(LANE):
        return f"lines of more than {min_extent} elements, a multiple of {int(LANE)}, got {extent}"
    chunks = n_chunks(extent, chunk_config(extent, kind))
    if chunks > MAX_CHUNKS:
        return f"at most {MAX_CHUNKS} chunks per line, got {chunks}"
    return None


def exchange_workspace_bytes(lines: int, chunks: int) -> int:
    """Workspace of one exchange launch: an f32 partial pair per chunk, an int32 arrival
    counter per line (the layout `fresh_exchange` carves)."""
    return exchange_bytes(torch.float32, lines * chunks * 2, lines)


def fresh_exchange(workspace: torch.Tensor, lines: int, chunks: int):
    """(partials, counters) carved from `workspace`, the counters zeroed by a fill launch.
    Launch the exchange kernel right after it, with `launch_pdl=True`: the kernel waits for
    the fill only before counting in (wait_prior_grid)."""
    partials, counters = split_workspace(workspace, torch.float32, lines * chunks * 2, lines)
    zero(counters)
    return partials, counters


def contiguous_rows(*tensors) -> bool:
    """Every tensor is contiguous and 16-byte aligned (None entries are skipped): the lines
    are rows the kernels copy in whole 16-byte pieces."""
    return all(t is None or (t.is_contiguous() and t.data_ptr() % 16 == 0) for t in tensors)


@gluon.jit
def exchange_pairs(a, b, part_ptr, count_ptr, slices, line_ptr, line, N, aux, SPIN,
                   chunk_pair: gl.constexpr, A_EMPTY: gl.constexpr, NCH: gl.constexpr,
                   NCH_P2: gl.constexpr, R: gl.constexpr, SL: gl.constexpr,
                   num_warps: gl.constexpr):
    """Publish this chunk's partial pair (a, b), count in, and return the line's pairs as two
    [NCH_P2] vectors in chunk order (A_EMPTY / 0 past NCH). A program that stops waiting
    computes every chunk's pair from global memory with `chunk_pair(slices, line_ptr, chunk,
    N, aux, FROM_GLOBAL=True, R, SL, num_warps)`, the function the chunk programs ran on their
    shared memory: the same bits either way."""
    pid = gl.program_id(0)  # = line * NCH + chunk
    gl.store(part_ptr + pid * 2, a)
    gl.store(part_ptr + pid * 2 + 1, b)
    all_in = count_in_and_poll(count_ptr + line, NCH, SPIN)
    if all_in:
        pa, pb = arrived_pairs(part_ptr, line, A_EMPTY, NCH, NCH_P2, num_warps)
    else:
        pa, pb = recomputed_pairs(slices, line_ptr, N, aux, chunk_pair, A_EMPTY, NCH, NCH_P2,
                                  R, SL, num_warps)
    return pa, pb


@gluon.jit
def recomputed_pairs(slices, line_ptr, N, aux, chunk_pair: gl.constexpr, A_EMPTY: gl.constexpr,
                     NCH: gl.constexpr, NCH_P2: gl.constexpr, R: gl.constexpr,
                     SL: gl.constexpr, num_warps: gl.constexpr):
    """The no-wait path of both protocols: every chunk's pair computed from global memory
    by `chunk_pair` (the chunk programs' own function: the same bits), as two [NCH_P2]
    vectors in chunk order (A_EMPTY / 0 past NCH)."""
    pa, pb = empty_pairs(A_EMPTY, NCH_P2, num_warps)
    po = gl.arange(0, NCH_P2, layout=partials_layout(num_warps))
    for other in range(NCH):
        oa, ob = chunk_pair(slices, line_ptr, other, N, aux, True, R, SL, num_warps)
        pa = gl.where(po == other, oa, pa)
        pb = gl.where(po == other, ob, pb)
    return pa, pb


@gluon.jit
def arrived_pairs(part_ptr, line, A_EMPTY: gl.constexpr, NCH: gl.constexpr,
                  NCH_P2: gl.constexpr, num_warps: gl.constexpr):
    """A line's published pairs as two [NCH_P2] vectors in chunk order (A_EMPTY / 0 past
    NCH), once every chunk arrived."""
    po = gl.arange(0, NCH_P2, layout=partials_layout(num_warps))
    first = part_ptr + (line * NCH + po) * 2
    return (gl.load(first, mask=po < NCH, other=A_EMPTY, volatile=True),
            gl.load(first + 1, mask=po < NCH, other=0.0, volatile=True))


@gluon.jit
def empty_pairs(A_EMPTY: gl.constexpr, NCH_P2: gl.constexpr, num_warps: gl.constexpr):
    """[NCH_P2] vectors of (A_EMPTY, 0), for a no-wait path to fill chunk by chunk."""
    p_layout: gl.constexpr = partials_layout(num_warps)
    return (gl.full([NCH_P2], A_EMPTY, gl.float32, p_layout),
            gl.zeros([NCH_P2], gl.float32, p_layout))


# -- Slots: a pair is published by storing it over UNSET_BITS, which the launch before set; a
# reader takes a line's pairs once none of its slots holds those bits. No fence, no atomic: the
# slot's own bits say its pair has landed. The backward's persistent ring polls the slots alone
# (published_pairs: no fence or atomic per row, normalization/kernels_smem.py); the forward
# counts in first, relaxed, and reads the slots once the count says they are all written
# (counted_slot_pairs).

#: The 32 bits of a slot not yet published: a NaN whose payload no arithmetic makes (the
#: GPU's float results carry the canonical NaN), so a partial that is itself NaN (NaN or inf in
#: the input) still reads as published; with NaN as the mark, its readers spun SPIN polls and
#: recomputed the line's pairs.
UNSET_BITS = gl.constexpr(0x7FBADBAD)


def slots_workspace_bytes(lines: int, chunks: int) -> int:
    """Workspace of the slot protocol: an f32 pair per chunk, no counters."""
    return exchange_bytes(torch.float32, lines * chunks * 2, 0)


def fresh_slots(workspace: torch.Tensor, lines: int, chunks: int) -> torch.Tensor:
    """The pairs' slots carved from `workspace` and set to UNSET_BITS by a fill launch. Launch
    the kernel right after it with `launch_pdl=True`; it waits for the fill (wait_prior_grid)
    before its first store."""
    slots, _ = split_workspace(workspace, torch.float32, lines * chunks * 2, 0)
    fill(slots.view(torch.int32), UNSET_BITS.value)
    return slots


def fresh_counted_slots(workspace: torch.Tensor, lines: int, chunks: int):
    """(slots, counters) of `counted_slot_pairs`, carved as `fresh_exchange` carves them (the
    same workspace bytes) and set by one fill launch: the slots to UNSET_BITS, the counters to
    0. Launch the kernel right after it with `launch_pdl=True`."""
    n_slots = lines * chunks * 2
    slots, counters = split_workspace(workspace, torch.float32, n_slots, lines)
    region = workspace.view(torch.uint8)[: 4 * (n_slots + lines)].view(torch.int32)
    fill(region, UNSET_BITS.value, rest=0, split=n_slots)
    return slots, counters


@gluon.jit
def published_pairs(slot_ptr, line, NCH: gl.constexpr, NCH_P2: gl.constexpr, SPIN,
                    num_warps: gl.constexpr):
    """(pairs still unset, a, b): the line's NCH pairs as [NCH_P2] vectors in chunk order (0
    past NCH), polled at most SPIN more times while any is still unset. NCH_P2 must be at least
    the program's thread count: no warp then holds a copy of another's pairs, so the unset
    count is reduced across warps and every warp takes the same branch (with copies, a warp
    that saw a pair late fell back alone, and the fallback's cross-warp reduction read
    garbage)."""
    gl.static_assert(NCH_P2 >= 32 * num_warps)
    po = gl.arange(0, NCH_P2, layout=partials_layout(num_warps))
    first = slot_ptr + (line.to(gl.int64) * NCH + po) * 2
    live = po < NCH
    unset, a, b = _poll_slots(first, live)
    polls = 0
    while (unset > 0) & (polls < SPIN):
        unset, a, b = _poll_slots(first, live)
        polls += 1
    return unset, a, b


@gluon.jit
def counted_slot_pairs(a, b, slot_ptr, count_ptr, slices, line_ptr, line, N, aux, SPIN,
                       chunk_pair: gl.constexpr, A_EMPTY: gl.constexpr, NCH: gl.constexpr,
                       NCH_P2: gl.constexpr, R: gl.constexpr, SL: gl.constexpr,
                       num_warps: gl.constexpr):
    """`exchange_pairs` without its fences: publish (a, b) into this chunk's slot, count in
    relaxed (the count only says when to look), then read the line's slots until none holds
    UNSET_BITS. The counter protocol's release-ordered arrival and acquiring polls cost the
    16-bit layer_norm forward a little. Each
    warp polls its own copy of the pairs; one cross-warp reduction after the polls makes the
    fall-back decision (`chunk_pair` from global memory, the same bits) the same in every
    warp."""
    wait_prior_grid()  # the slots and counters are set by the fill launched just before
    pid = gl.program_id(0)  # = line * NCH + chunk
    gl.store(slot_ptr + pid * 2, a)
    gl.store(slot_ptr + pid * 2 + 1, b)
    gl.thread_barrier()  # the pair's stores are issued before the count says they are
    seen = gl.atomic_add(count_ptr + line, 1, sem="relaxed") + 1
    polls = 0
    while (seen < NCH) & (polls < SPIN):
        seen = gl.atomic_add(count_ptr + line, 0, sem="relaxed")
        polls += 1
    po = gl.arange(0, NCH_P2, layout=partials_layout(num_warps))
    first = slot_ptr + (line.to(gl.int64) * NCH + po) * 2
    in_line = po < NCH
    unset, pa, pb = _poll_slots(first, in_line)
    while (unset > 0) & (polls < SPIN):  # the count's polls and these share one SPIN
        unset, pa, pb = _poll_slots(first, in_line)
        polls += 1
    every_warp = gl.full([32 * num_warps], unset, gl.int32, partials_layout(num_warps))
    if gl.max(every_warp, axis=0) > 0:
        pa, pb = recomputed_pairs(slices, line_ptr, N, aux, chunk_pair, A_EMPTY, NCH, NCH_P2,
                                  R, SL, num_warps)
    else:
        pa = gl.where(in_line, pa, A_EMPTY)
    return pa, pb


@gluon.jit
def _poll_slots(first, live):
    """One read of a line's slots: (how many pairs are still unset, a, b)."""
    a = gl.load(first, mask=live, other=0.0, volatile=True)
    b = gl.load(first + 1, mask=live, other=0.0, volatile=True)
    unset = (a.to(gl.int32, bitcast=True) == UNSET_BITS) \
        | (b.to(gl.int32, bitcast=True) == UNSET_BITS)
    return gl.sum(unset.to(gl.int32), axis=0), a, b
