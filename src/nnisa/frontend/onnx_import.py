"""ONNX → IR: load, check, convert, infer shapes, fold constants and decomposed LayerNorm/GELU, lower, optimise.

Public entry point: :func:`load_model`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference, version_converter

from ..core.errors import FormatError, NnisaError, UnsupportedError
from ..core.fileio import check_regular_file

from .batch import fix_batch
from .constfold import Folded, fold_constants
from .float_eval import run_node
from .import_ops import HANDLERS as IMPORT_HANDLERS
from .import_ops import chain
from .import_ops import norm_axis as _norm_axis
from .import_transformer import HANDLERS as TRANSFORMER_HANDLERS
from .fuse_patterns import fuse_patterns
from .recurrent import HANDLERS as RECURRENT_HANDLERS
from .ir import Graph, Node, TensorInfo
from .kernels import pool_out_size
from .passes import optimize

#: models older than this are upgraded to it (onnx has an adapter for every upgrade); newer models
#: are read at their own opset: every handler implements each version of its operator
MIN_OPSET = 13
#: kept for callers that still pass ``opset=TARGET_OPSET`` explicitly (a forced conversion)
TARGET_OPSET = 17


def _read(model: Any) -> tuple[onnx.ModelProto, str | None]:
    if isinstance(model, onnx.ModelProto):
        return model, None
    if isinstance(model, (bytes, bytearray)):
        try:
            return onnx.load_model_from_string(bytes(model)), None
        except Exception as e:
            raise FormatError(f"cannot parse ONNX model bytes: {e}") from None
    path = os.fspath(model)
    if not os.path.exists(path):
        raise FormatError("ONNX model file not found", file=path)
    check_regular_file(path)
    try:
        return onnx.load(path), path
    except Exception as e:  # protobuf raises several unrelated types
        raise FormatError(f"not a readable ONNX model ({type(e).__name__}: {e})", file=path) from None


def _default_opset(m: onnx.ModelProto) -> int:
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 0


def _fix_symbolic_inputs(m: onnx.ModelProto, path: str | None) -> None:
    """Give a symbolic batch dimension (axis 0) the static value 1; any other symbolic input
    dimension is an error (nnisa compiles for fixed shapes)."""
    inits = {t.name for t in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if not d.HasField("dim_value") or d.dim_value <= 0:
                if axis > 0:
                    name = d.dim_param or "?"
                    raise UnsupportedError(
                        f"input {vi.name!r} has a dynamic dimension {name!r} at axis {axis}; nnisa compiles "
                        "for fixed shapes (export with static shapes, or fix it with "
                        "onnx.tools.update_model_dims)", file=path)
                d.dim_value = 1


def _check_initializers(m: onnx.ModelProto, path: str | None) -> None:
    """Weights must be finite numbers.  ±inf is allowed in a Pad's constant value (MaxPool padding),
    in a scalar, and in a constant only read by Where/Add (attention-mask fill values); NaN never."""
    pad_values = {n.input[2] for n in m.graph.node if n.op_type == "Pad" and len(n.input) > 2}
    users: dict[str, set[str]] = {}
    for n in m.graph.node:
        for i in n.input:
            users.setdefault(i, set()).add(n.op_type)
    for t in m.graph.initializer:
        if t.name in pad_values:
            continue
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
            continue
        a = numpy_helper.to_array(t)
        if a.size and np.isnan(a).any():
            raise FormatError(f"initializer {t.name!r} contains NaN or infinity", file=path)
        if a.size > 1 and not np.isfinite(a).all() and not users.get(t.name, set()) <= {"Where", "Add"}:
            raise FormatError(f"initializer {t.name!r} contains NaN or infinity", file=path)


def load_model(model: Any, *, opset: int | None = None, declared_batch: bool = False) -> Graph:
    """Import an ONNX model into the nnisa float IR.

    Parameters
    ----------
    model : str, os.PathLike, bytes or onnx.ModelProto
        The model file, its serialized bytes, or a loaded proto.
    opset : int, optional
        Force a conversion of the default-domain opset to this version (onnx's version
        converter).  By default the model is read at its own opset; only models older than
        :data:`MIN_OPSET` are upgraded to it.
    declared_batch : bool
        Keep a fixed first dimension B > 1 as declared (a compiler that runs the B rows in one
        program, as Tensil's own compiler does) instead of the batch-1 graph of
        :mod:`nnisa.frontend.batch`.

    Returns
    -------
    Graph
        Topologically ordered, constant-folded, normalized graph (see ``docs/frontend.md``).

    Raises
    ------
    FormatError
        The file is missing, unreadable or fails ``onnx.checker``.
    UnsupportedError
        The model uses an operator or feature nnisa cannot lower (message names the node,
        its op type and the model file), or opset conversion fails.
    """
    proto, path = _read(model)
    try:
        onnx.checker.check_model(proto)
    except Exception as e:
        raise FormatError(f"invalid ONNX model: {str(e).splitlines()[0] if str(e) else e}", file=path) from None
    m = onnx.ModelProto()
    m.CopyFrom(proto)
    have = _default_opset(m)
    newest = onnx.defs.onnx_opset_version()
    if opset is None and have > newest:
        raise UnsupportedError(f"the model uses opset {have}; the installed onnx {onnx.__version__} knows up to "
                               f"{newest} (upgrade the onnx package)", file=path)
    want = opset if opset is not None else (MIN_OPSET if have < MIN_OPSET else have)
    if have != want:
        try:
            m = version_converter.convert_version(m, want)
        except Exception as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            if "Assertion" in msg or "adapter" in msg.lower():
                msg = "onnx's version converter has no adapter for an operator of this model"
            raise UnsupportedError(f"cannot convert from opset {have} to {want}: {msg}", file=path) from None
    _fix_symbolic_inputs(m, path)
    _check_initializers(m, path)
    try:
        m = shape_inference.infer_shapes(m)
        folded = fold_constants(m)
        fuse_patterns(folded)
    except NnisaError:
        raise
    except Exception as e:
        raise UnsupportedError(f"shape inference / constant folding failed: {str(e).splitlines()[0]}", file=path) from None
    g = _lower(folded, m.graph.name or "graph", path)
    optimize(g)
    if not declared_batch:
        fix_batch(g)  # a fixed first dimension B > 1: the per-row graph, or the whole batch as one sample
    for t in list(g.inputs) + list(g.outputs):
        if any(int(d) == 0 for d in t.shape):
            raise UnsupportedError(f"tensor {t.name!r} has a zero-size shape {list(t.shape)}", file=path)
    return g


# --------------------------------------------------------------------------- lowering


class _Ctx:
    """State of one lowering run: the folded model, the graph being built and name counters."""

    def __init__(self, f: Folded, graph: Graph, path: str | None):
        self.f = f
        self.g = graph
        self.path = path
        self.n = 0
        self.used = {i for n in f.nodes for i in n.input} | set(f.outputs)

    def unused(self, names) -> bool:
        """True when none of ``names`` is read by a node or is a graph output."""
        return not any(o and o in self.used for o in names)

    def err(self, node: onnx.NodeProto, msg: str) -> UnsupportedError:
        return UnsupportedError(msg, where=f"node {node.name or node.output[0]} ({node.op_type})", file=self.path)

    def const(self, name: str) -> np.ndarray | None:
        return self.f.consts.get(name) if name else None

    def need_const(self, node, name: str, what: str) -> np.ndarray:
        v = self.const(name)
        if v is None:
            raise self.err(node, f"{what} must be a constant")
        return v

    def shape(self, node, name: str) -> tuple[int, ...]:
        if name in self.f.types:
            return tuple(self.f.types[name][0])
        raise self.err(node, f"tensor {name!r} has no static shape")

    def add_init(self, base: str, value: np.ndarray) -> str:
        name = base
        while name in self.g.initializers or name in self.f.consts or name in self.g.tensors:
            self.n += 1
            name = f"{base}_{self.n}"
        self.g.initializers[name] = np.ascontiguousarray(value)
        return name

    def tmp(self, base: str) -> str:
        self.n += 1
        return f"{base}__{self.n}"

    def emit(self, op: str, name: str, inputs: list[str], outputs: list[str], **attrs) -> Node:
        node = Node(op, name, list(inputs), list(outputs), attrs)
        self.g.nodes.append(node)
        return node

    def use(self, name: str) -> str:
        """Register a constant input as an initializer and return its name."""
        if name in self.f.consts and name not in self.g.initializers:
            v = self.f.consts[name]
            self.g.initializers[name] = v.astype(np.float32) if v.dtype.kind == "f" else v
        return name


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _nd_pads(ctx, node, at, in_sizes, kernel, strides, dil) -> tuple[list[int], list[int]]:
    """Resolve ``pads``/``auto_pad`` to per-axis ``(begins, ends)``."""
    r = len(in_sizes)
    auto = at.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        p = list(at.get("pads", [0] * (2 * r)))
        if len(p) != 2 * r:
            raise ctx.err(node, f"pads has {len(p)} values for {r} spatial axes")
        return p[:r], p[r:]
    if auto == "VALID":
        return [0] * r, [0] * r
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dil):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        b, e = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
        begins.append(b)
        ends.append(e)
    return begins, ends


def _spatial_pads(ctx, node, at, in_hw, kernel, strides, dil, pool=False) -> tuple[int, int, int, int]:
    """Resolve ``pads``/``auto_pad`` to ``(top, left, bottom, right)``."""
    if len(in_hw) != 2:
        raise ctx.err(node, "only 2-D spatial padding is supported")
    b, e = _nd_pads(ctx, node, at, in_hw, kernel, strides, dil)
    return (b[0], b[1], e[0], e[1])


def _conv(ctx: _Ctx, node, at):
    x, wname = node.input[0], node.input[1]
    w = ctx.const(wname)
    xs = ctx.shape(node, x)
    if len(xs) not in (3, 4):
        raise ctx.err(node, f"only 1-D and 2-D convolution are supported (input rank {len(xs)})")
    one_d = len(xs) == 3
    if one_d:  # (N, C, L) → (N, C, 1, L): a 2-D convolution with kernel height 1
        at = _as_2d(at)
        x = _unsqueeze2(ctx, node, x)
        if w is not None:
            w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
        else:
            wname = _unsqueeze2(ctx, node, wname)
    wshape = w.shape if w is not None else ctx.shape(node, wname) if wname in ctx.f.types else None
    if wshape is None and one_d:
        ws = ctx.shape(node, node.input[1])
        wshape = (ws[0], ws[1], 1, ws[2])
    if wshape is None or len(wshape) != 4:
        raise ctx.err(node, "Conv weight must be a 2-D kernel (M, C/g, kh, kw)")
    xs4 = (xs[0], xs[1], 1, xs[2]) if one_d else xs
    kernel = tuple(at.get("kernel_shape", wshape[2:]))
    strides = tuple(at.get("strides", (1, 1)))
    dil = tuple(at.get("dilations", (1, 1)))
    pads = _spatial_pads(ctx, node, at, xs4[2:], kernel, strides, dil)
    b = ctx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    dyn_bias = len(node.input) > 2 and node.input[2] and b is None
    base = node.name or node.output[0]
    bname = ctx.add_init(f"{base}.bias", np.zeros(wshape[0], np.float32) if b is None else b.astype(np.float32))
    wref = ctx.add_init(f"{base}.W", w.astype(np.float32)) if w is not None else wname
    out = node.output[0]
    y = ctx.tmp(out + ".2d") if one_d else out
    y0 = ctx.tmp(out + ".nobias") if dyn_bias else y
    ctx.emit("Conv", node.name, [x, wref, bname], [y0], kernel=kernel, strides=strides,
             pads=pads, dilations=dil, group=int(at.get("group", 1)))
    if dyn_bias:  # a bias computed by the graph: broadcast (M,) over the spatial axes
        bt = ctx.tmp(out + ".bias")
        ctx.emit("Reshape", ctx.tmp(node.name + "_bias"), [node.input[2]], [bt], shape=(int(wshape[0]), 1, 1))
        ctx.emit("Add", ctx.tmp(node.name + "_addbias"), [y0, bt], [y])
    if one_d:
        ctx.emit("Squeeze", ctx.tmp(node.name + "_1d"), [y], [out], axes=(2,))


def _as_2d(at: dict) -> dict:
    """Attributes of a 1-D Conv/pool as those of the equivalent 2-D op with height 1."""
    at = dict(at)
    for k, fill in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
        if k in at:
            at[k] = [fill] + list(at[k])
    if "pads" in at:
        p = list(at["pads"])
        at["pads"] = [0, p[0], 0, p[1]]
    return at


def _unsqueeze2(ctx: _Ctx, node, x: str) -> str:
    """Insert an axis of size 1 at position 2 (``(N, C, L)`` → ``(N, C, 1, L)``)."""
    t = ctx.tmp(x + ".4d")
    ctx.emit("Unsqueeze", ctx.tmp(node.name + "_1d"), [x], [t], axes=(2,))
    return t


def _gemm(ctx: _Ctx, node, at):
    a, bname = node.input[0], node.input[1]
    alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
    b = ctx.const(bname)
    c_name = node.input[2] if len(node.input) > 2 else ""
    c = ctx.const(c_name)
    if at.get("transA", 0):
        t = ctx.tmp(a + ".T")
        ctx.emit("Transpose", ctx.tmp(node.name + "_transA"), [a], [t], perm=(1, 0))
        a = t
    out = node.output[0]
    if b is None:  # B computed by the graph: MatMul, then alpha and beta*C as elementwise ops
        if at.get("transB", 0):
            t = ctx.tmp(bname + ".T")
            ctx.emit("Transpose", ctx.tmp(node.name + "_transB"), [bname], [t], perm=(1, 0))
            bname = t
        y = out if alpha == 1.0 and not c_name else ctx.tmp(out + ".mm")
        ctx.emit("MatMul", node.name, [a, bname], [y])
        if alpha != 1.0:
            y2 = out if not c_name else ctx.tmp(out + ".alpha")
            ctx.emit("Mul", ctx.tmp(node.name + "_alpha"), [y, ctx.add_init(f"{node.name}.alpha",
                     np.array(alpha, np.float32))], [y2])
            y = y2
        if c_name:
            cn = ctx.use(c_name)
            if beta != 1.0:
                if c is None:
                    t = ctx.tmp(out + ".betaC")
                    ctx.emit("Mul", ctx.tmp(node.name + "_beta"), [c_name, ctx.add_init(f"{node.name}.beta",
                             np.array(beta, np.float32))], [t])
                    cn = t
                else:
                    cn = ctx.add_init(f"{node.name}.C", (beta * c).astype(np.float32))
            ctx.emit("Add", ctx.tmp(node.name + "_C"), [y, cn], [out])
        return
    w = (b.T if at.get("transB", 0) else b).astype(np.float32) * np.float32(alpha)
    n_out = w.shape[1]
    bias = np.zeros(n_out, np.float32)
    add_c = None
    if c_name:
        if c is None:
            add_c = c_name
            if beta != 1.0:
                add_c = ctx.tmp(out + ".betaC")
                ctx.emit("Mul", ctx.tmp(node.name + "_beta"), [c_name, ctx.add_init(f"{node.name}.beta",
                         np.array(beta, np.float32))], [add_c])
        elif c.size in (1, n_out) and (c.ndim < 2 or c.shape[0] == 1):
            bias = bias + (beta * c.astype(np.float32)).reshape(-1)
        else:
            add_c = ctx.add_init(f"{node.name}.C", (beta * c).astype(np.float32))
    wn = ctx.add_init(f"{node.name or out}.W", w)
    bn = ctx.add_init(f"{node.name or out}.bias", np.broadcast_to(bias, (n_out,)).astype(np.float32))
    if add_c is None:
        ctx.emit("Gemm", node.name, [a, wn, bn], [out])
    else:
        t = ctx.tmp(out + ".mm")
        ctx.emit("Gemm", node.name, [a, wn, bn], [t])
        ctx.emit("Add", ctx.tmp(node.name + "_C"), [t, add_c], [out])


def _matmul(ctx: _Ctx, node, at):
    a, bname = node.input
    b = ctx.const(bname)
    if b is not None and b.ndim == 2 and len(ctx.shape(node, a)) == 2:
        wn = ctx.use(bname)
        bn = ctx.add_init(f"{node.name or node.output[0]}.bias", np.zeros(b.shape[1], np.float32))
        ctx.emit("Gemm", node.name, [a, wn, bn], [node.output[0]])
    else:
        ctx.emit("MatMul", node.name, [ctx.use(a), ctx.use(bname)], [node.output[0]])


def _binary(ctx: _Ctx, node, at):
    a, b = node.input
    op = node.op_type
    if op == "Div":
        c = ctx.const(b)
        dtype = ctx.f.types.get(node.output[0], ((), "float32"))[1]
        if np.dtype(dtype).kind in "iu":  # integer Div truncates toward zero: never a reciprocal
            ctx.emit("Div", node.name, [ctx.use(a), ctx.use(b)], [node.output[0]], integer=True)
            return
        if c is None:  # divisor computed by the graph
            ctx.emit("Div", node.name, [ctx.use(a), b], [node.output[0]], integer=False)
            return
        b = ctx.add_init(f"{node.name}.recip", (1.0 / c.astype(np.float64)).astype(np.float32))
        op = "Mul"
    ctx.emit(op, node.name, [ctx.use(a), ctx.use(b)], [node.output[0]])


def _sum(ctx: _Ctx, node, at):
    chain(ctx, node, "Add")


def _unary(ctx: _Ctx, node, at):
    ctx.emit(node.op_type, node.name, [node.input[0]], [node.output[0]])


def _clip(ctx: _Ctx, node, at):
    if len(node.input) == 1 and ("min" in at or "max" in at):  # opset < 11 attributes
        ctx.emit("Clip", node.name, [node.input[0]], [node.output[0]], min=float(at.get("min", -np.inf)),
                 max=float(at.get("max", np.inf)))
        return
    names = [node.input[k] if len(node.input) > k and node.input[k] else "" for k in (1, 2)]
    vals = [ctx.const(n) for n in names]
    dyn = [bool(n) and v is None for n, v in zip(names, vals)]
    dtype = np.dtype(ctx.f.types.get(node.output[0], ((), "float32"))[1])
    if any(dyn) or dtype.kind in "iu":  # bounds computed by the graph (or integer data): Max then Min
        cur = node.input[0]
        steps = [(op, n) for op, n in (("Max", names[0]), ("Min", names[1])) if n]
        if not steps:
            ctx.emit("Identity", node.name, [cur], [node.output[0]])
        for k, (op, n) in enumerate(steps):
            out = node.output[0] if k == len(steps) - 1 else ctx.tmp(node.output[0] + ".lo")
            ctx.emit(op, node.name if k == len(steps) - 1 else ctx.tmp(node.name), [cur, ctx.use(n)], [out])
            cur = out
        return
    lo, hi = vals
    ctx.emit("Clip", node.name, [node.input[0]], [node.output[0]],
             min=float(lo) if lo is not None else -np.inf, max=float(hi) if hi is not None else np.inf)


def _leaky(ctx: _Ctx, node, at):
    ctx.emit("LeakyRelu", node.name, [node.input[0]], [node.output[0]], alpha=float(at.get("alpha", 0.01)))


def _pool(ctx: _Ctx, node, at):
    if not ctx.unused(node.output[1:]):
        raise ctx.err(node, "MaxPool Indices output is not supported")
    xs = ctx.shape(node, node.input[0])
    if node.op_type == "MaxPool" and at.get("storage_order", 0):
        raise ctx.err(node, "MaxPool storage_order=1 is not supported")
    if len(xs) == 3:  # 1-D: pool (N, C, 1, L) with a window of height 1
        x = _unsqueeze2(ctx, node, node.input[0])
        y = ctx.tmp(node.output[0] + ".2d")
        _pool2d(ctx, node, _as_2d(at), x, (xs[0], xs[1], 1, xs[2]), y)
        ctx.emit("Squeeze", ctx.tmp(node.name + "_1d"), [y], [node.output[0]], axes=(2,))
    elif len(xs) == 4:
        _pool2d(ctx, node, at, node.input[0], xs, node.output[0])
    elif len(xs) == 5:
        _pool3d(ctx, node, at, xs)
    else:
        raise ctx.err(node, f"pooling of a rank-{len(xs)} tensor is not supported (1-D, 2-D or 3-D)")


def _pool2d(ctx: _Ctx, node, at, x: str, xs, out: str, name: str | None = None):
    kernel = tuple(at["kernel_shape"])
    strides = tuple(at.get("strides", (1, 1)))
    dil = tuple(at.get("dilations", (1, 1)))
    pads = _spatial_pads(ctx, node, at, xs[2:], kernel, strides, dil, pool=True)
    attrs = dict(kernel=kernel, strides=strides, pads=pads, ceil_mode=bool(at.get("ceil_mode", 0)), dilations=dil)
    if node.op_type == "AveragePool":
        attrs["count_include_pad"] = bool(at.get("count_include_pad", 0))
    ctx.emit(node.op_type, name or node.name, [x], [out], **attrs)


def _pool3d(ctx: _Ctx, node, at, xs):
    """3-D pooling as two 2-D poolings: (H, W) windows, then D windows.

    Max is separable exactly; average pooling divides by the product of the per-axis counts,
    which is what the two stages compute (in the integer model each stage rounds).
    """
    n, c, d, h, w = xs
    k = list(at["kernel_shape"])
    s = list(at.get("strides", [1, 1, 1]))
    dl = list(at.get("dilations", [1, 1, 1]))
    begins, ends = _nd_pads(ctx, node, at, xs[2:], k, s, dl)
    common = {kk: v for kk, v in at.items() if kk in ("ceil_mode", "count_include_pad")}
    hw = dict(common, kernel_shape=k[1:], strides=s[1:], dilations=dl[1:], pads=[begins[1], begins[2], ends[1], ends[2]])
    base = node.output[0]
    t1, t2, t3 = ctx.tmp(base + ".dhw"), ctx.tmp(base + ".hw"), ctx.tmp(base + ".d")
    ctx.emit("Reshape", ctx.tmp(node.name + "_3d"), [node.input[0]], [t1], shape=(n, c * d, h, w))
    _pool2d(ctx, node, hw, t1, (n, c * d, h, w), t2, name=ctx.tmp(node.name + "_hw"))
    oh, ow = _pooled(h, k[1], s[1], begins[1], ends[1], dl[1], at), _pooled(w, k[2], s[2], begins[2], ends[2], dl[2], at)
    t2r = ctx.tmp(base + ".hwr")
    ctx.emit("Reshape", ctx.tmp(node.name + "_3d"), [t2], [t2r], shape=(n, c, d, oh * ow))
    dd = dict(common, kernel_shape=[k[0], 1], strides=[s[0], 1], dilations=[dl[0], 1], pads=[begins[0], 0, ends[0], 0])
    _pool2d(ctx, node, dd, t2r, (n, c, d, oh * ow), t3)
    od = _pooled(d, k[0], s[0], begins[0], ends[0], dl[0], at)
    ctx.emit("Reshape", ctx.tmp(node.name + "_3d"), [t3], [node.output[0]], shape=(n, c, od, oh, ow))


def _pooled(size, k, s, p0, p1, d, at) -> int:
    return pool_out_size(size, k, s, p0, p1, d, bool(at.get("ceil_mode", 0)))


def _global_pool(ctx: _Ctx, node, at):
    xs = ctx.shape(node, node.input[0])
    if len(xs) != 4:  # any other rank: a reduction over the spatial axes
        op = "ReduceMean" if node.op_type == "GlobalAveragePool" else "ReduceMax"
        ctx.emit(op, node.name, [node.input[0]], [node.output[0]], axes=tuple(range(2, len(xs))), keepdims=True)
    elif node.op_type == "GlobalAveragePool":
        ctx.emit("GlobalAveragePool", node.name, [node.input[0]], [node.output[0]])
    else:
        ctx.emit("MaxPool", node.name, [node.input[0]], [node.output[0]], kernel=tuple(xs[2:]), strides=(1, 1),
                 pads=(0, 0, 0, 0), dilations=(1, 1), ceil_mode=False)


def _batchnorm(ctx: _Ctx, node, at):
    if at.get("training_mode", 0) or not ctx.unused(node.output[1:]):
        raise ctx.err(node, "BatchNormalization in training mode is not supported")
    scale, bias, mean, var = (ctx.need_const(node, i, "BatchNormalization parameter").astype(np.float64) for i in node.input[1:5])
    a = scale / np.sqrt(var + float(at.get("epsilon", 1e-5)))
    shift = bias - mean * a
    an = ctx.add_init(f"{node.name or node.output[0]}.a", a.astype(np.float32))
    bn = ctx.add_init(f"{node.name or node.output[0]}.b", shift.astype(np.float32))
    ctx.emit("BatchNormalization", node.name, [node.input[0], an, bn], [node.output[0]])


def _flatten(ctx: _Ctx, node, at):
    rank = len(ctx.shape(node, node.input[0]))
    ctx.emit("Flatten", node.name, [node.input[0]], [node.output[0]], axis=_norm_axis(int(at.get("axis", 1)), rank))


def _reshape(ctx: _Ctx, node, at):
    xs = ctx.shape(node, node.input[0])
    c = ctx.const(node.input[1])
    if c is None:  # shape computed by the graph: shape inference may still know the result
        if node.output[0] not in ctx.f.types:
            raise ctx.err(node, "Reshape target shape is neither constant nor statically known")
        shape = ctx.shape(node, node.output[0])
    else:
        tgt = [int(v) for v in c.reshape(-1)]
        if not at.get("allowzero", 0):
            if any(v == 0 and i >= len(xs) for i, v in enumerate(tgt)):
                raise ctx.err(node, f"Reshape target {tgt} copies a dimension the input (rank {len(xs)}) lacks")
            tgt = [xs[i] if v == 0 else v for i, v in enumerate(tgt)]
        if tgt.count(-1) > 1 or any(v < -1 for v in tgt):
            raise ctx.err(node, f"invalid Reshape target {tgt}")
        known = int(np.prod([v for v in tgt if v != -1], dtype=np.int64))
        size = int(np.prod(xs, dtype=np.int64))
        if -1 in tgt:
            if known == 0 or size % known:
                raise ctx.err(node, f"cannot reshape {list(xs)} to {tgt}")
            tgt = [size // known if v == -1 else v for v in tgt]
        if int(np.prod(tgt, dtype=np.int64)) != size:
            raise ctx.err(node, f"cannot reshape {list(xs)} ({size} elements) to {tgt}")
        shape = tuple(tgt)
    if any(int(d) == 0 for d in shape):
        raise ctx.err(node, f"Reshape to a zero-size shape {list(shape)}")
    ctx.emit("Reshape", node.name, [node.input[0]], [node.output[0]], shape=tuple(int(d) for d in shape))


def _transpose(ctx: _Ctx, node, at):
    rank = len(ctx.shape(node, node.input[0]))
    perm = tuple(int(p) for p in at.get("perm", range(rank - 1, -1, -1)))
    ctx.emit("Transpose", node.name, [node.input[0]], [node.output[0]], perm=perm)


def _squeeze(ctx: _Ctx, node, at):
    xs = ctx.shape(node, node.input[0])
    given = at.get("axes")  # opset < 13: an attribute
    if given is None and len(node.input) > 1 and node.input[1]:
        c = ctx.const(node.input[1])
        if c is None:  # axes computed by the graph: recover them from the inferred output shape
            ys = ctx.shape(node, node.output[0])
            ctx.emit("Reshape", node.name, [node.input[0]], [node.output[0]], shape=tuple(int(d) for d in ys))
            return
        given = c.reshape(-1)
    if node.op_type == "Unsqueeze":
        axes = np.asarray(given).reshape(-1)
        rank = len(xs) + len(axes)
    else:
        rank = len(xs)
        axes = [i for i, d in enumerate(xs) if d == 1] if given is None else np.asarray(given).reshape(-1)
    axes = tuple(sorted(_norm_axis(int(a), rank) for a in axes))
    ctx.emit(node.op_type, node.name, [node.input[0]], [node.output[0]], axes=axes)


def _concat(ctx: _Ctx, node, at):
    rank = len(ctx.shape(node, node.output[0]))
    ins = [ctx.use(i) for i in node.input]
    ctx.emit("Concat", node.name, ins, [node.output[0]], axis=_norm_axis(int(at["axis"]), rank))


def _pad(ctx: _Ctx, node, at):
    mode = at.get("mode", "constant")
    if mode != "constant":
        raise ctx.err(node, f"Pad mode {mode!r} is not supported (only 'constant')")
    rank = len(ctx.shape(node, node.input[0]))
    pads = [int(v) for v in ctx.need_const(node, node.input[1], "Pad pads").reshape(-1)]
    if len(node.input) > 3 and node.input[3]:
        axes = [_norm_axis(int(a), rank) for a in ctx.need_const(node, node.input[3], "Pad axes").reshape(-1)]
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[rank + a] = pads[k], pads[len(axes) + k]
        pads = full
    value = 0.0
    if len(node.input) > 2 and node.input[2]:
        value = float(ctx.need_const(node, node.input[2], "Pad value").reshape(-1)[0])
    ctx.emit("Pad", node.name, [node.input[0]], [node.output[0]], pads=tuple(pads), value=value)


def _softmax(ctx: _Ctx, node, at):
    rank = len(ctx.shape(node, node.input[0]))
    ctx.emit("Softmax", node.name, [node.input[0]], [node.output[0]], axis=_norm_axis(int(at.get("axis", -1)), rank))


def _lrn(ctx: _Ctx, node, at):
    ctx.emit("LRN", node.name, [node.input[0]], [node.output[0]], size=int(at["size"]), alpha=float(at.get("alpha", 1e-4)),
             beta=float(at.get("beta", 0.75)), bias=float(at.get("bias", 1.0)))


def _identity(ctx: _Ctx, node, at):
    if node.op_type == "Dropout" and not ctx.unused(node.output[1:]):
        raise ctx.err(node, "Dropout mask output is not supported")
    if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
        tm = ctx.const(node.input[2])
        if tm is None or bool(np.asarray(tm).reshape(-1)[0]):
            raise ctx.err(node, "Dropout in training mode (random) is not supported")
    if node.op_type == "Cast":
        to = np.dtype(helper.tensor_dtype_to_np_dtype(int(at["to"])))
        if to.kind != "f":
            raise ctx.err(node, f"Cast to {to.name} of an activation is not supported")
    ctx.emit("Identity", node.name, [node.input[0]], [node.output[0]])


_HANDLERS: dict[str, Callable] = {
    "Conv": _conv, "Gemm": _gemm, "MatMul": _matmul,
    "Add": _binary, "Sub": _binary, "Mul": _binary, "Div": _binary, "Sum": _sum,
    "Relu": _unary, "Sigmoid": _unary, "Tanh": _unary, "Clip": _clip, "LeakyRelu": _leaky,
    "MaxPool": _pool, "AveragePool": _pool, "GlobalAveragePool": _global_pool, "GlobalMaxPool": _global_pool,
    "BatchNormalization": _batchnorm, "Flatten": _flatten, "Reshape": _reshape, "Transpose": _transpose,
    "Squeeze": _squeeze, "Unsqueeze": _squeeze, "Concat": _concat, "Pad": _pad, "Softmax": _softmax,
    "LRN": _lrn, "Identity": _identity, "Dropout": _identity, "Cast": _identity,
    **IMPORT_HANDLERS, **RECURRENT_HANDLERS, **TRANSFORMER_HANDLERS,
}


def supported_onnx_ops() -> list[str]:
    """ONNX op types :func:`load_model` can lower (after constant folding)."""
    return sorted(_HANDLERS)


def _lower(f: Folded, name: str, path: str | None) -> Graph:
    def info(n: str) -> TensorInfo:
        shape, dtype = f.types.get(n, ((), "float32"))
        return TensorInfo(n, tuple(shape), dtype)

    g = Graph(name, [info(i) for i in f.inputs], [info(o) for o in f.outputs], [], {}, {}, path)
    for t in g.inputs:
        g.tensors[t.name] = t
    ctx = _Ctx(f, g, path)
    for k, node in enumerate(f.nodes):
        if not node.name:
            node.name = f"{node.op_type}_{k}"
    _check_all_supported(f, path)
    for node in f.nodes:
        handler = _HANDLERS[node.op_type]
        for i in node.input:
            if i and i not in f.consts and i not in g.tensors:
                raise ctx.err(node, f"input {i!r} is not produced by any node")
        start = len(g.nodes)
        handler(ctx, node, _attrs(node))
        for nn in g.nodes[start:]:
            if node.op_type in RECURRENT_HANDLERS:
                g.origin[nn.name] = f"{node.op_type} {node.name}"
            for o in nn.outputs:
                g.tensors[o] = info(o) if o in f.types else _helper_info(g, nn, o)
            if nn.op in ("MaxPool", "AveragePool") and len(g.tensors[nn.inputs[0]].shape) == 4:
                # ONNX shape inference keeps a ceil-mode window that starts past the input;
                # onnxruntime and torch drop it (kernels.pool_out_size)
                o = nn.outputs[0]
                g.tensors[o] = TensorInfo(o, pool_output_shape(nn.attrs, g.tensors[nn.inputs[0]].shape),
                                          g.tensors[o].dtype)
    g.outputs = [g.tensors.get(t.name, t) for t in g.outputs]
    for o in g.outputs:
        if o.name in f.consts:
            raise UnsupportedError(f"graph output {o.name!r} is a constant", file=path)
    return g


def _check_all_supported(f: Folded, path: str | None) -> None:
    """Reject a model with operators nnisa cannot import, naming every such node at once."""
    bad = [n for n in f.nodes if n.domain not in ("", "ai.onnx") or n.op_type not in _HANDLERS]
    if not bad:
        return
    if len(bad) == 1:
        n = bad[0]
        dom = f" (domain {n.domain})" if n.domain not in ("", "ai.onnx") else ""
        raise UnsupportedError(f"unsupported ONNX operator {n.op_type}{dom}", where=f"node {n.name} ({n.op_type})",
                               file=path)
    kinds: dict[str, list[str]] = {}
    for n in bad:
        key = n.op_type + (f" (domain {n.domain})" if n.domain not in ("", "ai.onnx") else "")
        kinds.setdefault(key, []).append(n.name)
    parts = [f"{k} ({', '.join(v[:3])}{', ...' if len(v) > 3 else ''})" for k, v in kinds.items()]
    raise UnsupportedError(f"{len(bad)} node(s) use unsupported ONNX operators: {'; '.join(parts)}", file=path)


def _helper_info(g: Graph, n: Node, o: str) -> TensorInfo:
    """Shape of a tensor the lowering introduced (shape inference never saw it): run the node
    on ones of its input shapes."""
    args = [g.initializers[i] if i in g.initializers else np.ones(g.tensors[i].shape, g.tensors[i].dtype)
            for i in n.inputs]
    v = np.asarray(run_node(n, args, g))
    return TensorInfo(o, tuple(v.shape), v.dtype.name)


def pool_output_shape(attrs: dict, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Output shape of a MaxPool/AveragePool node for an NCHW input ``shape``."""
    kh, kw = attrs["kernel"]
    sh, sw = attrs["strides"]
    pt, pl, pb, pr = attrs["pads"]
    dh, dw = attrs.get("dilations", (1, 1))
    ceil = attrs.get("ceil_mode", False)
    return (shape[0], shape[1], pool_out_size(shape[2], kh, sh, pt, pb, dh, ceil), pool_out_size(shape[3], kw, sw, pl, pr, dw, ceil))


def is_onnx_file(path: str | Path) -> bool:
    """True when ``path`` looks like an ONNX file (by suffix)."""
    return str(path).lower().endswith(".onnx")
