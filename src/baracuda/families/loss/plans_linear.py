"""Fused linear + cross-entropy plans: forward (loss and, for a unit upstream gradient, the
gradients: the training step) and backward (the gradients from grad_loss, recomputed).

**Formulas** (z = softcap(x W^T + b): cap tanh(l / cap), or l without a cap; lse = logsumexp
over the classes; eps = label_smoothing, C classes, w = class weights or 1; t the class index;
zc = z_loss):
- per token: ce = (1 - eps) w[t] (lse - z[t]) + eps / C * sum_c w[c] (lse - z[c]) (torch's
  cross_entropy), zl = zc lse^2 (Liger's `lse_square_scale`, PaLM's z-loss); both 0 when t ==
  ignore_index.
- mean: sum ce / sum of w[t] over kept tokens + sum zl / kept count (Liger's convention: the
  z-loss is averaged over kept tokens, not weighted); sum: the sums; none: ce + zl per
  token. The `z_loss` output holds the z-loss part alone (what Liger's `return_z_loss` gives).
- d/dz[c] = s_ce (p[c] A - a[c]) + s_z 2 zc lse p[c], with a[c] the coefficient of
  (lse - z[c]) above, A = sum_c a[c], p = softmax(z), s_* the upstream gradient over the
  mean's denominators; times 1 - (z / cap)^2 under a cap. Then dx = dz W, dW = dz^T x,
  db = sum over tokens of dz.

**Chunking**: tokens run in chunks of `chunk_rows` (0: as many as fit `CHUNK_BYTES` of
logits, a multiple of 128 tokens): per chunk, the logits GEMM (torch.mm / addmm: cuBLAS)
into the workspace buffer, one row kernel writing d(loss)/d(logits) over it in place, then
dx's rows = buf @ W and dW += buf^T x (the first chunk writes dW, the rest accumulate with
addmm, in chunk order), db += the buffer's column sums in an ACC accumulator.

**Dtypes / shape**: input (N, H), linear_weight (C, H), target (N,) i32/i64, linear_bias /
class weight (C,); {f32, f16, bf16, f64}; row math in f32 (f64 for f64); GEMMs torch's, in the
input's dtype (the logits and their gradient are held in it, as in the unfused torch path);
dW accumulates across chunks in its own dtype (no f32 copy of the weight's size: that would
cost more memory than the logits the chunking saves).

**Workspace**: (4 + 2N) ACC elements (denominators, per-token terms), the chunk's logits
(chunk_rows * C elements), and 2C ACC elements for the bias gradient when there is a bias.

**Precision**: deterministic: every reduction has a fixed order (one program per token row, a
one-program final sum, chunks in order, no atomics); GEMMs are torch's.
"""

from __future__ import annotations

import numpy as np
import torch

from ...backends.rows import ASSERT_LAUNCH
from ...backends.triton_support import acc_type, next_pow2
from ...core import validate as V
from ...core.plan import Candidate, Plan
from ...core.registry import register_candidate, register_plan
from ...core.vocab import OpCategory
from .descriptors import LossReduction
from .descriptors_linear import (
    LinearCrossEntropyArgs,
    LinearCrossEntropyBackwardArgs,
    LinearCrossEntropyBackwardDescriptor,
    LinearCrossEntropyDescriptor,
)
from .kernels_linear import WS_HEAD, lce_finalize_kernel, lce_rows_kernel, lce_totals_kernel

#: What the family package re-exports from this module.
__all__ = ["LinearCrossEntropyBackwardPlan", "LinearCrossEntropyPlan"]

#: Logits held per chunk: at 128K classes in bf16 that is 1024 tokens, enough for each of the
#: three GEMMs to run near peak, and a quarter of the bf16 weight gradient's size.
CHUNK_BYTES = 256 * 2**20
#: The row kernel's class block (the rows are looped over, two passes); label smoothing's two
#: more per-lane accumulators take half of it so that no variant spills on sm_90a.
ROW_BLOCK = 4096


