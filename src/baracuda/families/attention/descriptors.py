"""Attention family descriptors and args: SDPA forward/backward, RoPE, KV-cache append."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import partial

import torch

from ...core import validate as V
from ...core.args import NON_NEGATIVE, UNIT_LAST, Args, operand
from ...core.errors import InvalidProblem, Unsupported
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, INDEX_KINDS, ElementKind

FLOATS = sorted(FLOAT_KINDS, key=lambda k: k.value)
MIN_HEAD_DIM, MAX_HEAD_DIM = 1, 256


class CausalKind(enum.Enum):
    """Which causal diagonal: query i sees key j when j <= i + offset.

    TOP_LEFT: offset 0 (torch's is_causal). BOTTOM_RIGHT: offset Sk - Sq (the last query sees
    every key; torch's causal_lower_right, FlashAttention's convention for Sq != Sk).
    """

    NONE = "none"
    TOP_LEFT = "top_left"
    BOTTOM_RIGHT = "bottom_right"


class MaskKind(enum.Enum):
    NONE = "none"
    ADDITIVE = "additive"  # float added to the scaled scores
    BOOLEAN = "boolean"  # True = attend (torch's convention)


def _check_float(who: str, name: str, element) -> None:
    if not isinstance(element, ElementKind):
        raise InvalidProblem(f"{who}: {name} must be an ElementKind, got {element!r}")
    V.check_element(who, name, element, FLOATS)


def _broadcastable(mask_shape: tuple[int, ...], full: tuple[int, ...]) -> bool:
    return len(mask_shape) == 4 and all(m in (1, f) for m, f in zip(mask_shape, full))


@dataclass(frozen=True)
class SdpaDescriptor(Descriptor):
    """out = dropout(softmax(scale · Q Kᵀ + mask, causal)) V, per (batch, query head).

    Q [batch, num_heads, query_len, head_dim], K [batch, num_kv_heads, key_len, head_dim],
    V [batch, num_kv_heads, key_len, value_dim]; query head h reads kv head
    h // (num_heads // num_kv_heads) (GQA; MQA when num_kv_heads == 1). `mask_shape` is the
    4-d shape of the mask (each extent 1 or the full one), None without a mask.
    """

    batch: int
    num_heads: int
    num_kv_heads: int
    query_len: int
    key_len: int
    head_dim: int
    value_dim: int
    scale: float
    element: ElementKind
    causal: CausalKind = CausalKind.NONE
    mask: MaskKind = MaskKind.NONE
    mask_shape: tuple[int, ...] | None = None
    dropout_p: float = 0.0

    def validate(self, who: str) -> None:
        _check_float(who, "element", self.element)
        dims = (self.batch, self.num_heads, self.num_kv_heads, self.query_len, self.key_len,
                self.head_dim, self.value_dim)
        V.check_shape(who, "(batch, num_heads, num_kv_heads, query_len, key_len, head_dim, "
                      "value_dim)", dims)
        if self.num_kv_heads == 0 and self.num_heads:
            raise InvalidProblem(f"{who}: num_kv_heads must be > 0 when num_heads > 0, got 0")
        if self.num_kv_heads and self.num_heads % self.num_kv_heads:
            raise InvalidProblem(
                f"{who}: num_heads must be a multiple of num_kv_heads (GQA), got "
                f"num_heads {self.num_heads}, num_kv_heads {self.num_kv_heads}")
        for name in ("head_dim", "value_dim"):
            d = getattr(self, name)
            if not MIN_HEAD_DIM <= d <= MAX_HEAD_DIM:
                raise Unsupported(f"{who}: {name} must be in {MIN_HEAD_DIM}..{MAX_HEAD_DIM}, "
                                  f"got {d}")
        V.check_finite(who, "scale", self.scale)
        if not isinstance(self.causal, CausalKind):
            raise InvalidProblem(f"{who}: causal must be a CausalKind, got {self.causal!r}")
        if not isinstance(self.mask, MaskKind):
            raise InvalidProblem(f"{who}: mask must be a MaskKind, got {self.mask!r}")
        if self.mask is MaskKind.NONE:
            if self.mask_shape is not None:
                raise InvalidProblem(f"{who}: mask_shape given without a mask: {self.mask_shape}")
        else:
            full = (self.batch, self.num_heads, self.query_len, self.key_len)
            shape = V.check_shape(who, "mask_shape", self.mask_shape or ())
            if not _broadcastable(shape, full):
                raise InvalidProblem(
                    f"{who}: mask_shape must be 4-d and broadcastable to [B, H, Sq, Sk] = "
                    f"{list(full)}, got {self.mask_shape}")
        V.check_finite(who, "dropout_p", self.dropout_p)
        if not 0.0 <= self.dropout_p < 1.0:
            raise InvalidProblem(f"{who}: dropout_p must be in [0, 1), got {self.dropout_p}")

    # -- shapes ------------------------------------------------------------------------------
    @property
    def q_shape(self) -> tuple[int, ...]:
        return (self.batch, self.num_heads, self.query_len, self.head_dim)

    @property
    def k_shape(self) -> tuple[int, ...]:
        return (self.batch, self.num_kv_heads, self.key_len, self.head_dim)

    @property
    def v_shape(self) -> tuple[int, ...]:
        return (self.batch, self.num_kv_heads, self.key_len, self.value_dim)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.batch, self.num_heads, self.query_len, self.value_dim)

    @property
    def lse_shape(self) -> tuple[int, ...]:
        return (self.batch, self.num_heads, self.query_len)

    @property
    def lse_element(self) -> ElementKind:
        return ElementKind.F64 if self.element is ElementKind.F64 else ElementKind.F32

    @property
    def causal_offset(self) -> int:
        return self.key_len - self.query_len if self.causal is CausalKind.BOTTOM_RIGHT else 0


@dataclass(frozen=True)
class SdpaBackwardDescriptor(SdpaDescriptor):
    """dQ, dK, dV from dOut, the saved output and row logsumexp (same fields as the forward)."""


def _mask_elements(d: SdpaDescriptor) -> tuple[ElementKind, ...]:
    """A boolean mask is bool; an additive one is the element type or f32."""
    if d.mask is MaskKind.BOOLEAN:
        return (ElementKind.BOOL,)
    return tuple({d.element, ElementKind.F32})


def _has_mask(d: SdpaDescriptor) -> bool:
    return d.mask is not MaskKind.NONE


#: Operands forward and backward share (a dataclass field object serves one field only, so
#: each use builds its own).
_MASK = partial(operand, "mask_shape", _mask_elements, when=_has_mask, strides=NON_NEGATIVE)
#: Required when dropout_p > 0 (SdpaPlan's rule); ignored otherwise.
_RNG = partial(operand, lambda d: (2,), ElementKind.I64, optional=True)


@dataclass
class SdpaArgs(Args):
    """`lse` [B, H, Sq] (f32; f64 for f64) is written for the backward. `mask` [4-d,
    broadcastable] when the descriptor has one. `rng_state` int64 [2] = (seed, offset) on the
    device when dropout_p > 0: the backward given the same tensor replays the same mask."""

    q: torch.Tensor = operand("q_shape", "element", strides=UNIT_LAST)
    k: torch.Tensor = operand("k_shape", "element", strides=UNIT_LAST)
    v: torch.Tensor = operand("v_shape", "element", strides=UNIT_LAST)
    out: torch.Tensor = operand("out_shape", "element", output=True, strides=UNIT_LAST)
    lse: torch.Tensor = operand("lse_shape", "lse_element", output=True, strides=NON_NEGATIVE)
    mask: torch.Tensor | None = _MASK()
    rng_state: torch.Tensor | None = _RNG()


@dataclass
class SdpaBackwardArgs(Args):
    q: torch.Tensor = operand("q_shape", "element", strides=UNIT_LAST)
    k: torch.Tensor = operand("k_shape", "element", strides=UNIT_LAST)
    v: torch.Tensor = operand("v_shape", "element", strides=UNIT_LAST)
    out: torch.Tensor = operand("out_shape", "element", strides=UNIT_LAST)
    dout: torch.Tensor = operand("out_shape", "element", strides=UNIT_LAST)
    lse: torch.Tensor = operand("lse_shape", "lse_element", strides=NON_NEGATIVE)
    dq: torch.Tensor = operand("q_shape", "element", output=True, strides=UNIT_LAST)
    dk: torch.Tensor = operand("k_shape", "element", output=True, strides=UNIT_LAST)
    dv: torch.Tensor = operand("v_shape", "element", output=True, strides=UNIT_LAST)
    mask: torch.Tensor | None = _MASK()
    rng_state: torch.Tensor | None = _RNG()


# -- RoPE --------------------------------------------------------------------------------------
class RopeLayout(enum.Enum):
    HALF_SPLIT = "half_split"  # rotate_half: pairs (x[i], x[i + R/2]) (GPT-NeoX, Llama)
    INTERLEAVED = "interleaved"  # pairs (x[2i], x[2i + 1]) (GPT-J)


@dataclass(frozen=True)
class RopeDescriptor(Descriptor):
    """y = rotary(x): x [batch, d1, d2, head_dim] with the sequence on `seq_axis` (1 or 2);
    the first `rotary_dim` features rotate by angle θ[pos, i] (cos/sin tables
    [max_positions, rotary_dim/2]), the rest pass through."""

    x_shape: tuple[int, ...]
    seq_axis: int
    rotary_dim: int
    max_positions: int
    layout: RopeLayout
    element: ElementKind
    table_element: ElementKind = ElementKind.F32
    has_position_ids: bool = False

    def validate(self, who: str) -> None:
        _check_float(who, "element", self.element)
        _check_float(who, "table_element", self.table_element)
        shape = V.check_shape(who, "x_shape", self.x_shape)
        if len(shape) != 4:
            raise Unsupported(f"{who}: x_shape must be 4-d [batch, d1, d2, head_dim], "
                              f"got {shape}")
        V.check_in(who, "seq_axis", self.seq_axis, (1, 2))
        if not isinstance(self.layout, RopeLayout):
            raise InvalidProblem(f"{who}: layout must be a RopeLayout, got {self.layout!r}")
        r = self.rotary_dim
        if isinstance(r, bool) or not isinstance(r, int) or r <= 0 or r % 2 or r > shape[3]:
            raise InvalidProblem(f"{who}: rotary_dim must be even, > 0 and <= head_dim "
                                 f"{shape[3]}, got {r!r}")
        V.check_shape(who, "max_positions", (self.max_positions,))
        if not self.has_position_ids and self.max_positions < shape[self.seq_axis]:
            raise InvalidProblem(f"{who}: max_positions {self.max_positions} < sequence length "
                                 f"{shape[self.seq_axis]} (positions default to 0..S-1)")

    @property
    def table_shape(self) -> tuple[int, int]:
        return (self.max_positions, self.rotary_dim // 2)

    @property
    def seq_len(self) -> int:
        return self.x_shape[self.seq_axis]


@dataclass(frozen=True)
class RopeBackwardDescriptor(RopeDescriptor):
    """dx = rotary(dy) by -θ (the rotation's transpose)."""


_POSITIONS = partial(operand, lambda d: (d.x_shape[0], d.seq_len), INDEX_KINDS,
                     when=lambda d: d.has_position_ids, strides=NON_NEGATIVE)


@dataclass
class RopeArgs(Args):
    """`position_ids` [batch, seq] int32/int64 when the descriptor says so (values must lie in
    [0, max_positions); out-of-range positions are clamped, as an embedding lookup would fail)."""

    x: torch.Tensor = operand("x_shape", "element", strides=UNIT_LAST)
    cos: torch.Tensor = operand("table_shape", "table_element", strides=UNIT_LAST)
    sin: torch.Tensor = operand("table_shape", "table_element", strides=UNIT_LAST)
    y: torch.Tensor = operand("x_shape", "element", output=True, strides=UNIT_LAST)
    position_ids: torch.Tensor | None = _POSITIONS()


@dataclass
class RopeBackwardArgs(Args):
    dy: torch.Tensor = operand("x_shape", "element", strides=UNIT_LAST)
    cos: torch.Tensor = operand("table_shape", "table_element", strides=UNIT_LAST)
    sin: torch.Tensor = operand("table_shape", "table_element", strides=UNIT_LAST)
    dx: torch.Tensor = operand("x_shape", "element", output=True, strides=UNIT_LAST)
    position_ids: torch.Tensor | None = _POSITIONS()


# -- KV cache ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class KvCacheAppendDescriptor(Descriptor):
    """cache[b, h, start[b] + t, :] = new[b, h, t, :] for K and V caches
    [batch, num_kv_heads, capacity, head_dim|value_dim]; `start` = cache_seqlens [batch] int32.
    Rows past `capacity` are not written (the caller sizes the cache)."""

    batch: int
    num_kv_heads: int
    capacity: int
    new_len: int
    head_dim: int
    value_dim: int
    element: ElementKind

    def validate(self, who: str) -> None:
        _check_float(who, "element", self.element)
        V.check_shape(who, "(batch, num_kv_heads, capacity, new_len, head_dim, value_dim)",
                      (self.batch, self.num_kv_heads, self.capacity, self.new_len,
                       self.head_dim, self.value_dim))
        if self.new_len > self.capacity:
            raise InvalidProblem(f"{who}: new_len {self.new_len} > capacity {self.capacity}")

    def rows_shape(self, rows: int, dim: int) -> tuple[int, int, int, int]:
        return (self.batch, self.num_kv_heads, rows, dim)


@dataclass
class KvCacheAppendArgs(Args):
    k_new: torch.Tensor = operand(lambda d: d.rows_shape(d.new_len, d.head_dim), "element",
                                  strides=UNIT_LAST)
    v_new: torch.Tensor = operand(lambda d: d.rows_shape(d.new_len, d.value_dim), "element",
                                  strides=UNIT_LAST)
    cache_seqlens: torch.Tensor = operand(lambda d: (d.batch,), INDEX_KINDS)
    k_cache: torch.Tensor = operand(lambda d: d.rows_shape(d.capacity, d.head_dim), "element",
                                    output=True, strides=UNIT_LAST)
    v_cache: torch.Tensor = operand(lambda d: d.rows_shape(d.capacity, d.value_dim), "element",
                                    output=True, strides=UNIT_LAST)
