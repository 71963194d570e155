"""Float reference evaluator of the IR (numpy, float32 activations)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnisa.core.errors import FormatError, UnsupportedError

from . import kernels as K
from .ir import Graph, Node


def reshape_target(shape: tuple[int, ...], x: np.ndarray, declared_batch: int | None) -> tuple[int, ...]:
    """Static Reshape target with axis 0 following the actual batch size of ``x``."""
    if int(np.prod(shape)) == x.size or declared_batch in (None, 0) or not shape or shape[0] != declared_batch:
        return shape
    return (x.shape[0] * shape[0] // declared_batch,) + tuple(shape[1:])


def _lrn(x: np.ndarray, a: dict) -> np.ndarray:
    size = a["size"]
    sq = np.square(x.astype(np.float64))
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    pad = np.pad(sq, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
    s = sum(pad[:, k : k + x.shape[1]] for k in range(size))
    return (x / (a["bias"] + a["alpha"] / size * s) ** a["beta"]).astype(np.float32)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, in float64 (``math.erf``: correctly rounded double)."""
    return _ERF(np.asarray(x, np.float64)).astype(np.float64)


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """GELU in float64: ``0.5·x·(1 + erf(x/√2))``, or the ``tanh`` approximation
    ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``."""
    v = np.asarray(x, np.float64)
    if approximate == "tanh":
        return 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))
    return 0.5 * v * (1.0 + erf(v / math.sqrt(2.0)))


def layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axis: int, eps: float) -> np.ndarray:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over axes ``axis..`` (float64)."""
    v = np.asarray(x, np.float64)
    axes = tuple(range(axis, v.ndim))
    d = v - v.mean(axis=axes, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=axes, keepdims=True) + eps) * gamma + beta


def masked_softmax(x: np.ndarray, mask: np.ndarray, axis: int) -> np.ndarray:
    """``softmax(x + mask)`` with the Add in float32 as the unfused ONNX graph computes it."""
    s = np.asarray(x, np.float32) + np.asarray(mask, np.float32)
    return _softmax(s.astype(np.float64), axis)


def batch_concat(args: list[np.ndarray], axis: int) -> np.ndarray:
    """``Concat`` where a constant operand with batch 1 is repeated over the actual batch."""
    n = max(a.shape[0] for a in args) if axis != 0 else 1
    return np.concatenate([np.broadcast_to(a, (n,) + a.shape[1:]) if n > 1 and a.shape[0] == 1 else a
                           for a in args], axis=axis)


def pad_array(x: np.ndarray, pads: tuple[int, ...], value) -> np.ndarray:
    """ONNX constant Pad (``pads`` = begins then ends; negative values crop)."""
    r = x.ndim
    width = [(max(pads[k], 0), max(pads[r + k], 0)) for k in range(r)]
    y = np.pad(x, width, mode="constant", constant_values=value)
    sl = tuple(slice(-min(pads[k], 0), y.shape[k] + min(pads[r + k], 0)) for k in range(r))
    return y[sl]


def take_axes(x: np.ndarray, index: tuple) -> np.ndarray:
    """``Slice``/``Resize`` selection: per axis, the source positions (``None`` = whole axis)."""
    for ax, idx in enumerate(index):
        if idx is not None:
            x = np.take(x, np.asarray(idx, np.int64), axis=ax)
    return x


def resize_linear(x: np.ndarray, taps: tuple) -> np.ndarray:
    """Linear ``Resize`` of the two spatial axes of an NCHW tensor with the importer's per-axis taps
    ``(i0, i1, r)``: ``x[i0]·(1-r) + x[i1]·r`` along H, then along W, in float32 like onnxruntime."""
    (th, tw) = taps
    i0, i1, r = (np.array(v) for v in zip(*th))
    y = x[:, :, i0] * (1 - r)[:, None].astype(np.float32) + x[:, :, i1] * r[:, None].astype(np.float32)
    i0, i1, r = (np.array(v) for v in zip(*tw))
    return (y[..., i0] * (1 - r).astype(np.float32) + y[..., i1] * r.astype(np.float32)).astype(x.dtype)


def _f32(v: np.ndarray) -> np.ndarray:
    """float32 for float results; integer tensors keep their type."""
    v = np.asarray(v)
    return v.astype(np.float32) if v.dtype.kind == "f" else v


def trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (ONNX integer ``Div``), exact in int64."""
    a, b = np.asarray(x, np.int64), np.asarray(y, np.int64)
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0)))


