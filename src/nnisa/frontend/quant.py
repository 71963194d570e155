"""Post-training quantization of the float IR into an integer graph (:class:`QGraph`).

Every tensor is symmetric with zero point 0: ``real = q * scale``.  The exact integer
semantics of each op are in ``docs/frontend.md`` and in :mod:`nnisa.frontend.qeval`, which
is the golden model for all nnisa compilers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnisa.core import fixedpoint as fx
from nnisa.core.errors import ConfigError, UnsupportedError

from . import kernels as K
from .calibration import METHODS as CALIBRATION_METHODS
from .calibration import calibrate
from .float_eval import unary_function
from .ir import Graph, Node
from . import quant_transformer as TX

SCALE_MODES = ("pow2", "multiplier")
# Ops that only move or select data: output scale = input scale, no arithmetic.
MOVE_OPS = ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "MaxPool", "Pad", "Slice", "Resize",
            "ReduceMax", "Expand")
#: elementwise functions computed by a lookup table over the input codes
LUT_OPS = ("Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "Erf", "Sqrt", "Reciprocal", "Exp",
           "Log", "Pow")
# Ops that may follow a Softmax (they pass float values through unchanged).
_FLOAT_PASS = ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Slice")
# Intermediate scale of Add/Sub in multiplier mode: s_c = s_out * 2**-ADD_FRAC_BITS.
ADD_FRAC_BITS = 16


qrange = fx.int_range  # inclusive range of a signed ``bits``-bit integer


def rshift_round(v: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``(v + 2**(s-1)) >> s`` for ``s > 0`` (round half up), ``v`` for 0, ``v << -s`` for ``s < 0``."""
    s = np.asarray(shift, dtype=np.int64)
    return np.left_shift(fx.shift_right_round(v, np.maximum(s, 0), "half_up"), np.maximum(-s, 0))


@dataclass
class Requant:
    """Integer rescaling ``y = rshift_round(x * multiplier, shift)``.

    Attributes
    ----------
    multiplier : numpy.ndarray
        int64, scalar (per-tensor) or ``(C,)`` (per-channel along ``axis``).  Always 1 in
        ``pow2`` mode.
    shift : numpy.ndarray
        int64, same shape; negative means an exact left shift.
    """

    multiplier: np.ndarray
    shift: np.ndarray

    @property
    def per_channel(self) -> bool:
        """True when multiplier/shift are per-channel vectors."""
        return np.ndim(self.multiplier) > 0

    @property
    def is_pow2(self) -> bool:
        """True when this is a pure shift (multiplier 1)."""
        return bool(np.all(self.multiplier == 1))

    def ratio(self) -> np.ndarray:
        """The real factor ``multiplier * 2**-shift`` (float64)."""
        return self.multiplier * np.exp2(-self.shift.astype(np.float64))

    def apply(self, x: np.ndarray, axis: int = 1) -> np.ndarray:
        """Rescale integer array ``x`` (per-channel vectors broadcast along ``axis``)."""
        m, s = self.multiplier, self.shift
        x = np.asarray(x, dtype=np.int64)
        if m.ndim and x.ndim:
            shape = [1] * x.ndim
            shape[axis] = -1
            m, s = m.reshape(shape), s.reshape(shape)
        return rshift_round(x * m, s)


def make_requant(ratio, scale_mode: str, multiplier_bits: int = 15) -> Requant:
    """Integer approximation of a positive real ``ratio`` (scalar or array).

    ``pow2``: ratio must be a power of two; multiplier 1, shift ``-log2(ratio)``.
    ``multiplier``: ``multiplier in [2**(b-1), 2**b]`` with ``b = multiplier_bits`` and
    ``shift >= 0`` (a ratio too large for that folds the left shift into the multiplier).
    """
    r = np.asarray(ratio, dtype=np.float64)
    if scale_mode == "pow2":
        e = np.round(np.log2(r)).astype(np.int64)
        return Requant(np.ones_like(e), -e)
    mant, ex = np.frexp(r)  # r = mant * 2**ex, mant in [0.5, 1)
    m = np.round(mant * (1 << multiplier_bits)).astype(np.int64)
    sh = (multiplier_bits - ex).astype(np.int64)
    m = np.where(sh < 0, m << np.maximum(-sh, 0), m)
    sh = np.maximum(sh, 0)
    return Requant(m, sh)


