"""Every baracuda.torch function traces whole under torch.compile(fullgraph=True): no graph
break, the compiled call equals the eager one, forward and gradient (aot_eager: the compiler's
graph capture and autograd tracing, without a code generator, so it runs on the CPU too).

Functions with an OpInfo take its first sample (float32 where torch lists it); the others take
the hand-written samples below. A function torch itself cannot trace on a sample (a value read
on the host) is listed with its reason, and the test checks that torch's op fails there too.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._pytree import tree_flatten

import opinfo_support as S
from baracuda.tools.ops import frontend_function, frontend_names
from conftest import DEVICE

#: samples where torch's own op does not trace with fullgraph=True either: the reason
#: functions torch.compile cannot take fullgraph, torch's own included: (why, the error's
#: pattern)
TORCH_BREAKS = {
    "one_hot": ("num_classes=-1 takes the largest class from the tensor's values on the host",
                "data-dependent"),
    "resize_": ("dynamo does not trace Tensor.resize_", "resize_"),
    "resize_as_": ("dynamo does not trace resize_as_", "resize_as_"),
}


def _rope_sample():
    ang = torch.rand(6, 4) * 6
    x = torch.randn(1, 6, 2, 8, device=DEVICE, requires_grad=True)
    return (x, ang.cos().to(DEVICE), ang.sin().to(DEVICE)), {}


def _segment_sample():
    data = torch.randn(7, 3, device=DEVICE, requires_grad=True)
    return (data, torch.tensor([0, 2, 2, 1, 0, 3, 2], device=DEVICE), 4), {}


def _t(*shape):
    return torch.randn(*shape, device=DEVICE, requires_grad=True)


def _i32(*shape):
    return torch.randint(-50, 50, shape, device=DEVICE, dtype=torch.int32)


#: functions without an OpInfo: (args, kwargs) makers
MANUAL = {
    "apply_rotary_emb": _rope_sample,
    "cast": lambda: ((_t(4, 5), torch.float64), {}),
    "cbrt": lambda: ((_t(4, 5),), {}),
    "geglu": lambda: ((_t(4, 6),), {}),
    "geglu_tanh": lambda: ((_t(4, 6),), {}),
    "reglu": lambda: ((_t(4, 6),), {}),
    "swiglu": lambda: ((_t(4, 6),), {}),
    "linear_act": lambda: ((_t(4, 8), _t(5, 8), _t(5)), {"activation": "gelu"}),
    **{f"segment_{k}": _segment_sample for k in ("sum", "mean", "max", "min", "prod")},
    "logmeanexp": lambda: ((_t(4, 5), 1), {}),
    "ptp": lambda: ((_t(4, 5),), {"dim": 0}),
    **{f"reduce_{k}": (lambda: ((torch.randint(-9, 9, (4, 5), device=DEVICE), 1), {}))
       for k in ("xor", "and", "or")},
    "iota": lambda: ((torch.int64, 7), {"device": DEVICE}),
    "broadcasted_iota": lambda: ((torch.float32, (3, 4), 1), {"device": DEVICE}),
    "tri": lambda: ((4, 5, 1), {"device": DEVICE}),
    "put_": lambda: ((torch.randn(4, 5, device=DEVICE), torch.tensor([3, -1], device=DEVICE),
                      torch.randn(2, device=DEVICE)), {"accumulate": True}),
    "index_fill_": lambda: ((torch.randn(4, 5, device=DEVICE), 1,
                             torch.tensor([0, 3], device=DEVICE), 1.5), {}),
    "index_reduce_": lambda: ((torch.randn(4, 5, device=DEVICE), 0,
                               torch.tensor([0, 0, 3], device=DEVICE),
                               torch.randn(3, 5, device=DEVICE), "amax"), {}),
    "choose": lambda: ((torch.tensor([[0, 1, 2]], device=DEVICE), [_t(2, 3), _t(3), _t(2, 1)]),
                       {"mode": "clip"}),
    "slice_copy": lambda: ((_t(4, 6), 1, 1, 5, 2), {}),
    "index_in_dim": lambda: ((_t(4, 6), 2, 1), {}),
    "slice_in_dim": lambda: ((_t(4, 6), 1, 5, 2, 1), {}),
    "dynamic_slice": lambda: ((_t(4, 6), [torch.tensor(3, device=DEVICE), 1], [2, 3]), {}),
    "dynamic_slice_in_dim": lambda: ((_t(4, 6), torch.tensor(-2, device=DEVICE), 3, 1), {}),
    "dynamic_index_in_dim": lambda: ((_t(4, 6), torch.tensor(5, device=DEVICE), 0), {}),
    "dynamic_update_slice": lambda: ((_t(4, 6), _t(2, 3),
                                      [torch.tensor(3, device=DEVICE), 5]), {}),
    "dynamic_update_slice_in_dim": lambda: ((_t(4, 6), _t(4, 2), torch.tensor(1, device=DEVICE),
                                             1), {}),
    "dynamic_update_index_in_dim": lambda: ((_t(4, 6), _t(6), torch.tensor(9, device=DEVICE), 0),
                                            {}),
    "modf": lambda: ((_t(4, 5),), {}),
    "spacing": lambda: ((torch.randn(4, 5, device=DEVICE),), {}),
    "integer_pow": lambda: ((_t(4, 5), 3), {}),
    "reduce_precision": lambda: ((_t(4, 5), 5, 2), {}),
    "divmod": lambda: ((_t(4, 5), _t(5)), {}),
    "shift_right_logical": lambda: ((_i32(4, 5), torch.randint(0, 31, (4, 5), device=DEVICE,
                                                               dtype=torch.int32)), {}),
    "mulhi": lambda: ((_i32(4, 5), _i32(4, 5)), {}),
    "population_count": lambda: ((_i32(4, 5),), {}),
    "clz": lambda: ((_i32(4, 5),), {}),
    "piecewise": lambda: ((torch.randn(4, 5, device=DEVICE),
                           [torch.rand(4, 5, device=DEVICE) > 0.5], [1.0, -1.0]), {}),
    "view_dtype": lambda: ((torch.randn(4, 6, device=DEVICE), torch.int16), {}),
    "bitcast_convert_type": lambda: ((torch.randn(4, 6, device=DEVICE), torch.int16), {}),
    "packbits": lambda: ((torch.randint(0, 2, (4, 13), device=DEVICE, dtype=torch.int32), 1),
                         {}),
    "unpackbits": lambda: ((torch.randint(0, 256, (4, 3), device=DEVICE, dtype=torch.uint8), 1),
                           {}),
    **{n: (lambda: ((torch.randn(4, 5, device=DEVICE),), {}))
       for n in ("deg2rad_", "rad2deg_", "nan_to_num_")},
    "float_power_": lambda: ((torch.rand(4, 5, device=DEVICE, dtype=torch.float64), 2.0), {}),
    "bitwise_not_": lambda: ((_i32(4, 5),), {}),
    "logical_not_": lambda: ((torch.randn(4, 5, device=DEVICE) > 0,), {}),
    "clamp_min_": lambda: ((torch.randn(4, 5, device=DEVICE), 0.0), {}),
    "clamp_max_": lambda: ((torch.randn(4, 5, device=DEVICE), 0.0), {}),
    # (in place: the output is the input, which _check's two calls share; the gradient of a
    # tensor value under compile: tests/families/test_creation.py)
    "fill_": lambda: ((torch.randn(4, 5, device=DEVICE), 1.5), {}),
    "slice_scatter": lambda: ((_t(4, 6), _t(4, 2)), {"dim": 1, "start": 1, "end": 5,
                                                      "step": 2}),
    "collapse": lambda: ((_t(2, 3, 4), 0, 2), {}),
    "Tensor.unfold": lambda: ((_t(5, 6), 1, 3, 2), {}),
    "jnp_delete": lambda: ((_t(3, 4), [0, 2], 1), {}),
    "jnp_insert": lambda: ((_t(3, 4), [3, 1, 1], _t(3), 1), {}),
    # draws (opinfo_support.RANDOM_VALUES): layouts compared, not values
    "rand": lambda: ((3, 4), {"device": DEVICE}),
    "random_bits": lambda: ((3, 4), {"dtype": torch.int64, "device": DEVICE}),
    "uniform_": lambda: ((torch.empty(4, 5, device=DEVICE), -1.0, 2.0), {}),
    "normal_": lambda: ((torch.empty(4, 5, device=DEVICE), 1.0, 0.5), {}),
    "exponential_": lambda: ((torch.empty(4, 5, device=DEVICE), 2.0), {}),
    "cauchy_": lambda: ((torch.empty(4, 5, device=DEVICE), 0.0, 2.0), {}),
    "geometric_": lambda: ((torch.empty(4, 5, device=DEVICE), 0.3), {}),
    "log_normal_": lambda: ((torch.empty(4, 5, device=DEVICE), 0.5, 0.75), {}),
    "random_": lambda: ((torch.empty(4, 5, device=DEVICE, dtype=torch.int64), 3, 9), {}),
    "dropout1d": lambda: ((_t(2, 3, 5), 0.5), {}),
    "native_dropout": lambda: ((_t(4, 5), 0.5, True), {}),
    "rrelu_": lambda: ((torch.randn(4, 5, device=DEVICE), 0.1, 0.3, True), {}),
    "gumbel_softmax": lambda: ((_t(4, 5), 0.5, True), {}),
    "randperm": lambda: ((7,), {"device": DEVICE}),
    "poisson": lambda: ((torch.rand(4, 5, device=DEVICE) * 20,), {}),
    "ctc_loss": lambda: ((torch.randn(6, 2, 5, device=DEVICE).log_softmax(2).detach()
                          .requires_grad_(), torch.tensor([[1, 2, 2], [3, 1, 0]], device=DEVICE),
                          [6, 5], [3, 2]), {}),
    "jnp_resize": lambda: ((_t(3, 4), (5, 7)), {}),
    "jnp_pad": lambda: ((_t(3, 4, 5), ((1, 2), (0, 3), (2, 1)), "symmetric"), {}),
    "lax_pad": lambda: ((_t(3, 4), 0.5, [(1, -1, 2), (-1, 2, 1)]), {}),
}


def _opinfo_samples() -> dict[str, tuple]:
    """name -> (case, sample): each function's first OpInfo sample, float32 preferred."""
    picked: dict[str, tuple] = {}
    for case in S.cases():
        if case.name in picked and case.dtype != torch.float32:
            continue
        if case.name in picked and picked[case.name][0].dtype == torch.float32:
            continue
        samples = S.samples(case)
        if samples:
            picked[case.name] = (case, samples[0][1])
    return picked


