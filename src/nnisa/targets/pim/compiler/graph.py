"""Lowering of a quantized graph (:class:`~nnisa.frontend.quant.QGraph`) to compiler layers.

Activations live in global memory in **HWC int8 layout** (a 4-D tensor ``(1, C, H, W)`` is stored
as ``H × W × C`` bytes).  Layout-only ops (Flatten, Reshape, Squeeze, Unsqueeze, Transpose,
Identity) produce no code: the result aliases the producer's buffer and carries a permutation
``perm`` (storage position → C-order flat index of the logical tensor).  A Gemm consuming a
permuted tensor gets its weight rows permuted instead (free at compile time).

Every Conv/Gemm becomes a :class:`MatLayer` whose weight matrix rows are in the order of an
HWC im2col patch, ``(ky, kx, c)``; grouped convolutions are expanded to a block-diagonal
matrix (correct, but uses ``g`` times the crossbars of a dense layout).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from ....frontend.quant import QGraph, QNode

LAYOUT_OPS = ("Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Identity")


@dataclass
class Buffer:
    """A tensor stored in global memory (one per computed tensor; aliases share it)."""

    name: str
    hwc: tuple[int, int, int]
    bits: int
    addr: int = -1

    @property
    def size(self) -> int:
        h, w, c = self.hwc
        return h * w * c * ((self.bits + 7) // 8)


@dataclass
class TensorRef:
    """A logical tensor: its buffer and the storage → logical permutation (None = identity)."""

    name: str
    shape: tuple[int, ...]
    buf: Buffer
    perm: np.ndarray | None
    exp: int | None
    scale: float
    bits: int

    @property
    def is_hwc(self) -> bool:
        """True when the storage is the standard HWC layout of a 4-D logical shape."""
        if len(self.shape) != 4:
            return False
        return _same(self.perm, hwc_perm(self.shape))


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        if a is None and b is None:
            return True
        other = b if a is None else a
        return bool(np.array_equal(other, np.arange(other.size)))
    return bool(np.array_equal(a, b))


def hwc_perm(shape: tuple[int, ...]) -> np.ndarray | None:
    """Storage position → C-order flat index for an NCHW tensor stored HWC (None if trivial).
    Read-only and shared per shape (asked for again by every ``is_hwc``)."""
    _, c, h, w = shape
    if h * w == 1 or c == 1:
        return None
    return _hwc_perm(int(c), int(h), int(w))


@functools.lru_cache(maxsize=256)
def _hwc_perm(c: int, h: int, w: int) -> np.ndarray:
    perm = np.arange(c * h * w).reshape(c, h, w).transpose(1, 2, 0).ravel()
    perm.flags.writeable = False
    return perm


@dataclass
class Layer:
    """Base of the compiler's layers (one quantized node that produces code)."""

    node: QNode
    inputs: list[TensorRef]
    out: TensorRef

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def op(self) -> str:
        return self.node.op


@dataclass
class MatLayer(Layer):
    """Conv or Gemm: ``out = sat(rshift_round(patch @ W + bias, shift))`` per output window."""

    matrix: np.ndarray = None          # (K, N) int8 (conv weights that fit) or int64, rows in (ky, kx, c) order
    bias: np.ndarray = None            # (N,) int64
    shift: np.ndarray = None           # (N,) int64 (negative = left shift)
    clamp: tuple[int, int] = (-128, 127)
    w_bits: int = 8
    in_hwc: tuple[int, int, int] = (1, 1, 1)
    out_hw: tuple[int, int] = (1, 1)
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    acc_bits: int = 24
    # filled by partition / replication / mapping
    plan: Any = None
    # epilogues folded into this layer by ``fusion.py`` (``out`` is then the fused result)
    fused_add: Any = None
    fused_pool: Any = None
    fused_gap: Any = None
    conv_bits: int = 0                 # bits of the conv's own (requantized) output; 0 = out.bits

    @property
    def max_replicas(self) -> int:
        """Most useful replicas: one per output window (per pool-output pixel when a pool is fused)."""
        if self.fused_pool is not None:
            return self.fused_pool.out_hw[0] * self.fused_pool.out_hw[1]
        return self.windows

    @property
    def fused(self) -> list[str]:
        """Names of the folded epilogues (``add``, ``pool``, ``gap``)."""
        return [k for k in ("add", "pool", "gap") if getattr(self, f"fused_{k}") is not None]

    @property
    def K(self) -> int:
        return self.matrix.shape[0]

    @property
    def N(self) -> int:
        return self.matrix.shape[1]

    @property
    def windows(self) -> int:
        return self.out_hw[0] * self.out_hw[1]


