"""torch's random functions on RandomPlan: rand / randn / randint (and _like), normal (all
overloads), bernoulli, the Tensor.*_ samplers (uniform_, normal_, exponential_, cauchy_,
geometric_, log_normal_, random_) and random_bits (jax.random.bits). Draws come from the
stream of backends/philox.py, its (seed, offset) drawn per call from `generator` (or torch's
default generator of the device), so torch.manual_seed makes them reproducible and two calls
differ. CPU tensors outside the interpreter are filled by torch's own CPU generator."""

from __future__ import annotations

import torch

from ...backends.philox import draw_state
from .descriptors import Dist
from .torch_common import (
    check_options,
    fill_into,
    finish,
    in_place,
    multinomial_op,
    new_tensor,
    on_host,
    size_of,
    with_params,
)

__all__ = ["rand", "rand_like", "randn", "randn_like", "normal", "uniform_", "normal_",
           "exponential_", "cauchy_", "geometric_", "log_normal_", "random_", "randint",
           "randint_like", "bernoulli", "random_bits", "multinomial", "gumbel_softmax",
           "randperm", "poisson"]

from .torch_gumbel import gumbel_softmax  # noqa: E402,F401 - Gumbel noise + softmax
from .torch_poisson import poisson  # noqa: E402,F401 - PoissonPlan
from .torch_randperm import randperm  # noqa: E402,F401 - sorted random keys

_DIGITS = {torch.float32: 24, torch.float64: 53, torch.float16: 11, torch.bfloat16: 8}


def _float_dtype(who: str, dtype) -> torch.dtype:
    dtype = torch.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"\"{who}\" not implemented for '{str(dtype).removeprefix('torch.')}'"
                           f": expected a floating point dtype")
    return dtype


def _factory(who, size, dist, a, b, generator, out, dtype, layout, device, requires_grad,
             pin_memory, torch_fn):
    check_options(who, layout, pin_memory)
    shape = size_of(who, size)
    dtype = _float_dtype(who, dtype if dtype is not None or out is None else out.dtype)
    dev = out.device if out is not None and device is None else device
    y = new_tensor(shape, dtype, dev, out)
    if on_host(y.device):
        return finish(torch_fn(shape, generator=generator, out=y), requires_grad)
    return finish(fill_into(y, dist, a, b, generator), requires_grad)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False) -> torch.Tensor:
    """torch.rand: uniform in [0, 1) on the dtype's grid (never 1 after rounding)."""
    return _factory("rand", size, Dist.UNIFORM, 0.0, 1.0, generator, out, dtype, layout,
                    device, requires_grad, pin_memory, torch.rand)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False) -> torch.Tensor:
    """torch.randn: standard normal draws (Box-Muller)."""
    return _factory("randn", size, Dist.NORMAL, 0.0, 1.0, generator, out, dtype, layout,
                    device, requires_grad, pin_memory, torch.randn)


def _like(who, x, dist, a, b, generator, dtype, layout, device, requires_grad, memory_format,
          torch_fn):
    check_options(who, layout)
    dtype = x.dtype if dtype is None else dtype
    y = torch.empty_like(x, dtype=dtype, device=device, memory_format=memory_format)
    if on_host(y.device):
        return finish(torch_fn(y, generator=generator), requires_grad)
    if dist in (Dist.UNIFORM, Dist.NORMAL):
        _float_dtype(who, dtype)
    return finish(fill_into(y, dist, a, b, generator), requires_grad)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=torch.preserve_format) -> torch.Tensor:
    """torch.rand_like (preserve_format keeps a dense input's strides)."""
    return _like("rand_like", input, Dist.UNIFORM, 0.0, 1.0, generator, dtype, layout, device,
                 requires_grad, memory_format, torch.rand_like)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=torch.preserve_format) -> torch.Tensor:
    """torch.randn_like."""
    return _like("randn_like", input, Dist.NORMAL, 0.0, 1.0, generator, dtype, layout, device,
                 requires_grad, memory_format, torch.randn_like)


