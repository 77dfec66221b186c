"""Core mechanics: vocabulary, validators, layout collapsing, tolerance comparison, selection."""

from __future__ import annotations

import pytest
import torch

import baracuda as bc
from baracuda.core import validate as V
from baracuda.core.errors import (
    BaracudaError,
    BufferTooSmall,
    InvalidProblem,
    MisalignedOperand,
    Unsupported,
    WorkspaceTooSmall,
)
from baracuda.core.layout import axis_view, collapse_dims
from baracuda.core.tolerance import Tolerance, compare


def test_error_hierarchy_matches_python_conventions():
    assert issubclass(bc.InvalidProblem, ValueError)
    assert issubclass(bc.InvalidProblem, BaracudaError)
    assert issubclass(bc.Unsupported, NotImplementedError)
    assert issubclass(bc.BackendError, RuntimeError)
    # a wrong argument type: torch's TypeError, and one of ours (an InvalidProblem)
    assert issubclass(bc.ArgumentTypeError, TypeError)
    assert issubclass(bc.ArgumentTypeError, bc.InvalidProblem)
    assert bc.errors.ArgumentTypeError is bc.ArgumentTypeError
    e = WorkspaceTooSmall("P", needed=10, got=3)
    assert (e.needed, e.got) == (10, 3) and "10" in str(e) and "3" in str(e)
    b = BufferTooSmall("P: x", 8, 4)
    assert (b.needed, b.got) == (8, 4)
    assert bc.errors.InvalidProblem is InvalidProblem


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64,
                                   torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                                   torch.bool])
def test_element_kind_round_trips_torch_dtypes(dtype):
    kind = bc.ElementKind.of(dtype)
    assert kind.torch_dtype is dtype and bc.ElementKind.of(kind.value) is kind
    assert kind.itemsize == dtype.itemsize


def test_element_kind_rejects_unknown():
    with pytest.raises(Unsupported, match="complex64"):
        bc.ElementKind.of(torch.complex64)
    with pytest.raises(InvalidProblem):
        bc.ElementKind.of("f17")


def test_compute_kind_and_guarantee_defaults():
    assert bc.ElementKind.BF16.compute_kind is bc.ElementKind.F32
    assert bc.ElementKind.F64.compute_kind is bc.ElementKind.F64
    g = bc.PrecisionGuarantee.for_element(bc.ElementKind.F16)
    assert g.accumulator is bc.ElementKind.F32 and g.deterministic
    exact = bc.PrecisionGuarantee.for_element(bc.ElementKind.I32).math_precision
    assert exact is bc.MathPrecision.EXACT


def test_validators_raise_typed_errors_with_what_expected_got():
    with pytest.raises(InvalidProblem, match=r"P: shape\[1\] must be >= 0, got -2"):
        V.check_shape("P", "shape", (3, -2))
    with pytest.raises(InvalidProblem, match="must be an int"):
        V.check_shape("P", "shape", (3, 2.0))
    with pytest.raises(Unsupported, match="rank"):
        V.check_rank("P", "shape", (1,) * 9)
    assert V.check_axis("P", "axis", -1, 3) == 2
    with pytest.raises(InvalidProblem, match=r"\[-3, 3\)"):
        V.check_axis("P", "axis", 3, 3)
    assert V.check_suffix_axes("P", "norm_axes", (-1, 2), 4) == (2, 3)
    with pytest.raises(InvalidProblem, match="suffix"):
        V.check_suffix_axes("P", "norm_axes", (1,), 4)
    with pytest.raises(InvalidProblem, match="suffix"):
        V.check_suffix_axes("P", "norm_axes", (), 4)
    for bad in (float("nan"), float("inf"), "1", True):
        with pytest.raises(InvalidProblem, match="finite"):
            V.check_finite("P", "eps", bad)
    with pytest.raises(InvalidProblem, match="> 0"):
        V.check_positive("P", "eps", 0.0)