@dataclass
class PoolLayer(Layer):
    """MaxPool / AveragePool on an HWC tensor."""

    kind: str = "max"
    in_hwc: tuple[int, int, int] = (1, 1, 1)
    out_hw: tuple[int, int] = (1, 1)
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    count_include_pad: bool = False
    counts: np.ndarray | None = None   # (OH, OW) AveragePool divisors


@dataclass
class GapLayer(Layer):
    """GlobalAveragePool: one ``vavg`` per channel."""

    in_hwc: tuple[int, int, int] = (1, 1, 1)


@dataclass
class EltLayer(Layer):
    """Add/Sub: ``sat(rshift_round(IR0(a) ± IR1(b), s))`` element-wise on the storage order."""

    sub: bool = False
    in_shifts: tuple[int, int] = (0, 0)   # left shifts of the inputs (>= 0)
    shift: int = 0                         # requant shift (negative = left)
    clamp: tuple[int, int] = (-128, 127)
    acc_bits: int = 24


@dataclass
class ClampLayer(Layer):
    """Standalone Relu/Clip: ``clip(x, lo, hi)``."""

    clamp: tuple[int, int] = (-128, 127)


@dataclass
class Lowered:
    """The lowered graph: layers in topological order plus the tensors and buffers."""

    qgraph: QGraph
    layers: list[Layer]
    tensors: dict[str, TensorRef]
    buffers: list[Buffer]
    inputs: list[TensorRef]
    outputs: list[TensorRef]


def _where(n: QNode) -> str:
    return f"node {n.name} ({n.op})"


def acc_width(bound: int) -> int:
    """Accumulator bit-width (16, 24 or 31) that holds every value in [-bound, bound]."""
    need = int(bound).bit_length() + 1
    for w in (16, 24, 31):
        if need <= w:
            return w
    raise OverflowError(need)


def _shift_vec(n: QNode, count: int) -> np.ndarray:
    r = n.requant
    if not r.is_pow2:
        raise UnsupportedError("the PIM compiler needs power-of-two scales (quantize with scale_mode='pow2')",
                               where=_where(n))
    s = np.asarray(r.shift, np.int64)
    return np.broadcast_to(s, (count,)).copy() if s.ndim == 0 else s.copy()


def _hwc_of(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) == 4:
        return (shape[2], shape[3], shape[1])
    return (1, 1, int(np.prod(shape[1:], dtype=np.int64)))


def _matrix_hwc(n: QNode) -> np.ndarray:
    """Conv weights (M, C/g, kh, kw) → dense (kh*kw*C, M) matrix in (ky, kx, c) row order."""
    w = np.asarray(n.weight, np.int64)
    m, cg, kh, kw = w.shape
    g = n.attrs.get("group", 1)
    if g == 1:
        # one transposing copy, made on int8 when the weights fit (the strided copy moves 8×
        # fewer bytes: ResNet-18 has 11 M weights) and kept int8: the matrix is only sliced into
        # the crossbars' int8/int32 images
        if w.size and -128 <= int(w.min()) and int(w.max()) <= 127:
            w = w.astype(np.int8)
        return np.ascontiguousarray(w.transpose(2, 3, 1, 0)).reshape(kh * kw * cg, m)
    mg = m // g
    full = np.zeros((kh, kw, cg * g, m), np.int64)
    for j in range(g):
        full[:, :, j * cg:(j + 1) * cg, j * mg:(j + 1) * mg] = w[j * mg:(j + 1) * mg].transpose(2, 3, 1, 0)
    return full.reshape(kh * kw * cg * g, m)


@dataclass
class LowerContext:
    """What a lowering function (:data:`.lowerings.LOWERINGS`) works on: the graph, the tensors
    so far, the layer list and ``new_tensor(name)`` (a fresh buffer for a computed tensor)."""

    qg: QGraph
    tensors: dict[str, TensorRef]
    layers: list[Layer]
    new_tensor: Any


