"""Torch's OpInfo samples against baracuda.torch: the case list, one sample's check, the summary.

Every baracuda.torch function whose name (or an alias's) matches an OpInfo of
`common_methods_invocations.op_db` runs that OpInfo's `reference_inputs` (which start with its
`sample_inputs`), contiguous and non-contiguous (`SampleInput.noncontiguous`, as test_ops), for
every dtype torch lists for the op within ours; forward outputs and the gradient of every input
that requires grad (against one random upstream gradient) are compared with torch's op.

A non-float64 result passes when it is close to torch's at the dtype's tolerance, or when its
error against torch's op in float64 (inputs upcast) is at most 2x torch's own plus a rounding
floor (the golden fallback of torch's test_ops).

On the CPU (CI) each case runs a few samples chosen deterministically; on CUDA, or with
BARACUDA_OPINFO_SAMPLES=all, every sample runs (BARACUDA_OPINFO_SAMPLES=<n> picks n).

`python tests/opinfo_support.py [name ...]` prints pass/fail counts per function.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten

ON_GPU = torch.cuda.is_available()
DEVICE = "cuda" if ON_GPU else "cpu"
_SAMPLES = os.environ.get("BARACUDA_OPINFO_SAMPLES", "all" if ON_GPU else "")
FULL = _SAMPLES == "all"
#: per case on the CPU: this many sample_inputs and this many of the extra reference_inputs
CPU_SAMPLES = int(_SAMPLES) if _SAMPLES.isdigit() else 3
CPU_REFERENCES = 0 if _SAMPLES.isdigit() else 2
#: CPU samples larger than this are passed over (the interpreter runs one program per block)
CPU_MAX_NUMEL = 4096

#: variants left to the full run: bmm's "triton_optimized" repeats bmm at sizes for GPU kernels
CPU_SKIP_VARIANTS = {"triton_optimized"}

FLOATS = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
#: for ops torch lists no float dtype for (the bitwise ops)
INTS = (torch.int64, torch.int32)
SHORT = {torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16",
         torch.float16: "f16", torch.int64: "i64", torch.int32: "i32"}
#: close-to-torch tolerance per dtype (atol relative to the largest |torch output|), and the
#: rounding floor of the golden fallback (relative to the largest |float64 output|)
TOL = {torch.float64: (1e-10, 1e-8), torch.float32: (1e-5, 1e-4),
       torch.bfloat16: (1.6e-2, 1.6e-2), torch.float16: (2e-3, 2e-3)}
#: an absolute floor: gradients that are rounding noise around zero (a one-element norm)
ABS = {torch.float64: 1e-12, torch.float32: 1e-6, torch.bfloat16: 1e-3, torch.float16: 1e-4}
FLOOR = {torch.float64: 1e-12, torch.float32: 2e-6, torch.bfloat16: 8e-3,
         torch.float16: 1e-3}

#: (name, variant) whose refusal with a typed `Unsupported` is by design, with the reason
_MATRIX_NORM = ("matrix norms (nuc, ord 1 / -1 / 2 / -2 / +-inf over two dims) belong to a "
                "linalg family; the reduction family computes the vector cases")
REFUSALS: dict[tuple[str, str], str] = {
    ("norm", "nuc"): _MATRIX_NORM,
    ("linalg.norm", ""): _MATRIX_NORM,
    ("linalg.norm", "subgradients_at_zero"): _MATRIX_NORM,
}

# the known failures live beside this module (one line each, what differs)
from opinfo_known import (  # noqa: E402,F401
    FULL_KNOWN_FAILURES,
    INTERPRETER_FULL_KNOWN_FAILURES,
    INTERPRETER_KNOWN_FAILURES,
    KNOWN_FAILURES,
    TORCH_ROUGH_F64,
)


@dataclass(frozen=True)
class Case:
    name: str  # the baracuda.torch function
    op: object  # the OpInfo
    variant: str  # the OpInfo's name when it differs from `name`, and its variant_test_name
    dtype: torch.dtype

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.variant, SHORT[self.dtype])

    @property
    def id(self) -> str:
        return "-".join(k for k in self.key if k)


def _stripped(name: str) -> str:
    return name.removeprefix("nn.functional.")


def cases(names=None) -> list[Case]:
    """Every (function, OpInfo, dtype) to run, in op_db order."""
    from torch.testing._internal.common_methods_invocations import op_db

    from baracuda.tools.ops import frontend_names

    if names is None and os.environ.get("BARACUDA_OPINFO_NAMES"):
        # a GPU run short on time takes the functions it changed (space-separated names)
        names = os.environ["BARACUDA_OPINFO_NAMES"].split()
    public = set(frontend_names()) if names is None else set(names)
    out = []
    for op in op_db:
        base = _stripped(op.name)
        matched = [base] + [_stripped(a.name) for a in op.aliases]
        dtypes = op.supported_dtypes(DEVICE)
        chosen = [d for d in FLOATS if d in dtypes] or [d for d in INTS if d in dtypes]
        if not FULL:  # f32, f64 and one half dtype on the CPU
            half = [d for d in chosen if d in (torch.bfloat16, torch.float16)][:1]
            chosen = [d for d in chosen if d not in (torch.bfloat16, torch.float16)] + half
        if not FULL and op.variant_test_name in CPU_SKIP_VARIANTS:
            continue
        for name in dict.fromkeys(matched):
            if name not in public:
                continue
            variant = op.variant_test_name
            if base != name:
                variant = f"{base}.{variant}" if variant else base
            out.extend(Case(name, op, variant, d) for d in chosen)
    return out


def _numel(sample) -> int:
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    return sum(t.numel() for t in leaves if isinstance(t, torch.Tensor))


#: the dtypes baracuda has (ElementKind); samples with others (complex) are out of scope
OURS = (*FLOATS, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool)


def _in_scope(sample) -> bool:
    """No complex operand, as a tensor or as a Python number (torch.where(c, 2j, x)), and on
    the GPU an input on the GPU (a few of torch's reference inputs, logsumexp's 0-dim ones,
    come on the CPU whatever the device asked for: a CPU call, not a CUDA one)."""
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    if ON_GPU and isinstance(sample.input, torch.Tensor) and not sample.input.is_cuda:
        return False
    return all(t.dtype in OURS if isinstance(t, torch.Tensor) else not isinstance(t, complex)
               for t in leaves)


def _spread(items: list, n: int) -> list:
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / max(n - 1, 1))] for i in range(n)]


def _requiring_grad(t):
    if isinstance(t, torch.Tensor) and t.is_floating_point():
        return t.detach().requires_grad_()
    return t


def samples(case: Case) -> list[tuple[str, object]]:
    """(label, SampleInput) pairs: the case's samples, then their non-contiguous twins."""
    op, dtype = case.op, case.dtype
    grad = op.supports_autograd and dtype.is_floating_point
    torch.manual_seed(0)
    base = list(op.sample_inputs(DEVICE, dtype, requires_grad=grad))
    refs = []
    if op.reference_inputs_func is not None:
        torch.manual_seed(0)
        # some reference_inputs refuse requires_grad=True (integer operands): set it after
        refs = list(op.reference_inputs(DEVICE, dtype, requires_grad=False))[len(base):]
        if grad:
            refs = [s.transform(_requiring_grad) for s in refs]
    labelled = [(f"s{i}", s) for i, s in enumerate(base)]
    labelled += [(f"r{i}", s) for i, s in enumerate(refs)]
    labelled = [(lab, s) for lab, s in labelled if _in_scope(s)]
    if not FULL:
        small = [(lab, s) for lab, s in labelled if _numel(s) <= CPU_MAX_NUMEL]
        labelled = (_spread([x for x in small if x[0][0] == "s"], CPU_SAMPLES)
                    + _spread([x for x in small if x[0][0] == "r"], CPU_REFERENCES))
    out = []
    for lab, s in labelled:
        out.append((lab, s))
        out.append((lab + "-nc", s.noncontiguous()))
    return out