_ALIGN = 256


def row_block(classes: int, smooth: bool) -> int:
    return min(ROW_BLOCK // (2 if smooth else 1), next_pow2(classes))


def _align(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def chunk_rows(desc) -> int:
    """Tokens per chunk: the descriptor's, else as many as CHUNK_BYTES of logits hold."""
    if desc.tokens == 0:
        return 0
    if desc.chunk_rows:
        return min(desc.chunk_rows, desc.tokens)
    per_row = desc.classes * desc.element.torch_dtype.itemsize
    rows = max(1, CHUNK_BYTES // per_row)
    if rows >= 128:
        rows = rows // 128 * 128
    return min(rows, desc.tokens)


def _layout(desc) -> tuple[int, int, int, int]:
    """Byte offsets: (buffer, bias scratch, end) and the accumulator's item size."""
    acc = desc.element.compute_kind.torch_dtype.itemsize
    head = _align((WS_HEAD + 2 * desc.tokens) * acc)
    buf = _align(chunk_rows(desc) * desc.classes * desc.element.torch_dtype.itemsize)
    bias = _align(2 * desc.classes * acc) if desc.has_bias else 0
    return head, head + buf, head + buf + bias, acc


def _pair(value: float) -> tuple[float, float]:
    """value as an f32 pair hi + lo (the kernel's scalars are f32; f64 rows add them)."""
    hi = float(np.float32(value))
    return hi, float(value) - hi


def lce_workspace(desc) -> int:
    return _layout(desc)[2]


def launch_lce(desc, a, workspace, grad_loss=None) -> None:
    """Forward (loss, z_loss; the gradients too when their outputs are given: unit upstream
    gradient) or backward (grad_loss given: gradients only)."""
    n, c = desc.tokens, desc.classes
    x, w_lin, t = a.input, a.linear_weight, a.target
    dx, dw, db = a.grad_input, a.grad_linear_weight, a.grad_linear_bias
    grad = dx is not None or dw is not None or db is not None
    forward = grad_loss is None
    none = desc.reduction is LossReduction.NONE
    mean = desc.reduction is LossReduction.MEAN
    if forward:
        mode = 1 if grad else 0
    else:
        mode = 2 if none else 3
    head, buf_end, end, _ = _layout(desc)
    acc_dt = desc.element.compute_kind.torch_dtype
    ws = workspace[:head].view(acc_dt)
    acc = acc_type(desc.element)
    cw = a.weight
    dummy = ws
    zl = desc.z_loss > 0.0
    if mean:
        lce_totals_kernel[(1,)](t, cw if cw is not None else dummy, ws, n, c, t.stride(0) if
                                n else 1, desc.ignore_index, HAS_W=cw is not None, ACC=acc,
                                BLOCK=1024)
    rows = chunk_rows(desc)
    if not forward and not grad:  # a backward asked for no gradient
        return
    if n == 0:
        for g in (dw, db):
            if g is not None:
                g.zero_()
    if rows:
        buf_all = workspace[head:buf_end].view(desc.element.torch_dtype)
        bias_acc = bias_tmp = None
        if db is not None:
            scratch = workspace[buf_end:end].view(acc_dt)
            bias_acc, bias_tmp = scratch[:c], scratch[c:2 * c]
        block = row_block(c, desc.label_smoothing > 0.0)
        for start in range(0, n, rows):
            r = min(rows, n - start)
            buf = buf_all[: r * c].view(r, c)
            xc = x[start:start + r]
            if a.linear_bias is not None:
                torch.addmm(a.linear_bias, xc, w_lin.t(), out=buf)
            else:
                torch.mm(xc, w_lin.t(), out=buf)
            lce_rows_kernel[(r,)](
                buf, t, cw if cw is not None else buf,
                grad_loss if grad_loss is not None else buf, ws,
                start, n, c, c, t.stride(0), grad_loss.stride(0) if none and not forward else 0,
                desc.ignore_index, *_pair(desc.label_smoothing), *_pair(desc.softcap or 1.0),
                *_pair(desc.z_loss),
                HAS_W=cw is not None, SMOOTH=desc.label_smoothing > 0.0,
                SOFTCAP=desc.softcap > 0.0, ZLOSS=zl, GRAD=mode if grad else 0,
                MEAN=mean and grad, ACC=acc, BLOCK=block, num_warps=8 if block >= 2048 else 4,
                **ASSERT_LAUNCH)
            if not grad:
                continue
            if dx is not None:
                torch.mm(buf, w_lin, out=dx[start:start + r])
            if dw is not None:
                if start == 0:
                    torch.mm(buf.t(), xc, out=dw)
                else:
                    dw.addmm_(buf.t(), xc)
            if db is not None:
                target = bias_acc if start == 0 else bias_tmp
                torch.sum(buf, 0, dtype=acc_dt, out=target)
                if start:
                    bias_acc.add_(bias_tmp)
        if db is not None:
            db.copy_(bias_acc)
    if forward:
        lce_finalize_kernel[(1,)](ws, a.loss, a.z_loss, n, REDUCE=not none, MEAN=mean,
                                  ZLOSS=zl, ACC=acc, BLOCK=1024)


# -- plans -----------------------------------------------------------------------------------
class _LinearPlan(Plan):
    __doc__ = __doc__
    category = OpCategory.LOSS
    OP_NAME = "linear_cross_entropy"


@register_plan
class LinearCrossEntropyPlan(_LinearPlan):
    __doc__ = __doc__
    descriptor_type = LinearCrossEntropyDescriptor
    args_type = LinearCrossEntropyArgs
    partner = "LinearCrossEntropyBackwardPlan"

    def check_args(self, args) -> None:
        """The declared operands; fused gradients only for a scalar loss (their upstream
        gradient is taken as 1)."""
        super().check_args(args)
        grads = [n for n in ("grad_input", "grad_linear_weight", "grad_linear_bias")
                 if getattr(args, n) is not None]
        who = type(self).__name__
        if grads and self.desc.reduction is LossReduction.NONE:
            raise V.InvalidProblem(
                f"{who}: fused gradients need reduction 'mean' or 'sum' (a scalar loss); got "
                f"{grads} with reduction 'none' (use LinearCrossEntropyBackwardPlan)")
        if args.grad_linear_bias is not None and not self.desc.has_bias:
            raise V.InvalidProblem(f"{who}: grad_linear_bias given without a linear_bias "
                                   "(has_bias is False)")


@register_plan
class LinearCrossEntropyBackwardPlan(_LinearPlan):
    __doc__ = __doc__
    descriptor_type = LinearCrossEntropyBackwardDescriptor
    args_type = LinearCrossEntropyBackwardArgs
    partner = "LinearCrossEntropyPlan"
    is_backward = True

    def check_args(self, args) -> None:
        super().check_args(args)
        if args.grad_linear_bias is not None and not self.desc.has_bias:
            raise V.InvalidProblem(f"{type(self).__name__}: grad_linear_bias given without a "
                                   "linear_bias (has_bias is False)")


# -- candidates ------------------------------------------------------------------------------
class _ChunkedLinearCE(Candidate):
    """torch GEMMs (cuBLAS) around Triton row kernels, chunk by chunk over the tokens."""

    def workspace_size(self, desc) -> int:
        return lce_workspace(desc)


@register_candidate(LinearCrossEntropyPlan)
class ChunkedLinearCrossEntropy(_ChunkedLinearCE):
    name = "chunked_gemm_row_cross_entropy"

    def launch(self, desc, a, workspace) -> None:
        launch_lce(desc, a, workspace)


@register_candidate(LinearCrossEntropyBackwardPlan)
class ChunkedLinearCrossEntropyBackward(_ChunkedLinearCE):
    name = "chunked_gemm_row_cross_entropy_backward"

    def launch(self, desc, a, workspace) -> None:
        launch_lce(desc, a, workspace, grad_loss=a.grad_loss)
