"""`baracuda bench`: the one timing protocol.

- CUDA events around batches of calls; the median over many batches (sub-100 µs single-call
  events are dominated by event overhead, so each sample times a batch).
- Rotating input sets whose total size exceeds 3× the L2 cache, so repeated calls don't
  measure the cache.
- Effective GB/s from the family's cost model (`BenchCase.bytes`: the fewest bytes the op must
  move) or TFLOP/s (`BenchCase.flops`).
- Peers in the same run: torch eager, torch.compile of the same eager function, and any extra
  peers (e.g. Liger-Kernel when installed). Ratios are peer time / our time (>1: we're faster).
- Our output is compared once with torch eager's (a benchmark of a wrong answer is void).
- The report: one Markdown table per family (`markdown_tables`, the tables of
  docs/PERFORMANCE.md) printed at the end, and every row with the run's metadata as JSON.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from ..backends.timing import CudaEventChain  # noqa: F401  (re-exported for lab scripts)
from ..core import registry
from ..core.spec import BenchCase

L2_BYTES = 50 * 1024 * 1024


@dataclass
class Timing:
    ms: float
    rate: float  # GB/s or TFLOP/s
    error: str = ""


@dataclass
class BenchRow:
    family: str
    name: str
    shape: str
    unit: str
    ours: Timing
    peers: dict[str, Timing] = field(default_factory=dict)
    matches_torch: bool | None = None

    def ratio(self, peer: str) -> float | None:
        p = self.peers.get(peer)
        if p is None or p.error or not p.ms or self.ours.error:
            return None
        return p.ms / self.ours.ms


def _outputs_match(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return False
        a64, b64 = a.detach().double(), b.detach().double()
        finite = torch.isfinite(b64)
        if not torch.equal(torch.isnan(a64), torch.isnan(b64)):
            return False
        scale = float(b64[finite].abs().max()) if bool(finite.any()) else 1.0
        tol = 2e-2 if a.dtype in (torch.bfloat16, torch.float16) else 1e-3
        return bool(((a64 - b64)[finite].abs() <= tol * max(scale, 1e-30)).all())
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_outputs_match(x, y) for x, y in zip(a, b))
    return True


def _float64(inputs: dict[str, Any]) -> dict[str, Any]:
    def up(v):
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return v.detach().double().requires_grad_(v.requires_grad)
        return v

    return {k: up(v) for k, v in inputs.items()}


def outputs_agree(case: BenchCase, inputs: dict[str, Any]) -> bool:
    """Ours agrees with torch, or, where torch's own low-precision result is the one off
    (a bf16 cumsum that accumulates in bf16), with torch's function on float64 inputs."""
    ours = case.ours(**inputs)
    if _outputs_match(ours, case.torch_eager(**inputs)):
        return True
    return _outputs_match(ours, case.torch_eager(**_float64(inputs)))