def _call(case: Case, fn, sample):
    """Call `fn` as the OpInfo calls its op (some OpInfos wrap the op in a lambda)."""
    name, inp, args, kwargs = case.name, sample.input, sample.args, sample.kwargs
    if name == "einsum":
        return fn(args[0], inp, *args[1:], **kwargs)
    if name == "where":
        return fn(args[0], inp, *args[1:], **kwargs)
    if name in ("embedding", "embedding_bag"):
        return fn(args[0], inp, *args[1:], **kwargs)
    if name in ("zero_", "resize_", "resize_as_"):
        # the OpInfo's op works on a clone (its input is a leaf needing grad)
        return fn(inp.clone(), *args, **kwargs)
    if name == "normal" and case.variant == "in_place":  # the OpInfo's op is Tensor.normal_
        from baracuda.tools.ops import frontend_function

        return frontend_function("normal_")(inp, *args, **kwargs)
    return fn(inp, *args, **kwargs)


def _torch_fn(case: Case):
    if case.name in ("einsum", "where", "embedding", "embedding_bag"):
        return getattr(torch.nn.functional, case.name, None) or getattr(torch, case.name)
    return case.op.op


def _upcast(sample):
    def f(t):
        if isinstance(t, torch.dtype):
            return torch.float64 if t.is_floating_point else t
        if t.is_floating_point():
            return t.detach().to(torch.float64).requires_grad_(t.requires_grad)
        return t
    return sample.transform(f)


