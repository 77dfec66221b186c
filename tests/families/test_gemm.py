"""GEMM family: the torch frontend (gradcheck in f64, opcheck, torch.compile, torch error
parity, strided / broadcast / empty operands) and backend selection."""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
from baracuda.families.gemm import torch_api as bt
from baracuda.families.gemm.cublaslt import CublasLtGemm, nvmath_missing
from conftest import DEVICE, ON_GPU

F64 = dict(dtype=torch.float64, device=DEVICE)
F32 = dict(dtype=torch.float32, device=DEVICE)


def r(*shape, grad=False, **kw):
    kw = kw or F64
    return torch.randn(*shape, **kw).requires_grad_(grad)


# ----------------------------------------------------------------------------- forward
@pytest.mark.parametrize("fn,args", [
    ("mm", lambda: (r(5, 7, **F32), r(7, 3, **F32))),
    ("mm", lambda: (r(7, 5, **F32).mT, r(3, 7, **F32).mT)),  # both column-major
    ("bmm", lambda: (r(2, 5, 7, **F32), r(2, 3, 7, **F32).mT)),
    ("matmul", lambda: (r(2, 3, 5, 7, **F32), r(7, 4, **F32))),  # folds into one GEMM
    ("matmul", lambda: (r(2, 1, 5, 7, **F32), r(3, 7, 4, **F32))),  # broadcast batch
    ("matmul", lambda: (r(7, **F32), r(7, 4, **F32))),
    ("matmul", lambda: (r(5, 7, **F32), r(7, **F32))),
    ("matmul", lambda: (r(7, **F32), r(7, **F32))),
    ("matmul", lambda: (r(7, **F32), r(2, 7, 3, **F32))),
])
def test_forward_matches_torch(fn, args):
    a, b = args()
    got = getattr(bt, fn)(a, b)
    want = getattr(torch, fn)(a, b)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_addmm_baddbmm_match_torch():
    inp, a, b = r(3, **F32), r(4, 5, **F32), r(5, 3, **F32)
    torch.testing.assert_close(bt.addmm(inp, a, b, beta=0.5, alpha=2.0),
                               torch.addmm(inp, a, b, beta=0.5, alpha=2.0))
    inp3, a3, b3 = r(2, 4, 1, **F32), r(2, 4, 5, **F32), r(2, 5, 3, **F32)
    torch.testing.assert_close(bt.baddbmm(inp3, a3, b3, beta=-1, alpha=0.5),
                               torch.baddbmm(inp3, a3, b3, beta=-1, alpha=0.5))


def test_addmm_beta_zero_ignores_nan_input():
    inp = torch.full((4, 3), float("nan"), **F32)
    a, b = r(4, 5, **F32), r(5, 3, **F32)
    got = bt.addmm(inp, a, b, beta=0)
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got, a @ b)


@pytest.mark.parametrize("eq,sa,sb", [
    ("ij,jk->ik", (4, 5), (5, 3)),
    ("bij,bkj->bik", (2, 4, 5), (2, 3, 5)),
    ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)),
    ("i,i->", (5,), (5,)),
    ("ij,k->ikj", (2, 3), (4,)),
    ("ijk,jl->il", (2, 3, 4), (3, 5)),  # k summed out before the GEMM
    ("ij,jk", (4, 5), (5, 3)),  # implicit output
])
def test_einsum_matches_torch(eq, sa, sb):
    a, b = r(*sa, **F32), r(*sb, **F32)
    torch.testing.assert_close(bt.einsum(eq, a, b), torch.einsum(eq, a, b), rtol=1e-5,
                               atol=1e-5)


def test_empty_problems():
    z = bt.mm(r(3, 0, **F32), r(0, 4, **F32))
    assert torch.equal(z, torch.zeros(3, 4, **F32))
    assert bt.mm(r(0, 5, **F32), r(5, 4, **F32)).shape == (0, 4)
    assert bt.bmm(r(0, 2, 5, **F32), r(0, 5, 4, **F32)).shape == (0, 2, 4)
    y = bt.linear(r(0, 5, **F32), r(4, 5, **F32), r(4, **F32))
    assert y.shape == (0, 4)


