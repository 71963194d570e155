"""The tensor-expression DSL of the PIMSAB compiler (spec §4.1): types, loops, tensors, expressions.

A program declares tensors and loops, writes one computation as an expression over tensor
accesses, and organises its loops with a :class:`Schedule` (``split``, ``reorder``, ``bitlines``,
optional level pins).  :func:`nnisa.targets.pimsab.compiler.dsl.build` maps a schedule onto the
machine.  Indices are affine in the loops; the loop named by ``bitlines`` runs across the bitlines
of a CRAM, the other loops are distributed over tiles, CRAMs and serial steps by the compiler.

Example (paper Fig. 12/13)::

    from nnisa.targets.pimsab.compiler import dsl as T
    a = T.tensor((768, 1024, 256), T.i8, name="a")
    b = T.tensor((320, 1024), T.i8, name="b")
    xo, xi, y, k = T.loop(768, "xo"), T.loop(256, "xi"), T.loop(320, "y"), T.red_loop(1024, "k")
    c = T.compute("c", (xo, y, xi), T.sum(T.i32(a[xo, k, xi]) * T.i32(b[y, k]), k))
    s = T.schedule(c)
    xoo, xoi = s.split(xo, 64)
    ...
"""

from __future__ import annotations

import builtins
import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable

from ....core.errors import UnsupportedError

_ids = itertools.count()


class CompileError(UnsupportedError):
    """A DSL program or loop organisation the compiler cannot map (one line, with a suggestion)."""


# ----------------------------------------------------------------------------- types
@dataclass(frozen=True)
class DType:
    """An element type: ``kind`` ``"i"`` (signed), ``"u"`` (unsigned) or ``"f"`` (float, bits 32/16,
    ``bf`` for bfloat16)."""

    kind: str
    bits: int

    @property
    def is_float(self) -> bool:
        return self.kind in ("f", "bf")

    @property
    def signed(self) -> bool:
        return self.kind != "u"

    @property
    def token(self) -> str:
        return {"f": f"f{self.bits}", "bf": "bf16"}.get(self.kind, f"{self.kind}{self.bits}")

    def __call__(self, expr: Any) -> "Expr":
        """Cast: ``T.i32(e)``."""
        return Cast(as_expr(expr), self)

    def __repr__(self) -> str:
        return self.token


def i(w: int) -> DType:
    """Signed integer type of ``w`` bits (1..64)."""
    if not 1 <= int(w) <= 64:
        raise CompileError(f"integer width {w} outside 1..64")
    return DType("i", int(w))


def u(w: int) -> DType:
    """Unsigned integer type of ``w`` bits (1..64)."""
    if not 1 <= int(w) <= 64:
        raise CompileError(f"integer width {w} outside 1..64")
    return DType("u", int(w))


f32, f16, bf16 = DType("f", 32), DType("f", 16), DType("bf", 16)


