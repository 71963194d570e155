"""What every compiler does before lowering: import, check the whole graph, calibrate, quantize.

:func:`prepare_qgraph` is the one place the quantization options of ``nnisa run/compile`` are
validated and applied (``-O calibration=… -O percentile=… -O per_channel=…`` and
``--calibration FILE``), and :func:`check_graph` reports *every* node a target cannot compile
in one error, in well under a second, before any calibration or compile work.

:func:`split_float_tail` separates a trailing Softmax (and the reshapes after it) from the
integer graph: targets without an exponential compile the integer part and run the tail on
the host, in float, and say so in their report.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..core.errors import ConfigError, FormatError, UnsupportedError
from ..core.options import option_specs
from ..core.quant_options import QuantOptions
from .batch import check_batch
from .calibration import METHODS, calibration_inputs
from .ir import Graph, Node
from .quant import LUT_OPS, MOVE_OPS, QGraph, quantize
from .quant_transformer import RAW_OPS, raw_tensors

#: IR ops :func:`~nnisa.frontend.quantize` gives integer semantics
QUANTIZABLE = set(MOVE_OPS) | set(LUT_OPS) | {
    "Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Relu", "Clip", "AveragePool", "GlobalAveragePool",
    "ReduceMean", "ReduceSum", "Max", "Min", "Concat", "Softmax", "LayerNorm", "MaskedSoftmax", "Gather", "Where"}

#: the quantization options every compiling target declares (``-O key=value`` of compile/run)
QUANT_OPTIONS = option_specs(QuantOptions)

#: a target's check: ``(node, graph) -> reason or None``
Check = Callable[[Node, Graph], "str | None"]


def quantization_issue(n: Node, g: Graph, raw: set[str] | None = None) -> str | None:
    """Why ``n`` cannot be quantized (None when it can); ``raw``: :func:`raw_tensors` of ``g``."""
    raw = raw_tensors(g) if raw is None else raw
    if n.outputs[0] in raw:  # index/mask arithmetic stays exact
        return None
    acts = [i for i in n.inputs if i not in g.initializers]
    if any(i in raw for i in acts) and not (n.op == "Gather" or n.op in ("MaskedSoftmax", "Where")):
        return f"{n.op} of a tensor computed from integer model inputs (ids/mask) has no integer semantics"
    if n.op not in QUANTIZABLE:
        why = {"LRN": "LRN has no integer semantics in nnisa (float evaluation only)",
               "Div": "Div by a tensor computed by the graph (or of integers) has no integer lowering"}
        if n.op in RAW_OPS:
            return f"{n.op} of a quantized activation has no integer semantics (only of ids/masks)"
        return why.get(n.op, f"{n.op} has no integer semantics in nnisa")
    if n.op == "Pow" and "exponent" not in n.attrs:
        return "Pow by a tensor has no integer semantics (only by a constant scalar: a lookup table)"
    if n.op == "Gather" and (n.inputs[1] not in g.initializers or n.inputs[0] not in raw):
        return "Gather of a constant table needs integer indices computed from the model inputs"
    if n.op == "Where" and n.inputs[0] not in raw:
        return "Where needs a condition computed from integer model inputs (a mask)"
    if n.op == "Resize" and n.attrs.get("mode") == "linear":
        return "linear Resize has no integer semantics in nnisa (float targets only; nearest is supported)"
    if n.op in ("Conv", "Gemm") and n.inputs[1] not in g.initializers:
        return f"{n.op} weights computed by the graph cannot be quantized (they must be constants)"
    if n.op == "MatMul" and n.inputs[0] in g.initializers:
        return "MatMul with a constant left operand is not supported"
    if n.op == "Concat" and sum(i in g.initializers for i in n.inputs) > 1:  # one (a class token) is quantized
        return "Concat with more than one constant input is not supported in a quantized graph"
    if n.op in ("Max", "Min") and any(i in g.initializers for i in n.inputs):
        return f"{n.op} with a constant operand is not supported in a quantized graph"
    return None


def check_graph(graph: Graph, target: str, check: Check | None = None, *, quantized: bool = True) -> None:
    """Raise one :class:`UnsupportedError` naming every node that ``target`` cannot compile.

    Parameters
    ----------
    graph : Graph
        The imported float graph.
    target : str
        Target name (for the message).
    check : callable, optional
        The target's own per-node check, run after the quantization check.
    quantized : bool
        Whether the target compiles the quantized graph (then every node must have integer
        semantics); float targets (Tensil, Cherry) pass False.
    """
    check_batch(graph)  # a fixed first dimension > 1 the compilers cannot take as batch 1
    bad: list[tuple[tuple[str, str], str]] = []   # ((op, name), reason)
    seen: set[tuple[str, str]] = set()
    raw = raw_tensors(graph)
    for n in graph.nodes:
        why = (quantization_issue(n, graph, raw) if quantized else None) or \
            (check(n, graph) if check else None)
        # the nodes unrolled from one LSTM/GRU are reported once, under the ONNX node's name
        key = tuple(graph.origin[n.name].split(" ", 1)) if n.name in graph.origin else (n.op, n.name)
        if why and (key, why) not in seen:
            seen.add((key, why))
            bad.append((key, why))
    if not bad:
        return
    if len(bad) == 1:
        (op, name), why = bad[0]
        raise UnsupportedError(f"{why} (target {target})", where=f"node {name} ({op})", file=graph.source)
    groups: dict[str, list[tuple[str, str]]] = {}
    for key, why in bad:  # one entry per reason, biggest first: short enough for one line
        groups.setdefault(why, []).append(key)
    parts = []
    for why, nodes in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        names = ", ".join(name for _, name in nodes[:2]) + (", ..." if len(nodes) > 2 else "")
        parts.append(f"{len(nodes)}× {nodes[0][0]} ({names}): {why}")
    raise UnsupportedError(f"{len(bad)} nodes cannot be compiled for {target}: {'; '.join(parts)}", file=graph.source)


def prepare_qgraph(model: Any, target: str, *, check: Check | None = None, calib: Any = None, bits: int = 8,
                   per_channel: bool = True, calibration: str = "max", percentile: float = 99.99,
                   scale_mode: str = "pow2", calib_samples: int = 64) -> QGraph:
    """Import ``model``, check it for ``target``, calibrate and quantize it.

    Parameters
    ----------
    model
        ONNX path / bytes / ``ModelProto``, or a :class:`~nnisa.frontend.prepared.PreparedModel`
        (imported once; the result is computed once per settings and copied), or a
        :class:`QGraph` (returned unchanged).
    target : str
        Target name (messages).
    check : callable, optional
        The target's per-node check (see :func:`check_graph`).
    calib
        Calibration data: dict / array / ``.npy/.npz/.csv`` path; default
        :func:`~nnisa.frontend.calibration.calibration_inputs` (disjoint from ``run``'s samples).
    bits, per_channel, calibration, percentile, scale_mode
        Quantization settings (:func:`~nnisa.frontend.quantize`).
    calib_samples : int
        Size of the default calibration set.
    """
    from .prepared import PreparedModel, load_model
    if isinstance(model, QGraph):
        return model
    if calibration not in METHODS:
        raise ConfigError(f"unknown calibration method {calibration!r}; choose from {METHODS}")

    def make(g: Graph) -> QGraph:
        data = calibration_inputs(g, calib, samples=calib_samples)
        try:
            return quantize(g, data, bits=bits, per_channel=per_channel, scale_mode=scale_mode,
                            calibration=calibration, percentile=percentile)
        except FormatError as e:  # a calibration range: name the file it came from
            if e.file is None and isinstance(calib, (str, os.PathLike)):
                raise FormatError(e.message, file=str(calib)) from None
            raise

    if isinstance(model, PreparedModel):  # imported once; quantized once per settings (and calibration file)
        model.check(lambda g: check_graph(g, target, check))
        if calib is None or isinstance(calib, (str, os.PathLike)):
            key = ("pow2" if scale_mode == "pow2" else scale_mode, bits, per_channel, calibration, percentile,
                   calib_samples, None if calib is None else str(calib))
            return model.quantized(key, make)
        return make(model.graph())
    g = load_model(model)
    check_graph(g, target, check)
    return make(g)


def split_float_tail(qg: QGraph) -> tuple[QGraph, Callable[[dict], dict] | None, list[str]]:
    """Cut the float tail (Softmax and what follows it) off ``qg``.

    Returns
    -------
    (QGraph, callable or None, list of str)
        The integer head (its outputs are the tail's integer inputs), ``tail(ints) -> floats``
        mapping the head's integer outputs to the model's outputs (None when there is no tail),
        and the names of the tail's nodes.
    """
    from .qeval import run_qnode
    tail = [n for n in qg.nodes if qg.tensors[n.outputs[0]].is_float]
    if not tail:
        return qg, None, []
    head = [n for n in qg.nodes if not qg.tensors[n.outputs[0]].is_float]
    produced = {o for n in tail for o in n.outputs}
    feeds = []
    for n in tail:
        for i in n.inputs:
            if i not in produced and i not in feeds:
                feeds.append(i)
    if any(qg.tensors[i].is_float for i in feeds):  # pragma: no cover - quantize never builds this
        raise UnsupportedError("internal: float tail reads a float tensor of the head", file=qg.source)
    head_g = replace(qg, nodes=head, outputs=[qg.tensors[i] for i in feeds])

    def run_tail(ints: dict) -> dict:
        env = {k: np.asarray(v) for k, v in ints.items()}
        for n in tail:
            env[n.outputs[0]] = run_qnode(n, [env[i] for i in n.inputs], qg)
        return {t.name: env[t.name] for t in qg.outputs}

    return head_g, run_tail, [f"{n.name} ({n.op})" for n in tail]
