"""Functional semantics of the PIMSAB compute instructions (spec §2.7.1–§2.7.4, §2.7.6 local shuffle).

Each handler takes the tile state and the instruction (a dict of IR columns) and updates CRAM
rows, latches and the RF.  Element arrays have the bitlines on the last axis and may carry a
leading batch axis (one row per sample, :mod:`.batch`); every handler indexes with ``...`` so the
same semantics serve the single-sample reference state (:class:`.cram.TileState`) and the batched
one.  A state with ``fast = True`` (the batched one) runs the integer ``mac`` and reductions through
the compiled kernels of :mod:`.cram_nb`; the NumPy lines next to them are the reference.  Integers are exact modulo 2^pD; floats are IEEE with round-to-nearest-
even in the destination format.  Bitlines g ≥ size never change; with predication only bitlines
whose predicate bit is 1 write (and update the carry latch).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ....core.errors import SimError
from ..precision import Precision, decode
from . import cram_nb
from .cram import TileState
from .values import U64, as_int, extend, float_op, from_float32, low_mask, to_float32, wrap

Ins = dict[str, Any]


def _n(ts: TileState, ins: Ins) -> int:
    return ins["size"] or ts.W


def enable(ts: TileState, ins: Ins, n: int) -> np.ndarray | None:
    """Per-bitline write enable of [0, n) from the predicate (``None`` = all)."""
    pred = ins.get("pred", 0)
    if pred == 0:
        return None
    if pred == 1:
        return ts.mask[..., :n].copy()
    return ts.carry[..., :n].copy() if pred == 2 else ~ts.carry[..., :n]


def check_overlap(ins: Ins, dst: tuple[int, int], *srcs: tuple[int, int]) -> None:
    """Source rows may overlap the destination only when they start at the same row (§2.7)."""
    d0, dn = dst
    for s0, sn in srcs:
        if s0 != d0 and s0 < d0 + dn and d0 < s0 + sn:
            raise SimError(f"source rows {s0}..{s0 + sn - 1} overlap destination rows {d0}..{d0 + dn - 1} "
                           "(only an in-place update starting at the same row is allowed)")


def _operand(ts: TileState, row: int, prec: Precision, n: int) -> np.ndarray:
    return ts.read(row, prec.bits, 0, n)


def _set_carry(ts: TileState, n: int, en: np.ndarray | None, carry: np.ndarray | None) -> None:
    new = False if carry is None else carry
    if en is None:
        ts.carry[..., :n] = new
    else:
        ts.carry[..., :n] = np.where(en, new, ts.carry[..., :n])


def _store(ts: TileState, ins: Ins, pd: Precision, pattern: np.ndarray, n: int, en, carry=None) -> None:
    ts.write(ins["rd"], pd.bits, pattern, 0, en)
    _set_carry(ts, n, en, carry)


def _int_binary(op: str, a: np.ndarray, b: np.ndarray, pa: Precision, pb: Precision, pd: Precision):
    """(result pattern, carry or None) of an integer binary op on raw patterns."""
    A, B = extend(a, pa), extend(b, pb)
    bits = pd.bits
    m = low_mask(bits)
    with np.errstate(over="ignore"):
        if op == "add":
            am, bm = A & m, B & m
            s = am + bm
            carry = (s < am) if bits == 64 else ((s >> U64(bits)) & U64(1)).astype(bool)
            return wrap(s, bits), carry
        if op == "sub":
            return wrap(A - B, bits), (A & m) >= (B & m)
        if op == "mult":
            return wrap(A * B, bits), None
    if op in ("and", "or", "xor"):
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        return wrap(f(A, B), bits), None
    if op in ("max", "min"):
        ia, ib = as_int(A, pa), as_int(B, pb)
        pick = ia >= ib if op == "max" else ia <= ib
        return wrap(np.where(pick.astype(bool), A, B), bits), None
    raise ValueError(op)


def binary(ts: TileState, ins: Ins, op: str) -> None:
    pd, pa, pb = decode(ins["pd"]), decode(ins["pa"]), decode(ins["pb"])
    n = _n(ts, ins)
    check_overlap(ins, (ins["rd"], pd.bits), (ins["ra"], pa.bits), (ins["rb"], pb.bits))
    en = enable(ts, ins, n)
    a, b = _operand(ts, ins["ra"], pa, n), _operand(ts, ins["rb"], pb, n)
    if pd.is_float and op not in ("and", "or", "xor"):
        r = float_op(op, to_float32(a, pa), to_float32(b, pb))
        _store(ts, ins, pd, from_float32(r, pd), n, en)
        return
    if pd.is_float:  # bitwise on the bit patterns
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        _store(ts, ins, pd, wrap(f(a, b), pd.bits), n, en)
        return
    res, carry = _int_binary(op, a, b, pa, pb, pd)
    _store(ts, ins, pd, res, n, en, carry)


def _unary_setup(ts: TileState, ins: Ins):
    """(pd, pa, n, enable, A patterns) of an instruction with one CRAM source."""
    pd, pa = decode(ins["pd"]), decode(ins["pa"])
    n = _n(ts, ins)
    check_overlap(ins, (ins["rd"], pd.bits), (ins["ra"], pa.bits))
    return pd, pa, n, enable(ts, ins, n), _operand(ts, ins["ra"], pa, n)


def unary(ts: TileState, ins: Ins, op: str) -> None:
    pd, pa, n, en, a = _unary_setup(ts, ins)
    if pd.is_float and op == "copy":
        res = from_float32(to_float32(a, pa), pd)
    else:
        A = a if pd.is_float else extend(a, pa)
        res = wrap(~A if op == "not" else A, pd.bits)
    _store(ts, ins, pd, res, n, en)


def set_reset(ts: TileState, ins: Ins, value: int) -> None:
    pd = decode(ins["pd"])
    n = _n(ts, ins)
    en = enable(ts, ins, n)
    ts.write(ins["rd"], pd.bits, np.full(n, low_mask(pd.bits) if value else 0, U64), 0, en)
    _set_carry(ts, n, en, None)


def set_mask(ts: TileState, ins: Ins) -> None:
    n = _n(ts, ins)
    en = enable(ts, ins, n)
    bits = ts.read(ins["ra"], 1, 0, n).astype(bool)
    ts.mask[..., :n] = bits if en is None else np.where(en, bits, ts.mask[..., :n])
    _set_carry(ts, n, en, None)


def _full(ts: TileState, row: int, prec: Precision) -> np.ndarray:
    return ts.read(row, prec.bits, 0, ts.W)


def _write_full(ts: TileState, ins: Ins, pd: Precision, values: np.ndarray) -> None:
    n = _n(ts, ins)
    en = enable(ts, ins, n)
    _store(ts, ins, pd, values[..., :n], n, en)


def shift(ts: TileState, ins: Ins) -> None:
    """Move data across the bitlines [0, size) of the tile vector by ``dist`` (§2.7.2)."""
    pd, pa = decode(ins["pd"]), decode(ins["pa"])
    n, d = _n(ts, ins), ins["dist"] + 1
    check_overlap(ins, (ins["rd"], pd.bits), (ins["ra"], pa.bits))
    a = _operand(ts, ins["ra"], pa, n)
    a = a if pd.is_float else extend(a, pa)
    out = np.zeros(a.shape, U64)
    if d < n:
        if ins["dir"] == 0:
            out[..., : n - d] = a[..., d:]
        else:
            out[..., d:] = a[..., : n - d]
    en = enable(ts, ins, n)
    _store(ts, ins, pd, wrap(out, pd.bits), n, en)


def _tree_sum(v: np.ndarray, levels: int, axis: int, pd: Precision, pa: Precision) -> np.ndarray:
    """Sum groups of 2^levels along ``axis`` (already reshaped so that axis has that length)."""
    if not pd.is_float:
        with np.errstate(over="ignore"):
            return wrap(extend(v, pa).sum(axis=axis, dtype=U64), pd.bits)
    x = to_float32(v, pa)
    k = x.shape[axis]
    while k > 1:  # tree order: element i accumulates i + k/2, rounded to pd at every level
        half = k // 2
        lo = np.take(x, np.arange(half), axis=axis)
        hi = np.take(x, np.arange(half, k), axis=axis)
        x = to_float32(from_float32(lo + hi, pd), pd)
        k = half
    return from_float32(np.take(x, 0, axis=axis), pd)


def reduce_cram(ts: TileState, ins: Ins) -> None:
    """Bitline b ≡ 0 (mod 2^L) of every CRAM ← the sum of bitlines [b, b + 2^L); others 0."""
    pd, pa = decode(ins["pd"]), decode(ins["pa"])
    g = 1 << ins["levels"]
    check_overlap(ins, (ins["rd"], pd.bits), (ins["ra"], pa.bits))
    v = _full(ts, ins["ra"], pa)
    if getattr(ts, "fast", False) and not pd.is_float:   # the compiled kernel of the lines below
        _write_full(ts, ins, pd, cram_nb.group_sum_words(v, g, 1, pa, pd.bits))
        return
    lead = v.shape[:-1]
    v = v.reshape(lead + (ts.crams, ts.cols // g, g))
    out = np.zeros(v.shape, U64)
    # tree order within a group: bitline b accumulates b + 2^(i-1): a pairwise tree over the group
    # (integer sums do not depend on the order)
    out[..., 0] = _tree_sum(v[..., _tree_perm(g)] if pd.is_float else v, ins["levels"], -1, pd, pa)
    _write_full(ts, ins, pd, out.reshape(lead + (-1,)))


def reduce_tile(ts: TileState, ins: Ins) -> None:
    """CRAM c ≡ 0 (mod 2^L) ← the bitline-wise sum of CRAMs [c, c + 2^L); others 0."""
    pd, pa = decode(ins["pd"]), decode(ins["pa"])
    g = 1 << ins["levels"]
    check_overlap(ins, (ins["rd"], pd.bits), (ins["ra"], pa.bits))
    v = _full(ts, ins["ra"], pa)
    if getattr(ts, "fast", False) and not pd.is_float:   # the compiled kernel of the lines below
        _write_full(ts, ins, pd, cram_nb.group_sum_words(v, g, ts.cols, pa, pd.bits))
        return
    lead = v.shape[:-1]
    v = v.reshape(lead + (ts.crams // g, g, ts.cols))
    out = np.zeros(v.shape, U64)
    out[..., 0, :] = _tree_sum(v[..., _tree_perm(g), :] if pd.is_float else v, ins["levels"], -2, pd, pa)
    _write_full(ts, ins, pd, out.reshape(lead + (-1,)))


def _tree_perm(g: int) -> np.ndarray:
    """Order of a group such that halving sums (i += i + k/2) reproduce the hardware's tree,
    where at level i element b accumulates b + 2^(i-1)."""
    idx = np.arange(g)
    # bit-reverse: the hardware pairs neighbours first (distance 1), the halving sum pairs
    # elements k/2 apart first; reversing the index bits maps one onto the other
    bits = max(1, g.bit_length() - 1)
    rev = np.zeros(g, np.int64)
    for b in range(bits):
        rev |= ((idx >> b) & 1) << (bits - 1 - b)
    return rev if g > 1 else idx


def cram_local_shf(ts: TileState, ins: Ins) -> None:
    """Within every CRAM, bitline b ← bitline b mod 2^k (the CRAM's own data)."""
    pd, pa = decode(ins["pd"]), decode(ins["pa"])
    G = 1 << ins["shf"]
    check_overlap(ins, (ins["rd"], pd.bits), (ins["ra"], pa.bits))
    v = _full(ts, ins["ra"], pa)
    v = v if pd.is_float else extend(v, pa)
    src = (np.arange(ts.W) // ts.cols) * ts.cols + (np.arange(ts.W) % ts.cols) % G
    _write_full(ts, ins, pd, wrap(v[..., src], pd.bits))


def _rf_operand(ts: TileState, reg: int, byte: int) -> tuple[np.ndarray, Precision]:
    """RF register ``reg`` read at precision ``byte``: shape (1,), or (batch, 1) per sample."""
    p = decode(byte)
    return ts.rf[..., reg:reg + 1].astype(U64) & U64((1 << min(p.bits, 32)) - 1), p


def const_op(ts: TileState, ins: Ins, op: str) -> None:
    """``mul_const``/``add_const``: A × rf[rb] or A + rf[rb], the constant read at pb."""
    pd, pa, n, en, a = _unary_setup(ts, ins)
    c, pc = _rf_operand(ts, ins["rb"], ins["pb"])
    base = "mult" if op == "mul_const" else "add"
    if pd.is_float:
        r = float_op(base, to_float32(a, pa), to_float32(c, pc))
        _store(ts, ins, pd, from_float32(r, pd), n, en)
        return
    res, carry = _int_binary(base, a, np.broadcast_to(c, np.broadcast_shapes(a.shape, c.shape)), pa, pc, pd)
    _store(ts, ins, pd, res, n, en, carry)


def dot_const(ts: TileState, ins: Ins) -> None:
    """d = a·rf[x] + b·rf[y]."""
    pd, pa, pb = decode(ins["pd"]), decode(ins["pa"]), decode(ins["pb"])
    n = _n(ts, ins)
    check_overlap(ins, (ins["rd"], pd.bits), (ins["ra"], pa.bits), (ins["rb"], pb.bits))
    en = enable(ts, ins, n)
    a, b = _operand(ts, ins["ra"], pa, n), _operand(ts, ins["rb"], pb, n)
    x, px = _rf_operand(ts, ins["xrf"], ins["px"])
    y, py = _rf_operand(ts, ins["yrf"], ins["py"])
    if pd.is_float:
        r = float_op("add", float_op("mult", to_float32(a, pa), to_float32(x, px)),
                     float_op("mult", to_float32(b, pb), to_float32(y, py)))
        _store(ts, ins, pd, from_float32(r, pd), n, en)
        return
    with np.errstate(over="ignore"):
        r = extend(a, pa) * extend(x, px) + extend(b, pb) * extend(y, py)
    _store(ts, ins, pd, wrap(r, pd.bits), n, en)


def mac(ts: TileState, ins: Ins) -> None:
    """d = (accumulator rd read at pin) + A × B; the scratch rows are written 0."""
    pd, pa, pb, pin = decode(ins["pd"]), decode(ins["pa"]), decode(ins["pb"]), decode(ins["pin"])
    n = _n(ts, ins)
    scratch = (pa.bits + pb.bits + 1) // 2
    check_overlap(ins, (ins["rd"], max(pd.bits, pin.bits)), (ins["ra"], pa.bits), (ins["rb"], pb.bits),
                  (ins["scratch"], scratch))
    check_overlap(ins, (ins["scratch"], scratch), (ins["ra"], pa.bits), (ins["rb"], pb.bits))
    en = enable(ts, ins, n)
    a, b = _operand(ts, ins["ra"], pa, n), _operand(ts, ins["rb"], pb, n)
    acc = _operand(ts, ins["rd"], pin, n)
    if pd.is_float:
        r = float_op("add", to_float32(acc, pin), float_op("mult", to_float32(a, pa), to_float32(b, pb)))
        res = from_float32(r, pd)
    elif getattr(ts, "fast", False):   # the compiled kernel of the line below
        res = cram_nb.mac_words(a, b, acc, pa, pb, pin, pd.bits)
    else:
        with np.errstate(over="ignore"):
            res = wrap(extend(acc, pin) + extend(a, pa) * extend(b, pb), pd.bits)
    ts.write(ins["scratch"], scratch, np.zeros(n, U64), 0, en)
    _store(ts, ins, pd, res, n, en)


def popcount_rf(ts: TileState, ins: Ins) -> None:
    """rf[rd] ← Σ over bitlines g < size of the unsigned pa-bit value at (ra, g), mod 2^32."""
    pa = decode(ins["pa"])
    v = ts.read(ins["ra"], pa.bits, 0, _n(ts, ins))
    with np.errstate(over="ignore"):
        ts.rf[..., ins["rd"]] = (v.sum(axis=-1, dtype=U64) & U64(0xFFFFFFFF)).astype(np.uint32)


def rf_scalar(ts: TileState, ins: Ins, op: str) -> None:
    rf, rd = ts.rf, ins["rd"]
    with np.errstate(over="ignore"):   # uint32 arithmetic wraps modulo 2^32
        if op == "write_rf":
            rf[..., rd] = np.uint32(ins["imm"] & 0xFFFFFFFF)
        elif op == "add_rf":
            rf[..., rd] = rf[..., ins["ra"]] + rf[..., ins["rb"]]
        elif op == "sub_rf":
            rf[..., rd] = rf[..., ins["ra"]] - rf[..., ins["rb"]]


#: mnemonic → handler(tile_state, ins)
HANDLERS: dict[str, Callable[[TileState, Ins], None]] = {
    **{m: (lambda ts, ins, m=m: binary(ts, ins, m)) for m in ("add", "sub", "mult", "max", "min", "and", "or", "xor")},
    "not": lambda ts, ins: unary(ts, ins, "not"), "copy": lambda ts, ins: unary(ts, ins, "copy"),
    "set": lambda ts, ins: set_reset(ts, ins, 1), "reset": lambda ts, ins: set_reset(ts, ins, 0),
    "set_mask": set_mask, "shift": shift, "reduce_cram": reduce_cram, "reduce_tile": reduce_tile,
    "cram_local_shf": cram_local_shf, "mac": mac, "dot_const": dot_const, "popcount_rf": popcount_rf,
    "mul_const": lambda ts, ins: const_op(ts, ins, "mul_const"),
    "add_const": lambda ts, ins: const_op(ts, ins, "add_const"),
    **{m: (lambda ts, ins, m=m: rf_scalar(ts, ins, m)) for m in ("write_rf", "add_rf", "sub_rf")},
    "read_rf": lambda ts, ins: None, "nop": lambda ts, ins: None,
}
