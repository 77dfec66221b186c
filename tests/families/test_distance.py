"""Distance family: the torch frontends (cdist, pdist, pairwise_distance, cosine_similarity,
dist) against torch, forward and gradients, broadcasting, compute modes, dtypes, error parity,
empty and 0-d inputs, determinism, gradcheck, opcheck and torch.compile."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from baracuda.families.distance import torch_api as bt
from conftest import DEVICE

INF = math.inf


def _x(*shape, dtype=torch.float64, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(DEVICE, dtype)


def _check(ours, theirs, inputs, atol=None, rtol=None, seed=1):
    """Forward and the gradient of every floating input against torch's op."""
    a = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    b = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    ya, yb = ours(*a), theirs(*b)
    assert ya.shape == yb.shape and ya.dtype == yb.dtype
    torch.testing.assert_close(ya, yb, atol=atol, rtol=rtol)
    leaves = [i for i, t in enumerate(a) if t.requires_grad]
    if not leaves or not yb.requires_grad:
        return
    g = torch.randn(yb.shape, generator=torch.Generator().manual_seed(seed),
                    dtype=torch.float64).to(DEVICE, yb.dtype)
    ga = torch.autograd.grad(ya, [a[i] for i in leaves], g, allow_unused=True)
    gb = torch.autograd.grad(yb, [b[i] for i in leaves], g, allow_unused=True)
    for u, v, t in zip(ga, gb, [b[i] for i in leaves]):
        # (torch leaves p = 0 norms unconnected: a zero gradient)
        torch.testing.assert_close(u, torch.zeros_like(t) if v is None else v, atol=atol,
                                   rtol=rtol)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 0.5, 3.0, INF])
@pytest.mark.parametrize("shapes", [((5, 7), (6, 7)), ((2, 1, 4, 3), (3, 5, 3))])
def test_cdist_direct_matches_torch(p, shapes):
    x, y = _x(*shapes[0]), _x(*shapes[1], seed=1)
    _check(lambda a, b: bt.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), [x, y])


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_compute_modes_match_torch(mode):
    x, y = _x(30, 6), _x(2, 9, 6, seed=1)  # 30 rows: mode 0 takes the matmul form
    _check(lambda a, b: bt.cdist(a, b, compute_mode=mode),
           lambda a, b: torch.cdist(a, b, compute_mode=mode), [x, y])


def test_cdist_routes_as_torch(monkeypatch):
    """p = 2 takes the matmul form past 25 rows (mode 0) or always (mode 1); never otherwise."""
    calls = []
    monkeypatch.setattr(bt, "_cdist_mm", lambda x, y: calls.append("mm") or torch.zeros(
        x.shape[0], x.shape[1], y.shape[1], dtype=x.dtype))
    monkeypatch.setattr(bt, "_cdist_direct", lambda x, y, p: calls.append("direct") or
                        torch.zeros(x.shape[0], x.shape[1], y.shape[1], dtype=x.dtype))
    small, big = _x(25, 3), _x(26, 3)
    bt.cdist(small, small)
    bt.cdist(small, big)
    bt.cdist(small, small, compute_mode="use_mm_for_euclid_dist")
    bt.cdist(big, big, compute_mode="donot_use_mm_for_euclid_dist")
    bt.cdist(big, big, p=1.0)
    bt.cdist(big[:0], big)  # empty: torch's explicit-autograd direct form
    assert calls == ["direct", "mm", "mm", "direct", "direct", "direct"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cdist_matmul_form_low_precision(dtype):
    x, y = _x(30, 16, dtype=dtype), _x(40, 16, dtype=dtype, seed=1)
    tol = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype]
    _check(bt.cdist, torch.cdist, [x, y], atol=tol, rtol=tol)


def test_cdist_strided_and_empty():
    x = _x(9, 14)[::2, ::2]  # strided rows and columns
    y = _x(7, 7, seed=3).t()  # transposed
    _check(lambda a, b: bt.cdist(a, b, 1.0), lambda a, b: torch.cdist(a, b, 1.0), [x, y])
    _check(bt.cdist, torch.cdist, [_x(0, 4), _x(3, 4)])
    _check(bt.cdist, torch.cdist, [_x(3, 0), _x(5, 0)])


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 0.7, 4.0, INF])
def test_pdist_matches_torch(p):
    _check(lambda a: bt.pdist(a, p), lambda a: F.pdist(a, p), [_x(9, 5)])
    _check(lambda a: bt.pdist(a, p), lambda a: F.pdist(a, p), [_x(12, 40).t()[:, ::3]])


