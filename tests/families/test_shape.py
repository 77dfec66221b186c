"""The shape family's torch functions against torch: copies (clone, contiguous, the *_copy
views), flip / roll / rot90 / repeat / tile, concatenation and stacking, pixel shuffles,
views that stay views (also across the launch-replay wrapper), gradients in float64, torch's
errors; and at real sizes on the GPU."""

from __future__ import annotations

import pytest
import torch

import baracuda.torch as bt
from baracuda.backends import launch_replay
from baracuda.core.errors import Unsupported
from baracuda.families.shape.descriptors import CopyDescriptor
from baracuda.families.shape.plans import copy_config
from conftest import DEVICE


def _x(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 0.5).to(DEVICE, dtype)


def _layouts(x):
    """x itself, transposed storage, a strided slice of a bigger buffer, a broadcast."""
    yield x
    if x.dim() >= 2:
        yield x.transpose(-1, -2).contiguous().transpose(-1, -2)
    fill = float("nan") if x.is_floating_point() else 7
    big = torch.full([2 * d + 1 for d in x.shape], fill, dtype=x.dtype, device=x.device)
    view = big[tuple(slice(1, 1 + 2 * d, 2) for d in x.shape)]
    view.copy_(x)
    yield view
    if x.dim() and x.shape[0]:
        yield x[:1].expand_as(x)


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


# -- copies --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_clone_and_contiguous_every_layout(dtype):
    for x in _layouts(_x(5, 6, 7).to(dtype)):
        _same(bt.clone(x), x.clone())
        y = bt.contiguous(x)
        assert y.is_contiguous()
        _same(y, x.contiguous())


def test_clone_memory_formats_follow_torch():
    x = _x(2, 3, 5, 4).contiguous(memory_format=torch.channels_last)
    for fmt in (torch.preserve_format, torch.contiguous_format, torch.channels_last):
        got, want = bt.clone(x, memory_format=fmt), x.clone(memory_format=fmt)
        assert got.stride() == want.stride()
        _same(got, want)
    y = bt.contiguous(_x(2, 3, 5, 4), torch.channels_last)
    assert y.is_contiguous(memory_format=torch.channels_last)


def test_contiguous_returns_the_input_itself_when_contiguous():
    x = _x(4, 5)
    assert bt.contiguous(x) is x
    assert bt.contiguous(x.t()).data_ptr() != x.data_ptr()


def test_transposed_and_permuted_copies():
    x = _x(3, 70, 5, 33, dtype=torch.bfloat16)  # [B, S, H, D]
    _same(bt.contiguous(x.permute(0, 2, 1, 3)), x.permute(0, 2, 1, 3).contiguous())
    _same(bt.contiguous(x.permute(3, 1, 0, 2)), x.permute(3, 1, 0, 2).contiguous())
    m = _x(67, 130, dtype=torch.float32)
    _same(bt.contiguous(m.t()), m.t().contiguous())
    cfg = copy_config(CopyDescriptor((130, 67), torch.float32), m.t().stride(), (67, 1))
    assert cfg["transposed"]


def test_high_rank_copies_merge_dims():
    x = _x(*(2,) * 10)
    v = x.transpose(-1, -2)
    _same(bt.contiguous(v), v.contiguous())
    with pytest.raises(Unsupported):
        bt.flip(_x(*(2,) * 9), [0])


def test_wide_offsets_are_chosen_past_int32():
    desc = CopyDescriptor((1 << 16, 1 << 16), torch.bfloat16)
    assert copy_config(desc, (1, 1 << 16), (1 << 16, 1))["WIDE"]
    assert not copy_config(CopyDescriptor((4096, 4096), torch.bfloat16), (1, 4096),
                           (4096, 1))["WIDE"]


COPY_VARIANTS = [
    ("view_copy", ((6, 35),)),
    ("permute_copy", ((2, 0, 1),)),
    ("transpose_copy", (0, 2)),
    ("t_copy", None),
    ("expand_copy", ((4, 5, 6, 7),)),
    ("squeeze_copy", ()),
    ("unsqueeze_copy", (1,)),
    ("diagonal_copy", (1, 1, 2)),
    ("as_strided_copy", ((3, 4), (7, 2), 3)),
    ("unfold_copy", (2, 3, 2)),
    ("unbind_copy", (1,)),
    ("split_with_sizes_copy", ((2, 4), 1)),
    ("alias_copy", ()),
]


