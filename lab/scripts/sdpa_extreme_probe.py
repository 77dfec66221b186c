"""torch's OpInfo samples of scaled_dot_product_attention in f16 / bf16: the q, k, v gradients
of ours and of each of torch's backends (flash, efficient, cuDNN, math), each against the
float64 math result, as max |error| / max |reference| per sample and gradient. Shows whether
the near one-hot samples that ours misses (its Delta reads the stored 16-bit output) are
missed by torch's fused backends too.

    python lab/scripts/sdpa_extreme_probe.py
"""

from __future__ import annotations

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.testing._internal.common_methods_invocations import op_db

import baracuda.torch as bt

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}


def _grads(fn, sample, up, dtype):
    q, k, v = (t.detach().to(dtype).requires_grad_() for t in (sample.input, *sample.args[:2]))
    out = fn(q, k, v, *sample.args[2:], **sample.kwargs)
    return torch.autograd.grad(out, (q, k, v), up.to(out.dtype))


def _err(got, want) -> float:
    return float((got.double() - want).abs().max() / want.abs().max().clamp(min=1e-30))


def main() -> None:
    op = next(o for o in op_db if o.name == "nn.functional.scaled_dot_product_attention")
    for dtype in (torch.float16, torch.bfloat16):
        worst: dict[str, float] = {}
        for i, sample in enumerate(op.sample_inputs("cuda", dtype, requires_grad=True)):
            if len(sample.args) < 2 or sample.kwargs.get("dropout_p", 0.0) > 0:
                continue
            q = sample.input
            shape = torch.nn.functional.scaled_dot_product_attention(
                q.detach(), *(a.detach() if isinstance(a, torch.Tensor) else a
                              for a in sample.args), **sample.kwargs).shape
            up = torch.randn(shape, device="cuda", dtype=torch.float64)
            ref = _grads(torch.nn.functional.scaled_dot_product_attention, sample, up,
                         torch.float64)
            try:
                scores = float((q.double() @ sample.args[0].double().transpose(-2, -1))
                               .abs().max()) * (q.shape[-1] ** -0.5)
            except RuntimeError:  # grouped heads: shapes don't multiply as they are
                scores = float("nan")
            row = {"ours": _grads(bt.scaled_dot_product_attention, sample, up, dtype)}
            for name, backend in BACKENDS.items():
                try:
                    with sdpa_kernel(backend):
                        row[name] = _grads(torch.nn.functional.scaled_dot_product_attention,
                                           sample, up, dtype)
                except Exception:  # noqa: BLE001 - a backend that refuses the sample
                    row[name] = None
            cells = []
            for name, grads in row.items():
                if grads is None:
                    cells.append(f"{name} -")
                    continue
                e = max(_err(g, r) for g, r in zip(grads, ref))
                worst[name] = max(worst.get(name, 0.0), e)
                cells.append(f"{name} {e:.1e}")
            print(f"{str(dtype)[6:]} sample {i} {list(q.shape)} |score|max {scores:.0f}: "
                  + "  ".join(cells), flush=True)
        print(f"{str(dtype)[6:]} worst: " + "  ".join(f"{k} {v:.1e}" for k, v in worst.items()))


if __name__ == "__main__":
    main()