# ----------------------------------------------------------------------------- loops and affine indices
class Affine:
    """``Σ coef·loop + const`` (an index expression)."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict["Loop", int] | None = None, const: int = 0) -> None:
        self.terms = {k: v for k, v in (terms or {}).items() if v}
        self.const = int(const)

    def __add__(self, other: Any) -> "Affine":
        o = as_affine(other)
        t = dict(self.terms)
        for k, v in o.terms.items():
            t[k] = t.get(k, 0) + v
        return Affine(t, self.const + o.const)

    __radd__ = __add__

    def __sub__(self, other: Any) -> "Affine":
        return self + as_affine(other) * -1

    def __rsub__(self, other: Any) -> "Affine":
        return as_affine(other) - self

    def __mul__(self, other: Any) -> "Affine":
        if not isinstance(other, int):
            raise CompileError("non-affine index: loops can only be multiplied by integer constants")
        return Affine({k: v * other for k, v in self.terms.items()}, self.const * other)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        parts = [f"{v}*{k.name}" if v != 1 else k.name for k, v in self.terms.items()]
        return " + ".join(parts + ([str(self.const)] if self.const or not parts else []))


def as_affine(x: Any) -> Affine:
    if isinstance(x, Affine):
        return x
    if isinstance(x, Loop):
        return Affine({x: 1})
    if isinstance(x, int):
        return Affine({}, x)
    raise CompileError(f"non-affine index {x!r}: use loops, integers, + and * by constants")


class Loop(Affine):
    """A loop variable: data-parallel (:func:`loop`) or reduction (:func:`red_loop`)."""

    __slots__ = ("name", "extent", "reduce", "uid", "lo")

    def __init__(self, extent: int, name: str, reduce: bool = False, lo: int = 0) -> None:
        if int(extent) < 1:
            raise CompileError(f"loop {name}: extent must be positive, got {extent}")
        self.name, self.extent, self.reduce, self.lo = name, int(extent), reduce, int(lo)
        self.uid = next(_ids)
        Affine.__init__(self, {self: 1}, lo)

    def __hash__(self) -> int:
        return self.uid

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        return self.name


def _extent(spec: Any) -> tuple[int, int]:
    if isinstance(spec, tuple):
        lo, hi = spec
        return int(lo), int(hi) - int(lo)
    return 0, int(spec)


def loop(extent: int | tuple[int, int], name: str | None = None) -> Loop:
    """A data-parallel loop of ``extent`` iterations (or over ``(lo, hi)``)."""
    lo, n = _extent(extent)
    return Loop(n, name or f"l{next(_ids)}", False, lo)


def red_loop(extent: int | tuple[int, int], name: str | None = None) -> Loop:
    """A reduction loop (summed, maxed or mined by :func:`sum`/:func:`max`/:func:`min`)."""
    lo, n = _extent(extent)
    return Loop(n, name or f"r{next(_ids)}", True, lo)


# ----------------------------------------------------------------------------- tensors and expressions
class Expr:
    """Base class of expressions (operators build the tree)."""

    def _bin(self, op: str, other: Any, rev: bool = False) -> "Expr":
        a, b = as_expr(other), self
        return Bin(op, a, b) if rev else Bin(op, b, a)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __and__(self, o): return self._bin("and", o)
    def __or__(self, o): return self._bin("or", o)
    def __xor__(self, o): return self._bin("xor", o)

    def __rshift__(self, c: int) -> "Expr":
        return Shift(self, -_shift_amount(c))

    def __lshift__(self, c: int) -> "Expr":
        return Shift(self, _shift_amount(c))


def _shift_amount(c: Any) -> int:
    if not isinstance(c, int) or c < 0:
        raise CompileError("shifts take non-negative integer constants")
    return c


@dataclass(eq=False)
class Tensor:
    """A tensor in DRAM: ``shape``, element ``dtype``; ``const=True`` marks weights (pre-transposed)."""

    shape: tuple[int, ...]
    dtype: DType
    name: str
    const: bool = False

    def __getitem__(self, idx: Any) -> "Access":
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != len(self.shape):
            raise CompileError(f"tensor {self.name} has {len(self.shape)} dimensions, indexed with {len(idx)}")
        return Access(self, tuple(as_affine(x) for x in idx))

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def tensor(shape: Iterable[int], dtype: DType, name: str, const: bool = False) -> Tensor:
    """Declare a DRAM tensor (inputs; weights with ``const=True``)."""
    shape = tuple(int(d) for d in shape)
    if not shape or any(d < 1 for d in shape):
        raise CompileError(f"tensor {name}: shape must be positive, got {shape}")
    if not isinstance(dtype, DType):
        raise CompileError(f"tensor {name}: dtype must be a DSL type such as T.i8")
    return Tensor(shape, dtype, name, const)


@dataclass(eq=False)
class Access(Expr):
    tensor: Tensor
    index: tuple[Affine, ...]

    def loops(self) -> set[Loop]:
        return {lp for a in self.index for lp in a.terms}


@dataclass(eq=False)
class Const(Expr):
    value: int


@dataclass(eq=False)
class Cast(Expr):
    expr: Expr
    dtype: DType


@dataclass(eq=False)
class Bin(Expr):
    op: str  # add sub mul and or xor max min
    a: Expr
    b: Expr


@dataclass(eq=False)
class Shift(Expr):
    expr: Expr
    amount: int  # > 0 left, < 0 right


@dataclass(eq=False)
class Select(Expr):
    mask: Expr
    a: Expr
    b: Expr


@dataclass(eq=False)
class Reduce(Expr):
    kind: str  # sum max min
    expr: Expr
    loops: tuple[Loop, ...]


def as_expr(x: Any) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, float):
        return Const(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise CompileError(f"expected an expression or a number, got {type(x).__name__}")
    return Const(int(x))


def _reduce(kind: str, expr: Any, loops: tuple[Loop, ...]) -> Reduce:
    if not loops or not all(isinstance(lp, Loop) and lp.reduce for lp in loops):
        raise CompileError(f"T.{kind} needs reduction loops (T.red_loop)")
    return Reduce(kind, as_expr(expr), tuple(loops))


def sum(expr: Any, *loops: Loop) -> Reduce:  # noqa: A001 - DSL name
    """Σ of ``expr`` over the reduction ``loops``."""
    return _reduce("sum", expr, loops)


def max(expr: Any, *loops: Loop) -> Reduce:  # noqa: A001
    """Maximum of ``expr`` over the reduction ``loops``."""
    return _reduce("max", expr, loops)


def min(expr: Any, *loops: Loop) -> Reduce:  # noqa: A001
    """Minimum of ``expr`` over the reduction ``loops``."""
    return _reduce("min", expr, loops)


def maximum(a: Any, b: Any) -> Bin:
    """Elementwise maximum."""
    return Bin("max", as_expr(a), as_expr(b))


def minimum(a: Any, b: Any) -> Bin:
    """Elementwise minimum."""
    return Bin("min", as_expr(a), as_expr(b))


def select(mask: Any, a: Any, b: Any) -> Select:
    """``a`` where the 1-bit ``mask`` is set, else ``b`` (predication)."""
    return Select(as_expr(mask), as_expr(a), as_expr(b))


@dataclass(eq=False)
class Compute:
    """``name[axes] = expr``: the computation a schedule organises."""

    name: str
    axes: tuple[Loop, ...]
    expr: Expr
    dtype: DType

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.extent for a in self.axes)


def compute(name: str, axes: Iterable[Loop], expr: Any, dtype: DType | None = None) -> Compute:
    """Declare the computation; ``dtype`` defaults to the expression's declared type."""
    axes = tuple(axes)
    if not axes or not all(isinstance(a, Loop) and not a.reduce for a in axes):
        raise CompileError(f"compute {name}: axes must be data-parallel loops (T.loop)")
    if len(set(axes)) != len(axes):
        raise CompileError(f"compute {name}: an axis is listed twice")
    expr = as_expr(expr)
    return Compute(name, axes, expr, dtype or declared_type(expr))


