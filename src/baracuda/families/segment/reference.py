"""Float64 references (jax.ops.segment_* semantics): the oracle for tests and benches.

Plain loops over segments in torch: slow but obviously right. max / min's argmax is the first
row on ties and the first NaN when a column holds NaN; their backward splits the gradient
evenly among every row equal to the output (NaN equal to NaN), as torch.segment_reduce does.
"""

from __future__ import annotations

import torch

IDENTITY = {"sum": 0.0, "mean": 0.0, "max": -float("inf"), "min": float("inf"), "prod": 1.0}


def _cpu64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64)


def _inner(t: torch.Tensor) -> int:
    n = 1
    for e in t.shape[1:]:
        n *= e
    return n


#: Above this many rows x segments the vectorized forms run (the loops cross-check them on
#: every small case).
LOOP_LIMIT = 200_000


def segment_reduce(data: torch.Tensor, ids: torch.Tensor, num_segments: int, kind: str
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (out float64 [S, D...], argmax int64 [S, D...] (-1 where empty; max/min only))."""
    if data.shape[0] * max(num_segments, 1) > LOOP_LIMIT:
        return _segment_reduce_vec(data, ids, num_segments, kind)
    x = _cpu64(data)
    ids = ids.detach().cpu().long()
    n = x.shape[0]
    flat = x.reshape(n, _inner(x))
    d = flat.shape[1]
    out = torch.full((num_segments, d), IDENTITY[kind], dtype=torch.float64)
    arg = torch.full((num_segments, d), -1, dtype=torch.int64)
    for s in range(num_segments):
        rows = torch.nonzero(ids == s).flatten()
        if rows.numel() == 0:
            continue
        seg = flat[rows]
        if kind == "sum":
            out[s] = seg.sum(0)
        elif kind == "mean":
            out[s] = seg.sum(0) / rows.numel()
        elif kind == "prod":
            out[s] = seg.prod(0)
        else:
            v = seg if kind == "max" else -seg
            nan = torch.isnan(v)
            vm = torch.where(nan, torch.tensor(-float("inf"), dtype=v.dtype), v)
            best = vm.max(0).values
            hit = (vm == best) & ~nan
            first_hit = torch.where(hit, torch.arange(len(rows))[:, None], len(rows)).min(0).values
            first_nan = torch.where(nan, torch.arange(len(rows))[:, None], len(rows)).min(0).values
            pick = torch.where(first_nan < len(rows), first_nan, first_hit)
            arg[s] = rows[pick]
            val = seg.gather(0, pick[None, :])[0]
            out[s] = val
    shape = (num_segments, *x.shape[1:])
    return out.reshape(shape), arg.reshape(shape)


def _segment_reduce_vec(data, ids, num_segments, kind):
    x = _cpu64(data)
    n = x.shape[0]
    flat = x.reshape(n, _inner(x))
    d = flat.shape[1]
    ids = ids.detach().cpu().long()
    keep = (ids >= 0) & (ids < num_segments)
    rows = torch.nonzero(keep).flatten()
    seg, v = ids[rows], flat[rows]
    out = torch.full((num_segments, d), IDENTITY[kind], dtype=torch.float64)
    arg = torch.full((num_segments, d), -1, dtype=torch.int64)
    idx = seg[:, None].expand(-1, d)
    if kind in ("sum", "mean"):
        out.index_add_(0, seg, v)
        if kind == "mean":
            out /= torch.bincount(seg, minlength=num_segments).clamp_min(1)[:, None].double()
    elif kind == "prod":
        out.scatter_reduce_(0, idx, v, "prod")
    else:
        w = v if kind == "max" else -v
        nan = torch.isnan(w)
        has_nan = torch.zeros((num_segments, d), dtype=torch.bool).scatter_reduce_(
            0, idx, nan, "amax")
        best = torch.full((num_segments, d), -float("inf"), dtype=torch.float64)
        best.scatter_reduce_(0, idx, torch.where(nan, -float("inf"), w), "amax")
        match = torch.where(has_nan.gather(0, idx), nan, (w == best.gather(0, idx)) & ~nan)
        big = n + 1
        cand = torch.where(match, rows[:, None].expand(-1, d), big)
        first = torch.full((num_segments, d), big, dtype=torch.int64)
        first.scatter_reduce_(0, idx, cand, "amin")
        found = first < big
        arg = torch.where(found, first, -1)
        if n:
            out = torch.where(found, flat.gather(0, first.clamp(max=n - 1)), out)
    shape = (num_segments, *x.shape[1:])
    return out.reshape(shape), arg.reshape(shape)


def segment_backward(grad_out: torch.Tensor, ids: torch.Tensor, kind: str, num_rows: int,
                     data: torch.Tensor | None = None) -> torch.Tensor:
    """d data (float64) from d out; max / min / prod need the forward's data (max / min find
    their extremum again from it)."""
    g = _cpu64(grad_out)
    s_count = g.shape[0]
    ids = ids.detach().cpu().long()
    gf = g.reshape(s_count, _inner(g))
    d = gf.shape[1]
    dx = torch.zeros((num_rows, d), dtype=torch.float64)
    valid = (ids >= 0) & (ids < s_count)
    if kind in ("sum", "mean"):
        scale = torch.ones(s_count, dtype=torch.float64)
        if kind == "mean":
            cnt = torch.bincount(ids[valid], minlength=s_count).double()
            scale = 1.0 / cnt.clamp_min(1)
        rows = torch.nonzero(valid).flatten()
        dx[rows] = gf[ids[rows]] * scale[ids[rows]][:, None]
    elif kind in ("max", "min"):
        out, _ = segment_reduce(data, ids, s_count, kind)
        x = _cpu64(data).reshape(num_rows, d)
        rows = torch.nonzero(valid).flatten()
        xv, ov = x[rows], out.reshape(s_count, d)[ids[rows]]
        hit = (xv == ov) | (torch.isnan(xv) & torch.isnan(ov))
        count = torch.zeros((s_count, d), dtype=torch.float64).index_add_(
            0, ids[rows], hit.double())
        dx[rows] = torch.where(hit, gf[ids[rows]] / count[ids[rows]].clamp_min(1), 0.0)
    elif num_rows * max(s_count, 1) > LOOP_LIMIT:
        x = _cpu64(data).reshape(num_rows, d)
        seg = ids[valid]
        rows = torch.nonzero(valid).flatten()
        xv = x[rows]
        idx = seg[:, None].expand(-1, d)
        zero = xv == 0
        zc = torch.zeros((s_count, d), dtype=torch.int64).index_add_(0, seg, zero.long())
        p = torch.ones((s_count, d), dtype=torch.float64).scatter_reduce_(
            0, idx, torch.where(zero, 1.0, xv), "prod")
        zr, pr, gr = zc.gather(0, idx), p.gather(0, idx), gf[seg]
        dx[rows] = torch.where(zr == 0, gr * pr / torch.where(zero, 1.0, xv),
                               torch.where((zr == 1) & zero, gr * pr, 0.0))
    else:
        x = _cpu64(data).reshape(num_rows, d)
        for s in range(s_count):
            rows = torch.nonzero(ids == s).flatten()
            for j, r in enumerate(rows.tolist()):
                others = torch.cat([rows[:j], rows[j + 1:]])
                dx[r] = gf[s] * x[others].prod(0)
    return dx.reshape((num_rows, *g.shape[1:]))