@dataclass
class QTensor:
    """Quantization of one activation tensor: ``real = q * scale``.

    ``bits == 0`` marks a tensor that is not quantized: a float tensor (the output of a trailing
    Softmax) or, with ``raw``, an exact index/mask tensor (token ids, attention masks and what is
    computed only from them; scale 1).  ``exp`` is ``log2(scale)`` in pow2 mode, else ``None``.
    """

    name: str
    shape: tuple[int, ...]
    scale: float
    bits: int
    exp: int | None = None
    raw: bool = False

    @property
    def is_float(self) -> bool:
        """True for float tensors (the trailing Softmax and what follows it)."""
        return self.bits == 0 and not self.raw


@dataclass
class QNode:
    """One integer op; see ``docs/frontend.md`` for the semantics of every field per op."""

    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    in_scales: list[float] = field(default_factory=list)
    in_bits: list[int] = field(default_factory=list)
    out_scale: float = 1.0
    out_bits: int = 8
    weight: np.ndarray | None = None
    w_scale: np.ndarray | None = None
    w_bits: int | None = None
    bias: np.ndarray | None = None
    requant: Requant | None = None
    input_requants: list[Requant] | None = None
    clamp: tuple[int, int] = (-128, 127)
    act: str | None = None
    lut: np.ndarray | None = None
    const: np.ndarray | None = None
    const_scale: float | None = None

    def weight_matrix(self) -> np.ndarray:
        """Integer weights in matrix form ``(g, K, N/g)``.

        Conv: ``K = (C/g)*kh*kw`` rows in :meth:`patch_order` order, ``N = M`` output channels
        (group ``j`` produces channels ``j*M/g ...``); Gemm: ``(1, K, N)``.
        ``out[n, j, p, :] = im2col(x)[n, j, p, :] @ weight_matrix()[j]``.
        """
        if self.weight is None:
            raise ValueError(f"{self.op} node {self.name} has no weights")
        if self.op == "Conv":
            return K.conv_weight_matrix(self.weight, self.attrs["group"])
        return self.weight.reshape(1, *self.weight.shape[-2:])

    def patch_order(self) -> np.ndarray:
        """``(K, 3)`` rows ``(c, ky, kx)``: what row ``k`` of :meth:`weight_matrix` multiplies
        (``c`` is the channel within the group); Gemm: rows ``(k, 0, 0)``."""
        if self.op == "Conv":
            _, cg, kh, kw = self.weight.shape
            return K.patch_order(cg, kh, kw)
        k = self.weight.shape[-2]
        return np.stack([np.arange(k), np.zeros(k, np.int64), np.zeros(k, np.int64)], 1).astype(np.int64)


@dataclass
class QGraph:
    """A quantized model: integer nodes in topological order plus the quantization of every tensor."""

    name: str
    inputs: list[QTensor]
    outputs: list[QTensor]
    nodes: list[QNode]
    tensors: dict[str, QTensor]
    scale_mode: str
    bits: int
    w_bits: int
    per_channel: bool
    source: str | None = None
    #: the graph has the model's whole fixed batch as one sample (:attr:`Graph.whole_batch`)
    whole_batch: bool = False

    def quantize_input(self, name: str, x: np.ndarray) -> np.ndarray:
        """``clip(round_half_away(x / scale))`` of input ``name`` as int64."""
        t = self.tensors[name]
        if t.raw:
            return np.asarray(x)
        lo, hi = qrange(t.bits)
        return np.clip(K.round_half_away(np.asarray(x, np.float64) / t.scale), lo, hi)

    def dequantize(self, name: str, q: np.ndarray) -> np.ndarray:
        """Real value of tensor ``name`` (float tensors are returned unchanged), float32."""
        t = self.tensors[name]
        if t.raw:
            return np.asarray(q)
        return np.asarray(q, np.float32) if t.is_float else (np.asarray(q, np.float64) * t.scale).astype(np.float32)

    def op_counts(self) -> dict[str, int]:
        """Number of nodes per op."""
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0) + 1
        return out

    def __repr__(self) -> str:
        return f"QGraph({self.name!r}, {self.scale_mode}, int{self.bits}, {len(self.nodes)} nodes)"


# --------------------------------------------------------------------------- calibration


