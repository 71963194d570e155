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

from ..sim.values import bf16_bits, float_max, float_min
from .lang import (Access, Bin, Cast, CompileError, Const, DType, Expr, Reduce, Select, Shift, children,
                   declared_type)


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


FLOAT_OPS = ("add", "sub", "mul", "max", "min")
FLOAT_FORMATS = ("f32", "f16", "bf16")


def _float_width(e: Expr, t: DType) -> Width:
    """Floats keep their format (f32, f16, bf16): no adaptive precision, no bit operations."""
    if t.token not in FLOAT_FORMATS:
        raise CompileError(f"unknown float format {t.token}")
    if isinstance(e, Cast) and not declared_type(e.expr).is_float:
        raise CompileError("no int/float conversion instruction: cast between float types only")
    if isinstance(e, Bin) and e.op not in FLOAT_OPS:
        raise CompileError(f"float {e.op} is not supported (bit operations act on integers)")
    if isinstance(e, (Shift, Select)):
        raise CompileError("shifts and select take integer operands")
    return Width(t.bits, True, t.token)


def round_float(x, fmt: str) -> np.ndarray:
    """float32 values rounded (nearest even) to the float format ``fmt``, as float32 values."""
    x = np.asarray(x, np.float32)
    if fmt == "f16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float32)
    if fmt == "bf16":
        return (bf16_bits(x).astype(np.uint32) << np.uint32(16)).view(np.float32)
    return x


def float_format(e: Expr) -> str:
    """The float format of a float expression (``""`` for integer expressions)."""
    t = declared_type(e)
    return t.token if t.is_float else ""


def converts(e: Expr) -> bool:
    """Whether ``e`` is a cast between two float formats (a ``copy`` that rounds or widens)."""
    return isinstance(e, Cast) and e.dtype.is_float and declared_type(e.expr) != e.dtype


def const_formats(e: Expr, fmt: str = "") -> dict[int, str]:
    """Float format of every constant of a float expression (by node id): the format of the
    operation (or cast) that uses it."""
    out: dict[int, str] = {}

    def walk(x: Expr, parent: str) -> None:
        if isinstance(x, Const):
            if parent:
                out[id(x)] = parent
            return
        here = float_format(x) if isinstance(x, (Bin, Cast)) else parent
        for c in children(x):
            walk(c, here or parent)
    walk(e, fmt or float_format(e))
    return out


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


def _float_reference(e: Expr, value, fmt: str = "") -> np.ndarray:
    """Float evaluation, one IEEE round-to-nearest-even operation per node in the node's format
    (computed in float32, then rounded: what the CRAMs compute); constants are rounded to the format
    of the operation that uses them."""
    fmt = fmt if isinstance(e, Const) and fmt else (float_format(e) or fmt)
    if isinstance(e, Access):
        return round_float(value(e), fmt)
    if isinstance(e, Const):
        return round_float(np.float32(e.value), fmt)
    if isinstance(e, Cast):  # a conversion rounds to its format (f16/bf16 → f32 is exact)
        return round_float(_float_reference(e.expr, value, fmt), fmt)
    if isinstance(e, Bin):
        a, b = _float_reference(e.a, value, fmt), _float_reference(e.b, value, fmt)
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": float_max, "min": float_min}[e.op]
        with np.errstate(all="ignore"):
            return round_float(f(np.asarray(a, np.float32), np.asarray(b, np.float32)), fmt)
    raise CompileError(f"reference: unsupported float node {e!r}")
