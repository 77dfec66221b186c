"""torch.matmul / mm / bmm / addmm / baddbmm / nn.functional.linear / einsum (two operands) on
baracuda GEMM plans, differentiable; plus `linear_act` (Linear with a fused activation).

Operands whose last two dims are neither row- nor column-major (e.g. expanded grads) are
materialized, as torch's own BLAS path does; everything else is passed by strides.
"""

from __future__ import annotations

import math

import torch

from ...backends.torch_ops import define_op, run_plan
from ...core.errors import InvalidProblem
from ...core.vocab import PlanPreference
from .composite import LinearBackwardPlan, LinearPlan
from .descriptors import (
    DenseGemmArgs,
    DenseGemmDescriptor,
    GemmActivation,
    LinearArgs,
    LinearBackwardArgs,
    LinearBackwardDescriptor,
    LinearDescriptor,
)
from .plans import DenseGemmPlan

__all__ = ["addmm", "baddbmm", "bmm", "einsum", "linear", "linear_act", "matmul", "mm"]


def _blas(t: torch.Tensor) -> torch.Tensor:
    """`t` if BLAS can read its last two dims by strides, else a contiguous copy."""
    if t.dim() < 2:
        return t
    r, c = t.shape[-2:]
    sr, sc = t.stride()[-2:]
    if r <= 1 or c <= 1 or (sc == 1 and sr >= c) or (sr == 1 and sc >= r):
        if all(s >= 0 for s in t.stride()):
            return t
    return t.contiguous()


# ------------------------------------------------------------------------------ dense op
def _gemm_impl(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None, alpha: float,
               beta: float) -> torch.Tensor:
    *batch, m, k = a.shape
    n = b.shape[-1]
    d = torch.empty((*batch, m, n), dtype=a.dtype, device=a.device)
    has_c = c is not None and beta != 0.0
    desc = DenseGemmDescriptor(m=m, n=n, k=k, element=a.dtype, batch=tuple(batch),
                               alpha=float(alpha), beta=float(beta) if has_c else 0.0)
    run_plan(DenseGemmPlan, desc, DenseGemmArgs(a=_blas(a), b=_blas(b), d=d,
                                                c=c if has_c else None))
    return d


def _gemm_fake(a, b, c, alpha, beta):
    return a.new_empty((*a.shape[:-1], b.shape[-1]))


def _gemm_setup(ctx, inputs, output):
    a, b, c, alpha, beta = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta, ctx.has_c = alpha, beta, c is not None


def _gemm_backward(ctx, g):
    a, b = ctx.saved_tensors
    da = db = dc = None
    if ctx.needs_input_grad[0]:
        da = _gemm(g, b.mT, None, ctx.alpha, 0.0)
    if ctx.needs_input_grad[1]:
        db = _gemm(a.mT, g, None, ctx.alpha, 0.0)
    if ctx.has_c and ctx.needs_input_grad[2]:
        dc = g * ctx.beta
    return da, db, dc, None, None


_gemm = define_op("gemm", _gemm_impl, _gemm_fake, backward=_gemm_backward,
                  setup_context=_gemm_setup)


def _dense_mm(a: torch.Tensor, b: torch.Tensor, pref: PlanPreference) -> torch.Tensor:
    """A plain 2-D GEMM under an explicit preference (benchmarks: a forced backend)."""
    d = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    desc = DenseGemmDescriptor(m=a.shape[0], n=b.shape[1], k=a.shape[1], element=a.dtype)
    run_plan(DenseGemmPlan, desc, DenseGemmArgs(a=a, b=b, d=d), pref)
    return d


