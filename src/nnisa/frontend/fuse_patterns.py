"""Recognise the decomposed LayerNorm and GELU subgraphs older exporters emit and fold each into
one standard ONNX node (``LayerNormalization`` / ``Gelu``) before lowering.

Runs on the constant-folded ONNX nodes (:class:`~nnisa.frontend.constfold.Folded`), so every
exporter's spelling is matched once, here, and the rest of nnisa sees a single IR node:

* LayerNorm: ``m = ReduceMean(x, A)``, ``d = Sub(x, m)``, ``p = Pow(d, 2)`` (or ``Mul(d, d)``),
  ``v = ReduceMean(p, A)``, ``Add(v, eps)``, ``Sqrt``, ``Div(d, ·)`` (or ``Mul(d, Reciprocal(·))``),
  then optionally ``Mul`` by a constant scale and ``Add`` of a constant bias (either operand
  order).  ``A`` must be the trailing axes of ``x`` (keepdims 1): the torch < opset-17 export.
* GELU (erf form): ``Erf(x / √2)`` (``Div`` by √2 or ``Mul`` by 1/√2), ``Add(·, 1)``, then any
  order of products by ``x`` and ``0.5`` (``Mul``/``Div`` by constants): torch's opset < 20
  export and HuggingFace's ``gelu``.
* GELU (tanh form): ``Tanh(√(2/π) · (x + 0.044715 · x³))`` with ``x³`` as ``Pow(x, 3)`` or two
  ``Mul``, ``Add(·, 1)``, then the same products (torch ``approximate='tanh'``, HF ``NewGELU``).

Every intermediate must have a single consumer and not be a graph output; otherwise the
subgraph is left alone (and its Pow/Sqrt/Erf are imported as they are).
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper

from .constfold import Folded

_SQRT2 = math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


class _View:
    """Producer/consumer lookups over the folded node list."""

    def __init__(self, f: Folded):
        self.f = f
        self.prod: dict[str, onnx.NodeProto] = {}
        self.cons: dict[str, list[onnx.NodeProto]] = {}
        for n in f.nodes:
            for o in n.output:
                self.prod[o] = n
            for i in dict.fromkeys(n.input):  # a node reading a tensor twice (Mul(d, d)) is one use
                if i:
                    self.cons.setdefault(i, []).append(n)
        self.outputs = set(f.outputs)

    def single(self, name: str, op: str | tuple[str, ...]) -> onnx.NodeProto | None:
        """The only consumer of ``name`` when it is an ``op`` node and ``name`` is no graph output."""
        ops = (op,) if isinstance(op, str) else op
        c = self.cons.get(name, [])
        if len(c) != 1 or name in self.outputs or c[0].op_type not in ops or c[0].domain not in ("", "ai.onnx"):
            return None
        return c[0]

    def made_by(self, name: str, op: str | tuple[str, ...], private: bool = True) -> onnx.NodeProto | None:
        """The producer of ``name`` when it is an ``op`` node (and, with ``private``, ``name`` has one use)."""
        ops = (op,) if isinstance(op, str) else op
        p = self.prod.get(name)
        if p is None or p.op_type not in ops or p.domain not in ("", "ai.onnx"):
            return None
        if private and (len(self.cons.get(name, [])) != 1 or name in self.outputs):
            return None
        return p

    def scalar(self, name: str) -> float | None:
        """Value of a constant with one element."""
        v = self.f.consts.get(name)
        if v is None or v.size != 1 or v.dtype.kind not in "fiu":
            return None
        return float(np.asarray(v).reshape(-1)[0])

    def other(self, node: onnx.NodeProto, name: str) -> str | None:
        """The other input of binary ``node`` (None when ``name`` is not one of its two inputs)."""
        if len(node.input) != 2:
            return None
        if node.input[0] == name:
            return node.input[1]
        if node.input[1] == name:
            return node.input[0]
        return None


def _close(v: float | None, want: float, rel: float = 1e-4) -> bool:
    return v is not None and abs(v - want) <= rel * abs(want)


def _reduce_axes(v: _View, node: onnx.NodeProto) -> tuple[tuple[int, ...], bool] | None:
    """Axes (normalized) and keepdims of a ReduceMean node (attribute or input form)."""
    at = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if len(node.input) > 1 and node.input[1]:
        ax = v.f.consts.get(node.input[1])
        if ax is None:
            return None
        axes = [int(a) for a in np.asarray(ax).reshape(-1)]
    else:
        axes = list(at.get("axes", []))
    shape = v.f.types.get(node.input[0], ((), ""))[0]
    if not axes or not shape:
        return None
    rank = len(shape)
    return tuple(sorted(a + rank if a < 0 else a for a in axes)), bool(at.get("keepdims", 1))


def _const_name(f: Folded, base: str, value: np.ndarray) -> str:
    name = base
    k = 0
    while name in f.consts or name in f.types:
        k += 1
        name = f"{base}_{k}"
    f.consts[name] = value
    f.types[name] = (tuple(value.shape), value.dtype.name)
    return name


def _match_layernorm(v: _View, m1: onnx.NodeProto):
    """The nodes of a decomposed LayerNorm starting at its first ReduceMean, or None."""
    ra = _reduce_axes(v, m1)
    if ra is None or not ra[1]:
        return None
    axes = ra[0]
    x = m1.input[0]
    rank = len(v.f.types[x][0])
    if axes != tuple(range(rank - len(axes), rank)):
        return None
    sub = v.single(m1.output[0], "Sub")
    if sub is None or list(sub.input) != [x, m1.output[0]]:
        return None
    d = sub.output[0]
    users = v.cons.get(d, [])
    if len(users) != 2 or d in v.outputs:
        return None
    sq = next((u for u in users if u.op_type == "Pow" and u.input[0] == d and _close(v.scalar(u.input[1]), 2.0)
               or u.op_type == "Mul" and list(u.input) == [d, d]), None)
    div = next((u for u in users if u is not sq), None)
    if sq is None or div is None:
        return None
    m2 = v.single(sq.output[0], "ReduceMean")
    if m2 is None or _reduce_axes(v, m2) != ra:
        return None
    add = v.single(m2.output[0], "Add")
    eps = v.scalar(v.other(add, m2.output[0])) if add is not None else None
    if eps is None or eps < 0:
        return None
    sqrt = v.single(add.output[0], "Sqrt")
    if sqrt is None:
        return None
    nodes = [m1, sub, sq, m2, add, sqrt]
    if div.op_type == "Div" and list(div.input) == [d, sqrt.output[0]] and v.single(sqrt.output[0], "Div"):
        nodes.append(div)
    elif div.op_type == "Mul":
        rec = v.single(sqrt.output[0], "Reciprocal")
        if rec is None or v.other(div, d) != rec.output[0] or v.single(rec.output[0], "Mul") is not div:
            return None
        nodes += [rec, div]
    else:
        return None
    out, gamma, beta = div.output[0], None, None
    norm_shape = tuple(v.f.types[x][0][rank - len(axes):])
    mul = v.single(out, "Mul")
    if mul is not None and _affine_const(v, v.other(mul, out), norm_shape) is not None:
        gamma = _affine_const(v, v.other(mul, out), norm_shape)
        nodes.append(mul)
        out = mul.output[0]
    add_b = v.single(out, "Add")
    if add_b is not None and _affine_const(v, v.other(add_b, out), norm_shape) is not None:
        beta = _affine_const(v, v.other(add_b, out), norm_shape)
        nodes.append(add_b)
        out = add_b.output[0]
    return x, axes[0], eps, gamma, beta, nodes, out, norm_shape


def _affine_const(v: _View, name: str | None, norm_shape: tuple[int, ...]) -> np.ndarray | None:
    """A constant that broadcasts over the normalized axes only, as a ``norm_shape`` array."""
    c = v.f.consts.get(name) if name else None
    if c is None or c.dtype.kind != "f":
        return None
    lead = c.shape[: max(c.ndim - len(norm_shape), 0)]
    if any(d != 1 for d in lead):
        return None
    try:
        return np.broadcast_to(c.reshape(c.shape[len(lead):]), norm_shape).astype(np.float32)
    except ValueError:
        return None


def _product_chain(v: _View, start: str, x: str):
    """Follow single-consumer ``Mul``/``Div`` nodes from ``start`` collecting the factors ``x`` and
    constants; return ``(nodes, output)`` once the product is ``0.5 · x · start``, else None."""
    nodes: list[onnx.NodeProto] = []
    cur, have_x, k = start, False, 1.0
    for _ in range(4):
        node = v.single(cur, ("Mul", "Div"))
        if node is None:
            return None
        other = v.other(node, cur)
        if other is None or other == cur or node.op_type == "Div" and node.input[0] != cur:
            return None
        c = v.scalar(other)
        if node.op_type == "Div":
            if not c:
                return None
            k /= c
        elif other == x and not have_x:
            have_x = True
        elif c is not None:
            k *= c
        else:
            half = v.made_by(other, "Mul")
            hc = v.other(half, x) if half is not None else None
            if have_x or hc is None or v.scalar(hc) is None:
                return None
            have_x, k = True, k * v.scalar(hc)
            nodes.append(half)
        nodes.append(node)
        cur = node.output[0]
        if have_x and _close(k, 0.5, 1e-6):
            return nodes, cur
    return None


def _is_cube_of(v: _View, name: str, x: str) -> list[onnx.NodeProto] | None:
    """Nodes computing ``x³`` privately (``Pow(x, 3)``, ``Mul(x, Mul(x, x))`` or ``Mul(Mul(x, x), x)``)."""
    p = v.made_by(name, ("Pow", "Mul"))
    if p is None:
        return None
    if p.op_type == "Pow":
        return [p] if p.input[0] == x and _close(v.scalar(p.input[1]), 3.0) else None
    sq_name = v.other(p, x)
    sq = v.made_by(sq_name, "Mul") if sq_name else None
    if sq is None or list(sq.input) != [x, x]:
        return None
    return [sq, p]


def _match_gelu(v: _View, fn: onnx.NodeProto):
    """``(x, approximate, nodes, output)`` of a decomposed GELU around ``fn`` (Erf or Tanh), or None."""
    inner = v.made_by(fn.input[0], ("Div", "Mul"))
    if inner is None:
        return None
    nodes = [inner]
    if fn.op_type == "Erf":
        approx = "none"
        x = inner.input[0]
        c = v.scalar(inner.input[1])
        if inner.op_type == "Mul" and not _close(c, 1 / _SQRT2):
            x, c = inner.input[1], v.scalar(inner.input[0])
            if not _close(c, 1 / _SQRT2):
                return None
        elif inner.op_type == "Div" and not _close(c, _SQRT2):
            return None
    else:
        approx = "tanh"
        if inner.op_type != "Mul":
            return None
        k = next((i for i in inner.input if _close(v.scalar(i), _SQRT_2_PI)), None)
        add = v.made_by(v.other(inner, k), "Add") if k else None
        if add is None:
            return None
        nodes.append(add)
        for x, cub in ((add.input[0], add.input[1]), (add.input[1], add.input[0])):
            cm = v.made_by(cub, "Mul")
            cc = next((i for i in cm.input if _close(v.scalar(i), _GELU_CUBIC)), None) if cm is not None else None
            cube = _is_cube_of(v, v.other(cm, cc), x) if cc else None
            if cube is not None:
                nodes += [cm] + cube
                break
        else:
            return None
    one = v.single(fn.output[0], "Add")
    if one is None or not _close(v.scalar(v.other(one, fn.output[0])), 1.0):
        return None
    chain = _product_chain(v, one.output[0], x)
    if chain is None:
        return None
    return x, approx, nodes + [fn, one] + chain[0], chain[1]


def fuse_patterns(f: Folded) -> int:
    """Fold decomposed LayerNorm and GELU subgraphs of ``f`` in place; return how many were folded."""
    folded = 0
    for kind in ("layernorm", "gelu"):
        while True:
            v = _View(f)
            hit = None
            for n in f.nodes:
                if n.domain not in ("", "ai.onnx"):
                    continue
                if kind == "layernorm" and n.op_type == "ReduceMean" and n.input[0] in f.types:
                    hit = _match_layernorm(v, n)
                elif kind == "gelu" and n.op_type in ("Erf", "Tanh"):
                    hit = _match_gelu(v, n)
                if hit is not None:
                    break
            if hit is None:
                break
            _replace(f, kind, hit)
            folded += 1
    return folded


def _replace(f: Folded, kind: str, hit) -> None:
    if kind == "layernorm":
        x, axis, eps, gamma, beta, nodes, out, norm_shape = hit
        base = nodes[0].name or out
        g = _const_name(f, f"{base}.ln_scale", gamma if gamma is not None else np.ones(norm_shape, np.float32))
        b = _const_name(f, f"{base}.ln_bias", beta if beta is not None else np.zeros(norm_shape, np.float32))
        new = helper.make_node("LayerNormalization", [x, g, b], [out], name=f"{base}_layernorm", axis=axis,
                               epsilon=float(eps))
    else:
        x, approx, nodes, out = hit
        new = helper.make_node("Gelu", [x], [out], name=f"{nodes[0].name or out}_gelu", approximate=approx)
    gone = {id(n) for n in nodes}
    idx = min(k for k, n in enumerate(f.nodes) if id(n) in gone)
    f.nodes = [n for n in f.nodes if id(n) not in gone]
    f.nodes.insert(idx, new)