def test_pdist_degenerate_rows():
    _check(bt.pdist, F.pdist, [_x(1, 4)])
    x = _x(4, 3)
    x[2] = x[0]  # a zero distance: torch's subgradient 0
    _check(bt.pdist, F.pdist, [x])


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, 0.5, INF, -INF, -1.5])
def test_pairwise_distance_matches_torch(p):
    x, y = _x(2, 1, 6), _x(3, 6, seed=1)
    _check(lambda a, b: bt.pairwise_distance(a, b, p), lambda a, b: F.pairwise_distance(a, b, p),
           [x, y])
    _check(lambda a, b: bt.pairwise_distance(a, b, p, 0.1, True),
           lambda a, b: F.pairwise_distance(a, b, p, 0.1, True), [_x(4, 5), _x(5, seed=2)])


def test_pairwise_distance_shapes_and_dtypes():
    _check(bt.pairwise_distance, F.pairwise_distance, [_x(()), _x((), seed=1)])
    _check(bt.pairwise_distance, F.pairwise_distance, [_x(7), _x(7, seed=1)])
    _check(bt.pairwise_distance, F.pairwise_distance, [_x(0, 3), _x(0, 3)])
    _check(bt.pairwise_distance, F.pairwise_distance, [_x(3, 0), _x(3, 0)])
    ints = torch.arange(12, device=DEVICE).view(3, 4)
    _check(bt.pairwise_distance, F.pairwise_distance, [ints, ints.flip(0)])
    _check(bt.pairwise_distance, F.pairwise_distance, [_x(3, 4, dtype=torch.float32), _x(4)])
    for dtype in (torch.float16, torch.bfloat16):
        _check(bt.pairwise_distance, F.pairwise_distance,
               [_x(5, 300, dtype=dtype), _x(5, 300, dtype=dtype, seed=1)], atol=5e-2, rtol=2e-2)


def test_infinity_norm_ties_share_the_gradient():
    """torch's norm backward splits the gradient among tied maxima (pairwise_distance, dist);
    cdist and pdist give each tie all of it."""
    x = torch.tensor([[3.0, -3.0, 1.0], [2.0, 3.0, -3.0]], dtype=torch.float64, device=DEVICE)
    z = torch.zeros(3, dtype=torch.float64, device=DEVICE)
    for p in (INF, -INF):
        _check(lambda a, b, p=p: bt.pairwise_distance(a, b, p, 0.0),
               lambda a, b, p=p: F.pairwise_distance(a, b, p, 0.0), [x, z])
        _check(lambda a, b, p=p: bt.dist(a, b, p), lambda a, b, p=p: torch.dist(a, b, p), [x, z])
    _check(lambda a, b: bt.cdist(a, b, INF), lambda a, b: torch.cdist(a, b, INF), [x, z[None]])
    bf = x.to(torch.bfloat16)  # ties found in f32 although the output is rounded to bf16
    _check(lambda a: bt.pairwise_distance(a, torch.zeros_like(a), INF),
           lambda a: F.pairwise_distance(a, torch.zeros_like(a), INF), [bf])


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 0.5, INF, -INF, -2.0])
def test_dist_matches_torch(p):
    _check(lambda a, b: bt.dist(a, b, p), lambda a, b: torch.dist(a, b, p),
           [_x(3, 1, 5), _x(4, 5, seed=1)])


def test_dist_forms():
    _check(bt.dist, torch.dist, [_x(3, 4, dtype=torch.float32), _x(4)])  # promotes to f64
    _check(bt.dist, torch.dist, [_x(()), _x((), seed=2)])
    _check(bt.dist, torch.dist, [_x(0, 3), _x(3)])
    big = _x(3000, seed=5)  # a long line: per-row partials, then their combination
    _check(bt.dist, torch.dist, [big, big.flip(0)])
    x = _x(6, 7)
    assert bt.dist(x, x.flip(1), 0).item() == torch.dist(x, x.flip(1), 0).item()


@pytest.mark.parametrize("dim", [1, 0, -1])
def test_cosine_similarity_matches_torch(dim):
    _check(lambda a, b: bt.cosine_similarity(a, b, dim),
           lambda a, b: F.cosine_similarity(a, b, dim), [_x(4, 6, 5), _x(6, 1, seed=1)])


def test_cosine_similarity_eps_formula():
    """torch 2.13: each operand divided by max(|x|, eps), the clamp outside autograd."""
    x = _x(4, 6)
    x[1] = 0
    x[2] *= 1e-9
    y = _x(4, 6, seed=1)
    y[3] *= 1e-10
    _check(lambda a, b: bt.cosine_similarity(a, b, 1, 1e-8),
           lambda a, b: F.cosine_similarity(a, b, 1, 1e-8), [x, y])
    _check(lambda a, b: bt.cosine_similarity(a, b, 1, 0.5),
           lambda a, b: F.cosine_similarity(a, b, 1, 0.5), [x, y])


