"""Issue 32 regressions in the elementwise family, against torch on the device in use: sign,
the exact rounding ops (fmod, remainder, trunc division), addcmul / addcdiv gradients with mixed
dtypes, hardshrink's negative lambd, and the Triton 3.8 interpreter's constexpr rule."""

from __future__ import annotations

import ast
import pathlib

import pytest
import torch
import torch.nn.functional as F

import baracuda.torch as bt
from baracuda.families import elementwise
from conftest import DEVICE

HALVES = (torch.bfloat16, torch.float16)
ELEMENTWISE = pathlib.Path(elementwise.__file__).parent


def _same(got: torch.Tensor, ref: torch.Tensor) -> None:
    """Bit-for-bit as torch (NaN where torch has NaN)."""
    assert got.dtype == ref.dtype
    nan = ref.isnan()
    assert torch.equal(got.isnan(), nan)
    bad = (got != ref) & ~nan
    assert not bad.any(), (got[bad][:5], ref[bad][:5])


@pytest.mark.parametrize("dtype", [*HALVES, torch.float32])
def test_sign_matches_torch(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(20, 20, generator=g).to(dtype)
    x[0, :4] = torch.tensor([0.0, -0.0, float("nan"), float("-inf")])
    x = x.to(DEVICE)
    _same(bt.sign(x), torch.sign(x))
    _same(bt.sign(x.t()), torch.sign(x.t()))


def _operands(dtype, seed, n=4096):
    """Wide quotients (|a / b| up to ~1e5), exact ties of the half roundings and integers."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n, generator=g, dtype=torch.float64) * torch.randn(n, generator=g).exp() * 30
    b = torch.randn(n, generator=g, dtype=torch.float64) * torch.randn(n, generator=g).exp()
    a[:8] = torch.tensor([1.8203125, -3.890625, 8.375, 2.984375, 5.0, -7.0, 0.0, 3.0],
                         dtype=torch.float64)
    b[:8] = torch.tensor([-4.5625, -0.216796875, 0.55859375, -0.06103515625, 0.0, 2.0, 1.5,
                          float("inf")], dtype=torch.float64)
    return a.to(dtype).to(DEVICE), b.to(dtype).to(DEVICE)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, *HALVES])
@pytest.mark.parametrize("op", ["fmod", "remainder", "trunc", "floor"])
def test_rounding_ops_match_torch(op, dtype):
    a, b = _operands(dtype, seed=11)
    if op in ("trunc", "floor"):
        if op == "floor" and dtype in HALVES:
            pytest.skip("torch's half floor division rounds every step in the half type")
        got, ref = bt.div(a, b, rounding_mode=op), torch.div(a, b, rounding_mode=op)
    else:
        got, ref = getattr(bt, op)(a, b), getattr(torch, op)(a, b)
    _same(got, ref)


def test_bf16_result_rounds_to_nearest_even():
    """f32 results stored as bf16 round to nearest (ties to even), as torch's conversion."""
    x = torch.tensor([1.0 + 3 * 2**-9, -2.7421875, 1.0 + 2**-8, 3.0e38], dtype=torch.float32,
                     device=DEVICE)
    _same(bt.add(x, 0.0).bfloat16(), x.bfloat16())  # (the cast plan)
    y = torch.tensor([1.0, -1.0, 1.0, 1.0], dtype=torch.bfloat16, device=DEVICE)
    _same(bt.mul(x, y), torch.mul(x, y).to(torch.float32))
    _same(bt.remainder(torch.tensor([1.8203125], dtype=torch.bfloat16, device=DEVICE),
                       torch.tensor([-4.5625], dtype=torch.bfloat16, device=DEVICE)),
          torch.tensor([-2.75], dtype=torch.bfloat16, device=DEVICE))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("t1, t2", [(torch.bfloat16, torch.float32),
                                    (torch.float32, torch.bfloat16),
                                    (torch.float16, torch.float16),
                                    (torch.bfloat16, torch.float16)])
def test_addc_mixed_dtype_gradients(name, t1, t2):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 7, generator=g).to(DEVICE).requires_grad_()
    a = torch.randn(6, 7, generator=g).to(t1).to(DEVICE).requires_grad_()
    b = (torch.rand(6, 7, generator=g) + 0.5).to(t2).to(DEVICE).requires_grad_()
    up = torch.randn(6, 7, generator=g).to(DEVICE)
    outs = []
    for fn in (getattr(torch, name), getattr(bt, name)):
        y = fn(x, a, b, value=0.7)
        outs.append((y, *torch.autograd.grad(y, (x, a, b), up)))
    for ref, got in zip(*outs):
        assert got.dtype == ref.dtype
        torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)


