"""Differential fuzzing of the elementwise functions of baracuda.torch against torch
(tests/fuzz.py): unary (in and out of domain), unary with parameters, binary with broadcasting
and type promotion (tensors of mixed dtypes, Python scalars, shapes that don't broadcast),
ternary, comparisons and gated activations, under random layouts, 0-d and empty tensors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import baracuda.torch as bt
from fuzz import (
    DEVICE,
    case_ids,
    differential,
    dims_for,
    floats,
    random_layout,
    rng_for,
)

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.int64, torch.int32, torch.bool]
CASES = case_ids(default_cpu=24, default_gpu=300)


def _domain(lo=None, hi=None, away=None):
    """A map of normal draws into (lo, hi) (open), or away from `away` by at least 0.25."""
    def fn(t):
        if lo is not None and hi is not None:
            return lo + (hi - lo) * (0.02 + 0.96 * torch.sigmoid(t))
        if lo is not None:
            return lo + 0.1 + t.abs()
        if away is not None:
            return away + torch.where(t < 0, t - 0.25, t + 0.25)
        return t
    return fn


# name -> (ours, torch's, domain map, input scale)
def _t(name):
    return getattr(torch, name)


UNARY = {n: (getattr(bt, n), _t(n), _domain(), 2.0) for n in [
    "neg", "abs", "sign", "square", "exp", "exp2", "expm1", "sin", "cos", "atan", "sinh", "cosh",
    "tanh", "asinh", "floor", "ceil", "trunc", "frac", "erf", "erfc", "i0", "sigmoid", "sinc",
    "round"]}
UNARY.update({n: (getattr(bt, n), _t(n), _domain(lo=0.0), 2.0) for n in [
    "sqrt", "rsqrt", "log", "log2", "log10", "lgamma", "digamma"]})
UNARY.update({
    "reciprocal": (bt.reciprocal, torch.reciprocal, _domain(away=0.0), 1.0),
    "log1p": (bt.log1p, torch.log1p, _domain(lo=-1.0), 1.0),
    "asin": (bt.asin, torch.asin, _domain(-1.0, 1.0), 1.0),
    "acos": (bt.acos, torch.acos, _domain(-1.0, 1.0), 1.0),
    "atanh": (bt.atanh, torch.atanh, _domain(-1.0, 1.0), 1.0),
    "erfinv": (bt.erfinv, torch.erfinv, _domain(-1.0, 1.0), 1.0),
    "logit": (bt.logit, torch.logit, _domain(0.0, 1.0), 1.0),
    "acosh": (bt.acosh, torch.acosh, _domain(lo=1.0), 1.0),
    "tan": (bt.tan, torch.tan, _domain(-1.3, 1.3), 1.0),
})
UNARY["square"] = (bt.square, torch.square, _domain(), 2.0)
UNARY.update({n: (getattr(bt, n), getattr(F, n), _domain(), 3.0) for n in [
    "mish", "relu6", "hardswish", "hardsigmoid", "silu", "selu", "softsign", "tanhshrink",
    "logsigmoid", "relu", "gelu", "softplus"]})


def _cpu_reference(fn):
    """torch's CPU kernel as the reference: torch 2.11's CUDA hardswish / hardsigmoid are off
    by an f32 1/6 in f64, ours are not."""
    return lambda t: fn(t.cpu()).to(t.device)


def _exact_hardsigmoid(t):
    """hardsigmoid from its definition: torch's CPU backward is off by 3e-8 relative in f64
    too (its one_sixth is 1.0f / 6.0f), its CUDA forward as above. Other
    dtypes get torch's own answer (an error for integers)."""
    if not t.is_floating_point():
        return F.hardsigmoid(t.cpu()).to(t.device)
    inside = (t > -3) & (t < 3)
    return torch.where(inside, (t + 3) / 6, (t >= 3).to(t.dtype))


UNARY["hardswish"] = (*UNARY["hardswish"][:1], _cpu_reference(F.hardswish),
                      *UNARY["hardswish"][2:])
UNARY["hardsigmoid"] = (*UNARY["hardsigmoid"][:1], _exact_hardsigmoid, *UNARY["hardsigmoid"][2:])
# kinks and jumps where the f64 reference and a rounded input may land on different sides
_STEP = {"sign", "floor", "ceil", "trunc", "frac", "round"}


