"""DAIS program model: dtype utilities, the immutable columnar :class:`Program`, the
:class:`ProgramBuilder`, static validation and statistics (spec §2, §5.6, §6.3).
"""

from __future__ import annotations

import bisect
import copy
import functools
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from . import isa
from .errors import (DaisLintWarning, DaisRangeWarning, DaisUndefinedWarning, DaisValidationError,
                     DaisWidthWarning)


class Op(NamedTuple):
    """One op record, in binary field order."""

    opcode: int
    id0: int
    id1: int
    data: int
    k: int
    I: int  # noqa: E741 - the spec's name
    f: int


# ---------------------------------------------------------------------------------------------
# dtype utilities (§2.3)
# ---------------------------------------------------------------------------------------------

def minimal_kif(qmin, qmax, step) -> tuple[int, int, int]:
    """The smallest ``(k, I, f)`` holding the interval ``[qmin, qmax]`` with resolution ``step``.

    Exact for Python ints, floats and Fractions; ``step`` must be a power of two.
    """
    if type(qmin) is int and type(qmax) is int and step == 1 and type(step) is int:  # integers: no Fractions
        if qmin == 0 and qmax == 0:
            return (0, 0, 0)
        return (1 if qmin < 0 else 0, (max(-qmin, qmax + 1) - 1).bit_length(), 0)
    qmin, qmax, step = Fraction(qmin), Fraction(qmax), Fraction(step)
    if qmin == 0 and qmax == 0:
        return (0, 0, 0)
    if step <= 0 or (step.numerator & (step.numerator - 1)) or (step.denominator & (step.denominator - 1)):
        raise ValueError(f"step {step} is not a power of two")
    f = step.denominator.bit_length() - 1 if step < 1 else -(step.numerator.bit_length() - 1)
    k = 1 if qmin < 0 else 0
    a, b = round(qmin / step), round(qmax / step)
    n = max(abs(a), b + 1)
    return (k, (n - 1).bit_length() - f, f)


@functools.lru_cache(maxsize=4096)
def kif_to_qint(k: int, i: int, f: int) -> tuple[Fraction, Fraction, Fraction]:
    """Full range ``(min, max, step)`` of a dtype (exact Fractions; memoised: programs use few dtypes)."""
    if k + i + f <= 0:
        return (Fraction(0), Fraction(0), Fraction(1))
    step = Fraction(2) ** -f
    return (-k * Fraction(2) ** i, Fraction(2) ** i - step, step)


@functools.lru_cache(maxsize=4096)
def qint_floats(k: int, i: int, f: int) -> tuple[float, float, float]:
    """:func:`kif_to_qint` as floats (memoised)."""
    return tuple(float(v) for v in kif_to_qint(k, i, f))


def int_bounds(k: int, w: int) -> tuple[int, int]:
    """Integer range of a ``w``-bit value (signed if ``k``)."""
    if w <= 0:
        return (0, 0)
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if k else (0, (1 << w) - 1)


def _s64(x: int) -> int:
    """Python int → int64 two's complement value."""
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


# ---------------------------------------------------------------------------------------------
# Program
# ---------------------------------------------------------------------------------------------

#: per-program caches kept in the instance ``__dict__`` (not dataclass fields)
_CACHES = ("_stats", "_interpreters")


