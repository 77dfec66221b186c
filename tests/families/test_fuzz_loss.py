"""Differential fuzzing of baracuda.torch.cross_entropy / nll_loss against torch
(tests/fuzz.py).

Ours is a documented superset of torch in one way, which the cases respect: int32 class-index
targets, and uint8 ones at any rank (torch takes int64, and uint8 only for (C,) / (N, C)
inputs): torch is given the same targets as int64 there. A class index outside [0, C) (not
ignore_index) raises torch's IndexError on the CPU, as torch (CUDA fails a device-side assert,
which would end the process: these cases are drawn on the CPU only, `_check_out_of_range`).

Local helpers beside tests/fuzz.py: `_check_both_raise` (an error differential() cannot
see: its torch reference runs on float64 copies, so a weight of the wrong dtype passes there)
and `_check_out_of_range`. Where torch itself is inconsistent the cases steer clear (comments
at each): the gradient of an ignored all -inf sample, the mean over no kept sample of a (C,)
input on CUDA, f16 sums that overflow, uint8 targets where torch wants int64, a weight of
another dtype beside an empty input on CUDA.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F

import baracuda.torch as bt
from fuzz import ON_GPU, case_ids, differential, dims_for, floats, random_layout, rng_for

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
REDUCTIONS = ["none", "mean", "sum"]
CPU_SAMPLES = 40


def _shape(r: random.Random) -> tuple[list[int], int]:
    """(input shape, class axis): (C,), (N, C) or (N, C, d1, ..., dk), k <= 5."""
    if ON_GPU and r.random() < 0.15:  # long class lines: the GPU's looping / smem kernels
        C = r.choice([16385, 32768, 50257, 131072, 262144, r.randint(8193, 262144)])
        N = r.randint(1, max(1, min(256, 64_000_000 // C)))
        return [N, C], 1
    if not ON_GPU and r.random() < 0.04:  # the looping variant of ce_kernel, kept small
        return [r.randint(1, 2), r.randint(4097, 20000)], 1
    pick = r.random()
    if pick < 0.12:
        return [r.choice([1, 2, 3, 7, 33, r.randint(1, 700)])], 0
    rank = 2 if pick < 0.55 else r.randint(3, 7)
    long = 4000 if ON_GPU else 300
    shape = dims_for(r, rank, long, 2_000_000 if ON_GPU else 2_500)
    if shape[1] == 0:  # torch needs at least one class; keep the rest of the shape
        shape[1] = r.randint(1, 9)
    # the interpreter runs a program per sample line (~10 ms each): few samples on the CPU
    while not ON_GPU and math.prod(shape) // shape[1] > CPU_SAMPLES:
        i = max((k for k in range(rank) if k != 1), key=lambda k: shape[k])
        shape[i] = max(1, shape[i] // 2)
    return shape, 1


def _class_targets(r: random.Random, sample: list[int], C: int, index_dtype, ignore: str,
                   out_of_range: bool) -> tuple[torch.Tensor, int]:
    """Class indices in [0, C) (int64 drawn, then cast); `ignore`: "none" (default -100, no
    target ignored), "-100" (some targets -100), "class" (a class present in the targets),
    "other" (an index outside [0, C), some targets set to it)."""
    g = torch.Generator().manual_seed(r.getrandbits(62))
    t = torch.randint(0, C, tuple(sample), generator=g)
    ignore_index = -100
    flat = t.view(-1)
    n = flat.numel()
    if n and ignore == "-100":
        flat[torch.rand(n, generator=g) < r.choice([0.2, 0.5, 1.0])] = -100
    elif n and ignore == "class":
        ignore_index = int(flat[r.randrange(n)])
    elif n and ignore == "other":
        ignore_index = r.choice([-1, C, C + 7])
        flat[torch.rand(n, generator=g) < 0.3] = ignore_index
    if out_of_range and n:
        if index_dtype == torch.uint8:  # representable: uint8 is drawn for C <= 200 only
            bad = r.choice([C, C + 3, 255])
        else:
            bad = r.choice([C, C + 3, -1, -2]) if ignore_index != -1 else r.choice([C, -2])
            if bad == ignore_index:
                bad = C + 11
        flat[r.randrange(n)] = bad
    return t.to(index_dtype), ignore_index


def _weight(r: random.Random, C: int, dtype) -> torch.Tensor:
    w = floats(r, [C], torch.float64).abs() + 0.05
    if r.random() < 0.1:  # torch takes any weights, negative ones too
        w = w * torch.where(torch.rand(C, generator=torch.Generator().manual_seed(C)) < 0.3,
                            -1.0, 1.0).to(w)
    if r.random() < 0.2:  # some classes weighted 0
        w = w * (torch.rand(C, generator=torch.Generator().manual_seed(r.getrandbits(62)))
                 .to(w.device) < 0.7)
    return w.to(dtype)


def _invalid_kind(r: random.Random, prob: bool, nll: bool) -> str | None:
    """About 8% of the cases break one of torch's rules."""
    if r.random() >= 0.08:
        return None
    kinds = ["weight_len", "target_shape", "weight_dtype"]
    if not nll:
        kinds.append("smoothing")
    if prob:
        kinds.append("prob_ignore_index")
    elif not ON_GPU:  # torch device-asserts on CUDA for these: CPU only
        kinds += ["out_of_range"] * 2
    return r.choice(kinds)