def _set_bytes(inputs: dict[str, Any]) -> int:
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def time_fn(fn, input_sets: list[dict[str, Any]], budget_s: float) -> float:
    """Median milliseconds per call over batches of calls that rotate through input_sets."""
    for s in input_sets[:2]:
        fn(**s)  # warm up: compile, autotune, handles
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(**input_sets[0])
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    batch = max(1, min(len(input_sets) * 4, int(0.002 / one)))
    samples = max(5, min(50, int(budget_s / (one * batch))))
    start = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    k = 0
    for i in range(samples):
        start[i].record()
        for _ in range(batch):
            fn(**input_sets[k % len(input_sets)])
            k += 1
        end[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) / batch for s, e in zip(start, end))
    return times[len(times) // 2]


def host_seconds_per_call(fn, n: int = 200, warmup: int = 20) -> float:
    """Wall time per call of `fn` in a loop, synchronized at both ends: on problems too small
    to keep the GPU busy this is the host (Python, dispatch, launch) cost of one call."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


def host_profile(fn, calls: int = 300, top: int = 14, sort: str = "tottime",
                 busy_cycles: int = 0) -> str:
    """cProfile of `calls` calls of `fn` (after one warm call), as pstats' table of the `top`
    entries sorted by `sort`: where the host time of one eager call goes. GPU work is
    synchronized before and after, so it does not land in the profile; `busy_cycles` first
    queues a GPU sleep so the profiled calls never wait on the device either."""
    import cProfile
    import io
    import pstats

    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        if busy_cycles:
            torch.cuda._sleep(busy_cycles)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats(sort).print_stats(top)
    return "\n".join(ln for ln in out.getvalue().splitlines() if ln.strip())


def _rate(case: BenchCase, ms: float) -> float:
    if case.flops:
        return case.flops / (ms * 1e-3) / 1e12
    if case.bytes:
        return case.bytes / (ms * 1e-3) / 1e9
    return ms * 1e3  # latency rows (no cost model): microseconds per call


def _measure(case: BenchCase, fn, sets, budget_s) -> Timing:
    try:
        ms = time_fn(fn, sets, budget_s)
        return Timing(ms, _rate(case, ms))
    except Exception as exc:  # noqa: BLE001 - a peer failing is a result, not a crash
        return Timing(float("nan"), float("nan"), f"{type(exc).__name__}: {str(exc)[:200]}")


def input_sets(case: BenchCase, device: torch.device) -> list[dict[str, Any]]:
    """Rotating input sets of a case: together more than 3x L2 (so no call finds its inputs
    cached), at most 16 and at most half the free memory."""
    first = case.setup(device)
    per_set = max(_set_bytes(first), 1)
    n_sets = max(2, min(16, math.ceil(3 * L2_BYTES / per_set)))
    free = torch.cuda.mem_get_info(device)[0]
    n_sets = max(1, min(n_sets, int(0.5 * free // per_set)))
    return [first] + [case.setup(device) for _ in range(n_sets - 1)]


#: Rounds of a bench row: ours and every peer are timed once per round, in alternating order,
#: and each keeps its median round, because timing one after the other gives the last-timed
#: of two equal kernels an edge larger than the difference being measured.
ROUNDS = 3


def median_timing(rounds: list[Timing]) -> Timing:
    """The round of median time; the first error if any round failed (a peer that fails
    once is reported as failing)."""
    failed = [t for t in rounds if t.error]
    if failed:
        return failed[0]
    return sorted(rounds, key=lambda t: t.ms)[len(rounds) // 2]


def interleaved(impls: dict[str, Any], measure, rounds: int = ROUNDS) -> dict[str, Timing]:
    """measure(fn) of every implementation once per round, the order reversed every other
    round; each implementation's median round."""
    seen: dict[str, list[Timing]] = {name: [] for name in impls}
    for r in range(rounds):
        order = list(impls) if r % 2 == 0 else list(reversed(impls))
        for name in order:
            seen[name].append(measure(impls[name]))
    return {name: median_timing(ts) for name, ts in seen.items()}


def run_case(family: str, case: BenchCase, device: torch.device, budget_s: float) -> BenchRow:
    sets = input_sets(case, device)
    first = sets[0]
    unit = "TFLOP/s" if case.flops else "GB/s" if case.bytes else "us/call"
    matches = None
    if case.torch_eager is not None and case.compare:
        try:
            matches = outputs_agree(case, first)
        except Exception:  # noqa: BLE001
            matches = False
    impls = {"ours": case.ours}
    if case.torch_eager is not None:
        impls["torch"] = case.torch_eager
        if case.compile_peer:
            impls["torch.compile"] = torch.compile(case.torch_eager)
    impls.update(case.extra_peers)
    times = interleaved(impls, lambda fn, sets=sets: _measure(case, fn, sets, budget_s / ROUNDS))
    ours = times.pop("ours")
    row = BenchRow(family, case.name, case.shape, unit, ours, times, matches_torch=matches)
    del sets, first
    torch.cuda.empty_cache()
    return row


def commit_id() -> str:
    env = os.environ.get("BARACUDA_COMMIT")
    if env:
        return env
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except Exception:  # noqa: BLE001
        here = os.path.dirname(__file__)
        path = os.path.join(here, "..", "..", "..", ".commit")
        return open(path).read().strip() if os.path.exists(path) else "unknown"


def format_table(rows: list[BenchRow]) -> str:
    head = (f"{'family':13} {'bench':22} {'shape':26} {'ours':>10} {'torch':>10} "
            f"{'compile':>10} {'vs eager':>8} {'vs comp':>8} ok")
    lines = [head, "-" * len(head)]
    for r in rows:
        def cell(t: Timing | None) -> str:
            if t is None:
                return "-"
            return "err" if t.error else f"{t.rate:.1f}"

        def rat(x):
            return "-" if x is None else f"{x:.2f}x"

        ok = {True: "yes", False: "NO", None: "-"}[r.matches_torch]
        lines.append(
            f"{r.family:13} {r.name[:22]:22} {r.shape[:26]:26} {cell(r.ours):>10} "
            f"{cell(r.peers.get('torch')):>10} {cell(r.peers.get('torch.compile')):>10} "
            f"{rat(r.ratio('torch')):>8} {rat(r.ratio('torch.compile')):>8} {ok}"
        )
    lines.append("(rates in GB/s, TFLOP/s for matmul rows, us/call for latency rows; "
                 "ratios = peer time / ours)")
    return "\n".join(lines)


def plot(rows: list[BenchRow], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.name} {r.shape}" for r in rows]
    fig, ax = plt.subplots(figsize=(10, max(3, 0.35 * len(rows))))
    ys = range(len(rows))
    for off, peer in ((-0.2, "torch"), (0.2, "torch.compile")):
        vals = [r.ratio(peer) or 0 for r in rows]
        ax.barh([y + off for y in ys], vals, height=0.4, label=f"vs {peer}")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(list(ys), labels, fontsize=7)
    ax.set_xlabel("speed-up (peer time / baracuda time)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


_DTYPE_NAMES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
                "bf16": "bf16", "f16": "f16", "f32": "f32", "f64": "f64"}
_DTYPE_WORD = re.compile(r"\b(" + "|".join(_DTYPE_NAMES) + r")\b")
_EAGER_PEERS = ("torch", "torch.compile")


def split_dtype(shape: str) -> tuple[str, str]:
    """A bench row's shape label without its dtype word, and that dtype in short form."""
    m = _DTYPE_WORD.search(shape)
    if m is None:
        return shape, "-"
    rest = " ".join((shape[:m.start()] + shape[m.end():]).split())
    return rest, _DTYPE_NAMES[m.group(1)]


def _fastest(row: BenchRow, names) -> str | None:
    """The name of the fastest peer among `names` that ran without error."""
    ok = [n for n in names if n in row.peers and not row.peers[n].error and row.peers[n].ms]
    return min(ok, key=lambda n: row.peers[n].ms) if ok else None


def _rate_cell(t: Timing | None) -> str:
    if t is None:
        return "-"
    return "err" if t.error else f"{t.rate:.1f}"


def markdown_row(row: BenchRow) -> str:
    shape, dtype = split_dtype(row.shape)
    ours = _rate_cell(row.ours) + (" (output differs from torch)"
                                   if row.matches_torch is False else "")
    others = [n for n in row.peers if n not in _EAGER_PEERS]
    best_other = _fastest(row, others)
    if best_other is not None:
        other = f"{_rate_cell(row.peers[best_other])} ({best_other})"
    else:
        other = ", ".join(f"err ({n})" for n in others) or "-"
    best = _fastest(row, list(row.peers))
    ratio = row.ratio(best) if best is not None else None
    ratio_cell = "-" if ratio is None else f"{ratio:.2f}x ({best})"
    cells = [row.name, shape, dtype, row.unit, ours, _rate_cell(row.peers.get("torch")),
             _rate_cell(row.peers.get("torch.compile")), other, ratio_cell]
    return "| " + " | ".join(cells) + " |"


MARKDOWN_HEAD = ("| op | shape | dtype | unit | ours | torch eager | torch.compile "
                 "| best other peer | ratio |\n|---|---|---|---|---:|---:|---:|---:|---:|")


def markdown_meta(meta: dict) -> str:
    versions = ", ".join(f"{k} {meta[k]}" for k in ("torch", "triton") if meta.get(k))
    return (f"Device: {meta.get('device', 'unknown')}. Date: {meta.get('date', 'unknown')}. "
            f"Commit: {meta.get('commit', 'unknown')}." + (f" ({versions})" if versions else ""))


def markdown_tables(rows: list[BenchRow], meta: dict, level: int = 2) -> str:
    """One Markdown section per family, in the order the rows ran: a heading, the run's
    device, date and commit, and the table. Rates are in the row's unit (higher is better,
    but for us/call rows); ratio = the fastest peer's time / ours (> 1: ours is faster)."""
    families: dict[str, list[BenchRow]] = {}
    for r in rows:
        families.setdefault(r.family, []).append(r)
    out = []
    for fam, fam_rows in families.items():
        out += [f"{'#' * level} {fam}", "", markdown_meta(meta), "", MARKDOWN_HEAD]
        out += [markdown_row(r) for r in fam_rows]
        out.append("")
    return "\n".join(out)


def rows_from_json(data: dict) -> list[BenchRow]:
    def timing(d: dict) -> Timing:
        return Timing(d["ms"], d["rate"], d.get("error", ""))

    return [BenchRow(r["family"], r["name"], r["shape"], r["unit"], timing(r["ours"]),
                     {k: timing(v) for k, v in r["peers"].items()}, r.get("matches_torch"))
            for r in data["rows"]]


def _write(path: str | None, text: str) -> None:
    if path:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)