def _leaves(sample) -> list[torch.Tensor]:
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]


def _outputs(result) -> list:
    leaves, _ = tree_flatten(result)
    return leaves


#: factories whose values are unspecified (uninitialized memory): shape, dtype, device and
#: strides are compared, never the values
UNSPECIFIED_VALUES = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted",
                                "new_empty", "new_empty_strided"})


def _layout(t) -> tuple:
    if not isinstance(t, torch.Tensor):
        return (type(t).__name__,)
    return tuple(t.shape), t.dtype, t.device, t.stride()


def _close(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype,
           rtol: float | None = None) -> str | None:
    """None when `got` matches `want` (same dtype) at the dtype's tolerance (or `rtol`), else
    what differs."""
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)} != torch's {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != torch's {want.dtype}"
    if got.device != want.device:
        return f"device {got.device} != torch's {want.device}"
    if got.numel() == 0:
        return None
    if not want.is_floating_point():
        bad = int((got != want).sum())
        return None if bad == 0 else f"{bad}/{got.numel()} elements differ"
    g, w = got.detach().double(), want.detach().double()
    atol, dtype_rtol = TOL.get(want.dtype, TOL[torch.float64])
    rtol = dtype_rtol if rtol is None else rtol
    floor = ABS.get(want.dtype, 0.0)
    finite = torch.isfinite(w)
    scale = float(w[finite].abs().max()) if bool(finite.any()) else 0.0
    same = (g == w) | (torch.isnan(g) & torch.isnan(w))
    near = (g - w).abs() <= floor + atol * scale + rtol * w.abs()
    ok = same | (near & finite)
    if bool(ok.all()):
        return None
    bad = ~ok
    err = float((g - w)[bad & finite].abs().max()) if bool((bad & finite).any()) else float("inf")
    return (f"{int(bad.sum())}/{g.numel()} elements differ, max |diff| {err:.3g} "
            f"(scale {scale:.3g})")


def _golden_ok(got: torch.Tensor, ref: torch.Tensor, gold: torch.Tensor) -> bool:
    """|got - f64| <= 2 |torch - f64| + floor (maximum over the elements finite in float64);
    a non-finite `got` must be where torch's is the same non-finite value."""
    g, r = got.detach().double(), ref.detach().double()
    x = gold.detach().double().to(g.device)
    if g.shape != x.shape:
        return False
    nf = ~torch.isfinite(g)
    if bool(nf.any()):
        same = (g[nf] == r[nf]) | (torch.isnan(g[nf]) & torch.isnan(r[nf]))
        if not bool(same.all()):
            return False
    fin = torch.isfinite(x)
    if not bool(fin.any()):
        return True
    ours = torch.where(fin, (g - x).abs(), 0).nan_to_num(nan=float("inf")).max()
    theirs = torch.where(fin, (r - x).abs(), 0).nan_to_num(nan=float("inf")).max()
    floor = FLOOR.get(got.dtype, 0.0) * float(x[fin].abs().max())
    return bool(ours <= 2 * theirs + floor)


def _compare(what, ours, theirs, gold, dtype, rtol=None) -> str | None:
    if ours is None and theirs is None:
        return None
    if ours is None or theirs is None:
        z = theirs if ours is None else ours
        if isinstance(z, torch.Tensor) and not bool(z.detach().ne(0).any()):
            return None  # an unused input: None and zeros agree
        return f"{what}: {'no gradient' if ours is None else 'a gradient torch has not'}"
    if not isinstance(ours, torch.Tensor) or not isinstance(theirs, torch.Tensor):
        return None if ours == theirs else f"{what}: {ours!r} != torch's {theirs!r}"
    diff = _close(ours, theirs, dtype, rtol)
    if diff is None:
        return None
    if (gold is not None and theirs.is_floating_point() and theirs.dtype != torch.float64
            and ours.dtype == theirs.dtype and _golden_ok(ours, theirs, gold)):
        return None
    return f"{what}: {diff}"


