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


def test_linear_act_backward_skips_the_preact_gradient():
    """The saved pre-activation is a non-differentiable output: its gradient is not
    materialized (no [tokens, out] zero fill per backward), and the gradients still match
    torch's; y unused in the loss gives no gradient at all."""
    F = torch.nn.functional
    x, w, b = r(37, 6, grad=True), r(11, 6, grad=True), r(11, grad=True)
    gy = r(37, 11)
    got = torch.autograd.grad(bt.linear_act(x, w, b, "gelu_tanh"), (x, w, b), gy)
    want = torch.autograd.grad(F.gelu(F.linear(x, w, b), approximate="tanh"), (x, w, b), gy)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=1e-9, atol=1e-9)


def test_tuner_keeps_heuristic_first_unless_clearly_faster(monkeypatch):
    """cuBLASLt algorithm choice: the heuristic's first candidate (torch's cuBLAS pick) stays
    unless another one's median over interleaved rounds beats it by more than MARGIN."""
    from baracuda.families.gemm import ltcore

    def tuner(first, rounds):
        """first: times of candidates 10..13; rounds: {addr: time} of the re-timed ones."""
        calls = iter([dict(zip((10, 11, 12, 13), first))] + rounds)

        def fake(cell, addrs, *a, **k):
            times = next(calls)
            return [times[x] for x in addrs]  # order-independent (rounds alternate order)
        monkeypatch.setattr(ltcore, "time_candidates", fake)
        return ltcore._fastest(None, [10, 11, 12, 13], None, None, None, None, None, None, 0)

    m, n = ltcore.MARGIN, ltcore.ROUNDS
    # Candidate 12 looks 10% faster in the first pass, but only 1% over the rounds: keep #0.
    assert tuner([1.0, 1.5, 0.9, 2.0], [{10: 1.0, 12: 0.99}] * n) == 10
    # Clearly faster over the rounds: it wins.
    assert tuner([1.0, 1.5, 0.9, 2.0], [{10: 1.0, 12: 1.0 - 2 * m}] * n) == 12
    # One noisy round does not decide (medians).
    noisy = [{10: 1.0, 12: 0.5}] + [{10: 1.0, 12: 1.0}] * (n - 1)
    assert tuner([1.0, 1.5, 0.9, 2.0], noisy) == 10
    # The first candidate failing: the fastest of the rest (alone near the best).
    assert tuner([float("inf"), 1.5, 0.9, 2.0], []) == 12
    # Nothing near the first candidate and it is the fastest: no second round.
    assert tuner([1.0, 3.0, 3.0, 3.0], []) == 10


