"""Embedding descriptors and args (torch.nn.functional.embedding semantics)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...backends.grouping import MAX_ROWS
from ...core import validate as V
from ...core.args import Args, operand
from ...core.plan import Descriptor
from ...core.vocab import FLOAT_KINDS, INDEX_KINDS, ElementKind


def _int(who: str, name: str, value, lo: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise V.InvalidProblem(f"{who}: {name} must be an int >= {lo}, got {value!r}")
    return value


def validate_embedding_desc(desc, who: str) -> None:
    for name in ("element", "index_element"):
        if not isinstance(getattr(desc, name), ElementKind):
            raise V.InvalidProblem(f"{who}: {name} must be an ElementKind, "
                                   f"got {getattr(desc, name)!r}")
    v = _int(who, "num_embeddings", desc.num_embeddings)
    _int(who, "embedding_dim", desc.embedding_dim)
    t = _int(who, "num_tokens", desc.num_tokens)
    if v > MAX_ROWS or t > MAX_ROWS:
        raise V.Unsupported(f"{who}: num_embeddings and num_tokens must be <= {MAX_ROWS}, "
                            f"got {v} and {t}")
    p = desc.padding_idx
    if p is not None and (isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < max(v, 1)):
        raise V.InvalidProblem(f"{who}: padding_idx must be None or in [0, num_embeddings="
                               f"{v}), got {p!r}")
    V.check_element(who, "element", desc.element, sorted(FLOAT_KINDS, key=lambda k: k.value))
    V.check_element(who, "index_element", desc.index_element,
                    sorted(INDEX_KINDS, key=lambda k: k.value))


def table_shape(d) -> tuple[int, int]:
    """[num_embeddings, embedding_dim]: the weight (and its gradient)."""
    return (d.num_embeddings, d.embedding_dim)


def token_rows(d) -> tuple[int, int]:
    """[num_tokens, embedding_dim]: one row per token (the lookup's output)."""
    return (d.num_tokens, d.embedding_dim)


def tokens(d) -> tuple[int]:
    return (d.num_tokens,)


@dataclass(frozen=True)
class EmbeddingDescriptor(Descriptor):
    """out[t] = weight[indices[t]]: weight [num_embeddings, embedding_dim], indices [num_tokens].

    padding_idx (normalized to [0, num_embeddings) or None) only affects the backward.
    """

    num_embeddings: int
    embedding_dim: int
    num_tokens: int
    element: ElementKind
    index_element: ElementKind = ElementKind.I64
    padding_idx: int | None = None

    def validate(self, who: str) -> None:
        validate_embedding_desc(self, who)


@dataclass(frozen=True)
class EmbeddingBackwardDescriptor(EmbeddingDescriptor):
    """grad_weight[v] = sum of grad_out[t] over indices[t] == v (v != padding_idx), divided by
    that count when scale_grad_by_freq."""

    scale_grad_by_freq: bool = False

    def validate(self, who: str) -> None:
        validate_embedding_desc(self, who)
        if not isinstance(self.scale_grad_by_freq, bool):
            raise V.InvalidProblem(f"{who}: scale_grad_by_freq must be a bool, "
                                   f"got {self.scale_grad_by_freq!r}")


@dataclass
class EmbeddingArgs(Args):
    weight: torch.Tensor = operand(table_shape, "element")
    indices: torch.Tensor = operand(tokens, "index_element")
    out: torch.Tensor = operand(token_rows, "element", output=True)


@dataclass
class EmbeddingBackwardArgs(Args):
    grad_out: torch.Tensor = operand(token_rows, "element")
    indices: torch.Tensor = operand(tokens, "index_element")
    grad_weight: torch.Tensor = operand(table_shape, "element", output=True)


@dataclass(frozen=True)
class EmbeddingRenormDescriptor(Descriptor):
    """torch.embedding_renorm_: rows of weight named by indices whose norm_type-norm exceeds
    max_norm are rescaled in place to max_norm / (norm + 1e-7) times themselves."""

    num_embeddings: int
    embedding_dim: int
    num_tokens: int
    element: ElementKind
    index_element: ElementKind = ElementKind.I64
    max_norm: float = 1.0
    norm_type: float = 2.0
    padding_idx: int | None = None

    def validate(self, who: str) -> None:
        validate_embedding_desc(self, who)
        V.check_positive(who, "max_norm", self.max_norm)
        nt = self.norm_type
        if isinstance(nt, bool) or not isinstance(nt, (int, float)) or not (
                nt > 0 or nt == float("inf")):
            raise V.InvalidProblem(f"{who}: norm_type must be > 0 (or inf), got {nt!r}")


@dataclass
class EmbeddingRenormArgs(Args):
    """weight is updated in place (it is the output)."""

    indices: torch.Tensor = operand(tokens, "index_element")
    weight: torch.Tensor = operand(table_shape, "element", output=True)


BAG_MODES = ("sum", "mean", "max")


@dataclass(frozen=True)
class EmbeddingBagDescriptor(Descriptor):
    """out[b] = reduce over tokens t in [bounds[b], bounds[b+1]) of weight[indices[t]]
    (times per_sample_weights[t] when has_weights); padding_idx tokens are skipped."""

    num_embeddings: int
    embedding_dim: int
    num_tokens: int
    num_bags: int
    mode: str
    element: ElementKind
    index_element: ElementKind = ElementKind.I64
    has_weights: bool = False
    padding_idx: int | None = None

    def validate(self, who: str) -> None:
        validate_embedding_desc(self, who)
        V.check_in(who, "mode", self.mode, BAG_MODES)
        nb = self.num_bags
        if isinstance(nb, bool) or not isinstance(nb, int) or nb < 0:
            raise V.InvalidProblem(f"{who}: num_bags must be an int >= 0, got {nb!r}")
        if not isinstance(self.has_weights, bool):
            raise V.InvalidProblem(f"{who}: has_weights must be a bool, "
                                   f"got {self.has_weights!r}")
        if self.has_weights and self.mode != "sum":
            raise V.InvalidProblem(f"{who}: per_sample_weights need mode 'sum' (as torch), got "
                                   f"{self.mode!r}")


def _bag_rows(d) -> tuple[int, int]:
    return (d.num_bags, d.embedding_dim)


@dataclass
class EmbeddingBagArgs(Args):
    """bounds: [num_bags + 1] (offsets with the total appended); max_token (mode max, optional):
    int64 [num_bags, embedding_dim], the token position of each maximum (-1: empty bag)."""

    weight: torch.Tensor = operand(table_shape, "element")
    indices: torch.Tensor = operand(tokens, "index_element")
    bounds: torch.Tensor = operand(lambda d: (d.num_bags + 1,), "index_element")
    out: torch.Tensor = operand(_bag_rows, "element", output=True)
    per_sample_weights: torch.Tensor | None = operand(tokens, "element",
                                                      when=lambda d: d.has_weights)
    max_token: torch.Tensor | None = operand(_bag_rows, ElementKind.I64, output=True,
                                             optional=True)
