"""Models whose first input dimension is a fixed size B > 1 (issue 26): what the compilers see.

onnxruntime runs such a model on exactly B rows at a time.  nnisa keeps that rule for the user's
arrays (``(B, ...)`` is one inference, ``(N, B, ...)`` are N, see :func:`nnisa.core.bundle.as_samples`)
and gives every compiler a batch-1 graph, whichever of two forms is correct:

* **per row** (:func:`to_rows`): when no node mixes axis 0 (:func:`~.float_eval.mixes_batch`) and
  no constant differs along it, the B rows are independent samples: the graph is rewritten for
  one row (axis 0 of every tensor, Reshape and Expand becomes 1; a constant whose rows are all
  equal keeps one).  A CNN exported with a batch of 4 is such a model.
* **whole** (:func:`lift`): otherwise (a sequence-first ``[L, N, E]`` attention mixes axis 0), one
  sample is the whole ``[B, ...]`` tensor: a unit batch axis is put in front of every tensor
  (axes and permutations shift by one, a Gemm becomes MatMul + Add, a Flatten a Reshape).  A
  node that cannot take the extra axis (Conv, pooling: 4-D only) is a one-line refusal.

:attr:`Graph.fixed_batch` records B and :attr:`Graph.whole_batch` the form, so the runners lay out
the data the same way (rows, or one sample per inference).
"""

from __future__ import annotations

import copy

import numpy as np

from ..core.errors import UnsupportedError
from .float_eval import mixes_batch
from .ir import Graph, Node, TensorInfo

#: ops whose constant operands broadcast against the activation (a constant's axis 0 is the batch
#: axis when its rank is the output's)
_BROADCAST = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Where", "Equal", "Less", "Greater", "Concat",
              "MaskedSoftmax", "MatMul", "Expand"}
#: ops whose attributes name no axis: the extra leading axis changes nothing
_AXIS_FREE = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Relu", "Sigmoid", "Tanh", "Clip", "Erf", "Gelu",
              "Sqrt", "Exp", "Log", "Reciprocal", "HardSigmoid", "HardSwish", "LeakyRelu", "Where", "Equal", "Less",
              "Greater", "Not", "Cast", "Identity", "MatMul", "Gather", "Neg", "Abs", "Softplus", "Elu", "Selu"}
_AXIS_ATTR = {"Softmax", "MaskedSoftmax", "LayerNorm", "Concat"}


def declared_batch(g: Graph) -> int:
    """The fixed first dimension the graph's inputs declare (1 when batch-1 or symbolic)."""
    dims = {t.shape[0] for t in g.inputs if t.shape}
    return max(dims) if dims else 1


def fix_batch(g: Graph) -> None:
    """Give the compilers a batch-1 graph for a model with a fixed first dimension B > 1 (see the
    module docstring); a batch-1 model is left unchanged."""
    b = declared_batch(g)
    if b <= 1:
        return
    g.fixed_batch = b
    # inputs of different first dimensions: axis 0 is no batch, the whole input is one sample
    if any(not t.shape or t.shape[0] != b for t in g.inputs) or not to_rows(g, b):
        try:
            lift(g)
        except UnsupportedError:
            pass  # left as declared: the frontend evaluates it; check_batch refuses it for the compilers


def check_batch(g: Graph) -> None:
    """Raise the one-line reason a graph with a fixed first dimension > 1 could not be made batch-1
    (:func:`fix_batch` left it as declared); nothing for every other graph."""
    if declared_batch(g) > 1 and g.fixed_batch > 1:
        lift(copy.deepcopy(g))  # raises the reason


