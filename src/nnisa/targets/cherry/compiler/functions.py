"""Lowerings of elementwise functions, normalisations, reductions and data movement (§6.4, §6.8).

Every function is built from the ISA's tile operations (``exp`` = eˣ, ``log`` = log₂, ``div``,
``pow``, ``gtz``, ``relu``, ``add``/``sub``/``mul``) and constants that are 0 in the padding, so
the zero-padding invariant (§5.3) holds after each step:

* Tanh = 1 − 2/(1 + e^{2x}); Log = log₂(x)·ln 2; Sqrt/Pow = ``pow``; Reciprocal = 1/x;
* Clip(lo, hi): y = x + relu(lo − x), then y − relu(y − hi) (each side only when finite; exact inside);
  HardSigmoid = Clip(αx + β, 0, 1); HardSwish = x·HardSigmoid(x, 1/6, 1/2);
* Erf (Abramowitz & Stegun 7.1.26, |error| ≤ 1.5e-7, below the cherry18 step):
  sign(x)·(1 − t·P(t)·e^{−x²}), t = 1/(1 + p|x|), |x| = relu(x) + relu(−x),
  sign(x) = gtz(x) − gtz(−x); GELU = ½x(1 + erf(x/√2)) or its tanh form;
* LRN: x·(bias + α/size·Σ x²)^−β, the channel-window sums one matmul by a banded constant;
* LayerNorm: row sums (``sum`` reductions) × 1/n, device broadcasts, (var + ε)^−½ by ``pow``;
* Softmax / ReduceMean/Sum/Max on any axes: the tensor is viewed as (before, axis, after)
  matrices and reduced over rows (or over columns when nothing follows the axes);
* Concat, Slice/Split/Gather, Pad, nearest Resize, Expand: host data-movement steps (§5.3);
  an embedding Gather of ids is a one-hot matmul on the device;
* linear Resize (separable): two matmuls by constant interpolation matrices on the device,
  Aₕ · X · A_wᵀ per (n, c) image (each row of A holds the two taps' weights);
* Greater(x, y) = gtz(x − y), Less = gtz(y − x), Equal = 1 − gtz(x − y) − gtz(y − x),
  Not = 1 − x: booleans are the floats 0/1 (exact in every element format).
"""

from __future__ import annotations

import math

import numpy as np

from ....frontend.kernels import pool_counts
from ..layout import mat_shape, nhwc, plain

#: Abramowitz & Stegun 7.1.26
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _interp_matrix(taps, size: int) -> np.ndarray:
    """(out, size) linear-interpolation matrix of one axis from taps ``(i0, i1, weight of i1)``."""
    a = np.zeros((len(taps), size), np.float64)
    for o, (i0, i1, r) in enumerate(taps):
        a[o, i0] += 1.0 - r
        a[o, i1] += r
    return a.astype(np.float32)


def _prod(v) -> int:
    return int(np.prod(v, dtype=np.int64))


