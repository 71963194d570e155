"""The :func:`~.graph.lower_graph` hook of the issue-13 lowerings: dispatches a node to
:mod:`.lower_extra` (data movement, relayouts) or :mod:`.lower_lut` (lookup tables, Mul)."""

from __future__ import annotations

from ....frontend.quant import LUT_OPS, QNode
from .graph import Layer, TensorRef
from .lower_extra import NEEDS_HWC, COPY_OPS, copy_layer, same_storage, is_default_storage, relayout
from .lower_lut import lower_lut, lower_mul


def lower_node(n: QNode, ins: list[TensorRef], new_tensor, layers: list[Layer]) -> bool:
    """The :func:`~.graph.lower_graph` hook: lower ``n`` if it is one of the issue-13 ops
    (appending to ``layers``; returns True), or materialise inputs a core op needs in HWC."""
    if n.op in NEEDS_HWC and len(ins[0].shape) == 4 and not ins[0].is_hwc:
        ins[0] = relayout(n, ins[0], new_tensor, layers)
        return False
    if n.op in ("Add", "Sub") and len(ins) == 2 and ins[0].shape == ins[1].shape and not same_storage(*ins):
        for k in (0, 1):
            if not is_default_storage(ins[k]):
                ins[k] = relayout(n, ins[k], new_tensor, layers)
        return False
    if n.op in COPY_OPS:
        layers.append(copy_layer(n, ins, new_tensor))
        return True
    if n.op in LUT_OPS:
        layers.append(lower_lut(n, ins[0], new_tensor))
        return True
    if n.op == "Mul":
        layers.append(lower_mul(n, ins, new_tensor))
        return True
    return False