def _forward(case: Case, fn, sample) -> list:
    return _outputs(sample.output_process_fn_grad(_call(case, fn, sample)))


def _backward(outs, leaves, ups):
    """Gradients of `leaves` for the upstream `ups` (float64, one per output, cast to each)."""
    diff = [(o, u) for o, u in zip(outs, ups) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not diff:
        return [None] * len(leaves)
    g = torch.autograd.grad([o for o, _ in diff], leaves, [u.to(o.dtype) for o, u in diff],
                            allow_unused=True)
    return list(g)


def _upstream(outs) -> list:
    gen = torch.Generator(device=DEVICE).manual_seed(7)
    return [torch.randn(o.shape, generator=gen, device=DEVICE, dtype=torch.float64)
            if isinstance(o, torch.Tensor) and o.is_floating_point() else None for o in outs]


def _refuses(case: Case, fn, sample, err: Exception) -> tuple[list[str], str | None]:
    """torch raised `err`: ours must raise too (of any type, for now; a mismatch is noted)."""
    try:
        _call(case, fn, sample)
    except Exception as ours:  # noqa: BLE001
        if not isinstance(ours, type(err)):
            return [], f"torch raises {type(err).__name__}, ours {type(ours).__name__}"
        return [], None
    return [f"torch raises {type(err).__name__} ({str(err)[:80]}), ours returns"], None


#: functions whose results are draws (the random and dropout families): torch's draws and
#: ours come from different streams, so values are checked as `_check_random` does (and
#: tests/test_fullgraph.py compares layouts); their laws are tested in tests/families/
RANDOM_VALUES = frozenset({
    "rand", "rand_like", "randn", "randn_like", "normal", "uniform_", "normal_",
    "exponential_", "cauchy_", "geometric_", "log_normal_", "random_", "randint",
    "randint_like", "bernoulli", "random_bits", "dropout", "dropout1d", "dropout2d",
    "dropout3d", "alpha_dropout", "feature_alpha_dropout", "native_dropout", "multinomial",
    "rrelu", "gumbel_softmax", "randperm", "poisson"})


def _random(sample, name: str = "") -> bool:
    """A sample whose result is drawn at random (dropout): torch's draws and ours come from
    different generators, so values cannot be compared."""
    return name in RANDOM_VALUES or float(sample.kwargs.get("dropout_p", 0.0) or 0.0) > 0.0


def _check_random(case: Case, fn, ref, ref_g, sample, leaves, ups) -> list[str]:
    """For a random sample: ours runs, matches torch's outputs and gradients in shape and
    dtype, is finite where torch's is, and is reproducible under one torch seed (our draws
    come from torch's generator, as torch's do)."""
    runs = []
    for _ in range(2):
        torch.manual_seed(1234)
        got = _forward(case, fn, sample)
        runs.append((got, _backward(got, leaves, ups) if ref_g is not None else []))
    fails = []
    (got, got_g), (again, again_g) = runs
    for what, ours, theirs, rerun in (("forward", got, ref, again),
                                      ("grad", got_g, ref_g or [], again_g)):
        for i, (o, r, o2) in enumerate(zip(ours, theirs, rerun)):
            if not isinstance(r, torch.Tensor):
                continue
            if o is None or o.shape != r.shape or o.dtype != r.dtype:
                fails.append(f"{what}[{i}] (random): {None if o is None else (o.shape, o.dtype)}"
                             f", torch {(r.shape, r.dtype)}")
            elif not (torch.equal(o.isnan(), o2.isnan())
                      and torch.equal(o.nan_to_num(0.0), o2.nan_to_num(0.0))):
                fails.append(f"{what}[{i}] (random): not reproducible under one seed")
            elif bool((r.isfinite() & ~o.isfinite()).any()):
                fails.append(f"{what}[{i}] (random): non-finite where torch's is finite")
    return fails


def check_sample(case: Case, sample) -> tuple[list[str], str | None]:
    """(failures, note) for one sample; the note records what is not a failure (a refusal
    listed in REFUSALS, a torch error matched by an error of another type)."""
    from baracuda.core.errors import Unsupported
    from baracuda.tools.ops import frontend_function

    ours_fn, torch_fn = frontend_function(case.name), _torch_fn(case)
    leaves = _leaves(sample)
    try:
        ref = _forward(case, torch_fn, sample)
    except Exception as e:  # noqa: BLE001 - torch refuses: ours must refuse too
        return _refuses(case, ours_fn, sample, e)
    ups = _upstream(ref)
    ref_g = None
    if leaves:
        try:
            ref_g = _backward(ref, leaves, ups)
        except Exception:  # noqa: BLE001 - torch has no derivative here: forward only
            ref_g = None
    try:
        if _random(sample, case.name):
            return _check_random(case, ours_fn, ref, ref_g, sample, leaves, ups), None
        got = _forward(case, ours_fn, sample)
        got_g = _backward(got, leaves, ups) if ref_g is not None else None
    except Unsupported as e:
        if (case.name, case.variant) in REFUSALS:
            return [], f"refused: {REFUSALS[(case.name, case.variant)]}"
        return [f"raises {type(e).__name__}: {str(e)[:160]}"], None
    except Exception as e:  # noqa: BLE001
        return [f"raises {type(e).__name__}: {str(e)[:160]}"], None
    gold, gold_g = None, None
    if case.dtype in (torch.float32, torch.bfloat16, torch.float16):
        try:  # torch in float64 on the upcast inputs: the golden reference
            up = _upcast(sample)
            gold = _forward(case, torch_fn, up)
            if ref_g is not None:
                gold_g = _backward(gold, _leaves(up), ups)
        except Exception:  # noqa: BLE001 - no float64 kernel: no golden fallback
            gold, gold_g = None, None
    if len(got) != len(ref):
        return [f"forward: {len(got)} outputs, torch {len(ref)}"], None
    if gold is not None and len(gold) != len(ref):
        gold, gold_g = None, None
    rough = TORCH_ROUGH_F64.get((case.name, case.variant))
    rtol = rough[0] if rough and case.dtype == torch.float64 else None
    if case.name in UNSPECIFIED_VALUES:  # memory as allocated: its layout is the result
        return [f"forward[{i}]: {_layout(o)} != torch's {_layout(r)}"
                for i, (o, r) in enumerate(zip(got, ref)) if _layout(o) != _layout(r)], None
    fails = [_compare(f"forward[{i}]", o, r, gold[i] if gold else None, case.dtype, rtol)
             for i, (o, r) in enumerate(zip(got, ref))]
    if ref_g is not None:
        fails += [_compare(f"grad[{i}]", o, r, gold_g[i] if gold_g else None, case.dtype, rtol)
                  for i, (o, r) in enumerate(zip(got_g, ref_g))]
    return [f for f in fails if f], None


def check_case(case: Case) -> tuple[int, list[str], list[str]]:
    """(samples run, failures, notes) of one case: every selected sample."""
    fails, notes = [], []
    try:
        picked = samples(case)
    except Exception as e:  # noqa: BLE001
        return 0, [f"harness error drawing samples: {type(e).__name__}: {e}"], []
    for label, sample in picked:
        try:
            f, note = check_sample(case, sample)
        except Exception as e:  # noqa: BLE001 - the harness itself must not hide a case
            f, note = [f"harness error {type(e).__name__}: {e}"], None
        fails += [f"{label} {sample.summary()[:160]}: {x}" for x in f]
        if note:
            notes.append(f"{label}: {note}")
    return len(picked), fails, notes


def summary(names=None, out=sys.stdout) -> dict[str, tuple[int, int]]:
    """Print and return, per function, (cases passing, cases failing)."""
    counts: dict[str, list[int]] = {}
    for case in cases(names):
        _, fails, _ = check_case(case)
        c = counts.setdefault(case.name, [0, 0])
        c[1 if fails else 0] += 1
        if fails:
            print(f"FAIL {case.id}: {fails[0]}", file=out)
    for name, (ok, bad) in counts.items():
        print(f"{name:32s} {ok:3d} pass {bad:3d} fail", file=out)
    return {k: tuple(v) for k, v in counts.items()}


if __name__ == "__main__":
    if not ON_GPU:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    summary(sys.argv[1:] or None)
