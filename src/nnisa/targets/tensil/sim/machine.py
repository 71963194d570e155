"""Tensil machine state and the readable reference interpreter (spec §7).

State (§7.1): local, accumulators, DRAM0/DRAM1, the array weights ``W`` ((N+1) × N, row 0 is
the bias), the SIMD registers, the Configure registers and (extension) the lookup tables.  Raw
integers are stored as int32 (every fixed type fits), FLOAT32 as float32.  DRAMs are allocated
up to the highest page (4096 vectors) a program or model touches, never the full 2^21 vectors.

The reference interpreter executes one instruction at a time with numpy on whole vectors; the
fast path (:mod:`.fast`) must give identical state.
"""

from __future__ import annotations

import numpy as np

from ....core.errors import SimError
from ..config import TensilArch
from ..isa import (CONFIGURE, DATAMOVE, DATAMOVE_KINDS, LOADLUT, LOADWEIGHTS, LOOKUP, MATMUL, NOP, RAW, SIMD,
                   SIMD_OPS)
from ..numerics import Numeric
from ..program import TensilProgram

PAGE = 4096
MEMS = ("local", "acc", "dram0", "dram1")


class Machine:
    """The state of one TCU; persists across runs (Tensil's ``-r`` does not reset it)."""

    def __init__(self, arch: TensilArch) -> None:
        arch.check_supported()
        self.arch = arch
        self.num = Numeric.of(arch)
        self.n = arch.array_size
        dt = np.float32 if self.num.is_float else np.int32
        self.dtype = dt
        self.local = np.zeros((arch.local_depth, self.n), dt)
        self.acc = np.zeros((arch.accumulator_depth, self.n), dt)
        self.dram0 = np.zeros((0, self.n), dt)
        self.dram1 = np.zeros((0, self.n), dt)
        self.weights = np.zeros((self.n + 1, self.n), dt)
        self.regs = np.zeros((max(arch.simd_registers_depth, 1), self.n), dt)
        self.config = {}
        lut = arch.lut
        self.lut = None if lut is None else np.zeros((lut[0] + 1, lut[1]), dt)
        self.executed = 0

    # ------------------------------------------------------------------ memory
    def ensure(self, mem: str, end: int) -> None:
        """Make DRAM ``mem`` hold at least ``end`` vectors (page-rounded, bounded by its depth)."""
        if mem not in ("dram0", "dram1"):
            return
        cur = getattr(self, mem)
        if end <= len(cur):
            return
        depth = self.arch.depth(mem)
        if end > depth:
            raise SimError(f"{mem} address {end - 1} ≥ {mem}_depth {depth}")
        size = min(depth, -(-end // PAGE) * PAGE)
        grown = np.zeros((size, self.n), self.dtype)
        grown[:len(cur)] = cur
        setattr(self, mem, grown)

    def memory(self, mem: str) -> np.ndarray:
        return getattr(self, mem)

    def write_vectors(self, mem: str, base: int, raw: np.ndarray) -> None:
        raw = np.asarray(raw).reshape(-1, self.n)
        end = base + len(raw)
        if end > self.arch.depth(mem):
            raise SimError(f"{len(raw)} vectors at {mem}[{base}] exceed {mem} depth {self.arch.depth(mem)}")
        self.ensure(mem, end)
        self.memory(mem)[base:end] = raw

    def read_vectors(self, mem: str, base: int, count: int) -> np.ndarray:
        end = base + count
        if end > self.arch.depth(mem):
            raise SimError(f"{count} vectors at {mem}[{base}] exceed {mem} depth {self.arch.depth(mem)}")
        self.ensure(mem, end)
        return self.memory(mem)[base:end].copy()

    # ------------------------------------------------------------------ reference interpreter
    def run_reference(self, prog: TensilProgram) -> None:
        """Execute ``prog`` instruction by instruction (readable path)."""
        check_program(prog, self)
        for i, row in enumerate(prog.rows.tolist()):
            self.step(row, i)
        self.executed += len(prog)

    def step(self, row: tuple, index: int) -> None:
        h, a0, s0, a1, s1, n, sop, sl, sr, sd, reg, val = row
        op, flags = h >> 4, h & 0xF
        num = self.num
        if op == NOP:
            return
        if op == MATMUL:
            count = n + 1
            la = a0 + (np.arange(count) << s0)
            aa = a1 + (np.arange(count) << s1)
            x = np.zeros((count, self.n), self.dtype) if flags & 2 else self.local[la]
            y = np.broadcast_to(self.weights[0], (count, self.n))
            for k in range(self.n):  # sequential, bias first (§7.3)
                y = num.mac(x[:, k:k + 1], self.weights[k + 1][None, :], y, "MatMul")
            if flags & 1:
                y = num.plus(self.acc[aa], y, "MatMul")
            self.acc[aa] = y
        elif op == LOADWEIGHTS:
            count = a1 + 1
            v = np.zeros((count, self.n), self.dtype) if flags else self.local[a0 + (np.arange(count) << s0)]
            new = np.empty_like(self.weights)
            k = min(count, self.n + 1)
            new[:k] = v[:k]
            new[k:] = self.weights[:self.n + 1 - k]
            self.weights = new
        elif op == DATAMOVE:
            count = n + 1
            la = a0 + (np.arange(count) << s0)
            _, mem, arrow = DATAMOVE_KINDS[flags]
            oa = a1 + (np.arange(count) << s1)
            other = self.memory(mem)
            if arrow == "<-":
                self.local[la] = other[oa]
            elif arrow == "->":
                other[oa] = self.local[la]
            else:
                other[oa] = num.plus(other[oa], self.local[la], "DataMove")
        elif op == SIMD:
            self._simd(flags, sop, sl, sr, sd, a0, a1)
        elif op == CONFIGURE:
            self.config[reg] = val
        elif op == LOADLUT:
            t = a1
            depth = self.lut.shape[1]
            nv = -(-depth // self.n)
            vec = self.local[a0 + (np.arange(nv) << s0)].reshape(-1)
            self.lut[t] = vec[:depth]
        else:  # pragma: no cover - check_program rejects these
            raise SimError(f"instruction {index}: cannot execute header 0x{h:x}")

    def _simd(self, flags, sop, sl, sr, sd, wa, ra) -> None:
        num = self.num
        zero = np.zeros(self.n, self.dtype)
        inp = self.acc[ra].copy() if flags & 1 else zero
        left = inp if sl == 0 else self.regs[sl - 1].copy()
        right = inp if sr == 0 else self.regs[sr - 1].copy()
        if sop == LOOKUP:
            self._lookup(left, sd, flags, wa)
            return
        res = simd_op(num, sop, left, right, inp).astype(self.dtype)
        if sd != 0 and sop != 0:
            self.regs[sd - 1] = res
        if flags & 2:
            self.acc[wa] = num.plus(self.acc[wa], res, "SIMD") if flags & 4 else res

    def _lookup(self, x, sd, flags, wa) -> None:
        num = self.num
        keys = self.lut[0]
        if np.any(np.diff(keys.astype(np.int64)) < 0):
            raise SimError("Lookup: key table 0 is not non-decreasing")
        i = np.searchsorted(keys, x, side="right") - 1
        i = np.maximum(i, 0)
        diff = num.minus(x, keys[i], "SIMD").astype(self.dtype)
        if sd != 0:
            self.regs[sd - 1] = diff
            for t in range(1, self.lut.shape[0]):
                self.regs[sd - 1 + t] = self.lut[t][i]
        if flags & 2:
            self.acc[wa] = num.plus(self.acc[wa], diff, "SIMD") if flags & 4 else diff


def simd_op(num: Numeric, op: int, L: np.ndarray, R: np.ndarray, inp: np.ndarray) -> np.ndarray:
    """One SIMD ALU op on whole vectors (RTL semantics, spec §7.4)."""
    one = num.one
    zero = np.zeros_like(L)
    name = SIMD_OPS[op]
    if name == "NoOp":
        return inp
    if name == "Zero":
        return zero
    if name == "Move":
        return L
    if name == "Not":
        return np.where(L == 0, one, 0)
    if name == "And":
        return np.where((L != 0) & (R != 0), one, 0)
    if name == "Or":
        return np.where((L != 0) | (R != 0), one, 0)
    if name == "Increment":
        return num.plus(L, one, "SIMD")
    if name == "Decrement":
        return num.minus(L, one, "SIMD")
    if name == "Add":
        return num.plus(L, R, "SIMD")
    if name == "Subtract":
        return num.minus(L, R, "SIMD")
    if name == "Multiply":
        return num.times(L, R, "SIMD")
    if name == "Abs":  # the RTL negate does not widen: the most negative code stays
        if num.is_float:
            return np.abs(L)
        a = np.abs(L.astype(np.int64))
        return np.where(a > num.hi, num.lo, a)
    if name == "GreaterThan":
        return np.where(L > R, one, 0)
    if name == "GreaterThanEqual":
        return np.where(L >= R, one, 0)
    if name == "Min":
        return np.minimum(L, R)
    if name == "Max":
        return np.maximum(L, R)
    raise SimError(f"SIMD op {op} is not executable")


# ---------------------------------------------------------------------------- static checks
def check_program(prog: TensilProgram, machine: Machine) -> None:
    """Reject raw words, disabled extensions and runs past a memory's depth (§7.5); grow DRAMs."""
    rows = prog.rows
    if prog.raw:
        from ..formats.binary import decode_word
        i = min(prog.raw)
        _, why = decode_word(prog.raw[i], prog.isa)
        B = prog.layout.instruction_bytes
        hexb = prog.raw[i].to_bytes(B, "little").hex(" ")
        raise SimError(f"instruction {i} ({hexb}) cannot be executed: {why}")
    for mem, end in program_extents(prog).items():
        depth = machine.arch.depth(mem)
        last, idx = end
        if last >= depth:
            raise SimError(f"instruction {idx}: {mem} address {last} ≥ {_bound(mem)} {depth} (end of a strided run)")
        machine.ensure(mem, last + 1)
    lut = machine.arch.lut
    if lut is not None:
        lk = np.flatnonzero(((rows["hdr"] >> 4) == SIMD) & (rows["sop"] == LOOKUP)
                            & (rows["sd"] != 0) & (rows["sd"] + lut[0] > machine.arch.simd_registers_depth))
        if len(lk):
            raise SimError(f"instruction {int(lk[0])}: Lookup destination R{int(rows['sd'][lk[0]])} + "
                           f"{lut[0]} tables exceeds simd_registers_depth {machine.arch.simd_registers_depth}")


def _bound(mem: str) -> str:
    return "accumulator_depth" if mem == "acc" else f"{mem}_depth"


def program_extents(prog: TensilProgram) -> dict[str, tuple[int, int]]:
    """Memory → (highest vector address any instruction touches, index of that instruction)."""
    rows = prog.rows
    hdr = rows["hdr"].astype(np.int64)
    op, flags = hdr >> 4, hdr & 0xF
    n = rows["n"].astype(np.int64)
    a0, s0, a1, s1 = (rows[c].astype(np.int64) for c in ("a0", "s0", "a1", "s1"))
    lut = prog.arch.lut
    ends: dict[str, list[np.ndarray]] = {m: [] for m in MEMS}
    idx_all = np.arange(len(rows))

    def add(mem, mask, last):
        if mask.any():
            ends[mem].append(np.stack([np.where(mask, last, -1), idx_all]))

    mm = op == MATMUL
    add("local", mm & (flags & 2 == 0), a0 + (n << s0))
    add("acc", mm, a1 + (n << s1))
    lw = (op == LOADWEIGHTS) & (flags == 0)
    add("local", lw, a0 + (a1 << s0))
    dm = op == DATAMOVE
    add("local", dm, a0 + (n << s0))
    for kind, (_, mem, _) in DATAMOVE_KINDS.items():
        add(mem, dm & (flags == kind), a1 + (n << s1))
    sm = op == SIMD
    add("acc", sm & (flags & 2 != 0), a0)
    add("acc", sm & (flags & 1 != 0), a1)
    if lut is not None:
        nv = -(-lut[1] // prog.arch.array_size)
        add("local", op == LOADLUT, a0 + ((nv - 1) << s0))
    out = {}
    for mem, parts in ends.items():
        if not parts:
            continue
        cat = np.concatenate(parts, axis=1)
        j = int(np.argmax(cat[0]))
        if cat[0, j] >= 0:
            out[mem] = (int(cat[0, j]), int(cat[1, j]))
    return out


__all__ = ["Machine", "simd_op", "check_program", "program_extents", "RAW", "CONFIGURE"]