def run_node(n: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """Float semantics of one IR node (``args`` are the input values)."""
    a = n.attrs
    x = args[0]
    op = n.op
    if op == "Resize" and a.get("mode") == "linear":
        return resize_linear(x, a["taps"])
    if op in ("Slice", "Resize"):
        return take_axes(x, a["index"])
    if op in ("ReduceMean", "ReduceMax", "ReduceSum"):
        f = {"ReduceMean": np.mean, "ReduceMax": np.max, "ReduceSum": np.sum}[op]
        kw = {"dtype": np.float64} if op != "ReduceMax" and x.dtype.kind == "f" else {}
        return _f32(f(x, axis=a["axes"], keepdims=a["keepdims"], **kw)).astype(x.dtype)
    if op == "HardSigmoid":
        return np.clip(a["alpha"] * x.astype(np.float64) + a["beta"], 0, 1).astype(np.float32)
    if op == "HardSwish":
        v = x.astype(np.float64)
        return (v * np.clip(v / 6 + 0.5, 0, 1)).astype(np.float32)
    if op in ("Max", "Min"):
        return _f32((np.maximum if op == "Max" else np.minimum)(x, args[1]))
    if op == "Div":
        if a.get("integer"):
            return trunc_div(x, args[1]).astype(np.result_type(x, args[1]))
        return (x.astype(np.float64) / args[1]).astype(np.float32)
    if op == "Gather":  # embedding: x = indices, args[1] = the constant table
        idx = np.asarray(x, np.int64)
        table = args[1]
        return np.take(table, np.where(idx < 0, idx + table.shape[a["axis"]], idx), axis=a["axis"])
    if op in _TRANSFORMER_OPS:
        return _run_transformer(op, a, args)
    if op == "Conv":
        return K.conv2d(x, args[1], args[2], a).astype(np.float32)
    if op == "Gemm":
        return (x @ args[1] + args[2]).astype(np.float32)
    if op == "MatMul":
        return np.matmul(x, args[1]).astype(np.float32)
    if op == "Add":
        return _f32(x + args[1])
    if op == "Sub":
        return _f32(x - args[1])
    if op == "Mul":
        return _f32(x * args[1])
    if op == "Relu":
        return np.maximum(x, 0).astype(np.float32)
    if op == "Clip":
        return np.clip(x, a["min"], a["max"]).astype(np.float32)
    if op == "LeakyRelu":
        return np.where(x >= 0, x, x * np.float32(a["alpha"])).astype(np.float32)
    if op == "Sigmoid":
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    if op == "Tanh":
        return np.tanh(x).astype(np.float32)
    if op == "MaxPool":
        return K.maxpool2d(x, a)
    if op == "AveragePool":
        return K.avgpool2d(x.astype(np.float64), a).astype(np.float32)
    if op == "GlobalAveragePool":
        return x.mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(np.float32)
    if op == "Flatten":
        ax = a["axis"]
        return x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1)
    if op == "Reshape":
        return x.reshape(reshape_target(a["shape"], x, g.tensors[n.inputs[0]].shape[0] if g.tensors[n.inputs[0]].shape else None))
    if op == "Transpose":
        return np.transpose(x, a["perm"])
    if op == "Squeeze":
        return np.squeeze(x, axis=a["axes"])
    if op == "Unsqueeze":
        return np.expand_dims(x, axis=a["axes"])
    if op == "Concat":
        return batch_concat(args, a["axis"])
    if op == "Pad":
        return pad_array(x, a["pads"], a["value"])
    if op == "Softmax":
        return _softmax(x.astype(np.float64), a["axis"]).astype(np.float32)
    if op == "LRN":
        return _lrn(x, a)
    if op == "Identity":
        return x
    raise UnsupportedError(f"float evaluator has no op {op}", where=f"node {n.name} ({op})", file=g.source)