def test_cosine_similarity_shapes_and_dtypes():
    _check(lambda a, b: bt.cosine_similarity(a, b, 0),
           lambda a, b: F.cosine_similarity(a, b, 0), [_x(()), _x((), seed=1)])
    _check(lambda a, b: bt.cosine_similarity(a, b, 0),
           lambda a, b: F.cosine_similarity(a, b, 0), [_x(9), _x(9, seed=1)])
    _check(bt.cosine_similarity, F.cosine_similarity, [_x(3, 0), _x(3, 0)])
    ints = torch.arange(6, device=DEVICE).view(2, 3)
    _check(bt.cosine_similarity, F.cosine_similarity, [ints, _x(2, 3, dtype=torch.float32)])
    for dtype in (torch.float16, torch.bfloat16):
        _check(bt.cosine_similarity, F.cosine_similarity,
               [_x(5, 300, dtype=dtype), _x(5, 300, dtype=dtype, seed=1)], atol=2e-2, rtol=2e-2)


def _raises(exc, fn, *args, match=None, **kwargs):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


@pytest.mark.parametrize("ours,theirs", [(bt.cdist, torch.cdist), (bt.pdist, F.pdist),
                                         (bt.pairwise_distance, F.pairwise_distance),
                                         (bt.cosine_similarity, F.cosine_similarity),
                                         (bt.dist, torch.dist)])
def test_errors_match_torch(ours, theirs):
    a, b = _x(3, 4, dtype=torch.float32), _x(5, 4, dtype=torch.float32)
    bad = {
        "cdist": [((a[0], b), {}), ((a, b[:, :3]), {}), ((a.int(), b.int()), {}),
                  ((a, b.double()), {}), ((a, b), {"p": -1.0}), ((a, b), {"compute_mode": "x"}),
                  ((a.half(), b.half()), {"p": 1.0})],
        "pdist": [((a[None],), {}), ((a.int(),), {}), ((a,), {"p": -1.0}), ((a.half(),), {})],
        "pairwise_distance": [((a, b), {}), ((a[:, :0], a[:, :0]), {"p": INF}),
                              ((a.bool(), a.bool()), {})],
        "cosine_similarity": [((a, b), {}), ((a.int(), a.int()), {}), ((a[0], a[0]), {})],
        "dist": [((a, b), {}), ((a.int(), a.int()), {}), ((a[:0], a[:0]), {"p": -1.0})],
    }[ours.__name__]
    for args, kwargs in bad:
        with pytest.raises(Exception) as want:
            theirs(*args, **kwargs)
        with pytest.raises(type(want.value)) as got:
            ours(*args, **kwargs)
        first = str(want.value).split("\n")[0]
        assert first.split(":")[0][:30] in str(got.value), (str(got.value), first)


def test_backward_is_deterministic():
    x, y = _x(20, 9, dtype=torch.float32, scale=2), _x(17, 9, dtype=torch.float32, seed=1)
    for fn in (lambda a, b: bt.cdist(a, b, 1.0), lambda a, b: bt.cdist(a, b, 3.0),
               lambda a, b: bt.pairwise_distance(a, b[:1]), lambda a, b: bt.dist(a, b[:1], INF),
               lambda a, b: bt.cosine_similarity(a, b[:1])):
        runs = []
        for _ in range(2):
            a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
            out = fn(a, b)
            runs.append(torch.autograd.grad(out, (a, b), torch.ones_like(out)))
        for u, v in zip(*runs):
            assert torch.equal(u, v)


def test_gradcheck_f64():
    x, y = _x(4, 3).requires_grad_(), _x(5, 3, seed=1).requires_grad_()
    for fn in (lambda a, b: bt.cdist(a, b, 1.5), lambda a, b: bt.cdist(a, b),
               lambda a, b: bt.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
               lambda a, b: bt.pdist(torch.cat([a, b]), 3.0),
               lambda a, b: bt.pairwise_distance(a, b[:1], 2.5),
               lambda a, b: bt.dist(a, b[:1], 1.5), lambda a, b: bt.cosine_similarity(a, b[:1])):
        assert torch.autograd.gradcheck(fn, (x, y), fast_mode=True)


def test_opcheck():
    x, y = _x(2, 3, 4), _x(2, 5, 4, seed=1)
    ops = torch.ops.baracuda
    torch.library.opcheck(ops.cdist_direct, (x, y, 1.0))
    torch.library.opcheck(ops.cdist_mm, (x, y))
    torch.library.opcheck(ops.pdist, (x[0], 2.0))
    torch.library.opcheck(ops.row_distance, (x[0], y[0, :3], INF, 0.0, True))
    torch.library.opcheck(ops.cosine_similarity, (x[0], y[0, :3], 1e-8))


def test_torch_compile_fullgraph():
    f = torch.compile(lambda a, b: bt.cdist(a, b, 1.0).sum() + bt.cosine_similarity(a, b).sum(),
                      fullgraph=True, backend="eager")
    x, y = _x(4, 5), _x(4, 5, seed=1)
    torch.testing.assert_close(f(x, y), torch.cdist(x, y, 1.0).sum()
                               + F.cosine_similarity(x, y).sum())
