"""torch.nn.functional.rms_norm / layer_norm / group_norm / batch_norm / instance_norm on
baracuda plans, differentiable.

Forward ops return (y, saved statistics); the autograd formula runs the backward plans through
their own custom ops. A weight / bias of another float dtype than the input (mixed precision)
is cast to the input's dtype for the kernel and its gradient is returned in its own dtype.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.nn.functional as F

from ...backends.torch_ops import define_op, run_plan
from ...core.errors import ArgumentTypeError, InvalidProblem
from .plans import LayerNormBackwardPlan, LayerNormPlan, RMSNormBackwardPlan, RMSNormPlan
from .plans_channel import (
    BatchNormBackwardPlan,
    BatchNormPlan,
    GroupNormBackwardPlan,
    GroupNormPlan,
    InstanceNormBackwardPlan,
    InstanceNormPlan,
    spatial_collapses,
)

__all__ = ["rms_norm", "layer_norm", "group_norm", "batch_norm", "instance_norm"]


def _stats_like(x: torch.Tensor, n_norm: int) -> torch.Tensor:
    shape = tuple(x.shape[: x.dim() - n_norm]) + (1,) * n_norm
    dt = torch.float64 if x.dtype == torch.float64 else torch.float32
    return x.new_empty(shape, dtype=dt)


def _axes(x: torch.Tensor, n_norm: int) -> tuple[int, ...]:
    return tuple(range(x.dim() - n_norm, x.dim()))


def _empty_param(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty((0,))


def _run_rows(plan, x: torch.Tensor, n_norm: int, flags: tuple, **tensors) -> None:
    """Run a row-norm plan on x normalized over its last n_norm dims; `flags`: the rest of
    its descriptor's fields."""
    desc = plan.descriptor_type.cached(tuple(x.shape), _axes(x, n_norm), *flags)
    run_plan(plan, desc, plan.args_type(x=x, **tensors))


# -- RMSNorm -----------------------------------------------------------------------------------
def _rms_fwd(x: torch.Tensor, n_norm: int, weight: torch.Tensor | None,
             eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    y, rstd = torch.empty_like(x), _stats_like(x, n_norm)
    _run_rows(RMSNormPlan, x, n_norm, (weight is not None, eps, x.dtype),
              y=y, rstd=rstd, gamma=weight)
    return y, rstd


def _rms_fwd_fake(x, n_norm, weight, eps):
    return torch.empty_like(x), _stats_like(x, n_norm)


def _rms_bwd(dy: torch.Tensor, x: torch.Tensor, rstd: torch.Tensor, weight: torch.Tensor | None,
             n_norm: int) -> tuple[torch.Tensor, torch.Tensor]:
    dx = torch.empty_like(x)
    dw = torch.empty_like(weight) if weight is not None else _empty_param(x)
    _run_rows(RMSNormBackwardPlan, x, n_norm, (weight is not None, x.dtype), dy=dy, rstd=rstd,
              dx=dx, gamma=weight, dgamma=dw if weight is not None else None)
    return dx, dw


def _rms_bwd_fake(dy, x, rstd, weight, n_norm):
    return torch.empty_like(x), (torch.empty_like(weight) if weight is not None
                                 else _empty_param(x))


_rms_norm_backward = define_op("rms_norm_backward", _rms_bwd, _rms_bwd_fake)


# The forward ops are plain custom ops; autograd is an autograd.Function over them: that
# costs far less host time per call than custom_op's register_autograd wrapper, and these
# ops are often host-bound.
_rms_norm = define_op("rms_norm", _rms_fwd, _rms_fwd_fake)


class _RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n_norm, weight, eps):
        y, rstd = _rms_norm(x, n_norm, weight, eps)
        ctx.save_for_backward(x, weight, rstd)
        ctx.n_norm = n_norm
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        dx, dw = _rms_norm_backward(dy, x, rstd, weight, ctx.n_norm)
        return dx, None, (dw if weight is not None else None), None