def render_json(path: str, family: str | None = None, markdown_path: str | None = None) -> int:
    """`baracuda bench --from-json FILE`: an earlier run's rows as the Markdown tables."""
    with open(path) as fh:
        data = json.load(fh)
    rows = [r for r in rows_from_json(data) if family is None or r.family == family]
    text = markdown_tables(rows, data.get("meta", {}))
    print(text, end="")
    _write(markdown_path, text)
    return 0


def overhead_cases() -> list[BenchCase]:
    """Eager-mode cost per call on a tiny problem, where launch and Python overhead is all."""
    import torch.nn.functional as F

    from .. import torch as bt

    def setup(device):
        return {"x": torch.randn(8, 64, device=device)}

    def setup_grad(device):
        return {"x": torch.randn(8, 64, device=device, requires_grad=True),
                "dy": torch.randn(8, 64, device=device)}

    def fwbw(fn):
        # a random upstream gradient: the gradient of softmax(x).sum() is zero up to rounding,
        # which no tolerance can compare
        return lambda x, dy: torch.autograd.grad(fn(x, -1), x, dy)

    return [
        BenchCase("eager overhead fwd", "softmax [8, 64] f32", setup,
                  ours=lambda x: bt.softmax(x, -1), torch_eager=lambda x: F.softmax(x, -1),
                  compile_peer=False),
        BenchCase("eager overhead fwd+bwd", "softmax [8, 64] f32", setup_grad,
                  ours=fwbw(bt.softmax), torch_eager=fwbw(F.softmax), compile_peer=False),
    ]


