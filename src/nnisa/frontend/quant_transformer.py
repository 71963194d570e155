"""Integer semantics of the transformer operators (issue 27): the algorithms and their quantization.

* ``LayerNorm``: exact integer centring and variance, an integer square root, one reciprocal per
  row, a fixed-point normalized value ``z`` and a per-element multiply-add by the quantized scale
  and bias (:func:`layernorm_int`).
* ``Softmax`` inside the graph and ``MaskedSoftmax``: an exponential lookup table indexed by the
  distance to the row maximum, one reciprocal of the row sum, a multiply and a rounding shift
  (:func:`softmax_int`); the output scale is fixed at ``2^-(bits-1)``.
* ``Gather`` of a constant table by integer indices (embeddings): the table quantized per tensor,
  rows copied.
* Raw tensors (token ids, attention masks and everything computed only from them): exact values,
  never quantized, evaluated with the float semantics (:func:`raw_tensors`).

Every intermediate's width is documented in ``docs/frontend.md`` ("What a target implements");
all arithmetic here is exact int64.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import fixedpoint as fx
from ..core.errors import UnsupportedError
from . import kernels as K
from .ir import Graph, Node

#: fractional bits of LayerNorm's normalized value ``z = (x - mean) / sqrt(n · (var + eps))``
LN_FRAC_BITS = 15
#: significant bits kept by LayerNorm's row reciprocal ``floor(2^P / r)``
LN_RECIP_BITS = 16
#: IR ops that keep a raw (index / mask) tensor raw when all their activation inputs are raw
RAW_OPS = {"Cast", "Equal", "Less", "Greater", "Not", "Where", "Expand", "Unsqueeze", "Squeeze", "Reshape",
           "Flatten", "Transpose", "Slice", "Concat", "Identity", "Add", "Sub", "Mul", "Div", "Max", "Min"}
#: an attention mask adds 0 (keep) or at most this (drop) to the scores
MASK_DROP = -1.0e3


def raw_tensors(g: Graph) -> set[str]:
    """Tensors computed only from non-float graph inputs (token ids, attention masks) and constants.

    They stay exact in the integer model: a mask or an index is never quantized.
    """
    raw = {t.name for t in g.inputs if np.dtype(t.dtype).kind in "biu"}
    for n in g.nodes:
        acts = [i for i in n.inputs if i not in g.initializers]
        if n.op in RAW_OPS and acts and all(i in raw for i in acts):
            raw.update(n.outputs)
    return raw


def isqrt(v: np.ndarray) -> np.ndarray:
    """Exact ``floor(sqrt(v))`` of a non-negative int64 array (``v < 2^62``)."""
    v = np.asarray(v, np.int64)
    r = np.floor(np.sqrt(v.astype(np.float64))).astype(np.int64)
    for _ in range(2):  # float64 is within one of the exact root below 2^62
        r = np.where(r * r > v, r - 1, r)
        r = np.where((r + 1) * (r + 1) <= v, r + 1, r)
    return r


def _rshift(v: np.ndarray, s: int) -> np.ndarray:
    """``(v + 2^(s-1)) >> s``: the frontend's round-half-up shift (``s ≥ 0``)."""
    return fx.shift_right_round(np.asarray(v, np.int64), s, "half_up")


def reciprocal(v: np.ndarray, bits: int) -> np.ndarray:
    """``floor(2^bits / v)`` for positive int64 ``v`` (one integer division per row)."""
    return np.floor_divide(np.int64(1) << np.int64(bits), np.asarray(v, np.int64))


# --------------------------------------------------------------------------- LayerNorm


def layernorm_params(n: int, in_scale: float, in_bits: int, eps: float) -> tuple[int, int, int]:
    """``(eps_q, sqrt_shift k, recip_bits P)`` of a LayerNorm over ``n`` elements of an ``in_bits`` input.

    ``k`` is the largest shift with ``(max Σd² + eps·n³/s_x²) · 4^k < 2^62`` (``d = n·q - Σq``): the
    square root is taken of ``W = (Σd² << 2k) + eps_q`` so even a row of nearly equal codes gets ~30
    significant bits; ``eps_q = round(eps · n³ · 4^k / s_x²)`` is epsilon in those units.
    ``P = bitlen(r_max) + LN_RECIP_BITS`` with ``r_max`` the largest root.  Raises
    :class:`ValueError` when ``Σ d²`` could reach 2^62 (int16 inputs with a very long row).
    """
    half = 1 << (in_bits - 1)
    eps_units = eps * n ** 3 / in_scale ** 2
    w_max = n ** 3 * half * half + int(math.ceil(eps_units))
    if w_max >= 1 << 62:
        raise ValueError(f"a LayerNorm over {n} elements of int{in_bits} needs more than 64-bit variance sums")
    k = (62 - w_max.bit_length()) // 2
    eps_q = int(K.round_half_away(eps_units * 4.0 ** k))
    return eps_q, k, math.isqrt(w_max << (2 * k)).bit_length() + LN_RECIP_BITS