def lower_alias(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    """A layout-only op: the result aliases its input's buffer with a permutation (no code)."""
    cx.tensors[n.outputs[0]] = _alias(n, ins[0], cx.qg)


def lower_mat(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    cx.layers.append(_mat_layer(n, ins[0], cx.new_tensor(n.outputs[0]), cx.qg))


def lower_pool(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    cx.layers.append(_pool_layer(n, ins[0], cx.new_tensor(n.outputs[0]), cx.qg.source))


def lower_gap(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    x = _need_hwc(n, ins[0], cx.qg.source)
    cx.layers.append(GapLayer(n, [x], cx.new_tensor(n.outputs[0]), in_hwc=x.buf.hwc))


def lower_elt(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    cx.layers.append(_elt_layer(n, ins, cx.new_tensor(n.outputs[0])))


def lower_clamp(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    out = cx.new_tensor(n.outputs[0])
    out.perm = ins[0].perm
    out.buf.hwc = ins[0].buf.hwc
    cx.layers.append(ClampLayer(n, [ins[0]], out, clamp=tuple(int(v) for v in n.clamp)))


def lower_graph(qg: QGraph, lowerings: dict, prepare=None) -> Lowered:
    """Build the layer list of ``qg`` (raises :class:`UnsupportedError` for what cannot be compiled).

    Every node goes through its entry of ``lowerings`` (:data:`.lowerings.LOWERINGS`), after
    ``prepare(node, inputs, new_tensor, layers)`` (:func:`.lowerings.prepare_inputs`) has laid
    its inputs out for it.
    """
    if qg.scale_mode != "pow2":
        raise UnsupportedError("the PIM compiler needs power-of-two scales (quantize with scale_mode='pow2')",
                               file=qg.source)
    tensors: dict[str, TensorRef] = {}
    buffers: list[Buffer] = []

    def new_tensor(name: str, qt=None) -> TensorRef:
        qt = qt or qg.tensors[name]
        if qt.is_float:
            raise UnsupportedError(f"float tensor {name} (after Softmax) cannot be computed on the PIM target")
        if qt.bits > 8:
            raise UnsupportedError(f"tensor {name} has {qt.bits}-bit elements; the PIM compiler supports <= 8")
        shape = tuple(int(d) for d in qt.shape)
        if shape[0] != 1:
            raise UnsupportedError(f"tensor {name} has batch {shape[0]}; the PIM compiler supports batch 1")
        buf = Buffer(name, _hwc_of(shape), qt.bits)
        buffers.append(buf)
        perm = hwc_perm(shape) if len(shape) == 4 else None
        t = TensorRef(name, shape, buf, perm, qt.exp, qt.scale, qt.bits)
        tensors[name] = t
        return t

    inputs = []
    for qt in qg.inputs:
        if len(qt.shape) not in (2, 4):
            raise UnsupportedError(f"graph input {qt.name} has rank {len(qt.shape)}; expected 2 or 4")
        inputs.append(new_tensor(qt.name))

    layers: list[Layer] = []
    cx = LowerContext(qg, tensors, layers, new_tensor)
    for n in qg.nodes:
        where = _where(n)
        if n.out_bits == 0:
            raise UnsupportedError(f"unsupported op {n.op} (float output) on the PIM target", where=where,
                                   file=qg.source)
        try:
            ins = [tensors[i] for i in n.inputs]
        except KeyError as exc:
            raise UnsupportedError(f"input {exc.args[0]} is not an activation tensor", where=where) from None
        if prepare is not None:
            prepare(n, ins, new_tensor, layers)
        fn = lowerings.get(n.op)
        if fn is None or not callable(fn):
            raise UnsupportedError(f"unsupported op {n.op} on the PIM target", where=where, file=qg.source)
        fn(cx, n, ins)
    outputs = [tensors[t.name] for t in qg.outputs]
    return Lowered(qg, layers, tensors, buffers, inputs, outputs)


def _alias(n: QNode, x: TensorRef, qg: QGraph) -> TensorRef:
    shape_out = tuple(int(d) for d in qg.tensors[n.outputs[0]].shape)
    size = int(np.prod(x.shape))
    if n.op == "Transpose":
        f = np.arange(size).reshape(x.shape).transpose(n.attrs["perm"]).ravel()  # y index -> x index
        inv = np.empty(size, np.int64)
        inv[f] = np.arange(size)
        base = np.arange(size) if x.perm is None else x.perm
        perm = inv[base]
    else:
        perm = x.perm
    if perm is not None and np.array_equal(perm, np.arange(size)):
        perm = None
    qt = qg.tensors[n.outputs[0]]
    return TensorRef(n.outputs[0], shape_out, x.buf, perm, qt.exp, qt.scale, qt.bits)


def _need_hwc(n: QNode, x: TensorRef, file: str | None) -> TensorRef:
    if not x.is_hwc:
        raise UnsupportedError(f"input {x.name} was reshaped or transposed by an earlier layout op; PIM runs "
                               f"{n.op} only on 4-D tensors in their own NCHW layout", where=_where(n), file=file)
    return x


def _mat_layer(n: QNode, x: TensorRef, out: TensorRef, qg: QGraph) -> MatLayer:
    a = n.attrs
    if n.op == "Conv":
        x = _need_hwc(n, x, qg.source)
        mat = _matrix_hwc(n)
        _, _, oh, ow = out.shape
        kwargs = dict(in_hwc=x.buf.hwc, out_hw=(oh, ow), kernel=tuple(a["kernel"]), strides=tuple(a["strides"]),
                      pads=tuple(a["pads"]), dilations=tuple(a["dilations"]))
    else:
        if len(x.shape) != 2:
            raise UnsupportedError(f"Gemm input of rank {len(x.shape)} (expected 2)", where=_where(n))
        mat = np.asarray(n.weight, np.int64)
        if x.perm is not None:
            mat = mat[x.perm]
        kwargs = dict(in_hwc=(1, 1, mat.shape[0]), out_hw=(1, 1))
    nout = mat.shape[1]
    shift = _shift_vec(n, nout)
    bias = np.broadcast_to(np.asarray(n.bias if n.bias is not None else 0, np.int64), (nout,)).copy()
    xmax = 1 << (x.bits - 1)
    half = np.where(shift > 0, np.left_shift(1, np.maximum(shift - 1, 0)), 0)
    # Σ|w| per output column from the original weights (``mat`` may be int8: no abs overflow; a
    # grouped conv's dense matrix only adds zeros to each column)
    w = np.asarray(n.weight, np.int64)
    col_abs = np.abs(w).reshape(w.shape[0], -1).sum(axis=1) if n.op == "Conv" else np.abs(w).sum(axis=0)
    bound = int((col_abs * xmax + np.abs(bias) + half).max(initial=0))
    try:
        acc = acc_width(bound)
    except OverflowError:
        raise UnsupportedError("accumulator exceeds 31 bits", where=_where(n)) from None
    return MatLayer(n, [x], out, matrix=mat, bias=bias, shift=shift, clamp=tuple(int(v) for v in n.clamp),
                    w_bits=int(n.w_bits or qg.w_bits), acc_bits=acc, **kwargs)


def _pool_layer(n: QNode, x: TensorRef, out: TensorRef, file: str | None = None) -> PoolLayer:
    from ....frontend.kernels import pool_counts
    x = _need_hwc(n, x, file)
    a = n.attrs
    h, w, _ = x.buf.hwc
    _, _, oh, ow = out.shape
    kind = "max" if n.op == "MaxPool" else "avg"
    counts = pool_counts(a, h, w) if kind == "avg" else None
    return PoolLayer(n, [x], out, kind=kind, in_hwc=x.buf.hwc, out_hw=(oh, ow), kernel=tuple(a["kernel"]),
                     strides=tuple(a["strides"]), pads=tuple(a["pads"]), dilations=tuple(a.get("dilations", (1, 1))),
                     count_include_pad=bool(a.get("count_include_pad", False)), counts=counts)


def _elt_layer(n: QNode, ins: list[TensorRef], out: TensorRef) -> EltLayer:
    if n.const is not None or len(ins) != 2:
        raise UnsupportedError(f"{n.op} with a constant operand is not supported on the PIM target", where=_where(n))
    a, b = ins
    if a.shape != b.shape or a.buf.hwc != b.buf.hwc or not _same(a.perm, b.perm):
        raise UnsupportedError(f"{n.op} operands must have the same shape and storage layout (no broadcasting)",
                               where=_where(n))
    out.perm = a.perm
    out.buf.hwc = a.buf.hwc
    irs = []
    for r in n.input_requants:
        s = int(np.asarray(r.shift))
        if not r.is_pow2 or s > 0 or np.ndim(r.shift):
            raise UnsupportedError(f"{n.op} input rescale must be a per-tensor left shift", where=_where(n))
        irs.append(-s)
    r = n.requant
    if not r.is_pow2 or np.ndim(r.shift):
        raise UnsupportedError(f"{n.op} requant must be a per-tensor shift", where=_where(n))
    s = int(np.asarray(r.shift))
    bound = (1 << (a.bits - 1)) * (1 << irs[0]) + (1 << (b.bits - 1)) * (1 << irs[1]) + (1 << max(s - 1, 0))
    return EltLayer(n, [a, b], out, sub=n.op == "Sub", in_shifts=(irs[0], irs[1]), shift=s,
                    clamp=tuple(int(v) for v in n.clamp), acc_bits=acc_width(bound))
