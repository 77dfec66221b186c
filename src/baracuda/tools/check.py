"""`baracuda check`: every registered plan against its float64 reference on this machine's
device (real sizes on a GPU; small sizes under the CPU interpreter), plus determinism reruns
for plans that claim them. Prints a pass/fail table; exit code 1 on any failure."""

from __future__ import annotations

import time
import warnings

import torch

from ..core import registry
from ..core.spec import rerun_bitwise, run_case


def main(family: str | None = None, scale: str | None = None, limit: int | None = None) -> int:
    # The interpreter evaluates masked-out lanes too (e.g. -inf - -inf): numpy warns, harmlessly.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    scale = scale or ("real" if device.type == "cuda" else "small")
    work = []
    for spec in registry.specs(family):
        cases = list(spec.cases(scale))
        work += [(spec.plan, c) for c in (cases[:limit] if limit else cases)]
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        def tqdm(it, **_):
            return it
    results: dict[str, list] = {}
    failures = []
    for plan, case in tqdm(work, desc=f"check ({device.type}, {scale})", unit="case"):
        t0 = time.perf_counter()
        seed = int(time.time()) % 10_000  # fresh inputs each run; a failure names its seed
        try:
            res = run_case(plan, case, device, seed=seed)
            ok, why = res.ok, res.summary()
            selected = plan.select(case.desc, case.preference)
            if ok and selected.precision_guarantee.deterministic:
                if not rerun_bitwise(plan, case, device, reruns=2):
                    ok, why = False, "claims determinism, reruns differ"
        except Exception as exc:  # noqa: BLE001 - reported in the table
            ok, why = False, f"{type(exc).__name__}: {exc}"
        results.setdefault(plan.__name__, []).append((ok, time.perf_counter() - t0))
        if not ok:
            failures.append(f"{plan.__name__} / {case.name} (seed {seed}): {why}")
    print(f"\n{'plan':34} {'family':14} {'pass':>5} {'fail':>5} {'seconds':>8}")
    for name, rs in results.items():
        fam = registry.plan_named(name).family
        passed = sum(ok for ok, _ in rs)
        print(f"{name:34} {fam:14} {passed:5} {len(rs) - passed:5} {sum(t for _, t in rs):8.2f}")
    for f in failures:
        print("FAIL", f)
    for fam, err in registry.import_errors().items():
        print(f"BROKEN family {fam}: {err}")
        failures.append(fam)
    total = sum(len(v) for v in results.values())
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0