@dataclass(frozen=True, eq=False)
class Program:
    """An immutable DAIS program (columnar arrays; spec §2.5).

    Build one with :class:`ProgramBuilder` or :meth:`from_arrays` (both validate).  ``meta`` may
    hold ``qint`` (per-op ``(min, max, step)`` or ``None``), ``latency``, ``cost``,
    ``adder_size`` and ``carry_size``; it never affects execution.
    """

    spec_version: int | None
    firmware_version: int
    n_in: int
    n_out: int
    inp_shifts: np.ndarray
    out_idxs: np.ndarray
    out_shifts: np.ndarray
    out_negs: np.ndarray
    opcode: np.ndarray
    id0: np.ndarray
    id1: np.ndarray
    data: np.ndarray
    k: np.ndarray
    I: np.ndarray  # noqa: E741
    f: np.ndarray
    tables: tuple = ()
    meta: dict = field(default_factory=dict)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, *, spec_version=1, firmware_version=0, inp_shifts, out_idxs, out_shifts,
                    out_negs, ops, tables=(), meta=None, validate=True, lint=False,
                    file=None, allow_wide=False) -> "Program":
        """Make a program from header arrays and an ``[n_ops, 7]`` (or 8-column raw) op array.

        ``ops`` columns: ``opcode, id0, id1, data, k, I, f`` (int64 data).
        """
        from ...core.jsonsafe import as_int, int_array
        ops = int_array(ops, "ops", file=file, error=DaisValidationError).reshape(-1, 7)
        i32 = dict(lo=-(1 << 31), hi=(1 << 31) - 1, file=file, error=DaisValidationError)
        inp_shifts, out_idxs = int_array(inp_shifts, "inp_shifts", **i32), int_array(out_idxs, "out_idxs", **i32)
        out_shifts, out_negs = int_array(out_shifts, "out_shifts", **i32), int_array(out_negs, "out_negs", **i32)
        tables = [int_array(t, f"table {n}", **i32) for n, t in enumerate(tables)]
        firmware_version = as_int(firmware_version, "firmware_version", lo=0, hi=(1 << 32) - 1, file=file,
                                  error=DaisValidationError)
        if spec_version is not None:
            spec_version = as_int(spec_version, "spec_version", lo=0, hi=(1 << 32) - 1, file=file,
                                  error=DaisValidationError)
        mk = lambda a, dt: np.ascontiguousarray(np.asarray(a, dtype=dt)).reshape(-1)  # noqa: E731
        for name, col in (("opcode", 0), ("id0", 1), ("id1", 2), ("I", 5), ("f", 6)):
            bad = np.nonzero((ops[:, col] < -2**31) | (ops[:, col] >= 2**31))[0]
            if len(bad):
                raise DaisValidationError(f"{name}={ops[bad[0], col]} does not fit int32", file=file,
                                          where=f"op {bad[0]}")
        p = cls(spec_version=spec_version, firmware_version=int(firmware_version),
                n_in=len(inp_shifts), n_out=len(out_idxs),
                inp_shifts=mk(inp_shifts, np.int32), out_idxs=mk(out_idxs, np.int32),
                out_shifts=mk(out_shifts, np.int32), out_negs=mk(out_negs, np.int32),
                opcode=mk(ops[:, 0], np.int32), id0=mk(ops[:, 1], np.int32), id1=mk(ops[:, 2], np.int32),
                data=mk(ops[:, 3], np.int64), k=mk(ops[:, 4], np.int32), I=mk(ops[:, 5], np.int32),
                f=mk(ops[:, 6], np.int32),
                tables=tuple(mk(t, np.int32) for t in tables), meta=dict(meta or {}))
        for a in (p.inp_shifts, p.out_idxs, p.out_shifts, p.out_negs, p.opcode, p.id0, p.id1, p.data,
                  p.k, p.I, p.f, *p.tables):
            a.flags.writeable = False
        if validate:
            validate_program(p, lint=lint, file=file, allow_wide=allow_wide)
        return p

    # -- accessors -----------------------------------------------------------------------
    @property
    def n_ops(self) -> int:
        return len(self.opcode)

    @property
    def ops(self):
        """Iterate :class:`Op` records."""
        for row in zip(*(a.tolist() for a in (self.opcode, self.id0, self.id1, self.data, self.k, self.I,
                                              self.f))):
            yield Op(*row)

    def op(self, i: int) -> Op:
        return Op(int(self.opcode[i]), int(self.id0[i]), int(self.id1[i]), int(self.data[i]),
                  int(self.k[i]), int(self.I[i]), int(self.f[i]))

    def ops_array(self) -> np.ndarray:
        """``[n_ops, 7]`` int64 array of the records."""
        return np.stack([self.opcode, self.id0, self.id1, self.data, self.k, self.I, self.f], axis=1
                        ).astype(np.int64).reshape(-1, 7)

    def width(self) -> np.ndarray:
        return self.k.astype(np.int64) + self.I + self.f

    def data_lo(self) -> np.ndarray:
        return (self.data & 0xFFFFFFFF).astype(np.uint32).view(np.int32)

    def data_hi(self) -> np.ndarray:
        return (self.data >> 32).astype(np.int32)

    def qint(self, i: int) -> tuple:
        """Stored qint of op ``i`` (metadata) or its dtype's full range."""
        q = self.meta.get("qint")
        if q is not None and q[i] is not None:
            return tuple(q[i])
        return qint_floats(int(self.k[i]), int(self.I[i]), int(self.f[i]))

    def levels(self) -> np.ndarray:
        """ASAP depth of each op counting only adders (0/1) and every other non-input op as 1."""
        return _levels(self)

    def stats(self) -> dict[str, Any]:
        """Opcode histogram, adder count and bits, depth, widths (spec §2.5); computed once per
        program (it is immutable), a fresh copy returned each time."""
        return copy.deepcopy(self._cached_stats())

    def stat(self, key: str):
        """One value of :meth:`stats` (ints: no copy of the whole dict; the simulator reads a few per call)."""
        return self._cached_stats()[key]

    def _cached_stats(self) -> dict[str, Any]:
        st = self.__dict__.get("_stats")
        if st is None:
            st = program_stats(self)
            object.__setattr__(self, "_stats", st)  # a cache, not a field (frozen dataclass)
        return st

    def quirk_exposure(self) -> dict[str, list[int]]:
        return quirk_exposure(self)

    def replace(self, **changes) -> "Program":
        """A copy with some fields changed (re-validated)."""
        d = dict(spec_version=self.spec_version, firmware_version=self.firmware_version,
                 inp_shifts=self.inp_shifts, out_idxs=self.out_idxs, out_shifts=self.out_shifts,
                 out_negs=self.out_negs, ops=self.ops_array(), tables=self.tables, meta=self.meta)
        d.update(changes)
        return Program.from_arrays(**d)

    def __getstate__(self) -> dict:  # pickling and copies leave the caches (stats, interpreters) out
        return {k: v for k, v in self.__dict__.items() if k not in _CACHES}

    def __eq__(self, other) -> bool:  # structural equality (metadata ignored)
        if not isinstance(other, Program):
            return NotImplemented
        same = (self.spec_version == other.spec_version and self.firmware_version == other.firmware_version
                and len(self.tables) == len(other.tables))
        arrs = ("inp_shifts", "out_idxs", "out_shifts", "out_negs", "opcode", "id0", "id1", "data", "k",
                "I", "f")
        return same and all(np.array_equal(getattr(self, a), getattr(other, a)) for a in arrs) and all(
            np.array_equal(a, b) for a, b in zip(self.tables, other.tables))

    __hash__ = None

    def zero_width_as_constants(self) -> "Program":
        """A copy with every zero-width op other than an input (its value is always 0) written as
        a one-bit constant 0 at the op's own step (shifts that read it stay defined, §5.8); the
        program itself when it has none.

        The outputs are unchanged; the program is for consumers that cannot express a zero-width
        value: da4ml 0.6.0's Verilog writer declares one as ``wire [-1:0] v`` and reads it as
        ``v[-1:0]``, an out-of-range select that Yosys takes as undefined, so every output cone
        reading it is optimised away.  nnisa's compilers emit such values (the zero constant a
        ``0 ± v·2^s`` accumulator starts from; a quantization of an all-zero range).  A stored
        da4ml ``qint`` of a rewritten op is dropped (it would carry the zero width again).
        """
        z = (self.width() == 0) & (self.opcode != -1)
        if not z.any():
            return self
        ops = self.ops_array()
        ops[z, :5] = (5, -1, -1, 0, 0)
        ops[z, 5] = 1 - ops[z, 6]
        meta = dict(self.meta)
        if meta.get("qint") is not None:
            meta["qint"] = [None if zi else q for q, zi in zip(meta["qint"], z.tolist())]
        return self.replace(ops=ops, meta=meta)

    def prune(self) -> "Program":
        """Explicit dead-code elimination (never implicit, D11)."""
        live = np.zeros(self.n_ops, bool)
        stack = [int(i) for i in self.out_idxs if i >= 0]
        lo = self.data_lo()
        while stack:
            i = stack.pop()
            if live[i]:
                continue
            live[i] = True
            o = int(self.opcode[i])
            if o in isa.USES_ID0:
                stack.append(int(self.id0[i]))
            if o in isa.USES_ID1:
                stack.append(int(self.id1[i]))
            if abs(o) == 6:
                stack.append(int(lo[i]))
        newidx = np.cumsum(live) - 1
        ops = self.ops_array()[live]
        for col in (1, 2):
            used = np.isin(ops[:, 0], list(isa.USES_ID0 if col == 1 else isa.USES_ID1))
            ops[used, col] = newidx[ops[used, col]]
        mux = np.abs(ops[:, 0]) == 6
        if mux.any():
            keys = newidx[ops[mux, 3] & 0xFFFFFFFF]
            ops[mux, 3] = (ops[mux, 3] >> 32 << 32) | (keys & 0xFFFFFFFF)
        outs = np.where(self.out_idxs >= 0, newidx[np.maximum(self.out_idxs, 0)], -1)
        meta = dict(self.meta)
        if meta.get("qint") is not None:
            meta["qint"] = [q for q, keep in zip(meta["qint"], live) if keep]
        return self.replace(ops=ops, out_idxs=outs, meta=meta)


