"""Host side of the elementwise kernels: broadcast strides, dim collapsing, launch sizes,
scalar parameters, and the deterministic reduction of broadcast gradients."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

import torch
import triton.language as tl

from ...backends.triton_support import (
    INTERPRET,
    RecipeCache,
    acc_type,
    next_pow2,
    shifted_view,
    split_f64,
)
from ...core.layout import collapse_dims, row_major_strides
from ...core.runtime import cdiv
from ...core.vocab import ElementKind
from .kernels import rowsum_kernel, unary_kernel
from .table import IDENTITY_CODE

MAX_DIMS = 4
#: Two-dim problems whose rows are at least this long are walked row by row (MODE 1).
ROW_MODE_MIN = 256
_INT_TL = {
    ElementKind.I8: tl.int8, ElementKind.I16: tl.int16, ElementKind.I32: tl.int32,
    ElementKind.I64: tl.int64, ElementKind.U8: tl.uint8, ElementKind.BOOL: tl.int8,
}
_NATIVE = {ElementKind.F16: tl.float16, ElementKind.BF16: tl.bfloat16}


def compute_type(element: ElementKind, native: bool = False):
    """The `tl` type a kernel computes in: floats in their accumulator type (halves in f32),
    integers in their own (bool as int8); `native` keeps halves in their own type (kinds that
    work on the bits, table.Row.native)."""
    if element.is_float:
        return (native and _NATIVE.get(element)) or acc_type(element)
    return _INT_TL[element]


def params(*ps: float) -> list[float]:
    out: list[float] = []
    for p in ps:
        out += split_f64(p)
    return out


def expand_strides(t: torch.Tensor, out_shape: Sequence[int]) -> list[int]:
    """t's strides seen at out_shape (torch broadcasting: missing or extent-1 dims get 0)."""
    off = len(out_shape) - t.dim()
    st = []
    for j, d in enumerate(out_shape):
        k = j - off
        st.append(0 if k < 0 or (t.shape[k] == 1 and d != 1) else t.stride(k))
    return st