def _bad_target_shape(r: random.Random, t: torch.Tensor) -> torch.Tensor:
    """The same target with one extent changed or one dim added / removed."""
    choice = r.random()
    if choice < 0.4 and t.dim() > 0:
        i = r.randrange(t.dim())
        shape = list(t.shape)
        shape[i] = shape[i] + 1
        return torch.zeros(shape, dtype=t.dtype, device=t.device)
    if choice < 0.7 and t.dim() > 0:
        return t.select(-1, 0).clone() if t.shape[-1] else t.new_zeros(t.shape[:-1])
    return t.unsqueeze(0).expand(2, *t.shape).clone()


def _grad_terms(t, w, axis: int, prob: bool, ignore_index: int, reduction: str) -> float:
    """The size of the terms of cross_entropy's gradient (p A - a) g / denominator, per unit
    upstream gradient: p A and a cancel for a confident sample (p ~ 1 at the target), so its
    error is relative to them, not to the small result."""
    w64 = None if w is None else w.detach().double().cpu()
    wmax = float(w64.abs().max()) if w64 is not None and w64.numel() else 1.0
    t64 = t.detach().cpu()
    spread = 1.0
    if prob and t64.numel():
        spread = max(1.0, float(t64.double().abs().sum(axis).max()))
    denom = 1.0
    if reduction == "mean":
        if prob:
            denom = max(1, t64.numel() // max(t64.shape[axis], 1))
        else:
            kept = t64.long().flatten()
            kept = kept[kept != ignore_index]
            denom = float(w64[kept].sum().abs()) if w64 is not None else float(kept.numel())
    return wmax * spread / max(denom, 1e-300)


def _check_both_raise(ours, theirs, inputs, describe: str) -> None:
    """Where differential() cannot tell (torch's reference run sees float64 copies of every
    float input): torch raises on the inputs as given, and so does ours."""
    import baracuda as bc

    try:
        theirs(*[x.detach() if isinstance(x, torch.Tensor) else x for x in inputs])
    except (ValueError, RuntimeError):
        pass
    else:
        raise AssertionError(f"{describe}: drawn as invalid, but torch accepts it")
    try:
        ours(*inputs)
    except bc.BaracudaError:
        return
    raise AssertionError(f"{describe}: torch raises, but ours returned a result")


def _check_out_of_range(ours, inputs, describe: str) -> None:
    """Out-of-range class index: torch's IndexError ("Target 99 is out of bounds."), or an
    error torch's own argument checks raise first (a wrong shape drawn beside it)."""
    try:
        out = ours(*inputs)
    except IndexError as e:
        assert "is out of bounds" in str(e), f"{describe}: {e}"
        return
    except (ValueError, RuntimeError):
        return
    raise AssertionError(f"{describe}: a class index out of range raised nothing: {out}")


def _common(r: random.Random, case: int, nll: bool):
    dtype = r.choice(DTYPES)
    shape, axis = _shape(r)
    C = shape[axis]
    sample = [d for i, d in enumerate(shape) if i != axis]
    prob = not nll and r.random() < 0.3
    invalid = _invalid_kind(r, prob, nll)
    reduction = r.choice(REDUCTIONS)
    smoothing = 0.0 if nll else r.choice([0.0, 0.0, 0.1, 0.3])
    if invalid == "smoothing":
        # torch raises above 1 only: a negative or NaN value is no smoothing there (and here)
        smoothing = r.choice([-0.1, 1.5, float("nan")])
    scale = r.choice([0.5, 3.0, 20.0])
    x = floats(r, shape, torch.float64, scale=scale, offset=r.choice([0.0, 0.0, 40.0]))
    if nll and r.random() < 0.7:  # nll_loss is fed log-probabilities in practice
        x = torch.log_softmax(x, axis) if x.numel() else x
    mask = None
    if x.numel() and r.random() < 0.1:  # masked logits, sometimes whole class lines
        mask = torch.rand(x.shape, generator=torch.Generator().manual_seed(case)) < 0.3
        if r.random() < 0.7:
            mask.select(axis, 0).fill_(False)
    # probability targets and weights may have other float dtypes (torch promotes)
    t_dtype = w_dtype = dtype
    if prob:
        t = floats(r, shape, torch.float64, scale=2.0)
        # spread or nearly one-hot distributions, or any non-negative values (torch needs no
        # normalization)
        sharp = r.choice([1.0, 1.0, 8.0])
        t = torch.softmax(t * sharp, axis) if r.random() < 0.7 else t.abs() / max(C, 1) * 2
        if r.random() < 0.15:
            t_dtype = r.choice(DTYPES)
        if r.random() < 0.1:
            w_dtype = r.choice(DTYPES)
        t = t.to(t_dtype)
        index_dtype = None
        ignore_index = r.choice([-100, -100, -1])
        if invalid == "prob_ignore_index":
            ignore_index = r.randint(0, C - 1)
    else:
        pick = r.random()
        index_dtype = torch.int64 if pick < 0.75 else torch.int32 if pick < 0.95 else None
        ignore = r.choice(["none", "none", "-100", "class", "other"])
        if index_dtype is None:
            index_dtype = torch.uint8 if C <= 200 else torch.int64
            if ignore != "none":
                ignore = "none"
        t, ignore_index = _class_targets(r, sample, C, index_dtype, ignore,
                                         invalid == "out_of_range")
    if x.numel() and r.random() < 0.15:
        # confident predictions (the target class's logit far above the rest): losses near 0,
        # where rounding lse = m + log(s) to the ulp of m would show. Not far in f64: there
        # the reference is torch's own f64 result, and a loss log(s), s = 1 + tiny, is known
        # to ~1e-16 absolute in either (torch's own error reads 0 only as the reference)
        cls = t.argmax(axis) if prob else t.long().clamp(0, C - 1)
        hot = F.one_hot(cls.to(x.device), C).to(x).movedim(-1, axis)
        x = x + (8.0 if dtype == torch.float64 else r.choice([8.0, 30.0])) * hot
    if mask is not None:
        if not prob and not nll and mask.dim() > 1:
            # an ignored sample of all -inf logits: torch's gradient there is NaN (its
            # log_softmax backward multiplies NaN by the 0 upstream), ours 0 by design
            # (kernels_smem.py: "an ignored sample: 0, whatever its logits"): not compared
            mask.select(axis, 0).masked_fill_(t.to(mask.device) == ignore_index, False)
        elif not prob and not nll and int(t) == ignore_index:
            mask[0] = False
        x = x.masked_fill(mask.to(x.device), float("-inf"))
    x = random_layout(r, x.to(dtype)).requires_grad_(r.random() < 0.85)
    if ON_GPU and x.dim() == 1 and not prob and reduction == "mean" and int(t) == ignore_index:
        # torch's CUDA kernel for a (C,) input gives 0 for the mean over no kept sample;
        # its CPU and batched kernels give NaN (0 / 0), as ours does everywhere
        reduction = "sum"
    if dtype == torch.float16 and reduction == "sum" and t.numel() > 256:
        # the sum of thousands of losses overflows f16 (torch's too, which differential()
        # cannot credit): the mean keeps the same kernels' coverage
        reduction = "mean"
    if invalid == "out_of_range" and t.numel() == 0:
        invalid = None  # no sample to put a bad class index in
    if invalid == "target_shape":
        t = _bad_target_shape(r, t)
    t = random_layout(r, t.to(x.device))
    if invalid == "weight_dtype" and ON_GPU and x.numel() == 0:
        # torch's CUDA cross_entropy returns an empty input's loss before it checks the
        # weight's dtype (GPU fuzz case 20214); its CPU kernel raises, as ours does anywhere
        invalid = None
    weight = None
    if r.random() < 0.4 or invalid == "weight_len":
        wlen = C if invalid != "weight_len" else r.choice([max(C - 1, 0), C + 1, 2 * C + 1])
        if invalid == "weight_dtype":
            w_dtype = r.choice([d for d in DTYPES if d != dtype])
        weight = random_layout(r, _weight(r, wlen, w_dtype))
    element = dtype  # the loss's dtype: torch promotes the operands of probability targets
    for other in (t_dtype, w_dtype if weight is not None else dtype):
        element = torch.promote_types(element, other)
    if invalid == "weight_dtype" and (prob or weight is None):
        invalid = None  # torch promotes there: a valid case
    desc = (f"case {case}: {dtype} {shape} stride {tuple(x.stride())} grad {x.requires_grad} "
            f"target {t_dtype if prob else index_dtype} {tuple(t.shape)} "
            f"stride {tuple(t.stride())} weight "
            f"{None if weight is None else (weight.shape[0], w_dtype)} "
            f"ignore_index {ignore_index} {reduction} smoothing {smoothing} invalid {invalid}")
    terms = None
    if not nll and invalid is None:
        terms = _grad_terms(t, weight, axis, prob, ignore_index, reduction)
    grad_of = [0]
    if prob and invalid is None and r.random() < 0.5:
        # torch differentiates probability targets (and then the class weights) too
        t.requires_grad_()
        grad_of.append(1)
        if weight is not None and r.random() < 0.5:
            weight.requires_grad_()
            grad_of.append(2)
    return dict(dtype=element, x=x, t=t, weight=weight, reduction=reduction, grad_terms=terms,
                grad_of=grad_of,
                ignore_index=ignore_index, smoothing=smoothing, invalid=invalid, desc=desc,
                uniform=t_dtype == dtype and (weight is None or w_dtype == dtype))


def _run_case(c: dict, ours, theirs, describe: str) -> None:
    inputs = [c["x"], c["t"], c["weight"]]
    if c["invalid"] == "out_of_range":
        _check_out_of_range(ours, inputs, describe)
    elif c["invalid"] == "weight_dtype":
        _check_both_raise(ours, theirs, inputs, describe)
    else:
        differential(ours, theirs, inputs, grad_of=c["grad_of"], element=c["dtype"], scale=4.0,
                     describe=describe, grad_terms=c.get("grad_terms"))


def _torch_target(x: torch.Tensor, t: torch.Tensor, smoothed_weight: bool = False):
    """torch takes class indices as int64, or uint8 for (C,) / (N, C) inputs but not with
    label smoothing and weights (a gather there wants int64); ours also takes int32, and uint8
    everywhere."""
    if t.dtype == torch.int32 or (t.dtype == torch.uint8 and (x.dim() > 2 or smoothed_weight)):
        return t.long()
    return t


@pytest.mark.parametrize("case", case_ids(default_cpu=120, default_gpu=400))
def test_cross_entropy_matches_torch(case):
    r = rng_for("cross_entropy", case)
    c = _common(r, case, nll=False)
    red, ig, eps = c["reduction"], c["ignore_index"], c["smoothing"]
    # mean / sum with a gradient run the fused plan; the plain op (forward plan, then the
    # backward plan) is reached through the registered custom op, which takes what
    # cross_entropy passes on (one float dtype, label_smoothing >= 0)
    plain = r.random() < 0.3 and c["uniform"] and eps >= 0

    def call_ours(x, t, w):
        if plain:
            return torch.ops.baracuda.cross_entropy(x, t, w, red, ig, eps)
        return bt.cross_entropy(x, t, w, ignore_index=ig, reduction=red, label_smoothing=eps)

    def call_torch(x, t, w):
        t = _torch_target(x, t, eps > 0 and w is not None)
        return F.cross_entropy(x, t, w, ignore_index=ig, reduction=red, label_smoothing=eps)

    _run_case(c, call_ours, call_torch, f"{c['desc']} plain_op {plain}")


@pytest.mark.parametrize("case", case_ids(default_cpu=120, default_gpu=400))
def test_nll_loss_matches_torch(case):
    r = rng_for("nll_loss", case)
    c = _common(r, case, nll=True)
    red, ig = c["reduction"], c["ignore_index"]

    def call_ours(x, t, w):
        return bt.nll_loss(x, t, w, ignore_index=ig, reduction=red)

    def call_torch(x, t, w):
        # contiguous: torch's CPU nll_loss2d backward raises "grad_input must be contiguous"
        # for some permuted 4-d inputs (its own limit; the values are the same)
        return F.nll_loss(x.contiguous(), _torch_target(x, t), w, ignore_index=ig, reduction=red)

    _run_case(c, call_ours, call_torch, c["desc"])

