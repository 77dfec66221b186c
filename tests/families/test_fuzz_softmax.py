"""Differential fuzzing of baracuda.torch.softmax / log_softmax against torch (tests/fuzz.py)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import baracuda.torch as bt
from fuzz import ON_GPU, case_ids, differential, dims_for, floats, random_layout, rng_for

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


@pytest.mark.parametrize("case", case_ids(default_cpu=48, default_gpu=400))
def test_softmax_matches_torch(case):
    r = rng_for("softmax", case)
    log = r.random() < 0.5
    dtype = r.choice(DTYPES)
    rank = r.randint(0, 8) if r.random() < 0.9 else r.choice([1, 2])
    long = 300_000 if ON_GPU else 700
    shape = dims_for(r, rank, long, 4_000_000 if ON_GPU else 6_000)
    dim = r.randint(-max(rank, 1), max(rank, 1) - 1)
    if rank and r.random() < 0.3:
        # a line of whole 256-element lanes, long on the GPU: the shared-memory exchange
        # kernels (16-bit lines of more than 16384 elements, multiples of 256) run on those
        lanes = r.randint(1, 1024 if ON_GPU else 2)
        shape[dim] = 256 * lanes
        others = [i for i in range(rank) if i != dim % rank]
        while others and math.prod(max(d, 1) for d in shape) > (8_000_000 if ON_GPU else 6_000):
            i = max(others, key=lambda k: shape[k])
            if shape[i] <= 1:
                break
            shape[i] //= 2
    x = floats(r, shape, dtype, scale=r.choice([0.5, 3.0, 20.0]), offset=r.choice([0.0, 50.0]))
    if x.numel() and r.random() < 0.2:  # masked positions, sometimes whole lines
        x = x.masked_fill(torch.rand(x.shape, device=x.device) < 0.3, float("-inf"))
    x = random_layout(r, x).requires_grad_(True)
    as_dtype = r.choice([None, None, None, torch.float32, torch.float64])
    ours = bt.log_softmax if log else bt.softmax
    theirs = F.log_softmax if log else F.softmax
    element = as_dtype or dtype

    def call_ours(t):
        return ours(t, dim=dim, dtype=as_dtype)

    def call_torch(t):
        return theirs(t, dim=dim, dtype=torch.float64 if as_dtype else None)

    desc = (f"case {case}: {'log_' if log else ''}softmax {dtype} {shape} stride "
            f"{tuple(x.stride())} dim {dim} dtype={as_dtype}")
    differential(call_ours, call_torch, [x], grad_of=[0], element=element,
                 scale=4.0 if element in (torch.float16, torch.bfloat16) else 8.0,
                 describe=desc, grad_terms=None if log else 1.0)