def test_tensor_device_and_overlap_checks():
    x = torch.randn(4, 6)
    with pytest.raises(InvalidProblem, match=r"x.shape \(4, 6\) != expected \(4, 7\)"):
        V.check_tensor("P", "x", x, (4, 7))
    with pytest.raises(InvalidProblem, match="dtype"):
        V.check_tensor("P", "x", x, (4, 6), bc.ElementKind.BF16)
    with pytest.raises(Unsupported, match="CUDA"):
        V.check_one_device("P", {"x": x}, allow_cpu=False)
    V.check_one_device("P", {"x": x, "y": x}, allow_cpu=True)
    with pytest.raises(InvalidProblem, match="partially overlaps"):
        V.check_no_overlap("P", "y", x[1:], "x", x[:2])
    with pytest.raises(InvalidProblem, match="aliases"):
        V.check_no_overlap("P", "y", x, "x", x)
    V.check_no_overlap("P", "y", x, "x", x, allow_exact_alias=True)
    V.check_no_overlap("P", "y", x[:, :3], "x", x[:, 3:].clone())
    with pytest.raises(InvalidProblem, match="overlapping"):
        V.check_output_writable("P", "y", torch.randn(1, 5).expand(3, 5))
    V.check_output_writable("P", "y", x.t())
    with pytest.raises(InvalidProblem, match="element must be an ElementKind, got 'f32'"):
        V.check_element("P", "element", "f32", [bc.ElementKind.F32])
    with pytest.raises(InvalidProblem, match="flag must be a bool, got 1"):
        V.check_bool("P", "flag", 1)
    V.check_kind("P", "element", bc.ElementKind.BF16)
    # step-sliced views whose strides interleave without sharing an element are writable;
    # views whose rows overlap are not
    V.check_output_writable("P", "y", torch.zeros(2, 3, 4, 5, 6, 7)[:, ::2, :, :, ::2, 1:])
    with pytest.raises(InvalidProblem, match="overlapping"):
        V.check_output_writable("P", "y", torch.zeros(10).as_strided((3, 3), (2, 1)))
    with pytest.raises(WorkspaceTooSmall):
        V.check_workspace("P", torch.empty(3, dtype=torch.uint8), 4)
    with pytest.raises(MisalignedOperand):
        V.check_alignment("P", "x", torch.randn(10)[1:], 16)
    with pytest.raises(BufferTooSmall):
        V.check_numel_fits("P", "x", torch.randn(10)[4:], 8)


def test_collapse_dims_merges_only_shared_contiguity():
    assert collapse_dims((4, 5, 6), [(30, 6, 1)]) == ((120,), ((1,),))
    # second operand transposed in the last two dims: nothing merges across them
    shape, strides = collapse_dims((4, 5, 6), [(30, 6, 1), (30, 1, 5)])
    assert shape == (4, 5, 6) and strides == ((30, 6, 1), (30, 1, 5))
    # broadcast (stride 0) dims merge with each other
    assert collapse_dims((3, 4, 5), [(0, 0, 1)]) == ((12, 5), ((0, 1),))
    assert collapse_dims((1, 1), [(5, 1)]) == ((1,), ((1,),))
    assert collapse_dims((3, 0, 2), [(0, 2, 1)])[0] == (0,)


def test_axis_view_of_strided_tensor_addresses_every_line():
    base = torch.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    t = base.permute(0, 2, 1, 3)[:, ::2]  # (2, 2, 3, 5), not contiguous
    view = axis_view(tuple(t.shape), [t], 2)
    assert view.rows == 2 * 2 * 5 and view.extent == 3
    # every line start, reconstructed from the collapsed outer dims, lands on t[..., 0, ...]
    starts = set()
    flat = t.storage_offset()
    import itertools
    for idx in itertools.product(*[range(d) for d in view.outer_shape]):
        starts.add(flat + sum(i * s for i, s in zip(idx, view.outer_strides[0])))
    expected = {t.storage_offset() + a * t.stride(0) + b * t.stride(1) + c * t.stride(3)
                for a in range(2) for b in range(2) for c in range(5)}
    assert starts == expected


def test_compare_catches_nan_inf_and_scaled_error():
    ref = torch.tensor([1.0, float("nan"), float("inf"), -2.0], dtype=torch.float64)
    good = ref.clone().float()
    assert compare(good, ref, Tolerance(1e-6, 1e-6)).ok
    bad = good.clone()
    bad[1] = 0.0
    assert not compare(bad, ref, Tolerance(1e-6, 1e-6)).ok
    bad = good.clone()
    bad[2] = -float("inf")
    assert not compare(bad, ref, Tolerance(1e-6, 1e-6)).ok
    bad = good.clone()
    bad[0] = 1.01
    assert not compare(bad, ref, Tolerance(1e-6, 1e-6)).ok
    assert compare(bad, ref, Tolerance(1e-2, 1e-2)).ok
    assert not compare(torch.tensor([1, 2]), torch.tensor([1, 3]), Tolerance(0, 0)).ok


def test_compare_error_scale_of_a_cancelling_result():
    """A result that cancels (terms ~1, result ~1e-5) carries the terms' rounding: atol is
    measured against the terms' size when the case gives it, else against the result's."""
    ref = torch.tensor([1e-5, -2e-5], dtype=torch.float64)
    got = ref + 1e-7  # f32 rounding of terms of size 1
    tol = Tolerance(2e-6, 2e-5)
    assert not compare(got, ref, tol).ok
    assert compare(got, ref, tol, scale=1.0).ok
    assert not compare(ref + 1e-4, ref, tol, scale=1.0).ok  # a real error still fails