_OPINFO = _opinfo_samples()


def _floats(out) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(out)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point()]


def _check(eager_call, compiled_call, leaves, values: bool = True):
    """`values`: compare the outputs' values and gradients (not for the factories of
    uninitialized memory or for draws, whose layouts are compared)."""
    torch._dynamo.reset()
    want = eager_call()
    got = torch.compile(compiled_call, backend="aot_eager", fullgraph=True)()
    for g, w in zip(tree_flatten(got)[0], tree_flatten(want)[0]):
        if isinstance(w, torch.Tensor) and not values:
            assert S._layout(g) == S._layout(w)
        elif isinstance(w, torch.Tensor):
            torch.testing.assert_close(g, w, equal_nan=True, rtol=1e-6, atol=1e-6)
        else:
            assert g == w
    outs = [t for t in _floats(got) if t.requires_grad]
    grads = [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]
    if values and outs and grads:  # (draws: two calls' gradients differ as their values)
        gw = torch.autograd.grad([t.sum() for t in _floats(want) if t.requires_grad], grads,
                                 allow_unused=True)
        gg = torch.autograd.grad([t.sum() for t in outs], grads, allow_unused=True)
        for a, b in zip(gg, gw):
            assert (a is None) == (b is None)
            if a is not None:
                torch.testing.assert_close(a, b, equal_nan=True, rtol=1e-6, atol=1e-6)


