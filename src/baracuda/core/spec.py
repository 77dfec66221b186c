"""What each family declares about its plans so one test, one checker and one bench cover all.

- `Case`: a descriptor, a way to build fresh args (random inputs, poisoned outputs) and a float64
  reference. `run_case` selects, runs, compares; `rerun_bitwise` checks determinism.
- `PlanSpec`: a plan's cases (small for the interpreter, real for the GPU), its malformed
  descriptors and args with the typed error each must raise, its AOT compile variants.
- `BenchCase`: one benchmark row: ours vs torch eager (and torch.compile of it) on the same
  inputs, with the bytes or FLOPs the op must move or do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import torch

from .plan import Args, Descriptor, Plan
from .tolerance import Comparison, Tolerance, compare, tolerance_for
from .vocab import PlanPreference


@dataclasses.dataclass
class Case:
    name: str
    desc: Descriptor
    #: (device, generator) -> Args with fresh random inputs and poisoned outputs.
    make_args: Callable[[torch.device, torch.Generator], Args]
    #: Args -> {output name: float64 (or exact) expected tensor}.
    reference: Callable[[Args], dict[str, torch.Tensor]]
    #: Per-output tolerance overrides (a reason belongs in a comment where it is set).
    tol: dict[str, Tolerance] = dataclasses.field(default_factory=dict)
    preference: PlanPreference = dataclasses.field(default_factory=PlanPreference)
    #: Args -> {output name: the size of the terms it is a cancelling sum of}: its rounding
    #: error follows that, not its own size, so `atol` is scaled by it (see `compare`).
    error_scale: Callable[[Args], dict[str, float]] | None = None

    def tolerance(self, output: str) -> Tolerance:
        return self.tol.get(output) or tolerance_for(self.desc.element)  # type: ignore[attr-defined]


@dataclasses.dataclass
class CaseResult:
    case: Case
    comparisons: dict[str, Comparison]
    #: with reruns: whether they reproduced the first run bit for bit (None: not rerun)
    reruns_identical: bool | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons.values())

    def summary(self) -> str:
        return "; ".join(c.message for c in self.comparisons.values() if not c.ok) or "ok"


def _workspace(plan: Plan, device: torch.device) -> torch.Tensor | None:
    n = plan.workspace_size()
    return torch.empty(n, dtype=torch.uint8, device=device) if n else None


def execute(plan_cls: type[Plan], case: Case, args: Args) -> Plan:
    plan = plan_cls.select(case.desc, case.preference)
    device = next(iter(args.tensors().values())).device
    plan.run(args, workspace=_workspace(plan, device))
    return plan


def run_case(plan_cls: type[Plan], case: Case, device: torch.device, seed: int = 0,
             reruns: int = 0) -> CaseResult:
    """Run a case and compare it with its float64 reference; with `reruns`, run the same
    inputs that many more times, each from the same starting outputs (in-out tensors such as
    running statistics or a cache included), and record whether every rerun reproduces the
    first run bit for bit (`CaseResult.reruns_identical`)."""
    gen = torch.Generator().manual_seed(seed)
    args = case.make_args(device, gen)
    expected = case.reference(args)
    start = _snapshot(args) if reruns else None
    execute(plan_cls, case, args)
    outs = args.outputs()
    scales = case.error_scale(args) if case.error_scale else {}
    comparisons = {
        name: compare(outs[name], ref, case.tolerance(name), name, scales.get(name))
        for name, ref in expected.items()
    }
    same = _reruns_identical(plan_cls, case, args, start, reruns) if reruns else None
    return CaseResult(case, comparisons, same)


def _snapshot(args: Args) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in args.outputs().items()}


def _reruns_identical(plan_cls: type[Plan], case: Case, args: Args,
                      start: dict[str, torch.Tensor], reruns: int) -> bool:
    """Whether `reruns` more runs on args, each from the outputs' state `start`, reproduce
    their current (first-run) values bit for bit."""
    first = _snapshot(args)
    for _ in range(reruns):
        for k, v in args.outputs().items():
            v.copy_(start[k])
        execute(plan_cls, case, args)
        for k, v in args.outputs().items():
            a = first[k].contiguous().flatten().view(torch.uint8)
            if not torch.equal(a, v.contiguous().flatten().view(torch.uint8)):
                return False
    return True


def rerun_bitwise(plan_cls: type[Plan], case: Case, device: torch.device, seed: int = 0,
                  reruns: int = 3) -> bool:
    """Run the same inputs several times from the same starting outputs; True when all are
    bit-identical."""
    gen = torch.Generator().manual_seed(seed)
    args = case.make_args(device, gen)
    start = _snapshot(args)
    execute(plan_cls, case, args)
    return _reruns_identical(plan_cls, case, args, start, reruns - 1)


@dataclasses.dataclass
class Malformed:
    """Something invalid and the typed error it must raise."""

    name: str
    build: Callable[[], Any]
    error: type[Exception]


@dataclasses.dataclass
class AotVariant:
    """One Triton kernel specialization to compile ahead of time for sm_90a."""

    name: str
    kernel: Any  # a triton.jit function
    signature: dict[str, str]
    constexprs: dict[str, Any]
    num_warps: int = 4
    num_stages: int = 3
    #: Integer args the JIT would see as multiples of 16 (strides, extents of real shapes);
    #: pointers are always taken as 16-byte aligned, as torch allocations are.
    divisible: tuple[str, ...] = ()
    #: Spill bytes (stores + loads) accepted for this variant; non-zero only with a measured
    #: reason in the spec (the spill-free alternative timed slower on the H100).
    max_spill_bytes: int = 0
    #: Register cap per thread (Triton's `maxnreg`) where the plan launches with one.
    maxnreg: int | None = None
    #: Most registers per thread the plan's grid allows (a kernel whose programs must all be
    #: resident at once: the check fails when a change grows it past that).
    max_registers: int | None = None

    def attrs(self) -> dict[tuple[int, ...], list]:
        """Specialization hints as the JIT gives them (tt.divisibility 16), so the AOT compile
        sees the same vectorization, pipelining and register use as a real launch."""
        names = self.kernel.arg_names
        hinted = [n for n, t in self.signature.items() if t.startswith("*")]
        hinted += [n for n in self.divisible if n in self.signature]
        return {(names.index(n),): [["tt.divisibility", 16]] for n in hinted}

    @classmethod
    def auto(cls, name: str, kernel: Any, pointers: dict[str, str], constexprs: dict[str, Any],
             scalars: dict[str, str] | None = None, num_warps: int = 4,
             num_stages: int = 3, divisible: tuple[str, ...] = ()) -> AotVariant:
        """Signature from the kernel's parameter list: `pointers` ("*bf16"), `constexprs`,
        per-name `scalars` overrides, and "i32" (what the JIT picks for small ints) otherwise."""
        scalars = scalars or {}
        sig: dict[str, str] = {}
        for arg in kernel.arg_names:
            if arg in pointers:
                sig[arg] = pointers[arg]
            elif arg in constexprs:
                sig[arg] = "constexpr"
            else:
                sig[arg] = scalars.get(arg, "i32")
        return cls(name, kernel, sig, dict(constexprs), num_warps, num_stages, tuple(divisible))


class PlanSpec:
    """Subclass per plan (or share one across a plan family) and `register_spec` an instance."""

    plan: type[Plan]

    def cases(self, scale: str) -> Iterable[Case]:
        """scale: "small" (interpreter, CI) or "real" (GPU sizes)."""
        return ()

    def malformed_descriptors(self) -> Iterable[Malformed]:
        return ()

    def malformed_args(self, case: Case, device: torch.device) -> Iterable[Malformed]:
        """Args built for `case.desc` but wrong; `build()` returns the bad Args."""
        return ()

    def aot_variants(self) -> Iterable[AotVariant]:
        return ()


@dataclasses.dataclass
class BenchCase:
    """One benchmark row; `setup(device)` builds one input set (called for each rotation)."""

    name: str
    shape: str
    setup: Callable[[torch.device], dict[str, Any]]
    ours: Callable[..., Any]
    torch_eager: Callable[..., Any] | None = None
    bytes: int = 0
    flops: int = 0
    compile_peer: bool = True
    extra_peers: dict[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    quick: bool = True
    #: compare ours with torch before timing (False for draws: two generators' values differ)
    compare: bool = True


def single_threaded_autograd(case: BenchCase) -> BenchCase:
    """The same row with every side run under `torch.autograd.set_multithreading_enabled(False)`
    (the backward on the calling thread, as pytorch#192082 makes the default): on one GPU it
    removes the hand-off to autograd's device thread, so a forward+backward row shows what the
    kernels allow rather than that host cost. torch eager runs under the same setting; the
    compile peer is left out (the context manager would be traced)."""

    def wrap(fn):
        if fn is None:
            return None

        def run(*args, **kwargs):
            with torch.autograd.set_multithreading_enabled(False):
                return fn(*args, **kwargs)

        return run

    return dataclasses.replace(
        case, name=f"{case.name} 1-thread autograd", ours=wrap(case.ours),
        torch_eager=wrap(case.torch_eager), compile_peer=False,
        extra_peers={k: wrap(v) for k, v in case.extra_peers.items()})
