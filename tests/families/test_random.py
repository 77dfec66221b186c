"""Random family through baracuda.torch: every distribution against its law at fixed seeds
(Kolmogorov-Smirnov for the continuous ones, chi-square for the discrete ones, and moments),
reproducibility under torch's generator, independence from the launch layout, two calls
differing (also through launch replay and CUDA graphs on the GPU), torch's signatures,
dtypes and errors (torch.compile: tests/test_fullgraph.py's samples)."""

from __future__ import annotations

import math

import pytest
import torch

from baracuda.families.random import torch_api as bt
from conftest import DEVICE, ON_GPU

N = 10000
#: KS critical value at alpha = 0.001 (one-sample, large n)
KS_CRIT = 1.95 / math.sqrt(N)
#: chi-square: the statistic's z-score bound (df large enough for the normal approximation)
CHI_Z = 4.0


def _ks(sample: torch.Tensor, cdf) -> float:
    x = sample.detach().double().cpu().flatten().sort().values
    n = x.numel()
    f = cdf(x)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    return float(torch.maximum(i / n - f, f - (i - 1) / n).max())


def _normal_cdf(x):
    return 0.5 * (1 + torch.special.erf(x / math.sqrt(2)))


def _chi_z(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """(chi2 - df) / sqrt(2 df): about standard normal under the law."""
    n = counts.sum()
    expected = n * probs
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    df = counts.numel() - 1
    return (chi2 - df) / math.sqrt(2 * df)


CONTINUOUS = [
    ("rand", lambda: bt.rand(N, device=DEVICE), lambda x: x.clamp(0, 1)),
    ("rand f64", lambda: bt.rand(N, device=DEVICE, dtype=torch.float64), lambda x: x.clamp(0, 1)),
    ("randn", lambda: bt.randn(N, device=DEVICE), _normal_cdf),
    ("randn f64", lambda: bt.randn(N, device=DEVICE, dtype=torch.float64), _normal_cdf),
    ("normal(2, 3)", lambda: bt.normal(2.0, 3.0, (N,), device=DEVICE),
     lambda x: _normal_cdf((x - 2) / 3)),
    ("uniform_(-1, 3)", lambda: bt.uniform_(torch.empty(N, device=DEVICE), -1.0, 3.0),
     lambda x: ((x + 1) / 4).clamp(0, 1)),
    ("normal_(1, 0.5)", lambda: bt.normal_(torch.empty(N, device=DEVICE), 1.0, 0.5),
     lambda x: _normal_cdf((x - 1) / 0.5)),
    ("exponential_(2)", lambda: bt.exponential_(torch.empty(N, device=DEVICE), 2.0),
     lambda x: 1 - torch.exp(-2 * x.clamp_min(0))),
    ("cauchy_(1, 2)", lambda: bt.cauchy_(torch.empty(N, device=DEVICE), 1.0, 2.0),
     lambda x: 0.5 + torch.atan((x - 1) / 2) / math.pi),
    ("log_normal_(0.5, 0.75)", lambda: bt.log_normal_(torch.empty(N, device=DEVICE), 0.5, 0.75),
     lambda x: _normal_cdf((torch.log(x) - 0.5) / 0.75)),
    ("normal(mean tensor, std tensor)",
     lambda: (bt.normal(torch.full((N,), 2.0, device=DEVICE),
                        torch.full((N,), 0.5, device=DEVICE)) - 2) / 0.5, _normal_cdf),
]


@pytest.mark.parametrize("name,draw,cdf", CONTINUOUS, ids=[c[0] for c in CONTINUOUS])
def test_continuous_laws_ks(name, draw, cdf):
    torch.manual_seed(1234)
    x = draw()
    assert x.shape == (N,) and bool(torch.isfinite(x).all())
    assert _ks(x, cdf) < KS_CRIT


def test_moments():
    torch.manual_seed(5)
    z = bt.randn(N, device=DEVICE).double()
    assert abs(float(z.mean())) < 4 / math.sqrt(N)
    assert abs(float(z.var()) - 1) < 4 * math.sqrt(2 / N)
    assert abs(float((z ** 3).mean())) < 4 * math.sqrt(15 / N)  # skew: E z^6 = 15
    u = bt.rand(N, device=DEVICE).double()
    assert abs(float(u.mean()) - 0.5) < 4 * math.sqrt(1 / 12 / N)
    e = bt.exponential_(torch.empty(N, device=DEVICE, dtype=torch.float64), 4.0)
    assert abs(float(e.mean()) - 0.25) < 4 * 0.25 / math.sqrt(N)
    # pairs of one Box-Muller draw are independent: no correlation between even and odd
    pairs = z.reshape(-1, 2)
    assert abs(float((pairs[:, 0] * pairs[:, 1]).mean())) < 4 / math.sqrt(N / 2)


def test_discrete_laws_chi_square():
    torch.manual_seed(11)
    k = bt.randint(3, 20, (N,), device=DEVICE)
    assert k.dtype == torch.int64 and int(k.min()) >= 3 and int(k.max()) < 20
    counts = torch.bincount((k - 3).cpu(), minlength=17).double()
    assert abs(_chi_z(counts, torch.full((17,), 1 / 17, dtype=torch.float64))) < CHI_Z
    p = 0.3
    g = bt.geometric_(torch.empty(N, device=DEVICE), p).long().cpu()
    assert int(g.min()) >= 1
    top = 12  # values >= top pooled: expected counts stay large
    counts = torch.bincount(g.clamp(max=top), minlength=top + 1)[1:].double()
    probs = torch.tensor([(1 - p) ** (j - 1) * p for j in range(1, top)] + [(1 - p) ** (top - 1)],
                         dtype=torch.float64)
    assert abs(_chi_z(counts, probs)) < CHI_Z
    b = bt.bernoulli(torch.empty(N, device=DEVICE), 0.3)
    ones = float(b.sum())
    assert abs(ones - 0.3 * N) < 4 * math.sqrt(N * 0.21)
    assert set(b.unique().tolist()) <= {0.0, 1.0}


def test_bernoulli_tensor_p_and_zero_gradient():
    torch.manual_seed(2)
    p = torch.rand(200, 1, device=DEVICE).expand(200, 100).requires_grad_(False)
    p = p.clone().requires_grad_(True)
    y = bt.bernoulli(p)
    assert y.dtype == p.dtype and y.shape == p.shape
    # each row's frequency follows its p
    freq = y.detach().mean(1)
    assert float((freq - p.detach()[:, 0]).abs().max()) < 4 * math.sqrt(0.25 / 100)
    y.sum().backward()
    assert torch.equal(p.grad, torch.zeros_like(p))
    with pytest.raises(RuntimeError):
        bt.bernoulli(torch.full((3,), 1.5, device=DEVICE))


def test_random_bits_cover_every_bit():
    torch.manual_seed(3)
    for dtype, width in ((torch.int32, 32), (torch.int64, 64), (torch.int16, 16)):
        w = bt.random_bits(4096, dtype=dtype, device=DEVICE).cpu().long()
        for bit in range(width):
            ones = float(((w >> bit) & 1).double().mean())
            assert abs(ones - 0.5) < 4 * math.sqrt(0.25 / 4096), (dtype, bit)


def test_reproducible_and_advancing():
    torch.manual_seed(7)
    a, b = bt.rand(1000, device=DEVICE), bt.rand(1000, device=DEVICE)
    torch.manual_seed(7)
    assert torch.equal(bt.rand(1000, device=DEVICE), a)
    assert not torch.equal(a, b)
    g = torch.Generator(device=DEVICE).manual_seed(9)
    c = bt.randn(500, generator=g, device=DEVICE)
    g.manual_seed(9)
    assert torch.equal(bt.randn(500, generator=g, device=DEVICE), c)


def test_values_follow_the_logical_index_not_the_layout():
    """Element i's value depends on (seed, offset, i) alone: shapes, strides and launch
    splits of one element count give the same numbers in logical order."""
    torch.manual_seed(1)
    flat = bt.randn(840, device=DEVICE)
    torch.manual_seed(1)
    shaped = bt.randn(7, 8, 15, device=DEVICE)
    assert torch.equal(shaped.flatten(), flat)
    torch.manual_seed(1)
    t = torch.empty(15, 8, 7, device=DEVICE).permute(2, 1, 0)  # a transposed layout
    bt.normal_(t)
    assert torch.equal(t.flatten(), flat)
    torch.manual_seed(1)
    big = torch.empty(2, 3, 4, 5, 7, 1, device=DEVICE)[:, :, :, :, :, 0]
    bt.normal_(big[:, :, :, :, :])
    assert torch.equal(big.flatten(), flat)


def test_float_bounds_and_dtypes():
    torch.manual_seed(4)
    for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
        u = bt.rand(3000, dtype=dtype, device=DEVICE)
        assert u.dtype == dtype and float(u.min()) >= 0 and float(u.max()) < 1
        v = bt.uniform_(torch.empty(3000, dtype=dtype, device=DEVICE), 2.0, 2.5)
        assert float(v.min()) >= 2.0 and float(v.max()) < 2.5
    assert bt.randint(0, 2, (100,), dtype=torch.bool, device=DEVICE).dtype == torch.bool
    r = bt.random_(torch.empty(2000, dtype=torch.int64, device=DEVICE), 100)
    assert int(r.min()) >= 0 and int(r.max()) < 100
    r = bt.random_(torch.empty(2000, dtype=torch.uint8, device=DEVICE))
    assert int(r.max()) > 200
    big = bt.randint(-(1 << 62), 1 << 62, (2000,), device=DEVICE)
    assert float(big.double().abs().mean()) > 1e17  # the 64-bit path draws the high bits


def test_like_and_normal_overloads():
    torch.manual_seed(6)
    x = torch.empty(6, 5, device=DEVICE, dtype=torch.float64).t()
    y = bt.rand_like(x)
    assert y.shape == x.shape and y.dtype == x.dtype and y.stride() == x.stride()
    assert bt.randn_like(x, dtype=torch.float32).dtype == torch.float32
    k = bt.randint_like(x, 3, 9)
    assert k.dtype == x.dtype and float(k.min()) >= 3 and float(k.max()) < 9
    assert bt.randint_like(x, 4).max() < 4
    m = torch.zeros(3, 1, device=DEVICE, dtype=torch.float64, requires_grad=True)
    s = torch.ones(1, 4, device=DEVICE, requires_grad=True)
    z = bt.normal(m, s)
    assert z.shape == (3, 4) and z.dtype == torch.float64
    z.sum().backward()
    assert torch.equal(m.grad, torch.zeros_like(m)) and torch.equal(s.grad, torch.zeros_like(s))
    assert bt.normal(torch.zeros(5, device=DEVICE), 2.0).shape == (5,)
    assert bt.normal(1.0, torch.ones(4, device=DEVICE, dtype=torch.float16)).dtype == \
        torch.float16
    out = torch.empty(0, device=DEVICE)
    assert bt.normal(0.0, 1.0, (3, 2), out=out) is out and out.shape == (3, 2)
    assert bt.rand(0, 3, device=DEVICE).shape == (0, 3)
    assert bt.randn((), device=DEVICE).shape == ()


def test_in_place_autograd_as_torch():
    leaf = torch.zeros(4, device=DEVICE, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        bt.uniform_(leaf)
    with torch.no_grad():
        bt.uniform_(leaf)  # nn.init's path
    h = leaf * 2
    bt.normal_(h)
    h.sum().backward()
    assert torch.equal(leaf.grad, torch.zeros_like(leaf))


@pytest.mark.parametrize("call,error", [
    (lambda: bt.uniform_(torch.empty(3, device=DEVICE), 2.0, 1.0), RuntimeError),
    (lambda: bt.uniform_(torch.empty(3, device=DEVICE, dtype=torch.int32)), NotImplementedError),
    (lambda: bt.exponential_(torch.empty(3, device=DEVICE), 0.0), RuntimeError),
    (lambda: bt.geometric_(torch.empty(3, device=DEVICE), 1.0), RuntimeError),
    (lambda: bt.cauchy_(torch.empty(3, device=DEVICE), 0.0, -1.0), RuntimeError),
    (lambda: bt.log_normal_(torch.empty(3, device=DEVICE), 0.0, -1.0), RuntimeError),
    (lambda: bt.normal_(torch.empty(3, device=DEVICE), 0.0, -1.0), RuntimeError),
    (lambda: bt.normal(torch.zeros(3, device=DEVICE), -torch.ones(3, device=DEVICE)),
     RuntimeError),
    (lambda: bt.randint(5, 3, (3,), device=DEVICE), RuntimeError),
    (lambda: bt.randint(0, 300, (3,), dtype=torch.uint8, device=DEVICE), RuntimeError),
    (lambda: bt.bernoulli(torch.empty(3, device=DEVICE), 1.5), RuntimeError),
    (lambda: bt.rand(-1, device=DEVICE), RuntimeError),
    (lambda: bt.rand(3, dtype=torch.int64, device=DEVICE), RuntimeError),
    (lambda: bt.random_bits(3, dtype=torch.float32, device=DEVICE), RuntimeError),
])
def test_errors_as_torch(call, error):
    with pytest.raises(error):
        call()


@pytest.mark.skipif(not ON_GPU, reason="launch replay runs on the GPU only (the interpreter "
                    "takes the plain launch path)")
def test_replayed_calls_draw_new_numbers():
    torch.manual_seed(0)
    outs = [bt.rand(4096, device=DEVICE) for _ in range(5)]  # calls 2+ are recorded/replayed
    for i in range(1, 5):
        assert not torch.equal(outs[i], outs[i - 1])
    torch.manual_seed(0)
    again = [bt.rand(4096, device=DEVICE) for _ in range(5)]
    for a, b in zip(outs, again):
        assert torch.equal(a, b)


@pytest.mark.skipif(not ON_GPU, reason="CUDA graphs need a GPU")
def test_cuda_graph_replays_draw_new_numbers():
    x = torch.empty(4096, device=DEVICE)
    bt.normal_(x)  # compile and select outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        bt.normal_(x)
    graph.replay()
    first = x.clone()
    graph.replay()
    assert not torch.equal(first, x)


def test_multinomial_laws():
    torch.manual_seed(12)
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [2.0, 1.0, 1.0, 0.0]], device=DEVICE)
    draws = bt.multinomial(p, 4000, True)
    assert draws.shape == (2, 4000) and draws.dtype == torch.int64
    for r in range(2):
        counts = torch.bincount(draws[r].cpu(), minlength=4).double()
        assert counts[1 if r == 0 else 3] == 0  # a zero weight is never drawn
        w = p[r].cpu().double()
        nz = w > 0
        assert abs(_chi_z(counts[nz], (w / w.sum())[nz])) < CHI_Z
    # without replacement: distinct categories; the first draw follows p, the rest the race
    q = torch.tensor([0.5, 0.25, 0.125, 0.125, 0.0], device=DEVICE).expand(3000, 5)
    perm = bt.multinomial(q, 4, False)
    assert bool((perm.sort(1).values == torch.arange(4, device=DEVICE)).all())
    first = torch.bincount(perm[:, 0].cpu(), minlength=4).double()
    assert abs(_chi_z(first, torch.tensor([0.5, 0.25, 0.125, 0.125], dtype=torch.float64))) \
        < CHI_Z
    assert bt.multinomial(torch.tensor([0.2, 0.8], device=DEVICE), 5, True).shape == (5,)
    # more samples than positive weights: the zero ones follow, in index order (as torch)
    assert bt.multinomial(torch.tensor([0.0, 0.5, 0.0], device=DEVICE), 3).tolist() == [1, 0, 2]


@pytest.mark.parametrize("probs,n,replacement", [
    ([0.5, -0.1, 0.6], 2, True), ([0.0, 0.0], 1, True), ([0.5, float("nan")], 1, True),
    ([0.5, 0.5], 3, False), ([0.5, 0.5], 0, True)])
def test_multinomial_errors_as_torch(probs, n, replacement):
    p = torch.tensor(probs, device=DEVICE)
    with pytest.raises(RuntimeError):
        torch.multinomial(p.cpu(), n, replacement)
    with pytest.raises(RuntimeError):
        bt.multinomial(p, n, replacement)
