"""Adaptive precision (spec §4.6): range analysis on the expression tree and the exact reference.

Every value gets an effective width = min(declared, required), where the required width follows
the rules of the paper: a product of a- and b-bit values needs a + b bits, a sum max(a, b) + 1, an
accumulation of k values w + ceil(log2 k), max/min max(a, b), shifts adjust by the amount.
Unsigned values mixed with signed ones count one bit more.  :func:`reference` evaluates an
expression exactly in int64 with the declared wrap-around at every node, which is what the
generated code computes (values are only narrower where they provably fit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .lang import Access, Bin, Cast, CompileError, Const, DType, Expr, Reduce, Select, Shift, declared_type


@dataclass(frozen=True)
class Width:
    """An integer value range as (bits, signed)."""

    bits: int
    signed: bool

    def as_signed(self) -> "Width":
        return self if self.signed else Width(self.bits + 1, True)

    def cap(self, t: DType) -> "Width":
        """Cap by a declared type: a value wider than ``t`` wraps to ``t``."""
        if t.is_float:
            return Width(t.bits, True)
        need = self if t.signed else self
        if need.bits >= t.bits or (not t.signed and self.signed):
            return Width(t.bits, t.signed)
        return self


def _join(a: Width, b: Width) -> tuple[Width, Width]:
    if a.signed != b.signed:
        return a.as_signed(), b.as_signed()
    return a, b


def width(e: Expr, adaptive: bool = True) -> Width:
    """Effective width of ``e`` (its declared type when ``adaptive`` is off)."""
    t = declared_type(e)
    if t.is_float:
        raise CompileError("floating-point computations are not supported by the PIMSAB compiler yet")
    if not adaptive:
        return Width(t.bits, t.signed)
    if isinstance(e, Access):
        w = Width(t.bits, t.signed)
    elif isinstance(e, Const):
        w = Width(t.bits, t.signed)
    elif isinstance(e, Cast):
        w = width(e.expr)
    elif isinstance(e, Bin):
        a, b = width(e.a), width(e.b)
        if e.op == "mul":
            w = Width(a.bits + b.bits, a.signed or b.signed)
        elif e.op in ("add", "sub"):
            x, y = _join(a, b)
            w = Width(max(x.bits, y.bits) + 1, x.signed or e.op == "sub")
        else:
            x, y = _join(a, b)
            w = Width(max(x.bits, y.bits), x.signed)
    elif isinstance(e, Shift):
        a = width(e.expr)
        w = Width(max(1, a.bits + e.amount), a.signed)
    elif isinstance(e, Select):
        x, y = _join(width(e.a), width(e.b))
        w = Width(max(x.bits, y.bits), x.signed)
    elif isinstance(e, Reduce):
        a = width(e.expr)
        k = math.prod(lp.extent for lp in e.loops)
        w = Width(a.bits + (math.ceil(math.log2(k)) if e.kind == "sum" and k > 1 else 0), a.signed)
    else:
        raise CompileError(f"unknown expression {e!r}")
    return w.cap(t)


def wrap(v: np.ndarray, t: DType | Width) -> np.ndarray:
    """Two's-complement wrap of int64 values to a type."""
    bits, signed = t.bits, t.signed
    if bits >= 64:
        return v
    m = np.int64(1) << np.int64(bits)
    v = v & (m - 1)
    if signed:
        v = np.where(v >= (m >> 1), v - m, v)
    return v


def reference(e: Expr, value) -> np.ndarray:
    """Exact value of ``e`` (int64) with declared wrap-around; ``value(access)`` gives the values of
    an access (broadcast-compatible int64 arrays); reductions take ``reduce(kind, body)``."""
    t = declared_type(e)
    if isinstance(e, Access):
        return value(e)
    if isinstance(e, Const):
        return np.int64(e.value)
    if isinstance(e, Cast):
        return wrap(reference(e.expr, value), t)
    if isinstance(e, Bin):
        a, b = reference(e.a, value), reference(e.b, value)
        r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "and": lambda: a & b,
             "or": lambda: a | b, "xor": lambda: a ^ b, "max": lambda: np.maximum(a, b),
             "min": lambda: np.minimum(a, b)}[e.op]()
        return wrap(r, t)
    if isinstance(e, Shift):
        a = reference(e.expr, value)
        return wrap(a << e.amount if e.amount > 0 else a >> -e.amount, t)
    if isinstance(e, Select):
        return wrap(np.where(reference(e.mask, value) & 1, reference(e.a, value), reference(e.b, value)), t)
    raise CompileError(f"reference: unsupported node {e!r}")