def to_rows(g: Graph, b: int) -> bool:
    """Rewrite ``g`` for one of its ``b`` independent rows; False (``g`` unchanged) when the rows
    are not independent."""
    if mixes_batch(g.nodes, g.tensors) or any(not t.shape or t.shape[0] != b for t in g.tensors.values()):
        return False
    one_row: dict[tuple[str, str], np.ndarray] = {}
    for n in g.nodes:
        if n.op not in _BROADCAST:
            continue
        rank = len(g.tensors[n.outputs[0]].shape)
        for c in n.inputs:
            v = g.initializers.get(c)
            if v is None or v.ndim != rank or v.shape[0] != b or (n.op == "MatMul" and rank < 3):
                continue
            if not (v == v[:1]).all():
                return False  # a different constant per row: the rows are one sample
            one_row[(n.name, c)] = v[:1].copy()
    for n in g.nodes:
        for k, c in enumerate(n.inputs):
            if (n.name, c) in one_row:
                name = f"{c}.row"
                g.initializers[name] = one_row[(n.name, c)]
                n.inputs[k] = name
        if n.op in ("Reshape", "Expand") and n.attrs["shape"] and n.attrs["shape"][0] == b:
            n.attrs["shape"] = (1, *n.attrs["shape"][1:])
    for name, t in g.tensors.items():
        t.shape = (1, *t.shape[1:])
    _sync_io(g)
    _drop_unused(g)
    return True


def lift(g: Graph) -> None:
    """Put a unit batch axis in front of every activation of ``g`` (one sample = the whole declared
    batch); raises :class:`UnsupportedError` naming a node that cannot take it (``g`` unchanged)."""
    for n in g.nodes:
        if _lift_node(g, copy.deepcopy(n), check=True) is None:
            raise UnsupportedError(
                f"the model's fixed first dimension {g.fixed_batch} is mixed by the graph (e.g. sequence-first "
                f"attention), so one sample is the whole [{g.fixed_batch}, ...] tensor; {n.op} cannot take the "
                "extra batch axis this needs (export with a batch dimension of 1, or batch_first=True)",
                where=f"node {n.name} ({n.op})", file=g.source)
    new_nodes: list[Node] = []
    for n in g.nodes:
        new_nodes.extend(_lift_node(g, n) or [])
    g.nodes = new_nodes
    for t in g.tensors.values():
        t.shape = (1, *t.shape)
    _sync_io(g)
    g.whole_batch = True


def _lift_node(g: Graph, n: Node, check: bool = False) -> list[Node] | None:
    """``n`` for the lifted graph (its attributes changed in place), or None when it cannot be
    lifted; ``check``: only say whether it can (no new tensors)."""
    a = n.attrs
    if n.op == "MatMul" and any(len(g.shape(i)) < 2 for i in n.inputs):
        return None  # a 1-D operand is a vector, not a batch of rows
    if n.op in _AXIS_FREE:
        return [n]
    if n.op == "Transpose":
        a["perm"] = (0, *(p + 1 for p in a["perm"]))
    elif n.op in ("Reshape", "Expand"):
        a["shape"] = (1, *a["shape"])
    elif n.op in _AXIS_ATTR:
        a["axis"] += 1
    elif n.op.startswith("Reduce") or n.op in ("Squeeze", "Unsqueeze"):
        a["axes"] = type(a["axes"])(x + 1 for x in a["axes"])
    elif n.op in ("Slice", "Resize") and "index" in a:
        a["index"] = [None, *a["index"]]
    elif n.op == "Flatten":
        return [Node("Reshape", n.name, n.inputs, n.outputs, {"shape": (1, *g.tensors[n.outputs[0]].shape)})]
    elif n.op == "Gemm":  # 2-D only: x @ W + bias on the lifted 3-D tensor
        mm = f"{n.outputs[0]}.mm"
        if not check:
            g.tensors[mm] = TensorInfo(mm, g.tensors[n.outputs[0]].shape, g.tensors[n.outputs[0]].dtype)
        return [Node("MatMul", n.name, n.inputs[:2], [mm]),
                Node("Add", f"{n.name}.bias", [mm, n.inputs[2]], n.outputs)]
    else:
        return None
    return [n]


def _sync_io(g: Graph) -> None:
    """Graph inputs/outputs take the (rewritten) shapes of their tensors."""
    for ts in (g.inputs, g.outputs):
        for k, t in enumerate(ts):
            if t.name in g.tensors:
                ts[k] = TensorInfo(t.name, g.tensors[t.name].shape, t.dtype)


def _drop_unused(g: Graph) -> None:
    used = {i for n in g.nodes for i in n.inputs}
    for name in [k for k in g.initializers if k not in used]:
        del g.initializers[name]