def layernorm_int(q: np.ndarray, axis: int, eps_q: int, sqrt_shift: int, recip_bits: int,
                  frac_bits: int) -> np.ndarray:
    """The normalized value ``z ≈ 2^F · (x - mean) / sqrt(n·(var + eps))`` of LayerNorm, int64.

    Per row (the axes from ``axis`` on, ``n`` elements): ``s = Σq``, ``d = n·q - s``,
    ``r = max(isqrt((Σd² << 2k) + eps_q), 1)``, ``inv = floor(2^P / r)``,
    ``z = rshift_round(d·inv, P - F - k)``.  The real normalized value is ``sqrt(n) · z · 2^-F``;
    ``sqrt(n)`` is folded into the quantized scale.
    """
    q = np.asarray(q, np.int64)
    lead = q.shape[:axis]
    n = int(np.prod(q.shape[axis:], dtype=np.int64))
    f = q.reshape(lead + (n,))
    d = n * f - f.sum(axis=-1, keepdims=True)
    w = ((d * d).sum(axis=-1, keepdims=True) << np.int64(2 * sqrt_shift)) + eps_q
    r = np.maximum(isqrt(w), 1)
    z = _rshift(d * reciprocal(r, recip_bits), recip_bits - frac_bits - sqrt_shift)
    return z.reshape(q.shape)


def quantize_layernorm(q, n: Node, qn, x) -> None:
    """Fill LayerNorm's QNode: scale·sqrt(n) as per-tensor weights, bias at the accumulator scale."""
    g = q.g
    axis = n.attrs["axis"]
    cnt = int(np.prod(g.tensors[n.inputs[0]].shape[axis:], dtype=np.int64))
    try:
        eps_q, sqrt_shift, recip_bits = layernorm_params(cnt, x.scale, x.bits, n.attrs["epsilon"])
    except ValueError as e:
        raise q.err(n, str(e)) from None
    gamma = g.initializers[n.inputs[1]].astype(np.float64) * math.sqrt(cnt)
    beta = g.initializers[n.inputs[2]].astype(np.float64)
    qn.weight, qn.w_scale = q.qweight(gamma, None)
    qn.w_bits = q.w_bits
    acc_scale = float(qn.w_scale) * 2.0 ** -LN_FRAC_BITS
    lim = (1 << 31) - 1
    qn.bias = np.clip(K.round_half_away(beta / acc_scale), -lim - 1, lim).astype(np.int64)
    qn.attrs.update(eps_q=eps_q, sqrt_shift=sqrt_shift, recip_bits=recip_bits, frac_bits=LN_FRAC_BITS)
    return acc_scale


# --------------------------------------------------------------------------- Softmax


def softmax_params(in_bits: int) -> tuple[int, int]:
    """``(exp_bits E, recip_bits P)``: ``lut[0] = 2^E`` with ``E = bits + 7`` and ``P = E + bits + 7``, so the
    rounding of the reciprocal moves an output by less than 2^-8 of a code."""
    e = in_bits + 7
    return e, e + in_bits + 7


def softmax_lut(in_scale: float, in_bits: int) -> np.ndarray:
    """``lut[δ] = round(2^E · exp(-δ · s_x))`` for ``δ = 0 .. 2^bits - 1`` (distance to the row maximum)."""
    e, _ = softmax_params(in_bits)
    delta = np.arange(1 << in_bits, dtype=np.float64)
    return K.round_half_away(np.exp(-delta * in_scale) * 2.0 ** e).astype(np.int64)