@pytest.mark.parametrize("tile,rows", [((16, 4), 128), ((32, 8), 64), ((8, 2), 40)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_activation_kernel_dh_and_bias_partials(monkeypatch, tile, rows, dtype):
    """dh = dy * gelu'(pre) with the bias gradient summed inside the same kernel (per-lane
    partials reduced once per program, then a fixed-order stage 2): float64 reference on
    ragged sizes for several tiles (rows per program not a multiple of the step too), and the
    same bits on a rerun."""
    from baracuda.families.gemm import launch

    monkeypatch.setattr(launch, "ACT_TILE_HALF", tile)
    monkeypatch.setattr(launch, "ACT_TILE_WIDE", tile)
    monkeypatch.setattr(launch, "ACT_ROWS", rows)
    E = bc.ElementKind
    el = E.BF16 if dtype is torch.bfloat16 else E.F32
    kw = dict(dtype=dtype, device=DEVICE)
    R, C = 301, 70
    pre, dy = torch.randn(R, C, **kw), torch.randn(R, C, **kw)
    code = bc.GemmActivation.GELU_TANH.code
    outs = []
    for _ in range(2):
        dh = torch.full((R, C), float("nan"), **kw)
        db = torch.full((C,), float("nan"), **kw)
        ws = torch.empty(launch.act_partials_workspace(R, C, el), dtype=torch.uint8,
                         device=DEVICE)
        launch.activation_2d(pre, dh, code, el, grad=dy, dbias=db, workspace=ws)
        outs.append((dh, db))
    p = pre.double()
    u = 0.7978845608028654 * (p + 0.044715 * p ** 3)
    t = torch.tanh(u)
    dgelu = 0.5 * (1 + t) + 0.5 * p * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * p * p)
    want = dy.double() * dgelu
    tol = dict(rtol=2e-2, atol=2e-2) if dtype is torch.bfloat16 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[0][0].double(), want, **tol)
    torch.testing.assert_close(outs[0][1].double(), want.sum(0),
                               **(dict(rtol=2e-2, atol=1e-1) if dtype is torch.bfloat16
                                  else dict(rtol=1e-5, atol=1e-4)))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


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
    torch.library.opcheck(bt._gemm.custom_op, (a, b, c, 1.5, 0.5))
    x, w, bias = r(3, 4, grad=True), r(5, 4, grad=True), r(5, grad=True)
    torch.library.opcheck(bt._linear.custom_op, (x, w, bias, "gelu", True))
    pre = r(3, 5)
    torch.library.opcheck(bt._linear_backward.custom_op,
                          (r(3, 5), x.detach(), w.detach(), pre, "silu", True, True, True))


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
    monkeypatch.setattr(bc.ArchSku, "current", classmethod(lambda cls, device=None: cls.SM90A))
    arch, pref = bc.ArchSku.SM90A, bc.PlanPreference()
    E, A = bc.ElementKind, bc.GemmActivation

    def dense(**kw):
        d = bc.DenseGemmDescriptor(m=64, n=64, k=64, **kw)
        return bc.DenseGemmPlan._select(d, pref, arch).sku.backend

    assert dense(element=E.BF16) is bc.BackendKind.CUBLASLT
    assert dense(element=E.F32) is bc.BackendKind.CUBLASLT
    assert dense(element=E.F32, bias=True, activation=A.RELU) is bc.BackendKind.CUBLASLT
    assert dense(element=E.BF16, bias=True) is bc.BackendKind.CUBLASLT  # its epilogue
    assert dense(element=E.BF16, bias=True, activation=A.GELU_TANH) is bc.BackendKind.CUBLASLT
    assert dense(element=E.BF16, bias=True, activation=A.GELU) is bc.BackendKind.TRITON  # erf
    assert dense(element=E.BF16, activation=A.SILU) is bc.BackendKind.TRITON
    assert dense(element=E.F32, dactivation=A.GELU) is bc.BackendKind.TRITON
    # GELU_AUX(_BIAS) writes our pre-activation; DGELU(_BGRAD) is the tanh-form backward.
    assert dense(element=E.BF16, bias=True, activation=A.GELU_TANH, save_preact=True) is \
        bc.BackendKind.CUBLASLT
    assert dense(element=E.BF16, dactivation=A.GELU_TANH, bias_grad=True) is \
        bc.BackendKind.CUBLASLT
    assert dense(element=E.BF16, activation=A.RELU, save_preact=True) is bc.BackendKind.TRITON
    assert dense(element=E.BF16, bias_grad=True) is bc.BackendKind.TRITON
    assert dense(element=E.BF16, batch=(2,), dactivation=A.GELU_TANH) is bc.BackendKind.TRITON
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
    # One GELU_AUX_BIAS GEMM (gelu_tanh); a BIAS GEMM into the pre-activation, then the
    # activation kernel, for the rest.
    assert linear(bias=True, activation=A.GELU_TANH, save_preact=True) is \
        bc.BackendKind.CUBLASLT
    assert linear(bias=True, activation=A.SILU, save_preact=True) is bc.BackendKind.CUBLASLT
    back = bc.LinearBackwardDescriptor(64, 64, 64, E.BF16, bias=True, activation=A.GELU)
    assert bc.LinearBackwardPlan._select(back, pref, arch).sku.backend is \
        bc.BackendKind.CUBLASLT


