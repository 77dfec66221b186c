"""Time tile-table candidates of the flash kernels on a GPU (run by hand on an H100):

    python -m baracuda.families.attention.tune_gpu [seconds] [d128]
    python -m baracuda.families.attention.tune_gpu backends

Prints one line per (pass, shape, tile) with TFLOP/s, so the tables in plans.py can be
chosen from measurements. Not imported by the package.
"""

from __future__ import annotations

import math
import sys
import time

import torch


def _bench(fn, reps: int = 20) -> float:
    """Mean seconds per call (one warm-up call, then `reps` timed back to back)."""
    from baracuda.tools.bench import CudaEventChain

    return sum(CudaEventChain(fn, reps).ms()) / reps / 1e3


def main(budget_s: float = 100.0, only_d128: bool = False) -> None:
    from baracuda.core.vocab import BackendKind, PlanPreference
    from baracuda.families.attention import plans as P
    from baracuda.families.attention.descriptors import (
        CausalKind,
        SdpaArgs,
        SdpaBackwardArgs,
        SdpaBackwardDescriptor,
        SdpaDescriptor,
    )
    from baracuda.families.attention.plans import SdpaBackwardPlan, SdpaPlan

    t_end = time.time() + budget_s
    trials = {
        "fwd": [(64, 64, 4, 3), (64, 64, 4, 4), (128, 64, 8, 3)],
        "dkdv": [(32, 64, 4, 3), (64, 64, 8, 3), (32, 128, 8, 3), (64, 128, 8, 2),
                 (32, 64, 4, 4), (64, 32, 4, 3)],
        "dq": [(64, 64, 4, 2), (64, 64, 4, 3), (128, 64, 8, 3), (64, 128, 8, 2), (128, 32, 8, 3)],
    }
    if only_d128:
        del trials["fwd"]
    dev = torch.device("cuda")
    shapes = ((4, 16, 4096, 128),) if only_d128 else ((4, 16, 4096, 128), (8, 16, 2048, 64))
    for b, h, s, dh in shapes:
        for causal in (False, True):
            ck = CausalKind.TOP_LEFT if causal else CausalKind.NONE
            d = SdpaDescriptor(b, h, h, s, s, dh, dh, 1 / math.sqrt(dh), torch.bfloat16, ck)
            db = SdpaBackwardDescriptor(b, h, h, s, s, dh, dh, 1 / math.sqrt(dh),
                                        torch.bfloat16, ck)
            mk = lambda: torch.randn(b, h, s, dh, device=dev, dtype=torch.bfloat16)  # noqa
            q, k, v, o, do = mk(), mk(), mk(), mk(), mk()
            lse = torch.empty(b, h, s, device=dev)
            dq, dk, dv = mk(), mk(), mk()
            fl = 4 * b * h * s * s * dh / (2 if causal else 1)
            # the Triton kernels (the default plan may be cuDNN's)
            triton = PlanPreference(prefer_backend=BackendKind.TRITON)
            fplan, bplan = SdpaPlan.select(d, triton), SdpaBackwardPlan.select(db, triton)
            ws = torch.empty(bplan.workspace_size(), dtype=torch.uint8, device=dev)
            fa = SdpaArgs(q, k, v, o, lse)
            fws = torch.empty(fplan.workspace_size(), dtype=torch.uint8, device=dev)
            fplan.run(fa, workspace=fws)
            ba = SdpaBackwardArgs(q, k, v, o, do, lse, dq, dk, dv)
            for table, configs in trials.items():
                key = ("half", max(64, dh))
                tab = {"fwd": P._FWD, "dkdv": P._DKDV, "dq": P._DQ}[table]
                if table == "dkdv" and key in P._DKDV_MHA:  # this MHA problem's table
                    tab = P._DKDV_MHA
                orig = tab[key]
                for cfg in configs:
                    if time.time() > t_end:
                        print("budget spent", flush=True)
                        tab[key] = orig
                        return
                    tab[key] = cfg
                    try:
                        if table == "fwd":
                            sec = _bench(lambda p=fplan, a=fa, w=fws: p.run(a, workspace=w))
                            rate = fl / sec / 1e12
                        else:
                            sec = _bench(lambda p=bplan, a=ba, w=ws: p.run(a, workspace=w))
                            rate = 2.5 * fl / sec / 1e12
                        print(f"{table} B={b} H={h} S={s} D={dh} causal={causal} {cfg} "
                              f"{sec * 1e3:.3f} ms {rate:.0f} TFLOP/s", flush=True)
                    except Exception as exc:  # noqa: BLE001 - a failing tile is a result too
                        print(f"{table} D={dh} {cfg} failed: {str(exc)[:120]}", flush=True)
                tab[key] = orig
    report_resources()