def test_every_function_has_a_sample():
    missing = sorted(set(frontend_names()) - set(_OPINFO) - set(MANUAL))
    assert not missing, f"add a sample to MANUAL for {missing}"


@pytest.mark.parametrize("name", sorted(_OPINFO))
def test_opinfo_sample_compiles_fullgraph(name):
    case, sample = _OPINFO[name]
    fn = frontend_function(name)
    call = lambda: S._call(case, fn, sample)  # noqa: E731
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    if name in TORCH_BREAKS:
        theirs = S._torch_fn(case)
        for f in (fn, theirs):
            torch._dynamo.reset()
            with pytest.raises(Exception, match=TORCH_BREAKS[name][1]):
                torch.compile(lambda f=f: S._call(case, f, sample), backend="aot_eager",
                              fullgraph=True)()
        return
    _check(call, call, leaves, values=name not in S.UNSPECIFIED_VALUES | S.RANDOM_VALUES)


@pytest.mark.parametrize("name", sorted(MANUAL))
def test_manual_sample_compiles_fullgraph(name):
    args, kwargs = MANUAL[name]()
    fn = frontend_function(name)
    call = lambda: fn(*args, **kwargs)  # noqa: E731
    _check(call, call, list(args) + list(kwargs.values()), values=name not in S.RANDOM_VALUES)