_TRANSFORMER_OPS = ("LayerNorm", "Gelu", "Erf", "MaskedSoftmax", "Where", "Equal", "Less", "Greater", "Not",
                    "Expand", "Cast", "Sqrt", "Reciprocal", "Exp", "Log", "Pow")


def unary_function(op: str, x: np.ndarray, attrs: dict) -> np.ndarray:
    """Float64 value of the elementwise functions Sqrt, Reciprocal, Exp, Log, Pow, Gelu, Erf."""
    v = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        if op == "Sqrt":
            return np.sqrt(v)
        if op == "Reciprocal":
            return 1.0 / v
        if op == "Exp":
            return np.exp(v)
        if op == "Log":
            return np.log(v)
        if op == "Pow":
            return np.power(v, attrs["exponent"])
        if op == "Gelu":
            return gelu(v, attrs["approximate"])
        return erf(v)


def _run_transformer(op: str, a: dict, args: list[np.ndarray]) -> np.ndarray:
    x = args[0]
    if op == "LayerNorm":
        return layernorm(x, args[1], args[2], a["axis"], a["epsilon"]).astype(np.float32)
    if op == "Pow" and len(args) == 2:  # by a tensor (float only)
        return _f32(np.power(x, args[1]))
    if op in ("Gelu", "Erf", "Sqrt", "Reciprocal", "Exp", "Log", "Pow"):
        return unary_function(op, x, a).astype(np.float32)
    if op == "MaskedSoftmax":
        return masked_softmax(x, args[1], a["axis"]).astype(np.float32)
    if op == "Where":
        return _f32(np.where(np.asarray(x, bool), args[1], args[2]))
    if op in ("Equal", "Less", "Greater"):
        return {"Equal": np.equal, "Less": np.less, "Greater": np.greater}[op](x, args[1])
    if op == "Not":
        return np.logical_not(x)
    if op == "Expand":
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(a["shape"])))
    return np.asarray(x).astype(a["to"])  # Cast


def bind_inputs(names: list[str], inputs: Any) -> dict[str, np.ndarray]:
    """Accept ``{name: array}``, a single array or a list of arrays for the graph inputs."""
    if isinstance(inputs, dict):
        missing = [k for k in names if k not in inputs]
        if missing:
            raise FormatError(f"missing model input(s) {missing}; expected {names}")
        return {k: np.asarray(inputs[k]) for k in names}
    if isinstance(inputs, (list, tuple)):
        if len(inputs) != len(names):
            raise FormatError(f"expected {len(names)} inputs {names}, got {len(inputs)}")
        return {k: np.asarray(v) for k, v in zip(names, inputs)}
    if len(names) != 1:
        raise FormatError(f"the model has {len(names)} inputs {names}: pass a dict")
    return {names[0]: np.asarray(inputs)}


def evaluate_float(graph: Graph, inputs: Any, *, return_all: bool = False) -> dict[str, np.ndarray]:
    """Run the float reference model.

    Parameters
    ----------
    graph : Graph
        An imported graph.
    inputs : dict, array or list of arrays
        Values of the graph inputs; axis 0 (batch) may differ from the declared batch.
    return_all : bool
        Also return every intermediate tensor.

    Returns
    -------
    dict of str to numpy.ndarray
        Graph outputs (float32) by name, or all tensors with ``return_all``.
    """
    data: dict[str, np.ndarray] = {}
    bound = bind_inputs([t.name for t in graph.inputs], inputs)
    if graph.whole_batch:
        if model_shaped(graph.inputs, bound):  # the model's own shapes: one sample
            out = evaluate_float(graph, {k: np.asarray(v)[None] for k, v in bound.items()}, return_all=return_all)
            return {k: v[0] for k, v in out.items()}
    for k, v in bound.items():
        want = graph.tensors[k].shape
        if v.ndim != len(want) or tuple(v.shape[1:]) != tuple(want[1:]):
            raise FormatError(f"input {k!r} has shape {v.shape}, expected {want} (any batch size)")
        data[k] = v if np.dtype(graph.tensors[k].dtype).kind in "iub" and v.dtype.kind in "iub" else v.astype(np.float32)
    return by_batch(lambda d: _run_float(graph, d, return_all), data, graph.inputs, graph.nodes, graph.tensors)


