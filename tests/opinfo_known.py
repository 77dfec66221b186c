"""Known failures of the OpInfo samples (tests/test_opinfo.py), one line each: what differs.

Keyed (function, variant, dtype) as `opinfo_support.Case.key`. Each entry makes its case a
strict xfail: a fix that makes it pass turns it into an XPASS failure, and the entry goes.
"""

_F, _D, _B = ("f32", "f64", "bf16")


def _each(name, variant, reason, dtypes=(_F, _D, _B)):
    return {(name, variant, d): reason for d in dtypes}


_SDPA_HALF_DELTA = ("q and k gradients off by up to 8% of their scale where scores reach ~80 "
                     "(P near one-hot): the backward's Delta = rowsum(dO * O) reads the stored "
                     "16-bit output, as FlashAttention's does, and dP - Delta cancels there; "
                     "torch's own fused backends miss these samples by as much (H200, f16: "
                     "efficient 5.6e-3, cuDNN 5.8e-3, ours 5.7e-3 of the gradient's scale; "
                     "its math path, which OpInfo compares with, 6.1e-4); an exact Delta "
                     "(rowsum(P * dP)) would cost a second pass over the keys")

#: float64 results where torch's own is the rough one (float constants in its kernels): ours is
#: compared with torch at this relative tolerance (forward and gradients), and with the closed
#: form at 1e-13 by tests/families/test_elementwise_issue32.py::test_f64_exact_where_torch_rounds
TORCH_ROUGH_F64: dict[tuple[str, str], tuple[float, str]] = {
    ("celu", ""): (1e-7, "torch's float64 celu gradient is off the closed form by up to 2e-8 "
                   "for alpha != 1"),
    ("hardsigmoid", ""): (1e-7, "torch's float64 hardsigmoid (CUDA: forward and gradient; "
                          "CPU: gradient) multiplies by a float32 1/6 (off by up to 1.5e-8)"),
    ("hardswish", ""): (1e-7, "torch's float64 hardswish on CUDA multiplies by a float32 1/6"),
}

#: failures of the CPU run (a few samples per case, f32 / f64 / bf16); they hold in the full run
KNOWN_FAILURES: dict[tuple[str, str, str], str] = {
    **_each("as_strided_scatter", "",
            "torch's input gradient is the gradient inside the overwritten region "
            "(as_strided_scatter(zeros(4), src, (2,), (1,)) with grad [1, 2, 3, 4] gives the "
            "input [1, 2, 0, 0]); ours gives it outside, [0, 0, 3, 4], as the definition "
            "(tests/families/test_indexing_rows34_region.py); torch also raises an INTERNAL "
            "ASSERT for non-contiguous inputs requiring grad, and leaves the input unchanged "
            "for a 0-d region where ours writes src"),
}

#: further failures of the full run (every sample, f16 too: BARACUDA_OPINFO_SAMPLES=all, and
#: every CUDA run)
FULL_KNOWN_FAILURES: dict[tuple[str, str, str], str] = {
    ("scaled_dot_product_attention", "", "f16"): _SDPA_HALF_DELTA,
    ("scaled_dot_product_attention", "", _B): _SDPA_HALF_DELTA,
    ("as_strided_scatter", "", "f16"): KNOWN_FAILURES[("as_strided_scatter", "", _F)],
}
#: failures under the interpreter only (its arithmetic); the GPU computes these
INTERPRETER_KNOWN_FAILURES: dict[tuple[str, str, str], str] = {}
#: ... and of its full run
INTERPRETER_FULL_KNOWN_FAILURES: dict[tuple[str, str, str], str] = {
}