class _Q:
    """One quantization run (settings, scales chosen so far, the nodes built)."""

    def __init__(self, g: Graph, amax: dict, bits: int, w_bits: int, per_channel: bool, mode: str, mbits: int,
                 weight_mse: bool = False):
        self.weight_mse = weight_mse
        self.g, self.amax, self.bits, self.w_bits = g, amax, bits, w_bits
        self.per_channel, self.mode, self.mbits = per_channel, mode, mbits
        self.t: dict[str, QTensor] = {}
        self.nodes: list[QNode] = []
        self.raw: set[str] = set()  # index/mask tensors (never quantized)

    def err(self, n: Node, msg: str) -> UnsupportedError:
        return UnsupportedError(msg, where=f"node {n.name} ({n.op})", file=self.g.source)

    def scale_of(self, m, bits: int) -> np.ndarray:
        """Scale(s) for max-abs ``m`` (array ok): max-abs maps to the largest code."""
        qmax = (1 << (bits - 1)) - 1
        m = np.where(np.asarray(m, np.float64) > 0, m, 1.0)
        s = m / qmax
        if self.mode == "pow2":
            s = np.exp2(np.ceil(np.log2(s) - 1e-12))
        return s

    def act(self, name: str, shape) -> QTensor:
        s = float(self.scale_of(self.amax.get(name, 0.0), self.bits))
        e = int(round(math.log2(s))) if self.mode == "pow2" else None
        qt = QTensor(name, tuple(shape), s, self.bits, e)
        self.t[name] = qt
        return qt

    def same(self, name: str, src: QTensor, shape) -> QTensor:
        qt = QTensor(name, tuple(shape), src.scale, src.bits, src.exp)
        self.t[name] = qt
        return qt

    def qweight(self, w: np.ndarray, axis: int | None):
        """Symmetric weights in ``[-(2^(b-1)-1), 2^(b-1)-1]``, per-channel along ``axis``."""
        qmax = (1 << (self.w_bits - 1)) - 1
        if axis is None or not self.per_channel:
            s = self.scale_of(np.abs(w).max(initial=0.0), self.w_bits)
            sb = s
        else:
            red = tuple(k for k in range(w.ndim) if k != axis)
            s = self.scale_of(np.abs(w).max(axis=red, initial=0.0), self.w_bits)
            shp = [1] * w.ndim
            shp[axis] = -1
            sb = s.reshape(shp)
        q = np.clip(K.round_half_away(w / sb), -qmax, qmax)
        if self.weight_mse and self.mode == "pow2":
            # a power-of-two scale rounds max-abs up by up to 2x: half that scale (clipping the
            # largest weights) often has a smaller squared error; keep whichever is better
            red = tuple(k for k in range(w.ndim) if k != axis) if axis is not None and self.per_channel else None
            q2 = np.clip(K.round_half_away(w / (sb / 2)), -qmax, qmax)
            e1 = ((q * sb - w) ** 2).sum(axis=red)
            e2 = ((q2 * (sb / 2) - w) ** 2).sum(axis=red)
            better = e2 < e1
            if np.ndim(better):
                shp = [1] * w.ndim
                shp[axis] = -1
                q = np.where(better.reshape(shp), q2, q)
                s = np.where(better, s / 2, s)
            elif better:
                q, s = q2, s / 2
        return q, np.asarray(s, np.float64)

    def requant(self, ratio) -> Requant:
        return make_requant(ratio, self.mode, self.mbits)


def _fusable(g: Graph, n: Node) -> Node | None:
    """The Relu/Clip that can be fused into ``n`` (its only consumer), if any."""
    y = n.outputs[0]
    cons = g.consumers(y)
    if len(cons) == 1 and cons[0].op in ("Relu", "Clip") and not g.is_output(y):
        return cons[0]
    return None


def _clamp_for(q: _Q, act: Node | None, out: QTensor) -> tuple[int, int]:
    lo, hi = qrange(out.bits)
    if act is None:
        return lo, hi
    if act.op == "Relu":
        return 0, hi
    a, b = act.attrs["min"], act.attrs["max"]
    qlo = lo if a == -np.inf else int(np.clip(K.round_half_away(a / out.scale), lo, hi))
    qhi = hi if b == np.inf else int(np.clip(K.round_half_away(b / out.scale), lo, hi))
    return qlo, qhi