# ---------------------------------------------------------------------------- checks
def _dt(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def _same_dtype(x: torch.Tensor, y: torch.Tensor) -> None:
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{_dt(x)} != {_dt(y)}")


def _check_mm(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if b.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    _same_dtype(a, b)


def _check_bmm(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if (b.shape[0], b.shape[1]) != (a.shape[0], a.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    _same_dtype(a, b)


def _out(result: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return result
    out.resize_(result.shape)
    out.copy_(result)
    return out


# --------------------------------------------------------------------- torch functions
def mm(input: torch.Tensor, mat2: torch.Tensor, *, out: torch.Tensor | None = None):
    """torch.mm on DenseGemmPlan (cuBLASLt on the GPU when present, else Triton)."""
    _check_mm(input, mat2)
    return _out(_gemm(input, mat2, None, 1.0, 0.0), out)


def bmm(input: torch.Tensor, mat2: torch.Tensor, *, out: torch.Tensor | None = None):
    """torch.bmm on DenseGemmPlan (batched)."""
    _check_bmm(input, mat2)
    return _out(_gemm(input, mat2, None, 1.0, 0.0), out)


def addmm(input: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, *, beta=1, alpha=1,
          out: torch.Tensor | None = None):
    """torch.addmm: beta * input + alpha * mat1 @ mat2 (beta == 0 ignores input, NaN too)."""
    _check_mm(mat1, mat2)
    _same_dtype(input, mat1)
    shape = (mat1.shape[0], mat2.shape[1])
    # input stays in the graph even at beta == 0 (the kernel ignores it, NaN too): torch
    # gives it a zero gradient there, not None
    c = input.expand(shape)
    return _out(_gemm(mat1, mat2, c, float(alpha), float(beta)), out)


def baddbmm(input: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, *, beta=1,
            alpha=1, out: torch.Tensor | None = None):
    """torch.baddbmm: beta * input + alpha * batch1 @ batch2."""
    _check_bmm(batch1, batch2)
    _same_dtype(input, batch1)
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    c = input.expand(shape)  # kept at beta == 0 for its zero gradient, as in addmm
    return _out(_gemm(batch1, batch2, c, float(alpha), float(beta)), out)


def matmul(input: torch.Tensor, other: torch.Tensor, *, out: torch.Tensor | None = None):
    """torch.matmul: 1-D operands promoted and squeezed, batch dims broadcast; an N-D @ 2-D
    product folds the batch into the rows (one GEMM, as torch does)."""
    da, db = input.dim(), other.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    a = input.unsqueeze(0) if da == 1 else input
    b = other.unsqueeze(-1) if db == 1 else other
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ("
                           f"{a.shape[-2] if a.dim() > 1 else 1}x{a.shape[-1]} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    _same_dtype(a, b)
    if b.dim() == 2:
        lead = a.shape[:-1]
        # explicit row count: reshape(-1, 0) is ambiguous when k is 0
        r = _gemm(a.reshape(math.prod(lead), a.shape[-1]), b, None, 1.0, 0.0).view(
            *lead, b.shape[-1])
    else:
        batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        r = _gemm(a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:]), None,
                  1.0, 0.0)
    if da == 1:
        r = r.squeeze(-2)
    if db == 1:
        r = r.squeeze(-1)
    return _out(r, out)


# ------------------------------------------------------------------------------- linear
_ACTS = {a.value: a for a in GemmActivation}


def _linear_impl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 activation: str, save: bool) -> tuple[torch.Tensor, torch.Tensor]:
    t, i = x.shape
    o = weight.shape[0]
    act = _ACTS[activation]
    save = save and act is not GemmActivation.NONE
    y = torch.empty((t, o), dtype=x.dtype, device=x.device)
    pre = torch.empty((t, o) if save else (0,), dtype=x.dtype, device=x.device)
    desc = LinearDescriptor(t, i, o, x.dtype, bias=bias is not None, activation=act,
                            save_preact=save)
    run_plan(LinearPlan, desc, LinearArgs(x=_blas(x), weight=_blas(weight), y=y, bias=bias,
                                          preact=pre if save else None))
    return y, pre


def _linear_fake(x, weight, bias, activation, save):
    save = save and activation != "none"
    t, o = x.shape[0], weight.shape[0]
    return x.new_empty((t, o)), x.new_empty((t, o) if save else (0,))


def _linear_bwd_impl(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                     preact: torch.Tensor, activation: str, need_dx: bool, need_dw: bool,
                     need_db: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    t, i = x.shape
    o = weight.shape[0]
    act = _ACTS[activation]
    dx = torch.empty((t, i) if need_dx else (0,), dtype=x.dtype, device=x.device)
    dw = torch.empty((o, i) if need_dw else (0,), dtype=x.dtype, device=x.device)
    db = torch.empty((o,) if need_db else (0,), dtype=x.dtype, device=x.device)
    if need_dx or need_dw or need_db:
        desc = LinearBackwardDescriptor(t, i, o, x.dtype, bias=need_db, activation=act)
        run_plan(LinearBackwardPlan, desc, LinearBackwardArgs(
            dy=_blas(dy), x=_blas(x), weight=_blas(weight),
            preact=preact if act is not GemmActivation.NONE else None,
            dx=dx if need_dx else None, dweight=dw if need_dw else None,
            dbias=db if need_db else None))
    return dx, dw, db


def _linear_bwd_fake(dy, x, weight, preact, activation, need_dx, need_dw, need_db):
    t, i = x.shape
    o = weight.shape[0]
    return (x.new_empty((t, i) if need_dx else (0,)), x.new_empty((o, i) if need_dw else (0,)),
            x.new_empty((o,) if need_db else (0,)))


_linear_backward = define_op("linear_backward", _linear_bwd_impl, _linear_bwd_fake)


def _linear_setup(ctx, inputs, output):
    x, weight, bias, activation, save = inputs
    y, pre = output
    ctx.mark_non_differentiable(pre)
    # pre's gradient is never used: materialized, it is a [tokens, out] zero fill per backward.
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(x, weight, pre)
    ctx.activation, ctx.has_bias = activation, bias is not None


def _linear_autograd(ctx, gy, gpre):
    if gy is None:  # y took no part in what is differentiated
        return None, None, None, None, None
    x, weight, pre = ctx.saved_tensors
    need = ctx.needs_input_grad
    if ctx.activation != "none" and pre.numel() != gy.numel():
        raise RuntimeError("linear_act: the pre-activation was not saved (the forward ran "
                           "without grad mode); cannot differentiate")
    dx, dw, db = _linear_backward(gy, x, weight, pre, ctx.activation, need[0], need[1],
                                  bool(ctx.has_bias and need[2]))
    return (dx if need[0] else None, dw if need[1] else None,
            db if ctx.has_bias and need[2] else None, None, None)


_linear = define_op("linear", _linear_impl, _linear_fake, backward=_linear_autograd,
                    setup_context=_linear_setup)


def _linear_call(input, weight, bias, activation: str) -> torch.Tensor:
    if weight.dim() != 2 or input.dim() == 0 or input.shape[-1] != weight.shape[1]:
        lead = math.prod(input.shape[:-1])
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({lead}x"
                           f"{input.shape[-1] if input.dim() else 1} and "
                           f"{weight.shape[-1]}x{weight.shape[0]})")
    _same_dtype(input, weight)
    if bias is not None:
        _same_dtype(input, bias)
    o = weight.shape[0]
    late_bias = None
    if bias is not None and tuple(bias.shape) != (o,):
        if bias.dim() <= 1 and bias.numel() == 1:
            # torch broadcasts a one-element bias ([] or [1]) over the outputs; the plan wants
            # [out] (expand's backward sums the gradient back)
            bias = bias.reshape(1).expand(o).contiguous()
        elif activation == "none":
            # any other shape broadcasting to the output (torch: matmul + add) is added after
            # the GEMM, which raises as torch does when it does not broadcast
            late_bias, bias = bias, None
        else:
            raise InvalidProblem(f"linear_act: bias must have shape ({o},) or one element, "
                                 f"got {tuple(bias.shape)}")
    lead = input.shape[:-1]
    # explicit row count: reshape(-1, 0) is ambiguous when in_features is 0
    x = input.reshape(math.prod(lead), input.shape[-1])
    grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (input, weight, bias, late_bias))
    y, _ = _linear(x, weight, bias, activation, grad)
    y = y.view(*lead, o)
    return y if late_bias is None else y + late_bias


def linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None):
    """torch.nn.functional.linear on LinearPlan; backward on LinearBackwardPlan."""
    return _linear_call(input, weight, bias, "none")


def linear_act(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
               activation: str = "gelu") -> torch.Tensor:
    """activation(linear(input, weight, bias)) as one fused plan; activation in
    {"none", "relu", "gelu", "gelu_tanh", "silu"}; the backward fuses the derivative."""
    if activation not in _ACTS:
        raise ValueError(f"linear_act: activation must be one of {sorted(_ACTS)}, got "
                         f"{activation!r}")
    return _linear_call(input, weight, bias, activation)


# ------------------------------------------------------------------------------- einsum
def einsum(equation: str, *operands) -> torch.Tensor:
    """torch.einsum: any number of operands, ellipsis and repeated indices (diagonals, as
    views). Two operands lower to one batched GEMM through permutes and reshapes (indices of
    one operand only that vanish from the output are summed first); more contract left to
    right, two at a time; one is a diagonal / sum / permute of itself."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    terms, out = _expand_ellipsis(terms, out, bool(arrow), operands)
    for i, (t, s) in enumerate(zip(operands, terms)):
        if len(s) != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) "
                               f"does not match the number of dimensions ({t.dim()}) for "
                               f"operand {i}" + ("" if "." in equation else
                                                 " and no ellipsis was given"))
    pairs = [_diagonals(t, s) for t, s in zip(operands, terms)]
    while len(pairs) > 2:  # contract the first two, keeping the labels still needed
        (a, sa), (b, sb) = pairs[:2]
        later = out + "".join(s for _, s in pairs[2:])
        keep = "".join(dict.fromkeys(c for c in sa + sb if c in later))
        pairs = [(_einsum2(a, b, sa, sb, keep), keep), *pairs[2:]]
    if len(pairs) == 1:
        (a, sa), = pairs
        for ch in [c for c in sa if c not in out]:
            a = a.sum(sa.index(ch))
            sa = sa.replace(ch, "")
        return a.permute([sa.index(c) for c in out])
    (a, sa), (b, sb) = pairs
    return _einsum2(a, b, sa, sb, out)


def _expand_ellipsis(terms: list[str], out: str, explicit: bool, operands):
    """'...' replaced by fresh letters (the broadcast dims, right-aligned), and the implicit
    output spelled out: torch's rule (ellipsis dims first, then every label used once, in
    order)."""
    used = set("".join(terms) + out)
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    spans = [t.dim() - (len(s) - 3) if "..." in s else 0 for s, t in zip(terms, operands)]
    if any(n < 0 for n in spans):
        raise RuntimeError("einsum(): the number of subscripts in the equation does not match "
                           "the number of dimensions for an operand with an ellipsis")
    letters = "".join(free[:max(spans, default=0)])
    terms = [s.replace("...", letters[len(letters) - n:]) if "..." in s else s
             for s, n in zip(terms, spans)]
    if explicit:
        return terms, out.replace("...", letters)
    seen = "".join(terms)
    singles = sorted(c for c in set(seen) if seen.count(c) == 1 and c not in letters)
    return terms, letters + "".join(singles)


def _diagonals(t: torch.Tensor, s: str) -> tuple[torch.Tensor, str]:
    """A label repeated within one operand takes its diagonal (a view; the label moves last)."""
    while len(set(s)) != len(s):
        ch = next(c for c in s if s.count(c) > 1)
        i, j = s.index(ch), s.index(ch, s.index(ch) + 1)
        if t.shape[i] != t.shape[j]:
            raise RuntimeError(f"einsum(): subscript {ch} is repeated for operand but the sizes "
                               f"don't match, {t.shape[i]} != {t.shape[j]}")
        t = t.diagonal(0, i, j)
        s = s[:i] + s[i + 1:j] + s[j + 1:] + ch
    return t, s


def _einsum2(a: torch.Tensor, b: torch.Tensor, sa: str, sb: str, out: str) -> torch.Tensor:
    sizes: dict[str, int] = {}
    for s, t, idx in ((sa, a, 0), (sb, b, 1)):
        for ch, d in zip(s, t.shape):
            if ch in sizes and sizes[ch] != d and 1 not in (d, sizes[ch]):
                raise RuntimeError(f"einsum(): subscript {ch} has size {d} for operand {idx} "
                                   f"which does not broadcast with previously seen size "
                                   f"{sizes[ch]}")
            sizes[ch] = d if sizes.get(ch, 1) == 1 else sizes[ch]  # 1 broadcasts (to 0 too)
    _same_dtype(a, b)
    # Indices of one operand that are neither in the other nor in the output: sum them now.
    for ch in [c for c in sa if c not in sb and c not in out]:
        a = a.sum(sa.index(ch))
        sa = sa.replace(ch, "")
    for ch in [c for c in sb if c not in sa and c not in out]:
        b = b.sum(sb.index(ch))
        sb = sb.replace(ch, "")
    batch = [c for c in out if c in sa and c in sb]
    m_idx = [c for c in out if c in sa and c not in sb]
    n_idx = [c for c in out if c in sb and c not in sa]
    k_idx = [c for c in sa if c in sb and c not in out]

    def size(idx):
        p = 1
        for c in idx:
            p *= sizes[c]
        return p

    def prep(t, s, first, second):
        t = t.permute([s.index(c) for c in batch + first + second])
        t = t.expand([sizes[c] for c in batch + first + second])
        return t.reshape(size(batch), size(first), size(second))

    a3 = prep(a, sa, m_idx, k_idx)
    b3 = prep(b, sb, k_idx, n_idx)
    r = _gemm(a3, b3, None, 1.0, 0.0)
    r = r.view([sizes[c] for c in batch + m_idx + n_idx])
    order = batch + m_idx + n_idx
    return r.permute([order.index(c) for c in out])