@pytest.mark.parametrize("dtype,split", [(torch.float32, 2), (torch.bfloat16, 4)])
def test_split_epilogue_matches_reference(monkeypatch, dtype, split):
    """The split epilogue (column halves / quarters, the H100 tiles for fused activations) on
    ragged sizes: forward with bias, gelu_tanh and the saved pre-activation, and the backward
    epilogue (derivative from the pre-activation)."""
    from baracuda.families.gemm import launch

    if ON_GPU:
        pytest.skip("the interpreter tile is patched here; the GPU runs the real table")
    real = launch.tile_for

    def split_tile(element, m, n, arch, pref, epilogue_math=False):
        t = real(element, m, n, arch, pref, epilogue_math)
        return launch.Tile(32, 64, 16, 2, 4, 1, t.math, split)

    monkeypatch.setattr(launch, "tile_for", split_tile)
    E, A = bc.ElementKind, bc.GemmActivation
    el = E.BF16 if dtype is torch.bfloat16 else E.F32
    m, n, k = 37, 70, 40
    kw = dict(dtype=dtype, device=DEVICE)
    a, b = torch.randn(m, k, **kw), torch.randn(k, n, **kw) / 6
    bias, pre_in = torch.randn(n, **kw), torch.randn(m, n, **kw)
    tri = bc.PlanPreference(prefer_backend=bc.BackendKind.TRITON)
    d = torch.full((m, n), float("nan"), **kw)
    pre = torch.full((m, n), float("nan"), **kw)
    desc = bc.DenseGemmDescriptor(m=m, n=n, k=k, element=el, bias=True,
                                  activation=A.GELU_TANH, save_preact=True)
    bc.DenseGemmPlan.select(desc, tri).run(bc.DenseGemmArgs(a=a, b=b, d=d, bias=bias,
                                                            preact_out=pre))
    want_pre = a.double() @ b.double() + bias.double()
    want = torch.nn.functional.gelu(want_pre, approximate="tanh")
    tol = dict(rtol=2e-2, atol=2e-2) if dtype is torch.bfloat16 else dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(pre.double(), want_pre, **tol)
    torch.testing.assert_close(d.double(), want, **tol)
    d2 = torch.full((m, n), float("nan"), **kw)
    desc = bc.DenseGemmDescriptor(m=m, n=n, k=k, element=el, dactivation=A.GELU)
    bc.DenseGemmPlan.select(desc, tri).run(bc.DenseGemmArgs(a=a, b=b, d=d2, preact=pre_in))
    p = pre_in.double()
    dgelu = 0.5 * (1 + torch.erf(p / 2 ** 0.5)) + p * torch.exp(-p * p / 2) / (2 * torch.pi) ** .5
    torch.testing.assert_close(d2.double(), (a.double() @ b.double()) * dgelu, **tol)


@pytest.mark.gpu
def test_epilogue_tiles_give_identical_bits(monkeypatch):
    """The timed tile choice keeps the plan deterministic: every candidate tile (all BLOCK_K
    64) must produce the same bits, forward with saved pre-activation and backward epilogue."""
    from baracuda.families.gemm import launch

    m, n, k = 1024, 768, 2048
    kw = dict(dtype=torch.bfloat16, device="cuda")
    a, b = torch.randn(m, k, **kw), torch.randn(k, n, **kw) / 45
    bias, pre_in = torch.randn(n, **kw), torch.randn(m, n, **kw)
    E, A = bc.ElementKind, bc.GemmActivation
    tri = bc.PlanPreference(prefer_backend=bc.BackendKind.TRITON)
    outs = []
    for tile in launch.EPILOGUE_TILES:
        monkeypatch.setattr(launch, "tile_for", lambda *_a, t=tile, **_k: t)
        monkeypatch.setattr(launch, "EPILOGUE_TILES", ())
        d, pre, d2 = (torch.full((m, n), float("nan"), **kw) for _ in range(3))
        desc = bc.DenseGemmDescriptor(m=m, n=n, k=k, element=E.BF16, bias=True,
                                      activation=A.GELU_TANH, save_preact=True)
        bc.DenseGemmPlan.select(desc, tri).run(bc.DenseGemmArgs(a=a, b=b, d=d, bias=bias,
                                                                preact_out=pre))
        desc = bc.DenseGemmDescriptor(m=m, n=n, k=k, element=E.BF16, dactivation=A.GELU)
        bc.DenseGemmPlan.select(desc, tri).run(bc.DenseGemmArgs(a=a, b=b, d=d2, preact=pre_in))
        outs.append((d, pre, d2))
        monkeypatch.undo()
    for got in outs[1:]:
        for x, y in zip(got, outs[0]):
            assert torch.equal(x, y)


def _rel_err(got, want):
    want = want.double()
    return ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