# -- normal: four overloads ------------------------------------------------------------------
def _std_check(std) -> None:
    if isinstance(std, torch.Tensor):
        if std.numel() and not torch.compiler.is_compiling() and bool((std < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False) -> torch.Tensor:
    """torch.normal: (Tensor, Tensor) broadcast together, (Tensor, float), (float, Tensor),
    or (float, float, size). Tensor parameters get zero gradients, as torch's."""
    tm, ts = isinstance(mean, torch.Tensor), isinstance(std, torch.Tensor)
    _std_check(std)
    if not tm and not ts:
        if size is None:
            raise TypeError("normal() missing required argument 'size' for float mean and std")
        check_options("normal", layout, pin_memory)
        shape = size_of("normal", (size,))
        dt = _float_dtype("normal", dtype if dtype is not None or out is None else out.dtype)
        y = new_tensor(shape, dt, out.device if out is not None and device is None else device,
                       out)
        if on_host(y.device):
            return finish(torch.normal(float(mean), float(std), shape, generator=generator,
                                       out=y), requires_grad)
        return finish(fill_into(y, Dist.NORMAL, mean, std, generator), requires_grad)
    if tm and ts:
        dt = torch.result_type(mean, std)
        shape = torch.broadcast_shapes(mean.shape, std.shape)
        a, b, fb = mean.broadcast_to(shape), std.broadcast_to(shape), 1.0
    elif tm:
        dt, a, b, fb = mean.dtype, mean, None, float(std)
    else:  # a scalar mean as a tensor of std's shape (the op reads shape and mean from it)
        dt = std.dtype
        a = torch.full_like(std, float(mean)) if not std.requires_grad else \
            torch.full_like(std.detach(), float(mean))
        b, fb = std, 1.0
    if on_host(a.device):
        y = torch.normal(mean, std, generator=generator)
    else:
        y = with_params(Dist.NORMAL, a, b, fb, dt, generator)
    if out is not None:
        return out.resize_(y.shape).copy_(y)
    return y


def _sampler(who, x, dist, a, b, generator, torch_method):
    if on_host(x.device):
        return torch_method(x, generator=generator)
    return in_place(who, x, dist, a, b, generator)


def uniform_(input, from_=0.0, to=1.0, *, generator=None) -> torch.Tensor:
    """Tensor.uniform_(from, to): draws in [from, to) (`from_`: `from` is a Python keyword)."""
    if not input.is_floating_point():
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for "
                                  f"'{str(input.dtype).removeprefix('torch.')}'")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    return _sampler("uniform_", input, Dist.UNIFORM, from_, to, generator,
                    lambda x, generator: x.uniform_(from_, to, generator=generator))


def normal_(input, mean=0.0, std=1.0, *, generator=None) -> torch.Tensor:
    """Tensor.normal_(mean, std)."""
    _std_check(std)
    return _sampler("normal_", input, Dist.NORMAL, mean, std, generator,
                    lambda x, generator: x.normal_(mean, std, generator=generator))


def exponential_(input, lambd=1.0, *, generator=None) -> torch.Tensor:
    """Tensor.exponential_(lambd): -log(1 - u) / lambd."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _sampler("exponential_", input, Dist.EXPONENTIAL, lambd, 0.0, generator,
                    lambda x, generator: x.exponential_(lambd, generator=generator))


def cauchy_(input, median=0.0, sigma=1.0, *, generator=None) -> torch.Tensor:
    """Tensor.cauchy_(median, sigma)."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _sampler("cauchy_", input, Dist.CAUCHY, median, sigma, generator,
                    lambda x, generator: x.cauchy_(median, sigma, generator=generator))


def geometric_(input, p, *, generator=None) -> torch.Tensor:
    """Tensor.geometric_(p): the number of Bernoulli(p) trials up to the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _sampler("geometric_", input, Dist.GEOMETRIC, p, 0.0, generator,
                    lambda x, generator: x.geometric_(p, generator=generator))


def log_normal_(input, mean=1.0, std=2.0, *, generator=None) -> torch.Tensor:
    """Tensor.log_normal_(mean, std): exp of normal draws."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _sampler("log_normal_", input, Dist.LOG_NORMAL, mean, std, generator,
                    lambda x, generator: x.log_normal_(mean, std, generator=generator))


def _int_span(dtype: torch.dtype) -> int:
    """random_()'s default range: [0, 2^mantissa] for floats, [0, max] for integers."""
    if dtype.is_floating_point:
        return (1 << _DIGITS[dtype]) + 1
    if dtype == torch.bool:
        return 2
    return int(torch.iinfo(dtype).max) + 1


def _check_range(low: int, high: int, dtype: torch.dtype) -> None:
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    if not dtype.is_floating_point and dtype != torch.bool:
        info = torch.iinfo(dtype)
        if low < info.min or high - 1 > info.max:
            name = {torch.uint8: "unsigned char", torch.int8: "signed char",
                    torch.int16: "short", torch.int32: "int", torch.int64: "long"}[dtype]
            bad = "from" if low < info.min else "to - 1"
            raise RuntimeError(f"{bad} is out of bounds for {name}")


def random_(input, from_=0, to=None, *, generator=None) -> torch.Tensor:
    """Tensor.random_(from, to): integers in [from, to) (to None: the dtype's default range)."""
    low, high = (0, from_) if to is None and from_ != 0 else (from_, to)
    if high is None:
        high = _int_span(input.dtype)
    _check_range(int(low), int(high), input.dtype)
    return _sampler("random_", input, Dist.RANDINT, int(low), int(high) - int(low), generator,
                    lambda x, generator: x.random_(from_, to, generator=generator))


