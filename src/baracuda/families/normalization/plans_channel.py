"""GroupNormPlan, BatchNormPlan, InstanceNormPlan and their backward plans (Triton candidates).

**Formulas**: x is [N, C, *spatial]; per statistics group (GroupNorm: sample and group of
C / num_groups channels; InstanceNorm: sample and channel; BatchNorm: channel over the batch)
mean and biased var, rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * gamma[c] + beta[c].
BatchNorm training updates running_mean / running_var with momentum (unbiased variance);
eval uses them (dx = dy * gamma * rstd). InstanceNorm with running statistics updates them with
the batch average of the instances' statistics; use_input_stats=False normalizes with them.
Backward (batch statistics): xhat = (x - mean) rstd, g = dy gamma,
dx = rstd (g - xhat mean(g xhat) - mean(g)) over the group; dgamma[c] = sum dy xhat,
dbeta[c] = sum dy.

**Dtypes / shape**: {f32, f16, bf16, f64}; rank 2..8 (the spatial dims must collapse to one
strided dim); gamma / beta / running statistics have shape (C,); saved statistics are
(N, num_groups), (N, C) or (C,) in f32 (f64 for f64).

**Workspace**: backward (has_gamma + has_beta) * R * C accumulator floats (R = N, 1 for
BatchNorm) of per-program dgamma / dbeta sums.

**Precision**: f16/bf16 accumulate in f32, f64 in f64; deterministic and bit-stable on the same
hardware (one program per statistics group, fixed-order second stage, no atomics).
"""

from __future__ import annotations

import math

from ...backends.triton_support import acc_type, split_f64
from ...core import validate as V
from ...core.errors import Unsupported
from ...core.layout import collapse_dims
from ...core.plan import Candidate
from ...core.registry import register_candidate
from .descriptors_channel import (
    BatchNormArgs,
    BatchNormBackwardArgs,
    BatchNormBackwardDescriptor,
    BatchNormDescriptor,
    GroupNormArgs,
    GroupNormBackwardArgs,
    GroupNormBackwardDescriptor,
    GroupNormDescriptor,
    InstanceNormArgs,
    InstanceNormBackwardArgs,
    InstanceNormBackwardDescriptor,
    InstanceNormDescriptor,
)
from .kernels import sum_partials
from .kernels_channel import (
    chan_norm_bwd_kernel,
    chan_norm_fwd_kernel,
    running_from_instances_kernel,
)
from .plans import make_plan

#: What the family package re-exports from this module.
__all__ = [
    "BatchNormBackwardPlan", "BatchNormPlan", "GroupNormBackwardPlan", "GroupNormPlan",
    "InstanceNormBackwardPlan", "InstanceNormPlan",
]

BLOCK = 1024
#: The partial sum over the [rows, C] dgamma / dbeta partials (kernels.sum_partials).
_PARTIAL_CFG = {"BLOCK_G": 16, "BLOCK_C": 64, "num_warps": 4}


def _collapse_spatial(shape, tensors):
    """The spatial dims (2..) of same-shaped tensors collapsed: (extents, per-tensor strides)."""
    return collapse_dims(shape[2:], [list(t.stride()[2:]) for t in tensors])


def spatial_collapses(*tensors) -> bool:
    """Whether the tensors' spatial dims collapse to one strided dim, the layout the kernels
    address (a frontend packs other layouts; plan users get Unsupported). An empty tensor
    addresses nothing: any strides do (and .contiguous() keeps an empty tensor's strides)."""
    shape = tensors[0].shape
    return (len(shape) <= 3 or 0 in shape
            or len(_collapse_spatial(shape, tensors)[0]) <= 1)


def _spatial(who, shape, tensors):
    """(xn, xc, xs) per tensor with the spatial dims collapsed to one."""
    sp = shape[2:]
    if not sp:
        return [(t.stride(0), t.stride(1), 1) for t in tensors], 1
    if 0 in shape:  # nothing is launched: the strides of an empty problem do not matter
        return [(t.stride(0), t.stride(1), 1) for t in tensors], math.prod(sp)
    cs, cst = _collapse_spatial(shape, tensors)
    if len(cs) > 1:
        raise Unsupported(f"{who}: the spatial dims {tuple(sp)} collapse to {len(cs)} strided "
                          "dims; the kernel addresses one")
    return [(t.stride(0), t.stride(1), st[0]) for t, st in zip(tensors, cst)], cs[0]


def _stat_strides(t, two: bool):
    return (t.stride(0), t.stride(1)) if two else (t.stride(0), 0)


def _p(t):
    return (0,) if t is None else (t.stride(0),)


