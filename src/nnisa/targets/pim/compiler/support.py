"""Which float-graph nodes the PIM compiler lowers: the per-node check run before any work, from
the lowering table (:data:`.lowerings.LOWERINGS`) and the conditions of its lowerings.

``frontend.prepare.check_graph`` calls :func:`pim_check` on every node of the imported graph
and reports every refusal at once, before calibration, mapping or code generation.
"""

from __future__ import annotations

from ....core.lowering import refusal
from ....frontend.quant_transformer import raw_tensors
from .lowerings import LOWERINGS

_WHY = {
    "ReduceMax": "ReduceMax is not lowered on PIM (DAIS compiles it)",
    "ReduceSum": "ReduceSum is not lowered on PIM (DAIS compiles it)",
}


def pim_check(n, g) -> str | None:
    """Why the PIM compiler cannot lower float-graph node ``n`` (None when it can)."""
    if n.outputs[0] in raw_tensors(g):
        return None      # exact arithmetic on ids/masks: a host step
    why = refusal(LOWERINGS, "PIM", n.op, _WHY)
    if why:
        return why
    if n.op == "Conv" and n.inputs[1] not in g.initializers:
        return "crossbar weights must be constants (this Conv's weights are computed by the graph)"
    return None
