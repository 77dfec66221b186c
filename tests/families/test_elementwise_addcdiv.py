"""addcdiv / addcmul with integer and bool operands, and the elementwise frontend's typed
argument-type errors, against torch on CPU (torch 2.13's behaviour)."""

from __future__ import annotations

import itertools

import pytest
import torch

import baracuda as bc
import baracuda.torch as bt
from conftest import DEVICE
from helpers import assert_close

_OPERANDS = [torch.float32, torch.float16, torch.int32, torch.int64, torch.bool]


def _make(dtype: torch.dtype, seed: int, zero_dim: bool = False) -> torch.Tensor:
    """Values that keep a bool tensor2's False (a division by zero: inf) and plain numbers."""
    shape = () if zero_dim else (2, 3)
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        t = torch.rand(shape, generator=g) > 0.4
    elif dtype.is_floating_point:
        t = (torch.rand(shape, generator=g, dtype=torch.float64) * 3 + 0.5).to(dtype)
    else:
        t = torch.randint(1, 6, shape, generator=g, dtype=dtype)
    return t.to(DEVICE)


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the raise is the outcome compared
        return exc


def _grads(fn, ts, want_grad):
    """Output and the gradients of `fn` at fresh leaves (the floating operands require grad),
    or the exception the forward or backward raised."""
    leaves = [t.detach().clone().requires_grad_(want_grad and t.is_floating_point())
              for t in ts]
    y = _outcome(lambda: fn(*leaves))
    if isinstance(y, Exception):
        return y, None
    if not y.requires_grad:
        return y, []
    err = _outcome(lambda: y.sum().backward())
    if isinstance(err, Exception):
        return y, err
    return y, [t.grad for t in leaves]


_CASES = [(a, t1, t2) for a, t1, t2 in itertools.product(
    [torch.float32, torch.int64, torch.bool], _OPERANDS, _OPERANDS)
    if not (t1.is_floating_point and t2.is_floating_point)]


@pytest.mark.parametrize("value", [2, -0.5])
@pytest.mark.parametrize(("da", "d1", "d2"), _CASES, ids=lambda d: str(d).replace("torch.", ""))
def test_addcdiv_integer_and_bool_operands_follow_torch(da, d1, d2, value):
    """tensor1 and tensor2 both integer / bool: torch raises (no integer division), ours an
    InvalidProblem. An integer / bool tensor2 beside a floating tensor1 computes, but torch's
    backward raises once it reaches tensor1 (value / tensor2 in tensor2's dtype): ours too.
    Everything else computes, forward and backward, as torch."""
    ts = [_make(d, seed) for d, seed in ((da, 1), (d1, 2), (d2, 3))]

    def ours(*x):
        return bt.addcdiv(*x, value=value)

    def theirs(*x):
        return torch.addcdiv(*[t.cpu() for t in x], value=value)

    for want_grad in (False, True):
        want, want_g = _grads(theirs, ts, want_grad)
        got, got_g = _grads(ours, ts, want_grad)
        what = f"addcdiv({da}, {d1}, {d2}, value={value}) grad={want_grad}"
        if isinstance(want, Exception):
            assert isinstance(want, RuntimeError) and "Integer division" in str(want), what
            assert isinstance(got, bc.InvalidProblem), f"{what}: ours {got!r}"
            assert "integer division" in str(got) and str(d1) in str(got), what
            continue
        assert not isinstance(got, Exception), f"{what}: torch computes, ours raised {got!r}"
        assert got.dtype == want.dtype, what
        ref = torch.addcdiv(*[t.cpu().double() for t in ts], value=value)
        assert_close(got.detach(), ref, want.dtype, what)
        if isinstance(want_g, Exception):
            assert "can't be cast" in str(want_g), what
            assert isinstance(got_g, bc.InvalidProblem), f"{what}: backward ours {got_g!r}"
            assert "tensor2" in str(got_g) and str(d2) in str(got_g), what
            continue
        assert not isinstance(got_g, Exception), f"{what}: torch's backward computes, ours " \
                                                 f"raised {got_g!r}"
        for i, (g, w) in enumerate(zip(got_g, want_g)):
            assert (g is None) == (w is None), f"{what}: grad {i}"
            if w is not None:
                assert g.dtype == w.dtype, f"{what}: grad {i} dtype"
                assert_close(g, w.double(), w.dtype, f"{what}: grad {i}", scale=4.0)


def test_addcdiv_zero_dim_integer_operands_keep_torchs_rules():
    """0-d operands promote as torch's, but the integer-division and backward rules read their
    own dtypes: two 0-d ints raise; a 0-d int tensor2 breaks tensor1's backward."""
    f = _make(torch.float32, 4)
    i0, j0 = _make(torch.int64, 5, zero_dim=True), _make(torch.int32, 6, zero_dim=True)
    with pytest.raises(RuntimeError, match="Integer division"):
        torch.addcdiv(f.cpu(), i0.cpu(), j0.cpu())
    with pytest.raises(bc.InvalidProblem, match="integer division"):
        bt.addcdiv(f, i0, j0)
    t1 = f.clone().requires_grad_()
    y = bt.addcdiv(torch.zeros_like(f), t1, i0, value=3)
    assert_close(y.detach(), 3 * f.double() / i0.double().cpu(), torch.float32)
    with pytest.raises(bc.InvalidProblem, match="tensor2"):
        y.sum().backward()
    a = f.clone().requires_grad_()  # the input's gradient alone does not read tensor2
    bt.addcdiv(a, f, i0).sum().backward()
    assert torch.equal(a.grad.cpu(), torch.ones(2, 3))


@pytest.mark.parametrize("name", ["addcdiv", "addcmul"])
def test_number_for_a_tensor_raises_argument_type_error(name):
    """A Python number where torch's signature takes only a Tensor: torch's TypeError, which
    ours is (ArgumentTypeError), and one of our typed errors as well."""
    f = _make(torch.float32, 7)
    for args in ((2.0, f, f), (f, 3, f), (f, f, 0.5)):
        with pytest.raises(TypeError):
            getattr(torch, name)(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
        with pytest.raises(TypeError, match="must be Tensor, not") as info:
            getattr(bt, name)(*args)
        assert isinstance(info.value, bc.BaracudaError)
        assert isinstance(info.value, bc.ArgumentTypeError)


def test_binary_number_errors_are_typed():
    """maximum(t, 2) (no number in torch's signature) and remainder(2, 3) (no tensor at all;
    add takes two numbers, as torch does)."""
    f = _make(torch.float32, 8)
    for fn, args, match in ((bt.maximum, (f, 2), "must be Tensor"),
                            (bt.atan2, (1.5, f), "must be Tensor"),
                            (bt.remainder, (2, 3), "at least one tensor")):
        with pytest.raises(TypeError, match=match) as info:
            fn(*args)
        assert isinstance(info.value, bc.BaracudaError), fn.__name__