def _run_float(graph: Graph, env: dict[str, np.ndarray], return_all: bool) -> dict[str, np.ndarray]:
    env = dict(env)
    for n in graph.nodes:
        args = [env[i] if i in env else graph.initializers[i] for i in n.inputs]
        env[n.outputs[0]] = run_node(n, args, graph)
    if return_all:
        return env
    return {t.name: env[t.name] for t in graph.outputs}


def mixes_batch(nodes, tensors) -> bool:
    """True when a node moves axis 0 (the batch) elsewhere: a Reshape that folds it into another
    axis, a Transpose/Squeeze/Flatten of axis 0, or a selection/concatenation/reduction along it."""
    for n in nodes:
        a = n.attrs
        x = tensors.get(n.inputs[0]) if n.inputs else None
        if (n.op == "Reshape" and x is not None and (not a["shape"] or not x.shape or a["shape"][0] != x.shape[0])
                or n.op == "Flatten" and a["axis"] == 0 or n.op == "Transpose" and a["perm"][0] != 0
                or n.op in ("Squeeze", "Unsqueeze") and 0 in a["axes"]
                or n.op in ("Slice", "Resize") and a.get("index") and a["index"][0] is not None
                or n.op in ("Concat", "Softmax", "MaskedSoftmax", "LayerNorm") and a["axis"] == 0
                or n.op.startswith("Reduce") and 0 in a["axes"]):
            return True
    return False


def model_shaped(inputs, data: dict[str, np.ndarray]) -> bool:
    """Arrays given in the model's own shapes to a graph with the whole batch as one sample
    (:mod:`.batch`; each array one axis short of its graph input): the evaluators add and drop that axis."""
    return bool(data) and all(t.name in data and np.ndim(data[t.name]) == len(t.shape) - 1 for t in inputs)


def by_batch(run, data: dict[str, np.ndarray], inputs, nodes, tensors) -> dict[str, np.ndarray]:
    """``run(data)``, or, when the batch differs from the declared one and the graph moves its batch
    axis (:func:`mixes_batch`), ``run`` on declared-size slices with the results concatenated."""
    declared = inputs[0].shape[0] if inputs and inputs[0].shape else 0
    n = len(next(iter(data.values()))) if data else 0
    if not declared or n == declared or not mixes_batch(nodes, tensors):
        return run(data)
    if n % declared:
        raise FormatError(f"this model moves its batch axis, so it runs {declared} sample(s) at a time: a batch "
                          f"of {n} is not a multiple of {declared}")
    parts = [run({k: v[i:i + declared] for k, v in data.items()}) for i in range(0, n, declared)]
    return {k: np.concatenate([np.atleast_1d(p[k]) for p in parts], axis=0) for k in parts[0]}


def random_inputs(graph: Graph, samples: int, seed: int) -> dict[str, np.ndarray]:
    """Random inputs of ``graph``: floats uniform in ``[-1, 1)``; an integer input that indexes an
    embedding table (``Gather``, possibly through a ``Cast``) uniform over the table's rows; any
    other integer or boolean input (an attention mask) all ones."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in graph.inputs:
        shape = (samples,) + tuple(t.shape[1:])
        if np.dtype(t.dtype).kind not in "biu":
            out[t.name] = rng.uniform(-1, 1, shape).astype(np.float32)
            continue
        names, rows = {t.name}, None
        for n in graph.nodes:
            if n.op == "Cast" and n.inputs[0] in names:
                names.add(n.outputs[0])
            elif n.op == "Gather" and n.inputs[0] in names and n.inputs[1] in graph.initializers:
                rows = graph.initializers[n.inputs[1]].shape[n.attrs["axis"]]
        out[t.name] = (rng.integers(0, rows, shape) if rows else np.ones(shape)).astype(t.dtype)
    return out
