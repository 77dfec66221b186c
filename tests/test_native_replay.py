"""The C replay (backends/native_replay.py): parameter packing as Triton's launcher passes
parameters, re-basing, library calls in order, refusals; on the GPU, that replays through it
give bit-identical results to the Python launch loop and that the common ops use it."""

from __future__ import annotations

import struct
import types

import pytest
import torch

from baracuda.backends import launch_replay as lr
from baracuda.backends import native_replay as nr


@pytest.fixture(scope="module")
def native():
    try:
        return nr.build()
    except Exception as e:  # the product falls back to the Python replay then
        pytest.skip(f"the C replay cannot be built here: {type(e).__name__}: {e}")


def _kernel(signature: dict, meta=(4, 1, 1024), function=0xABC0):
    return types.SimpleNamespace(packed_metadata=meta, function=function,
                                 src=types.SimpleNamespace(signature=signature))


def _f32(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def test_parameters_are_packed_as_tritons_launcher_passes_them(native):
    sig = {"x": "*bf16", "y": "*fp32", "n": "i32", "alpha": "fp32", "BLOCK": "constexpr",
           "flag": "i1", "s": "bf16", "h": "fp16", "d": "fp64", "big": "i64", "u": "u32",
           "null": "*i8", "one": "constexpr"}
    k = _kernel(sig)
    args = (torch.empty(1), torch.empty(1), 1234, -0.75, 128, True, 3.14159, -2.5, 1e300,
            -5, 4000000000, None, 1)
    packed = nr.pack([("kernel", k, (None, False, True), (3, 2, 1), args,
                       ((0, 1, 8), (1, 0, 0)))])
    assert packed is not None
    (launch,) = native.dry_run(*packed, 77, [1000, 2000], None)
    fn, gx, gy, gz, block, shared, flags, words = launch
    assert (fn, gx, gy, gz, block, shared, flags) == (0xABC0, 3, 2, 1, 128, 1024, 1)
    want = [2008, 1000, 1234, _f32(-0.75), 1, _f32(3.14159) >> 16,
            struct.unpack("<H", struct.pack("<e", -2.5))[0],
            struct.unpack("<Q", struct.pack("<d", 1e300))[0], (-5) & (2**64 - 1), 4000000000,
            0, 0, 0]  # the last two: global and profile scratch
    assert list(words) == want
    # a second replay re-bases on the new slots
    (launch,) = native.dry_run(*packed, 77, [5000], [6000])
    assert launch[-1][:2] == (6008, 5000)


@pytest.mark.parametrize("why", ["scratch", "cluster", "descriptor", "tuple", "range",
                                 "overflow", "tensor"])
def test_what_the_packer_does_not_cover_keeps_the_python_replay(why):
    sig = {"x": "*fp32", "n": "i32", "v": "fp32"}
    args = [torch.empty(1), 5, 1.0]
    direct, meta = (None, False, False), (4, 1, 0)
    if why == "scratch":
        direct = None
    elif why == "cluster":
        meta = (4, 2, 0)
    elif why == "descriptor":
        sig["n"] = "tensordesc<fp32[16]>"
    elif why == "tuple":
        sig["n"] = ("i32", "i32")
    elif why == "range":
        args[1] = 2**31
    elif why == "overflow":
        args[2] = 1e300
    else:
        sig["n"] = "*fp32"
        args[1] = torch.empty(1)  # a tensor that is not re-based
    launch = ("kernel", _kernel(sig, meta), direct, (1,), tuple(args), ((0, 0, 0),))
    assert nr.pack([launch]) is None


def test_library_calls_run_in_order_with_rebased_pointers(native):
    seen = []
    calls = [("call", lambda stream, *a: seen.append((stream, a)), None, (), (0, "h", 7),
              ((0, 1, 16),)),
             ("kernel", _kernel({"p": "*fp32"}), (None, False, False), (1,), (0,),
              ((0, 0, 4),)),
             ("call", lambda stream, *a: seen.append((stream, a)), None, (), (9, 0),
              ((1, 0, 0), (0, 1, 0)))]
    packed = nr.pack(calls)
    launches = native.dry_run(*packed, 55, [torch.empty(4)], [300])
    base = launches[0][-1][0] - 4
    assert seen == [(55, (316, "h", 7)), (55, (300, base))]
    assert launches[0][-1] == (base + 4, 0, 0)


def test_malformed_programs_and_slots_raise(native):
    packed = nr.pack([("kernel", _kernel({"p": "*fp32"}), (None, False, False), (1,), (0,),
                       ((0, 3, 0),))])
    with pytest.raises(ValueError, match="slot out of range"):
        native.dry_run(*packed, 0, [1, 2], None)
    with pytest.raises(ValueError, match="malformed"):
        native.dry_run(packed[0][:-8], packed[1], 0, [1, 2, 3, 4], None)
    with pytest.raises(TypeError):
        native.dry_run("not bytes", (), 0, [], None)


def test_a_cpu_machine_keeps_the_python_replay():
    if torch.cuda.is_available():
        pytest.skip("a GPU machine replays natively (tested below)")
    assert nr.module() is None and nr.UNAVAILABLE


def _captured_programs(monkeypatch):
    """The OpProgram each `replayed` call used, by function name."""
    from baracuda.backends import torch_ops

    used = {}
    inner = torch_ops._replay_or_run

    def spy(table, key, name, run, tensors):
        out = inner(table, key, name, run, tensors)
        entry = table.get(key)
        if isinstance(entry, lr.OpProgram):
            used[name] = (entry, list(tensors))
        return out

    monkeypatch.setattr(torch_ops, "_replay_or_run", spy)
    return used


@pytest.mark.gpu
def test_native_replays_equal_the_python_launch_loop_bit_for_bit(monkeypatch):
    import torch.nn.functional as F

    import baracuda.torch as bt

    assert nr.module() is not None, nr.UNAVAILABLE
    used = _captured_programs(monkeypatch)
    dev = "cuda"
    x = torch.randn(37, 993, device=dev, dtype=torch.bfloat16)
    w = torch.randn(993, device=dev, dtype=torch.bfloat16)
    m = torch.randn(256, 993, device=dev, dtype=torch.bfloat16)
    # q, k, v interleaved as a fused projection gives them (their bytes overlap)
    q, k, v = (t.transpose(1, 2) for t in torch.randn(2, 100, 3, 4, 64, device=dev,
                                                      dtype=torch.bfloat16).unbind(2))
    labels = torch.randint(0, 993, (37,), device=dev)
    bias = torch.randn(256, device=dev, dtype=torch.bfloat16)
    calls = [
        ("add", lambda: bt.add(x, w), lambda: x + w),
        ("silu", lambda: bt.silu(x), lambda: F.silu(x)),
        ("softmax", lambda: bt.softmax(x, -1), lambda: x.softmax(-1)),
        ("rms_norm", lambda: bt.rms_norm(x, (993,), w), lambda: F.rms_norm(x, (993,), w)),
        ("linear", lambda: bt.linear(x, m), lambda: F.linear(x, m)),
        ("linear", lambda: bt.linear(x, m, bias), lambda: F.linear(x, m, bias)),
        ("scaled_dot_product_attention",
         lambda: bt.scaled_dot_product_attention(q, k, v, is_causal=True),
         lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
        ("cross_entropy", lambda: bt.cross_entropy(x.float(), labels),
         lambda: F.cross_entropy(x.float(), labels)),
    ]
    with torch.no_grad():
        for name, call, ref in calls:
            used.clear()
            for _ in range(3):
                out = call()
            want = ref().float()
            # (linear's outputs reach ~30, where one bf16 step is 0.125 and bias epilogues
            # differ by a rounding: the tolerance scales with the output)
            torch.testing.assert_close(out.float(), want, rtol=2e-2,
                                       atol=2e-2 * max(1.0, want.abs().max().item()))
            assert f"baracuda.torch.{name}" in used, (name, lr.OP_OUTCOMES)
            program, inputs = used[f"baracuda.torch.{name}"]
            assert program.native is not None, name
            if name == "linear":  # cuBLASLt called from the C loop, not back in Python
                assert program.native[1] and all(
                    c is None or hasattr(c, "acquire") for c in program.native[1]), name
            a = program.replay(inputs)
            native, program.native = program.native, None
            try:
                b = program.replay(inputs)
            finally:
                program.native = native
            torch.cuda.synchronize()
            for got, want in zip(a if isinstance(a, tuple) else (a,),
                                 b if isinstance(b, tuple) else (b,)):
                assert torch.equal(got, want), name


def test_a_cublaslt_call_form_is_made_from_c_with_rebased_pointers(native, monkeypatch):
    """A library call with a registered form becomes a cuBLASLt call of the C loop: its
    words are the form's, its tensors re-based into the places the form names."""

    def run_cell(stream, *args):
        raise AssertionError("the Python callback must not run")

    head = list(range(100, 114))
    monkeypatch.setitem(nr.CALL_FORMS, run_cell,
                        lambda args: (head, {p: 13 + p for p in range(1, 7)}, None))
    packed = nr.pack([("call", run_cell, None, (), ("cell", 0, 0, 0, 0, 0, 0),
                       ((1, 0, 8), (3, 1, 0), (6, 2, 16)))])
    assert packed is not None and packed[1] == (None,)
    (entry,) = native.dry_run(*packed, 9, [1000, 2000], [3000])
    assert entry[0] == 0 and entry[-1] == (*head, 1008, 0, 2000, 0, 0, 3016)
    monkeypatch.setitem(nr.CALL_FORMS, run_cell, lambda args: None)  # declined: Python call
    packed = nr.pack([("call", run_cell, None, (), ("cell", 0), ((1, 0, 0),))])
    with pytest.raises(AssertionError, match="must not run"):
        native.dry_run(*packed, 9, [1000], None)
