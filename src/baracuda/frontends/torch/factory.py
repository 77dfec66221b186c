"""One generic factory: a (forward plan, backward plan) pair becomes a torch.library custom op
with a fake implementation and an autograd formula.

Families write three small functions per op — `forward` (build descriptor, run the plan), `fake`
(shapes only) and `backward` (run the backward plan through its own custom op) — and call
`define_op`. Everything torch needs for eager, torch.compile(fullgraph=True), CUDA graphs and
`torch.library.opcheck` comes from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...core.plan import Args, Descriptor, Plan
from ...core.vocab import PlanPreference

NAMESPACE = "baracuda"
_DEFAULT_PREF = PlanPreference()


def run_plan(plan_cls: type[Plan], desc: Descriptor, args: Args,
             preference: PlanPreference = _DEFAULT_PREF) -> None:
    """Select (cached per descriptor), size the workspace from torch's allocator, run.

    Frontends may allocate (torch's caching allocator is graph-safe); plans never do. The
    caller allocated the outputs, so only the output-overlap scan is skipped
    (`Plan.run_trusted`); device, shape, dtype and stride rules are checked on every call.
    """
    plan = plan_cls.select(desc, preference)
    n = plan.workspace_size()
    ws = None
    if n:
        device = next(iter(args.tensors().values())).device
        ws = torch.empty(n, dtype=torch.uint8, device=device)
    plan.run_trusted(args, ws)


def define_op(
    name: str,
    forward: Callable[..., Any],
    fake: Callable[..., Any],
    *,
    backward: Callable[..., Any] | None = None,
    setup_context: Callable[..., None] | None = None,
    mutates_args: Sequence[str] = (),
):
    """Register `baracuda::<name>` from a typed Python function.

    - ``forward``: the real implementation (its annotations give the op schema).
    - ``fake``: same signature; returns empty outputs of the right shape/dtype/strides.
    - ``backward(ctx, *grad_outputs)`` and ``setup_context(ctx, inputs, output)``: the autograd
      formula; omit both for ops that are not differentiable (backward ops themselves).
    """
    op = torch.library.custom_op(f"{NAMESPACE}::{name}", forward, mutates_args=tuple(mutates_args))
    op.register_fake(fake)
    if backward is not None:
        op.register_autograd(backward, setup_context=setup_context)
    return op


def normalize_dim(dim: int, rank: int, who: str) -> int:
    """torch's dim wrapping, with torch's IndexError for out-of-range dims."""
    r = max(rank, 1)
    if not -r <= dim < r:
        raise IndexError(
            f"{who}: Dimension out of range (expected to be in range of [{-r}, {r - 1}], "
            f"but got {dim})"
        )
    return dim % r
