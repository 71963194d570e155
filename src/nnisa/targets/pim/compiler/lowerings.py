"""The PIM lowering table: every IR op the compiler lowers, and the pre-pass that lays a node's
inputs out for it.

:data:`LOWERINGS` maps an op to its lowering ``fn(cx, node, inputs)`` (:class:`~.graph.LowerContext`):
the core layers of :mod:`.graph`, the data movement and relayouts of :mod:`.lower_extra` and the
lookup tables and Mul of :mod:`.lower_lut`.  The node check (:mod:`.support`), ``nnisa targets
--ops`` and the docs come from it.
"""

from __future__ import annotations

from ....core.lowering import OnHost
from ....frontend.quant import LUT_OPS, QNode
from .graph import LAYOUT_OPS, Layer, is_plain, LowerContext, TensorRef, lower_alias, lower_clamp, lower_elt, lower_gap
from .graph import lower_mat, lower_pool
from .lower_extra import NEEDS_HWC, COPY_OPS, copy_layer, same_storage, is_default_storage, relayout
from .lower_lut import lower_lut, lower_mul
from .lower_reduce import lower_reduce
from .lower_attn import lower_act_matmul
from .lower_maxmin import lower_maxmin


def prepare_inputs(n: QNode, ins: list[TensorRef], new_tensor, layers: list[Layer]) -> None:
    """Materialise in HWC the inputs a core op needs that way (and the operands of an Add/Sub
    stored differently, likewise Max/Min), appending the relayout layers; ``ins`` is updated in place."""
    if n.op in NEEDS_HWC and len(ins[0].shape) == 4 and not ins[0].is_hwc:
        ins[0] = relayout(n, ins[0], new_tensor, layers)
        return
    if n.op in ("MatMul", "Gemm") and n.weight is not None and (len(ins[0].shape) > 2 or ins[0].shape[0] != 1) \
            and not is_plain(ins[0]):
        ins[0] = relayout(n, ins[0], new_tensor, layers, plain=True)
        return
    if n.op in ("Add", "Sub", "Max", "Min") and len(ins) == 2 and ins[0].shape == ins[1].shape \
            and not same_storage(*ins):
        for k in (0, 1):
            if not is_default_storage(ins[k]):
                ins[k] = relayout(n, ins[k], new_tensor, layers)


def _copy(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    cx.layers.append(copy_layer(n, ins, cx.new_tensor))


def _lut(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    cx.layers.append(lower_lut(n, ins[0], cx.new_tensor))


def _mul(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    cx.layers.append(lower_mul(n, ins, cx.new_tensor))


def _matmul(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    """By constant weights: the crossbars; of two activations: ``vvdmul`` on the vector unit."""
    if n.weight is not None:
        lower_mat(cx, n, ins)
    else:
        cx.layers.append(lower_act_matmul(n, ins, cx.new_tensor))


def _reduce(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    cx.layers.append(lower_reduce(n, ins[0], cx.new_tensor))


def _add_sub(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    """Same-shape activations: the Add/Sub layer (fusable into a Conv); a constant or broadcast
    operand: the gathered-operand layer of Mul."""
    if n.const is None and len(ins) == 2 and tuple(ins[0].shape) == tuple(ins[1].shape):
        lower_elt(cx, n, ins)
    else:
        _mul(cx, n, ins)


#: the PIM lowering table: IR op → ``fn(cx, node, inputs)``
LOWERINGS = {
    **dict.fromkeys(LAYOUT_OPS, lower_alias), "Conv": lower_mat, "Gemm": lower_mat,
    "MatMul": _matmul,
    "MaxPool": lower_pool, "AveragePool": lower_pool, "GlobalAveragePool": lower_gap,
    "Add": _add_sub, "Sub": _add_sub, "Relu": lower_clamp, "Clip": lower_clamp,
    "Max": lower_maxmin, "Min": lower_maxmin,
    **dict.fromkeys(COPY_OPS, _copy), **dict.fromkeys(LUT_OPS, _lut), "Mul": _mul, "ReduceMean": _reduce,
    "Softmax": OnHost("a trailing Softmax runs on the host in float; inside the graph, the integer Softmax is a "
                      "host step (one division per row: the vector unit has none)"),
    "LayerNorm": OnHost("a host step between device phases: an integer square root and a division per row"),
    "MaskedSoftmax": OnHost("a host step between device phases: one division per row"),
    "Gather": OnHost("a host step: embedding lookup by token ids (no indexed load)"),
}