def randint(*args, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False, low=None, high=None, size=None
            ) -> torch.Tensor:
    """torch.randint(high, size) / randint(low, high, size): int64 unless `dtype`."""
    if len(args) == 3:
        low, high, size = args
    elif len(args) == 2:
        (high, size), low = args, 0 if low is None else low
    elif len(args) == 1:
        size, low = args[0], 0 if low is None else low
    else:
        low = 0 if low is None else low
    if high is None or size is None:
        raise TypeError("randint() missing required arguments 'high' and 'size'")
    check_options("randint", layout, pin_memory)
    shape = size_of("randint", (size,))
    dt = dtype or (out.dtype if out is not None else torch.int64)
    _check_range(int(low), int(high), dt)
    y = new_tensor(shape, dt, out.device if out is not None and device is None else device, out)
    if on_host(y.device):
        return finish(torch.randint(low, high, shape, generator=generator, out=y), requires_grad)
    return finish(fill_into(y, Dist.RANDINT, int(low), int(high) - int(low), generator),
                  requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad=False, memory_format=torch.preserve_format
                 ) -> torch.Tensor:
    """torch.randint_like(input, high) / (input, low, high)."""
    if high is None:
        low, high = 0, low
    check_options("randint_like", layout)
    dt = input.dtype if dtype is None else dtype
    _check_range(int(low), int(high), dt)
    y = torch.empty_like(input, dtype=dt, device=device, memory_format=memory_format)
    if on_host(y.device):
        return finish(torch.randint_like(y, int(low), int(high), generator=generator),
                      requires_grad)
    return finish(fill_into(y, Dist.RANDINT, int(low), int(high) - int(low), generator),
                  requires_grad)


def bernoulli(input, p=None, *, generator=None, out=None) -> torch.Tensor:
    """torch.bernoulli(input): ones with probability input (a tensor of probabilities in
    [0, 1]); bernoulli(input, p): input's shape and dtype, probability p. No gradient reaches
    the probabilities (zeros, as torch)."""
    if p is None:
        if input.numel() and not torch.compiler.is_compiling() and \
                bool(((input < 0) | (input > 1)).any()):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        if on_host(input.device):
            y = torch.bernoulli(input, generator=generator)
        else:
            y = with_params(Dist.BERNOULLI, input.contiguous() if input.dim() == 0 else input,
                            None, 0.0, input.dtype, generator)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        y = torch.empty_like(input, memory_format=torch.contiguous_format)
        if on_host(y.device):
            y.bernoulli_(p, generator=generator)
        else:
            fill_into(y, Dist.BERNOULLI, p, 0.0, generator)
    if out is not None:
        return out.resize_(y.shape).copy_(y)
    return y


def random_bits(*size, dtype=torch.int32, generator=None, device=None) -> torch.Tensor:
    """jax.random.bits: every bit of every element drawn from the stream (two 32-bit words
    per 64-bit element). Integer dtypes; uint32 / uint64 are their signed views."""
    shape = size_of("random_bits", size)
    if dtype.is_floating_point or dtype == torch.bool:
        raise RuntimeError(f"random_bits: dtype must be an integer dtype, got {dtype}")
    y = torch.empty(shape, dtype=dtype, device=device)
    if on_host(y.device):
        info = torch.iinfo(dtype)
        return y.random_(info.min, info.max, generator=generator)
    return fill_into(y, Dist.BITS, 0, 1, generator)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None
                ) -> torch.Tensor:
    """torch.multinomial: `num_samples` category indices per row of `input` (1-D or 2-D
    non-negative weights), with or without replacement; torch's errors for negative,
    non-finite or all-zero rows (read on the host, as torch's checks). Without replacement,
    zero-weight categories come after every positive one (in index order), as torch's."""
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{str(input.dtype).removeprefix('torch.').capitalize()}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rows = input.reshape(-1, input.shape[-1]) if input.dim() == 1 else input
    if rows.numel() and not torch.compiler.is_compiling():
        if bool((~torch.isfinite(rows) | (rows < 0)).any()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool((rows.sum(-1) <= 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if on_host(rows.device):
        y = torch.multinomial(input, num_samples, replacement, generator=generator)
    else:
        y = multinomial_op(rows, draw_state(rows.device, generator), int(num_samples),
                           bool(replacement))
        y = y.reshape(num_samples) if input.dim() == 1 else y
    if out is not None:
        return out.resize_(y.shape).copy_(y)
    return y
