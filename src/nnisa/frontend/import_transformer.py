"""ONNX → IR lowering of the transformer operators (issue 27).

LayerNormalization, Gelu, Erf, and the attention-mask operators Where, Equal, Less, Greater,
Not, Expand and Cast.  Every handler works at every opset the installed onnx knows.  The
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
    if not ctx.unused(node.output[1:]):
        raise ctx.err(node, "LayerNormalization Mean/InvStdDev outputs (training) are not supported")
    axis = norm_axis(int(at.get("axis", -1)), len(xs))
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
    to = np.dtype(helper.tensor_dtype_to_np_dtype(int(at["to"])))
    src = np.dtype(ctx.f.types.get(node.input[0], ((), "float32"))[1])
    if to.kind == "f" and src.kind == "f":
        ctx.emit("Identity", node.name, [node.input[0]], [node.output[0]])
        return
    ctx.emit("Cast", node.name, [ctx.use(node.input[0])], [node.output[0]], to=to.name)


HANDLERS: dict[str, Any] = {
    "LayerNormalization": _layernorm, "Gelu": _gelu, "Erf": _erf, "Where": _elementwise, "Equal": _elementwise,
    "Less": _elementwise, "Greater": _elementwise, "Not": _elementwise, "Expand": _expand, "Cast": _cast,
}