def _int_tensor(r, shape, dtype, lo=-20, hi=20):
    g = torch.Generator().manual_seed(r.getrandbits(62))
    if dtype == torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=g).bool().to(DEVICE)
    return torch.randint(lo, hi + 1, tuple(shape), generator=g).to(DEVICE, dtype)


def _expected_dtype(fn, inputs):
    try:
        with torch.no_grad():
            out = fn(*[x.detach() if isinstance(x, torch.Tensor) else x for x in inputs])
        return out.dtype
    except Exception:  # noqa: BLE001 - torch rejects the call: differential checks ours does
        return None


def _error_of(fn, inputs):
    try:
        fn(*[x.detach() if isinstance(x, torch.Tensor) else x for x in inputs])
    except Exception as exc:  # noqa: BLE001
        return exc
    return RuntimeError("torch raised only under autograd")


def _checked(ours, want):
    """ours, asserting the output dtype torch gives on the original dtypes (differential checks
    floating results only: this covers bool and integer results too)."""
    def fn(*args):
        out = ours(*args)
        if want is not None and out.dtype != want:
            raise AssertionError(f"output dtype {out.dtype} != torch's {want}")
        return out
    return fn


def _run(case, name, ours, theirs, inputs, *, scale=4.0, grad_scale=None, extra="",
         allowed=()):
    exp = _expected_dtype(theirs, inputs)
    grad_of = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
    floats_in = [x.dtype for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    element = exp if exp is not None else (floats_in[0] if floats_in else torch.float32)
    low = any(d in (torch.float16, torch.bfloat16) for d in floats_in + [element])
    shapes = [(tuple(x.shape), tuple(x.stride()), x.dtype) if isinstance(x, torch.Tensor)
              else repr(x) for x in inputs]
    desc = f"case {case}: {name} {shapes} {extra}"
    if exp is None:  # torch rejects the originals (their float64 copies may pass): so must ours
        err = _error_of(theirs, inputs)

        def theirs(*args):
            raise err
    differential(_checked(ours, exp), theirs, inputs, grad_of=grad_of, element=element,
                 scale=scale * (2.0 if low else 1.0), grad_scale=grad_scale, describe=desc,
                 allowed_extra=allowed)


def _float_input(r, shape, dtype, domain=None, scale=1.0, grad=True):
    x = floats(r, shape, torch.float64, scale=scale)
    if domain is not None:
        x = domain(x)
    x = random_layout(r, x.to(dtype))
    return x.requires_grad_(grad)


def _shape(r, total=400):
    return dims_for(r, r.choice([0, 1, 1, 2, 2, 3, 4]), 40, total)


@pytest.mark.parametrize("case", CASES)
def test_unary_matches_torch(case):
    r = rng_for("ew-unary", case)
    name = r.choice(sorted(UNARY))
    ours, theirs, domain, sc = UNARY[name]
    shape = _shape(r)
    if r.random() < 0.12:
        dtype = r.choice(INTS)  # torch's integer -> float promotion of unary math (or errors)
        x = _int_tensor(r, shape, dtype, -3, 3)
        if name == "softsign" and dtype == torch.bool:
            # torch's CUDA softsign of bool computes in float32, its CPU one raises (abs_cpu
            # has no bool): ours computes on every device, as CUDA's
            theirs = lambda t: F.softsign(t.float())  # noqa: E731
        # torch promotes, keeps or rejects each: ours must do the same
        _run(case, name, ours, theirs, [random_layout(r, x)])
        return
    dtype = r.choice(FLOATS)
    outside = r.random() < 0.15  # out of the domain: torch's NaN / inf results are the contract
    x = floats(r, shape, torch.float64, scale=sc)
    x = x if outside else domain(x)
    if outside and x.numel():
        x.view(-1)[0] = r.choice([math.inf, -math.inf, math.nan, 0.0, -1.0])
    x = random_layout(r, x.to(dtype)).requires_grad_(name not in _STEP)
    _run(case, name, ours, theirs, [x], scale=8.0, grad_scale=2.0)


def _uparam_case(r):
    """(name, ours, torch, domain, grad ok) of a unary function with drawn parameters."""
    slope, alpha = r.choice([0.01, 0.2, -0.5, 2.0]), r.choice([1.0, 0.5, 2.0])
    lo = r.choice([-1.0, -0.5, 0.0, -2.0])
    hi = lo + r.choice([0.5, 1.0, 3.0])
    beta, thr = r.choice([1.0, 0.5, 2.0]), r.choice([20.0, 1.0, 5.0])
    lam = r.choice([0.5, 0.0, 1.0])
    exps = [2.0, 3.0, 0.5, -1.0, 1.5, -2.0, 0.0, 2, 3, 0, 1]
    e = r.choice(exps)
    cmin = r.choice([None, -0.5, 0.0, -1])
    cmax = r.choice([None, 0.5, 1.0, 2]) if cmin is not None else r.choice([0.5, 1])
    s = r.choice([2.5, -1.0, 3, 0, True])
    dec = r.choice([0, 1, 2, -1])
    eps = r.choice([None, 0.1, 1e-3])
    approx = r.choice(["none", "tanh"])
    tv = (r.choice([0.0, 0.5, -1.0]), r.choice([0.0, -2.0, 7.0]))
    cases = {
        "leaky_relu": (lambda x: bt.leaky_relu(x, slope), lambda x: F.leaky_relu(x, slope),
                       None, True),
        "elu": (lambda x: bt.elu(x, alpha), lambda x: F.elu(x, alpha), None, True),
        "celu": (lambda x: bt.celu(x, alpha), lambda x: F.celu(x, alpha), None, True),
        "hardtanh": (lambda x: bt.hardtanh(x, lo, hi), lambda x: F.hardtanh(x, lo, hi), None,
                     True),
        "softplus": (lambda x: bt.softplus(x, beta, thr), lambda x: F.softplus(x, beta, thr),
                     None, True),
        "hardshrink": (lambda x: bt.hardshrink(x, lam), lambda x: F.hardshrink(x, lam), None,
                       True),
        "softshrink": (lambda x: bt.softshrink(x, lam), lambda x: F.softshrink(x, lam), None,
                       True),
        "threshold": (lambda x: bt.threshold(x, *tv), lambda x: F.threshold(x, *tv), None, True),
        "pow": (lambda x: bt.pow(x, e), lambda x: torch.pow(x, e), _domain(lo=0.0), True),
        "rpow": (lambda x: bt.pow(abs(e) + 0.5, x), lambda x: torch.pow(abs(e) + 0.5, x), None,
                 True),
        "clamp": (lambda x: bt.clamp(x, cmin, cmax), lambda x: torch.clamp(x, cmin, cmax), None,
                  True),
        "add_s": (lambda x: bt.add(x, s, alpha=2), lambda x: torch.add(x, s, alpha=2), None,
                  True),
        "sub_s": (lambda x: bt.sub(x, s), lambda x: torch.sub(x, s), None, True),
        "rsub_s": (lambda x: bt.sub(s, x), lambda x: torch.sub(s, x), None, True),
        "mul_s": (lambda x: bt.mul(x, s), lambda x: torch.mul(x, s), None, True),
        "div_s": (lambda x: bt.div(x, s), lambda x: torch.div(x, s), None, True),
        "rdiv_s": (lambda x: bt.div(s, x), lambda x: torch.div(s, x), _domain(away=0.0), True),
        "round_dec": (lambda x: bt.round(x, decimals=dec), lambda x: torch.round(x, decimals=dec),
                      None, False),
        "logit_eps": (lambda x: bt.logit(x, eps), lambda x: torch.logit(x, eps),
                      _domain(0.0, 1.0), True),
        "gelu": (lambda x: bt.gelu(x, approximate=approx),
                 lambda x: F.gelu(x, approximate=approx), None, True),
    }
    name = r.choice(sorted(cases))
    extra = dict(slope=slope, alpha=alpha, lo=lo, hi=hi, beta=beta, thr=thr, lam=lam, e=e,
                 cmin=cmin, cmax=cmax, s=s, dec=dec, eps=eps, approx=approx, tv=tv)
    return name, *cases[name], extra


@pytest.mark.parametrize("case", CASES)
def test_unary_param_matches_torch(case):
    r = rng_for("ew-uparam", case)
    name, ours, theirs, domain, diff, extra = _uparam_case(r)
    shape = _shape(r)
    if r.random() < 0.15 and name in ("clamp", "add_s", "sub_s", "mul_s", "pow", "div_s",
                                      "rsub_s", "rpow", "hardtanh", "threshold"):
        x = random_layout(r, _int_tensor(r, shape, r.choice(INTS), 0 if name == "pow" else -5, 5))
        _run(case, name, ours, theirs, [x], extra=str(extra))
        return
    dtype = r.choice(FLOATS)
    x = _float_input(r, shape, dtype, domain, 2.0, grad=diff)
    _run(case, name, ours, theirs, [x], scale=8.0, grad_scale=2.0, extra=str(extra))


# binary: name -> (ours, torch, integer ok, float ok, denominator kept away from 0)
BINARY = {
    "add": (lambda a, b: bt.add(a, b, alpha=2), lambda a, b: torch.add(a, b, alpha=2)),
    "sub": (bt.sub, torch.sub), "mul": (bt.mul, torch.mul), "div": (bt.div, torch.div),
    "div_trunc": (lambda a, b: bt.div(a, b, rounding_mode="trunc"),
                  lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    "div_floor": (lambda a, b: bt.div(a, b, rounding_mode="floor"),
                  lambda a, b: torch.div(a, b, rounding_mode="floor")),
    "floor_divide": (bt.floor_divide, torch.floor_divide), "pow": (bt.pow, torch.pow),
    "atan2": (bt.atan2, torch.atan2), "hypot": (bt.hypot, torch.hypot),
    "copysign": (bt.copysign, torch.copysign), "maximum": (bt.maximum, torch.maximum),
    "minimum": (bt.minimum, torch.minimum), "fmax": (bt.fmax, torch.fmax),
    "fmin": (bt.fmin, torch.fmin), "remainder": (bt.remainder, torch.remainder),
    "fmod": (bt.fmod, torch.fmod), "xlogy": (bt.xlogy, torch.xlogy),
    "logaddexp": (bt.logaddexp, torch.logaddexp), "logaddexp2": (bt.logaddexp2, torch.logaddexp2),
    "nextafter": (bt.nextafter, torch.nextafter),
    "bitwise_and": (bt.bitwise_and, torch.bitwise_and),
    "bitwise_or": (bt.bitwise_or, torch.bitwise_or),
    "bitwise_xor": (bt.bitwise_xor, torch.bitwise_xor),
    "bitwise_left_shift": (bt.bitwise_left_shift, torch.bitwise_left_shift),
    "bitwise_right_shift": (bt.bitwise_right_shift, torch.bitwise_right_shift),
    "logical_and": (bt.logical_and, torch.logical_and),
    "logical_or": (bt.logical_or, torch.logical_or),
    "logical_xor": (bt.logical_xor, torch.logical_xor),
}
_DENOM = {"div", "div_trunc", "div_floor", "floor_divide", "remainder", "fmod"}
_ROUNDING = {"div_trunc", "div_floor", "floor_divide", "remainder", "fmod"}
_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
             "bitwise_right_shift"}
_NO_GRAD = {"nextafter", "div_trunc", "div_floor", "floor_divide"} | _INT_ONLY


def _broadcast_shapes(r, n):
    """n shapes that broadcast together (suffixes of one shape, some dims 1), or, sometimes,
    shapes that don't."""
    full = dims_for(r, r.choice([0, 1, 2, 3, 4]), 12, 300)
    out = []
    for _ in range(n):
        k = r.randint(0, len(full))
        s = [1 if r.random() < 0.3 else d for d in full[len(full) - k:]]
        out.append(s)
    bad = r.random() < 0.08
    if bad:
        i = r.randrange(n)
        cand = [j for j, d in enumerate(out[i]) if d not in (0, 1)]
        if cand:
            j = r.choice(cand)
            out[i][j] += 1
    return out, bad


def _operand(r, shape, dtype, *, name, denom=False, grad=True, scalar_ok=True):
    if scalar_ok and r.random() < 0.15:
        v = r.choice([2, -3, 1.5, -0.75, True, 0.5]) if not denom else r.choice([2, -3, 1.5])
        if dtype in INTS or name in _INT_ONLY:
            v = r.choice([2, 3, True]) if name != "pow" else 2
        return v
    if dtype in INTS:
        lo, hi = (0, 6) if name in ("pow", "bitwise_left_shift", "bitwise_right_shift") else (
            -20, 20)
        t = _int_tensor(r, shape, dtype, lo, hi)
        if denom and dtype != torch.bool:
            t = torch.where(t == 0, torch.ones_like(t), t)
        return random_layout(r, t)
    x = floats(r, shape, torch.float64, scale=2.0)
    if name in _ROUNDING:  # eighths: quotients don't land a rounding away from an integer
        x = torch.round(x * 8) / 8
    if denom:
        x = _domain(away=0.0)(x)
        if name in _ROUNDING:
            x = torch.round(x * 2) / 2
    if name in ("pow", "xlogy") and not denom:
        x = x.abs() + 0.1
    return random_layout(r, x.to(dtype)).requires_grad_(grad)


@pytest.mark.parametrize("case", CASES)
def test_binary_matches_torch(case):
    r = rng_for("ew-binary", case)
    name = r.choice(sorted(BINARY))
    ours, theirs = BINARY[name]
    (sa, sb), bad = _broadcast_shapes(r, 2)
    pool = FLOATS + INTS if r.random() < 0.4 else FLOATS
    if name in _INT_ONLY:
        pool = INTS
    da, db = r.choice(pool), r.choice(pool)
    if r.random() < 0.5:
        db = da
    grad = name not in _NO_GRAD
    a = _operand(r, sa, da, name=name, grad=grad, scalar_ok=False)
    b = _operand(r, sb, db, name=name, denom=name in _DENOM, grad=grad,
                 scalar_ok=True)  # torch takes a number in some positions of some ops
    if r.random() < 0.2 and not isinstance(b, torch.Tensor):
        a, b = b, a  # a Python number first
        if name in _DENOM or name == "pow":
            return
    _run(case, name, ours, theirs, [a, b], scale=8.0, grad_scale=2.0, extra=f"bad={bad}")


TERNARY = {
    "lerp": (bt.lerp, torch.lerp), "addcmul": (lambda a, b, c: bt.addcmul(a, b, c, value=0.5),
                                               lambda a, b, c: torch.addcmul(a, b, c, value=0.5)),
    "addcdiv": (lambda a, b, c: bt.addcdiv(a, b, c, value=-2),
                lambda a, b, c: torch.addcdiv(a, b, c, value=-2)),
    "where": (bt.where, torch.where), "clamp": (bt.clamp, torch.clamp),
}


@pytest.mark.parametrize("case", CASES)
def test_ternary_matches_torch(case):
    r = rng_for("ew-ternary", case)
    name = r.choice(sorted(TERNARY))
    ours, theirs = TERNARY[name]
    shapes, bad = _broadcast_shapes(r, 3)
    dts = [r.choice(FLOATS)] * 3
    if r.random() < 0.3:
        ints = INTS if name in ("clamp", "where") else []  # torch's addc* keep input's dtype
        dts = [r.choice(FLOATS + ints) for _ in range(3)]
    if name == "clamp":
        try:
            full = list(torch.broadcast_shapes(*[tuple(x) for x in shapes]))
        except RuntimeError:
            full = None  # (a bad draw that does not broadcast: torch raises, ours must)
        if full is not None:
            # bounds that widen the input: torch's forward broadcasts, its backward raises
            # ("output with shape [7, 1] doesn't match the broadcast shape [7, 5]", CPU fuzz
            # case 70025): drawn at the input's shape
            shapes[0] = full
    ops = [_operand(r, s, d, name=name, denom=(name == "addcdiv" and i == 2), scalar_ok=False)
           for i, (s, d) in enumerate(zip(shapes, dts))]
    if name == "where":
        ops[0] = random_layout(r, _int_tensor(r, shapes[0], torch.bool))
        for i in (1, 2):
            if r.random() < 0.15:
                ops[i] = r.choice([1.5, -2, 0])
    if name == "lerp" and r.random() < 0.4:
        ops[2] = r.choice([0.25, 0.75, -0.5, 1, True])
        if r.random() < 0.7:
            ops[1] = _operand(r, shapes[0], dts[0], name=name, scalar_ok=False)
    elif name == "lerp" and r.random() < 0.4:
        # a 0-d weight of any dtype promotes as a 0-d operand (integer start and end too)
        ops[2] = _operand(r, [], r.choice(FLOATS + INTS), name=name, scalar_ok=False)
        if r.random() < 0.3:
            dt = r.choice(INTS[:2])
            ops[:2] = [_operand(r, s, dt, name=name, scalar_ok=False) for s in shapes[:2]]
    if name == "clamp":
        for i in (1, 2):
            if r.random() < 0.2:
                ops[i] = None
        if ops[1] is None and ops[2] is None:
            ops[2] = 1.0
        if r.random() < 0.15:  # a number beside a tensor bound: torch takes it beside a 0-d one
            ops[r.choice([1, 2])] = r.choice([-0.5, 1, 2.5, True])
        if isinstance(ops[1], torch.Tensor) and isinstance(ops[2], torch.Tensor):
            with torch.no_grad():  # min < max most of the time, not always
                if (r.random() < 0.8 and not bad
                        and ops[1].is_floating_point() == ops[2].is_floating_point()):
                    ops[2] = (torch.maximum(ops[1], ops[2]).detach().clone()
                              .requires_grad_(ops[2].requires_grad))
    _run(case, name, ours, theirs, ops, scale=8.0, grad_scale=2.0, extra=f"bad={bad}")


CMP = {n: (getattr(bt, n), getattr(torch, n)) for n in ["eq", "ne", "lt", "le", "gt", "ge"]}
CMP["isclose"] = (lambda a, b: bt.isclose(a, b, rtol=1e-2, atol=1e-3),
                  lambda a, b: torch.isclose(a, b, rtol=1e-2, atol=1e-3))


@pytest.mark.parametrize("case", CASES)
def test_compare_matches_torch(case):
    r = rng_for("ew-cmp", case)
    name = r.choice(sorted(CMP))
    ours, theirs = CMP[name]
    (sa, sb), bad = _broadcast_shapes(r, 2)
    da = r.choice(FLOATS + INTS)
    db = da if r.random() < 0.5 else r.choice(FLOATS + INTS)
    # quarters: the f64 copy compares as the dtype's values do
    a = _operand(r, sa, da, name="remainder", grad=False, scalar_ok=False)
    b = _operand(r, sb, db, name="remainder", grad=False, scalar_ok=True)
    if not isinstance(b, torch.Tensor) and r.random() < 0.3:
        a, b = b, a  # torch's comparisons take a number second only
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and r.random() < 0.3:
        b = a.detach().clone() if a.shape == torch.Size(sb) else b
    _run(case, name, ours, theirs, [a, b], extra=f"bad={bad}")


def _gated_ref(kind):
    act = {"glu": torch.sigmoid, "swiglu": F.silu, "geglu": F.gelu, "reglu": F.relu,
           "geglu_tanh": lambda t: F.gelu(t, approximate="tanh")}[kind]

    def fn(x, dim):
        a, b = x.chunk(2, dim)
        return a * act(b) if kind == "glu" else act(a) * b
    return fn


@pytest.mark.parametrize("case", CASES)
def test_gated_matches_torch(case):
    r = rng_for("ew-gated", case)
    kind = r.choice(["glu", "swiglu", "geglu", "geglu_tanh", "reglu"])
    rank = r.choice([0, 1, 2, 3, 4])
    shape = dims_for(r, rank, 30, 400)
    dim = r.randint(-max(rank, 1), max(rank, 1) - 1)
    if rank and r.random() < 0.85:
        shape[dim] = 2 * max(shape[dim] // 2, r.choice([0, 1, 2, 3]))
    dtype = r.choice(FLOATS)
    x = _float_input(r, shape, dtype, None, 2.0)
    ref = _gated_ref(kind)
    if kind == "glu":
        def theirs(t):
            return F.glu(t, dim)
    else:
        def theirs(t):
            if t.dim() == 0 or t.shape[dim] % 2:
                raise RuntimeError("halving dimension must be even")
            return ref(t, dim)
    _run(case, kind, lambda t: getattr(bt, kind)(t, dim), theirs, [x], scale=8.0,
         grad_scale=2.0, extra=f"dim={dim}")
