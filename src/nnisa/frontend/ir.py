"""The float graph IR of the ONNX frontend: typed tensors, nodes and a topologically ordered graph.

Attributes of every node are normalized by the importer (see ``docs/frontend.md``): no
``auto_pad``, no optional inputs, no negative axes, shapes fully static.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class TensorInfo:
    """Static shape and dtype of one tensor.

    Attributes
    ----------
    name : str
        Tensor name.
    shape : tuple of int
        Static shape; axis 0 is the declared batch size.
    dtype : str
        numpy dtype name, e.g. ``"float32"``.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"


@dataclass
class Node:
    """One operation of the IR.

    Attributes
    ----------
    op : str
        Normalized op name (``Conv``, ``Gemm``, ``Add`` ...).
    name : str
        Unique node name.
    inputs, outputs : list of str
        Tensor names; inputs may name initializers.
    attrs : dict
        Normalized attributes.
    """

    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Graph:
    """A float model: inputs, outputs, nodes in topological order and constant initializers.

    Attributes
    ----------
    name : str
        Graph name.
    inputs, outputs : list of TensorInfo
        Graph inputs (initializers excluded) and outputs.
    nodes : list of Node
        Topologically ordered nodes.
    initializers : dict of str to numpy.ndarray
        Constant tensors (weights, biases).
    tensors : dict of str to TensorInfo
        Shape and dtype of every activation tensor (inputs and node outputs).
    source : str or None
        Path of the model file, used in error messages.
    origin : dict of str to str
        Node name → ``"<op> <name>"`` of the ONNX node it was unrolled from (LSTM/GRU), so a
        target that cannot run recurrent networks names them.
    fixed_batch : int
        The model's fixed first input dimension B when it is > 1 (:mod:`.batch`); the graph itself
        is batch 1 either way.
    whole_batch : bool
        With ``fixed_batch > 1``: True when one sample is the whole ``[B, ...]`` input (the graph
        has a unit axis in front of the model's shapes), False when the B rows are samples.
    """

    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    nodes: list[Node]
    initializers: dict[str, np.ndarray]
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    source: str | None = None
    origin: dict[str, str] = field(default_factory=dict)
    fixed_batch: int = 1
    whole_batch: bool = False

    def producer(self, name: str) -> Node | None:
        """Return the node that produces tensor ``name`` (``None`` for inputs/initializers)."""
        for n in self.nodes:
            if name in n.outputs:
                return n
        return None

    def consumers(self, name: str) -> list[Node]:
        """Return the nodes that read tensor ``name``."""
        return [n for n in self.nodes if name in n.inputs]

    def shape(self, name: str) -> tuple[int, ...]:
        """Static shape of an activation or initializer tensor."""
        if name in self.initializers:
            return tuple(self.initializers[name].shape)
        return self.tensors[name].shape

    def is_output(self, name: str) -> bool:
        """True when ``name`` is a graph output."""
        return any(t.name == name for t in self.outputs)

    def op_counts(self) -> dict[str, int]:
        """Number of nodes per op (handy in reports and tests)."""
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0) + 1
        return out

    def toposort(self) -> None:
        """Reorder ``nodes`` topologically (stable: keeps the given order where possible)."""
        avail = {t.name for t in self.inputs} | set(self.initializers)
        pending = list(self.nodes)
        ordered: list[Node] = []
        while pending:
            rest = []
            for n in pending:
                if all(i in avail for i in n.inputs):
                    ordered.append(n)
                    avail.update(n.outputs)
                else:
                    rest.append(n)
            if len(rest) == len(pending):
                names = ", ".join(n.name for n in rest[:3])
                raise ValueError(f"graph has a cycle or missing inputs at nodes {names}")
            pending = rest
        self.nodes = ordered

    def __repr__(self) -> str:
        ops = ", ".join(f"{k}×{v}" for k, v in self.op_counts().items())
        return f"Graph({self.name!r}, {len(self.nodes)} nodes: {ops})"
