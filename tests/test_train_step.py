"""The training-step benchmark's model computes the same loss and gradients through
baracuda.torch as through torch (tiny shapes, float64, on the CPU or the GPU)."""

from __future__ import annotations

import torch

from baracuda.tools import train_step as T
from conftest import DEVICE


def test_baracuda_step_matches_torch_loss_and_gradients():
    shape = T.ModelShape(dim=32, heads=2, ffn=48, vocab=64, layers=1)
    params = T.init_params(shape, DEVICE, torch.float64)
    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, shape.vocab, (2, 7), generator=gen).to(DEVICE)
    targets = torch.randint(0, shape.vocab, (2, 7), generator=gen).to(DEVICE)
    cos, sin = T.rope_tables(7, shape.dim // shape.heads, DEVICE)
    losses, grads = [], []
    for ops in (T.baracuda_ops(), T.torch_ops()):
        loss = T.loss_fn(ops, shape, params, tokens, targets, cos.double(), sin.double())
        grads.append(torch.autograd.grad(loss, list(params.values())))
        losses.append(loss.detach())
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-9, atol=1e-9)
    for name, a, b in zip(params, *grads):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-9, msg=name)
