"""ONNX → IR lowering of the data-selection, reduction and activation operators.

Slice, Split, Gather, Resize/Upsample, ReduceMean/ReduceMax/ReduceSum, HardSigmoid, HardSwish,
Max/Min.  Every handler works for every opset the installed onnx knows (attribute forms of
old opsets and input forms of new ones), so models are read as exported, never down-converted.

Selections (Slice, Split, Gather with constant indices, nearest Resize) become IR ``Slice`` /
``Resize`` nodes whose ``index`` attribute lists, per axis, the source positions of the output
(``None`` = the whole axis): pure data movement, exact in float and integer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def norm_axis(ax: int, rank: int) -> int:
    """Non-negative axis."""
    return ax + rank if ax < 0 else ax


def _ints(v) -> list[int]:
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _opt_const(ctx, node, k: int, what: str):
    """Constant value of optional input ``k`` (None when absent)."""
    if len(node.input) > k and node.input[k]:
        return ctx.need_const(node, node.input[k], what)
    return None


def _axis_index(size: int, idx: np.ndarray):
    """``None`` when ``idx`` selects the whole axis in order, else a tuple of ints."""
    idx = [int(i) for i in idx]
    return None if idx == list(range(size)) else tuple(idx)


def _emit_select(ctx, node, op: str, x: str, out: str, per_axis: list, name: str | None = None) -> None:
    xs = ctx.shape(node, x)
    # a selection along axis 0 is kept (it works at the declared batch; targets refuse it)
    index = tuple(None if k == 0 and xs[0] == 1 and p == (0,) else p for k, p in enumerate(per_axis))
    if all(p is None for p in index):
        ctx.emit("Identity", name or node.name, [ctx.use(x)], [out])
        return
    ctx.emit(op, name or node.name, [ctx.use(x)], [out], index=index)


def _slice(ctx, node, at) -> None:
    x = node.input[0]
    xs = ctx.shape(node, x)
    rank = len(xs)
    if len(node.input) > 1:  # opset >= 10: inputs
        starts = _ints(ctx.need_const(node, node.input[1], "Slice starts"))
        ends = _ints(ctx.need_const(node, node.input[2], "Slice ends"))
        axes = _opt_const(ctx, node, 3, "Slice axes")
        steps = _opt_const(ctx, node, 4, "Slice steps")
        axes = list(range(len(starts))) if axes is None else _ints(axes)
        steps = [1] * len(starts) if steps is None else _ints(steps)
    else:  # opset 1..9: attributes
        starts, ends = list(at["starts"]), list(at["ends"])
        axes = list(at.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    per_axis: list = [None] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = norm_axis(int(a), rank)
        if st == 0:
            raise ctx.err(node, "Slice step 0")
        # Python slice semantics after ONNX clamping (INT_MAX/INT_MIN ends included)
        idx = np.arange(xs[a])[slice(*slice(s, e, st).indices(xs[a]))]
        per_axis[a] = _axis_index(xs[a], idx)
    if any(p == () for p in per_axis):
        raise ctx.err(node, "Slice selects no element (zero-size tensor)")
    _emit_select(ctx, node, "Slice", x, node.output[0], per_axis)


def _split(ctx, node, at) -> None:
    x = node.input[0]
    xs = ctx.shape(node, x)
    rank = len(xs)
    axis = norm_axis(int(at.get("axis", 0)), rank)
    n = len(node.output)
    sizes = _opt_const(ctx, node, 1, "Split sizes")
    if sizes is not None:
        sizes = _ints(sizes)
    elif "split" in at:  # opset < 13
        sizes = list(at["split"])
    else:  # equal parts (opset 18 num_outputs: the last part may be smaller)
        k = int(at.get("num_outputs", n))
        chunk = -(-xs[axis] // k)
        sizes = [min(chunk, xs[axis] - chunk * i) for i in range(k)]
    if sum(sizes) != xs[axis] or len(sizes) != n or min(sizes) <= 0:
        raise ctx.err(node, f"Split sizes {sizes} do not cover axis {axis} of size {xs[axis]}")
    start = 0
    for k, (out, sz) in enumerate(zip(node.output, sizes)):
        per_axis: list = [None] * rank
        per_axis[axis] = _axis_index(xs[axis], range(start, start + sz))
        start += sz
        if out and not ctx.unused([out]):
            _emit_select(ctx, node, "Slice", x, out, per_axis, name=f"{node.name}_{k}" if k else node.name)


def _gather(ctx, node, at) -> None:
    data, ind = node.input
    rank = len(ctx.shape(node, data) if ctx.const(data) is None else ctx.const(data).shape)
    axis = norm_axis(int(at.get("axis", 0)), rank)
    idx = ctx.const(ind)
    if ctx.const(data) is not None:  # embedding: a constant table indexed by an activation
        if idx is not None:  # pragma: no cover - folded before lowering
            raise ctx.err(node, "internal: constant Gather was not folded")
        ctx.emit("Gather", node.name, [ind, ctx.use(data)], [node.output[0]], axis=axis)
        return
    if idx is None:
        raise ctx.err(node, "Gather of an activation needs constant indices")
    xs = ctx.shape(node, data)
    flat = np.where(idx < 0, idx + xs[axis], idx).astype(np.int64)
    if flat.size and (flat.min() < 0 or flat.max() >= xs[axis]):
        raise ctx.err(node, f"Gather index out of range for axis {axis} of size {xs[axis]}")
    per_axis: list = [None] * len(xs)
    per_axis[axis] = tuple(int(i) for i in flat.reshape(-1))
    out = node.output[0]
    out_shape = xs[:axis] + tuple(idx.shape) + xs[axis + 1:]
    if flat.ndim == 1 and per_axis[axis] != tuple(range(xs[axis])):
        _emit_select(ctx, node, "Slice", data, out, per_axis)
        return
    t = ctx.tmp(out + ".sel")
    _emit_select(ctx, node, "Slice", data, t, per_axis, name=ctx.tmp(node.name))
    ctx.emit("Reshape", node.name, [t], [out], shape=tuple(int(d) for d in out_shape))


def _reduce(ctx, node, at) -> None:
    x = node.input[0]
    rank = len(ctx.shape(node, x))
    axes = _opt_const(ctx, node, 1, f"{node.op_type} axes")
    axes = list(at.get("axes", [])) if axes is None else _ints(axes)
    if not axes:
        if at.get("noop_with_empty_axes", 0):
            ctx.emit("Identity", node.name, [x], [node.output[0]])
            return
        axes = list(range(rank))
    axes = sorted({norm_axis(int(a), rank) for a in axes})
    if ctx.shape(node, x)[0] == 1 and len(axes) > 1:
        axes = [a for a in axes if a != 0]  # reducing a batch of one changes nothing
    keep = bool(at.get("keepdims", 1))
    xs = ctx.shape(node, x)
    if node.op_type == "ReduceMean" and len(xs) == 4 and tuple(axes) == (2, 3):
        # torch's global pooling: the same integer semantics as GlobalAveragePool (every target has it)
        y = node.output[0] if keep else ctx.tmp(node.output[0] + ".gap")
        ctx.emit("GlobalAveragePool", node.name, [x], [y])
        if not keep:
            ctx.emit("Reshape", ctx.tmp(node.name + "_squeeze"), [y], [node.output[0]], shape=(xs[0], xs[1]))
        return
    ctx.emit(node.op_type, node.name, [x], [node.output[0]], axes=tuple(axes), keepdims=keep)


def source_coords(in_size: int, out_size: int, scale: float, ctm: str,
                  roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Input coordinate of every output position along one axis (ONNX Resize
    ``coordinate_transformation_mode``), float64 ``(out_size,)``, not clamped."""
    o = np.arange(out_size, dtype=np.float64)
    if ctm == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        adj = out_size / (scale * in_size)
        return in_size / 2 * (1 - adj) + (o + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if out_size > 1 else np.zeros_like(o)
    if ctm == "align_corners":
        return o * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros_like(o)
    if ctm == "asymmetric":
        return o / scale
    if ctm == "tf_crop_and_resize":
        s, e = roi
        return (s * (in_size - 1) + o * (e - s) * (in_size - 1) / (out_size - 1) if out_size > 1
                else np.full_like(o, 0.5 * (s + e) * (in_size - 1)))
    raise ValueError(f"coordinate_transformation_mode {ctm!r}")


def nearest_index(in_size: int, out_size: int, scale: float, ctm: str, nearest: str,
                  roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Source positions of a nearest-neighbour Resize along one axis (ONNX Resize rules).

    Parameters
    ----------
    in_size, out_size : int
        Input and output lengths.
    scale : float
        ``out/in`` scale (given or derived from ``sizes``).
    ctm : str
        ``coordinate_transformation_mode``.
    nearest : str
        ``nearest_mode``: ``round_prefer_floor``, ``round_prefer_ceil``, ``floor`` or ``ceil``.
    roi : tuple of float
        Region of interest (``tf_crop_and_resize`` only).

    Returns
    -------
    numpy.ndarray
        int64 ``(out_size,)`` positions clamped to ``[0, in_size-1]``.
    """
    xo = source_coords(in_size, out_size, scale, ctm, roi)
    if nearest == "round_prefer_floor":
        r = np.where(xo == np.floor(xo) + 0.5, np.floor(xo), np.round(xo))
    elif nearest == "round_prefer_ceil":
        r = np.where(xo == np.floor(xo) + 0.5, np.ceil(xo), np.round(xo))
    elif nearest == "floor":
        r = np.floor(xo)
    elif nearest == "ceil":
        r = np.ceil(xo)
    else:
        raise ValueError(f"nearest_mode {nearest!r}")
    return np.clip(r, 0, in_size - 1).astype(np.int64)


def linear_taps(in_size: int, out_size: int, scale: float, ctm: str) -> tuple[tuple[int, int, float], ...]:
    """Linear interpolation taps of one axis: ``(first index, second index, weight of the second)``
    per output position, indices clamped to the input (ONNX ``linear`` Resize)."""
    xo = source_coords(in_size, out_size, scale, ctm)
    i0 = np.floor(xo)
    r = xo - i0
    lo = np.clip(i0, 0, in_size - 1).astype(np.int64)
    hi = np.clip(i0 + 1, 0, in_size - 1).astype(np.int64)
    return tuple((int(a), int(b), float(w)) for a, b, w in zip(lo, hi, r))


def repeat_factors(index: tuple, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Integer factor per axis when a nearest ``Resize`` index repeats every source position the
    same number of times in order (a plain pixel repetition), else None."""
    out = []
    for n, idx in zip(shape, index):
        if idx is None:
            out.append(1)
            continue
        f = len(idx) // n if n else 0
        if f < 1 or len(idx) != n * f or list(idx) != [i // f for i in range(n * f)]:
            return None
        out.append(f)
    return tuple(out)


def _resize_geometry(ctx, node, at, xs: tuple[int, ...]):
    """(axes, scales, sizes, roi, ctm, nearest_mode) of a Resize/Upsample node."""
    rank = len(xs)
    if node.op_type == "Upsample":
        scales = [float(v) for v in (ctx.need_const(node, node.input[1], "Upsample scales").reshape(-1)
                                     if len(node.input) > 1 else at["scales"])]
        return list(range(rank)), scales, [int(math.floor(n * s)) for n, s in zip(xs, scales)], None, \
            "asymmetric", "floor"
    roi = _opt_const(ctx, node, 1, "Resize roi")
    scales = _opt_const(ctx, node, 2, "Resize scales")
    sizes = _opt_const(ctx, node, 3, "Resize sizes")
    axes = [norm_axis(int(a), rank) for a in at.get("axes", range(rank))]
    ctm = at.get("coordinate_transformation_mode", "half_pixel")
    nearest = at.get("nearest_mode", "round_prefer_floor")
    if scales is not None and scales.size == 0:
        scales = None
    if sizes is not None and sizes.size == 0:
        sizes = None
    if sizes is not None:
        sizes = _ints(sizes)
        policy = at.get("keep_aspect_ratio_policy", "stretch")
        sc = [sizes[k] / xs[a] for k, a in enumerate(axes)]
        if policy != "stretch":
            s = min(sc) if policy == "not_larger" else max(sc)
            sc = [s] * len(axes)
            sizes = [int(math.floor(s * xs[a] + 0.5)) for a in axes]
        scales = sc
    elif scales is not None:
        scales = [float(v) for v in np.asarray(scales).reshape(-1)]
        sizes = [int(math.floor(xs[a] * s)) for a, s in zip(axes, scales)]
    else:
        raise ctx.err(node, "Resize needs scales or sizes")
    if any(s <= 0 for s in sizes):
        raise ctx.err(node, "Resize to a zero-size tensor")
    roi_v = None if roi is None or roi.size == 0 else np.asarray(roi, np.float64).reshape(-1)
    return axes, scales, sizes, roi_v, ctm, nearest


def _resize(ctx, node, at) -> None:
    """Resize/Upsample: ``nearest`` (any opset, any axes, every coordinate and rounding mode) becomes
    an IR ``Resize`` with a per-axis ``index`` (a selection, exact in float and integer); ``linear``
    of the last two axes becomes an IR ``Resize`` with ``mode="linear"`` and per-axis ``taps``
    (float targets only: it has no integer semantics)."""
    x = node.input[0]
    xs = ctx.shape(node, x)
    rank = len(xs)
    mode = at.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ctx.err(node, f"{node.op_type} mode {mode!r} is not supported (only 'nearest' and 'linear')")
    axes, scales, sizes, roi_v, ctm, nearest = _resize_geometry(ctx, node, at, xs)
    if ctm == "tf_crop_and_resize" and roi_v is not None:
        raise ctx.err(node, "Resize tf_crop_and_resize (extrapolation) is not supported")
    if mode == "linear":
        resized = [a for k, a in enumerate(axes) if sizes[k] != xs[a] or scales[k] != 1.0]
        if rank != 4 or any(a < 2 for a in resized):
            raise ctx.err(node, "linear Resize is supported on the spatial axes of NCHW tensors only")
        if int(at.get("exclude_outside", 0)) or (int(at.get("antialias", 0)) and min(scales) < 1):
            raise ctx.err(node, "linear Resize with exclude_outside or antialias is not supported")
        if ctm not in ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"):
            raise ctx.err(node, f"linear Resize with coordinate_transformation_mode={ctm} is not supported")
        full = {a: (sizes[k], scales[k]) for k, a in enumerate(axes)}
        taps = tuple(linear_taps(xs[a], *full.get(a, (xs[a], 1.0)), ctm) for a in (2, 3))
        ctx.emit("Resize", node.name, [ctx.use(x)], [node.output[0]], mode="linear", taps=taps)
        return
    per_axis: list = [None] * rank
    for k, a in enumerate(axes):
        try:
            idx = nearest_index(xs[a], sizes[k], scales[k], ctm, nearest)
        except ValueError as e:
            raise ctx.err(node, f"Resize: unsupported {e}") from None
        per_axis[a] = _axis_index(xs[a], idx)
    _emit_select(ctx, node, "Resize", x, node.output[0], per_axis)


def _hard(ctx, node, at) -> None:
    if node.op_type == "HardSigmoid":
        ctx.emit("HardSigmoid", node.name, [node.input[0]], [node.output[0]], alpha=float(at.get("alpha", 0.2)),
                 beta=float(at.get("beta", 0.5)))
    else:
        ctx.emit(node.op_type, node.name, [node.input[0]], [node.output[0]])


def chain(ctx, node, op: str) -> None:
    """A variadic ``op`` (Sum, Max, Min) as a left-to-right chain of binary ``op`` nodes."""
    ins = [ctx.use(i) for i in node.input]
    if len(ins) == 1:
        ctx.emit("Identity", node.name, ins, [node.output[0]])
        return
    acc = ins[0]
    for k, nxt in enumerate(ins[1:]):
        last = k == len(ins) - 2
        out = node.output[0] if last else ctx.tmp(node.output[0] + ".part")
        ctx.emit(op, node.name if last else ctx.tmp(node.name), [acc, nxt], [out])
        acc = out


def _minmax(ctx, node, at) -> None:
    chain(ctx, node, node.op_type)


HANDLERS: dict[str, Any] = {
    "Slice": _slice, "Split": _split, "Gather": _gather, "ReduceMean": _reduce, "ReduceMax": _reduce,
    "ReduceSum": _reduce, "Resize": _resize, "Upsample": _resize, "HardSigmoid": _hard, "HardSwish": _hard,
    "Max": _minmax, "Min": _minmax,
}