def quantize(
    graph: Graph,
    calib: Any,
    *,
    bits: int = 8,
    w_bits: int | None = None,
    per_channel: bool = True,
    scale_mode: str = "pow2",
    multiplier_bits: int = 15,
    calibration: str = "max",
    percentile: float = 99.99,
) -> QGraph:
    """Quantize a float graph to integers (post-training, max-abs calibration).

    Parameters
    ----------
    graph : Graph
        Float graph from :func:`~nnisa.frontend.load_model`.
    calib : dict, list of dict or array
        Sample inputs for activation calibration (batches allowed).
    bits : int
        Activation width (signed), 2..16.
    w_bits : int, optional
        Weight width (signed), default ``bits``.
    per_channel : bool
        Per-output-channel weight scales for Conv/Gemm.
    scale_mode : {"pow2", "multiplier"}
        ``pow2``: every scale is a power of two and every requant a pure shift;
        ``multiplier``: free scales, requant by an integer multiplier and a shift.
    multiplier_bits : int
        Width of the requant multiplier in ``multiplier`` mode.
    calibration : {"max", "percentile", "mse"}
        Activation range method (:mod:`nnisa.frontend.calibration`); ``mse`` also picks each
        weight channel's power-of-two scale by squared error.
    percentile : float
        Percentile for ``calibration="percentile"``.

    Returns
    -------
    QGraph
        The integer graph.

    Raises
    ------
    ConfigError
        Bad settings.
    UnsupportedError
        The graph has an op without integer semantics (e.g. LRN, Softmax mid-graph).
    """
    if scale_mode not in SCALE_MODES:
        raise ConfigError(f"unknown scale_mode {scale_mode!r}; choose from {SCALE_MODES}")
    w_bits = bits if w_bits is None else w_bits
    for what, b in (("bits", bits), ("w_bits", w_bits)):
        if not 2 <= b <= 16:
            raise ConfigError(f"{what}={b} out of range 2..16")
    if not 2 <= multiplier_bits <= 31:
        raise ConfigError(f"multiplier_bits={multiplier_bits} out of range 2..31")
    if calibration not in CALIBRATION_METHODS:
        raise ConfigError(f"unknown calibration {calibration!r}; choose from {CALIBRATION_METHODS}")
    amax = calibrate(graph, calib, method=calibration, percentile=percentile, bits=bits, scale_mode=scale_mode)
    q = _Q(graph, amax, bits, w_bits, per_channel, scale_mode, multiplier_bits, weight_mse=calibration == "mse")
    q.raw = TX.raw_tensors(graph)
    for t in graph.inputs:
        if t.name in q.raw:
            q.t[t.name] = QTensor(t.name, tuple(t.shape), 1.0, 0, None, raw=True)
        else:
            q.act(t.name, t.shape)
    fused: set[str] = set()
    for n in graph.nodes:
        if n.name in fused:
            continue
        act = _fusable(graph, n) if n.op in ("Conv", "Gemm", "MatMul", "Add", "Sub", "Mul") else None
        if act is not None:
            fused.add(act.name)
        _quantize_node(q, n, act)
    return QGraph(graph.name, [q.t[t.name] for t in graph.inputs], [q.t[t.name] for t in graph.outputs], q.nodes, q.t,
                  scale_mode, bits, w_bits, per_channel, graph.source, graph.whole_batch)


