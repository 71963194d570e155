"""Which float-graph nodes the PIM compiler lowers: the per-node check run before any work, from
the lowering table (:data:`.lowerings.LOWERINGS`) and the conditions of its lowerings.

``frontend.prepare.check_graph`` calls :func:`pim_check` on every node of the imported graph
and reports every refusal at once, before calibration, mapping or code generation.
"""

from __future__ import annotations

from ....core.lowering import refusal
from .lowerings import LOWERINGS

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
    why = refusal(LOWERINGS, "PIM", n.op, _WHY)
    if why:
        return why
    if n.op in ("Add", "Sub") and any(i in g.initializers for i in n.inputs):
        return f"{n.op} with a constant operand (not folded into a Conv/Gemm bias) is not lowered on PIM"
    if n.op == "AveragePool" and tuple(n.attrs.get("dilations", (1, 1))) != (1, 1):
        return "dilated AveragePool is not lowered on PIM"
    if n.op == "Conv" and n.inputs[1] not in g.initializers:
        return "crossbar weights must be constants (this Conv's weights are computed by the graph)"
    return None
