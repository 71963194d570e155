"""ONNX → IR: load, check, convert to opset 17, infer shapes, fold constants, lower, optimise.

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

from .constfold import Folded, fold_constants
from .ir import Graph, Node, TensorInfo
from .kernels import pool_out_size
from .passes import optimize

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
    """Weights must be finite numbers (a Pad's constant value may be ±inf: MaxPool padding)."""
    pad_values = {n.input[2] for n in m.graph.node if n.op_type == "Pad" and len(n.input) > 2}
    for t in m.graph.initializer:
        if t.name in pad_values:
            continue
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
            continue
        a = numpy_helper.to_array(t)
        if a.size and not np.isfinite(a).all():
            raise FormatError(f"initializer {t.name!r} contains NaN or infinity", file=path)


def load_model(model: Any, *, opset: int = TARGET_OPSET) -> Graph:
    """Import an ONNX model into the nnisa float IR.

    Parameters
    ----------
    model : str, os.PathLike, bytes or onnx.ModelProto
        The model file, its serialized bytes, or a loaded proto.
    opset : int
        Default-domain opset the model is converted to before lowering.

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
    if _default_opset(m) != opset:
        try:
            m = version_converter.convert_version(m, opset)
        except Exception as e:
            raise UnsupportedError(
                f"cannot convert from opset {_default_opset(m)} to {opset}: {str(e).splitlines()[0]}", file=path
            ) from None
    _fix_symbolic_inputs(m, path)
    _check_initializers(m, path)
    try:
        m = shape_inference.infer_shapes(m)
        folded = fold_constants(m)
    except NnisaError:
        raise
    except Exception as e:
        raise UnsupportedError(f"shape inference / constant folding failed: {str(e).splitlines()[0]}", file=path) from None
    g = _lower(folded, m.graph.name or "graph", path)
    optimize(g)
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


def _spatial_pads(ctx, node, at, in_hw, kernel, strides, dil, pool=False) -> tuple[int, int, int, int]:
    """Resolve ``pads``/``auto_pad`` to ``(top, left, bottom, right)``."""
    auto = at.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        p = list(at.get("pads", [0, 0, 0, 0]))
        if len(p) != 4:
            raise ctx.err(node, "only 2-D spatial padding is supported")
        return (p[0], p[1], p[2], p[3])
    if auto == "VALID":
        return (0, 0, 0, 0)
    begins, ends = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dil):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        b, e = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
        begins.append(b)
        ends.append(e)
    return (begins[0], begins[1], ends[0], ends[1])


def _conv(ctx: _Ctx, node, at):
    x, wname = node.input[0], node.input[1]
    w = ctx.need_const(node, wname, "Conv weight")
    if w.ndim != 4:
        raise ctx.err(node, f"only 2-D convolution is supported (weight rank {w.ndim})")
    xs = ctx.shape(node, x)
    kernel = tuple(at.get("kernel_shape", w.shape[2:]))
    strides = tuple(at.get("strides", (1, 1)))
    dil = tuple(at.get("dilations", (1, 1)))
    pads = _spatial_pads(ctx, node, at, xs[2:], kernel, strides, dil)
    b = ctx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(node.input) > 2 and node.input[2] and b is None:
        raise ctx.err(node, "Conv bias must be a constant")
    bname = ctx.add_init(f"{node.name or node.output[0]}.bias", np.zeros(w.shape[0], np.float32) if b is None else b.astype(np.float32))
    ctx.emit("Conv", node.name, [x, ctx.use(wname), bname], [node.output[0]], kernel=kernel, strides=strides,
             pads=pads, dilations=dil, group=int(at.get("group", 1)))


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
    if b is None:
        if alpha != 1.0 or c_name:
            raise ctx.err(node, "Gemm with a non-constant B needs alpha=1 and no C")
        if at.get("transB", 0):
            t = ctx.tmp(bname + ".T")
            ctx.emit("Transpose", ctx.tmp(node.name + "_transB"), [bname], [t], perm=(1, 0))
            bname = t
        ctx.emit("MatMul", node.name, [a, bname], [out])
        return
    w = (b.T if at.get("transB", 0) else b).astype(np.float32) * np.float32(alpha)
    n_out = w.shape[1]
    bias = np.zeros(n_out, np.float32)
    add_c = None
    if c_name:
        if c is None:
            if beta != 1.0:
                raise ctx.err(node, "Gemm with a non-constant C needs beta=1")
            add_c = c_name
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
        c = ctx.need_const(node, b, "Div divisor")
        b = ctx.add_init(f"{node.name}.recip", (1.0 / c.astype(np.float64)).astype(np.float32))
        op = "Mul"
    ctx.emit(op, node.name, [ctx.use(a), ctx.use(b)], [node.output[0]])


def _sum(ctx: _Ctx, node, at):
    ins = [ctx.use(i) for i in node.input]
    if len(ins) == 1:
        ctx.emit("Identity", node.name, ins, [node.output[0]])
        return
    acc = ins[0]
    for k, nxt in enumerate(ins[1:]):
        out = node.output[0] if k == len(ins) - 2 else ctx.tmp(node.output[0] + ".part")
        ctx.emit("Add", node.name if k == len(ins) - 2 else ctx.tmp(node.name), [acc, nxt], [out])
        acc = out


def _unary(ctx: _Ctx, node, at):
    ctx.emit(node.op_type, node.name, [node.input[0]], [node.output[0]])


def _clip(ctx: _Ctx, node, at):
    lo = ctx.need_const(node, node.input[1], "Clip min") if len(node.input) > 1 and node.input[1] else None
    hi = ctx.need_const(node, node.input[2], "Clip max") if len(node.input) > 2 and node.input[2] else None
    ctx.emit("Clip", node.name, [node.input[0]], [node.output[0]],
             min=float(lo) if lo is not None else -np.inf, max=float(hi) if hi is not None else np.inf)


def _leaky(ctx: _Ctx, node, at):
    ctx.emit("LeakyRelu", node.name, [node.input[0]], [node.output[0]], alpha=float(at.get("alpha", 0.01)))


def _pool(ctx: _Ctx, node, at):
    if not ctx.unused(node.output[1:]):
        raise ctx.err(node, "MaxPool Indices output is not supported")
    xs = ctx.shape(node, node.input[0])
    if len(xs) != 4:
        raise ctx.err(node, "only 2-D pooling on NCHW tensors is supported")
    kernel = tuple(at["kernel_shape"])
    strides = tuple(at.get("strides", (1, 1)))
    dil = tuple(at.get("dilations", (1, 1)))
    pads = _spatial_pads(ctx, node, at, xs[2:], kernel, strides, dil, pool=True)
    attrs = dict(kernel=kernel, strides=strides, pads=pads, ceil_mode=bool(at.get("ceil_mode", 0)))
    if node.op_type == "MaxPool":
        if at.get("storage_order", 0):
            raise ctx.err(node, "MaxPool storage_order=1 is not supported")
        attrs["dilations"] = dil
    else:
        attrs["count_include_pad"] = bool(at.get("count_include_pad", 0))
    ctx.emit(node.op_type, node.name, [node.input[0]], [node.output[0]], **attrs)


def _global_pool(ctx: _Ctx, node, at):
    xs = ctx.shape(node, node.input[0])
    if len(xs) != 4:
        raise ctx.err(node, "only NCHW inputs are supported")
    if node.op_type == "GlobalAveragePool":
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


def _norm_axis(ax: int, rank: int) -> int:
    return ax + rank if ax < 0 else ax


def _flatten(ctx: _Ctx, node, at):
    rank = len(ctx.shape(node, node.input[0]))
    ctx.emit("Flatten", node.name, [node.input[0]], [node.output[0]], axis=_norm_axis(int(at.get("axis", 1)), rank))


def _reshape(ctx: _Ctx, node, at):
    xs = ctx.shape(node, node.input[0])
    tgt = [int(v) for v in ctx.need_const(node, node.input[1], "Reshape shape").reshape(-1)]
    if not at.get("allowzero", 0):
        tgt = [xs[i] if v == 0 else v for i, v in enumerate(tgt)]
    shape = np.empty(xs, dtype=np.int8).reshape(tgt).shape if all(d > 0 for d in xs) else tuple(tgt)
    ctx.emit("Reshape", node.name, [node.input[0]], [node.output[0]], shape=tuple(int(d) for d in shape))


def _transpose(ctx: _Ctx, node, at):
    rank = len(ctx.shape(node, node.input[0]))
    perm = tuple(int(p) for p in at.get("perm", range(rank - 1, -1, -1)))
    ctx.emit("Transpose", node.name, [node.input[0]], [node.output[0]], perm=perm)


def _squeeze(ctx: _Ctx, node, at):
    xs = ctx.shape(node, node.input[0])
    if node.op_type == "Unsqueeze":
        axes = ctx.need_const(node, node.input[1], "Unsqueeze axes").reshape(-1)
        rank = len(xs) + len(axes)
    else:
        rank = len(xs)
        if len(node.input) > 1 and node.input[1]:
            axes = ctx.need_const(node, node.input[1], "Squeeze axes").reshape(-1)
        else:
            axes = [i for i, d in enumerate(xs) if d == 1]
    axes = tuple(sorted(_norm_axis(int(a), rank) for a in axes))
    ctx.emit(node.op_type, node.name, [node.input[0]], [node.output[0]], axes=axes)


def _concat(ctx: _Ctx, node, at):
    rank = len(ctx.shape(node, node.output[0]))
    ins = [ctx.use(i) for i in node.input]
    ctx.emit("Concat", node.name, ins, [node.output[0]], axis=_norm_axis(int(at["axis"]), rank))


def _resize_axis(n_in: int, n_out: int, scale: float, ctm: str) -> tuple[tuple[int, int, float], ...]:
    """Linear interpolation taps of one axis: (first index, second index, weight of the second)."""
    taps = []
    for x in range(n_out):
        if ctm == "align_corners":
            xo = x * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        elif ctm == "asymmetric":
            xo = x / scale
        elif ctm == "pytorch_half_pixel":
            xo = (x + 0.5) / scale - 0.5 if n_out > 1 else 0.0
        else:  # half_pixel
            xo = (x + 0.5) / scale - 0.5
        i0 = math.floor(xo)
        r = xo - i0
        taps.append((min(max(i0, 0), n_in - 1), min(max(i0 + 1, 0), n_in - 1), float(r)))
    return tuple(taps)


def _resize(ctx: _Ctx, node, at):
    """Resize of the spatial axes of NCHW tensors: nearest by integer factors (a repetition of
    pixels, also ``Upsample``) or linear (taps precomputed per axis)."""
    xs = ctx.shape(node, node.input[0])
    out = ctx.shape(node, node.output[0])
    mode = at.get("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ctm = at.get("coordinate_transformation_mode", "half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    nm = at.get("nearest_mode", "round_prefer_floor")
    nm = nm.decode() if isinstance(nm, bytes) else nm
    if len(xs) != 4 or len(out) != 4 or tuple(out[:2]) != tuple(xs[:2]) or mode not in ("nearest", "linear"):
        raise ctx.err(node, "only nearest or linear Resize of the spatial axes of NCHW tensors is supported")
    if mode == "linear":
        if ctm not in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
            raise ctx.err(node, f"linear Resize with coordinate_transformation_mode={ctm} is not supported")
        sc = ctx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        scales = [float(v) for v in sc.reshape(-1)[2:]] if sc is not None and sc.size == 4 else \
            [o / i for o, i in zip(out[2:], xs[2:])]
        taps = tuple(_resize_axis(i, o, s, ctm) for i, o, s in zip(xs[2:], out[2:], scales))
        ctx.emit("Resize", node.name, [node.input[0]], [node.output[0]], mode="linear", taps=taps)
        return
    if any(o % i for o, i in zip(out[2:], xs[2:])):
        raise ctx.err(node, f"Resize {xs} → {out}: only integer upsampling factors are supported")
    scales = tuple(o // i for o, i in zip(out[2:], xs[2:]))
    exact = ctm in ("half_pixel", "pytorch_half_pixel") and nm in ("round_prefer_floor", "round_prefer_ceil") \
        or ctm == "asymmetric" and nm == "floor" or scales == (1, 1)
    if not exact:
        raise ctx.err(node, f"Resize coordinate_transformation_mode={ctm} with nearest_mode={nm} is not a plain "
                            "repetition of pixels; only that is supported")
    ctx.emit("Resize", node.name, [node.input[0]], [node.output[0]], mode="nearest", scales=scales)


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
    "LRN": _lrn, "Resize": _resize, "Upsample": _resize, "Identity": _identity, "Dropout": _identity, "Cast": _identity,
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
        handler = _HANDLERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if handler is None:
            dom = f" (domain {node.domain})" if node.domain else ""
            raise ctx.err(node, f"unsupported ONNX operator {node.op_type}{dom}")
        for i in node.input:
            if i and i not in f.consts and i not in g.tensors:
                raise ctx.err(node, f"input {i!r} is not produced by any node")
        start = len(g.nodes)
        handler(ctx, node, _attrs(node))
        for nn in g.nodes[start:]:
            for o in nn.outputs:
                g.tensors[o] = info(o) if o in f.types else TensorInfo(o, (), "float32")
    for o in g.outputs:
        if o.name in f.consts:
            raise UnsupportedError(f"graph output {o.name!r} is a constant", file=path)
    _fill_missing_shapes(g)
    return g


def _fill_missing_shapes(g: Graph) -> None:
    """Compute shapes that shape inference left out (our own helper tensors)."""
    for n in g.nodes:
        for o in n.outputs:
            if g.tensors[o].shape == () and n.op in ("Transpose", "Add", "Gemm"):
                xs = g.shape(n.inputs[0])
                if n.op == "Transpose":
                    shp = tuple(xs[p] for p in n.attrs["perm"])
                elif n.op == "Gemm":
                    shp = (xs[0], g.shape(n.inputs[1])[1])
                else:
                    shp = tuple(np.broadcast_shapes(xs, g.shape(n.inputs[1])))
                g.tensors[o] = TensorInfo(o, shp, "float32")


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
