"""gumbel_softmax through baracuda.torch: the noise's law (Kolmogorov-Smirnov against the
standard Gumbel at a fixed seed, and moments), never infinite; the Gumbel-max law of the hard
samples (chi-square against softmax(logits)); values and gradients against torch's formula on
the same noise in float64; straight-through gradients; reproducibility; torch's errors."""

from __future__ import annotations

import math

import pytest
import torch

from baracuda.families.random import torch_api as bt
from baracuda.families.random.torch_gumbel import gumbel_noise
from conftest import DEVICE

N = 10000
KS_CRIT = 1.95 / math.sqrt(N)
CHI_Z = 4.0
EULER = 0.5772156649015329


def _ks(sample: torch.Tensor, cdf) -> float:
    x = sample.detach().double().cpu().flatten().sort().values
    n = x.numel()
    f = cdf(x)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    return float(torch.maximum(i / n - f, f - (i - 1) / n).max())


def _logits(*shape, dtype=torch.float32, grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64).to(DEVICE, dtype)
    return x.requires_grad_(grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gumbel_noise_law(dtype):
    torch.manual_seed(12)
    g = gumbel_noise(torch.empty(N, dtype=dtype, device=DEVICE))
    assert g.dtype == dtype and bool(torch.isfinite(g).all())
    assert _ks(g, lambda t: torch.exp(-torch.exp(-t))) < KS_CRIT
    assert abs(float(g.double().mean()) - EULER) < 5 * math.pi / math.sqrt(6 * N)
    assert abs(float(g.double().var()) / (math.pi ** 2 / 6) - 1) < 5 * math.sqrt(4.4 / N)


def test_hard_samples_follow_softmax_of_logits():
    """Gumbel-max: argmax(logits + g) ~ Categorical(softmax(logits)), whatever tau."""
    logits = torch.tensor([1.0, 0.0, -1.0, 2.0, 0.5, -0.3, 0.0], device=DEVICE)
    torch.manual_seed(3)
    y = bt.gumbel_softmax(logits.expand(4000, 7), tau=0.7, hard=True)
    assert bool(((y == 0) | (y == 1)).all()) and torch.equal(y.sum(1), torch.ones(4000,
                                                                                 device=DEVICE))
    counts = y.sum(0).double().cpu()
    probs = logits.double().cpu().softmax(0)
    chi2 = float(((counts - 4000 * probs) ** 2 / (4000 * probs)).sum())
    assert abs((chi2 - 6) / math.sqrt(12)) < CHI_Z


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dtype,dim,tau", [(torch.float64, -1, 1.0), (torch.float32, 0, 0.5),
                                           (torch.bfloat16, 1, 2.0)])
def test_values_and_gradients_match_torch_formula(hard, dtype, dim, tau):
    x = _logits(5, 37, 3, dtype=dtype, grad=True)
    torch.manual_seed(8)
    y = bt.gumbel_softmax(x, tau, hard, dim=dim)
    torch.manual_seed(8)
    g = gumbel_noise(x).double()  # the same draws
    xd = x.detach().double().requires_grad_()
    soft = ((xd + g.to(dtype).double()) / tau).softmax(dim)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else \
        dict(rtol=2e-2, atol=1e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-6)
    if hard:
        want = torch.zeros_like(soft).scatter_(dim, soft.argmax(dim, keepdim=True), 1.0)
        # a near tie may flip the argmax in low precision: compare where the sample agrees
        agree = (y.detach().double().cpu() == want.cpu()).all(dim)
        assert float(agree.double().mean()) > 0.9
        assert torch.equal(y.detach().sum(dim), torch.ones_like(y.detach().sum(dim)))
    else:
        torch.testing.assert_close(y.detach().double(), soft.detach(), **tol)
    dy = torch.randn(y.shape, dtype=torch.float64, device=DEVICE)
    (dx,) = torch.autograd.grad(y, x, dy.to(dtype))
    (dxd,) = torch.autograd.grad(soft, xd, dy.to(dtype).double())
    torch.testing.assert_close(dx.double(), dxd, **tol)


