"""Which float-graph nodes the PIM compiler lowers: the per-node check run before any work.

``frontend.prepare.check_graph`` calls :func:`pim_check` on every node of the imported graph
and reports every refusal at once, before calibration, mapping or code generation.
"""

from __future__ import annotations

from .graph import LAYOUT_OPS

#: IR ops the PIM compiler lowers (BatchNormalization arrives as a 1×1 depthwise Conv); Concat,
#: Slice (Split, Gather with constant indices), nearest Resize, the lookup-table activations and Mul
#: are lowered by :mod:`.lower_extra` / :mod:`.lower_lut`
PIM_OPS = {"Conv", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Sub", "Relu", "Clip", "Softmax",
           "Concat", "Slice", "Resize", "Mul", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish",
           *LAYOUT_OPS}

_WHY = {
    "MatMul": "crossbar weights must be constants: a MatMul of two activations (attention) cannot run on the "
              "crossbars (DAIS compiles it)",
    "ReduceMean": "ReduceMean is not lowered on PIM (use GlobalAveragePool; DAIS compiles it)",
    "ReduceMax": "ReduceMax is not lowered on PIM (DAIS compiles it)",
    "ReduceSum": "ReduceSum is not lowered on PIM (DAIS compiles it)",
    "Pad": "a Pad that cannot be folded into the next Conv/pooling is not lowered on PIM",
    "Max": "elementwise Max/Min of activations is not lowered on PIM (DAIS compiles it)",
    "Min": "elementwise Max/Min of activations is not lowered on PIM (DAIS compiles it)",
}


def pim_check(n, g) -> str | None:
    """Why the PIM compiler cannot lower float-graph node ``n`` (None when it can)."""
    if n.name in g.origin:
        return ("LSTM/GRU is not compiled on PIM (recurrent cells are unrolled for DAIS only; the PIM compiler "
                "maps feed-forward layers onto crossbars)")
    if n.op not in PIM_OPS:
        return _WHY.get(n.op, f"operator {n.op} is not supported on PIM")
    if n.op in ("Add", "Sub") and any(i in g.initializers for i in n.inputs):
        return f"{n.op} with a constant operand (not folded into a Conv/Gemm bias) is not lowered on PIM"
    if n.op == "AveragePool" and tuple(n.attrs.get("dilations", (1, 1))) != (1, 1):
        return "dilated AveragePool is not lowered on PIM"
    if n.op == "Conv" and n.inputs[1] not in g.initializers:
        return "crossbar weights must be constants (this Conv's weights are computed by the graph)"
    return None
