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
    """An integer value range as (bits, signed); ``fmt`` = ``"f32"`` for a float value."""

    bits: int
    signed: bool
    fmt: str = ""

    def as_signed(self) -> "Width":
        return self if self.signed else Width(self.bits + 1, True)

    def cap(self, t: DType) -> "Width":
        """Cap by a declared type: a value wider than ``t`` wraps to ``t``."""
        if t.is_float:
            return Width(t.bits, True, t.token)
        if self.bits >= t.bits or (not t.signed and self.signed):
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
        return _float_width(e, t)
    if isinstance(e, Cast) and declared_type(e.expr).is_float:
        raise CompileError("no int/float conversion instruction: cast between float types only")
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


FLOAT_OPS = ("add", "sub", "mul")


def _float_width(e: Expr, t: DType) -> Width:
    """Floats keep their format (fp32 only): no adaptive precision, no bit operations."""
    if t.token != "f32":
        raise CompileError(f"the compiler computes in f32 only, not {t.token}")
    if isinstance(e, Cast) and not declared_type(e.expr).is_float:
        raise CompileError("no int/float conversion instruction: cast between float types only")
    if isinstance(e, Bin) and e.op not in FLOAT_OPS:
        raise CompileError(f"float {e.op} is not supported (the simulator-compatible cycle mode has no float "
                           "compare; bit operations act on integers)")
    if isinstance(e, (Shift, Select)):
        raise CompileError("shifts and select take integer operands")
    if isinstance(e, Reduce) and e.kind != "sum":
        raise CompileError(f"float {e.kind} reductions are not supported (no float compare in simulator mode)")
    return Width(32, True, "f32")


def wrap(v: np.ndarray, t: DType | Width) -> np.ndarray:
    """Two's-complement wrap of int64 values to a type (floats are returned unchanged)."""
    if (isinstance(t, DType) and t.is_float) or getattr(t, "fmt", ""):
        return v
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
    if t.is_float:
        return _float_reference(e, value)
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


def _float_reference(e: Expr, value) -> np.ndarray:
    """f32 evaluation, one IEEE round-to-nearest-even operation per node (what the CRAMs compute)."""
    if isinstance(e, Access):
        return np.asarray(value(e), np.float32)
    if isinstance(e, Const):
        return np.float32(e.value)
    if isinstance(e, Cast):
        return _float_reference(e.expr, value)
    if isinstance(e, Bin):
        a, b = _float_reference(e.a, value), _float_reference(e.b, value)
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply}[e.op](a, b, dtype=np.float32)
    raise CompileError(f"reference: unsupported float node {e!r}")