def softmax_int(q: np.ndarray, axis: int, lut: np.ndarray, recip_bits: int, out_bits: int,
                keep: np.ndarray | None = None) -> np.ndarray:
    """Integer softmax along ``axis`` with output scale ``2^-(out_bits-1)``.

    ``m = max q`` (over kept positions), ``e = lut[m - q]`` (0 where dropped), ``S = Σe``,
    ``inv = floor(2^P / S)``, ``y = min(rshift_round(e·inv, P - out_bits + 1), 2^(out_bits-1) - 1)``.
    A row with no kept position keeps all of them.
    """
    q = np.asarray(q, np.int64)
    if keep is None:
        keep = np.ones(q.shape, bool)
    else:
        keep = np.broadcast_to(np.asarray(keep, bool), np.broadcast_shapes(q.shape, np.shape(keep)))
        q = np.broadcast_to(q, keep.shape)
        keep = keep | ~keep.any(axis=axis, keepdims=True)
    m = np.where(keep, q, np.iinfo(np.int64).min).max(axis=axis, keepdims=True)
    delta = np.clip(m - q, 0, len(lut) - 1)
    e = np.where(keep, lut[delta], 0)
    inv = reciprocal(e.sum(axis=axis, keepdims=True), recip_bits)
    y = _rshift(e * inv, recip_bits - out_bits + 1)
    return np.minimum(y, (1 << (out_bits - 1)) - 1)


def quantize_softmax(q, n: Node, qn, x, raw: set[str]) -> None:
    """Integer Softmax / MaskedSoftmax: exp table over the input codes, fixed output scale."""
    g = q.g
    size = g.tensors[n.inputs[0]].shape[n.attrs["axis"]]
    _, recip_bits = softmax_params(x.bits)
    if size >= 1 << (x.bits + 7):
        raise q.err(n, f"Softmax over {size} elements needs a wider row sum than int{x.bits} allows")
    qn.lut = softmax_lut(x.scale, x.bits)
    qn.attrs.update(exp_bits=softmax_params(x.bits)[0], recip_bits=recip_bits)
    if n.op == "MaskedSoftmax":
        m = n.inputs[1]
        if m in g.initializers:
            qn.const = (g.initializers[m] == 0).astype(np.int64)
            qn.attrs["const_index"] = 1
        elif m not in raw:
            raise q.err(n, "the attention mask must be a constant or computed from integer model inputs")


# --------------------------------------------------------------------------- evaluation


def run_transformer_qnode(n, args: list[np.ndarray]) -> np.ndarray:
    """Integer result of a LayerNorm / Softmax / MaskedSoftmax / Gather / Where node."""
    lo, hi = n.clamp
    a = n.attrs
    x = args[0]
    if n.op == "LayerNorm":
        z = layernorm_int(x, a["axis"], a["eps_q"], a["sqrt_shift"], a["recip_bits"], a["frac_bits"])
        return np.clip(n.requant.apply(z * n.weight + n.bias), lo, hi)
    if n.op in ("Softmax", "MaskedSoftmax"):
        keep = None
        if n.op == "MaskedSoftmax":
            keep = n.const.astype(bool) if n.const is not None else np.asarray(args[1]) == 0
        return softmax_int(x, a["axis"], n.lut, a["recip_bits"], n.out_bits, keep)
    if n.op == "Gather":
        idx = np.asarray(x, np.int64)
        return np.take(n.weight, np.where(idx < 0, idx + n.weight.shape[a["axis"]], idx), axis=a["axis"])
    if n.op == "Where":
        ops = _operands(n, args)
        branches = [np.clip(r.apply(v), lo, hi) for r, v in zip(n.input_requants, ops[1:])]
        return np.where(np.asarray(ops[0], bool), *branches)
    raise UnsupportedError(f"no integer semantics for {n.op}", where=f"node {n.name} ({n.op})")


def _operands(n, args: list[np.ndarray]) -> list:
    """The node's operands in IR order: activations from ``args``, constants from ``attrs['consts']``."""
    consts = n.attrs.get("consts", {})
    it = iter(args)
    return [consts[k] if k in consts else next(it) for k in range(len(args) + len(consts))]


def raw_operands(n, args: list[np.ndarray]) -> list:
    """Operands of a raw node (constants re-inserted at their IR positions)."""
    return _operands(n, args)


def quantize_where(q, n: Node, qn, out, raw: set[str]) -> None:
    """Where(cond raw, a, b): each branch requantized to the output scale (a constant branch is
    quantized at it)."""
    g = q.g
    cond = n.inputs[0]
    if cond in g.initializers or cond not in raw:
        raise q.err(n, "Where needs a condition computed from integer model inputs (a mask)")
    consts, reqs = {}, []
    lo, hi = fx.int_range(out.bits)
    for k, i in enumerate(n.inputs[1:], start=1):
        if i in g.initializers:
            consts[k] = np.clip(K.round_half_away(g.initializers[i].astype(np.float64) / out.scale), lo, hi)
            reqs.append(q.requant(1.0))
        elif i in raw:
            raise q.err(n, "Where of a raw (mask) branch and a quantized one has no integer semantics")
        else:
            reqs.append(q.requant(q.t[i].scale / out.scale))
    qn.attrs["consts"] = consts
    qn.input_requants = reqs