@pytest.mark.parametrize("name,args", COPY_VARIANTS, ids=[c[0] for c in COPY_VARIANTS])
def test_copy_variants_match_torch_and_do_not_alias(name, args):
    x = _x(5, 6, 7) if name != "t_copy" else _x(5, 6)
    if name == "expand_copy":
        x = _x(5, 1, 7)
    got = getattr(bt, name)(x, *(args or ()))
    want = getattr(torch, name)(x, *(args or ()))
    for g, w in zip(got, want) if isinstance(want, (tuple, list)) else ((got, want),):
        _same(g, w)
        assert g.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


# -- flip, roll, rot90, repeat, tile -------------------------------------------------------------
@pytest.mark.parametrize("dims", [[0], [1, 2], [-1, 0, 1]])
def test_flip_every_layout(dims):
    for x in _layouts(_x(4, 9, 7)):
        _same(bt.flip(x, dims), torch.flip(x, dims))
    _same(bt.fliplr(_x(3, 4)), torch.fliplr(_x(3, 4)))
    _same(bt.flipud(_x(3, 4)), torch.flipud(_x(3, 4)))


@pytest.mark.parametrize("shifts,dims", [(3, 1), ((2, -5), (0, 2)), (17, None),
                                         ((1, 1), (1, 1)), (-40, 2)])
def test_roll_every_layout(shifts, dims):
    for x in _layouts(_x(4, 9, 7)):
        _same(bt.roll(x, shifts, dims), torch.roll(x, shifts, dims))


@pytest.mark.parametrize("k,dims", [(1, (0, 1)), (2, (1, 2)), (3, (2, 0)), (-1, (0, 2)),
                                    (4, (0, 1))])
def test_rot90(k, dims):
    for x in _layouts(_x(3, 5, 4)):
        _same(bt.rot90(x, k, dims), torch.rot90(x, k, dims))


@pytest.mark.parametrize("sizes", [(2, 1, 3), (1, 2, 3, 1), (3, 0, 1)])
def test_repeat_and_tile(sizes):
    for x in _layouts(_x(3, 4, 5)):
        _same(bt.repeat(x, *sizes), x.repeat(*sizes))
        _same(bt.repeat(x, sizes), x.repeat(sizes))
    _same(bt.tile(_x(3, 4), (2,)), torch.tile(_x(3, 4), (2,)))
    _same(bt.tile(_x(3, 4), (2, 1, 2)), torch.tile(_x(3, 4), (2, 1, 2)))


def test_empty_and_zero_dim():
    z, e = _x(), _x(0, 3)
    _same(bt.clone(z), z.clone())
    _same(bt.flip(z, []), torch.flip(z, []))
    _same(bt.repeat(z, 2, 3), z.repeat(2, 3))
    _same(bt.repeat(e, 2, 3), e.repeat(2, 3))
    _same(bt.flip(e, [1]), torch.flip(e, [1]))
    _same(bt.roll(e, 2, 1), torch.roll(e, 2, 1))
    _same(bt.contiguous(e.t()), e.t().contiguous())


# -- concatenation -------------------------------------------------------------------------------
def test_cat_promotes_skips_legacy_empty_and_takes_many_inputs():
    a, b = _x(3, 4, dtype=torch.float32), _x(3, 2, dtype=torch.int32, seed=1)
    _same(bt.cat([a, b], 1), torch.cat([a, b], 1))
    e = torch.empty(0, device=DEVICE)
    _same(bt.cat([a, e, a.t().contiguous().t()], 0), torch.cat([a, e, a.t().contiguous().t()], 0))
    many = [_x(2, i % 3 + 1, 3, seed=i) for i in range(19)]
    _same(bt.cat(many, 1), torch.cat(many, 1))
    empties = [e, torch.empty(0, dtype=torch.int32, device=DEVICE)]
    _same(bt.cat(empties), torch.cat(empties))
    bools = [torch.tensor([True, False], device=DEVICE),
             torch.tensor([1, 2], dtype=torch.uint8, device=DEVICE)]
    _same(bt.cat(bools), torch.cat(bools))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_every_layout(dim):
    xs = list(_layouts(_x(3, 5)))
    _same(bt.cat(xs, dim), torch.cat(xs, dim))
    _same(bt.concat(xs, dim=dim), torch.concat(xs, dim=dim))
    _same(bt.concatenate(xs, dim), torch.concatenate(xs, dim))