@pytest.mark.gpu
def test_cublaslt_aux_and_bgrad_epilogues_at_size():
    """GELU_AUX_BIAS (forward with saved pre-activation), DGELU_BGRAD and the Linear backward's
    BGRADB against the float64 reference, rerun bit-identically."""
    if nvmath_missing():
        pytest.skip(nvmath_missing())
    from baracuda.families.gemm import reference as ref

    A, E = bc.GemmActivation, bc.ElementKind
    kw = dict(device="cuda", dtype=torch.bfloat16)
    m, n, k = 1024, 2048, 512
    a = torch.randn(m, k, **kw)
    b = torch.randn(k, n, **kw) / k ** 0.5
    bias, pre = torch.randn(n, **kw), torch.randn(m, n, **kw)
    for extra, outs in ((dict(bias=True, activation=A.GELU_TANH, save_preact=True),
                         ("d", "preact_out")),
                        (dict(dactivation=A.GELU_TANH, bias_grad=True), ("d", "dbias")),
                        (dict(dactivation=A.GELU_TANH), ("d",))):
        desc = bc.DenseGemmDescriptor(m=m, n=n, k=k, element=E.BF16, **extra)
        plan = bc.DenseGemmPlan.select(desc)
        assert plan.sku.backend is bc.BackendKind.CUBLASLT, extra
        ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
        runs = []
        for _ in range(2):
            args = bc.DenseGemmArgs(
                a=a, b=b, d=torch.full((m, n), float("nan"), **kw),
                bias=bias if desc.bias else None,
                preact=pre if desc.dactivation is not A.NONE else None,
                preact_out=torch.full((m, n), float("nan"), **kw) if desc.save_preact else None,
                dbias=torch.full((n,), float("nan"), **kw) if desc.bias_grad else None)
            plan.run(args, ws)
            runs.append(args)
        want = ref.dense_gemm(desc, a, b, None, bias if desc.bias else None,
                              pre if desc.dactivation is not A.NONE else None)
        for name in outs:
            got = getattr(runs[0], name)
            assert _rel_err(got.cpu(), want[name]) < 2e-2, (extra, name)
            assert torch.equal(got, getattr(runs[1], name)), (extra, name, "rerun bits")
    t, i, o = 2048, 1024, 4096
    x, w = torch.randn(t, i, **kw), torch.randn(o, i, **kw) / i ** 0.5
    dy, pre = torch.randn(t, o, **kw), torch.randn(t, o, **kw)
    # With an activation the bias gradient is summed in the dgelu kernel; without one it is
    # the dW GEMM's BGRADB epilogue.
    for act, preact in ((A.GELU_TANH, pre), (A.NONE, None)):
        desc = bc.LinearBackwardDescriptor(t, i, o, E.BF16, bias=True, activation=act)
        plan = bc.LinearBackwardPlan.select(desc)
        assert plan.sku.backend is bc.BackendKind.CUBLASLT
        ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
        got = []
        for _ in range(2):
            args = bc.LinearBackwardArgs(dy=dy, x=x, weight=w, preact=preact,
                                         dx=torch.empty(t, i, **kw),
                                         dweight=torch.empty(o, i, **kw),
                                         dbias=torch.full((o,), float("nan"), **kw))
            plan.run(args, ws)
            got.append(args)
        want = ref.linear_backward(dy, x, w, preact, act)
        for name in ("dx", "dweight", "dbias"):
            assert _rel_err(getattr(got[0], name).cpu(), want[name]) < 2e-2, (act, name)
            assert torch.equal(getattr(got[0], name), getattr(got[1], name)), (act, name)


@pytest.mark.parametrize("eq,shapes", [
    ("i->", [(5,)]), ("ij->ji", [(3, 4)]), ("ii", [(3, 3)]), ("ii->i", [(4, 4)]),
    ("i...->...", [(2, 3, 4)]), ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("...k,kn->...n", [(2, 3, 4), (4, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->", [(4,), (4,), (4,)]), ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("ij,ij->", [(0, 3), (0, 3)]), ("ij,j->i", [(3, 1), (0,)])])
def test_einsum_any_operand_count_ellipsis_and_diagonals(eq, shapes):
    """One, two or three operands, '...', repeated labels (diagonals) and size-1 labels that
    broadcast (to 0 too): values and gradients as torch's."""
    g = torch.Generator().manual_seed(5)
    ops = [torch.randn(s, generator=g, dtype=torch.float64).to(DEVICE).requires_grad_()
           for s in shapes]
    got, want = bt.einsum(eq, *ops), torch.einsum(eq, *ops)
    torch.testing.assert_close(got, want)
    gg = torch.autograd.grad(got.sum(), ops, allow_unused=True)
    gw = torch.autograd.grad(want.sum(), ops, allow_unused=True)
    for a, b, t in zip(gg, gw, ops):
        torch.testing.assert_close(torch.zeros_like(t) if a is None else a,
                                   torch.zeros_like(t) if b is None else b)
    with pytest.raises(RuntimeError):
        bt.einsum("ij,jk", ops[0])  # fewer operands than the equation names