def test_hardshrink_negative_lambd():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 6, generator=g, dtype=torch.float64).to(DEVICE).requires_grad_()
    ref = F.hardshrink(x, -0.5)
    got = bt.hardshrink(x, -0.5)
    torch.testing.assert_close(got, ref)
    torch.testing.assert_close(torch.autograd.grad(got.sum(), x)[0],
                               torch.autograd.grad(ref.sum(), x)[0])
    with pytest.raises(Exception):  # noqa: B017 - torch raises too (softshrink needs lambd >= 0)
        F.softshrink(x, -0.5)
    with pytest.raises(Exception):  # noqa: B017
        bt.softshrink(x, -0.5)


def _module_constexprs(tree: ast.Module) -> set[str]:
    return {t.id for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "tl.constexpr"
            for t in node.targets if isinstance(t, ast.Name)}


@pytest.mark.parametrize("module", ["special.py", "ops.py", "ops_nary.py"])
def test_no_constexpr_left_of_a_tensor_in_tl_calls(module):
    """Triton 3.8's interpreter turns `CONST * tensor` (a module tl.constexpr on the left) into
    an object `tl.sin` / `tl.math.*` reject (lgamma, digamma and i0 crashed): the constant goes
    on the right."""
    tree = ast.parse((ELEMENTWISE / module).read_text())
    consts = _module_constexprs(tree) | {"PI", "PIO2", "LN2", "HALF_LOG_2PI"}
    bad = []
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and ast.unparse(call.func).startswith("tl."):
            for arg in call.args:
                for node in ast.walk(arg):
                    if isinstance(node, ast.BinOp) and isinstance(node.left, (ast.Name,
                                                                               ast.Attribute)):
                        name = node.left.attr if isinstance(node.left, ast.Attribute) \
                            else node.left.id
                        if name in consts and not isinstance(node.right, ast.Constant):
                            bad.append(ast.unparse(call))
    assert not bad, bad


def test_zero_dim_cpu_tensor_moves_to_the_other_device():
    """The device rule on the CPU (a meta tensor stands in for CUDA); the category rule is
    torch_result's (a 0-d f64 does not widen an f32 tensor, a 0-d float widens an int one)."""
    from baracuda.families.elementwise.custom_ops import torch_result, zero_dims_to_result
    x = torch.empty(3, device="meta")
    a, b = zero_dims_to_result(x, torch.tensor(2.0, dtype=torch.float64))
    assert a is x and b.device.type == "meta" and b.dtype == torch.float32
    i = torch.empty(3, dtype=torch.int32, device="meta")
    assert torch_result(i, torch.tensor(2.0).to("meta")) == torch.float32
    c = torch.tensor(1.0)
    assert zero_dims_to_result(c, torch.tensor(2.0))[0] is c  # all on the CPU: untouched


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "remainder", "pow",
                                  "eq", "lt", "ge", "atan2", "fmod"])
def test_cuda_tensor_with_zero_dim_cpu_tensor(name):
    x = torch.randn(4, 5, device="cuda", dtype=torch.float32) + 3.0
    for s in (torch.tensor(2.0), torch.tensor(2.0, dtype=torch.float64), torch.tensor(2)):
        ref = getattr(torch, name)(x, s)
        got = getattr(bt, name)(x, s)
        assert got.device == ref.device and got.dtype == ref.dtype
        torch.testing.assert_close(got, ref)


@pytest.mark.parametrize("name,kw", [("add", {}), ("add", {"alpha": 2}), ("sub", {}),
                                     ("mul", {}), ("div", {}), ("true_divide", {}),
                                     ("floor_divide", {}), ("div", {"rounding_mode": "trunc"}),
                                     ("div", {"rounding_mode": "floor"})])