def const_type(v: int | float) -> DType:
    """Smallest type holding the integer constant ``v`` (f32 for a float constant)."""
    if isinstance(v, float):
        return f32
    if v >= 0:
        return DType("u", builtins.max(1, int(v).bit_length()))
    return DType("i", (-int(v) - 1).bit_length() + 1)


def wider(a: DType, b: DType) -> DType:
    """The declared type of a binary operation on ``a`` and ``b`` (C-like promotion)."""
    if a.is_float or b.is_float:
        if a != b:
            raise CompileError(f"mixing {a} and {b}: cast explicitly")
        return a
    if a.signed == b.signed:
        return DType(a.kind, builtins.max(a.bits, b.bits))
    s, us = (a, b) if a.signed else (b, a)
    return DType("i", builtins.max(s.bits, us.bits + 1 if us.bits >= s.bits else s.bits))


def declared_type(e: Expr) -> DType:
    """The declared (upper-bound) type of an expression (spec §4.1: casts set it)."""
    if isinstance(e, Access):
        return e.tensor.dtype
    if isinstance(e, Const):
        return const_type(e.value)
    if isinstance(e, Cast):
        return e.dtype
    if isinstance(e, (Shift, Reduce)):
        return declared_type(e.expr)
    if isinstance(e, (Bin, Select)):
        a, b = declared_type(e.a), declared_type(e.b)
        if a.is_float != b.is_float or (a.is_float and a != b):  # a number next to a float is that float
            if isinstance(e.b, Const):
                return a
            if isinstance(e.a, Const):
                return b
        return wider(a, b)
    raise CompileError(f"unknown expression {e!r}")