class FunctionLowerings:
    """``op_*`` lowerings mixed into the graph lowering (it provides ``b``, ``value``, ``shape``...)."""

    # elementwise building blocks on one (tensor, view) ------------------------------------
    def _k(self, value: float, view: dict) -> int:
        return self.masked(float(value), view)

    def _ew(self, op: str, x: int, y: int | None = None) -> int:
        return self.b.elementwise(op, x, y)

    def _scale(self, x: int, view: dict, a: float) -> int:
        return x if a == 1.0 else self._ew("mul", x, self._k(a, view))

    def _shift(self, x: int, view: dict, c: float) -> int:
        return x if c == 0.0 else self._ew("add", x, self._k(c, view))

    def _clip(self, x: int, view: dict, lo: float, hi: float) -> int:
        """x + relu(lo − x), then y − relu(y − hi): inside the bounds both corrections are exactly 0,
        so x passes unchanged (hi − relu(hi − x) would cancel every |x| below hi·2⁻²⁴ to 0)."""
        if lo == 0:
            x = self._ew("relu", x)
        elif np.isfinite(lo):
            x = self._ew("add", x, self._ew("relu", self._ew("sub", self._k(lo, view), x)))
        if np.isfinite(hi):
            x = self._ew("sub", x, self._ew("relu", self._ew("sub", x, self._k(hi, view))))
        return x

    def _tanh(self, x: int, view: dict) -> int:
        one = self._k(1.0, view)
        e = self._ew("exp", self._scale(x, view, 2.0))
        return self._ew("sub", one, self._ew("div", self._k(2.0, view), self._ew("add", one, e)))

    def _erf(self, x: int, view: dict) -> int:
        zero = self._k(0.0, view)
        neg = self._ew("sub", zero, x)
        mag = self._ew("add", self._ew("relu", x), self._ew("relu", neg))
        sign = self._ew("sub", self._ew("gtz", x), self._ew("gtz", neg))
        one = self._k(1.0, view)
        t = self._ew("div", one, self._shift(self._scale(mag, view, _ERF_P), view, 1.0))
        poly = self._scale(t, view, _ERF_A[4])
        for a in reversed(_ERF_A[:4]):
            poly = self._ew("mul", self._shift(poly, view, a), t)
        g = self._ew("exp", self._ew("sub", zero, self._ew("mul", mag, mag)))
        return self._ew("mul", sign, self._ew("sub", one, self._ew("mul", poly, g)))

    def _unary_fn(self, n, fn):
        tid, view = self.value(n.inputs[0])
        return fn(tid, view), view

    # activations --------------------------------------------------------------------------
    def op_Exp(self, n):
        return self._unary_fn(n, lambda x, v: self._ew("exp", x))

    def op_Log(self, n):
        return self._unary_fn(n, lambda x, v: self._scale(self._ew("log", x), v, math.log(2.0)))

    def op_Tanh(self, n):
        return self._unary_fn(n, self._tanh)

    def op_Erf(self, n):
        return self._unary_fn(n, self._erf)

    def op_Sqrt(self, n):
        return self._unary_fn(n, lambda x, v: self._ew("pow", x, self._k(0.5, v)))

    def op_Reciprocal(self, n):
        return self._unary_fn(n, lambda x, v: self._ew("div", self._k(1.0, v), x))

    def op_Pow(self, n):
        if len(n.inputs) > 1:
            return self._binary(n, "pow")
        e = float(n.attrs["exponent"])

        def fn(x, v):
            if e == 1.0:
                return x
            if e == 2.0:
                return self._ew("mul", x, x)
            return self._ew("pow", x, self._k(e, v))
        return self._unary_fn(n, fn)

    def op_Clip(self, n):
        lo, hi = float(n.attrs["min"]), float(n.attrs["max"])
        return self._unary_fn(n, lambda x, v: self._clip(x, v, lo, hi))

    def op_HardSigmoid(self, n):
        a, c = float(n.attrs["alpha"]), float(n.attrs["beta"])
        return self._unary_fn(n, lambda x, v: self._clip(self._shift(self._scale(x, v, a), v, c), v, 0.0, 1.0))

    def op_HardSwish(self, n):
        def fn(x, v):
            return self._ew("mul", x, self._clip(self._shift(self._scale(x, v, 1 / 6), v, 0.5), v, 0.0, 1.0))
        return self._unary_fn(n, fn)

    def op_Gelu(self, n):
        def fn(x, v):
            if n.attrs.get("approximate", "none") == "tanh":
                inner = self._ew("mul", x, self._shift(self._scale(self._ew("mul", x, x), v, 0.044715), v, 1.0))
                s = self._tanh(self._scale(inner, v, math.sqrt(2.0 / math.pi)), v)
            else:
                s = self._erf(self._scale(x, v, 1.0 / math.sqrt(2.0)), v)
            return self._ew("mul", self._scale(x, v, 0.5), self._shift(s, v, 1.0))
        return self._unary_fn(n, fn)

    def op_Max(self, n):
        return self._minmax(n, "max")

    def op_Min(self, n):
        return self._minmax(n, "min")

    def _minmax(self, n, kind):
        x, y, view = self._pair(n)
        r = self._ew("relu", self._ew("sub", x, y))
        return (self._ew("add", y, r) if kind == "max" else self._ew("sub", x, r)), view

    # normalisations and reductions --------------------------------------------------------
    def _axis_view(self, s, a0: int, a1: int) -> tuple[dict, int]:
        """A plain view of ``s`` with axes a0..a1-1 as matrix rows (reduction matrix axis 0) or,
        when nothing follows them, as columns (axis 1)."""
        before, mid, after = _prod(s[:a0]), _prod(s[a0:a1]), _prod(s[a1:])
        if after == 1:
            return plain(s, (1, before, mid)), 1
        return plain(s, (before, mid, after)), 0

    def _row_reduce(self, x: int, axis: int, op: str, mean: bool = False) -> tuple[int, dict]:
        """Reduce the matrix axis; returns the tensor and a plain view of its (B, R, 1)/(B, 1, C) shape."""
        r = self.b.reduce(x, axis, op)
        shape = self.b.shape(r)
        view = plain(shape, shape)
        if mean:
            count = self.b.shape(x)[1 + axis]
            r = self._ew("mul", r, self._k(1.0 / count, view))
        return r, view

    def _softmax(self, x: int, axis: int, count: int) -> int:
        mx = self.b.broadcast(self._row_reduce(x, axis, "max")[0], axis, count)
        e = self._ew("exp", self._ew("sub", x, mx))
        total = self.b.broadcast(self._row_reduce(e, axis, "sum")[0], axis, count)
        return self._ew("div", e, total)

    def op_Softmax(self, n):
        s = self.shape(n.inputs[0])
        a = n.attrs["axis"]
        view, axis = self._axis_view(s, a, a + 1)
        return self._softmax(self.as_view(n.inputs[0], view), axis, s[a]), view

    def op_MaskedSoftmax(self, n):
        s = self.shape(n.inputs[0])
        x, cur = self._binary(n, "add")
        a = n.attrs["axis"]
        view, axis = self._axis_view(s, a, a + 1)
        x = self.b.relayout(x, cur, view) if cur != view and not (
            cur["kind"] == view["kind"] == "plain" and cur["mat"] == view["mat"]) else x
        return self._softmax(x, axis, s[a]), view

    def op_LayerNorm(self, n):
        s = self.shape(n.inputs[0])
        a = n.attrs["axis"]
        view = plain(s, (1, _prod(s[:a]), _prod(s[a:])))
        x = self.as_view(n.inputs[0], view)
        cols = view["mat"][2]
        mean, _ = self._row_reduce(x, 1, "sum", mean=True)
        d = self._ew("sub", x, self.b.broadcast(mean, 1, cols))
        var, vview = self._row_reduce(self._ew("mul", d, d), 1, "sum", mean=True)
        inv = self._ew("pow", self._shift(var, vview, float(n.attrs["epsilon"])), self._k(-0.5, vview))
        y = self._ew("mul", d, self.b.broadcast(inv, 1, cols))
        y = self._ew("mul", y, self.const_like(self.g.initializers[n.inputs[1]], s, view))
        bias = self.g.initializers[n.inputs[2]]
        if np.any(bias):
            y = self._ew("add", y, self.const_like(bias, s, view))
        return y, view

    def op_LRN(self, n):
        """x·(bias + α/size·Σ_window x²)^−β on channels-last rows: the window sums over channels are
        one matmul of x² by a constant banded (C, C) matrix that already holds α/size."""
        s = self.shape(n.inputs[0])
        if len(s) != 4:
            raise self.err(n, "LRN of a rank-4 (NCHW) tensor only")
        a = n.attrs
        view = nhwc(s)
        x = self.as_view(n.inputs[0], view)
        c, size = s[1], int(a["size"])
        lo = (size - 1) // 2
        src = np.arange(c)[:, None]
        dst = np.arange(c)[None, :]
        band = ((src >= dst - lo) & (src <= dst - lo + size - 1)).astype(np.float32) * (a["alpha"] / size)
        total = self.b.matmul(self._ew("mul", x, x), self.b.const(band[None]))
        inv = self._ew("pow", self._shift(total, view, float(a["bias"])), self._k(-float(a["beta"]), view))
        return self._ew("mul", x, inv), view

    def _reduce(self, n, op: str, mean: bool = False):
        s = self.shape(n.inputs[0])
        axes = sorted(n.attrs["axes"]) or list(range(len(s)))
        ys = self.shape(n.outputs[0])
        if axes == list(range(axes[0], axes[-1] + 1)):
            view, axis = self._axis_view(s, axes[0], axes[-1] + 1)
            x = self.as_view(n.inputs[0], view)
        else:  # move the reduced axes last (a host permute)
            perm = [d for d in range(len(s)) if d not in axes] + axes
            ps = [s[d] for d in perm]
            view = plain(ps, (1, _prod(ps[:len(s) - len(axes)]), _prod([s[d] for d in axes])))
            tid, cur = self.value(n.inputs[0])
            x, axis = self.b.host("permute", tid, mat_shape(view), src_view=cur, dst_view=view, perm=perm), 1
        r, rview = self._row_reduce(x, axis, op, mean)
        return r, plain(ys, rview["mat"])

    def op_ReduceMean(self, n):
        return self._reduce(n, "sum", mean=True)

    def op_ReduceSum(self, n):
        return self._reduce(n, "sum")

    def op_ReduceMax(self, n):
        return self._reduce(n, "max")

    def op_AveragePool(self, n):
        win, _, view = self._pool_windows(n, fill=0.0)  # zero padding; the divisor excludes it
        xs = self.shape(n.inputs[0])
        counts = pool_counts(n.attrs, xs[2], xs[3]).astype(np.float64)
        nb, c = xs[0], xs[1]
        inv = np.broadcast_to((1.0 / counts).reshape(1, -1, 1), (nb, counts.size, c)).reshape(1, -1, c)
        return self._ew("mul", self.b.sum_leading(win), self.b.const(inv.astype(np.float32))), view

    # data movement ------------------------------------------------------------------------
    def _move(self, n, op: str, names: list[str], **params):
        ys = self.shape(n.outputs[0])
        view = nhwc(ys) if len(ys) == 4 else plain(ys)
        srcs, views = [], []
        for name in names:
            if self.is_const(name):
                v = np.asarray(self.g.initializers[name], np.float32)
                views.append(plain(v.shape))
                srcs.append(self.b.const(v.reshape(mat_shape(views[-1]))))
            else:
                tid, cur = self.value(name)
                srcs.append(tid)
                views.append(cur)
        out = self.b.host(op, srcs, mat_shape(view), src_views=views, dst_view=view, **params)
        return out, view

    def op_Concat(self, n):
        return self._move(n, "concat", list(n.inputs), axis=int(n.attrs["axis"]))

    def op_Slice(self, n):
        index = [None if i is None else [int(v) for v in i] for i in n.attrs["index"]]
        return self._move(n, "take", [n.inputs[0]], index=index)

    def op_Resize(self, n):
        if n.attrs.get("mode") == "linear":
            return self._resize_linear(n)
        return self.op_Slice(n)

    def _resize_linear(self, n):
        """Y = Aₕ · X · A_wᵀ for every (n, c) image: X @ A_wᵀ (A_wᵀ broadcast over the images),
        then Aₕ @ that (Aₕ broadcast); the taps come from the importer (ONNX coordinate rules)."""
        nb, c, h, w = self.shape(n.inputs[0])
        ys = self.shape(n.outputs[0])
        th, tw = n.attrs["taps"]
        x = self.as_view(n.inputs[0], plain((nb, c, h, w)))
        y = self.b.matmul(x, self.b.const(_interp_matrix(tw, w).T[None]))
        y = self.b.matmul(self.b.const(_interp_matrix(th, h)[None]), y)
        return y, plain(ys)

    # comparisons and logic (booleans as 0/1 floats) ----------------------------------------
    def _compare(self, n, kind: str):
        x, y, view = self._pair(n)
        if kind == "Less":
            x, y = y, x
        d = self._ew("sub", x, y)
        gt = self._ew("gtz", d)
        if kind != "Equal":
            return gt, view
        lt = self._ew("gtz", self._ew("sub", self._k(0.0, view), d))
        return self._ew("sub", self._ew("sub", self._k(1.0, view), gt), lt), view

    def op_Greater(self, n):
        return self._compare(n, "Greater")

    def op_Less(self, n):
        return self._compare(n, "Less")

    def op_Equal(self, n):
        return self._compare(n, "Equal")

    def op_Not(self, n):
        return self._unary_fn(n, lambda x, v: self._ew("sub", self._k(1.0, v), x))

    def op_Pad(self, n):
        return self._move(n, "pad", [n.inputs[0]], pads=[int(v) for v in n.attrs["pads"]],
                          value=float(n.attrs["value"]))

    def op_Where(self, n):
        """``b + c·(a − b)`` with the condition as 0/1 floats; constant infinities (mask fill values)
        become ±1e30 so the products stay finite (a softmax then gives them weight 0 all the same)."""
        ys = self.shape(n.outputs[0])
        acts = [i for i in n.inputs if not self.is_const(i) and self.shape(i) == ys]
        view = self.value(acts[0])[1] if acts else plain(ys)

        def operand(name):
            if self.is_const(name):
                v = np.asarray(self.g.initializers[name], np.float64)
                return self.const_like(np.clip(np.nan_to_num(v, posinf=1e30, neginf=-1e30), -1e30, 1e30), ys, view)
            if self.shape(name) == ys:
                return self.as_view(name, view)
            tid, cur = self.value(name)
            return self.b.host("broadcast", tid, mat_shape(view), src_view=cur, dst_view=view)
        c, a, b = (operand(i) for i in n.inputs)
        return self._ew("add", b, self._ew("mul", c, self._ew("sub", a, b))), view

    def op_Cast(self, n):
        """Every device value is a float: a Cast to a float type is the identity (ids and masks
        are exact small integers in either element format)."""
        if not np.issubdtype(np.dtype(n.attrs["to"]), np.floating):
            raise self.err(n, f"Cast to {n.attrs['to']}: Cherry holds floats only")
        return self.value(n.inputs[0])

    def op_Expand(self, n):
        ys = self.shape(n.outputs[0])
        tid, cur = self.value(n.inputs[0])
        return self.b.host("broadcast", tid, mat_shape(plain(ys)), src_view=cur, dst_view=plain(ys)), plain(ys)

    def op_Gather(self, n):
        """Embedding lookup ``table[ids]`` as one-hot(ids) @ table on the device: the one-hot rows are
        gtz(½ − |ids − v|) over the columns v (ids are exact in cherry18 below 1024)."""
        table = np.asarray(self.g.initializers[n.inputs[1]], np.float32)
        if n.attrs["axis"] != 0 or table.ndim != 2 or table.shape[0] > 1024:
            raise self.err(n, "Gather: only embeddings (axis 0 of a 2-D table of at most 1024 rows, "
                              "exact ids in cherry18) are supported")
        ids_shape = self.shape(n.inputs[0])
        rows, vocab = _prod(ids_shape), table.shape[0]
        col = plain(ids_shape, (1, rows, 1))
        ids = self.as_view(n.inputs[0], col)
        spread = self.b.broadcast(ids, 1, vocab)
        grid = plain((rows, vocab))
        d = self._ew("sub", spread, self.b.const(np.broadcast_to(np.arange(vocab, dtype=np.float32), (1, rows, vocab))))
        mag = self._ew("add", self._ew("relu", d), self._ew("relu", self._ew("sub", self._k(0.0, grid), d)))
        onehot = self._ew("gtz", self._ew("sub", self._k(0.5, grid), mag))
        ys = self.shape(n.outputs[0])
        return self.b.matmul(onehot, self.b.const(table[None])), plain(ys, (1, rows, table.shape[1]))