def test_linear_act_matches_torch():
    F = torch.nn.functional
    x, w, b = r(2, 6, 5, **F32), r(7, 5, **F32), r(7, **F32)
    for act, ref in (("none", lambda t: t), ("relu", F.relu), ("gelu", F.gelu),
                     ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")), ("silu", F.silu)):
        torch.testing.assert_close(bt.linear_act(x, w, b, act), ref(F.linear(x, w, b)),
                                   rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- gradients
GRAD_CASES = [
    ("mm", lambda: (r(3, 4, grad=True), r(4, 5, grad=True))),
    ("bmm", lambda: (r(2, 3, 4, grad=True), r(2, 4, 5, grad=True))),
    ("matmul", lambda: (r(2, 3, 4, grad=True), r(4, 5, grad=True))),
    ("matmul", lambda: (r(2, 1, 3, 4, grad=True), r(3, 4, 2, grad=True))),
    ("matmul", lambda: (r(4, grad=True), r(2, 4, 3, grad=True))),
    ("addmm", lambda: (r(5, grad=True), r(3, 4, grad=True), r(4, 5, grad=True))),
    ("baddbmm", lambda: (r(2, 3, 5, grad=True), r(2, 3, 4, grad=True), r(2, 4, 5, grad=True))),
    ("linear", lambda: (r(2, 3, 4, grad=True), r(5, 4, grad=True), r(5, grad=True))),
    ("linear", lambda: (r(3, 4, grad=True), r(5, 4, grad=True))),
]


@pytest.mark.parametrize("fn,args", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_f64(fn, args):
    assert torch.autograd.gradcheck(getattr(bt, fn), args(), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu"])
def test_linear_act_gradcheck(act):
    x = r(3, 4, grad=True)
    with torch.no_grad():
        x += 0.05 * torch.sign(x)  # keep relu's kink away from the finite differences
    w, b = r(5, 4, grad=True), r(5, grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: bt.linear_act(x, w, b, act), (x, w, b),
                                    eps=1e-6, atol=1e-5)


def test_einsum_gradcheck():
    a, b = r(2, 3, 4, grad=True), r(2, 5, 4, grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.einsum("bij,bkj->bik", a, b), (a, b))


def test_gradient_of_expanded_grad():
    # sum().backward() hands a stride-0 gradient: it must be materialized, not rejected.
    a, b = r(3, 4, grad=True), r(4, 5, grad=True)
    bt.mm(a, b).sum().backward()
    torch.testing.assert_close(a.grad, torch.ones(3, 5, **F64) @ b.detach().T)


# ------------------------------------------------------------------- torch integration
def test_opcheck():
    a, b, c = r(2, 3, 4, grad=True), r(2, 4, 5, grad=True), r(2, 3, 5)
    torch.library.opcheck(bt._gemm, (a, b, c, 1.5, 0.5))
    x, w, bias = r(3, 4, grad=True), r(5, 4, grad=True), r(5, grad=True)
    torch.library.opcheck(bt._linear, (x, w, bias, "gelu", True))
    pre = r(3, 5)
    torch.library.opcheck(bt._linear_backward, (r(3, 5), x.detach(), w.detach(), pre, "silu",
                                                True, True, True))


def test_torch_compile_fullgraph():
    def f(x, w, b, m):
        h = bt.linear_act(x, w, b, "gelu_tanh")
        return bt.matmul(h, m).sum()

    x, w, b, m = r(6, 4, grad=True), r(5, 4, grad=True), r(5, grad=True), r(5, 3, grad=True)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = compiled(x, w, b, m)
    got.backward()
    grads = [t.grad.clone() for t in (x, w, b, m)]
    for t in (x, w, b, m):
        t.grad = None
    f(x, w, b, m).backward()
    for g, t in zip(grads, (x, w, b, m)):
        torch.testing.assert_close(g, t.grad)


# ----------------------------------------------------------------------- error parity
ERRORS = [
    ("mm", lambda: (r(2, 3), r(4, 5))),
    ("mm", lambda: (r(3), r(3, 5))),
    ("mm", lambda: (r(2, 3), r(3, 5, **F32))),
    ("bmm", lambda: (r(2, 3), r(3, 5))),
    ("bmm", lambda: (r(2, 2, 3), r(2, 4, 5))),
    ("matmul", lambda: (torch.tensor(1.0, **F64), r(2, 3))),
    ("matmul", lambda: (r(2, 3), r(4, 5))),
]


@pytest.mark.parametrize("fn,args", ERRORS)
def test_error_parity(fn, args):
    a, b = args()
    with pytest.raises(RuntimeError) as want:
        getattr(torch, fn)(a, b)
    with pytest.raises(RuntimeError) as got:
        getattr(bt, fn)(a, b)
    if "dtype" not in str(want.value):
        assert str(got.value) == str(want.value)


def test_linear_shape_error():
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        bt.linear(r(2, 3), r(4, 5))


# -------------------------------------------------------------------- plan selection
def test_tf32_only_when_asked():
    d = bc.DenseGemmDescriptor(m=8, n=8, k=8, element=bc.ElementKind.F32)
    assert bc.DenseGemmPlan.select(d).precision_guarantee.math_precision is \
        bc.MathPrecision.F32
    tf = bc.DenseGemmPlan.select(d, bc.PlanPreference(allow_tf32=True))
    assert tf.precision_guarantee.math_precision is bc.MathPrecision.TF32


def test_cublaslt_candidate_gives_reason_without_cuda():
    d = bc.DenseGemmDescriptor(m=8, n=8, k=8, element=bc.ElementKind.BF16)
    reason = CublasLtGemm().supports(d, bc.PlanPreference(), bc.ArchSku.INTERPRETER)
    assert reason and "CUDA" in reason
    if not ON_GPU:
        with pytest.raises(bc.Unsupported, match="cublaslt_matmul"):
            bc.DenseGemmPlan.select(d, bc.PlanPreference(prefer_backend=bc.BackendKind.CUBLASLT))


@pytest.mark.gpu
def test_cublaslt_is_default_on_gpu():
    if nvmath_missing():
        pytest.skip(nvmath_missing())
    plain = bc.DenseGemmDescriptor(m=512, n=512, k=512, element=bc.ElementKind.BF16)
    assert bc.DenseGemmPlan.select(plain).sku.backend is bc.BackendKind.CUBLASLT
    d = bc.DenseGemmDescriptor(m=512, n=512, k=512, element=bc.ElementKind.BF16, bias=True,
                               activation=bc.GemmActivation.GELU_TANH)
    lt = bc.DenseGemmPlan.select(d, bc.PlanPreference(prefer_backend=bc.BackendKind.CUBLASLT))
    assert lt.sku.backend is bc.BackendKind.CUBLASLT
    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16) / 23
    b = torch.randn(512, device="cuda", dtype=torch.bfloat16)
    got = bt.linear_act(a, w, b, "gelu_tanh")
    want = torch.nn.functional.gelu(torch.nn.functional.linear(a, w, b), approximate="tanh")
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
def test_large_bf16_gemm_matches_torch():
    a = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16)
    want = a.float() @ b.float()
    for pref in (None, bc.PlanPreference(prefer_backend=bc.BackendKind.TRITON)):
        got = bt._dense_mm(a, b, pref or bc.PlanPreference()).float()
        assert (got - want).abs().max() / want.abs().max() < 1e-2


def test_backend_defaults_on_sm90(monkeypatch):
    """Selection rules as on an H100 with nvmath-python (patched in; nothing is launched)."""
    from baracuda.families.gemm import cublaslt

    monkeypatch.setattr(cublaslt, "nvmath_missing", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    arch, pref = bc.ArchSku.SM90A, bc.PlanPreference()
    E, A = bc.ElementKind, bc.GemmActivation

    def dense(**kw):
        d = bc.DenseGemmDescriptor(m=64, n=64, k=64, **kw)
        return bc.DenseGemmPlan._select(d, pref, arch).sku.backend

    assert dense(element=E.BF16) is bc.BackendKind.CUBLASLT
    assert dense(element=E.F32) is bc.BackendKind.CUBLASLT
    assert dense(element=E.F32, bias=True, activation=A.RELU) is bc.BackendKind.CUBLASLT
    assert dense(element=E.BF16, bias=True) is bc.BackendKind.TRITON  # fused epilogue
    assert dense(element=E.BF16, activation=A.SILU) is bc.BackendKind.TRITON
    assert dense(element=E.F32, dactivation=A.GELU) is bc.BackendKind.TRITON
    forced = bc.PlanPreference(prefer_backend=bc.BackendKind.CUBLASLT)
    d = bc.DenseGemmDescriptor(m=64, n=64, k=64, element=E.BF16, bias=True,
                               activation=A.GELU_TANH)
    assert bc.DenseGemmPlan._select(d, forced, arch).sku.backend is bc.BackendKind.CUBLASLT
    with pytest.raises(bc.Unsupported, match="no silu epilogue"):
        bc.DenseGemmPlan._select(bc.DenseGemmDescriptor(m=4, n=4, k=4, element=E.BF16,
                                                        activation=A.SILU), forced, arch)

    def linear(**kw):
        d = bc.LinearDescriptor(64, 64, 64, E.BF16, **kw)
        return bc.LinearPlan._select(d, pref, arch).sku.backend

    assert linear(bias=False) is bc.BackendKind.CUBLASLT
    assert linear(bias=True, activation=A.GELU_TANH, save_preact=True) is bc.BackendKind.TRITON
    back = bc.LinearBackwardDescriptor(64, 64, 64, E.BF16, bias=True, activation=A.GELU)
    assert bc.LinearBackwardPlan._select(back, pref, arch).sku.backend is \
        bc.BackendKind.CUBLASLT