class ProgramBuilder:
    """Incremental construction of a :class:`Program` (validated by :meth:`build`).

    Ops added one at a time are kept as tuples; bulk ops (:meth:`extend_ops` with an array) as
    int64 blocks, so a network's hundreds of thousands of replayed adders never become Python
    tuples.  :meth:`op` reads one op back; :meth:`ops_array` returns them all.
    """

    def __init__(self, n_in: int, spec_version: int = 1, inp_shifts=None):
        self.n_in = n_in
        self.spec_version = spec_version
        self.inp_shifts = list(inp_shifts) if inp_shifts is not None else [0] * n_in
        self._rows: list[tuple] = []            # ops after the last block, one tuple each
        self._blocks: list[np.ndarray] = []     # earlier ops: [r, 7] int64 blocks, in order
        self._starts: list[int] = []            # first slot of each block
        self._n_blocked = 0
        self._qint: dict[int, tuple] = {}
        self.tables: list[np.ndarray] = []
        self._table_index: dict[bytes, int] = {}
        self.outputs: tuple = ([], [], [])

    def __len__(self) -> int:
        return self._n_blocked + len(self._rows)

    def add_op(self, opcode: int, id0: int = -1, id1: int = -1, data: int = 0, dtype=(0, 0, 0),
               qint=None) -> int:
        """Append an op; returns its slot."""
        k, i, f = dtype
        self._rows.append((opcode, id0, id1, _s64(int(data)), int(k), int(i), int(f)))
        slot = self._n_blocked + len(self._rows) - 1
        if qint is not None:
            self._qint[slot] = tuple(float(v) for v in qint)
        return slot

    def extend_ops(self, rows) -> None:
        """Append ops ``(opcode, id0, id1, data, k, I, f)``: a list of tuples of Python ints or an
        ``[r, 7]`` int64 array (kept as a block), ``data`` within int64, no qint: the bulk form of
        :meth:`add_op`."""
        if isinstance(rows, np.ndarray):
            if len(rows):
                self._flush()
                self._starts.append(self._n_blocked)
                self._blocks.append(np.ascontiguousarray(rows, dtype=np.int64).reshape(-1, 7))
                self._n_blocked += len(rows)
        else:
            self._rows.extend(rows)

    def _flush(self) -> None:
        if self._rows:
            self._starts.append(self._n_blocked)
            self._blocks.append(np.array(self._rows, dtype=np.int64).reshape(-1, 7))
            self._n_blocked += len(self._rows)
            self._rows = []

    def op(self, slot: int) -> tuple:
        """Op ``slot`` as a tuple ``(opcode, id0, id1, data, k, I, f)`` of Python ints."""
        if slot < 0:
            slot += len(self)
        if slot >= self._n_blocked:
            return self._rows[slot - self._n_blocked]
        b = bisect.bisect_right(self._starts, slot) - 1
        return tuple(self._blocks[b][slot - self._starts[b]].tolist())

    def ops_array(self, start: int = 0) -> np.ndarray:
        """``[n, 7]`` int64 array of the ops from slot ``start`` on."""
        self._flush()
        if not self._blocks:
            return np.zeros((0, 7), np.int64)
        b = max(0, bisect.bisect_right(self._starts, start) - 1)
        arr = np.concatenate(self._blocks[b:]) if len(self._blocks) > b + 1 else self._blocks[b]
        return arr[start - self._starts[b]:]

    def add_table(self, entries) -> int:
        """Add a lookup table (deduplicated by content); returns its index."""
        arr = np.asarray(entries, dtype=np.int64)
        if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
            raise ValueError("table entries must fit int32")
        arr = arr.astype(np.int32)
        key = arr.tobytes()
        if key not in self._table_index:
            self._table_index[key] = len(self.tables)
            self.tables.append(arr)
        return self._table_index[key]

    def set_outputs(self, idxs, shifts=None, negs=None) -> None:
        n = len(idxs)
        self.outputs = (list(idxs), list(shifts) if shifts is not None else [0] * n,
                        [int(bool(v)) for v in negs] if negs is not None else [0] * n)

    def build(self, **meta) -> Program:
        m = dict(meta)
        ops = self.ops_array()
        if self._qint:
            m["qint"] = [self._qint.get(i) for i in range(len(ops))]
        return Program.from_arrays(spec_version=self.spec_version, inp_shifts=self.inp_shifts,
                                   out_idxs=self.outputs[0], out_shifts=self.outputs[1],
                                   out_negs=self.outputs[2], ops=ops, tables=self.tables, meta=m)


