"""Arithmetic rules of the PIM ISA as small pure functions (spec ``pim_isa.md`` §5.2–§5.4).

These are the *definitions*: exact Python integers, one element at a time.  The reference
interpreter (:mod:`.functional_ref`) uses them directly; the fast path (:mod:`.functional_fast`)
uses numpy equivalents and is tested against them.  Only the activation functions are shared
by both paths (through :func:`activation_np`, which evaluates :func:`activation` once per
distinct input value), because D9 prescribes ``math.tanh``/``math.exp`` in IEEE double.
"""

from __future__ import annotations

import math

import numpy as np

from ....core import fixedpoint as fx

M32 = 0xFFFFFFFF


class Fault(Exception):
    """Internal: a run-time error of the current instruction.

    The scheduler turns it into :class:`~nnisa.core.errors.SimError` naming core, pc and the
    disassembled instruction.  ``address`` is set for out-of-bounds accesses.
    """

    def __init__(self, message: str, address: int | None = None):
        self.message = message
        self.address = address
        super().__init__(message)


# wrap_bits / sat_bits (§0.3), vavg rounding and D9 rounding are the shared fixed-point rules
wrap = fx.wrap_int
sat = fx.sat_int
div_round_away = fx.div_round_away_int
round_away = fx.round_half_away_int


def wrap32(v: int) -> int:
    """Scalar register arithmetic (``wrap_32``)."""
    return ((v + 0x80000000) & M32) - 0x80000000


def shift_amount(b: int) -> int:
    """Shift amount of vvsll/vvsra: the element value clamped to [0, 63] (§5.2)."""
    return 0 if b < 0 else 63 if b > 63 else b


def logistic(v: float) -> float:
    """``1 / (1 + e^-v)`` in IEEE double (exp overflow gives +inf, i.e. 0.0)."""
    try:
        e = math.exp(-v)
    except OverflowError:
        return 0.0
    return 1.0 / (1.0 + e)


def activation(kind: str, x: int, in_frac: int, out_frac: int, obiw: int) -> int:
    """vtanh / vsigm of one element (D9).

    ``x`` is the ibiw-bit input integer representing ``x / 2**in_frac``; the result is
    ``sat_obiw(round(f(x / 2**in_frac) * 2**out_frac))``.
    """
    v = x / 2.0 ** in_frac
    f = math.tanh(v) if kind == "vtanh" else logistic(v)
    return sat(round_away(f * 2.0 ** out_frac), obiw)


def activation_np(kind: str, x: np.ndarray, in_frac: int, out_frac: int, obiw: int) -> np.ndarray:
    """:func:`activation` over an int64 array (evaluated once per distinct value)."""
    if x.size == 0:
        return x.copy()
    uniq, inv = np.unique(x, return_inverse=True)
    vals = np.fromiter((activation(kind, int(u), in_frac, out_frac, obiw) for u in uniq.tolist()),
                       dtype=np.int64, count=uniq.size)
    return vals[inv.reshape(-1)]


# ---------------------------------------------------------------------- element storage
def elem_get(mem: bytearray, addr: int, biw: int, byw: int) -> int:
    """One element: ``byw`` little-endian bytes, low ``biw`` bits, sign-extended (D12)."""
    raw = int.from_bytes(mem[addr:addr + byw], "little")
    return wrap(raw, biw)


def elem_put(mem: bytearray, addr: int, value: int, byw: int) -> None:
    """Store an (already wrapped/saturated) element as ``byw`` bytes, sign-extended (D12)."""
    mem[addr:addr + byw] = (value & ((1 << (8 * byw)) - 1)).to_bytes(byw, "little")


def byte_width(bits: int) -> int:
    """``⌈bits/8⌉``."""
    return (bits + 7) // 8


#: element-wise two-operand vector ops: (function(a, b, ibiw, obiw), output uses obiw?)
BINARY = {
    "vvadd": (lambda a, b, ib, ob: wrap(a + b, ib), False),
    "vvsub": (lambda a, b, ib, ob: wrap(a - b, ib), False),
    "vvmul": (lambda a, b, ib, ob: wrap(a * b, ob), True),
    "vvmax": (lambda a, b, ib, ob: max(a, b), False),
    "vvsll": (lambda a, b, ib, ob: wrap(a << shift_amount(b), ob), True),
    "vvsra": (lambda a, b, ib, ob: wrap(a >> shift_amount(b), ob), True),
}