def test_reproducible_generator_and_advancing():
    x = _logits(50, 9)
    torch.manual_seed(5)
    a, b = bt.gumbel_softmax(x), bt.gumbel_softmax(x)
    torch.manual_seed(5)
    assert torch.equal(bt.gumbel_softmax(x), a) and not torch.equal(a, b)
    gen = torch.Generator(device=DEVICE).manual_seed(1)
    c = bt.gumbel_softmax(x, generator=gen)
    gen.manual_seed(1)
    assert torch.equal(bt.gumbel_softmax(x, generator=gen), c)


def test_edges_strided_and_warning():
    assert bt.gumbel_softmax(torch.empty(0, 3, device=DEVICE)).shape == (0, 3)
    assert float(bt.gumbel_softmax(torch.tensor(1.5, device=DEVICE))) == 1.0
    s = _logits(6, 11).t()
    y = bt.gumbel_softmax(s, 0.3, dim=0)
    assert y.shape == s.shape and bool((y.sum(0) - 1).abs().max() < 1e-5)
    with pytest.warns(UserWarning, match="eps"):
        bt.gumbel_softmax(s, eps=1e-3)


@pytest.mark.parametrize("call,error", [
    (lambda: bt.gumbel_softmax(torch.ones(3, dtype=torch.int64, device=DEVICE)), RuntimeError),
    (lambda: bt.gumbel_softmax(torch.ones(3, device=DEVICE), dim=2), IndexError),
])
def test_errors_as_torch(call, error):
    with pytest.raises(error):
        call()


# -- randperm ----------------------------------------------------------------------------------
def test_randperm_is_uniform_over_permutations():
    """All 3! orders equally likely (chi-square; few calls: each one is a launch)."""
    torch.manual_seed(4)
    draws = 240
    counts = torch.zeros(6, dtype=torch.float64)
    order = {}
    for _ in range(draws):
        p = tuple(bt.randperm(3, device=DEVICE).tolist())
        assert sorted(p) == [0, 1, 2]
        counts[order.setdefault(p, len(order))] += 1
    assert len(order) == 6
    chi2 = float(((counts - draws / 6) ** 2 / (draws / 6)).sum())
    assert abs((chi2 - 5) / math.sqrt(10)) < CHI_Z


def test_randperm_large_dtypes_reproducible():
    n = 5000
    torch.manual_seed(9)
    a, b = bt.randperm(n, device=DEVICE), bt.randperm(n, device=DEVICE)
    assert a.dtype == torch.int64 and torch.equal(a.sort().values, torch.arange(n,
                                                                                device=DEVICE))
    i = torch.arange(n, dtype=torch.float64)
    rho = float(torch.corrcoef(torch.stack([i, a.double().cpu()]))[0, 1])
    assert abs(rho) < 5 / math.sqrt(n)
    torch.manual_seed(9)
    assert torch.equal(bt.randperm(n, device=DEVICE), a) and not torch.equal(a, b)
    gen = torch.Generator(device=DEVICE).manual_seed(2)
    c = bt.randperm(n, generator=gen, device=DEVICE)
    gen.manual_seed(2)
    assert torch.equal(bt.randperm(n, generator=gen, device=DEVICE), c)
    for dtype in (torch.int32, torch.int16, torch.float32, torch.float16):
        p = bt.randperm(300, dtype=dtype, device=DEVICE)
        assert p.dtype == dtype and torch.equal(p.sort().values.long(),
                                                torch.arange(300, device=DEVICE))
    out = torch.empty(3, dtype=torch.int64, device=DEVICE)
    assert bt.randperm(7, out=out, device=DEVICE) is out and out.shape == (7,)
    assert bt.randperm(0, device=DEVICE).shape == (0,)
    assert bt.randperm(1, device=DEVICE).tolist() == [0]


@pytest.mark.parametrize("call,error", [
    (lambda: bt.randperm(-1, device=DEVICE), RuntimeError),
    (lambda: bt.randperm(300, dtype=torch.int8, device=DEVICE), RuntimeError),
    (lambda: bt.randperm(3000, dtype=torch.float16, device=DEVICE), RuntimeError),
    (lambda: bt.randperm(3, dtype=torch.bool, device=DEVICE), NotImplementedError),
    (lambda: bt.randperm(2.5, device=DEVICE), TypeError),
])
def test_randperm_errors_as_torch(call, error):
    with pytest.raises(error):
        call()