def _quantize_node(q: _Q, n: Node, act: Node | None) -> None:
    g = q.g
    out_name = act.outputs[0] if act is not None else n.outputs[0]
    shape = g.tensors[out_name].shape
    acts = [i for i in n.inputs if i not in g.initializers]
    ins = [q.t[i] for i in acts]
    if out_name in q.raw:  # exact index/mask arithmetic: float semantics, constants kept in attrs
        consts = {k: g.initializers[i] for k, i in enumerate(n.inputs) if i in g.initializers}
        q.t[out_name] = QTensor(out_name, tuple(shape), 1.0, 0, None, raw=True)
        q.nodes.append(QNode(n.op, n.name, acts, [out_name], dict(n.attrs, consts=consts), [1.0] * len(acts),
                             [0] * len(acts), 1.0, 0, clamp=(0, 0)))
        return
    raw_in = [i for i in acts if i in q.raw]
    if raw_in and not (n.op == "Gather" and acts == [n.inputs[0]] or n.op in ("MaskedSoftmax", "Where")):
        raise q.err(n, f"{n.op} of a tensor computed from integer inputs (ids/mask {raw_in[0]!r}) has no integer "
                       "semantics")
    if any(t.is_float for t in ins):
        if n.op not in _FLOAT_PASS:
            raise q.err(n, "only reshaping ops may follow a Softmax in a quantized graph")
        q.t[out_name] = QTensor(out_name, tuple(shape), 1.0, 0)
        q.nodes.append(QNode(n.op, n.name, acts, [out_name], dict(n.attrs), [1.0], [0], 1.0, 0, clamp=(0, 0)))
        return
    qn = QNode(n.op, n.name, acts, [out_name], dict(n.attrs), [t.scale for t in ins], [t.bits for t in ins])
    if act is not None:
        qn.act = "relu" if act.op == "Relu" else "clip"
    op = n.op
    if op in ("Conv", "Gemm") and n.inputs[1] not in g.initializers:
        raise q.err(n, f"{op} weights computed by the graph cannot be quantized (they must be constants)")
    if op in ("Conv", "Gemm") or (op == "MatMul" and len(acts) == 1):
        out = q.act(out_name, shape)
        w = g.initializers[n.inputs[1]].astype(np.float64)
        if op == "MatMul" and acts[0] != n.inputs[0]:
            raise q.err(n, "MatMul with a constant left operand is not supported")
        axis = 0 if op == "Conv" else (1 if op == "Gemm" else None)
        qn.weight, qn.w_scale = q.qweight(w, axis)
        qn.w_bits = q.w_bits
        acc_scale = ins[0].scale * qn.w_scale
        if op != "MatMul":
            b = g.initializers[n.inputs[2]].astype(np.float64)
            lim = (1 << 31) - 1
            qn.bias = np.clip(K.round_half_away(b / acc_scale), -lim - 1, lim)
        qn.requant = q.requant(acc_scale / out.scale)
    elif op in ("MatMul", "Mul"):
        out = q.act(out_name, shape)
        sa, sb = _operand_scales(q, n, qn, ins)
        qn.requant = q.requant(sa * sb / out.scale)
    elif op in ("Add", "Sub"):
        out = q.act(out_name, shape)
        sa, sb = _operand_scales(q, n, qn, ins)
        if q.mode == "pow2":
            common = min(sa, sb, out.scale)
        else:
            common = out.scale * 2.0**-ADD_FRAC_BITS
        qn.input_requants = [q.requant(sa / common), q.requant(sb / common)]
        qn.requant = q.requant(common / out.scale)
    elif op in ("Relu", "Clip"):
        out = q.same(out_name, ins[0], shape)
        act = n
        qn.act = op.lower()
    elif op in MOVE_OPS:
        out = q.same(out_name, ins[0], shape)
        if op == "Pad":
            lo, hi = qrange(out.bits)
            v = n.attrs["value"]
            qn.attrs["qvalue"] = lo if v == -np.inf else int(np.clip(K.round_half_away(v / out.scale), lo, hi))
    elif op in ("AveragePool", "GlobalAveragePool", "ReduceMean"):
        out = q.same(out_name, ins[0], shape)
    elif op == "ReduceSum":
        out = q.act(out_name, shape)
        qn.requant = q.requant(ins[0].scale / out.scale)
    elif op in ("Max", "Min"):
        if len(acts) != 2:
            raise q.err(n, f"{op} with a constant operand is not supported in a quantized graph")
        out = q.act(out_name, shape)
        qn.input_requants = [q.requant(t.scale / out.scale) for t in ins]
    elif op == "Concat":
        out = q.act(out_name, shape)
        qn.input_requants = [q.requant(t.scale / out.scale) for t in ins]
        consts = [k for k, i in enumerate(n.inputs) if i in g.initializers]
        if len(consts) > 1:
            raise q.err(n, "Concat with more than one constant input is not supported in a quantized graph")
        if consts:  # e.g. a class token: quantized at the output scale
            lo, hi = qrange(out.bits)
            c = g.initializers[n.inputs[consts[0]]].astype(np.float64)
            qn.const, qn.const_scale = np.clip(K.round_half_away(c / out.scale), lo, hi), out.scale
            qn.attrs["const_index"] = consts[0]
    elif op in LUT_OPS:
        if op == "Pow" and "exponent" not in n.attrs:
            raise q.err(n, "Pow by a tensor has no integer semantics (only by a constant scalar: a lookup table)")
        out = q.act(out_name, shape)
        qn.lut = _make_lut(op, n.attrs, ins[0], out)
    elif op == "Softmax" and _leads_to_output(g, n.outputs[0]):  # a trailing Softmax stays float (host tail)
        q.t[out_name] = out = QTensor(out_name, tuple(shape), 1.0, 0)
        qn.out_scale, qn.out_bits, qn.clamp = 1.0, 0, (0, 0)
        q.nodes.append(qn)
        return
    elif op in ("Softmax", "MaskedSoftmax"):  # integer softmax: probabilities at the fixed scale 2^-(bits-1)
        s = 2.0 ** -(ins[0].bits - 1)
        out = q.t[out_name] = QTensor(out_name, tuple(shape), s, ins[0].bits, -(ins[0].bits - 1) if q.mode == "pow2"
                                      else None)
        TX.quantize_softmax(q, n, qn, ins[0], q.raw)
        qn.out_scale, qn.out_bits, qn.clamp = out.scale, out.bits, (0, (1 << (out.bits - 1)) - 1)
        q.nodes.append(qn)
        return
    elif op == "LayerNorm":
        out = q.act(out_name, shape)
        qn.requant = q.requant(TX.quantize_layernorm(q, n, qn, ins[0]) / out.scale)
    elif op == "Gather":
        table = g.initializers[n.inputs[1]].astype(np.float64)
        s = float(q.scale_of(np.abs(table).max(initial=0.0), q.bits))
        out = q.t[out_name] = QTensor(out_name, tuple(shape), s, q.bits, int(round(math.log2(s))) if q.mode == "pow2"
                                      else None)
        qmax = (1 << (q.bits - 1)) - 1
        qn.weight, qn.w_scale, qn.w_bits = np.clip(K.round_half_away(table / s), -qmax, qmax), np.float64(s), q.bits
    elif op == "Where":
        out = q.act(out_name, shape)
        TX.quantize_where(q, n, qn, out, q.raw)
    else:
        raise q.err(n, f"{op} has no integer semantics in nnisa (float evaluation only)")
    qn.out_scale, qn.out_bits = out.scale, out.bits
    qn.clamp = _clamp_for(q, act, out)
    q.nodes.append(qn)


