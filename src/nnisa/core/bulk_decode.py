"""The fast path of :meth:`ISA.decode_array` for words of up to 64 bits.

The readable reference (:meth:`ISA.decode_array_reference`) loops over the opcodes present and
scatters each instruction's fields into the structured rows with fancy indexing; on millions of
words (PIMCOMP-NN's ResNet-18: 3.1 M) that scatter is most of a ``.nnpi`` load.  This path
computes the same rows from per-opcode tables, in blocks of words whose rows stay in the cache:

* **entries**: every distinct field layout ``(column, bits, signed)`` of the table, with the set
  of opcodes that use it;
* **dense** entries (their opcodes are a large share of the words, estimated on a sample) go in groups of
  entries with disjoint bits; a group's per-opcode mask keeps, in each word, only the bits of the
  group's entries that the word's instruction uses, so a column is one shift expression on the
  masked word (0 where the instruction does not use it) with no per-column gating;
* **sparse** entries (rare opcodes: ``setbw``, ``send``, ``mvmul``...) are decoded on the few
  words that use them and scattered into the block;
* checks: one per-opcode mask test per block (the reserved bits of a known opcode, every bit of
  an unknown one).  Any failure re-runs the reference decoder, so error messages (which name the
  first offending word of the smallest bad opcode) stay exactly the reference's.

When the ahead-of-time compiled kernel is available (:mod:`nnisa.core.native`; never compiled
on the spot: a numba import would cost more than the numpy blocks), :func:`_decode_rows` does the
same per word from CSR tables of the same entries (each opcode's layouts, the opcode field among
them), writing each field's low bytes into its column (the same wrap as numpy's cast); PIMCOMP-NN's
ResNet-18 (3.1 M words) decodes ~10x faster so.

Tests (tests/core/test_bulk_decode.py) check this path against the reference on random words of
every ISA that uses it, errors included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .native import kernel, use_native
from .parallel import map_in_threads, worth_threads

#: words per block: the block's rows (2 MB for PIM's 66-byte rows) and temporaries stay in the cache
BLOCK = 32768
#: an opcode set used by fewer than this share of the words is decoded sparsely
SPARSE_SHARE = 1 / 8
#: every SAMPLE_STEP-th word estimates the opcode shares
SAMPLE_STEP = 61
#: use the compiled kernel when :func:`~nnisa.core.native.use_native` says so (the native module
#: has it, or ``use_jit`` forced the JIT: warm-ups and tests); False: always the numpy blocks (tests)
KERNEL = True


class _Entry:
    """One field layout of one column and the opcodes (a boolean table) that use it."""

    __slots__ = ("column", "lo", "width", "signed", "ops", "mask")

    def __init__(self, column: str, lo: int, width: int, signed: bool, ops: np.ndarray):
        self.column, self.lo, self.width, self.signed, self.ops = column, lo, width, signed, ops
        self.mask = ((1 << width) - 1) << lo

    def extract(self, w: np.ndarray) -> np.ndarray:
        """The field in the uint64 words ``w`` as int64 (sign-extended when signed); the other
        bits of ``w`` may hold anything (they are shifted or masked out)."""
        hi = self.lo + self.width - 1
        if self.signed:
            if hi == 63:
                return w.view(np.int64) >> np.int64(self.lo)
            return (w << np.uint64(63 - hi)).view(np.int64) >> np.int64(64 - self.width)
        if hi == 63:
            return (w >> np.uint64(self.lo)).view(np.int64)
        if self.lo == 0:
            return (w & np.uint64(self.mask)).view(np.int64)
        return ((w >> np.uint64(self.lo)) & np.uint64((1 << self.width) - 1)).view(np.int64)


class DecodePlan:
    """The per-opcode tables of one ISA (built once, cached on the ISA by :func:`plan_of`)."""

    def __init__(self, isa: Any):
        of = isa.opcode_field
        self.usable = not isa.wide and not of.signed and of.width <= 16
        if not self.usable:
            return
        n = 1 << of.width
        self.n_ops = n
        self.op_shift, self.op_mask = np.uint64(of.lo), np.uint64((1 << of.width) - 1)
        self.known = np.zeros(n, bool)
        self.reserved = np.zeros(n, np.uint64)
        layouts: dict[tuple, np.ndarray] = {}
        for s in isa.instrs:
            if not 0 <= s.opcode < n:
                continue  # a word can never carry it: the reference never decodes it either
            self.known[s.opcode] = True
            self.reserved[s.opcode] = s.format.reserved_mask
            for f in s.format.fields:
                key = (f.name, f.lo, f.width, f.signed)
                layouts.setdefault(key, np.zeros(n, bool))[s.opcode] = True
        # the per-word check: reserved bits of a known opcode, every bit of an unknown one (a word
        # whose opcode 0 is unknown and whose bits are all 0 is tested apart)
        unknown = np.uint64(2 ** 64 - 1)
        self.reserved[~self.known] = unknown
        self.no_reserved = np.where(self.known, np.uint64(0), unknown)
        order = {c: i for i, c in enumerate(isa.columns)}
        self.entries = [_Entry(c, lo, w, sg, ops)
                        for (c, lo, w, sg), ops in sorted(layouts.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))]
        self.csr = self._csr(isa)

    def _csr(self, isa: Any) -> tuple | None:
        """The kernel's tables: per opcode (rows ``start[op]:start[op + 1]``) its layouts as
        ``(lo, width, signed, byte offset in the row, column bytes)``, the opcode field first;
        None when a column is not a little-endian integer (the numpy blocks handle it)."""
        dt = isa.dtype
        if any(dt.fields[c][0].kind not in "iu" or dt.fields[c][0].byteorder == ">" for c in dt.names):
            return None
        of = isa.opcode_field
        per_op: list[list[tuple]] = [[] for _ in range(self.n_ops)]
        for op in np.flatnonzero(self.known).tolist():
            per_op[op].append((of.lo, of.width, 0, isa.op_column))
        for e in self.entries:
            for op in np.flatnonzero(e.ops).tolist():
                per_op[op].append((e.lo, e.width, int(e.signed), e.column))
        start = np.zeros(self.n_ops + 1, np.int64)
        start[1:] = np.cumsum([len(x) for x in per_op])
        rows = [(lo, w, sg, dt.fields[c][1], dt.fields[c][0].itemsize) for x in per_op for lo, w, sg, c in x]
        table = np.array(rows, np.int64).reshape(-1, 5)
        return start, np.ascontiguousarray(table), self.known.astype(np.uint8)

    def arrange(self, counts: np.ndarray, n_words: int):
        """Split the entries used by the words (``counts``: words per opcode) into dense groups
        ``[(mask table, [entries])]`` and sparse sets ``[(opcode table, [entries])]``."""
        groups: list[tuple[int, np.ndarray, list[_Entry]]] = []
        sparse: dict[bytes, tuple[np.ndarray, list[_Entry]]] = {}
        for e in self.entries:
            if counts[e.ops].sum() < SPARSE_SHARE * n_words:
                sparse.setdefault(e.ops.tobytes(), (e.ops, []))[1].append(e)
                continue
            for k, (bits, table, members) in enumerate(groups):
                if not bits & e.mask:
                    groups[k] = (bits | e.mask, table, members)
                    break
            else:
                k = len(groups)
                groups.append((e.mask, np.zeros(self.n_ops, np.uint64), []))
            table, members = groups[k][1], groups[k][2]
            table[e.ops] |= np.uint64(e.mask)
            members.append(e)
        return [(t, m) for _, t, m in groups], list(sparse.values())


def plan_of(isa: Any) -> DecodePlan:
    plan = isa.__dict__.get("_decode_plan")
    if plan is None:
        plan = isa.__dict__["_decode_plan"] = DecodePlan(isa)
    return plan


def decode_words(isa: Any, words: np.ndarray, lenient: bool) -> np.ndarray | None:
    """The rows of ``words`` (an array of up to 64-bit words), or None when a word is bad (unknown
    opcode, reserved bits unless ``lenient``) or the ISA does not fit this path: the caller then
    runs the reference decoder, which raises the exact error."""
    plan = plan_of(isa)
    if not plan.usable:
        return None
    words = np.asarray(words)
    if words.ndim != 1:
        return None
    n = len(words)
    out = isa.empty(n)
    if n == 0:
        return out
    if plan.csr is not None and KERNEL:
        w64 = np.ascontiguousarray(words, dtype=np.uint64)
        start, table, known = plan.csr
        check = plan.no_reserved if lenient else plan.reserved
        flat = out.view(np.uint8)
        args = (w64, flat, np.int64(0), np.int64(n), np.int64(out.itemsize), np.int64(plan.op_shift),
                np.int64(plan.op_mask), check, known, start, table)
        if use_native(_decode_rows, args):
            half = n // 2 if worth_threads(n, PARALLEL_MIN) else n
            spans = [(0, half), (half, n)] if half < n else [(0, n)]
            bad = map_in_threads(lambda ab: _decode_rows(w64, flat, np.int64(ab[0]), np.int64(ab[1]), *args[4:]),
                                 spans, "decode", len(spans) > 1)
            return out if all(b < 0 for b in bad) else None
    # which layouts are dense is only a matter of speed: estimated on a sample of the words
    sample = words[::SAMPLE_STEP].astype(np.uint64)
    groups, sparse = plan.arrange(np.bincount(((sample >> plan.op_shift) & plan.op_mask).astype(np.intp),
                                              minlength=plan.n_ops), len(sample))
    block = _Block(plan, groups, sparse, plan.no_reserved if lenient else plan.reserved, out[isa.op_column])

    def run(starts: range) -> bool:
        for a in starts:
            w = words[a:a + BLOCK]
            if not block.decode(w if w.dtype == np.uint64 else w.astype(np.uint64), out, a):
                return False
        return True
    starts = range(0, n, BLOCK)
    # two threads for a large program, half of the blocks each: numpy's loops release the GIL,
    # and the first touch of the rows' memory (the larger part of the time) is shared out too
    half = len(starts) // 2
    ok = map_in_threads(run, (starts[:half], starts[half:]), "decode", worth_threads(n, PARALLEL_MIN))
    return out if all(ok) else None


#: programs with at least this many words are decoded by two threads
PARALLEL_MIN = 1 << 20


class _Block:
    """Decodes one block of words into its rows (the tables of one :func:`decode_words` call)."""

    def __init__(self, plan: DecodePlan, groups: list, sparse: list, check: np.ndarray, op_col: np.ndarray):
        self.plan, self.groups, self.sparse, self.check, self.op_col = plan, groups, sparse, check, op_col
        self.zero_unknown = not plan.known[0]
        self.rare = np.zeros(plan.n_ops, bool)
        for table, _ in sparse:
            self.rare |= table

    def decode(self, w: np.ndarray, out: np.ndarray, a: int) -> bool:
        """Rows ``a …`` of ``out`` from the uint64 words ``w``; False when a word is bad."""
        plan = self.plan
        op = ((w >> plan.op_shift) & plan.op_mask).astype(np.intp)
        if np.bitwise_and(w, self.check[op]).any() or (self.zero_unknown and not op.all()):
            return False
        rows = out[a:a + len(w)]
        self.op_col[a:a + len(w)] = op
        values: dict[str, np.ndarray] = {}
        for table, members in self.groups:
            kept = w & table[op]
            for e in members:
                v = e.extract(kept)
                prev = values.get(e.column)
                values[e.column] = v if prev is None else prev + v
        for c, v in values.items():
            rows[c] = v
        if self.sparse:
            at = np.flatnonzero(self.rare[op])
            if len(at):
                rare_ops, rare_words = op[at], w[at]
                for table, members in self.sparse:
                    sel = table[rare_ops]
                    idx, sub = at[sel], rare_words[sel]
                    for e in members:
                        col = rows[e.column]
                        col[idx] = e.extract(sub).astype(col.dtype)  # cast first: a faster scatter
        return True


@kernel(cache=True, nogil=True)
def _decode_rows(words, out, a, b, rowsize, op_shift, op_mask, check, known, start, table):
    """Rows ``a:b`` of ``out`` (the rows' bytes) from ``words``; -1, or the index of the first bad
    word (unknown opcode, or a bit of ``check[op]`` set)."""
    for i in range(a, b):
        w = words[i]
        op = (w >> np.uint64(op_shift)) & np.uint64(op_mask)
        if known[op] == 0 or (w & check[op]) != 0:
            return i
        base = i * rowsize
        for e in range(start[op], start[op + 1]):
            lo = table[e, 0]
            width = table[e, 1]
            v = w >> np.uint64(lo)
            if width < 64:
                m = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
                v &= m
                if table[e, 2] != 0 and (v >> np.uint64(width - 1)) != 0:
                    v |= ~m
            _store(out, base + table[e, 3], table[e, 4], v)
    return -1


@kernel(cache=True, nogil=True, inline="always")
def _store(out, at, size, v):
    """The low ``size`` bytes of ``v`` at ``out[at:]``, little-endian (one branch per size: the
    compiler merges each branch's byte stores into one store)."""
    if size == 4:
        out[at] = np.uint8(v & np.uint64(255))
        out[at + 1] = np.uint8((v >> np.uint64(8)) & np.uint64(255))
        out[at + 2] = np.uint8((v >> np.uint64(16)) & np.uint64(255))
        out[at + 3] = np.uint8((v >> np.uint64(24)) & np.uint64(255))
    elif size == 2:
        out[at] = np.uint8(v & np.uint64(255))
        out[at + 1] = np.uint8((v >> np.uint64(8)) & np.uint64(255))
    elif size == 1:
        out[at] = np.uint8(v & np.uint64(255))
    else:
        for k in range(size):
            out[at + k] = np.uint8(v & np.uint64(255))
            v >>= np.uint64(8)
