"""ONNX-level constant folding: Constant nodes, static ``Shape`` and all-constant subgraphs.

PyTorch exports compute reshape targets with Shape/Gather/Unsqueeze/Concat chains and onnx's
``light_*`` models build their weights with ConstantOfShape; both collapse to constants here.
Large folded tensors stay in a Python dict (never re-serialised into the proto), only their
shapes are fed back to shape inference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

# Ops whose value is not a function of their inputs.
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
# Constants up to this many elements go into the proto so shape inference can read them.
_SMALL = 4096


@dataclass
class Folded:
    """A model after folding: remaining nodes, constant values and static tensor types."""

    nodes: list[onnx.NodeProto]
    consts: dict[str, np.ndarray]
    types: dict[str, tuple[tuple, str]] = field(default_factory=dict)  # name -> (shape, dtype)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    opset: list = field(default_factory=list)


def _vi_type(vi: onnx.ValueInfoProto) -> tuple[tuple, str] | None:
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(int(d.dim_value))
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)).name
    except Exception:
        dtype = "unknown"
    return tuple(dims), dtype


def _attr_const(node: onnx.NodeProto) -> np.ndarray:
    """Value of a ``Constant`` node."""
    a = node.attribute[0]
    if a.name == "value":
        return numpy_helper.to_array(a.t)
    if a.name == "value_float":
        return np.array(a.f, np.float32)
    if a.name == "value_floats":
        return np.array(list(a.floats), np.float32)
    if a.name == "value_int":
        return np.array(a.i, np.int64)
    if a.name == "value_ints":
        return np.array(list(a.ints), np.int64)
    raise ValueError(f"Constant attribute {a.name} not supported")


def _infer(f: Folded, graph_inputs: list[onnx.ValueInfoProto], graph_outputs, name: str) -> dict:
    """Run shape inference on the skeleton (remaining nodes, small constants as initializers)."""
    inits, extra_inputs = [], []
    used = {i for n in f.nodes for i in n.input}
    for k, v in f.consts.items():
        if k not in used:
            continue
        if v.size <= _SMALL:
            inits.append(numpy_helper.from_array(np.asarray(v), k))
        else:
            et = helper.np_dtype_to_tensor_dtype(v.dtype)
            extra_inputs.append(helper.make_tensor_value_info(k, et, list(v.shape)))
    g = helper.make_graph(f.nodes, name, list(graph_inputs) + extra_inputs, list(graph_outputs), inits)
    m = helper.make_model(g, opset_imports=f.opset)
    m = shape_inference.infer_shapes(m)
    types = {}
    for vi in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        t = _vi_type(vi)
        if t is not None:
            types[vi.name] = t
    return types


def _eval_nodes(nodes: list[onnx.NodeProto], consts: dict, opset) -> dict[str, np.ndarray]:
    """Evaluate an all-constant subgraph in one go with onnx's numpy reference runtime."""
    from onnx.reference import ReferenceEvaluator

    needed = {i for n in nodes for i in n.input if i} - {o for n in nodes for o in n.output}
    inputs = [helper.make_empty_tensor_value_info(k) for k in needed]
    outs = [o for n in nodes for o in n.output if o]
    g = helper.make_graph(nodes, "fold", inputs, [helper.make_empty_tensor_value_info(o) for o in outs])
    m = helper.make_model(g, opset_imports=opset)
    ev = ReferenceEvaluator(m)
    vals = ev.run(None, {k: consts[k] for k in needed})
    return {o: np.asarray(v) for o, v in zip(outs, vals)}


def fold_constants(model: onnx.ModelProto, max_rounds: int = 8) -> Folded:
    """Fold every constant-valued node of ``model`` (already checked, converted, shape-inferred).

    Parameters
    ----------
    model : onnx.ModelProto
        The model; it is not modified.
    max_rounds : int
        Fold/infer iterations (each round may expose new static shapes).

    Returns
    -------
    Folded
        Remaining nodes, the constant tensors and the static type of every tensor.
    """
    g = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    graph_inputs = [vi for vi in g.input if vi.name not in consts]
    f = Folded(
        nodes=list(g.node),
        consts=consts,
        inputs=[vi.name for vi in graph_inputs],
        outputs=[vi.name for vi in g.output],
        opset=list(model.opset_import),
    )
    types = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = _vi_type(vi)
        if t is not None:
            types[vi.name] = t
    for _ in range(max_rounds):
        changed = False
        foldable: list[onnx.NodeProto] = []
        known = set(f.consts)
        rest = []
        for n in f.nodes:
            ins = [i for i in n.input if i]
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                f.consts[n.output[0]] = _attr_const(n)
                known.add(n.output[0])
                changed = True
            elif n.op_type == "Shape" and n.input[0] in types and n.input[0] not in known:
                shape = np.array(types[n.input[0]][0], np.int64)
                at = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                start, end = at.get("start", 0), at.get("end", None)
                f.consts[n.output[0]] = shape[start:end]
                known.add(n.output[0])
                changed = True
            elif n.op_type == "CastLike" and n.input[0] in f.consts and n.input[1] in types:
                # only the type of the second input matters
                f.consts[n.output[0]] = np.asarray(f.consts[n.input[0]]).astype(types[n.input[1]][1])
                known.add(n.output[0])
                changed = True
            elif (
                n.domain in ("", "ai.onnx")
                and n.op_type not in _NONDETERMINISTIC
                and all(i in known for i in ins)
                and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute)
            ):
                foldable.append(n)
                known.update(o for o in n.output if o)
            else:
                rest.append(n)
        if foldable:
            f.consts.update(_eval_nodes(foldable, f.consts, f.opset))
            changed = True
        f.nodes = rest
        if not changed:
            break
        types.update(_infer(f, graph_inputs, g.output, g.name))
    for k, v in f.consts.items():
        types[k] = (tuple(v.shape), v.dtype.name)
    f.types = types
    return f