def test_select_validates_descriptor_type_and_caches():
    d = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, [4, 8], -1, torch.bfloat16)
    assert d.input_shape == (4, 8) and d.element is bc.ElementKind.BF16  # normalized
    assert bc.SoftmaxPlan.select(d) is bc.SoftmaxPlan.select(d)
    with pytest.raises(InvalidProblem, match="SoftmaxDescriptor"):
        bc.SoftmaxPlan.select(bc.SoftmaxBackwardDescriptor(bc.SoftmaxKind.SOFTMAX, (4,), 0, "f32"))


def test_preference_that_excludes_every_candidate_lists_reasons():
    d = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, (4, 8), 1, "f32")
    with pytest.raises(Unsupported) as info:
        bc.SoftmaxPlan.select(d, bc.PlanPreference(prefer_backend=bc.BackendKind.CUDNN))
    msg = str(info.value)
    assert "SoftmaxPlan" in msg and "triton_line_softmax" in msg and "cudnn" in msg
    assert bc.SoftmaxPlan.select(d, bc.PlanPreference(require_deterministic=True,
                                                      max_workspace_bytes=0))


def test_run_on_empty_problem_launches_nothing_and_checks_args_first():
    from conftest import DEVICE

    d = bc.SoftmaxDescriptor(bc.SoftmaxKind.SOFTMAX, (0, 8), 1, "f32")
    plan = bc.SoftmaxPlan.select(d)
    plan.run(bc.SoftmaxArgs(torch.empty(0, 8, device=DEVICE), torch.empty(0, 8, device=DEVICE)))
    with pytest.raises(InvalidProblem, match="y.shape"):
        plan.run(bc.SoftmaxArgs(torch.empty(0, 8, device=DEVICE),
                                torch.empty(1, 8, device=DEVICE)))


def test_public_names_are_reexported():
    for name in ("Plan", "Descriptor", "Args", "KernelSku", "PlanPreference", "InvalidProblem",
                 "SoftmaxPlan", "SoftmaxBackwardPlan", "SoftmaxKind"):
        assert name in bc.__all__ and hasattr(bc, name)


@pytest.mark.gpu
def test_fast_launch_reuses_the_compiled_kernel_and_follows_specialization():
    """The cached launch path gives Triton's results, and a new specialization (alignment,
    dtype, constexpr) compiles instead of reusing a wrong kernel."""
    import triton
    import triton.language as tl

    from baracuda.backends import triton_support as ts

    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, k, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * k, mask=m)

    import sys
    import types

    mod = types.ModuleType("baracuda.families._fast_launch_probe")
    mod.scale_kernel = scale_kernel
    sys.modules[mod.__name__] = mod
    try:
        assert ts.enable_fast_launch(mod.__name__) == 1
        for dtype in (torch.float32, torch.float16):
            for offset in (0, 1):  # 1: the pointer is no longer 16-byte aligned
                x = torch.randn(1001, device="cuda", dtype=dtype)[offset:]
                # k = 1 is a constexpr to Triton and a float is another type: each must get
                # its own compiled kernel, not the k = 3 one
                for k in (3, 1, 2.5):
                    for _ in range(3):
                        y = torch.full_like(x, float("nan"))
                        scale_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), k,
                                                                    BLOCK=256)
                        torch.testing.assert_close(y, x * k)
        table = scale_kernel.__dict__.get("_baracuda_launch_table", {})
        assert len(table) == 12, list(table)
    finally:
        del sys.modules[mod.__name__]


def test_row_major_strides_are_torchs_contiguous_strides():
    from baracuda.core.layout import row_major_strides

    for shape in ((), (5,), (3, 7), (2, 0, 3), (0,), (4, 1, 6, 2), (1, 1)):
        assert row_major_strides(shape) == torch.empty(shape).stride(), shape


def test_broadcast_shapes_matches_torch():
    from baracuda.core.layout import broadcast_shapes

    for shapes in [((2, 3), (3,)), ((1,), (4, 1, 5)), ((), (3,)), ((0, 1), (1, 5)),
                   ((2, 1), (1, 3), (4, 1, 1))]:
        assert broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))
    for shapes in [((2, 3), (4,)), ((2, 1), (3,), (4, 1))]:
        with pytest.raises(RuntimeError) as ours:
            broadcast_shapes(*shapes)
        with pytest.raises(RuntimeError) as theirs:
            torch.broadcast_shapes(*shapes)
        assert str(ours.value) == str(theirs.value)


