"""ONNX → IR lowering of the transformer operators (issue 27).

LayerNormalization, Gelu, Erf, the elementwise functions Sqrt, Reciprocal, Exp and Pow (by a
constant exponent), and the attention-mask operators Where, Equal, Less, Greater, Not, Expand,
Cast and CastLike.  Every handler works at every opset the installed onnx knows.  The
decomposed LayerNorm/GELU subgraphs of older exporters arrive here already folded into one
``LayerNormalization`` / ``Gelu`` node (:mod:`.fuse_patterns`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from .import_ops import norm_axis


def _layernorm(ctx, node, at) -> None:
    x = node.input[0]
    xs = ctx.shape(node, x)
    axis = norm_axis(int(at.get("axis", -1)), len(xs))
    if not ctx.unused(node.output[1:]):
        _layernorm_stats(ctx, node, x, tuple(range(axis, len(xs))), float(at.get("epsilon", 1e-5)))
    norm = tuple(xs[axis:])
    base = node.name or node.output[0]
    params = []
    for k, what, default in ((1, "scale", 1.0), (2, "bias", 0.0)):
        name = node.input[k] if len(node.input) > k else ""
        v = ctx.need_const(node, name, f"LayerNormalization {what}") if name else np.full(norm, default, np.float32)
        try:
            full = np.broadcast_to(np.asarray(v, np.float32), norm)
        except ValueError:
            raise ctx.err(node, f"LayerNormalization {what} of shape {list(np.shape(v))} does not broadcast to the "
                                f"normalized shape {list(norm)}") from None
        params.append(ctx.add_init(f"{base}.{what}", np.ascontiguousarray(full)))
    ctx.emit("LayerNorm", node.name, [x, *params], [node.output[0]], axis=axis,
             epsilon=float(at.get("epsilon", 1e-5)))


def _layernorm_stats(ctx, node, x: str, axes: tuple[int, ...], eps: float) -> None:
    """The training outputs Mean and InvStdDev as IR nodes: ReduceMean, Sub, Mul, Add, Sqrt, Reciprocal."""
    outs = list(node.output) + ["", ""]
    mean = outs[1] if outs[1] and not ctx.unused([outs[1]]) else ctx.tmp(node.output[0] + ".mean")
    ctx.emit("ReduceMean", ctx.tmp(node.name + "_mean"), [x], [mean], axes=axes, keepdims=True)
    if not outs[2] or ctx.unused([outs[2]]):
        return
    d = ctx.tmp(node.output[0] + ".d")
    ctx.emit("Sub", ctx.tmp(node.name + "_sub"), [x, mean], [d])
    sq = ctx.tmp(node.output[0] + ".sq")
    ctx.emit("Mul", ctx.tmp(node.name + "_sq"), [d, d], [sq])
    var = ctx.tmp(node.output[0] + ".var")
    ctx.emit("ReduceMean", ctx.tmp(node.name + "_var"), [sq], [var], axes=axes, keepdims=True)
    ve = ctx.tmp(node.output[0] + ".ve")
    ctx.emit("Add", ctx.tmp(node.name + "_eps"), [var, ctx.add_init(f"{node.name}.eps", np.array(eps, np.float32))],
             [ve])
    sd = ctx.tmp(node.output[0] + ".sd")
    ctx.emit("Sqrt", ctx.tmp(node.name + "_sqrt"), [ve], [sd])
    ctx.emit("Reciprocal", ctx.tmp(node.name + "_inv"), [sd], [outs[2]])


def _unary(ctx, node, at) -> None:
    """Sqrt, Reciprocal, Exp: elementwise functions (lookup tables when quantized)."""
    ctx.emit(node.op_type, node.name, [node.input[0]], [node.output[0]])


def _pow(ctx, node, at) -> None:
    """``Pow`` by a constant scalar: elementwise function with attribute ``exponent``; by a tensor: a
    float-only binary ``Pow`` (two inputs, no integer semantics)."""
    e = ctx.const(node.input[1])
    if e is None or e.size != 1 or ctx.const(node.input[0]) is not None:
        ctx.emit("Pow", node.name, [ctx.use(i) for i in node.input], [node.output[0]])
        return
    ctx.emit("Pow", node.name, [node.input[0]], [node.output[0]], exponent=float(np.asarray(e).reshape(-1)[0]))


def _gelu(ctx, node, at) -> None:
    approx = at.get("approximate", "none")
    if approx not in ("none", "tanh"):
        raise ctx.err(node, f"Gelu approximate={approx!r} is not supported ('none' or 'tanh')")
    ctx.emit("Gelu", node.name, [node.input[0]], [node.output[0]], approximate=approx)


def _erf(ctx, node, at) -> None:
    ctx.emit("Erf", node.name, [node.input[0]], [node.output[0]])


def _elementwise(ctx, node, at) -> None:
    """Where / Equal / Less / Greater / Not: numpy broadcasting, constants as initializers."""
    ctx.emit(node.op_type, node.name, [ctx.use(i) for i in node.input], [node.output[0]])


def _expand(ctx, node, at) -> None:
    shape = ctx.shape(node, node.output[0])
    ctx.emit("Expand", node.name, [ctx.use(node.input[0])], [node.output[0]], shape=tuple(int(d) for d in shape))


def _cast(ctx, node, at) -> None:
    """A float → float Cast goes (Identity); any cast to or from an integer/bool type is kept as
    ``Cast`` (``to`` = numpy dtype name): masks and indices change type on purpose."""
    if node.op_type == "CastLike":  # the type of the second input
        to = np.dtype(ctx.f.types.get(node.input[1], ((), "float32"))[1])
    else:
        to = np.dtype(helper.tensor_dtype_to_np_dtype(int(at["to"])))
    src = np.dtype(ctx.f.types.get(node.input[0], ((), "float32"))[1])
    if to.kind == "f" and src.kind == "f":
        ctx.emit("Identity", node.name, [ctx.use(node.input[0])], [node.output[0]])
        return
    ctx.emit("Cast", node.name, [ctx.use(node.input[0])], [node.output[0]], to=to.name)


HANDLERS: dict[str, Any] = {
    "LayerNormalization": _layernorm, "Gelu": _gelu, "Erf": _erf, "Where": _elementwise, "Equal": _elementwise,
    "Less": _elementwise, "Greater": _elementwise, "Not": _elementwise, "Expand": _expand, "Cast": _cast,
    "CastLike": _cast,
    "Sqrt": _unary, "Reciprocal": _unary, "Exp": _unary, "Pow": _pow,
}