def test_two_python_numbers_as_torch(name, kw):
    """torch computes these for two Python numbers (a 0-d CPU tensor of the default dtype,
    int64 or bool as the numbers are); OpInfo's reference samples include them."""
    for a, b in ((6.25, -2.5), (7, 2), (-7, 2), (True, 3)):
        if name in ("div", "true_divide", "floor_divide") and b == 0:
            continue
        try:
            ref = getattr(torch, name)(a, b, **kw)
        except RuntimeError:  # sub with a bool: torch refuses, so must we
            with pytest.raises(RuntimeError):
                getattr(bt, name)(a, b, **kw)
            continue
        got = getattr(bt, name)(a, b, **kw)
        assert got.device == ref.device and got.dtype == ref.dtype and got.dim() == 0
        torch.testing.assert_close(got, ref)
    with pytest.raises(TypeError):
        bt.maximum(1.0, 2.0)  # torch refuses two numbers there


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_digamma_gradient_at_its_poles_as_torch(dtype, device):
    """trigamma's reflection forms sin(pi x) as torch does (pi * x rounded first): at a
    negative integer torch's gradient is a large finite number, not inf, and ours with it."""
    x = torch.tensor([-3.0, -1.0, -2.0 + 2.0 ** -10, -0.5, 0.25, 4.0], dtype=dtype,
                     device=device, requires_grad=True)
    (ours,) = torch.autograd.grad(bt.digamma(x).sum(), x)
    (ref,) = torch.autograd.grad(torch.digamma(x).sum(), x)
    assert torch.isfinite(ours).all() and torch.isfinite(ref).all()
    torch.testing.assert_close(ours, ref, rtol=1e-4 if dtype == torch.float32 else 1e-9,
                               atol=0)


@pytest.mark.parametrize("name,alpha", [("celu", 0.8), ("celu", 1.3), ("hardsigmoid", None),
                                        ("hardswish", None)])
def test_f64_exact_where_torch_rounds(name, alpha):
    """torch's float64 celu gradient (alpha != 1), hardsigmoid and hardswish (CUDA: times a
    float32 1/6) are accurate to ~2e-8 only; ours must match the closed form to 1e-13 (alpha
    travels as two float32 halves). The OpInfo run compares with torch at a looser tolerance
    for these (opinfo_known.TORCH_ROUGH_F64)."""
    gen = torch.Generator().manual_seed(7)
    x = (torch.randn(1000, generator=gen, dtype=torch.float64) * 4).to(DEVICE)
    g = torch.randn(1000, generator=gen, dtype=torch.float64).to(DEVICE)
    x.requires_grad_(True)
    xd = x.detach()
    inner = (xd > -3) & (xd < 3)
    if name == "celu":
        y = bt.celu(x, alpha)
        fw = torch.where(xd > 0, xd, alpha * torch.expm1(xd / alpha))
        exact = torch.where(xd <= 0, g * torch.exp(xd / alpha), g)
    elif name == "hardsigmoid":
        y = bt.hardsigmoid(x)
        fw = torch.clamp(xd + 3, 0, 6) / 6
        exact = torch.where(inner, g / 6, torch.zeros_like(g))
    else:
        y = bt.hardswish(x)
        fw = xd * torch.clamp(xd + 3, 0, 6) / 6
        exact = torch.where(xd <= -3, torch.zeros_like(g),
                            torch.where(xd < 3, g * (xd / 3 + 0.5), g))
    torch.testing.assert_close(y.detach(), fw, rtol=1e-13, atol=1e-300)
    (got,) = torch.autograd.grad(y, x, g)
    torch.testing.assert_close(got, exact, rtol=1e-13, atol=1e-300)


def test_complex_python_number_is_refused_by_name():
    """A complex Python number would make a complex result in torch; baracuda has no complex
    dtypes, so it refuses with Unsupported naming the value (not a type error)."""
    from baracuda.core.errors import Unsupported

    x = torch.randn(3, device=DEVICE)
    with pytest.raises(Unsupported, match="complex numbers are not supported"):
        bt.add(x, 1j)
    with pytest.raises(Unsupported, match="complex numbers are not supported"):
        bt.where(x > 0, 2j, x)
