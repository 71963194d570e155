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

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..core.errors import ConfigError, FormatError, UnsupportedError
from ..core.options import OptionSpec
from .calibration import METHODS, calibration_inputs
from .ir import Graph, Node
from .quant import LUT_OPS, MOVE_OPS, QGraph, quantize

#: IR ops :func:`~nnisa.frontend.quantize` gives integer semantics
QUANTIZABLE = set(MOVE_OPS) | set(LUT_OPS) | {
    "Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Relu", "Clip", "AveragePool", "GlobalAveragePool",
    "ReduceMean", "ReduceSum", "Max", "Min", "Concat", "Softmax"}

#: the quantization options every compiling target declares (``-O key=value`` of compile/run)
QUANT_OPTIONS = (
    OptionSpec("calibration", str, "max", METHODS, "activation range: max-abs, a percentile of |x|, or min MSE"),
    OptionSpec("percentile", float, 99.99, None, "percentile of |x| for calibration=percentile",
               minimum=50.0, maximum=100.0),
    OptionSpec("per_channel", bool, True, None, "one weight scale per output channel (else per tensor)"),
    OptionSpec("calib_samples", int, 64, None, "size of the default calibration set", minimum=1, maximum=1 << 16),
)

#: a target's check: ``(node, graph) -> reason or None``
Check = Callable[[Node, Graph], "str | None"]


def quantization_issue(n: Node, g: Graph) -> str | None:
    """Why ``n`` cannot be quantized (None when it can)."""
    if n.op not in QUANTIZABLE:
        why = {"LRN": "LRN has no integer semantics in nnisa (float evaluation only)",
               "Div": "Div by a tensor computed by the graph (or of integers) has no integer lowering",
               "Gather": "embedding lookups (Gather of a constant table) have no integer lowering yet"}
        return why.get(n.op, f"{n.op} has no integer semantics in nnisa")
    if n.op == "Resize" and n.attrs.get("mode") == "linear":
        return "linear Resize has no integer semantics in nnisa (float targets only; nearest is supported)"
    if n.op in ("Conv", "Gemm") and n.inputs[1] not in g.initializers:
        return f"{n.op} weights computed by the graph cannot be quantized (they must be constants)"
    if n.op == "MatMul" and n.inputs[0] in g.initializers:
        return "MatMul with a constant left operand is not supported"
    if n.op == "Concat" and any(i in g.initializers for i in n.inputs):
        return "Concat with a constant input is not supported in a quantized graph"
    if n.op in ("Max", "Min") and any(i in g.initializers for i in n.inputs):
        return f"{n.op} with a constant operand is not supported in a quantized graph"
    if n.op == "Softmax" and not _float_tail_ok(g, n.outputs[0]):
        return "Softmax must be the last op (it stays float: a host step)"
    return None


def _float_tail_ok(g: Graph, name: str) -> bool:
    cons = g.consumers(name)
    if not cons:
        return g.is_output(name)
    return all(c.op in ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Slice")
               and _float_tail_ok(g, c.outputs[0]) for c in cons)


def check_graph(graph: Graph, target: str, check: Check | None = None) -> None:
    """Raise one :class:`UnsupportedError` naming every node that ``target`` cannot compile.

    Parameters
    ----------
    graph : Graph
        The imported float graph.
    target : str
        Target name (for the message).
    check : callable, optional
        The target's own per-node check, run after the quantization check.
    """
    bad: list[tuple[tuple[str, str], str]] = []   # ((op, name), reason)
    seen: set[tuple[str, str]] = set()
    for n in graph.nodes:
        why = quantization_issue(n, graph) or (check(n, graph) if check else None)
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
        ONNX path / bytes / ``ModelProto`` (a :class:`QGraph` is returned unchanged).
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
    from .onnx_import import load_model
    if isinstance(model, QGraph):
        return model
    if calibration not in METHODS:
        raise ConfigError(f"unknown calibration method {calibration!r}; choose from {METHODS}")
    g = load_model(model)
    check_graph(g, target, check)
    data = calibration_inputs(g, calib, samples=calib_samples)
    try:
        return quantize(g, data, bits=bits, per_channel=per_channel, scale_mode=scale_mode, calibration=calibration,
                        percentile=percentile)
    except FormatError as e:  # a calibration range: name the file it came from
        if e.file is None and isinstance(calib, (str, Path)):
            raise FormatError(e.message, file=str(calib)) from None
        raise


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
    tail = [n for n in qg.nodes if n.out_bits == 0]
    if not tail:
        return qg, None, []
    head = [n for n in qg.nodes if n.out_bits != 0]
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