# ---------------------------------------------------------------------------------------------
# validation (§5.6)
# ---------------------------------------------------------------------------------------------

def _first(mask: np.ndarray) -> int | None:
    nz = np.flatnonzero(mask)
    return int(nz[0]) if len(nz) else None


def validate_program(p: Program, *, lint: bool = False, file=None, allow_wide: bool = False) -> None:
    """Raise :class:`DaisValidationError` on the first §5.6 error; warn for UB/width patterns.

    Vectorised (no per-op Python loop) so that 10^5-op programs validate in milliseconds.
    """
    def fail(msg, i=None):
        raise DaisValidationError(msg, file=file, where=None if i is None else f"op {i}")

    n = p.n_ops
    idx = np.arange(n)
    opc = p.opcode
    version = "legacy" if p.spec_version is None else p.spec_version
    if version not in isa.ALLOWED:
        fail(f"unknown spec_version {p.spec_version}")
    bad = _first(~np.isin(opc, list(isa.ALLOWED[version])))
    if bad is not None:
        known = int(opc[bad]) in isa.BY_OPCODE
        fail(f"opcode {int(opc[bad])} {'not allowed in spec_version ' + str(version) if known else 'unknown'}",
             bad)
    inp = opc == -1
    bad = _first(inp & ((p.id0 < 0) | (p.id0 >= p.n_in)))
    if bad is not None:
        fail(f"input index id0={int(p.id0[bad])} out of range [0, {p.n_in})", bad)
    u0 = np.isin(opc, list(isa.USES_ID0))
    bad = _first(u0 & ((p.id0 < 0) | (p.id0 >= idx)))
    if bad is not None:
        fail(f"id0={int(p.id0[bad])} violates causality (must be in [0, {bad}))", bad)
    u1 = np.isin(opc, list(isa.USES_ID1))
    bad = _first(u1 & ((p.id1 < 0) | (p.id1 >= idx)))
    if bad is not None:
        fail(f"id1={int(p.id1[bad])} violates causality (must be in [0, {bad}))", bad)
    lo, hi = p.data_lo().astype(np.int64), p.data_hi().astype(np.int64)
    mux = np.abs(opc) == 6
    bad = _first(mux & ((lo < 0) | (lo >= idx)))
    if bad is not None:
        fail(f"mux key slot {int(lo[bad])} violates causality", bad)
    f = p.f.astype(np.int64)
    fa = np.where(u0, f[np.clip(p.id0, 0, max(n - 1, 0))], 0) if n else f
    fc = np.where(u1, f[np.clip(p.id1, 0, max(n - 1, 0))], 0) if n else f
    if mux.any():
        s0 = f - fa
        s1 = f - fc + hi
        bad = _first(mux & (s0 != 0) & (s1 != 0))
        if bad is not None:
            fail(f"mux shifts s0={int(s0[bad])} and s1={int(s1[bad])} both non-zero", bad)
    lut = opc == 8
    bad = _first(lut & ((lo < 0) | (lo >= len(p.tables))))
    if bad is not None:
        fail(f"table index {int(lo[bad])} out of range (program has {len(p.tables)} tables)", bad)
    bad = _first((np.abs(opc) == 9) & ((lo < 0) | (lo > 2)))
    if bad is not None:
        fail(f"unknown bit unary operation {int(lo[bad])}", bad)
    bad = _first((opc == 10) & (((hi >> 24) & 0xFF) > 2))
    if bad is not None:
        fail(f"unknown bit binary operation {int((hi[bad] >> 24) & 0xFF)}", bad)
    bad = _first((p.k != 0) & (p.k != 1))
    if bad is not None:
        fail(f"sign bit k={int(p.k[bad])} must be 0 or 1", bad)
    w = p.width()
    bad = _first(w < p.k)
    if bad is not None:
        fail(f"width {int(w[bad])} too small for dtype ({int(p.k[bad])},{int(p.I[bad])},{int(p.f[bad])})", bad)
    bad = _first(w > 64)
    if bad is not None and not allow_wide:
        fail(f"width {int(w[bad])} of dtype ({int(p.k[bad])},{int(p.I[bad])},{int(p.f[bad])}) is over 64 bits "
             "(pass allow_wide=True to run it modulo 2^64)", bad)
    bad = _first((p.out_idxs < -1) | (p.out_idxs >= n))
    if bad is not None:
        raise DaisValidationError(f"out_idxs[{bad}]={int(p.out_idxs[bad])} out of range [-1, {n})", file=file)
    # warnings (§5.6): the program still runs, with the §5.8 definitions
    quant = np.isin(opc, list(isa.QUANTIZING))
    bad = _first((w > 64) | (quant & (w >= 63)) | ((p.k == 0) & (w == 64)))
    if bad is not None:
        warnings.warn(f"op {bad}: width {int(w[bad])} is outside the well-defined range", DaisWidthWarning,
                      stacklevel=3)
    const = (opc == 5) & (w < 64)
    if const.any():  # legal (non-quantizing ops may leave their dtype, §7.7) but almost surely a mistake
        ww = np.clip(w, 0, 63)
        half = np.left_shift(np.int64(1), np.clip(np.where(p.k == 1, ww - 1, ww), 0, 62).astype(np.int64))
        lo_c = np.where(p.k == 1, -half, 0)
        hi_c = np.where(ww == 0, 0, half - 1)
        bad = _first(const & ((p.data < lo_c) | (p.data > hi_c)))
        if bad is not None:
            warnings.warn(f"op {bad}: const {int(p.data[bad])} does not fit its dtype ({int(p.k[bad])},"
                          f"{int(p.I[bad])},{int(p.f[bad])}) (checked mode reports it at run time)",
                          DaisRangeWarning, stacklevel=3)
    ub = ((np.abs(opc) == 2) | (np.abs(opc) == 3)) & (f > fa)
    ub |= (opc == 4) & (f < fa)
    if mux.any():
        ub |= mux & (((f - fa) < 0) | ((f - fc + hi) < 0))
    bad = _first(ub)
    if bad is not None:
        warnings.warn(f"op {bad}: shift pattern is undefined in the reference interpreter (§5.8)",
                      DaisUndefinedWarning, stacklevel=3)
    if lint:
        _lint(p, fa, fc, lo, hi, u0, u1)