def test_stride_alignment_is_typed_and_says_what_expected_got():
    t = torch.empty(3, 69)[:, :64]  # rows 69 f32 apart: not a multiple of 4 elements (16 B)
    with pytest.raises(bc.MisalignedOperand, match=r"P: q outer strides .* multiples of 4 "
                                                   r"elements \(16 bytes\), got \(69, 1\)"):
        V.check_stride_alignment("P", "q", t, 16)
    V.check_stride_alignment("P", "q", torch.empty(3, 68)[:, :64], 16)  # 68 = 17 x 4: fine
    V.check_stride_alignment("P", "q", torch.empty(1, 69)[:, :64], 16)  # one row: no step
    V.check_stride_alignment("P", "q", torch.empty(0, 69), 16)  # empty: nothing to check
    with pytest.raises(bc.MisalignedOperand):  # a zero (broadcast) row stride
        V.check_stride_alignment("P", "q", torch.empty(1, 64).expand(3, 64), 16)


def test_index_range_check_wraps_and_traces():
    """core.validate.first_out_of_range: [0, n) or, with wrap, [-n, n) (index_put's rule);
    under torch.compile it asserts on the device instead of reading the value (fullgraph)."""
    from baracuda.core import validate as V

    idx = torch.tensor([0, -3, 2])
    assert V.first_out_of_range(idx, 3) == -3
    assert V.first_out_of_range(idx, 3, wrap=True) is None
    assert V.first_out_of_range(torch.tensor([1, -4]), 3, wrap=True) == -4
    assert V.first_out_of_range(torch.tensor([5, 1]), 3, ignore=5) is None
    traced = torch.compile(lambda i: V.first_out_of_range(i, 3, wrap=True) is None,
                           backend="aot_eager", fullgraph=True)
    assert traced(idx)
    with pytest.raises(RuntimeError, match="index out of range"):
        traced(torch.tensor([7]))
    with pytest.raises(ValueError, match="too few"):
        V.host_check(torch.tensor(False), ValueError, "too few")


def test_a_family_may_register_several_bench_functions():
    from baracuda.core import registry

    registry.register_bench("_test_family")(lambda quick: ["a"])
    registry.register_bench("_test_family")(lambda quick: ["b", "c"])
    try:
        assert registry.benches("_test_family")["_test_family"](True) == ["a", "b", "c"]
    finally:
        registry._BENCHES.pop("_test_family")


def test_broadcast_shapes_traces_under_compile():
    from baracuda.core.layout import broadcast_shapes

    def f(x):
        return x.reshape(broadcast_shapes(x.shape, (1, 3)))

    x = torch.ones(2, 3)
    torch._dynamo.reset()
    assert torch.compile(f, backend="eager", fullgraph=True)(x).shape == (2, 3)
    assert broadcast_shapes() == ()
class _CountingPlan:
    """A stand-in plan writing its call count: `stable` plans write the same value each run."""

    stable = True
    calls = 0

    @classmethod
    def select(cls, desc, preference=None):
        return cls()

    def workspace_size(self):
        return 0

    def run(self, args, workspace=None):
        type(self).calls += 1
        args.y.fill_(1.0 if self.stable else float(type(self).calls))


class _FlakyPlan(_CountingPlan):
    stable = False


@pytest.mark.parametrize("plan,identical", [(_CountingPlan, True), (_FlakyPlan, False)])
def test_reruns_compare_bit_for_bit(plan, identical):
    from types import SimpleNamespace

    from baracuda.core.spec import _reruns_identical

    y = torch.zeros(3)
    args = SimpleNamespace(y=y, outputs=lambda: {"y": y}, tensors=lambda: {"y": y})
    case = SimpleNamespace(desc=None, preference=None)
    start = {"y": y.clone()}
    plan.select(None).run(args)
    assert _reruns_identical(plan, case, args, start, 2) is identical


class _AccumulatingPlan(_CountingPlan):
    """An in-out output (a running statistic): y += 1, deterministic from a given start."""

    def run(self, args, workspace=None):
        args.y.add_(1.0)


def test_reruns_start_from_the_first_runs_state():
    from types import SimpleNamespace

    from baracuda.core.spec import _reruns_identical

    y = torch.zeros(3)
    args = SimpleNamespace(y=y, outputs=lambda: {"y": y}, tensors=lambda: {"y": y})
    case = SimpleNamespace(desc=None, preference=None)
    start = {"y": y.clone()}
    _AccumulatingPlan().run(args)
    assert _reruns_identical(_AccumulatingPlan, case, args, start, 2)