class _ChanCandidate(Candidate):
    replayable = True  # only Triton launches (backends/launch_replay.py)
    mode = 0
    backward = False

    def can_implement(self, desc, args) -> None:
        who = type(self).__name__
        for name, t in args.tensors().items():
            V.check_nonnegative_strides(who, name, t)
        names = ("dy", "x", "dx") if self.backward else ("x", "y")
        _spatial(who, desc.input_shape, [getattr(args, n) for n in names])

    def workspace_size(self, desc) -> int:
        if not self.backward:
            return 0
        rows = 1 if self.mode == 1 else desc.n
        k = int(desc.has_gamma) + int(desc.has_beta)
        return k * rows * desc.c * desc.element.compute_kind.torch_dtype.itemsize

    def _groups(self, desc):
        return getattr(desc, "num_groups", desc.c)

    def launch(self, desc, args, workspace) -> None:
        (self._launch_bwd if self.backward else self._launch_fwd)(desc, args, workspace)

    def _launch_fwd(self, desc, args, workspace) -> None:
        n, c = desc.n, desc.c
        g = self._groups(desc)
        (xs, ys), s = _spatial(type(self).__name__, desc.input_shape, [args.x, args.y])
        if n == 0 or c == 0:
            return
        training = getattr(desc, "training", getattr(desc, "use_input_stats", True))
        running = getattr(desc, "has_running", False)
        use_running = not training
        two = self.mode == 0
        programs = n * g if self.mode == 0 else c
        x = args.x
        rm = getattr(args, "running_mean", None)
        rv = getattr(args, "running_var", None)
        ptrs = [args.x, args.y, args.gamma, args.beta, args.mean, args.rstd, rm, rv]
        ptrs = [x if t is None else t for t in ptrs]
        if s == 0:  # no elements per group: torch gives mean 0-ish NaN statistics
            args.mean.fill_(float("nan"))
            args.rstd.fill_(float("nan"))
            return
        chan_norm_fwd_kernel[(programs,)](
            *ptrs, n, c, s, g, c // g, *split_f64(desc.eps),
            *split_f64(getattr(desc, "momentum", 0.0)),
            *xs, *ys, *_p(args.gamma), *_p(args.beta), *_stat_strides(args.mean, two),
            *_stat_strides(args.rstd, two), *_p(rm), *_p(rv),
            MODE=self.mode, USE_RUNNING=use_running,
            UPDATE_RUNNING=training and running and self.mode == 1,
            HAS_W=args.gamma is not None, HAS_B=args.beta is not None,
            ACC=acc_type(desc.element), BLOCK=BLOCK, num_warps=4,
        )
        if self.mode == 0 and training and running:  # instance norm running update
            running_from_instances_kernel[(c,)](
                args.mean, args.rstd, rm, rv, n, c, s, *split_f64(desc.eps),
                *split_f64(desc.momentum),
                *_stat_strides(args.mean, True), *_stat_strides(args.rstd, True), *_p(rm),
                *_p(rv), ACC=acc_type(desc.element), BLOCK=128, num_warps=4,
            )

    def _launch_bwd(self, desc, args, workspace) -> None:
        n, c = desc.n, desc.c
        g = self._groups(desc)
        (gs, xs, ds), s = _spatial(type(self).__name__, desc.input_shape,
                                   [args.dy, args.x, args.dx])
        training = getattr(desc, "training", getattr(desc, "use_input_stats", True))
        rows = 1 if self.mode == 1 else n
        k = int(args.dgamma is not None) + int(args.dbeta is not None)
        part = args.dx
        if k and rows * c:
            part = workspace[: k * rows * c * desc.element.compute_kind.torch_dtype.itemsize]
            part = part.view(desc.element.compute_kind.torch_dtype)
        two = self.mode == 0
        programs = n * g if self.mode == 0 else c
        if n and c and s and programs:
            ptrs = [args.dy, args.x, args.gamma, args.mean, args.rstd, args.dx]
            ptrs = [args.x if t is None else t for t in ptrs]
            chan_norm_bwd_kernel[(programs,)](
                *ptrs, part, n, c, s, g, c // g, rows, *gs, *xs, *ds, *_p(args.gamma),
                *_stat_strides(args.mean, two), *_stat_strides(args.rstd, two),
                MODE=self.mode, STATS_CONST=not training, HAS_W=args.gamma is not None,
                HAS_DB=args.dbeta is not None, WANT_DG=args.dgamma is not None,
                ACC=acc_type(desc.element), BLOCK=BLOCK, num_warps=4,
            )
        outs = [(out, (0, 0, out.stride(0))) for out in (args.dgamma, args.dbeta)
                if out is not None]
        sum_partials(part, outs, rows if n and s else 0, c, 1, c, 1, acc_type(desc.element),
                     _PARTIAL_CFG)


def _make(plan_name, desc_t, args_t, partner, is_bwd, mode, cand_name):
    plan = make_plan(plan_name, desc_t, args_t, partner, is_bwd, lambda d: plan_name, __doc__,
                     __name__)
    cand = type("Triton" + plan_name.replace("Plan", ""), (_ChanCandidate,), {
        "name": cand_name, "mode": mode, "backward": is_bwd, "__module__": __name__})
    register_candidate(plan)(cand)
    return plan


GroupNormPlan = _make("GroupNormPlan", GroupNormDescriptor, GroupNormArgs,
                      "GroupNormBackwardPlan", False, 0, "triton_group_norm")
GroupNormBackwardPlan = _make("GroupNormBackwardPlan", GroupNormBackwardDescriptor,
                              GroupNormBackwardArgs, "GroupNormPlan", True, 0,
                              "triton_group_norm_backward")
InstanceNormPlan = _make("InstanceNormPlan", InstanceNormDescriptor, InstanceNormArgs,
                         "InstanceNormBackwardPlan", False, 0, "triton_instance_norm")
InstanceNormBackwardPlan = _make("InstanceNormBackwardPlan", InstanceNormBackwardDescriptor,
                                 InstanceNormBackwardArgs, "InstanceNormPlan", True, 0,
                                 "triton_instance_norm_backward")
BatchNormPlan = _make("BatchNormPlan", BatchNormDescriptor, BatchNormArgs,
                      "BatchNormBackwardPlan", False, 1, "triton_batch_norm")
BatchNormBackwardPlan = _make("BatchNormBackwardPlan", BatchNormBackwardDescriptor,
                              BatchNormBackwardArgs, "BatchNormPlan", True, 1,
                              "triton_batch_norm_backward")

#: The plans by (kind, backward?), kind: "group", "batch" or "instance" (the specs' key).
BY_KIND = {
    ("group", False): GroupNormPlan, ("group", True): GroupNormBackwardPlan,
    ("batch", False): BatchNormPlan, ("batch", True): BatchNormBackwardPlan,
    ("instance", False): InstanceNormPlan, ("instance", True): InstanceNormBackwardPlan,
}