def _lint(p, fa, fc, lo, hi, u0, u1) -> None:
    opc, f = p.opcode, p.f.astype(np.int64)
    nat = np.maximum(fa, fc - lo)
    checks = [((opc == 0) | (opc == 1)) & (f > nat), (opc == 7) & (f != fa + fc), (opc == 10) & (f != nat),
              ~u0 & (opc != -1) & (p.id0 != -1), ~u1 & (p.id1 != -1),
              ~np.isin(opc, list(isa.USES_DATA)) & (p.data != 0)]
    for c in checks:
        bad = _first(c)
        if bad is not None:
            warnings.warn(f"op {bad}: non-canonical field", DaisLintWarning, stacklevel=4)
    if np.any((p.out_negs != 0) & (p.out_negs != 1)):
        warnings.warn("out_negs not 0/1", DaisLintWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------

def _depths(p: Program) -> tuple[np.ndarray, np.ndarray]:
    """``(levels, adder depth)`` per op: the numba kernel (:mod:`.program_nb`), else the references."""
    from .program_nb import depths, opcode_flags
    ok, lv, ad = depths(p.opcode.astype(np.int64), p.id0.astype(np.int64), p.id1.astype(np.int64),
                        p.data_lo().astype(np.int64), opcode_flags(isa.USES_ID0), opcode_flags(isa.USES_ID1))
    return (lv, ad) if ok else (_levels_py(p), _adder_depth_py(p))


def _levels(p: Program) -> np.ndarray:
    """Adder depth: inputs and constants 0; an op is 1 + max of its operands' depth."""
    return _depths(p)[0]


def _adder_depth(p: Program) -> np.ndarray:
    """Depth counting only adders/subtractors (the DA latency measure)."""
    return _depths(p)[1]


def _levels_py(p: Program) -> np.ndarray:
    """Reference of :func:`_levels` (a plain loop)."""
    n = p.n_ops
    lv = [0] * n  # a list: indexing numpy arrays element by element is several times slower
    opc, a, c, lo = p.opcode.tolist(), p.id0.tolist(), p.id1.tolist(), p.data_lo().tolist()
    u0, u1 = isa.USES_ID0, isa.USES_ID1
    for i in range(n):
        o = opc[i]
        if o == -1 or o == 5:
            continue
        m = lv[a[i]] if o in u0 else 0
        if o in u1:
            m = max(m, lv[c[i]])
        if o == 6 or o == -6:
            m = max(m, lv[lo[i]])
        lv[i] = m + 1
    return np.array(lv, np.int64)


def program_stats(p: Program) -> dict[str, Any]:
    """Static statistics: op mix, adders (0/1), adder bits (Σ width), depth, widths."""
    opc = p.opcode
    w = p.width()
    add = (opc == 0) | (opc == 1)
    hist = {int(o): int(c) for o, c in zip(*np.unique(opc, return_counts=True))}
    mnem = {}
    for o, c in hist.items():
        spec = isa.BY_OPCODE.get(o)
        name = (spec.mnemonic if spec else f"op{o}") + ("-" if o < -1 else "")
        mnem[name] = mnem.get(name, 0) + c
    lv, ad = _depths(p)
    quant = np.isin(opc, list(isa.QUANTIZING))
    return {
        "format": "legacy" if p.spec_version is None else f"v{p.spec_version}",
        "n_in": p.n_in, "n_out": p.n_out, "n_ops": p.n_ops, "n_tables": len(p.tables),
        "opcodes": hist, "op_mix": mnem,
        "n_adders": int(add.sum()), "adder_bits": int(w[add].sum()),
        "depth": int(lv.max()) if len(lv) else 0,
        "adder_depth": int(ad.max()) if p.n_ops else 0,
        "max_width": int(w.max()) if len(w) else 0,
        "max_quant_width": int(w[quant].max()) if quant.any() else 0,
        "n_lut_entries": int(sum(len(t) for t in p.tables)),
    }


def _adder_depth_py(p: Program) -> np.ndarray:
    """Reference of :func:`_adder_depth` (a plain loop)."""
    n = p.n_ops
    d = [0] * n
    opc, a, c, lo = p.opcode.tolist(), p.id0.tolist(), p.id1.tolist(), p.data_lo().tolist()
    u0, u1 = isa.USES_ID0, isa.USES_ID1
    for i in range(n):
        o = opc[i]
        m = 0
        if o in u0:
            m = d[a[i]]
        if o in u1:
            m = max(m, d[c[i]])
        if o == 6 or o == -6:
            m = max(m, d[lo[i]])
        d[i] = m + (1 if o == 0 or o == 1 else 0)
    return np.array(d, np.int64)


def quirk_exposure(p: Program) -> dict[str, list[int]]:
    """Op indices that may differ between default and compat (or da4ml's interpreters), §6.3."""
    opc, k, w = p.opcode, p.k, p.width()
    lo = p.data_lo().astype(np.int64)
    n = p.n_ops
    mux = np.abs(opc) == 6
    keyk = np.where(mux, k[np.clip(lo, 0, max(n - 1, 0))], 1) if n else k
    keyw = np.where(mux, w[np.clip(lo, 0, max(n - 1, 0))], 0) if n else w
    quant = np.isin(opc, list(isa.QUANTIZING))
    f = p.f.astype(np.int64)
    fa = np.where(np.isin(opc, list(isa.USES_ID0)), f[np.clip(p.id0, 0, max(n - 1, 0))], 0) if n else f
    fc = np.where(np.isin(opc, list(isa.USES_ID1)), f[np.clip(p.id1, 0, max(n - 1, 0))], 0) if n else f
    not9 = (np.abs(opc) == 9) & (lo == 0)
    return {
        "Q1": np.flatnonzero(mux & (keyk == 0) & (keyw >= 3)).tolist(),
        "Q2": np.flatnonzero(quant & (k == 1) & (w >= 33)).tolist(),
        "Q3": np.flatnonzero(((opc == 0) | (opc == 1)) & (f > np.maximum(fa, fc - lo))).tolist(),
        "Q4": np.flatnonzero(((np.abs(opc) == 2) | (np.abs(opc) == 3)) & (f > fa)).tolist(),
        "Q6": np.flatnonzero(not9 & ((k == 1) | (opc == -9))).tolist(),
        "Q7": np.flatnonzero(p.inp_shifts != 0).tolist(),
    }


def float_exact(v) -> float:
    """Fraction → float, asserting exactness."""
    x = float(v)
    if Fraction(x) != v:
        raise ValueError(f"{v} is not exactly representable as a float")
    return x


def ilog2(x: Fraction) -> int:
    """log2 of a power of two (exact)."""
    x = Fraction(x)
    return (x.numerator.bit_length() - 1) - (x.denominator.bit_length() - 1)


__all__ = ["Op", "Program", "ProgramBuilder", "minimal_kif", "kif_to_qint", "int_bounds", "validate_program",
           "program_stats", "quirk_exposure"]
