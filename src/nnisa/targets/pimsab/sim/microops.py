"""Bit-level micro-op mode: the bit-serial algorithms run on a bit-plane model of a tile's CRAMs.

A tile is a boolean matrix (wordlines × tile bitlines) with one PE per bitline holding a carry
latch C and a mask latch M (CoMeFa's PE, paper Fig. 5).  A micro-op takes one cycle: it reads up
to two wordlines (one per port), computes in every PE (any two-input logic function, or a full
adder with the carry latch) and writes one wordline, optionally predicated by M or C.  Each
compute instruction is expanded into such a micro-program (:func:`microprogram`); running it
gives the values and a cycle count to check against the word-level semantics
(:mod:`.compute`) and the cost formulas (:mod:`.costs`).

The micro-programs are exact for every precision and signedness.  Their cycle counts equal the
formulas of spec §3.2 for the shapes those formulas describe (destination no wider than the
result the formula computes, e.g. ``add`` with pD ≤ p + 1, ``mult`` of two unsigned p-bit
operands into 2p bits, ``max``/``min`` at one width); wider destinations and signed
multiplications need extra cycles for sign extension, which the official formulas do not charge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....core.errors import UnsupportedError
from ..precision import Precision, decode
from .cram import TileState

SUPPORTED = ("add", "sub", "mult", "mul_const", "max", "min", "and", "or", "xor", "not", "copy", "set",
             "reset", "set_mask", "shift", "cram_local_shf")
ZERO, ONE = -1, -2   # pseudo wordlines: constant 0 / constant 1


@dataclass(frozen=True)
class Uop:
    """One micro-op: ``dst ← f(a, b)`` (``f``: 'tt' truth table, 'add' full adder, 'carry' the C
    latch, 'mask' M ← a, 'move' a shifted by one bitline, 'local' a CRAM-local shuffle, 'nop' a
    controller cycle, 'clear' a carry reset folded into the previous micro-op: no cycle).  ``ia``/``ib`` invert the
    inputs; ``c0`` sets the carry before the op; ``pred``: 0 always, 1 M, 2 C, 3 not C."""

    op: str
    dst: int = ZERO
    a: int = ZERO
    b: int = ZERO
    tt: int = 0          # truth table of (a, b): bit (2a + b)
    ia: bool = False
    ib: bool = False
    c0: int = -1         # -1 keep, 0/1 preset the carry latch
    pred: int = 0
    direction: int = 0


class Operand:
    """Bit j of an operand: its wordline, or the sign/zero extension beyond its width."""

    def __init__(self, row: int, prec: Precision):
        self.row, self.prec = row, prec

    def bit(self, j: int) -> int:
        if j < self.prec.bits:
            return self.row + j
        return self.row + self.prec.bits - 1 if self.prec.signed else ZERO


TT_AND, TT_OR, TT_XOR, TT_A = 0b1000, 0b1110, 0b0110, 0b1100


def _add(dst: Operand | None, a: Operand, b: Operand, lo: int, hi: int, *, sub: bool = False,
         pred: int = 0) -> list[Uop]:
    """Full-adder cycles over bits [lo, hi): dst_j ← a_j + b_j (+ carry; sub: a + ~b + 1); the
    carry latch is preset at bit 0 and carried between bits."""
    return [Uop("add", dst.bit(j) if dst is not None else ZERO, a.bit(j), b.bit(j), ib=sub,
                c0=(1 if sub else 0) if j == 0 else -1, pred=pred) for j in range(lo, hi)]


def microprogram(mn: str, ins: dict, scratch: int) -> list[Uop]:
    """The micro-program of one instruction (``scratch``: first free wordline for temporaries)."""
    if mn not in SUPPORTED:
        raise UnsupportedError(f"no bit-level micro-program for {mn} (micro-op mode covers {', '.join(SUPPORTED)})")
    get = lambda c: decode(ins[c])  # noqa: E731
    pred = ins.get("pred", 0)
    if mn == "set_mask":
        return [Uop("mask", a=ins["ra"], pred=pred)]
    pd = get("pd")
    D = Operand(ins["rd"], pd)
    nd = pd.bits
    if mn in ("set", "reset"):
        return [Uop("tt", D.bit(j), tt=0b1111 if mn == "set" else 0, pred=pred) for j in range(nd)]
    A = Operand(ins["ra"], get("pa"))
    if mn in ("not", "copy"):
        return [Uop("tt", D.bit(j), A.bit(j), tt=TT_A, ia=mn == "not", pred=pred) for j in range(nd)] + \
            [Uop("clear", c0=0)]
    if mn == "shift":  # one bitline per micro-op and wordline: p × d
        d = ins["dist"] + 1
        p = min(A.prec.bits, nd)
        prog = [Uop("move", D.bit(j), A.bit(j), direction=ins["dir"], pred=pred) for j in range(p)]
        for _ in range(d - 1):
            prog += [Uop("move", D.bit(j), D.bit(j), direction=ins["dir"], pred=pred) for j in range(p)]
        return prog + [Uop("tt", D.bit(j), D.bit(p - 1) if pd.signed else ZERO, tt=TT_A, pred=pred)
                       for j in range(p, nd)]
    if mn == "cram_local_shf":  # ColBroadcast: read, drive, write per bit
        p = min(A.prec.bits, nd)
        prog = []
        for j in range(p):
            prog += [Uop("nop"), Uop("nop"), Uop("local", D.bit(j), A.bit(j), tt=ins["shf"], pred=pred)]
        return prog
    if mn == "mul_const":
        return _mul_const(D, A, ins, pred)
    B = Operand(ins["rb"], get("pb"))
    p = min(max(A.prec.bits, B.prec.bits), nd)
    if mn in ("and", "or", "xor"):
        tt = {"and": TT_AND, "or": TT_OR, "xor": TT_XOR}[mn]
        return [Uop("tt", D.bit(j), A.bit(j), B.bit(j), tt=tt, pred=pred) for j in range(nd)] + [Uop("clear", c0=0)]
    if mn in ("add", "sub"):
        prog = _add(D, A, B, 0, p, sub=mn == "sub", pred=pred)
        if nd > p:  # bit p (the formula's +1) and any further sign-extension bits
            prog += _add(D, A, B, p, nd, sub=mn == "sub", pred=pred)
        else:
            prog.append(Uop("nop"))  # the carry out of bit pD-1 stays in the C latch
        return prog
    if mn in ("max", "min"):
        return _max_min(mn, D, A, B, scratch, pred)
    return _mult(D, A, B, scratch, pred)


def _max_min(mn: str, D: Operand, A: Operand, B: Operand, scratch: int, pred: int) -> list[Uop]:
    """copy A → D (pD), invert B → T (q), add A + T + 1 for the carry = (A ≥ B) (q + 1),
    masked overwrite D ← B where the comparison picks B (pD): 4p + 1 at one width."""
    signed = A.prec.signed or B.prec.signed
    # mixed signedness: compare as signed numbers one bit wider (both values fit there)
    q = max(A.prec.bits, B.prec.bits) + (1 if A.prec.signed != B.prec.signed else 0)
    nd = D.prec.bits
    T = Operand(scratch, Precision(1, q))
    prog = [Uop("tt", D.bit(j), A.bit(j), tt=TT_A, pred=pred) for j in range(nd)]
    prog += [Uop("tt", T.bit(j), B.bit(j), tt=TT_A, ia=True) for j in range(q)]
    for j in range(q):  # A + ~B + 1; signed: compare with flipped sign bits
        flip = signed and j == q - 1
        prog.append(Uop("add", ZERO, A.bit(j), T.bit(j), ia=flip, ib=flip, c0=1 if j == 0 else -1))
    prog.append(Uop("nop"))  # carry = (A >= B)
    overwrite = 3 if mn == "max" else 2  # max: take B where not (A >= B); min: where A >= B (B <= A)
    prog += [Uop("tt", D.bit(j), B.bit(j), tt=TT_A, pred=overwrite) for j in range(nd)]
    if pred:  # predicated max/min: only bitlines whose original predicate is set may change (kept simple)
        raise UnsupportedError("micro-op mode does not model predicated max/min")
    return prog + [Uop("clear", c0=0)]


def _mult(D: Operand, A: Operand, B: Operand, scratch: int, pred: int) -> list[Uop]:
    """Shift-and-add: unsigned p × p → 2p in p² + 3p − 2 cycles (P ← A·b0, clear the upper half,
    then per multiplier bit: M ← b_j, masked add, masked carry write); otherwise the general
    sign-extended version (exact modulo 2^pD)."""
    nd = D.prec.bits
    p = A.prec.bits
    if pred:
        raise UnsupportedError("micro-op mode does not model predicated multiplications")
    def apart(x: Operand) -> bool:
        return D.row + nd <= x.row or x.row + x.prec.bits <= D.row

    if not A.prec.signed and not B.prec.signed and B.prec.bits == p and nd == 2 * p and apart(A) and apart(B):
        prog = [Uop("tt", D.row + i, A.bit(i), B.bit(0), tt=TT_AND) for i in range(p)]
        prog += [Uop("tt", D.row + i, tt=0) for i in range(p, 2 * p)]
        for j in range(1, p):
            prog.append(Uop("mask", a=B.bit(j)))
            prog += [Uop("add", D.row + j + i, D.row + j + i, A.bit(i), c0=0 if i == 0 else -1, pred=1)
                     for i in range(p)]
            prog.append(Uop("carry", D.row + j + p, pred=1))
        return prog + [Uop("clear", c0=0)]
    P_ = Operand(scratch, Precision(0, nd))
    prog = [Uop("tt", P_.bit(i), tt=0) for i in range(nd)]
    for j in range(nd):
        if B.bit(j) == ZERO:
            continue
        prog.append(Uop("mask", a=B.bit(j)))
        prog += [Uop("add", P_.bit(j + i), P_.bit(j + i), A.bit(i), c0=0 if i == 0 else -1, pred=1)
                 for i in range(nd - j)]
    prog += [Uop("tt", D.bit(i), P_.bit(i), tt=TT_A) for i in range(nd)]
    return prog + [Uop("clear", c0=0)]


def _mul_const(D: Operand, A: Operand, ins: dict, pred: int) -> list[Uop]:
    """CoMeFa's zero-skipping MUL_CONST (the constant's bits steer the controller): unsigned
    p × p → 2p costs 2p + Σ_{j≥1} (b_j ? p + 1 : 1) + (b_{p−1} = 0); other shapes use the general
    skip-zero shift-and-add.  The constant is ``ins['const']`` (read from the RF)."""
    c = ins["const"]
    nd = D.prec.bits
    p = A.prec.bits
    if pred:
        raise UnsupportedError("micro-op mode does not model predicated constant multiplications")
    pc = decode(ins["pb"])
    if not A.prec.signed and not pc.signed and pc.bits == p and nd == 2 * p:
        b = [(c >> j) & 1 for j in range(p)]
        prog = [Uop("tt", D.row + i, A.bit(i) if b[0] else ZERO, tt=TT_A) for i in range(p)]
        prog += [Uop("tt", D.row + i, tt=0) for i in range(p, 2 * p)]
        for j in range(1, p):
            if b[j]:
                prog += [Uop("add", D.row + j + i, D.row + j + i, A.bit(i), c0=0 if i == 0 else -1) for i in range(p)]
                prog.append(Uop("carry", D.row + j + p))
            else:
                prog.append(Uop("nop"))
        if not b[p - 1]:
            prog.append(Uop("nop"))
        return prog
    ext = c & ((1 << pc.bits) - 1)
    if pc.signed and ext >> (pc.bits - 1):
        ext -= 1 << pc.bits
    ext &= (1 << nd) - 1
    prog = [Uop("tt", D.bit(i), tt=0) for i in range(nd)]
    for j in range(nd):
        if (ext >> j) & 1:
            prog += [Uop("add", D.bit(j + i), D.bit(j + i), A.bit(i), c0=0 if i == 0 else -1) for i in range(nd - j)]
    return prog + [Uop("clear", c0=0)]


class BitPlanes:
    """A tile as a boolean wordline × bitline matrix plus the C and M latches."""

    def __init__(self, ts: TileState, rows: int | None = None):
        self.W = ts.W
        self.cols = ts.cols
        self.rows = rows or ts.n_rows
        self.planes = np.zeros((self.rows + 2, self.W), bool)
        for r in range(min(self.rows, ts.n_rows)):
            if ts.rows[r] is not None:
                self.planes[r] = np.unpackbits(ts.rows[r], bitorder="little").astype(bool)
        self.planes[ONE] = True
        self.carry = ts.carry.copy()
        self.mask = ts.mask.copy()

    def row(self, r: int) -> np.ndarray:
        return self.planes[r]

    def run(self, prog: list[Uop], size: int, ipred: int = 0) -> int:
        """Execute the micro-ops on bitlines [0, size); returns the cycles (one per micro-op).

        ``ipred`` is the instruction's predicate: micro-ops carrying it use the predicate as it
        was when the instruction started (latch updates on inactive bitlines are suppressed)."""
        n = size or self.W
        snap = None if ipred == 0 else (self.mask[:n].copy() if ipred == 1 else self.carry[:n].copy() if ipred == 2
                                        else ~self.carry[:n])
        for u in prog:
            if ipred and u.pred == ipred:
                en = snap
            else:
                en = (np.ones(n, bool) if u.pred == 0 else self.mask[:n].copy() if u.pred == 1
                      else self.carry[:n].copy() if u.pred == 2 else ~self.carry[:n])
            if u.c0 >= 0:
                base = snap if snap is not None else np.ones(n, bool)
                self.carry[:n] = np.where(base, bool(u.c0), self.carry[:n])
            if u.op in ("nop", "clear"):
                continue
            a = self.planes[u.a][:n] ^ u.ia
            b = self.planes[u.b][:n] ^ u.ib
            if u.op == "mask":
                self.mask[:n] = np.where(en, a, self.mask[:n])
                continue
            if u.op == "tt":
                val = ((u.tt >> (2 * a.astype(np.int8) + b.astype(np.int8))) & 1).astype(bool)
            elif u.op == "add":
                c = self.carry[:n]
                val = a ^ b ^ c
                self.carry[:n] = np.where(en, (a & b) | (a & c) | (b & c), c)
            elif u.op == "carry":
                val = self.carry[:n].copy()
            elif u.op == "move":
                val = np.zeros(n, bool)
                if u.direction == 0:
                    val[:-1] = a[1:]
                else:
                    val[1:] = a[:-1]
            elif u.op == "local":
                G = 1 << u.tt
                idx = (np.arange(n) // self.cols) * self.cols + (np.arange(n) % self.cols) % G
                val = self.planes[u.a][idx]
            else:
                raise ValueError(u.op)
            if u.dst >= 0:
                self.planes[u.dst][:n] = np.where(en, val, self.planes[u.dst][:n])
        return sum(u.op != "clear" for u in prog)

    def store(self, ts: TileState) -> None:
        """Write the planes back into a tile state."""
        for r in range(ts.n_rows):
            if self.planes[r].any() or ts.rows[r] is not None:
                ts.rows[r] = np.packbits(self.planes[r].astype(np.uint8), bitorder="little")
        ts.carry[:] = self.carry
        ts.mask[:] = self.mask


def run_microops(ts: TileState, ins: dict, mn: str, scratch_rows: int = 64) -> int:
    """Execute one instruction bit-serially on ``ts`` (extra scratch wordlines beyond the CRAM are
    modelled); returns its micro-op cycle count."""
    if mn == "mul_const":
        ins = dict(ins, const=int(ts.rf[ins["rb"]]))
    planes = BitPlanes(ts, ts.n_rows + scratch_rows)
    cycles = planes.run(microprogram(mn, ins, ts.n_rows), ins.get("size", 0), ins.get("pred", 0))
    planes.store(ts)
    return cycles


def _copy_tile(ts: TileState) -> TileState:
    twin = TileState.__new__(TileState)
    twin.__dict__.update(ts.__dict__)
    twin.rows = [None if r is None else r.copy() for r in ts.rows]
    twin.mask, twin.carry, twin.rf = ts.mask.copy(), ts.carry.copy(), ts.rf.copy()
    return twin


def _machine_class():
    from ..config import PimsabConfig
    from ..isa import build_isa
    from .costs import compute_cycles
    from .machine import Machine

    isa = build_isa()

    class MicroMachine(Machine):
        """A functional machine that also runs every supported compute instruction bit-serially
        and checks the bit-plane result against the word-level one."""

        def __init__(self, cfg: PimsabConfig, segments=()):
            super().__init__(cfg, segments)
            self.micro = {"instructions": 0, "micro_cycles": 0, "formula_cycles": 0, "by_mnemonic": {}}

        def step(self, tile: int, row: tuple) -> bool:
            ins = dict(zip(isa.columns, row))
            mn = isa.by_opcode[ins["op"]].mnemonic
            skip = mn not in SUPPORTED or (ins.get("pred") and mn in ("mult", "max", "min", "mul_const"))
            if skip:
                return super().step(tile, row)
            twin = _copy_tile(self.tile(tile))
            ok = super().step(tile, row)
            cyc = run_microops(twin, ins, mn)
            ts = self.tile(tile)
            for r in range(ts.n_rows):
                a, b = ts.rows[r], twin.rows[r]
                if (a is None) != (b is None) and ((a is not None and a.any()) or (b is not None and b.any())) \
                        or (a is not None and b is not None and not np.array_equal(a, b)):
                    from ....core.errors import SimError
                    raise SimError(f"bit-level {mn} differs from the word-level result on wordline {r}")
            rf = (int(twin.rf[ins["rb"]]),) if mn == "mul_const" else None
            formula = compute_cycles(mn, ins, self.cfg.replace(cycle_mode="bitexact") if rf else self.cfg, rf)
            st = self.micro
            st["instructions"] += 1
            st["micro_cycles"] += cyc
            st["formula_cycles"] += formula
            row_ = st["by_mnemonic"].setdefault(mn, {"count": 0, "micro_cycles": 0, "formula_cycles": 0})
            row_["count"] += 1
            row_["micro_cycles"] += cyc
            row_["formula_cycles"] += formula
            return ok

    return MicroMachine


def micro_machine(cfg, segments=()):
    """A functional machine in bit-level micro-op mode (for small configurations)."""
    return _machine_class()(cfg, segments)