def _operand_scales(q: _Q, n: Node, qn: QNode, ins: list[QTensor]) -> tuple[float, float]:
    """Scales of the two operands of a binary op; an initializer operand goes to ``const``."""
    g = q.g
    consts = [k for k, i in enumerate(n.inputs) if i in g.initializers]
    if not consts:
        return ins[0].scale, ins[1].scale
    if len(consts) == 2:
        raise q.err(n, "both operands are constants")
    k = consts[0]
    cq, cs = q.qweight(g.initializers[n.inputs[k]].astype(np.float64), None)
    qn.const, qn.const_scale = cq, float(cs)
    qn.attrs["const_index"] = k
    return (float(cs), ins[0].scale) if k == 0 else (ins[0].scale, float(cs))


def _make_lut(op: str, attrs: dict, x: QTensor, out: QTensor) -> np.ndarray:
    """Table ``lut[i] = sat(round_half_away(f((qmin+i)*s_x) / s_out))`` over the input domain."""
    lo, hi = qrange(x.bits)
    v = np.arange(lo, hi + 1, dtype=np.float64) * x.scale
    if op == "Sigmoid":
        f = 1.0 / (1.0 + np.exp(-v))
    elif op == "Tanh":
        f = np.tanh(v)
    elif op == "HardSigmoid":
        f = np.clip(attrs["alpha"] * v + attrs["beta"], 0, 1)
    elif op == "HardSwish":
        f = v * np.clip(v / 6 + 0.5, 0, 1)
    elif op in ("Gelu", "Erf", "Sqrt", "Reciprocal", "Exp", "Log", "Pow"):  # NaN (sqrt of a negative code) → 0
        f = np.nan_to_num(unary_function(op, v, attrs), nan=0.0, posinf=np.inf, neginf=-np.inf)
    else:
        f = np.where(v >= 0, v, v * attrs["alpha"])
    olo, ohi = qrange(out.bits)
    return np.clip(K.round_half_away(np.clip(f / out.scale, olo - 1, ohi + 1)), olo, ohi)  # ±inf saturate


def _leads_to_output(g: Graph, name: str) -> bool:
    """True when every path from ``name`` only passes reshaping ops up to graph outputs."""
    cons = g.consumers(name)
    if not cons:
        return g.is_output(name)
    return all(c.op in _FLOAT_PASS and _leads_to_output(g, c.outputs[0]) for c in cons)
