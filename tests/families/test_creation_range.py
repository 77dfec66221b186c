"""The creation range functions against torch: arange / linspace / logspace (dtypes, sizes,
endpoints, errors, out=, 0-d tensor arguments), iota / broadcasted_iota, eye, tri and
tril_indices / triu_indices; real sizes on the GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import baracuda.torch as bt
from baracuda.core.errors import InvalidProblem, Unsupported
from conftest import DEVICE

FLOATS = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def _cuda_arange(start, step, n, dtype):
    """torch's CUDA arithmetic: start + step * i in the compute type (f32 for f32 / halves)."""
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    i = torch.arange(n, dtype=acc)
    return (torch.tensor(start, dtype=acc) + torch.tensor(step, dtype=acc) * i).to(dtype)


def _cuda_linspace(start, end, n, dtype):
    """start + step i below n // 2, end - step (n - 1 - i) from it, in the compute type
    (halves: every operation rounded to the half type, as torch's CUDA kernel)."""
    if dtype in (torch.float16, torch.bfloat16):
        def rh(t):
            return t.to(dtype).to(torch.float32)

        a, b = rh(torch.tensor(float(start))), rh(torch.tensor(float(end)))
        step = rh(rh(b - a) / rh(torch.tensor(float(max(n - 1, 1)))))
        i = torch.arange(n, dtype=torch.float32)
        up, down = rh(a + rh(step * rh(i))), rh(b - rh(step * rh(n - 1 - i)))
        return torch.where(i < max(n // 2, 1), up, down).to(dtype)
    acc = np.float64 if dtype == torch.float64 else np.float32
    a = acc(torch.tensor(start, dtype=torch.float64).to(dtype).item())
    b = acc(torch.tensor(end, dtype=torch.float64).to(dtype).item())
    step = (b - a) / acc(max(n - 1, 1))
    i = np.arange(n)
    v = np.where(i < max(n // 2, 1), a + step * i.astype(acc), b - step * (n - 1 - i).astype(acc))
    return torch.from_numpy(v.astype(acc)).to(dtype)


ARANGES = [(5,), (2, 9), (-3, 40, 7), (10, -3, -2), (0.5, 7.25, 0.25), (-2.0, 3.3, 0.37),
           (1e-3, 0.25, 1e-4), (0, 0), (torch.tensor(3), torch.tensor(11.5), 0.5)]


@pytest.mark.parametrize("args", ARANGES)
def test_arange_size_dtype_and_values(args):
    got, want = bt.arange(*args, device=DEVICE), torch.arange(*args, device=DEVICE)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype == torch.int64:
        assert torch.equal(got, want)
    else:  # torch's CPU kernel computes in double with vector-lane offsets: 1-ulp apart
        start, end, step = (list(args) + [1])[:3] if len(args) > 1 else (0, args[0], 1)
        start, step = float(start), float(step)
        # on the GPU torch's own CUDA kernel (its multiply-add contracted, as ours is);
        # on the CPU its arithmetic without the contraction, as the interpreter runs it
        ref = want if got.is_cuda else _cuda_arange(start, step, got.numel(), got.dtype)
        assert torch.equal(got, ref)
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_arange_every_dtype(dtype):
    args = (3, 90, 7) if dtype == torch.uint8 else (-17, 90, 7)
    got, want = bt.arange(*args, dtype=dtype, device=DEVICE), torch.arange(*args, dtype=dtype,
                                                                           device=DEVICE)
    assert got.dtype == want.dtype and torch.equal(got, want)
    # a float step with an integer dtype: the count from the float, values stepping by int(step)
    _eq(bt.arange(0, 10, 1.5, dtype=torch.int64, device=DEVICE),
        torch.arange(0, 10, 1.5, dtype=torch.int64, device=DEVICE)) if dtype == torch.int64 \
        else None


def _eq(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def test_arange_errors_and_out():
    with pytest.raises(InvalidProblem, match="nonzero"):
        bt.arange(0, 5, 0, device=DEVICE)
    with pytest.raises(InvalidProblem, match="nonzero"):
        bt.arange(0, 5, 0.5, dtype=torch.int64, device=DEVICE)  # the step truncates to 0
    with pytest.raises(InvalidProblem, match="step sign"):
        bt.arange(5, 0, 1, device=DEVICE)
    with pytest.raises(InvalidProblem, match="unsupported range"):
        bt.arange(0, float("inf"), device=DEVICE)
    with pytest.raises(Unsupported):
        bt.arange(3, dtype=torch.bool, device=DEVICE)
    out = torch.full((2, 2), 7.0, device=DEVICE)
    got = bt.arange(1, 4, out=out)
    assert got is out and out.shape == (3,) and out.dtype == torch.float32
    _eq(out, torch.arange(1.0, 4.0, device=DEVICE))
    strided = torch.zeros(10, device=DEVICE)[::2]
    bt.arange(5, out=strided)
    _eq(strided, torch.arange(5.0, device=DEVICE))


LINSPACES = [(-2.0, 3.3, 1001), (0.1, 7.7, 777), (-5, 5, 50), (3, 3, 4), (2.5, 9.0, 1),
             (0, 1, 0), (1, 0, 2), (torch.tensor(-1.0), torch.tensor(2), 7)]


@pytest.mark.parametrize("args", LINSPACES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_linspace_formula_and_endpoints(args, dtype):
    got = bt.linspace(*args, dtype=dtype, device=DEVICE)
    want = torch.linspace(*args, dtype=dtype, device=DEVICE)
    assert got.dtype == want.dtype and got.shape == want.shape
    start, end, n = float(args[0]), float(args[1]), args[2]
    if got.is_cuda:
        assert torch.equal(got, want)
    elif dtype == torch.bfloat16:
        # the interpreter keeps bf16 intermediates unrounded (numpy has no bf16): within the
        # type's rounding of the step's multiples (a few 2**-8 of the span) of torch's
        # arithmetic, which the GPU run above checks bit for bit
        torch.testing.assert_close(got.float(), _cuda_linspace(start, end, n, dtype).float(),
                                   rtol=2 ** -7, atol=abs(end - start) * 2 ** -6)
    else:
        assert torch.equal(got, _cuda_linspace(start, end, n, dtype))
    if n:
        assert got[0].item() == want[0].item()
        assert got[-1].item() == want[-1].item()  # both ends exact
    # (bf16: torch's own arithmetic rounds each operation, a few 2**-8 of the span)
    tol = {torch.bfloat16: dict(atol=abs(end - start) * 2 ** -6, rtol=1e-2)}.get(dtype, {})
    torch.testing.assert_close(got, want, **tol)


@pytest.mark.parametrize("dtype", INTS)
def test_linspace_logspace_integer_dtypes_match_torch(dtype):
    _eq(bt.linspace(0, 10, 7, dtype=dtype, device=DEVICE),
        torch.linspace(0, 10, 7, dtype=dtype, device=DEVICE))
    _eq(bt.linspace(2.7, 100.2, 31, dtype=dtype, device=DEVICE),
        torch.linspace(2.7, 100.2, 31, dtype=dtype, device=DEVICE))
    _eq(bt.logspace(0, 6, 7, base=2.7, dtype=dtype, device=DEVICE),
        torch.logspace(0, 6, 7, base=2.7, dtype=dtype, device=DEVICE))
    if dtype in (torch.int64, torch.int32):
        _eq(bt.logspace(0, 9, 10, dtype=dtype, device=DEVICE),
            torch.logspace(0, 9, 10, dtype=dtype, device=DEVICE))


@pytest.mark.parametrize("args", [(-3, 3, 13), (0, 2, 9, 2.0), (-1.5, 2.5, 40, 3.3),
                                  (0, 4, 5, -2.0), (1, 1, 1), (0, 1, 0), (-2, 2, 11, 0.5)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_logspace_against_float64(args, dtype):
    got = bt.logspace(*args, dtype=dtype, device=DEVICE)
    ref = torch.logspace(*args, dtype=torch.float64, device=DEVICE)
    rtol = 1e-5 if dtype == torch.float32 else 1e-13
    torch.testing.assert_close(got.double(), ref, rtol=rtol, atol=0, equal_nan=True)
    if args[:2] == (-3, 3):  # the even positions' exponents are integers: C's pow, exactly
        exact = torch.logspace(*args, dtype=dtype, device=DEVICE)
        assert torch.equal(got[::2], exact[::2])


def test_linspace_logspace_errors_and_out():
    with pytest.raises(InvalidProblem, match="non-negative"):
        bt.linspace(0, 1, -1, device=DEVICE)
    with pytest.raises(InvalidProblem, match="0-dimensional"):
        bt.linspace(torch.zeros(2), 1, 3, device=DEVICE)
    with pytest.raises(InvalidProblem, match="non-negative"):
        bt.logspace(0, 1, -2, device=DEVICE)
    out = torch.empty(0, dtype=torch.float64, device=DEVICE)
    assert bt.linspace(0, 1, 5, out=out) is out
    _eq(out, torch.linspace(0, 1, 5, dtype=torch.float64, device=DEVICE))
    out = torch.empty(3, device=DEVICE)
    bt.logspace(0, 2, 3, out=out)
    _eq(out, torch.logspace(0, 2, 3, device=DEVICE))


def test_iota():
    _eq(bt.iota(torch.int32, 6, device=DEVICE), torch.arange(6, dtype=torch.int32,
                                                             device=DEVICE))
    got = bt.broadcasted_iota(torch.float32, (3, 4, 2), 1, device=DEVICE)
    want = torch.arange(4.0, device=DEVICE)[None, :, None].expand(3, 4, 2)
    _eq(got, want)
    with pytest.raises(InvalidProblem):
        bt.broadcasted_iota(torch.float32, (3, 4), 2, device=DEVICE)


# -- eye, tri, indices ----------------------------------------------------------------------------
@pytest.mark.parametrize("n,m", [(5, None), (3, 7), (9, 2), (0, 4), (1, 1), (70, 1100)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool, torch.int64])
def test_eye(n, m, dtype):
    args = (n,) if m is None else (n, m)
    _eq(bt.eye(*args, dtype=dtype, device=DEVICE), torch.eye(*args, dtype=dtype, device=DEVICE))


def test_eye_out_and_errors():
    out = torch.full((4, 3), 5.0, device=DEVICE).t()  # written through its strides
    assert bt.eye(3, 4, out=out) is out
    _eq(out, torch.eye(3, 4, device=DEVICE))
    with pytest.raises(InvalidProblem, match="greater or equal to 0"):
        bt.eye(-1, device=DEVICE)
    with pytest.raises(InvalidProblem):
        bt.eye(2, -3, device=DEVICE)


@pytest.mark.parametrize("n,m,k", [(4, None, 0), (3, 6, 1), (6, 3, -2), (5, 5, -9), (5, 5, 9)])
def test_tri_as_jnp(n, m, k):
    cols = n if m is None else m
    want = torch.ones(n, cols, device=DEVICE).tril(k)
    _eq(bt.tri(n, m, k, device=DEVICE), want)
    _eq(bt.tri(n, m, k, dtype=torch.int32, device=DEVICE), want.int())


@pytest.mark.parametrize("row,col,offset", [(4, 4, 0), (5, 3, -1), (3, 5, 2), (7, 7, -10),
                                            (7, 7, 10), (1, 1, 0), (0, 5, 0), (40, 33, 3),
                                            (33, 40, -4)])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_tril_triu_indices(row, col, offset, dtype):
    for name in ("tril_indices", "triu_indices"):
        _eq(getattr(bt, name)(row, col, offset, dtype=dtype, device=DEVICE),
            getattr(torch, name)(row, col, offset, dtype=dtype, device=DEVICE))


def test_tri_indices_errors():
    with pytest.raises(InvalidProblem, match="row must be non-negative"):
        bt.tril_indices(-1, 3, device=DEVICE)
    with pytest.raises(InvalidProblem, match="col must be non-negative"):
        bt.triu_indices(3, -1, device=DEVICE)
    with pytest.raises(Unsupported):
        bt.tril_indices(3, 3, dtype=torch.float32, device=DEVICE)
    with pytest.raises(Unsupported):
        bt.tril_indices(3, 3, layout=torch.sparse_coo, device=DEVICE)


# -- real sizes on the GPU --------------------------------------------------------------------
@pytest.mark.gpu
def test_real_sizes_match_torch_cuda():
    n = 1 << 28
    for dtype in (torch.bfloat16, torch.float32):
        assert torch.equal(bt.full((n,), 1.5, dtype=dtype, device="cuda"),
                           torch.full((n,), 1.5, dtype=dtype, device="cuda"))
    assert torch.equal(bt.arange(n, device="cuda"), torch.arange(n, device="cuda"))
    got = bt.arange(0.0, n * 0.25, 0.25, device="cuda")
    want = torch.arange(0.0, n * 0.25, 0.25, device="cuda")
    # one formula (start + step i in f32); an FMA contraction on either side moves an ulp
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1.2e-7, atol=0)
    # the same formula as torch's CUDA kernel; FMA contraction may differ by an ulp
    got, want = (f(-1.0, 1.0, n, device="cuda") for f in (bt.linspace, torch.linspace))
    assert got[0] == want[0] and got[-1] == want[-1]
    torch.testing.assert_close(got, want, rtol=0, atol=2.5e-7)
    assert torch.equal(bt.eye(32768, device="cuda")[:4096, :4096],
                       torch.eye(4096, device="cuda"))
    for name in ("tril_indices", "triu_indices"):
        assert torch.equal(getattr(bt, name)(20000, 15000, -7, device="cuda"),
                           getattr(torch, name)(20000, 15000, -7, device="cuda"))
