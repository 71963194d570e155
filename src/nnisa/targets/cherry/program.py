"""The Cherry program model: a 186-byte header (loops and address formulas) plus 16-bit words.

Spec ``cherry.md`` §2.3 (header layout), §2.4 (loops and formulas) and §2.6 (image and limits).
Instructions are rows of the canonical IR (:data:`~nnisa.targets.cherry.isa.COLUMNS`); the
cherrycore encoding (§2.7) maps onto the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.asm import make_formatter
from ...core.errors import DecodeError, EncodeError
from .isa import LOOP_OPS, LOOP_VARS, MAX_FORMULAS, MAX_LOOPS, OP, REG_NAMES, cherry_isa

HEADER_BYTES = 186
HEADER_BITS = HEADER_BYTES * 8
ITER_BITS, JUMP_BITS, VALUE_BITS = 18, 6, 18
#: iteration counts the assembler accepts (§2.6); 0 marks an unused loop in the header
MAX_ITERATIONS = 262142
MAX_JUMP = (1 << JUMP_BITS) - 1
MAX_PROGRAM = 255
VALUE_MIN, VALUE_MAX = -(1 << (VALUE_BITS - 1)), (1 << (VALUE_BITS - 1)) - 1


@dataclass
class Header:
    """ro_data: 8 loops (iterations, jump) and 8 address formulas of 9 signed values.

    ``formulas[f, a]`` is the coefficient of loop variable a (``ijklmnop``[a]) in formula f,
    ``formulas[f, 8]`` its constant.
    """

    iterations: list[int] = field(default_factory=lambda: [0] * MAX_LOOPS)
    jumps: list[int] = field(default_factory=lambda: [0] * MAX_LOOPS)
    formulas: np.ndarray = field(default_factory=lambda: np.zeros((MAX_FORMULAS, 9), dtype=np.int64))

    def __post_init__(self) -> None:
        self.iterations = [int(v) for v in self.iterations]
        self.jumps = [int(v) for v in self.jumps]
        self.formulas = np.asarray(self.formulas, dtype=np.int64).reshape(MAX_FORMULAS, 9)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Header) and self.iterations == other.iterations and self.jumps == other.jumps
                and np.array_equal(self.formulas, other.formulas))

    def check(self) -> None:
        """Raise :class:`EncodeError` for any value outside its field."""
        for a in range(MAX_LOOPS):
            if not 0 <= self.iterations[a] <= MAX_ITERATIONS:
                raise EncodeError(f"loop {a}: {self.iterations[a]} iterations outside 1..{MAX_ITERATIONS}")
            if not 0 <= self.jumps[a] <= MAX_JUMP:
                raise EncodeError(f"loop {a}: jump {self.jumps[a]} outside 0..{MAX_JUMP} "
                                  f"(loop bodies hold at most {MAX_JUMP - 1} instructions)")
        bad = np.argwhere((self.formulas < VALUE_MIN) | (self.formulas > VALUE_MAX))
        if len(bad):
            f, c = (int(x) for x in bad[0])
            what = "constant" if c == 8 else f"coefficient of {LOOP_VARS[c]}"
            raise EncodeError(f"formula {f}: {what} {int(self.formulas[f, c])} outside signed 18 bits "
                              f"({VALUE_MIN}..{VALUE_MAX})")

    def pack(self) -> bytes:
        """The 186 header bytes, MSB first (§2.3)."""
        self.check()
        acc = 0
        for a in range(MAX_LOOPS):
            acc = (acc << ITER_BITS) | self.iterations[a]
            acc = (acc << JUMP_BITS) | self.jumps[a]
        mask = (1 << VALUE_BITS) - 1
        for v in self.formulas.reshape(-1).tolist():
            acc = (acc << VALUE_BITS) | (v & mask)
        return acc.to_bytes(HEADER_BYTES, "big")

    @classmethod
    def unpack(cls, data: bytes) -> "Header":
        """Parse 186 header bytes."""
        if len(data) != HEADER_BYTES:
            raise DecodeError(f"a Cherry header has {HEADER_BYTES} bytes, got {len(data)}")
        acc = int.from_bytes(data, "big")
        pos = HEADER_BITS

        def take(bits: int) -> int:
            nonlocal pos
            pos -= bits
            return (acc >> pos) & ((1 << bits) - 1)

        iters, jumps = [], []
        for _ in range(MAX_LOOPS):
            iters.append(take(ITER_BITS))
            jumps.append(take(JUMP_BITS))
        vals = []
        for _ in range(MAX_FORMULAS * 9):
            v = take(VALUE_BITS)
            vals.append(v - (1 << VALUE_BITS) if v >> (VALUE_BITS - 1) else v)
        return cls(iters, jumps, np.array(vals, dtype=np.int64))

    def loop_word(self, a: int) -> int:
        """The 24-bit loop word of loop ``a`` (iterations << 6 | jump)."""
        return (self.iterations[a] << JUMP_BITS) | self.jumps[a]


@dataclass
class Program:
    """One Cherry program: header + instruction rows.

    Attributes
    ----------
    rows
        Structured array of canonical IR rows (one per instruction).
    header
        Loops and formulas.
    sz
        Tile size the program was written for (only affects the text of lengths).
    org
        icache address the program is uploaded to (``.org``).
    encoding
        ``canonical`` or ``cherrycore``: how :meth:`words` encodes the rows.
    """

    rows: np.ndarray
    header: Header = field(default_factory=Header)
    sz: int = 4
    org: int = 0
    encoding: str = "canonical"

    def __len__(self) -> int:
        return len(self.rows)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Program) and self.header == other.header and self.sz == other.sz
                and self.org == other.org and self.encoding == other.encoding
                and np.array_equal(self.rows, other.rows))

    @property
    def isa(self):
        return cherry_isa(self.sz)

    def instructions(self) -> list[dict[str, int]]:
        """Rows as dicts (handy in tests and tools)."""
        cols = self.rows.dtype.names
        return [dict(zip(cols, (int(v) for v in r))) for r in self.rows.tolist()]

    def mnemonic(self, pc: int) -> str:
        return self.isa.by_opcode[int(self.rows["op"][pc])].mnemonic

    def describe(self, pc: int) -> str:
        """``pc N (mnemonic operands)`` for error messages."""
        if 0 <= pc < len(self.rows):
            return f"pc {pc + self.org} ({format_instruction(self, self.rows[pc])})"
        return f"pc {pc + self.org}"

    def used_loops(self) -> list[int]:
        ops = self.rows["op"]
        return sorted(set(self.rows["loop"][np.isin(ops, list(LOOP_OPS))].tolist()))


def loop_structure(rows: np.ndarray) -> dict[int, tuple[int, int]]:
    """Matching start/end pairs: loop address → (start pc, end pc), for well-nested programs.

    Raises ``ValueError`` with a message for misnested programs (the assembler and the simulator
    turn it into their own error types).
    """
    stack: list[tuple[int, int, bool]] = []
    pairs: dict[int, tuple[int, int]] = {}
    ops = rows["op"].tolist()
    loops = rows["loop"].tolist()
    for pc, (op, a) in enumerate(zip(ops, loops)):
        if op in (OP["start_loop"], OP["start_independent_loop"]):
            if len(stack) >= MAX_LOOPS:
                raise ValueError(f"pc {pc}: more than {MAX_LOOPS} nested loops")
            if any(s[2] for s in stack):
                raise ValueError(f"pc {pc}: loop {a} starts inside an independent loop (independent loops "
                                 "must be innermost)")
            if any(s[0] == a for s in stack):
                raise ValueError(f"pc {pc}: loop {a} is already active")
            if a in pairs:
                raise ValueError(f"pc {pc}: loop address {a} is used by two loops (sibling loops need "
                                 "distinct addresses)")
            stack.append((a, pc, op == OP["start_independent_loop"]))
        elif op == OP["end_loop"]:
            if not stack:
                raise ValueError(f"pc {pc}: end_loop {a} without an active loop")
            top, start, _ = stack.pop()
            if top != a:
                raise ValueError(f"pc {pc}: end_loop {a} but the innermost active loop is {top}")
            pairs[a] = (start, pc)
    if stack:
        a, pc, _ = stack[-1]
        raise ValueError(f"loop {a} started at pc {pc} is never ended")
    return pairs


def format_instruction(prog: Program, row) -> str:
    """One row as canonical text (the table's formatter: trailing optional operands at their
    defaults omitted, ``slot=`` when set)."""
    return make_formatter(prog.isa)(tuple(int(v) for v in row))


def reg_name(code: int) -> str:
    return REG_NAMES.get(int(code), str(code))


def program_stats(prog: Program) -> dict[str, Any]:
    """Static statistics: instruction mix by mnemonic and unit, loops, formulas, image size."""
    isa = prog.isa
    ops, counts = np.unique(prog.rows["op"], return_counts=True)
    mix = {isa.by_opcode[int(o)].mnemonic: int(c) for o, c in zip(ops, counts)}
    units: dict[str, int] = {}
    for o, c in zip(ops, counts):
        u = isa.by_opcode[int(o)].category
        units[u] = units.get(u, 0) + int(c)
    used_f = [f for f in range(MAX_FORMULAS) if np.any(prog.header.formulas[f])]
    return {"instructions": len(prog), "image_bytes": HEADER_BYTES + 2 * len(prog), "sz": prog.sz,
            "encoding": prog.encoding, "instruction_mix": mix, "units": units,
            "loops": {LOOP_VARS[a]: {"address": a, "iterations": prog.header.iterations[a],
                                     "jump": prog.header.jumps[a]} for a in range(MAX_LOOPS)
                      if prog.header.iterations[a] or prog.header.jumps[a]},
            "formulas_used": len(used_f)}


@dataclass
class Plan:
    """Everything the runtime needs; JSON-able except the programs and constants."""

    sz: int
    tensors: list[dict[str, int]] = field(default_factory=list)
    consts: dict[int, np.ndarray] = field(default_factory=dict)
    programs: list[Program] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: one entry per lowered graph node: ``{"layer": node name, "op": IR op, "tiles": device tiles
    #: it allocated (outputs, temporaries, constants)}``; ``steps[i]["layer"]`` indexes it
    layers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dram_tiles(self) -> int:
        return max((t["base"] + t["tiles"] for t in self.tensors), default=0)