# -- LayerNorm ---------------------------------------------------------------------------------
def _ln_fwd(x: torch.Tensor, n_norm: int, weight: torch.Tensor | None, bias: torch.Tensor | None,
            eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    y, mean, rstd = torch.empty_like(x), _stats_like(x, n_norm), _stats_like(x, n_norm)
    _run_rows(LayerNormPlan, x, n_norm, (weight is not None, bias is not None, eps, x.dtype),
              y=y, mean=mean, rstd=rstd, gamma=weight, beta=bias)
    return y, mean, rstd


def _ln_fwd_fake(x, n_norm, weight, bias, eps):
    return torch.empty_like(x), _stats_like(x, n_norm), _stats_like(x, n_norm)


def _ln_bwd(dy: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
            weight: torch.Tensor | None, has_bias: bool,
            n_norm: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dx = torch.empty_like(x)
    norm_shape = tuple(x.shape[x.dim() - n_norm:])
    dw = torch.empty_like(weight) if weight is not None else None
    db = x.new_empty(norm_shape) if has_bias else None
    _run_rows(LayerNormBackwardPlan, x, n_norm, (weight is not None, has_bias, x.dtype), dy=dy,
              mean=mean, rstd=rstd, dx=dx, gamma=weight, dgamma=dw, dbeta=db)
    return (dx, dw if dw is not None else _empty_param(x),
            db if db is not None else _empty_param(x))


def _ln_bwd_fake(dy, x, mean, rstd, weight, has_bias, n_norm):
    norm_shape = tuple(x.shape[x.dim() - n_norm:])
    return (torch.empty_like(x),
            torch.empty_like(weight) if weight is not None else _empty_param(x),
            x.new_empty(norm_shape) if has_bias else _empty_param(x))


_layer_norm_backward = define_op("layer_norm_backward", _ln_bwd, _ln_bwd_fake)


_layer_norm = define_op("layer_norm", _ln_fwd, _ln_fwd_fake)


class _LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n_norm, weight, bias, eps):
        y, mean, rstd = _layer_norm(x, n_norm, weight, bias, eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.n_norm, ctx.has_bias = n_norm, bias is not None
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dw, db = _layer_norm_backward(dy, x, mean, rstd, weight, ctx.has_bias, ctx.n_norm)
        return (dx, None, dw if weight is not None else None, db if ctx.has_bias else None,
                None)


# -- public functions ----------------------------------------------------------------------------
def _needs_grad(*tensors) -> bool:
    """Whether autograd must record the call: otherwise the op runs without the Function
    wrapper (its apply costs tens of microseconds of host time per call)."""
    if torch._C._functorch.peek_interpreter_stack() is not None:
        return True  # functorch transforms see the autograd.Function
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _check_normalized_shape(input: torch.Tensor, normalized_shape, rms: bool) -> int:
    if (type(normalized_shape) in (list, tuple, torch.Size) and len(normalized_shape) == 1
            and type(normalized_shape[0]) is int and input.dim()
            and input.shape[-1] == normalized_shape[0]):
        return 1  # the common case, answered first (host time)
    # an int alone is accepted (as nn.LayerNorm does); elements must be ints, as torch's
    # (int() would take 3.5 or True silently)
    items = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    if any(isinstance(s, (bool, float)) for s in items):
        raise ArgumentTypeError(
            f"normalized_shape must be a sequence of ints, got {normalized_shape!r}")
    shape = [operator.index(s) for s in items]
    if not shape:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            f"one element, but got normalized_shape = {shape}")
    n = len(shape)
    if rms and input.dim() < n:
        raise ValueError(f"Input tensor must have at least {n} dimensions, but got {input.dim()}")
    if input.dim() < n or list(input.shape[input.dim() - n:]) != shape:
        star = "[*" if rms else "[*, "
        raise RuntimeError(
            f"Given normalized_shape={shape}, expected input with shape {star}"
            f"{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}")
    return n


def _param(p: torch.Tensor | None, name: str, input: torch.Tensor, shape) -> torch.Tensor | None:
    if p is None:
        return None
    if p.shape != shape:
        raise RuntimeError(
            f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
            f"{list(p.shape)} and normalized_shape = {list(shape)}")
    return p.to(input.dtype) if p.dtype != input.dtype else p


def rms_norm(input: torch.Tensor, normalized_shape: list[int], weight: torch.Tensor | None = None,
             eps: float | None = None) -> torch.Tensor:
    """torch.nn.functional.rms_norm on RMSNormPlan; differentiable through RMSNormBackwardPlan.

    ``eps=None`` means torch.finfo(input.dtype).eps, as torch.
    """
    n = _check_normalized_shape(input, normalized_shape, rms=True)
    w = _param(weight, "weight", input, input.shape[input.dim() - n:])
    if eps is None:
        eps = torch.finfo(input.dtype).eps if input.is_floating_point() else 1e-6
    if _needs_grad(input, w):
        return _RMSNormFunction.apply(input, n, w, float(eps))
    return _rms_norm(input, n, w, float(eps))[0]


def layer_norm(input: torch.Tensor, normalized_shape: list[int],
               weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
               eps: float = 1e-5) -> torch.Tensor:
    """torch.nn.functional.layer_norm on LayerNormPlan; differentiable through
    LayerNormBackwardPlan (biased variance, rstd = 1/sqrt(var + eps))."""
    n = _check_normalized_shape(input, normalized_shape, rms=False)
    shape = input.shape[input.dim() - n:]
    w = _param(weight, "weight", input, shape)
    b = _param(bias, "bias", input, shape)
    if _needs_grad(input, w, b):
        return _LayerNormFunction.apply(input, n, w, b, float(eps))
    return _layer_norm(input, n, w, b, float(eps))[0]


# -- GroupNorm / BatchNorm / InstanceNorm ---------------------------------------------------------
def _chan_stats(x: torch.Tensor, shape) -> torch.Tensor:
    dt = torch.float64 if x.dtype == torch.float64 else torch.float32
    return x.new_empty(tuple(shape), dtype=dt)


def _chan_bwd_outputs(x, weight, has_bias):
    c = x.shape[1]
    dw = torch.empty_like(weight) if weight is not None else None
    db = x.new_empty((c,)) if has_bias else None
    return torch.empty_like(x), dw, db


def _pack(dx, dw, db, x):
    return (dx, dw if dw is not None else _empty_param(x),
            db if db is not None else _empty_param(x))


def _gn_fwd(x: torch.Tensor, num_groups: int, weight: torch.Tensor | None,
            bias: torch.Tensor | None, eps: float
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    y = torch.empty_like(x)
    mean, rstd = (_chan_stats(x, (x.shape[0], num_groups)) for _ in range(2))
    desc = GroupNormPlan.descriptor_type(tuple(x.shape), num_groups, weight is not None,
                                         bias is not None, eps, x.dtype)
    run_plan(GroupNormPlan, desc, GroupNormPlan.args_type(x=x, y=y, mean=mean, rstd=rstd,
                                                          gamma=weight, beta=bias))
    return y, mean, rstd


def _gn_fwd_fake(x, num_groups, weight, bias, eps):
    return (torch.empty_like(x), _chan_stats(x, (x.shape[0], num_groups)),
            _chan_stats(x, (x.shape[0], num_groups)))


def _chan_bwd(plan, dy, x, mean, rstd, weight, has_bias, option):
    """The backward of every channel norm; `option`: the descriptor's num_groups, training or
    use_input_stats."""
    dy = _dense_spatial(dy)  # the upstream gradient may have any layout
    dx, dw, db = _chan_bwd_outputs(x, weight, has_bias)
    desc = plan.descriptor_type(tuple(x.shape), option, weight is not None, has_bias, x.dtype)
    run_plan(plan, desc, plan.args_type(dy=dy, x=x, mean=mean, rstd=rstd, dx=dx, gamma=weight,
                                        dgamma=dw, dbeta=db))
    return _pack(dx, dw, db, x)


def _gn_bwd(dy: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
            weight: torch.Tensor | None, has_bias: bool,
            num_groups: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _chan_bwd(GroupNormBackwardPlan, dy, x, mean, rstd, weight, has_bias, num_groups)


def _chan_bwd_fake(dy, x, mean, rstd, weight, has_bias, option):
    return _pack(*_chan_bwd_outputs(x, weight, has_bias), x)


_group_norm_backward = define_op("group_norm_backward", _gn_bwd, _chan_bwd_fake)


def _gn_setup(ctx, inputs, output):
    x, g, weight, bias, _ = inputs
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.option, ctx.has_bias = g, bias is not None


def _chan_autograd(bwd_op):
    def backward(ctx, dy, *_):
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dw, db = bwd_op(dy, x, mean, rstd, weight, ctx.has_bias, ctx.option)
        return (dx, dw if weight is not None else None, db if ctx.has_bias else None)

    return backward


def _gn_autograd(ctx, dy, *rest):
    dx, dw, db = _chan_autograd(_group_norm_backward)(ctx, dy, *rest)
    return dx, None, dw, db, None


_group_norm = define_op("group_norm", _gn_fwd, _gn_fwd_fake, backward=_gn_autograd,
                        setup_context=_gn_setup)


def _running_fwd(plan, stats_shape, x, running_mean, running_var, weight, bias, flag, momentum,
                 eps):
    # Functional op (torch cannot attach autograd to a mutating custom op): the plan updates
    # copies of the running statistics, the public function copies them back in place.
    y = torch.empty_like(x)
    mean, rstd = (_chan_stats(x, stats_shape) for _ in range(2))
    rm = running_mean.clone() if running_mean is not None else None
    rv = running_var.clone() if running_var is not None else None
    desc = plan.descriptor_type(tuple(x.shape), flag, weight is not None, bias is not None,
                                running_mean is not None, momentum, eps, x.dtype)
    run_plan(plan, desc, plan.args_type(x=x, y=y, mean=mean, rstd=rstd, gamma=weight,
                                        beta=bias, running_mean=rm, running_var=rv))
    return (y, mean, rstd, rm if rm is not None else _empty_param(x),
            rv if rv is not None else _empty_param(x))


def _running_fake(x, running_mean, running_var, stats_shape):
    return (torch.empty_like(x), _chan_stats(x, stats_shape), _chan_stats(x, stats_shape),
            torch.empty_like(running_mean) if running_mean is not None else _empty_param(x),
            torch.empty_like(running_var) if running_var is not None else _empty_param(x))


def _bn_fwd(x: torch.Tensor, running_mean: torch.Tensor | None,
            running_var: torch.Tensor | None, weight: torch.Tensor | None,
            bias: torch.Tensor | None, training: bool, momentum: float, eps: float
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    return _running_fwd(BatchNormPlan, (x.shape[1],), x, running_mean, running_var, weight,
                        bias, training, momentum, eps)


def _bn_fwd_fake(x, running_mean, running_var, weight, bias, training, momentum, eps):
    return _running_fake(x, running_mean, running_var, (x.shape[1],))


def _in_fwd(x: torch.Tensor, running_mean: torch.Tensor | None,
            running_var: torch.Tensor | None, weight: torch.Tensor | None,
            bias: torch.Tensor | None, use_input_stats: bool, momentum: float, eps: float
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    return _running_fwd(InstanceNormPlan, tuple(x.shape[:2]), x, running_mean, running_var,
                        weight, bias, use_input_stats, momentum, eps)


def _in_fwd_fake(x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps):
    return _running_fake(x, running_mean, running_var, tuple(x.shape[:2]))


def _bn_bwd(dy: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
            weight: torch.Tensor | None, has_bias: bool,
            training: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _chan_bwd(BatchNormBackwardPlan, dy, x, mean, rstd, weight, has_bias, training)


def _in_bwd(dy: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
            weight: torch.Tensor | None, has_bias: bool,
            use_input_stats: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _chan_bwd(InstanceNormBackwardPlan, dy, x, mean, rstd, weight, has_bias,
                     use_input_stats)


_batch_norm_backward = define_op("batch_norm_backward", _bn_bwd, _chan_bwd_fake)
_instance_norm_backward = define_op("instance_norm_backward", _in_bwd, _chan_bwd_fake)


def _running_setup(ctx, inputs, output):
    x, _, _, weight, bias, flag, _, _ = inputs
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.option, ctx.has_bias = flag, bias is not None


def _running_autograd(bwd_op):
    inner = _chan_autograd(bwd_op)

    def backward(ctx, dy, *rest):
        dx, dw, db = inner(ctx, dy, *rest)
        return dx, None, None, dw, db, None, None, None

    return backward


_batch_norm = define_op("batch_norm", _bn_fwd, _bn_fwd_fake,
                        backward=_running_autograd(_batch_norm_backward),
                        setup_context=_running_setup)
_instance_norm = define_op("instance_norm", _in_fwd, _in_fwd_fake,
                           backward=_running_autograd(_instance_norm_backward),
                           setup_context=_running_setup)


def _dense_spatial(t: torch.Tensor) -> torch.Tensor:
    """The channel-norm kernels address the spatial dims as one strided dim (channels-last
    and contiguous layouts collapse so); any other layout (a permuted [N, C, D, H, W]) is
    packed first, as torch accepts every stride."""
    return t if spatial_collapses(t) else t.contiguous()


def _chan_param(p, name, input):
    if p is None:
        return None
    c = input.shape[1] if input.dim() > 1 else 0
    if p.dim() != 1 or p.shape[0] != c:
        raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                           f"channels in input, but got {name} of shape {list(p.shape)} and "
                           f"input of shape {list(input.shape)}")
    return p.to(input.dtype) if p.dtype != input.dtype else p


def _verify_batch_size(size) -> None:
    """torch.nn.functional's check that a statistic has more than one value (size[0] times
    the spatial extents), raised as torch raises it (a ValueError)."""
    if size[0] * math.prod(size[2:]) == 1:
        raise InvalidProblem(f"Expected more than 1 value per channel when training, got "
                             f"input size {list(size)}")


def group_norm(input: torch.Tensor, num_groups: int, weight: torch.Tensor | None = None,
               bias: torch.Tensor | None = None, eps: float = 1e-5) -> torch.Tensor:
    """torch.nn.functional.group_norm on GroupNormPlan; differentiable."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    # torch rejects a group of one value (with one sample) before anything else
    _verify_batch_size([input.shape[0] * input.shape[1] // num_groups, num_groups,
                        *input.shape[2:]])
    if input.shape[1] % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(input.shape)} and num_groups={num_groups}")
    w, b = _chan_param(weight, "weight", input), _chan_param(bias, "bias", input)
    return _group_norm(_dense_spatial(input), int(num_groups), w, b, float(eps))[0]


def _torch_eps_check(training: bool, eps: float) -> None:
    """torch.nn.functional.batch_norm's own eps rule and message, which change between torch
    releases (zero or negative eps in training, negative in eval): asked of the installed
    torch on a one-element problem, raised as its ValueError."""
    one = torch.ones(1, dtype=torch.float32)
    try:
        F.batch_norm(torch.zeros(2, 1), one - 1, one, training=training, eps=eps)
    except ValueError as exc:
        raise InvalidProblem(str(exc)) from None


def batch_norm(input: torch.Tensor, running_mean: torch.Tensor | None,
               running_var: torch.Tensor | None, weight: torch.Tensor | None = None,
               bias: torch.Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> torch.Tensor:
    """torch.nn.functional.batch_norm on BatchNormPlan; training updates running_mean /
    running_var in place (unbiased variance, momentum), eval normalizes with them."""
    _check_floats("batch_norm", momentum=momentum, eps=eps)
    if training:
        _verify_batch_size(input.shape)
    if eps <= 0.0:
        _torch_eps_check(training, eps)
    if input.numel() == 0:
        return _empty_batch_norm(input, weight, bias)
    w, b = _chan_param(weight, "weight", input), _chan_param(bias, "bias", input)
    y, _, _, rm, rv = _batch_norm(_dense_spatial(input), running_mean, running_var, w, b,
                                  bool(training), float(momentum), float(eps))
    _copy_running(training, running_mean, running_var, rm, rv)
    return y


def _check_floats(who: str, **values) -> None:
    """torch's TypeError (ours: ArgumentTypeError, also a TypeError) for a non-number
    momentum / eps (momentum=None, nn.BatchNorm's cumulative average, is not an F.batch_norm
    argument), also where the input is empty and nothing else would read them."""
    for name, v in values.items():
        if v is None or isinstance(v, (str, bytes)):  # torch takes bools and 0-dim tensors
            raise ArgumentTypeError(f"{who}(): argument '{name}' must be float, not "
                            f"{type(v).__name__}")


def _empty_batch_norm(input, weight, bias):
    """torch.batch_norm of an empty input: it returns before its checks and statistics,
    `input.clone() * weight[0] + bias[0]` (so a channel count of 0 with a weight raises
    IndexError, and nothing is checked of the running statistics, which stay as they are);
    mirrored so that the same calls succeed and fail. The parameters take the input's dtype
    first, as everywhere here."""
    out = input.clone()
    if weight is not None:
        out = out * weight.to(input.dtype)[0]
    if bias is not None:
        out = out + bias.to(input.dtype)[0]
    return out


def _copy_running(update, running_mean, running_var, rm, rv):
    if update and running_mean is not None:
        with torch.no_grad():
            running_mean.copy_(rm)
            running_var.copy_(rv)


def instance_norm(input: torch.Tensor, running_mean: torch.Tensor | None = None,
                  running_var: torch.Tensor | None = None, weight: torch.Tensor | None = None,
                  bias: torch.Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> torch.Tensor:
    """torch.nn.functional.instance_norm on InstanceNormPlan; differentiable."""
    _check_floats("instance_norm", momentum=momentum, eps=eps)
    if use_input_stats:
        if math.prod(input.shape[2:]) == 1:
            raise InvalidProblem(f"Expected more than 1 spatial element when training, got "
                                 f"input size {input.size()}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    if input.numel() == 0:
        return _empty_instance_norm(input, running_mean, running_var, weight, bias,
                                    use_input_stats)
    w, b = _chan_param(weight, "weight", input), _chan_param(bias, "bias", input)
    y, _, _, rm, rv = _instance_norm(_dense_spatial(input), running_mean, running_var, w, b,
                                     bool(use_input_stats), float(momentum), float(eps))
    _copy_running(use_input_stats, running_mean, running_var, rm, rv)
    return y


def _empty_instance_norm(input, running_mean, running_var, weight, bias, use_input_stats):
    """torch.instance_norm of an empty input: batch_norm of the [1, N * C, *spatial] view with
    the parameters repeated N times (an empty input takes batch_norm's shortcut: no checks,
    `clone() * weight_[0] + bias_[0]`); with use_input_stats each running statistic then
    becomes the mean over the batch of its N repeats, NaN for N = 0. Mirrored so that the
    same calls succeed and fail, and the buffers end as torch leaves them."""
    n, c = input.shape[0], input.shape[1]
    out = _empty_batch_norm(input, None if weight is None else weight.repeat(n),
                            None if bias is None else bias.repeat(n))
    if use_input_stats:
        with torch.no_grad():
            for t in (running_mean, running_var):
                if t is not None:
                    t.copy_(t.repeat(n).view(n, c).mean(0))
    return out