def test_cat_out_and_errors():
    a = _x(2, 3)
    out = torch.empty(0, dtype=torch.float64, device=DEVICE)
    assert bt.cat([a, a], 0, out=out) is out
    _same(out, torch.cat([a, a]))
    if DEVICE.type != "cpu":
        with pytest.raises(RuntimeError, match="Expected out tensor to have device"):
            bt.cat([a, a], 0, out=torch.empty(0, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        bt.cat([a, _x(3, 4)], 0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        bt.cat([a, _x(3)], 0)
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        bt.cat([_x()], 0)
    with pytest.raises(RuntimeError, match="non-empty"):
        bt.cat([], 0)
    with pytest.raises(IndexError):
        bt.cat([a, a], 2)
    with pytest.raises(TypeError):
        bt.cat(a, 0)


@pytest.mark.parametrize("name", ["stack", "hstack", "vstack", "row_stack", "dstack",
                                  "column_stack"])
def test_stacks_match_torch(name):
    for shapes in ([(3,), (3,)], [(2, 3), (2, 3), (2, 3)], [(4,), (4,)]):
        xs = [_x(*s, seed=i) for i, s in enumerate(shapes)]
        _same(getattr(bt, name)(xs), getattr(torch, name)(xs))
    _same(bt.stack([_x(2, 3), _x(2, 3)], -1), torch.stack([_x(2, 3), _x(2, 3)], -1))
    with pytest.raises(RuntimeError):
        bt.stack([_x(2, 3), _x(3, 2)])


# -- shuffles and combinatorics ------------------------------------------------------------------
def test_pixel_and_channel_shuffles():
    F = torch.nn.functional
    x = _x(2, 18, 4, 5)
    _same(bt.pixel_shuffle(x, 3), F.pixel_shuffle(x, 3))
    _same(bt.pixel_unshuffle(_x(2, 3, 6, 4), 2), F.pixel_unshuffle(_x(2, 3, 6, 4), 2))
    _same(bt.channel_shuffle(x, 3), F.channel_shuffle(x, 3))
    with pytest.raises(RuntimeError):
        bt.pixel_shuffle(_x(2, 5, 4, 4), 2)
    a, b, c = _x(3), _x(2, seed=1), _x(4, seed=2)
    _same(bt.cartesian_prod(a, b, c), torch.cartesian_prod(a, b, c))


# -- jnp.delete / jnp.insert (numpy's rules) ---------------------------------------------------
def test_jnp_delete_and_insert_match_numpy():
    np = pytest.importorskip("numpy")
    a = np.arange(12.0).reshape(3, 4) * 1.5 - 2
    t = torch.tensor(a, device=DEVICE)
    pairs = [
        (bt.jnp_delete(t, [0, 2, 3], 1), np.delete(a, [0, 2, 3], 1)),
        (bt.jnp_delete(t, slice(0, 3, 2), 0), np.delete(a, slice(0, 3, 2), 0)),
        (bt.jnp_delete(t, [5, -1]), np.delete(a, [5, -1])),
        (bt.jnp_delete(t, torch.tensor([True, False, True]), 0),
         np.delete(a, np.array([True, False, True]), 0)),
        (bt.jnp_insert(t, 1, 5.0, 1), np.insert(a, 1, 5.0, 1)),
        (bt.jnp_insert(t, 1, torch.tensor([1.0, 2.0, 3.0]), 1), np.insert(a, 1, [1, 2, 3], 1)),
        (bt.jnp_insert(t, [3, 1, 1], torch.tensor([7.0, 8.0, 9.0]), 1),
         np.insert(a, [3, 1, 1], [7, 8, 9], 1)),
        (bt.jnp_insert(t, 2, torch.tensor([7.0, 8.0])), np.insert(a, 2, [7, 8])),
        (bt.jnp_insert(t, 3, torch.tensor([[7.0, 8.0, 9.0, 10.0]]), 0),
         np.insert(a, 3, [[7, 8, 9, 10]], 0)),
    ]
    for got, want in pairs:
        _same(got, torch.tensor(want, device=DEVICE))
    with pytest.raises(IndexError):
        bt.jnp_delete(t, 4, 1)
    with pytest.raises(TypeError):
        bt.jnp_insert(t, 1.5, 0.0, 1)
    x = _x(3, 4).requires_grad_()
    assert torch.autograd.gradcheck(lambda u: bt.jnp_insert(bt.jnp_delete(u, [1], 1), [0, 2],
                                                            u[:, :1] * 2, 1), (x,),
                                    fast_mode=True)


# -- views ---------------------------------------------------------------------------------------
VIEWS = [
    ("reshape", ((6, 35),)), ("view", (6, 35)), ("flatten", (1,)), ("unflatten", (2, (7, 1))),
    ("ravel", ()), ("squeeze", ()), ("unsqueeze", (0,)), ("permute", (2, 0, 1)),
    ("movedim", (0, 2)), ("moveaxis", (1, 0)), ("transpose", (0, 2)), ("swapaxes", (0, 1)),
    ("swapdims", (1, 2)), ("expand", (2, 5, 6, 7)), ("broadcast_to", ((3, 5, 6, 7),)),
    ("diagonal", (0, 1, 2)), ("narrow", (1, 2, 3)), ("as_strided", ((3, 4), (7, 2), 1)),
    ("Tensor.unfold", (2, 3, 2)), ("atleast_3d", ()), ("collapse", (0, 2)),
]


def _fn(name: str):
    owner, _, leaf = name.rpartition(".")
    return getattr(getattr(bt, owner) if owner else bt, leaf)


@pytest.mark.parametrize("name,args", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_alias_their_input_on_every_call(name, args):
    x = _x(5, 6, 7)
    for _ in range(4):  # past the launch-replay wrapper's recording call
        got = _fn(name)(x, *args)
        assert got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    if name == "collapse":
        _same(got, x.reshape(30, 7))
    elif name == "view":
        _same(got, x.view(6, 35))
    elif name in ("expand", "Tensor.unfold", "permute"):
        _same(got, getattr(x, name.removeprefix("Tensor."))(*args))
    else:
        _same(got, getattr(torch, name)(x, *args))


def test_view_tuples_and_splits_alias():
    x = _x(6, 8)
    for name, args in (("split", (2, 1)), ("chunk", (3, 0)), ("tensor_split", (3, 1)),
                       ("hsplit", (2,)), ("vsplit", (3,)), ("unbind", (0,))):
        for _ in range(3):
            parts = getattr(bt, name)(x, *args)
            for p, w in zip(parts, getattr(torch, name)(x, *args)):
                _same(p, w)
                assert p.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert bt.t(x).data_ptr() == x.data_ptr()
    assert bt.broadcast_shapes((3, 1), (1, 4)) == torch.Size([3, 4])


def test_a_view_is_never_recorded_for_replay():
    """The replay wrapper records an op's allocations and launches; a view makes neither, so
    its recording is refused and every call returns the view itself."""
    x = _x(4, 5)
    out, program = launch_replay.record_op("t", lambda: x.t(), [x])
    assert program is None
    assert out.data_ptr() == x.data_ptr()


def test_views_are_differentiable():
    x = _x(3, 4).requires_grad_()
    bt.permute(bt.reshape(x, (2, 6)), (1, 0)).sum().backward()
    _same(x.grad, torch.ones_like(x))


# -- gradients -----------------------------------------------------------------------------------
GRADS = [
    ("clone", lambda t: bt.clone(t.transpose(0, 2))),
    ("flip", lambda t: bt.flip(t, [0, 2])),
    ("roll", lambda t: bt.roll(t, (2, -1), (1, 2))),
    ("roll_flat", lambda t: bt.roll(t, 5)),
    ("rot90", lambda t: bt.rot90(t, 1, (0, 2))),
    ("repeat", lambda t: bt.repeat(t, 2, 1, 3)),
    ("tile", lambda t: bt.tile(t, (2, 2))),
    ("expand_copy", lambda t: bt.expand_copy(t[:, :1], (2, 3, 4, 5))),
    ("permute_copy", lambda t: bt.permute_copy(t, (2, 0, 1))),
    ("cat", lambda t: bt.cat([t, t.flip(0), t[:1]], 0)),
    ("stack", lambda t: bt.stack([t, t * 2], 1)),
    ("pixel_shuffle", lambda t: bt.pixel_shuffle(t.reshape(1, 12, 1, 5), 2)),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_float64(name, fn):
    x = _x(3, 4, 5).requires_grad_()
    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-9, fast_mode=True)


def test_expand_and_repeat_gradients_are_deterministic():
    x = _x(3, 1, 5, dtype=torch.float32).requires_grad_()
    dy = _x(4, 3, 7, 5, dtype=torch.float32, seed=3)
    grads = []
    for _ in range(2):
        x.grad = None
        bt.expand_copy(x, (4, 3, 7, 5)).backward(dy)
        grads.append(x.grad.clone())
    assert torch.equal(grads[0], grads[1])
    torch.testing.assert_close(grads[0], dy.sum((0, 2), keepdim=True)[0], rtol=1e-6, atol=1e-5)


def test_long_sums_over_few_outputs_are_chunked_and_deterministic():
    from baracuda.families.shape.descriptors import SumDimsDescriptor
    from baracuda.families.shape.plans import sum_parts

    assert sum_parts(SumDimsDescriptor((3000, 3), (0,), torch.float32))[2] > 1
    x = _x(1, 3, dtype=torch.float32).requires_grad_()
    dy = _x(3000, 3, dtype=torch.float32, seed=5)
    grads = []
    for _ in range(2):
        x.grad = None
        bt.expand_copy(x, (3000, 3)).backward(dy)
        grads.append(x.grad.clone())
    assert torch.equal(grads[0], grads[1])
    torch.testing.assert_close(grads[0].double(), dy.double().sum(0, keepdim=True),
                               rtol=1e-5, atol=1e-4)


def test_compile_fullgraph_with_gradients():
    def f(x, y):
        return (bt.cat([bt.flip(x, [0]), bt.roll(y, 1, 0)], 1).sum() + bt.repeat(x, 2, 1).sum()
                + bt.contiguous(x.t()).sum())

    x, y = _x(3, 4).requires_grad_(), _x(3, 2, seed=1)
    out = torch.compile(f, fullgraph=True)(x, y)
    out.backward()
    torch.testing.assert_close(out, f(x.detach(), y))
    _same(x.grad, torch.full_like(x, 4.0))


# -- errors --------------------------------------------------------------------------------------
def test_torch_errors():
    x = _x(3, 4)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims"):
        bt.repeat(x, 2)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        bt.roll(x, (1, 2), 0)
    with pytest.raises(RuntimeError, match="expected total rotation dims"):
        bt.rot90(x, 1, (0,))
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        bt.fliplr(_x(3))
    with pytest.raises(IndexError):
        bt.flip(x, [2])
    with pytest.raises(RuntimeError):
        bt.flip(x, [0, 0])


def test_benches_construct():
    from baracuda.families.shape.spec import shape_benches

    rows = shape_benches(True)
    assert {r.name for r in rows} >= {"contiguous x.t()", "permute(0,2,1,3).contiguous()",
                                      "clone", "cat of 2 dim=1", "cat of 8 dim=1",
                                      "flip dim=-1", "repeat(2, 1)"}
    assert all(r.bytes >= 256 * 2**20 for r in rows)


# -- GPU, real sizes ------------------------------------------------------------------------------
@pytest.mark.gpu
def test_real_sizes_on_gpu():
    x = torch.randn(16, 4096, 32, 128, device="cuda", dtype=torch.bfloat16)
    assert torch.equal(bt.contiguous(x.permute(0, 2, 1, 3)), x.permute(0, 2, 1, 3).contiguous())
    m = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16)
    assert torch.equal(bt.contiguous(m.t()), m.t().contiguous())
    assert torch.equal(bt.flip(m, (-1,)), m.flip(-1))
    assert torch.equal(bt.roll(m, (1000, 7), (1, 0)), m.roll((1000, 7), (1, 0)))
    assert torch.equal(bt.cat([m, m[:, :4096]], 1), torch.cat([m, m[:, :4096]], 1))
    assert torch.equal(bt.repeat(m[:4096], 2, 1), m[:4096].repeat(2, 1))
