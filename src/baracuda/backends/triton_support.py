"""Triton plumbing shared by every family: interpreter detection, shared `tl` helpers,
device properties and launch-size helpers.

`INTERPRET` is read once, at import: the Triton interpreter must be chosen before any
`@triton.jit` module is imported (tests/conftest.py sets TRITON_INTERPRET=1 on CPU machines).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import torch
import triton
import triton.language as tl
from triton import knobs

from ..core.runtime import INTERPRET, cdiv  # noqa: F401  (cdiv: one home for kernels' callers)
from ..core.vocab import ElementKind
from . import launch_replay

#: Constexpr twin of INTERPRET for kernels: branches on it compile away on the GPU.
INTERP = tl.constexpr(INTERPRET)


def acc_type(element):
    """The `tl` accumulator type of an ElementKind: f64 stays f64, everything else sums in f32
    (the torch dtype is `element.compute_kind.torch_dtype` for floats)."""
    return tl.float64 if element is ElementKind.F64 else tl.float32


@functools.lru_cache(maxsize=8)
def sm_count(device_index: int | None = None) -> int:
    """Multiprocessors on the device (a small stand-in under the interpreter)."""
    if INTERPRET or not torch.cuda.is_available():
        return 4
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else triton.next_power_of_2(n)


def triton_dtype(dtype: torch.dtype) -> str:
    """Signature string of a torch dtype for AOT compiles ("*bf16" is the pointer form)."""
    return {
        torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
        torch.float64: "fp64", torch.int32: "i32", torch.int64: "i64", torch.int8: "i8",
        torch.int16: "i16", torch.uint8: "u8", torch.bool: "i1",
    }[dtype]


# -- activations shared by the elementwise kernels and the GEMM epilogues ---------------------
# One source for each formula and its derivative (torch's definitions), in the forms that stay
# accurate in f32 on sm_90; no libdevice (it breaks the interpreter).
SQRT1_2 = tl.constexpr(0.7071067811865476)
INV_SQRT_2PI = tl.constexpr(0.3989422804014327)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def round_to(v, TY: tl.constexpr):
    """Float v rounded once, to nearest even, to float type TY. f64 into a half goes through
    f32, as torch's conversion does (c10's Half / BFloat16 are built from a float). The
    interpreter truncates f32 to bf16 (and reads an f64 cast to bf16 as an integer's bits), so
    there the rounding is done on the bits; on the GPU `.to` rounds to nearest even."""
    if v.dtype == tl.float64 and (TY == tl.float16 or TY == tl.bfloat16):
        v = v.to(tl.float32)
    if INTERP and TY == tl.bfloat16 and v.dtype == tl.float32:
        bits = v.to(tl.uint32, bitcast=True)
        r = bits + 0x7FFF + ((bits >> 16) & 1)
        r = tl.where(v != v, bits | 0x400000, r)  # a NaN stays a (quiet) NaN
        return (r >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    return v.to(TY)


@triton.jit
def gelu_erf(x):
    return 0.5 * x * (1.0 + tl.math.erf(x * SQRT1_2))


@triton.jit
def gelu_erf_grad(x):
    return 0.5 * (1.0 + tl.math.erf(x * SQRT1_2)) + x * INV_SQRT_2PI * tl.exp(-0.5 * x * x)


@triton.jit
def gelu_tanh(x):
    # 0.5 (1 + tanh(u)) = sigmoid(2u): no cancellation as tanh(u) -> -1 for negative x
    u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    return x / (1.0 + tl.exp(-2.0 * u))


@triton.jit
def gelu_tanh_grad(x):
    # With s = sigmoid(2u): 0.5 (1 + t) = s and 1 - t^2 = 4 s (1 - s), 1 - s = sigmoid(-2u);
    # the tanh form cancels in 1 + t for negative x (H100: 1.3x over the f32 tolerance).
    u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    s = 1.0 / (1.0 + tl.exp(-2.0 * u))
    s_neg = 1.0 / (1.0 + tl.exp(2.0 * u))
    du = SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x)
    return s + 2.0 * x * s * s_neg * du


@triton.jit
def silu(x):
    return x / (1.0 + tl.exp(-x))


@triton.jit
def silu_grad(x):
    s = 1.0 / (1.0 + tl.exp(-x))
    return s * (1.0 + x * (1.0 - s))


@triton.jit
def dot_acc(a, b, acc, INTERPRETING: tl.constexpr):
    """acc + a @ b; under the interpreter bf16 dots are wrong, so upcast there only."""
    if INTERPRETING:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    return tl.dot(a, b, acc)


#: Outer dims a line-wise kernel addresses directly; more are split into launches on the host.
MAX_OUTER_DIMS = 4


@tl.core.builtin
def reduce_with(input, axis, combine_fn, _semantic=None, _generator=None):
    """tl.reduce with a combine that arrives as a constexpr kernel argument (a caller's
    monoid): the compiler hands such a function over wrapped, tl.reduce wants the function."""
    return tl.reduce(input, axis, tl.core._unwrap_if_constexpr(combine_fn),
                     _semantic=_semantic, _generator=_generator)


@tl.core.builtin
def scan_with(input, axis, combine_fn, _semantic=None, _generator=None):
    """tl.associative_scan with a combine that arrives as a constexpr kernel argument."""
    return tl.associative_scan(input, axis, tl.core._unwrap_if_constexpr(combine_fn),
                               _semantic=_semantic, _generator=_generator)


@triton.jit
def line_offset(row, S1, S2, S3, st0, st1, st2, st3):
    """Element offset of line `row` (int64) in a tensor whose outer dims, after collapsing,
    are [S0, S1, S2, S3] (S0 implied) with strides st0..st3."""
    i3 = row % S3
    r = row // S3
    i2 = r % S2
    r = r // S2
    i1 = r % S1
    i0 = r // S1
    return i0 * st0 + i1 * st1 + i2 * st2 + i3 * st3


def maxnreg_option(cap: int | None) -> dict:
    """Triton's `maxnreg` launch option for a register cap (None: uncapped, no option): the
    one spelling of every family's capped launches."""
    return {} if cap is None else {"maxnreg": cap}


def pad_outer(shape, strides, n: int, last: bool) -> tuple[list[int], list[list[int]]]:
    """(shape, per-tensor strides) of fewer than `n` outer dims padded to `n` with unit
    extents of stride 0: before the real dims, or after them (`last`: the unit extents then
    reach the kernel as the JIT's constant 1s, so its row-offset division folds away). The one
    padding of every line-wise launch (outer_launch_groups, normalization's RowLayout)."""
    pad = n - len(shape)
    if last:
        return list(shape) + [1] * pad, [list(s) + [0] * pad for s in strides]
    return [1] * pad + list(shape), [[0] * pad + list(s) for s in strides]


def outer_launch_groups(view, tensors, pad_last: bool = False):
    """Yield (tensor views, outer shape[4], per-tensor strides[4]) covering all lines of an
    AxisView, padding to MAX_OUTER_DIMS dims; extra leading dims become separate launches.

    `pad_last` puts the unit dims after the real ones: they become the JIT's constant 1s, so
    `line_offset` of a one-outer-dim launch folds to row * stride, with no 64-bit division by
    a runtime extent before a program's first load. On the H100 that helps the one-pass
    softmax TILE but slows the chunk EXCHANGE (cause unknown), so callers choose per mode."""
    shape = list(view.outer_shape)
    strides = [list(s) for s in view.outer_strides]
    extra = len(shape) - MAX_OUTER_DIMS
    if extra <= 0:
        yield (tensors, *pad_outer(shape, strides, MAX_OUTER_DIMS, pad_last))
        return
    lead, rest = shape[:extra], shape[extra:]
    for idx in itertools.product(*[range(d) for d in lead]):
        offs = [sum(i * s[k] for k, i in enumerate(idx)) for s in strides]
        views = [shifted_view(t, o) for t, o in zip(tensors, offs)]
        yield (views, rest, [s[extra:] for s in strides])


def shifted_view(t: torch.Tensor, offset: int) -> torch.Tensor:
    """A flat view of `t`'s storage starting `offset` elements after t's first element (a
    base pointer for a launch that covers part of a tensor; the kernel indexes from it)."""
    return t.as_strided((1,), (1,), t.storage_offset() + offset)


def split_f64(value: float) -> tuple[float, float]:
    """`value` as (hi, lo), both exactly float32, with hi + lo == value to ~48 bits.

    Triton passes Python floats to kernels as fp32 scalars; f64 kernels (and f32 kernels that
    need a scale beyond fp32) rebuild the value with `join_f64`. hi rounds toward zero, so an
    integer-valued parameter stays an integer in hi; non-finite values pass through in hi.
    """
    value = float(value)
    if not math.isfinite(value):
        return value, 0.0
    hi = np.float32(value)
    if abs(float(hi)) > abs(value):
        hi = np.nextafter(hi, np.float32(0))
    return float(hi), float(np.float32(value - float(hi)))


@triton.jit
def join_f64(hi, lo, ACC: tl.constexpr):
    """The scalar split by `split_f64`, rebuilt in the kernel's accumulator type."""
    return tl.cast(hi, ACC) + tl.cast(lo, ACC)


class RecipeCache:
    """Launch recipes (grids, integer arguments, constexprs) worked out from a layout, kept per
    key: eager calls repeat a few layouts, and working a layout out is a visible share of a
    call's host time. Bounded: cleared when full. `make()` may return None (not cacheable)."""

    def __init__(self, limit: int = 4096):
        self._table: dict = {}
        self._limit = limit

    def get(self, key, make):
        recipe = self._table.get(key)
        if recipe is None:
            recipe = make()
            if recipe is not None:
                if len(self._table) >= self._limit:
                    self._table.clear()
                self._table[key] = recipe
        return recipe

    def clear(self) -> None:
        """Forget every recipe (after a change of the module constants they were made from)."""
        self._table.clear()


# -- fast launch ---------------------------------------------------------------------------------
# Triton's `kernel[grid](...)` costs ~20 us of host time per launch on an H100 host, most of it
# outside the compiled launcher (binding and specializing every argument, option parsing, knob
# lookups, the string cache key). Eager calls repeat a handful of specializations, so each
# kernel keeps its own table: (device, a cheap key at least as fine as Triton's specialization
# of the arguments, the keyword arguments) -> (compiled kernel, the bound values of the
# parameters after the positional ones). A hit launches the compiled kernel directly (with
# Triton's launch hooks, if a profiler set them); misses and warm-ups take Triton's path
# unchanged, so what is compiled and how arguments are specialized stays Triton's.

_I32_MIN, _I32_MAX, _U64_FROM = -(1 << 31), (1 << 31) - 1, 1 << 63


def _spec_key(args, constexpr_flags) -> tuple:
    """Per argument what Triton 3.6 specializes on: a tensor's dtype and 16-byte alignment; an
    int's class (== 1, divisible by 16, i32 / i64 / u64 range); only the type of floats and
    bools; constexpr parameters and anything else by value."""
    key = []
    for a, is_constexpr in zip(args, constexpr_flags):
        t = type(a)
        if is_constexpr:
            key.append(a)
        elif t is int:
            key.append(-1 if a == 1 else (a & 15 == 0) + 2 * (_I32_MIN <= a <= _I32_MAX)
                       + 4 * (a >= _U64_FROM))
        elif t is float or t is bool:
            key.append(t)
        elif isinstance(a, torch.Tensor):
            key.append((a.dtype, a.data_ptr() & 15 == 0))
        else:
            key.append(a)
    return tuple(key)


def _kernel_params(kernel) -> tuple:
    info = kernel.__dict__.get("_baracuda_params")
    if info is None:
        info = (tuple(p.is_constexpr for p in kernel.params),
                frozenset(p.name for p in kernel.params if p.is_constexpr))
        kernel._baracuda_params = info
    return info


def _fast_run(kernel, slow_run, *args, grid, warmup, **kwargs):
    if warmup:
        return slow_run(*args, grid=grid, warmup=warmup, **kwargs)
    flags, constexpr_names = _kernel_params(kernel)
    device = torch.cuda.current_device()
    key = (device, _spec_key(args, flags), tuple(kwargs.items()))
    table = kernel.__dict__.setdefault("_baracuda_launch_table", {})
    entry = table.get(key)
    recording = launch_replay.active()
    if entry is None:
        compiled = slow_run(*args, grid=grid, warmup=False, **kwargs)
        if hasattr(compiled, "result"):  # asynchronous compile: launch by Triton's path
            if recording is not None:
                recording.refuse("asynchronous compile")
            return compiled
        # Only keyword arguments that are constexprs (fixed by the key) may follow the
        # positional ones; a runtime parameter passed by keyword keeps Triton's path.
        if all(k in constexpr_names or k not in kernel.arg_names for k in kwargs):
            bound = kernel.device_caches[device][4](*args, **kwargs)[0]
            compiled._init_handles()
            if len(table) > 256:
                table.clear()
            entry = (compiled, tuple(bound.values())[len(args):], _direct_launch(compiled))
            table[key] = entry
            if recording is not None:
                recording.add(*_launch_of(kernel, entry, args, grid))
        elif recording is not None:
            recording.refuse(f"{kernel.__name__}: a runtime argument passed by keyword")
        return compiled
    direct, compiled, grid, full = _launch_of(kernel, entry, args, grid)
    if recording is not None:
        recording.add(direct, compiled, grid, full)
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    stream = torch._C._cuda_getCurrentRawStream(device)
    # Hooks are honoured as Triton does; empty HookChains (3.6's default, never None) are
    # skipped, saving the metadata dictionary and two Python calls per launch.
    if launch_replay.hooks_installed():
        runtime = knobs.runtime
        enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
        meta = compiled.launch_metadata(grid, stream, *full)
    else:
        enter = leave = meta = None
    if direct is None:
        compiled.run(grid[0], g1, g2, stream, compiled.function, compiled.packed_metadata,
                     meta, enter, leave, *full)
    else:
        launch, cooperative, pdl = direct
        launch(grid[0], g1, g2, stream, compiled.function, cooperative, pdl, None, None,
               compiled.packed_metadata, meta, enter, leave, *full)
    return compiled


def _launch_of(kernel, entry, args, grid) -> tuple:
    """(direct launcher or None, compiled kernel, grid tuple, full arguments) of one launch
    from its table entry: what the fast path launches and what a recording keeps."""
    compiled, tail, direct = entry
    full = (*args, *tail)
    if callable(grid):
        grid = grid(dict(zip(kernel.arg_names, full)))
    return direct, compiled, tuple(grid), full


def _direct_launch(compiled):
    """The C launcher and its flags when the kernel needs no global or profile scratch:
    calling it skips the Python wrapper that would allocate them (a few us per launch)."""
    run = compiled.run
    names = ("launch", "global_scratch_size", "profile_scratch_size", "launch_cooperative_grid",
             "launch_pdl")
    if not all(hasattr(run, n) for n in names) or run.global_scratch_size or \
            run.profile_scratch_size:
        return None
    return run.launch, run.launch_cooperative_grid, run.launch_pdl


def enable_fast_launch(module_prefix: str = "baracuda.") -> int:
    """Give every Triton kernel defined in the loaded modules under `module_prefix` the cached
    launch path above (per instance; Triton's class and other code are untouched). Returns
    how many kernels were switched. No-op under the interpreter.

    The prefix covers the backends' shared kernels too (triton_exchange's counter fill): a
    kernel left on Triton's path is not recorded, so every call that launches it would be
    refused a replay."""
    if INTERPRET:
        return 0
    import sys

    from triton.runtime.jit import JITFunction

    count = 0
    for name, mod in list(sys.modules.items()):
        if not name.startswith(module_prefix) or mod is None:
            continue
        for obj in list(vars(mod).values()):
            if isinstance(obj, JITFunction) and "_baracuda_slow_run" not in obj.__dict__:
                obj._baracuda_slow_run = obj.run
                obj.run = functools.partial(_fast_run, obj, obj.run)
                count += 1
    return count
