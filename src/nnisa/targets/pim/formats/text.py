"""PIM text assembly (spec §4): assembler with directives and a bulk canonical disassembler.

The assembler has a fast path for the canonical operand forms (``$rN``, decimal integers,
``ofs(...)``) that stores operand values in flat lists and scatters them into the IR columns
per opcode with numpy; ranges are checked in bulk afterwards.  Any line the fast path does not
understand, and any line that fails a check, is re-parsed by the generic engine of
:mod:`nnisa.core.asm`, which produces the :class:`~nnisa.core.errors.AsmError` with
file:line:column.  The disassembler renders all rows with per-opcode templates
(:mod:`.render`).
"""

from __future__ import annotations

import json

import numpy as np

from ....core.asm import iter_lines, parse_instruction, split_operands, strip_comment
from ....core.errors import AsmError
from ....core.operands import OperandError, parse_int
from ..isa import OFS, OPCODES, build_isa
from ..program import DTYPE, PimProgram
from .render import RenderPlan
from .textplans import kind_code, operand_plans

def _fast_operands(kinds: tuple[str, ...], required: int, tail: str) -> list[int] | None:
    """Operand values of the canonical forms, or ``None`` (then the generic parser decides)."""
    if "(" in tail:
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


class _Assembler:
    def __init__(self, text: str, file: str | None):
        self.text = text
        self.file = file
        self.word_bits = 64
        self.extended = False
        self.chip_cores: int | None = None
        self.groups: dict[int, list[int]] = {}
        self.act_frac: dict[int, tuple[int, int]] = {}
        self.labels: dict[str, int] = {}
        self.core: int | None = None
        self.core_order: list[int] = []
        self.seg_core: list[int] = []  # per instruction segment: core id
        self.seg_start: list[int] = []
        self.ops: list[int] = []
        self.vals: list[int] = []
        self.lines: list[int] = []
        self.raw_lines: list[str] = []
        self.isa = None
        self.odd_pairs = False
        self.config_extra: dict = {}
        self.nocode: set[int] = set()

    def err(self, msg: str, lineno: int, col: int | None = None) -> AsmError:
        return AsmError(msg, file=self.file, line=lineno, column=col)

    def _ints(self, args: str, n: int, lineno: int, col: int, what: str) -> list[int]:
        toks = [t.strip() for t in args.split(",")] if args.strip() else []
        if len(toks) != n:
            raise self.err(f"{what} takes {n} integer argument(s), got {len(toks)}", lineno, col)
        try:
            return [parse_int(t) for t in toks]
        except OperandError as exc:
            raise self.err(f"{what}: {exc}", lineno, col) from None

    def directive(self, head: str, args: str, lineno: int, col: int) -> None:
        d = head.lower()
        if d in (".mode", ".encoding"):
            if self.ops:
                raise self.err(f"{d} must come before the first instruction", lineno, col)
            a = args.strip().lower()
            if d == ".mode":
                if a not in ("32", "64"):
                    raise self.err(f".mode must be 32 or 64, got {args.strip()!r}", lineno, col)
                self.word_bits = int(a)
            else:
                if a not in ("strict", "extended"):
                    raise self.err(f".encoding must be strict or extended, got {args.strip()!r}", lineno, col)
                self.extended = a == "extended"
            self.isa = None
        elif d == ".odd_pairs":
            if self.ops:
                raise self.err(".odd_pairs must come before the first instruction", lineno, col)
            self.odd_pairs = True
            self.isa = None
        elif d == ".core":
            (c,) = self._ints(args, 1, lineno, col, ".core")
            if not 0 <= c < 2 ** 31:
                raise self.err(f"core id {c} out of range", lineno, col)
            self.core = c
            if c not in self.core_order:
                self.core_order.append(c)
            self.seg_core.append(c)
            self.seg_start.append(len(self.ops))
        elif d == ".group":
            gid, xbars = self._ints(args, 2, lineno, col, ".group")
            if self.core is None:
                raise self.err(".group before the first .core directive", lineno, col)
            groups = self.groups.setdefault(self.core, [])
            if gid != len(groups):
                raise self.err(f"array group ids must be 0, 1, 2, ... in order: expected {len(groups)}, got {gid}",
                               lineno, col)
            if not 0 <= xbars < 2 ** 31:
                raise self.err(f"crossbar count {xbars} out of range", lineno, col)
            groups.append(xbars)
        elif d == ".chip_cores":
            (n,) = self._ints(args, 1, lineno, col, ".chip_cores")
            if not 0 <= n < 2 ** 31:
                raise self.err(f".chip_cores {n} out of range", lineno, col)
            self.chip_cores = n
        elif d == ".config_extra":
            try:
                extra = parse_config_extra(args)
            except ValueError as exc:
                raise self.err(f".config_extra: {exc}", lineno, col) from None
            self.config_extra.update(extra)
        elif d == ".nocode":
            if args.strip() or self.core is None or self.seg_core[-1] != self.core or \
                    self.seg_start[-1] != len(self.ops) or any(c == self.core for c in self.seg_core[:-1]):
                raise self.err(".nocode takes no argument and must follow the only .core line of its core",
                               lineno, col)
            self.nocode.add(self.core)
        elif d == ".act_frac":
            a, b = self._ints(args, 2, lineno, col, ".act_frac")
            if self.core is None:
                raise self.err(".act_frac before the first .core directive", lineno, col)
            if not (0 <= a <= 31 and 0 <= b <= 31):
                raise self.err("activation fraction bits must be 0..31", lineno, col)
            self.act_frac[self.core] = (a, b)
        else:
            raise self.err(f"unknown directive {head!r}", lineno, col)

    def generic(self, raw: str, lineno: int) -> tuple:
        """Parse one instruction line with the generic engine (raises AsmError with column)."""
        line = next(iter_lines(raw))
        line.lineno = lineno
        return parse_instruction(self.get_isa(), line, self.file)

    def get_isa(self):
        if self.isa is None:
            self.isa = build_isa(self.word_bits, self.extended, odd_pairs=self.odd_pairs)
        return self.isa

    def run(self) -> PimProgram:
        plans = operand_plans()
        for lineno, raw in enumerate(self.text.splitlines(), start=1):
            body = strip_comment(raw) if ("#" in raw or ";" in raw) else raw
            parts = body.split(None, 1)
            if not parts:
                continue
            head = parts[0]
            if head[-1] == ":" and head[0] != ".":
                label = head[:-1]
                col = len(body) - len(body.lstrip()) + 1
                if not label or not (label[0].isalpha() or label[0] == "_") or \
                        not label.replace("_", "a").replace(".", "a").isalnum():
                    raise self.err(f"bad label {label!r}", lineno, col)
                if label in self.labels:
                    raise self.err(f"duplicate label {label!r} (first defined on line {self.labels[label]})",
                                   lineno, col)
                self.labels[label] = lineno
                body = body.lstrip()[len(head):]
                parts = body.split(None, 1)
                if not parts:
                    continue
                head = parts[0]
            tail = parts[1] if len(parts) > 1 else ""
            if head[0] == ".":
                self.directive(head, tail, lineno, body.index(head) + 1)
                continue
            plan = plans.get(head) or plans.get(head.lower())
            if self.core is None:
                raise self.err("instruction before the first .core directive", lineno,
                               body.index(head) + 1)
            if self.core in self.nocode:
                raise self.err(f"instruction in core {self.core}, declared .nocode", lineno, body.index(head) + 1)
            vals = _fast_operands(plan[1], plan[3], tail) if plan else None
            if vals is None:
                row = self.generic(body, lineno)  # raises on bad input
                spec_cols = operand_plans()[OPCODES[row[0]]][2]
                idx = self.get_isa()._col_index
                vals = [row[idx[c]] for c in spec_cols]
                plan = plans[OPCODES[row[0]]]
            self.ops.append(plan[0])
            self.vals.extend(vals)
            self.lines.append(lineno)
        return self.finish()

    def finish(self) -> PimProgram:
        isa = self.get_isa()
        plans = operand_plans()
        n = len(self.ops)
        ops = np.array(self.ops, dtype=np.int64)
        vals = np.array(self.vals, dtype=np.int64)
        lines = np.array(self.lines, dtype=np.int64)
        nvals = np.zeros(len(OPCODES), dtype=np.int64)
        for m, (code, _, cols, _) in plans.items():
            nvals[code] = len(cols)
        offs = np.zeros(n, dtype=np.int64)
        if n:
            offs[1:] = np.cumsum(nvals[ops])[:-1]
        rows = np.zeros(n, dtype=DTYPE)
        rows["op"] = ops
        bad_line = None
        for code in np.unique(ops).tolist():
            mnem = OPCODES[code]
            idx = np.flatnonzero(ops == code)
            base = offs[idx]
            fields = {f.name: f for f in isa.spec(code).format.fields}
            for j, c in enumerate(plans[mnem][2]):
                v = vals[base + j]
                f = fields.get(c)
                if f is None:
                    bad = v != 0
                else:
                    lo, hi = f.value_range
                    bad = (v < lo) | (v > hi)
                    if f.multiple_of != 1:
                        bad |= v % f.multiple_of != 0
                if bad.any():
                    first = int(lines[idx[np.argmax(bad)]])
                    bad_line = first if bad_line is None else min(bad_line, first)
                rows[c][idx] = v
        if bad_line is not None:
            self._raise_for_line(bad_line)
        cores: dict[int, list[np.ndarray]] = {c: [] for c in self.core_order}
        bounds = self.seg_start + [n]
        for k, c in enumerate(self.seg_core):
            cores[c].append(rows[bounds[k]:bounds[k + 1]])
        out = {c: (np.concatenate(parts) if len(parts) > 1 else parts[0].copy()) for c, parts in cores.items()
               if c not in self.nocode}
        return PimProgram(cores=out, array_group_map=self.groups, chip_cores=self.chip_cores,
                          word_bits=self.word_bits, extended=self.extended, act_frac=self.act_frac,
                          odd_pairs=self.odd_pairs, config_extra=self.config_extra)

    def _raise_for_line(self, lineno: int) -> None:
        self.generic(strip_comment(self.text.splitlines()[lineno - 1]), lineno)  # raises on a bad range
        # the generic parser accepted it: the offender is a column without a field (32-bit offsets)
        raise self.err(f"offsets are not supported in {self.word_bits}-bit mode (spec §3.6)", lineno)


def _scan_text(text: str) -> PimProgram | None:
    """The numba scanner (:mod:`.textscan`); ``None`` when it leaves the text to :class:`_Assembler`."""
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
    return _Assembler(text, file).run()


# --------------------------------------------------------------------------- disassembler
_TEXT_COLS = ("rd", "rs1", "rs2", "len", "imm", "mbiw", "relu", "group", "core", "ev", "val", "ibiw", "obiw",
              "ofs_sel", "ofs_val")
_TEXT_PLAN: RenderPlan | None = None


def _text_plan() -> RenderPlan:
    global _TEXT_PLAN
    if _TEXT_PLAN is None:
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
