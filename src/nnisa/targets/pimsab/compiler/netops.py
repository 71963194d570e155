"""More ONNX layers on PIMSAB (issue 26/27): grouped, depthwise and dilated convolutions, MatMul by
constant weights (a transformer's projections), MatMul of two activations (attention's Q·Kᵀ and
P·V, as the tensor-DSL GEMMs of the paper's BERT), Mul, and Add/Sub with a constant operand.

Each is one accumulation program (the GEMM shape ``acc[b, i, j] = Σ_k A·B`` of the DSL, i32
accumulation, adaptive precision) followed by the requantization program of :mod:`.network`
(``y = clamp((acc + 2^(s−1)) >> s)``), or one elementwise program; values equal the frontend's
integer reference (:func:`nnisa.frontend.qeval.run_qnode`) bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....frontend.quant import QNode
from . import dsl as T
from . import lang

#: the :class:`.network.Lowering` and :class:`.network.Layer` a lowering fills (not imported: network imports us)
Lowering = Layer = Any


def _t(bits: int) -> lang.DType:
    return lang.i(bits)


def _shift_round(e: Any, s: int) -> Any:
    """The frontend's ``rshift_round`` of a DSL expression by a constant (half up; left when s < 0)."""
    return (e + (1 << (s - 1))) >> s if s > 0 else (e << -s if s < 0 else e)


def _bits_of(v: np.ndarray) -> int:
    """Signed width that holds every value of ``v``."""
    v = np.asarray(v, np.int64)
    hi = int(max(v.max(initial=0), -v.min(initial=0) - 1))
    return max(hi.bit_length() + 1, 2)


def pad_chw(x: np.ndarray, pads, value: int) -> np.ndarray:
    """A (C, H, W) image padded by ONNX ``pads`` (top, left, bottom, right) with ``value``."""
    t, l, b, r = pads[0], pads[1], pads[2], pads[3]
    return np.pad(x, ((0, 0), (t, b), (l, r)), constant_values=value)