# ----------------------------------------------------------------------------- schedule
@dataclass
class Schedule:
    """The loop organisation of one computation (spec §4.1).

    ``leaves`` are the loops after ``split`` in nest order; ``value`` maps every original loop to an
    affine combination of leaves.
    """

    op: Compute
    leaves: list[Loop] = field(default_factory=list)
    value: dict[Loop, dict[Loop, int]] = field(default_factory=dict)
    bitline: Loop | None = None
    pin_tiles: tuple[Loop, ...] = ()
    pin_arrays: tuple[Loop, ...] = ()
    pin_serial: tuple[Loop, ...] = ()
    broadcast_mode: str = "systolic"

    def split(self, lp: Loop, factor: int) -> tuple[Loop, Loop]:
        """Split ``lp`` into ``(lp.o, lp.i)`` with ``lp.i`` of extent ``factor``."""
        if lp not in self.leaves:
            raise CompileError(f"split: {lp.name} is not a loop of this schedule (already split?)")
        factor = int(factor)
        if factor < 1 or lp.extent % factor:
            raise CompileError(f"split: factor {factor} does not divide the extent {lp.extent} of {lp.name}")
        o = Loop(lp.extent // factor, lp.name + ".o", lp.reduce)
        i_ = Loop(factor, lp.name + ".i", lp.reduce)
        k = self.leaves.index(lp)
        self.leaves[k:k + 1] = [o, i_]
        for orig, comb in self.value.items():
            c = comb.pop(lp, 0)
            if c:
                comb[o] = c * factor
                comb[i_] = c
        if self.bitline is lp:
            raise CompileError("split the bitline loop before marking it with bitlines()")
        return o, i_

    def reorder(self, *loops: Loop) -> None:
        """Put these loops, in this order, at the positions the same loops occupy now."""
        if len(set(loops)) != len(loops) or any(lp not in self.leaves for lp in loops):
            raise CompileError("reorder: every loop must be a distinct loop of this schedule")
        pos = sorted(self.leaves.index(lp) for lp in loops)
        for p, lp in zip(pos, loops):
            self.leaves[p] = lp

    def bitlines(self, lp: Loop, width: int | None = None) -> Loop:
        """Run ``lp`` across the bitlines of each CRAM (innermost data-parallel loop).

        With ``width`` (e.g. the CRAM's columns), a loop longer than ``width`` is first split by
        it and only its inner part goes on the bitlines.  Returns the loop placed there."""
        if lp not in self.leaves:
            raise CompileError(f"bitlines: {lp.name} is not a loop of this schedule")
        if width is not None and lp.extent > width:
            lp = self.split(lp, width)[1]
        self.bitline = lp
        return lp

    def tiles(self, *loops: Loop) -> None:
        """Pin these loops to the tile level (the search keeps them fully across tiles)."""
        self.pin_tiles = tuple(loops)

    def arrays(self, *loops: Loop) -> None:
        """Pin these loops to the CRAM-array level."""
        self.pin_arrays = tuple(loops)

    def serial(self, *loops: Loop) -> None:
        """Keep these loops serial in the tile controller (neither tiles nor CRAMs)."""
        self.pin_serial = tuple(loops)

    def broadcast(self, mode: str) -> None:
        """Inter-tile broadcast of shared operands: ``"systolic"`` or ``"one_to_many"``."""
        if mode not in ("systolic", "one_to_many"):
            raise CompileError(f"broadcast mode must be systolic or one_to_many, got {mode!r}")
        self.broadcast_mode = mode


def reductions(expr: Expr) -> list[Reduce]:
    """Reduce nodes of an expression tree (outermost first)."""
    out: list[Reduce] = []

    def walk(e: Expr) -> None:
        if isinstance(e, Reduce):
            out.append(e)
        for child in children(e):
            walk(child)
    walk(expr)
    return out


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, (Cast, Shift)):
        return (e.expr,)
    if isinstance(e, Bin):
        return (e.a, e.b)
    if isinstance(e, Select):
        return (e.mask, e.a, e.b)
    if isinstance(e, Reduce):
        return (e.expr,)
    return ()


def accesses(expr: Expr) -> list[Access]:
    out: list[Access] = []

    def walk(e: Expr) -> None:
        if isinstance(e, Access):
            out.append(e)
        for c in children(e):
            walk(c)
    walk(expr)
    return out


def schedule(op: Compute) -> Schedule:
    """A schedule over the compute's axes followed by its reduction loops (validated)."""
    reds = reductions(op.expr)
    if len(reds) > 1 or (reds and reds[0] is not op.expr):
        raise CompileError(f"compute {op.name}: one reduction, at the top of the expression, is supported")
    red_loops = reds[0].loops if reds else ()
    used = {lp for a in accesses(op.expr) for lp in a.loops()}
    for lp in used:
        if lp.reduce and lp not in red_loops:
            raise CompileError(f"compute {op.name}: reduction loop {lp.name} is not reduced")
        if not lp.reduce and lp not in op.axes:
            raise CompileError(f"compute {op.name}: loop {lp.name} is not an axis of the output")
    leaves = list(op.axes) + list(red_loops)
    return Schedule(op, leaves, {lp: {lp: 1} for lp in leaves})