def report_resources() -> None:
    """Registers / spills / shared memory of every kernel the JIT compiled in this process
    (the real specialization, which the AOT check only approximates)."""
    from baracuda.families.attention.kernels import (
        sdpa_bwd_dkdv_kernel,
        sdpa_bwd_dq_kernel,
        sdpa_fwd_kernel,
    )

    for kern in (sdpa_fwd_kernel, sdpa_bwd_dkdv_kernel, sdpa_bwd_dq_kernel):
        for caches in kern.device_caches.values():
            for key, ck in caches[0].items():
                print(f"{kern.__name__} warps={ck.metadata.num_warps} regs={ck.n_regs} "
                      f"spills={ck.n_spills} shared={ck.metadata.shared} key={str(key)[-260:]}",
                      flush=True)


def _ms(fn, reps: int = 10) -> float:
    return _bench(fn, reps) * 1e3


def backends() -> None:
    """Per shape: our candidates (cuDNN fwd, bwd, deterministic bwd, Triton) at plan level and
    through baracuda.torch, vs torch's cuDNN and flash SDPA backends; ms and TFLOP/s."""
    for b, h, s, dh in ((4, 16, 4096, 128), (8, 16, 2048, 64)):
        for causal in (False, True):
            _backends_row(b, h, s, dh, causal)


def _backends_row(b: int, h: int, s: int, dh: int, causal: bool) -> None:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from baracuda.core.vocab import ArchSku, PlanPreference
    from baracuda.families.attention.descriptors import (
        CausalKind,
        SdpaArgs,
        SdpaBackwardArgs,
        SdpaBackwardDescriptor,
        SdpaDescriptor,
    )
    from baracuda.families.attention.plans import SdpaBackwardPlan, SdpaPlan
    from baracuda.families.attention.torch_api import scaled_dot_product_attention as ours

    dev, arch, pref = torch.device("cuda"), ArchSku.current(), PlanPreference()
    ck = CausalKind.TOP_LEFT if causal else CausalKind.NONE
    f = (b, h, h, s, s, dh, dh, 1 / math.sqrt(dh), torch.bfloat16, ck)
    d, db = SdpaDescriptor(*f), SdpaBackwardDescriptor(*f)
    q, k, v, o, do, dq, dk, dv = (torch.randn(b, h, s, dh, device=dev, dtype=torch.bfloat16)
                                  for _ in range(8))
    lse = torch.empty(b, h, s, device=dev)
    fl = 4 * b * h * s * s * dh / (2 if causal else 1)
    row = {}
    fa = SdpaArgs(q, k, v, o, lse)
    ba = SdpaBackwardArgs(q, k, v, o, do, lse, dq, dk, dv)
    for plan_cls, desc, args in ((SdpaPlan, d, fa), (SdpaBackwardPlan, db, ba)):
        for c in plan_cls.candidates:
            if c.supports(desc, pref, arch) is None and "tf32" not in c.name:
                p = plan_cls(desc, c, pref, arch)
                ws = torch.empty(p.workspace_size(), dtype=torch.uint8, device=dev)
                row[c.name] = _ms(lambda p=p, a=args, ws=ws: p.run(a, workspace=ws))
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

    def fb(fn):
        return lambda: torch.autograd.grad(fn(qg, kg, vg, is_causal=causal), (qg, kg, vg), do)

    row["ours fwd"] = _ms(lambda: ours(q, k, v, is_causal=causal))
    row["ours fwd+bwd"] = _ms(fb(ours))
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        with sdpa_kernel([be]):
            row[f"torch {name} fwd"] = _ms(
                lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            row[f"torch {name} fwd+bwd"] = _ms(fb(F.scaled_dot_product_attention))
    print(f"B={b} H={h} S={s} D={dh} causal={causal}", flush=True)
    for name, ms in row.items():
        mult = 3.5 if "+" in name else (2.5 if "bwd" in name else 1.0)
        print(f"  {name:28} {ms:8.3f} ms {mult * fl / ms / 1e9:7.1f} TFLOP/s", flush=True)


def aot_dkdv() -> None:
    """The sm_90a AOT compile of the benchmarked dK/dV specializations (spec.py builds them
    from the launch, as the JIT specializes), to print beside report_resources' JIT numbers."""
    from baracuda.families.attention.plans import SdpaBackwardPlan
    from baracuda.families.attention.spec import _aot_variants
    from baracuda.tools.aot import compile_variant

    for var in _aot_variants(SdpaBackwardPlan):
        if "dkdv" in var.name and "bf16 D=128" in var.name and "mask=none" in var.name:
            shared, regs, spills = compile_variant(var)
            print(f"AOT {var.name}: regs={regs} spills={spills} shared={shared}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "backends":
        backends()
        report_resources()
        aot_dkdv()
    else:
        main(float(sys.argv[1]) if len(sys.argv) > 1 else 100.0, "d128" in sys.argv[2:])