def conv_grouped(lw: Lowering, n: QNode, layer: Layer) -> None:
    """Grouped, depthwise or dilated convolution: ``acc[g, m, e, f] = Σ_{c,r,s} x[g·Cg + c,
    e·sh + r·dh, f·sw + s·dw]·w[g, c, r, s, m]``; the output columns (or the group's output channels,
    whichever is longer) on the bitlines, the group a data-parallel loop the search spreads over
    tiles and CRAMs."""
    _, C, H, W = lw.shape(n.inputs[0])
    w = np.asarray(n.weight, np.int64)  # (M, Cg, kh, kw)
    M, Cg, kh, kw = w.shape
    G = int(n.attrs.get("group", 1))
    Mg = M // G
    sh, sw = n.attrs["strides"]
    dh, dw = n.attrs.get("dilations", (1, 1))
    pads = n.attrs["pads"]
    Hp, Wp = H + pads[0] + pads[2], W + pads[1] + pads[3]
    E, F = (Hp - dh * (kh - 1) - 1) // sh + 1, (Wp - dw * (kw - 1) - 1) // sw + 1
    cols = lw.cfg.cram_cols
    if F > cols and Mg > cols:
        layer.host_reason = f"grouped convolution with {F} output columns and {Mg} channels per group " \
                            f"(> {cols} bitlines): host fallback"
        return
    xt = T.tensor((C, Hp, Wp), _t(n.in_bits[0]), n.name + "_x")
    wt = T.tensor((G, Cg, kh, kw, Mg), _t(n.w_bits), n.name + "_w", const=True)
    g, m, e, f = T.loop(G, "g"), T.loop(Mg, "m"), T.loop(E, "e"), T.loop(F, "f")
    c, r, s_ = T.red_loop(Cg, "c"), T.red_loop(kh, "r"), T.red_loop(kw, "s")
    body = T.i32(xt[g * Cg + c, e * sh + r * dh, f * sw + s_ * dw]) * T.i32(wt[g, c, r, s_, m])
    pix_lines = F >= Mg or Mg > cols
    axes = (g, m, e, f) if pix_lines else (g, e, f, m)
    sch = T.schedule(T.compute(n.name + "_acc", axes, T.sum(body, c, r, s_)))
    sch.bitlines(f if pix_lines else m)
    prog = T.build(sch, lw.cfg)
    w_dev = w.reshape(G, Mg, Cg, kh, kw).transpose(0, 2, 3, 4, 1)
    x_name = n.inputs[0]
    lw.add_program(layer, prog, lambda env: {xt.name: pad_chw(env[x_name][0], pads, 0), wt.name: w_dev}, "conv")
    acc = n.name + "_acc"

    Mr = M if M <= cols else -(-M // cols) * cols  # the requantization's channels: whole CRAMs above one

    def view(env):  # → (E·F, Mr)
        a = env[acc]
        a = a.reshape(G, Mg, E, F).transpose(2, 3, 0, 1) if pix_lines else a.reshape(G, E, F, Mg).transpose(1, 2, 0, 3)
        return np.pad(a.reshape(E * F, M), ((0, 0), (0, Mr - M)))
    lw._requant(n, layer, E * F, Mr, prog,
                lambda out: out.reshape(E * F, Mr)[:, :M].reshape(E, F, M).transpose(2, 0, 1)[None], view)


def _lane_split(extent: int, cols: int) -> tuple[int, int]:
    """(padded extent, bitline width) of a loop put on the bitlines: as is when it fits a CRAM, else
    split by its largest divisor of at least half a CRAM, else padded to a multiple of the CRAM."""
    if extent <= cols:
        return extent, extent
    d = next((d for d in range(cols, cols // 2 - 1, -1) if extent % d == 0), None)
    return (extent, d) if d else (-(-extent // cols) * cols, cols)


def _gemm_rows(lw: Lowering, n: QNode, layer: Layer, a_shape: tuple[int, int, int], b_shape: tuple[int, int, int],
               feed_a, feed_b, b_const: np.ndarray | None, b_bits: int, out_shape: tuple[int, ...]) -> None:
    """``acc = Σ_k A[b, i, k]·B[b|0, k, j]`` in the organisation the model estimates faster: the
    columns j on the bitlines (``acc[b, i, j]``; A's elements are per-step scalars) or the rows i
    (``acc[b, j, i]``; B's elements are the scalars, from the RF when B is constant: the Table 5
    gemm's organisation); the bitline loop padded with zeros (or split) to fit the CRAMs.  Then the
    requantization over (b·i, j) (j padded to a multiple of the CRAM width when longer)."""
    Bt, I, K = a_shape
    Bb, _, J0 = b_shape
    cols = lw.cfg.cram_cols
    bidx_of = (lambda b: b) if Bb > 1 else (lambda b: 0)
    best = None
    for rows_on_lines in (False, True):
        Ip, wi = _lane_split(I, cols) if rows_on_lines else (I, 0)
        Jp, wj = (J0, 0) if rows_on_lines else _lane_split(J0, cols)
        at = T.tensor((Bt, Ip, K), _t(n.in_bits[0]), n.name + "_a")
        bt = T.tensor((Bb, K, Jp), _t(b_bits), n.name + "_b", const=b_const is not None)
        b, i, j, k = T.loop(Bt, "b"), T.loop(Ip, "i"), T.loop(Jp, "j"), T.red_loop(K, "k")
        axes = (b, j, i) if rows_on_lines else (b, i, j)
        sch = T.schedule(T.compute(n.name + "_acc", axes, T.sum(T.i32(at[b, i, k]) * T.i32(bt[bidx_of(b), k, j]), k)))
        sch.bitlines(i, wi) if rows_on_lines else sch.bitlines(j, wj)
        est = lw._estimate(sch)
        if best is None or est < best[0]:
            best = (est, sch, at, bt, Ip, Jp, rows_on_lines)
    _, sch, at, bt, Ip, Jp, rows_on_lines = best
    prog = T.build(sch, lw.cfg)

    def pad_to(v, shape):
        v = np.asarray(v, np.int64)
        return np.pad(v, [(0, t - d) for d, t in zip(v.shape, shape)])
    b_fixed = None if b_const is None else pad_to(np.asarray(b_const).reshape(Bb, K, J0), (Bb, K, Jp))
    lw.add_program(layer, prog, lambda env: {
        at.name: pad_to(feed_a(env).reshape(Bt, I, K), (Bt, Ip, K)),
        bt.name: b_fixed if b_fixed is not None else pad_to(np.asarray(feed_b(env)).reshape(Bb, K, J0), (Bb, K, Jp))},
        "gemm")
    Jr = _lane_split(J0, cols)[0] if J0 <= cols else -(-J0 // cols) * cols  # the requantization's channels
    acc = n.name + "_acc"

    def view(env):  # → (Bt·I, Jr)
        a = env[acc]
        a = a.reshape(Bt, Jp, Ip).transpose(0, 2, 1) if rows_on_lines else a.reshape(Bt, Ip, Jp)
        return pad_to(a[:, :I, :J0], (Bt, I, Jr)).reshape(Bt * I, Jr)
    lw._requant(n, layer, Bt * I, Jr, prog, lambda out: out.reshape(Bt * I, Jr)[:, :J0].reshape(out_shape), view)


def gemm_rows(lw: Lowering, n: QNode, layer: Layer, rows: int, w: np.ndarray) -> None:
    """Gemm (or MatMul by constants) of ``rows`` activation rows by ``w`` (K, N), bias in the requantization."""
    x_name = n.inputs[0]
    K, J = w.shape
    _gemm_rows(lw, n, layer, (1, rows, K), (1, K, J), lambda env: env[x_name], None, w, n.w_bits,
               tuple(lw.shape(n.outputs[0])))


def matmul(lw: Lowering, n: QNode, layer: Layer) -> None:
    """MatMul: by constant weights (every row of the activation), or of two activations (batched
    over the broadcast leading axes: attention heads)."""
    sa = lw.shape(n.inputs[0])
    out_shape = tuple(lw.shape(n.outputs[0]))
    x_name = n.inputs[0]
    if n.weight is not None:
        wmat = np.asarray(n.weight, np.int64)
        if wmat.ndim != 2:
            layer.host_reason = f"MatMul by a rank-{wmat.ndim} constant: host fallback"
            return
        gemm_rows(lw, n, layer, int(np.prod(sa[:-1])), wmat)  # every leading axis (seq-first too)
        return
    sb = lw.shape(n.inputs[1])
    if len(sa) < 2 or len(sb) < 2:
        layer.host_reason = "MatMul of a vector: host fallback"
        return
    lead = tuple(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    Bt = int(np.prod(lead)) if lead else 1
    I, K, J = sa[-2], sa[-1], sb[-1]
    y_name = n.inputs[1]

    def fa(env):
        return np.broadcast_to(env[x_name], lead + (I, K))

    def fb(env):
        return np.broadcast_to(env[y_name], lead + (K, J))
    _gemm_rows(lw, n, layer, (Bt, I, K), (Bt, K, J), fa, fb, None, n.in_bits[1], out_shape)


def binary(lw: Lowering, n: QNode, layer: Layer) -> None:
    """Add / Sub (each input rescaled, then the output rescaling), Mul (the product, then the
    output rescaling), of two activations or of an activation and a constant; Max / Min of two
    activations (each rescaled and clamped)."""
    rqs = ([n.requant] if n.op in ("Add", "Sub", "Mul") else []) + \
        (list(n.input_requants) if n.op != "Mul" else [])
    if any(r is None or not r.is_pow2 or np.ndim(r.shift) for r in rqs):
        layer.host_reason = f"{n.op} with a per-channel or non-pow2 rescaling: host fallback"
        return
    names: list[Any] = list(n.inputs[:2])
    bits = list(n.in_bits[:2])
    if n.const is not None:
        at = int(n.attrs.get("const_index", 1))
        names = [n.inputs[0]]
        names.insert(at, np.asarray(n.const, np.int64))
        bits = [n.in_bits[0]]
        bits.insert(at, _bits_of(n.const))
    out_shift = int(np.asarray(n.requant.shift).ravel()[0]) if n.op in ("Add", "Sub", "Mul") else 0
    lo, hi = n.clamp

    def expr(a):
        if n.op in ("Max", "Min"):  # each input rescaled and clamped, then the larger / smaller
            u, v = (T.maximum(T.minimum(_shift_round(T.i32(t), int(np.asarray(r.shift).ravel()[0])), hi), lo)
                    for t, r in zip(a, n.input_requants))
            return T.maximum(u, v) if n.op == "Max" else T.minimum(u, v)
        if n.op == "Mul":
            acc = T.i32(a[0]) * T.i32(a[1])
        else:
            u, v = (_shift_round(T.i32(t), int(np.asarray(r.shift).ravel()[0]))
                    for t, r in zip(a, n.input_requants))
            acc = u + v if n.op == "Add" else u - v
        return _shift_round(acc, out_shift)
    lw._elementwise(n, layer, expr, names, bits)


__all__ = ["pad_chw", "conv_grouped", "gemm_rows", "matmul", "binary"]
