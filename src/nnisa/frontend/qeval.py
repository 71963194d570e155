"""Bit-exact integer reference evaluator of a :class:`~nnisa.frontend.quant.QGraph`.

This is the golden model of nnisa: every compiler must reproduce its int64 results.  All
arithmetic is exact integer arithmetic (int64, or float64 BLAS where provably exact, see
:func:`nnisa.frontend.kernels.int_matmul`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnisa.core.errors import FormatError, UnsupportedError

from . import kernels as K
from .float_eval import (_softmax, batch_concat, bind_inputs, by_batch, model_shaped, pad_array, reshape_target,
                         run_node, take_axes)
from .quant import LUT_OPS, QGraph, QNode, qrange
from .quant_transformer import raw_operands, run_transformer_qnode

#: ops whose integer semantics live in :mod:`.quant_transformer`
_TRANSFORMER_QOPS = ("LayerNorm", "Softmax", "MaskedSoftmax", "Gather", "Where")


def _binary_operands(n: QNode, args: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if n.const is None:
        return args[0], args[1]
    return (n.const, args[0]) if n.attrs.get("const_index") == 0 else (args[0], n.const)


def run_qnode(n: QNode, args: list[np.ndarray], qg: QGraph) -> np.ndarray:
    """Integer semantics of one node (see ``docs/frontend.md``).

    Parameters
    ----------
    n : QNode
        The node.
    args : list of numpy.ndarray
        Integer values of ``n.inputs`` (float for tensors after a Softmax).
    qg : QGraph
        The graph (for tensor shapes).

    Returns
    -------
    numpy.ndarray
        int64 result (float32 for Softmax and the reshapes after it).
    """
    op, a = n.op, n.attrs
    x = args[0]
    lo, hi = n.clamp
    if qg.tensors[n.outputs[0]].raw:  # index/mask arithmetic: exact, with the float semantics
        return run_node(n, raw_operands(n, args), qg)
    if n.out_bits == 0:  # float tail after a Softmax
        if op == "Softmax":
            return _softmax(x.astype(np.float64) * n.in_scales[0], a["axis"]).astype(np.float32)
        if op == "Slice":
            return take_axes(x, a["index"])
        return _move(n, x, qg)
    if op == "Conv":
        acc = K.conv2d(x, n.weight, n.bias, a, exact_int=True)
        return np.clip(n.requant.apply(acc, axis=1), lo, hi)
    if op == "Gemm":
        acc = K.int_matmul(x, n.weight) + n.bias
        return np.clip(n.requant.apply(acc, axis=acc.ndim - 1), lo, hi)
    if op == "MatMul":
        b = n.weight if n.weight is not None else args[1]
        acc = K.int_matmul(x, b)
        return np.clip(n.requant.apply(acc), lo, hi)
    if op in ("Add", "Sub", "Mul"):
        u, v = _binary_operands(n, args)
        if op == "Mul":
            acc = np.asarray(u, np.int64) * np.asarray(v, np.int64)
        else:
            u, v = n.input_requants[0].apply(u), n.input_requants[1].apply(v)
            acc = u + v if op == "Add" else u - v
        return np.clip(n.requant.apply(acc), lo, hi)
    if op in ("Relu", "Clip"):
        return np.clip(x, lo, hi)
    if op in _TRANSFORMER_QOPS:
        return run_transformer_qnode(n, args)
    if op in LUT_OPS:
        return n.lut[np.asarray(x, np.int64) - qrange(n.in_bits[0])[0]]
    if op in ("Slice", "Resize"):
        return take_axes(np.asarray(x, np.int64), a["index"])
    if op == "ReduceMax":
        return np.asarray(x, np.int64).max(axis=a["axes"], keepdims=a["keepdims"])
    if op in ("ReduceMean", "ReduceSum"):
        s = np.asarray(x, np.int64).sum(axis=a["axes"], keepdims=a["keepdims"])
        if op == "ReduceSum":
            return np.clip(n.requant.apply(s), lo, hi)
        return K.div_round_away(s, int(np.prod([x.shape[k] for k in a["axes"]])))
    if op in ("Max", "Min"):
        u, v = (np.clip(r.apply(t), lo, hi) for r, t in zip(n.input_requants, args))
        return (np.maximum if op == "Max" else np.minimum)(u, v)
    if op == "AveragePool":
        s = K.window_sum(np.asarray(x, np.int64), a)
        return K.div_round_away(s, K.pool_counts(a, x.shape[2], x.shape[3]))
    if op == "GlobalAveragePool":
        s = np.asarray(x, np.int64).sum(axis=(2, 3), keepdims=True)
        return K.div_round_away(s, x.shape[2] * x.shape[3])
    if op == "Concat":
        parts = [np.clip(r.apply(v), lo, hi) for r, v in zip(n.input_requants, args)]
        if n.const is not None:  # a constant input (class token), already at the output scale
            parts.insert(a["const_index"], n.const)
        return batch_concat(parts, a["axis"])
    if op == "MaxPool":
        return K.maxpool2d(np.asarray(x, np.int64), a)
    if op == "Pad":
        return pad_array(np.asarray(x, np.int64), a["pads"], a["qvalue"])
    return _move(n, x, qg)


def _move(n: QNode, x: np.ndarray, qg: QGraph) -> np.ndarray:
    a = n.attrs
    if n.op == "Flatten":
        return x.reshape(int(np.prod(x.shape[: a["axis"]], dtype=np.int64)), -1)
    if n.op == "Reshape":
        decl = qg.tensors[n.inputs[0]].shape
        return x.reshape(reshape_target(a["shape"], x, decl[0] if decl else None))
    if n.op == "Transpose":
        return np.transpose(x, a["perm"])
    if n.op == "Squeeze":
        return np.squeeze(x, axis=a["axes"])
    if n.op == "Unsqueeze":
        return np.expand_dims(x, axis=a["axes"])
    if n.op == "Identity":
        return x
    if n.op == "Expand":
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(a["shape"])))
    raise UnsupportedError(f"quantized evaluator has no op {n.op}", where=f"node {n.name} ({n.op})", file=qg.source)


def evaluate_quantized(qgraph: QGraph, inputs: Any, *, return_all: bool = False, dequantize: bool = False) -> dict[str, np.ndarray]:
    """Run the bit-exact integer golden model.

    Parameters
    ----------
    qgraph : QGraph
        Output of :func:`~nnisa.frontend.quantize`.
    inputs : dict, array or list of arrays
        Float arrays are quantized with :meth:`QGraph.quantize_input`; integer arrays are
        taken as already quantized (and must be in range).  Axis 0 (batch) may differ from
        the declared batch.
    return_all : bool
        Return every tensor, not only the graph outputs.
    dequantize : bool
        Multiply integer results by their scales (float32).

    Returns
    -------
    dict of str to numpy.ndarray
        int64 arrays (float32 for Softmax outputs, or everything with ``dequantize``).
    """
    env: dict[str, np.ndarray] = {}
    bound = bind_inputs([t.name for t in qgraph.inputs], inputs)
    if qgraph.whole_batch:
        if model_shaped(qgraph.inputs, bound):  # the model's own shapes: one sample
            out = evaluate_quantized(qgraph, {k: np.asarray(v)[None] for k, v in bound.items()},
                                     return_all=return_all, dequantize=dequantize)
            return {k: v[0] for k, v in out.items()}
    for k, v in bound.items():
        t = qgraph.tensors[k]
        if v.ndim != len(t.shape) or tuple(v.shape[1:]) != tuple(t.shape[1:]):
            raise FormatError(f"input {k!r} has shape {v.shape}, expected {t.shape} (any batch size)")
        if t.raw:  # token ids / masks: exact values
            env[k] = v
        elif np.issubdtype(v.dtype, np.integer):
            lo, hi = qrange(t.bits)
            if v.size and (v.min() < lo or v.max() > hi):
                raise FormatError(f"integer input {k!r} is outside the int{t.bits} range [{lo}, {hi}]")
            env[k] = v.astype(np.int64)
        else:
            env[k] = qgraph.quantize_input(k, v)
    env = by_batch(lambda d: _run_int(qgraph, d, return_all), env, qgraph.inputs, qgraph.nodes, qgraph.tensors)
    if dequantize:
        return {k: qgraph.dequantize(k, v) for k, v in env.items()}
    return env


def _run_int(qgraph: QGraph, env: dict[str, np.ndarray], return_all: bool) -> dict[str, np.ndarray]:
    env = dict(env)
    for n in qgraph.nodes:
        env[n.outputs[0]] = run_qnode(n, [env[i] for i in n.inputs], qgraph)
    names = list(env) if return_all else [t.name for t in qgraph.outputs]
    return {k: env[k] for k in names}
