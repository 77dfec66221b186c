"""A Llama-style decoder training step, written once and run three ways: through
`baracuda.torch` functions, through torch eager, and through `torch.compile` of the torch
version. Reports ms/step, tokens/s, peak memory and whether the losses agree.

The model (per layer: rms_norm, q/k/v/o linear, RoPE, causal SDPA, rms_norm, SwiGLU MLP;
then rms_norm, the vocabulary head and cross-entropy) is what an eager training loop calls,
so the step time counts host time per call as well as GPU time.

    baracuda bench --train [--train-shape 1x512]      (GPU machine)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F


@dataclasses.dataclass(frozen=True)
class ModelShape:
    dim: int = 2048
    heads: int = 16
    ffn: int = 5632
    vocab: int = 32000
    layers: int = 4


#: (batch, seqlen) pairs the host-cost issue measures: host-bound and GPU-bound.
STEP_SHAPES = ((1, 512), (4, 2048))


@dataclasses.dataclass(frozen=True)
class Ops:
    """The functions one step calls; `torch_ops()` and `baracuda_ops()` fill it."""

    embedding: Callable
    rms_norm: Callable
    linear: Callable
    rope: Callable  # (x [B, S, H, Dh], cos, sin) -> rotated x
    sdpa: Callable
    silu: Callable
    mul: Callable
    cross_entropy: Callable


def _rope_torch(x, cos, sin):
    """rotate_half RoPE (GPT-NeoX / Llama) in torch ops; x [B, S, H, Dh], tables [S, Dh/2]."""
    half = x.shape[-1] // 2
    c = cos[: x.shape[1]].to(x.dtype)[None, :, None, :]
    s = sin[: x.shape[1]].to(x.dtype)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)


def torch_ops() -> Ops:
    return Ops(F.embedding, F.rms_norm, F.linear, _rope_torch,
               F.scaled_dot_product_attention, F.silu, torch.mul, F.cross_entropy)


def baracuda_ops() -> Ops:
    import baracuda.torch as bt

    return Ops(bt.embedding, bt.rms_norm, bt.linear, bt.apply_rotary_emb,
               bt.scaled_dot_product_attention, bt.silu, bt.mul, bt.cross_entropy)


def init_params(shape: ModelShape, device, dtype, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)

    def w(*dims, scale=None):
        t = torch.randn(*dims, generator=gen) * (dims[-1] ** -0.5 if scale is None else scale)
        return t.to(device, dtype).requires_grad_()

    d, f = shape.dim, shape.ffn
    params = {"embed": w(shape.vocab, d, scale=1.0), "norm_f": w(d, scale=1.0),
              "head": w(shape.vocab, d)}
    for i in range(shape.layers):
        params.update({f"{i}.norm1": w(d, scale=1.0), f"{i}.norm2": w(d, scale=1.0),
                       f"{i}.wqkv": w(3 * d, d), f"{i}.wo": w(d, d),
                       f"{i}.w_gate_up": w(2 * f, d), f"{i}.w_down": w(d, f)})
    return params


def rope_tables(seqlen: int, head_dim: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seqlen, dtype=torch.float32), inv)
    return angles.cos().to(device), angles.sin().to(device)


def loss_fn(ops: Ops, shape: ModelShape, params, tokens, targets, cos, sin) -> torch.Tensor:
    b, s = tokens.shape
    d, h = shape.dim, shape.heads
    x = ops.embedding(tokens, params["embed"])
    for i in range(shape.layers):
        y = ops.rms_norm(x, (d,), params[f"{i}.norm1"], 1e-6)
        q, k, v = ops.linear(y, params[f"{i}.wqkv"]).view(b, s, 3, h, d // h).unbind(2)
        q, k = ops.rope(q, cos, sin), ops.rope(k, cos, sin)
        a = ops.sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + ops.linear(a.transpose(1, 2).reshape(b, s, d), params[f"{i}.wo"])
        y = ops.rms_norm(x, (d,), params[f"{i}.norm2"], 1e-6)
        gate, up = ops.linear(y, params[f"{i}.w_gate_up"]).chunk(2, dim=-1)
        x = x + ops.linear(ops.mul(ops.silu(gate), up), params[f"{i}.w_down"])
    x = ops.rms_norm(x, (d,), params["norm_f"], 1e-6)
    logits = ops.linear(x, params["head"])
    return ops.cross_entropy(logits.view(b * s, -1), targets.view(-1))


@dataclasses.dataclass
class StepResult:
    name: str
    batch: int
    seqlen: int
    ms_per_step: float
    tokens_per_s: float
    peak_mib: float
    loss: float


def _time_step(step: Callable[[], torch.Tensor], warmup: int, iters: int,
               device) -> tuple[float, float, float]:
    """(ms per step, peak MiB during the timed steps, last loss)."""
    for _ in range(warmup):
        loss = step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(iters):
        loss = step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / iters
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else 0.0
    return ms, peak, float(loss)


def run(batch: int, seqlen: int, shape: ModelShape = ModelShape(), device=None,
        dtype=torch.bfloat16, iters: int = 10, warmup: int = 3,
        ways: tuple[str, ...] = ("baracuda", "torch eager", "torch.compile")) -> list[StepResult]:
    """Forward + backward steps of the same model and inputs, one way after the other."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    params = init_params(shape, device, dtype)
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, shape.vocab, (batch, seqlen), generator=gen).to(device)
    targets = torch.randint(0, shape.vocab, (batch, seqlen), generator=gen).to(device)
    cos, sin = rope_tables(seqlen, shape.dim // shape.heads, device)
    out = []
    for way in ways:
        if way == "baracuda":
            fn = lambda: loss_fn(baracuda_ops(), shape, params, tokens, targets, cos, sin)
        elif way == "torch eager":
            fn = lambda: loss_fn(torch_ops(), shape, params, tokens, targets, cos, sin)
        else:
            compiled = torch.compile(lambda p, t, y: loss_fn(torch_ops(), shape, p, t, y, cos,
                                                             sin))
            fn = lambda compiled=compiled: compiled(params, tokens, targets)

        def step(fn=fn):
            for p in params.values():
                p.grad = None
            loss = fn()
            loss.backward()
            return loss.detach()

        ms, peak, loss = _time_step(step, warmup, iters, device)
        out.append(StepResult(way, batch, seqlen, ms, batch * seqlen / ms * 1e3, peak, loss))
    return out


def markdown(results: list[StepResult]) -> str:
    lines = ["| batch x seqlen | way | ms/step | tokens/s | peak MiB | loss | vs torch eager |",
             "|---|---|---|---|---|---|---|"]
    eager = {(r.batch, r.seqlen): r.ms_per_step for r in results if r.name == "torch eager"}
    for r in results:
        ratio = eager.get((r.batch, r.seqlen), float("nan")) / r.ms_per_step
        lines.append(f"| {r.batch}x{r.seqlen} | {r.name} | {r.ms_per_step:.2f} | "
                     f"{r.tokens_per_s:,.0f} | {r.peak_mib:,.0f} | {r.loss:.4f} | {ratio:.2f}x |")
    from ..backends.launch_replay import refusals

    if refusals():
        lines.append("\n" + refusals())
    return "\n".join(lines)
