"""PIM text assembly (spec §4): assembler with directives and a bulk canonical disassembler.

The assembler is the core one (:class:`~nnisa.core.asm.Assembler`) with PIM's directives
registered and a fast path for the canonical operand forms (``$rN``, decimal integers,
``ofs(...)``) that stores operand values in flat lists and scatters them into the IR columns
per opcode with numpy; ranges are checked in bulk afterwards.  Any line the fast path does not
understand, and any line that fails a check, is re-parsed through the table, which produces the
:class:`~nnisa.core.errors.AsmError` with file:line:column.  The disassembler renders all rows with per-opcode templates
(:mod:`.render`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from ....core.asm import Assembler, Directives, Line
from ....core.errors import AsmError
from ....core.operands import OperandError
from ..isa import OFS, OPCODES, build_isa
from ..program import DTYPE, PimProgram
from .textplans import kind_code, operand_plans

if TYPE_CHECKING:
    from .render import RenderPlan  # numba kernels: imported when a program is rendered


def _fast_operands(kinds: tuple[str, ...], required: int, tail: str) -> list[int] | None:
    """Operand values of the canonical forms, or ``None`` (then the table's parser decides)."""
    if "(" in tail:
        from ....core.asm import split_operands
        toks = [t for _, t in split_operands(tail, 1)]
    else:
        toks = tail.split(",") if tail.strip() else []
    if not required <= len(toks) <= len(kinds):
        return None
    vals: list[int] = []
    for k, tok in zip(kinds, toks):
        t = tok.strip()
        if k == "r":
            if t[:2] != "$r" or not (t[2:].isascii() and t[2:].isdigit()):
                return None
            v = int(t[2:])
            if v > 31:
                return None
            vals.append(v)
        elif k == "o":
            try:
                vals.extend(OFS.parse(t))
            except OperandError:
                return None
        else:
            if not t.isascii():
                return None
            try:
                v = int(t)
            except ValueError:
                return None
            if k == "b":
                if not -128 <= v <= 255:
                    return None
                v &= 0xFF
            elif not -(1 << 40) < v < (1 << 40):
                return None
            vals.append(v)
    for k in kinds[len(toks):]:
        vals.extend((0, 0) if k == "o" else (0,))
    return vals


#: the directives of PIM assembly (spec §4.2)
DIRECTIVES = Directives("PIM")


class PimAssembler(Assembler):
    """PIM text → :class:`PimProgram`: the core assembler with PIM's directives and a fast path
    for the canonical operand forms (flat operand values scattered into the IR columns per opcode
    with numpy, ranges checked in bulk by :meth:`~nnisa.core.asm.Assembler.check_bulk`)."""

    directives = DIRECTIVES
    labels = True

    def __init__(self, file: str | None = None):
        self.word_bits, self.extended, self.odd_pairs = 64, False, False
        super().__init__(build_isa(), file=file)
        self.chip_cores: int | None = None
        self.groups: dict[int, list[int]] = {}
        self.act_frac: dict[int, tuple[int, int]] = {}
        self.core: int | None = None
        self.core_order: list[int] = []
        self.seg_core: list[int] = []  # per instruction segment: core id
        self.seg_start: list[int] = []
        self.ops: list[int] = []
        self.vals: list[int] = []
        self.config_extra: dict = {}
        self.nocode: set[int] = set()
        self.plans = operand_plans()

    @property
    def started(self) -> bool:
        return bool(self.ops)

    def set_mode(self) -> None:
        self.isa = build_isa(self.word_bits, self.extended, odd_pairs=self.odd_pairs)

    # ---------------------------------------------------------------- directives
    @DIRECTIVES.register(".mode", "32|64", "instruction word size", before_code=True)
    def _mode(self, line: Line) -> None:
        self.word_bits = int(self.choice(line, ("32", "64")))
        self.set_mode()

    @DIRECTIVES.register(".encoding", "strict|extended", "field layout (spec §3.5)", before_code=True)
    def _encoding(self, line: Line) -> None:
        self.extended = self.choice(line, ("strict", "extended")) == "extended"
        self.set_mode()

    @DIRECTIVES.register(".odd_pairs", "", "accept odd global-address registers in strict mode (§1.6)",
                         before_code=True)
    def _odd_pairs(self, line: Line) -> None:
        self.odd_pairs = True
        self.set_mode()

    @DIRECTIVES.register(".core", "N", "the instructions that follow run on core N")
    def _core(self, line: Line) -> None:
        (c,) = self.ints(line, 1)
        if not 0 <= c < 2 ** 31:
            raise self.error(f"core id {c} out of range", line)
        self.core = c
        if c not in self.core_order:
            self.core_order.append(c)
        self.seg_core.append(c)
        self.seg_start.append(len(self.ops))

    @DIRECTIVES.register(".group", "ID, CROSSBARS", "array group ID of the current core (ids 0, 1, 2, ...)")
    def _group(self, line: Line) -> None:
        gid, xbars = self.ints(line, 2)
        if self.core is None:
            raise self.error(".group before the first .core directive", line)
        groups = self.groups.setdefault(self.core, [])
        if gid != len(groups):
            raise self.error(f"array group ids must be 0, 1, 2, ... in order: expected {len(groups)}, got {gid}", line)
        if not 0 <= xbars < 2 ** 31:
            raise self.error(f"crossbar count {xbars} out of range", line)
        groups.append(xbars)

    @DIRECTIVES.register(".chip_cores", "N", "cores of the chip")
    def _chip_cores(self, line: Line) -> None:
        (n,) = self.ints(line, 1)
        if not 0 <= n < 2 ** 31:
            raise self.error(f".chip_cores {n} out of range", line)
        self.chip_cores = n

    @DIRECTIVES.register(".config_extra", "{JSON}", "configuration keys the program carries (one JSON line)")
    def _config_extra(self, line: Line) -> None:
        try:
            extra = parse_config_extra(line.tail)
        except ValueError as exc:
            raise self.error(f".config_extra: {exc}", line) from None
        self.config_extra.update(extra)

    @DIRECTIVES.register(".nocode", "", "the current core has groups or fractions but no instructions")
    def _nocode(self, line: Line) -> None:
        if line.tail.strip() or self.core is None or self.seg_core[-1] != self.core or \
                self.seg_start[-1] != len(self.ops) or any(c == self.core for c in self.seg_core[:-1]):
            raise self.error(".nocode takes no argument and must follow the only .core line of its core", line)
        self.nocode.add(self.core)

    @DIRECTIVES.register(".act_frac", "IN, OUT", "fraction bits of the current core's activation tables")
    def _act_frac(self, line: Line) -> None:
        a, b = self.ints(line, 2)
        if self.core is None:
            raise self.error(".act_frac before the first .core directive", line)
        if not (0 <= a <= 31 and 0 <= b <= 31):
            raise self.error("activation fraction bits must be 0..31", line)
        self.act_frac[self.core] = (a, b)

    # ---------------------------------------------------------------- instructions
    def fast_line(self, head: str, tail: str, lineno: int) -> bool:
        """The canonical operand forms straight into flat value lists (no :class:`Line`)."""
        plan = self.plans.get(head)
        if plan is None or self.core is None or self.core in self.nocode:
            return False
        vals = _fast_operands(plan[1], plan[3], tail)
        if vals is None:
            return False
        self.ops.append(plan[0])
        self.vals.extend(vals)
        self.linenos.append(lineno)
        return True

    def instruction(self, line: Line) -> None:
        if self.core is None:
            raise self.error("instruction before the first .core directive", line)
        if self.core in self.nocode:
            raise self.error(f"instruction in core {self.core}, declared .nocode", line)
        plan = self.plans.get(line.head.lower())
        vals = _fast_operands(plan[1], plan[3], line.tail) if plan else None
        if vals is None:
            row = self.parse(line)  # raises on bad input
            plan = self.plans[OPCODES[row[0]]]
            idx = self.isa._col_index
            vals = [row[idx[c]] for c in plan[2]]
        self.ops.append(plan[0])
        self.vals.extend(vals)
        self.linenos.append(line.lineno)

    def bulk_error(self, row: tuple, line: Line) -> AsmError:
        # the parser accepted it: the offender is a column without a field (32-bit offsets)
        return self.error(f"offsets are not supported in {self.word_bits}-bit mode (spec §3.6)", line.lineno)

    def finish(self) -> PimProgram:
        plans = self.plans
        n = len(self.ops)
        ops = np.array(self.ops, dtype=np.int64)
        vals = np.array(self.vals, dtype=np.int64)
        nvals = np.zeros(len(OPCODES), dtype=np.int64)
        for code, _, cols, _ in plans.values():
            nvals[code] = len(cols)
        offs = np.zeros(n, dtype=np.int64)
        if n:
            offs[1:] = np.cumsum(nvals[ops])[:-1]
        rows = np.zeros(n, dtype=DTYPE)
        rows["op"] = ops
        for code in np.unique(ops).tolist():
            idx = np.flatnonzero(ops == code)
            base = offs[idx]
            for j, c in enumerate(plans[OPCODES[code]][2]):
                rows[c][idx] = vals[base + j]
        self.check_bulk(rows, self.linenos)
        cores: dict[int, list[np.ndarray]] = {c: [] for c in self.core_order}
        bounds = self.seg_start + [n]
        for k, c in enumerate(self.seg_core):
            cores[c].append(rows[bounds[k]:bounds[k + 1]])
        out = {c: (np.concatenate(parts) if len(parts) > 1 else parts[0].copy()) for c, parts in cores.items()
               if c not in self.nocode}
        return PimProgram(cores=out, array_group_map=self.groups, chip_cores=self.chip_cores,
                          word_bits=self.word_bits, extended=self.extended, act_frac=self.act_frac,
                          odd_pairs=self.odd_pairs, config_extra=self.config_extra)


def _scan_text(text: str) -> PimProgram | None:
    """The numba scanner (:mod:`.textscan`); ``None`` when it leaves the text to :class:`PimAssembler`."""
    from . import textscan as ts

    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the Python path reports them
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    cap = data.count(b"\n") + data.count(b"\r") + 1  # >= number of lines
    ndot = data.count(b".") + 1  # >= number of directive lines
    rows = np.zeros(cap, dtype=DTYPE)
    segs = np.zeros((ndot, 2), dtype=np.int64)
    dirs = np.zeros((ndot, 4), dtype=np.int64)
    info = np.zeros(ts.NINFO, dtype=np.int64)
    if ts.scan(buf, rows.view(np.uint8), segs, dirs, info, *ts.tables()) != ts.ST_OK:
        return None
    groups: dict[int, list[int]] = {}
    act_frac: dict[int, tuple[int, int]] = {}
    extra: dict = {}
    nocode: set[int] = set()
    for kind, core, a, b in dirs[:info[ts.I_DIRS]].tolist():
        if kind == ts.DIR_NOCODE:
            nocode.add(core)
        elif kind == ts.DIR_CFG:
            try:
                extra.update(parse_config_extra(data[a:b].decode("ascii")))
            except ValueError:
                return None
        elif kind == ts.DIR_GROUP:
            g = groups.setdefault(core, [])
            if a != len(g) or b < 0:
                return None
            g.append(b)
        else:
            if not (0 <= a <= 31 and 0 <= b <= 31):
                return None
            act_frac[core] = (a, b)
    n = int(info[ts.I_ROWS])
    rows = rows[:n]
    parts: dict[int, list[np.ndarray]] = {}
    seg = segs[:info[ts.I_SEGS]].tolist()
    for k, (c, start) in enumerate(seg):
        parts.setdefault(c, []).append(rows[start:seg[k + 1][1] if k + 1 < len(seg) else n])
    for c in nocode:  # the simple form only (one .core line, no instruction); else the assembler decides
        if len(parts[c]) != 1 or len(parts[c][0]):
            return None
        del parts[c]
    cores = {c: (np.concatenate(p) if len(p) > 1 else p[0]) for c, p in parts.items()}
    return PimProgram(cores=cores, array_group_map=groups,
                      chip_cores=int(info[ts.I_CHIP]) if info[ts.I_CHIP_SET] else None,
                      word_bits=int(info[ts.I_WORD]), extended=bool(info[ts.I_EXT]), act_frac=act_frac,
                      odd_pairs=bool(info[ts.I_ODD]), config_extra=extra)


def format_config_extra(extra: dict) -> str:
    """``config_extra`` as the argument of ``.config_extra``: one line of JSON with sorted keys, ASCII
    only, and ``#``/``;`` (comment characters of the text) escaped inside strings."""
    text = json.dumps(extra, sort_keys=True, ensure_ascii=True, separators=(", ", ": "), allow_nan=False)
    return text.replace("#", "\\u0023").replace(";", "\\u003b")


def parse_config_extra(arg: str) -> dict:
    """The JSON object of a ``.config_extra`` line (ValueError with the reason)."""
    from ....core.jsonsafe import loads
    try:
        value = loads(arg.strip())
    except Exception as exc:  # noqa: BLE001 - any JSON error becomes one line
        raise ValueError(f"bad JSON ({str(exc).splitlines()[0][:120]}); write '#' and ';' inside strings as "
                         "\\u0023 and \\u003b") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def assemble_text(text: str, file: str | None = None, fast: bool = True) -> PimProgram:
    """Assemble PIM text (spec §4) into a :class:`PimProgram`.

    With ``fast`` (default) the numba scanner of :mod:`.textscan` reads the text first; on
    anything it does not handle (labels, unusual syntax, any error) the Python assembler reads
    the whole text and is the authority for the result and the error message.

    Raises
    ------
    AsmError
        With file, line and column, for any bad line, operand, range or directive.
    """
    if fast:
        prog = _scan_text(text)
        if prog is not None:
            return prog
    return PimAssembler(file).assemble(text)


# --------------------------------------------------------------------------- disassembler
_TEXT_COLS = ("rd", "rs1", "rs2", "len", "imm", "mbiw", "relu", "group", "core", "ev", "val", "ibiw", "obiw",
              "ofs_sel", "ofs_val")
_TEXT_PLAN: RenderPlan | None = None


def _text_plan() -> RenderPlan:
    global _TEXT_PLAN
    if _TEXT_PLAN is None:
        from .render import RenderPlan
        isa = build_isa(64, True)
        templates = {}
        for s in isa.instrs:
            items: list = [s.mnemonic]
            first = True
            for o in s.operands:
                code = kind_code(o.kind)
                sep = " " if first else ", "
                if code == "o":
                    items.append(("ofs", o.columns[0], o.columns[1], sep + "ofs("))
                elif code == "i" and o.kind.omit_default:
                    items.append(("optdec", o.columns[0], sep))
                else:
                    items.append(sep + ("$r" if code == "r" else ""))
                    items.append(("hex" if code == "b" else "dec", o.columns[0]))
                first = False
            items.append("\n")
            templates[s.opcode] = items
        _TEXT_PLAN = RenderPlan(templates, _TEXT_COLS)
    return _TEXT_PLAN


def disassemble(program: PimProgram) -> str:
    """Canonical assembly text of a program (spec §4.4)."""
    plan = _text_plan()
    out = [f".mode {program.word_bits}\n.encoding {'extended' if program.extended else 'strict'}\n"]
    if program.odd_pairs:
        out.append(".odd_pairs\n")
    if program.chip_cores is not None:
        out.append(f".chip_cores {program.chip_cores}\n")
    if program.config_extra:
        out.append(f".config_extra {format_config_extra(program.config_extra)}\n")
    ids = sorted(set(program.cores) | set(program.array_group_map) | set(program.act_frac))
    for c in ids:
        out.append(f".core {c}\n")
        if c not in program.cores:  # groups / fractions only: no instruction section
            out.append(".nocode\n")
        out.extend(f".group {g}, {x}\n" for g, x in enumerate(program.array_group_map.get(c, [])))
        if c in program.act_frac:
            a, b = program.act_frac[c]
            out.append(f".act_frac {a}, {b}\n")
        rows = program.cores.get(c)
        if rows is not None and len(rows):
            out.append(plan.render(rows["op"], plan.matrix(rows)).decode("ascii"))
    return "".join(out)