# -- poisson -----------------------------------------------------------------------------------
def _poisson_pmf(lam: float, kmax: int) -> torch.Tensor:
    k = torch.arange(kmax + 1, dtype=torch.float64)
    return torch.exp(k * math.log(lam) - lam - torch.lgamma(k + 1))


POISSON_LAMS = (0.7, 9.5, 10.0, 35.0, 1000.0)
POISSON_N = 2500


@pytest.fixture(scope="module")
def poisson_draws():
    """One launch for every rate (the interpreter is slow): {rate: its draws}."""
    torch.manual_seed(13)
    rates = torch.tensor(POISSON_LAMS, device=DEVICE).repeat_interleave(POISSON_N)
    y = bt.poisson(rates).double().cpu().reshape(len(POISSON_LAMS), POISSON_N)
    return dict(zip(POISSON_LAMS, y))


@pytest.mark.parametrize("lam", POISSON_LAMS)
def test_poisson_law_chi_square_and_moments(poisson_draws, lam):
    """Both methods (multiplication below 10, PTRS from 10) against the pmf: chi-square over
    the bins around the mean (tails pooled), mean and variance."""
    y = poisson_draws[lam]
    assert bool((y == y.round()).all()) and float(y.min()) >= 0
    n = y.numel()
    assert abs(float(y.mean()) - lam) < 5 * math.sqrt(lam / n)
    assert abs(float(y.var()) / lam - 1) < 5 * math.sqrt((2 + 1 / lam) / n)
    lo, hi = max(0, int(lam - 3 * math.sqrt(lam))), int(lam + 3 * math.sqrt(lam)) + 1
    pmf = _poisson_pmf(lam, hi + 1)
    probs = torch.cat([pmf[:lo].sum().reshape(1), pmf[lo:hi], (1 - pmf[:hi].sum()).reshape(1)])
    counts = torch.stack([(y < lo).sum(), *[(y == k).sum() for k in range(lo, hi)],
                          (y >= hi).sum()]).double()
    keep = probs * n >= 5  # the chi-square approximation wants >= 5 expected per bin
    probs, counts = probs[keep] / probs[keep].sum(), counts[keep]
    chi2 = float(((counts - n * probs) ** 2 / (n * probs)).sum())
    df = probs.numel() - 1
    assert abs((chi2 - df) / math.sqrt(2 * df)) < CHI_Z


def test_poisson_rates_shapes_dtypes_reproducible_and_gradient():
    g = torch.Generator().manual_seed(0)
    rates = (torch.rand(5, 7, generator=g, dtype=torch.float64) * 30).to(DEVICE)
    rates[0, :2] = 0
    torch.manual_seed(3)
    a, b = bt.poisson(rates), bt.poisson(rates)
    torch.manual_seed(3)
    assert torch.equal(bt.poisson(rates), a) and not torch.equal(a, b)
    assert a.shape == rates.shape and a.dtype == torch.float64 and bool((a[0, :2] == 0).all())
    gen = torch.Generator(device=DEVICE).manual_seed(4)
    c = bt.poisson(rates.t(), gen)  # strided rates
    gen.manual_seed(4)
    assert torch.equal(bt.poisson(rates.t().contiguous(), gen), c)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        y = bt.poisson(rates.to(dtype))
        assert y.dtype == dtype and bool((y >= 0).all())
    assert bt.poisson(torch.empty(0, 3, device=DEVICE)).shape == (0, 3)
    assert bt.poisson(torch.tensor(0.0, device=DEVICE)).dim() == 0
    x = rates.clone().float().requires_grad_()
    bt.poisson(x).sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x))


@pytest.mark.parametrize("call,error", [
    (lambda: bt.poisson(torch.tensor([1.0, -1.0], device=DEVICE)), RuntimeError),
    (lambda: bt.poisson(torch.tensor([float("nan")], device=DEVICE)), RuntimeError),
    (lambda: bt.poisson(torch.ones(3, dtype=torch.int64, device=DEVICE)), NotImplementedError),
])
def test_poisson_errors_as_torch(call, error):
    with pytest.raises(error):
        call()