def select_cases(family: str | None, quick: bool, match: str | None = None) -> list:
    """[(family, BenchCase)] to run: the quick set or all, of one family or every one, only
    those whose "name shape" contains `match` (texts separated by "|": any of them; the
    overhead rows only without a match)."""
    texts = None if match is None else match.split("|")
    work = [(fam, c) for fam, fn in registry.benches(family).items() for c in fn(quick)
            if (c.quick or not quick)
            and (texts is None or any(t in f"{c.name} {c.shape}" for t in texts))]
    if family in (None, "overhead") and match is None:
        work = [("overhead", c) for c in overhead_cases()] + work
    return work


def main(family: str | None, quick: bool, json_path: str | None, png_path: str | None,
         budget_s: float = 0.5, match: str | None = None,
         markdown_path: str | None = None) -> int:
    if not torch.cuda.is_available():
        print("baracuda bench: no CUDA device; benchmarks need a GPU (see scripts/gpu_run.sh)")
        return 2
    device = torch.device("cuda")
    work = select_cases(family, quick, match)
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        def tqdm(it, **_):
            return it
    rows = []
    bar = tqdm(work, desc="bench", unit="case", mininterval=10)
    for fam, case in bar:
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(f"{case.name} {case.shape}")
        rows.append(run_case(fam, case, device, budget_s))
        # each row as soon as it exists, so a run cut short still reports what it measured
        print(format_table(rows[-1:]).splitlines()[2], flush=True)
    meta = {
        "device": torch.cuda.get_device_name(device),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit_id(),
        "torch": torch.__version__,
        "triton": __import__("triton").__version__,
    }
    tables = markdown_tables(rows, meta)
    print("\n" + tables)
    from ..backends.launch_replay import OP_OUTCOMES, OUTCOMES

    meta["launch_replay"] = {**OUTCOMES, **OP_OUTCOMES}
    print("launch replay (op or candidate: refusal, or replayed):")
    for name, why in sorted({**OUTCOMES, **OP_OUTCOMES}.items()):
        print(f"  {name}: {why or 'replayed'}")
    results_dir = os.path.join("bench", "results")
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path = json_path or os.path.join(results_dir, f"bench-{stamp}.json")
    png_path = png_path or os.path.join(results_dir, f"bench-{stamp}.png")
    _write(json_path, json.dumps({"meta": meta, "rows": [asdict(r) for r in rows]}, indent=1))
    _write(markdown_path, tables)
    try:
        os.makedirs(os.path.dirname(png_path) or ".", exist_ok=True)
        plot(rows, png_path)
    except Exception as exc:  # noqa: BLE001 - a missing matplotlib must not lose the numbers
        print(f"(plot skipped: {exc})")
    print(f"results: {json_path} {png_path} {markdown_path or ''}".rstrip())
    return 1 if any(r.matches_torch is False for r in rows) else 0