def block_for(tensors: Sequence[torch.Tensor], heavy: bool = False) -> tuple[int, int]:
    """(BLOCK, num_warps); `heavy` kinds (table.Row.heavy) take half the elements per thread
    so their backward fits the register file without spilling."""
    if INTERPRET:
        return 1024, 4
    # 8 elements per thread (one 16-byte access for halves, two for f32) keeps registers low
    # enough for full occupancy in the gated backward too.
    size = max(t.element_size() for t in tensors)
    block = 1024 if size <= 4 else 512
    return (block // 2 if heavy else block), 4


#: (kernel, out_shape, operand layouts, constexprs) -> (grid, int args, launch constexprs)
_RECIPES = RecipeCache()


def launch_map(kernel, out_shape: Sequence[int], tensors: Sequence[torch.Tensor],
               scalars: Sequence, strides: Sequence[Sequence[int]] | None = None,
               heavy: bool = False, **constexprs) -> None:
    """Run an elementwise kernel over out_shape; operand k is addressed by strides[k]
    (default: its broadcast strides). More than MAX_DIMS collapsed dims become several
    launches over the leading dims."""
    key = (kernel, tuple(out_shape), tuple(t.dtype for t in tensors),
           tuple(t.shape for t in tensors), tuple(t.stride() for t in tensors),
           None if strides is None else tuple(map(tuple, strides)), heavy,
           tuple(constexprs.items()))
    recipe = _RECIPES.get(key, lambda: _recipe(out_shape, tensors, strides, heavy, constexprs))
    if recipe is not None:
        grid, ints, launch_constexprs = recipe
        if grid[0]:
            kernel[grid](*tensors, *ints, *scalars, **launch_constexprs)
        return
    _launch_split(kernel, out_shape, tensors, scalars, strides, heavy, constexprs)


def _layout(out_shape, tensors, strides, heavy, constexprs):
    if strides is None:
        strides = [expand_strides(t, out_shape) for t in tensors]
    # Elementwise order is free: walk dims outermost-first by the strides of the outputs (the
    # last operands), so a transposed or permuted dense layout collapses to one flat pass.
    order = sorted(range(len(out_shape)), key=lambda j: [s[j] for s in reversed(strides)],
                   reverse=True)
    shape, st = collapse_dims(tuple(out_shape[j] for j in order),
                              [tuple(s[j] for j in order) for s in strides])
    shape, st = list(shape), [list(s) for s in st]
    block, warps = block_for(tensors, heavy)
    extra = max(len(shape) - MAX_DIMS, 0)
    lead, rest = shape[:extra], shape[extra:]
    mode = 0 if len(rest) == 1 else 1 if len(rest) == 2 and rest[-1] >= ROW_MODE_MIN else 2
    pad = MAX_DIMS - len(rest)
    rest4 = [1] * pad + rest
    n_inner = math.prod(rest)
    programs = (rest4[2] * cdiv(rest4[3], block) if mode == 1
                else cdiv(n_inner, block))
    st4 = [[0] * pad + s[extra:] for s in st]
    big = n_inner >= 2**31 or any(
        sum((d - 1) * x for d, x in zip(rest4, s)) >= 2**31 for s in st4)
    ints = [n_inner, rest4[1], rest4[2], rest4[3], *(v for s in st4 for v in s)]
    # enable_reflect_ftz=False: libdevice keeps subnormals, as torch's CUDA math does (fmod
    # by a subnormal divisor would otherwise be NaN)
    launch_constexprs = dict(MODE=mode, BIG=big, BLOCK=block, num_warps=warps,
                             enable_reflect_ftz=False, **constexprs)
    return lead, st, extra, (programs,), ints, launch_constexprs


def _recipe(out_shape, tensors, strides, heavy, constexprs):
    """One launch (grid, ints, constexprs), or None when the layout needs several."""
    if math.prod(out_shape) == 0:
        return (0,), [], {}
    lead, _, _, grid, ints, launch_constexprs = _layout(out_shape, tensors, strides, heavy,
                                                        constexprs)
    return None if lead else (grid, ints, launch_constexprs)


def _launch_split(kernel, out_shape, tensors, scalars, strides, heavy, constexprs) -> None:
    """More collapsed dims than the kernel indexes: one launch per leading index."""
    lead, st, extra, grid, ints, launch_constexprs = _layout(out_shape, tensors, strides, heavy,
                                                             constexprs)
    for idx in itertools.product(*[range(d) for d in lead]):
        views = [shifted_view(t, sum(i * s[k] for k, i in enumerate(idx)))
                 for t, s in zip(tensors, st)]
        kernel[grid](*views, *ints, *scalars, **launch_constexprs)


# -- deterministic reduction of broadcast gradients ----------------------------------------

TILE = 4096
CHUNK = 8192
MAX_GRID_Y = 65535


def _tile(K: int, R: int, k_inner: bool) -> tuple[int, int]:
    """(BK, BR): the unit-stride side gets up to the whole tile, the other side the rest."""
    if k_inner:
        bk = min(next_pow2(K), 256)
        return bk, max(TILE // bk, 1)
    br = min(next_pow2(R), TILE)
    return max(TILE // br, 1), br


@dataclasses.dataclass(frozen=True)
class Reduction:
    """How a gradient of an input broadcast to out_shape is reduced.

    The full-size gradient is written into the workspace as [R, K] (broadcast dims outer,
    kept dims inner: the usual bias-like case keeps the writes contiguous) or [K, R] when
    the innermost output dim is broadcast. Stage after stage, chunks of R are summed in a
    fixed order until one value per kept element is left, which is cast into the gradient.
    """

    out_shape: tuple[int, ...]
    kept: tuple[int, ...]
    reduced: tuple[int, ...]
    k_inner: bool
    #: (K, R, sk, sr, chunk, chunks, BK, BR) per stage
    stages: tuple[tuple[int, ...], ...]

    @property
    def K(self) -> int:
        return math.prod(self.out_shape[j] for j in self.kept)

    @property
    def R(self) -> int:
        return math.prod(self.out_shape[j] for j in self.reduced)

    def elements(self) -> int:
        return self.K * self.R + sum(self.K * st[5] for st in self.stages)

    def full_view(self, region: torch.Tensor) -> torch.Tensor:
        """The [out_shape] view of the workspace region the backward kernel writes."""
        order = (list(self.reduced) + list(self.kept) if self.k_inner
                 else list(self.kept) + list(self.reduced))
        strides = [0] * len(self.out_shape)
        acc = 1
        for j in reversed(order):
            strides[j] = acc
            acc *= self.out_shape[j]
        return region.as_strided(self.out_shape, strides, region.storage_offset())

    def finish(self, region: torch.Tensor, grad: torch.Tensor) -> None:
        """Fixed-order sums of the region, then a cast into grad (any strides)."""
        K = self.K
        src = region
        pos = K * self.R
        for k, r, sk, sr, chunk, c, bk, br in self.stages:
            dst = region[pos:pos + K * c]
            rowsum_kernel[(cdiv(K, bk), c)](src, dst, k, r, sk, sr, chunk, c,
                                                    BK=bk, BR=br, num_warps=4)
            src, pos = dst, pos + K * c
        kept_shape = [self.out_shape[j] for j in self.kept]
        off = len(self.out_shape) - grad.dim()
        gstrides = [grad.stride(j - off) if j >= off else 0 for j in self.kept]
        gview = grad.as_strided(kept_shape, gstrides, grad.storage_offset())
        contiguous = src.as_strided(kept_shape, row_major_strides(kept_shape),
                                    src.storage_offset())
        launch_map(unary_kernel, kept_shape, [contiguous, gview], params(0.0, 0.0, 0.0),
                   OP=IDENTITY_CODE, ACC=tl.float64 if src.dtype == torch.float64 else tl.float32)


def reduction_for(in_shape: Sequence[int], out_shape: Sequence[int]) -> Reduction | None:
    """None when the input is not broadcast (its gradient is written directly)."""
    in_shape, out_shape = tuple(in_shape), tuple(out_shape)
    if math.prod(in_shape) == math.prod(out_shape):
        return None
    nd = len(out_shape)
    aligned = (1,) * (nd - len(in_shape)) + in_shape
    kept = tuple(j for j in range(nd) if aligned[j] == out_shape[j])
    reduced = tuple(j for j in range(nd) if aligned[j] != out_shape[j])
    inner = [j for j in range(nd) if out_shape[j] > 1]
    k_inner = bool(inner) and inner[-1] in kept
    K = math.prod(out_shape[j] for j in kept)
    r = math.prod(out_shape[j] for j in reduced)
    sk, sr = (1, K) if k_inner else (r, 1)
    inner_k = k_inner
    stages = []
    while r > 1:
        bk, br = _tile(K, r, inner_k)
        chunk = min(max(CHUNK, cdiv(r, MAX_GRID_Y)), r)
        chunk = cdiv(chunk, br) * br
        c = cdiv(r, chunk)
        stages.append((K, r, sk, sr, chunk, c, bk, br))
        r, sk, sr, inner_k = c, c, 1, False  # partials are [K, C] contiguous
    return Reduction(out_shape, kept, reduced, k_inner, tuple(stages))


def workspace_regions(reductions: Sequence[Reduction | None], element: ElementKind,
                      workspace: torch.Tensor | None) -> list[torch.Tensor | None]:
    """Carve the workspace (bytes) into one accumulator region per broadcast gradient."""
    dt = element.compute_kind.torch_dtype
    size = torch.empty((), dtype=dt).element_size()
    total = sum(r.elements() for r in reductions if r is not None)
    if total == 0:
        return [None] * len(reductions)
    flat = workspace[: total * size].view(dt)
    out, pos = [], 0
    for r in reductions:
        if r is None:
            out.append(None)
            continue
        out.append(flat[pos:pos + r.elements()])
        pos += r.elements()
    return out


def workspace_bytes(reductions: Sequence[Reduction | None], element: ElementKind) -> int:
    size = 8 if element is ElementKind.F64 else 4
    return size * sum(r.elements() for r in reductions if r is not None)
