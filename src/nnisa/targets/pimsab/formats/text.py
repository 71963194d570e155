"""PIMSAB assembly text (spec §2.5): assembler with directives and pseudo-instructions, canonical
disassembler.

Directives: ``.config NAME`` (or ``.config_hash HEX``), ``.tile N``, ``@tN`` line prefix, ``.equ NAME,
value``, ``.for v in A..B`` / ``.endfor`` (inclusive range; ``{v}`` and ``{expr}`` substitution),
``.data ADDR, "file"`` or ``.data ADDR, hex:0a0b...``.  Integers may be written as expressions of
``.equ`` names (``A + 65536*3``).  Predication is a mnemonic suffix (``.m``, ``.c``, ``.nc``).  The
pseudo-instruction ``tile_bcast`` expands into ``tile_tx``/``tile_rx`` hops (:mod:`.broadcast`).
Operand parsing and printing come from the ISA table (:mod:`nnisa.core.asm`).
"""

from __future__ import annotations

import ast
import operator
import re
from pathlib import Path

import numpy as np

from ....core.asm import Assembler, Directives, Line, iter_lines, make_formatter, parse_operands, split_operands
from ....core.asm import strip_comment
from ....core.errors import AsmError, NnisaError
from ....core.fileio import read_bytes
from ....core.operands import OperandError, parse_int
from .. import precision as P
from ..config import PimsabConfig, load_config, preset, preset_for_hash, PRESETS
from ..isa import OPCODES, PRED_SUFFIX, SIZE, TILE_ROW, build_isa
from ..program import PimsabProgram, ZERO_SHA
from .broadcast import expand_broadcast, parse_tile_set

ISA = build_isa()
_SUFFIX = {v[1:]: k for k, v in PRED_SUFFIX.items() if v}
_IDENT = re.compile(r"(?<!\w)[A-Za-z_]\w*")
_FOR = re.compile(r"\s*([A-Za-z_]\w*)\s+in\s+(.+?)\s*\.\.\s*(.+?)\s*")
_EXPR_CHARS = re.compile(r"[+*/%()<>&|^~]|(?<=\w)\s*-")
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Div: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor}


def eval_int(expr: str, names: dict[str, int]) -> int:
    """Evaluate an integer expression (``+ - * / // % ** << >> & | ^ ~``, names, parentheses)."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        raise OperandError(f"bad expression {expr.strip()!r}") from None

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise OperandError(f"unknown symbol {node.id!r}")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and (b < 0 or b > 64):
                raise OperandError("exponent outside 0..64")
            if isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod)) and b == 0:
                raise OperandError("division by zero")
            if isinstance(node.op, ast.LShift) and not 0 <= b <= 64:
                raise OperandError("shift outside 0..64")
            return _BINOPS[type(node.op)](a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else (~v if isinstance(node.op, ast.Invert) else v)
        raise OperandError(f"unsupported expression {expr.strip()!r}")

    return ev(tree)


#: the directives of PIMSAB assembly (spec §2.5)
DIRECTIVES = Directives("PIMSAB")


class PimsabAssembler(Assembler):
    """PIMSAB text → :class:`PimsabProgram`: the core assembler with PIMSAB's directives, ``.equ``
    expressions in operands, the ``@tN`` stream prefix, predication suffixes and the
    ``tile_bcast`` pseudo-instruction; checked against the configuration at the end."""

    directives = DIRECTIVES
    labels = True

    def __init__(self, file: str | None, config) -> None:
        super().__init__(ISA, file=file)
        self.cfg: PimsabConfig | None = None if config is None else load_config(config)
        self.cfg_given = config is not None
        self.config_name: str | None = None
        self.config_sha: bytes | None = None
        self.symbols: dict[str, int] = {}
        self.tile: int | None = None
        self.tiles: list[int] = []
        self.segments: list[tuple[int, bytes]] = []

    def config(self) -> PimsabConfig:
        if self.cfg is None:
            self.cfg = preset("base")
        return self.cfg

    def finish(self) -> PimsabProgram:
        cfg = self.config()
        sha = self.config_sha if self.config_sha is not None else cfg.sha256
        prog = PimsabProgram(ISA.rows(self.rows), np.asarray(self.tiles, np.int32), self.segments, sha,
                             self.config_name, np.asarray(self.linenos, np.int32))
        from ..program import check_program
        bad = check_program(prog, cfg)
        if bad is not None:
            i, msg = bad
            raise self.error(f"{prog.mnemonics()[i]}: {msg}", int(prog.lines[i]))
        return prog

    # ---------------------------------------------------------------- {expr} substitution and .for
    def source(self, text: str):
        """The lines, with ``{expr}`` substituted outside ``.for`` bodies (bodies are substituted
        when their loop runs)."""
        depth = 0
        for line in iter_lines(text):
            h = line.head.lower()
            if depth == 0 and ("{" in line.tail or "{" in line.head):
                line = self._subst_line(line, {})
            depth = max(depth + (h == ".for") - (h == ".endfor"), 0)
            yield line

    def _subst_line(self, line: Line, env: dict[str, int]) -> Line:
        return Line(line.lineno, line.col, line.label, self._subst(line.head, env, line),
                    self._subst(line.tail, env, line), line.tail_col, line.label_col)

    def _subst(self, text: str, env: dict[str, int], line: Line) -> str:
        def repl(m):
            try:
                return str(eval_int(m.group(1), {**self.symbols, **env}))
            except OperandError as exc:
                raise self.error(f"{{{m.group(1)}}}: {exc}", line) from None
        return re.sub(r"\{([^{}]*)\}", repl, text)

    @DIRECTIVES.register(".for", "v in A..B", "repeat the body up to .endfor for v = A..B (inclusive; {v} and "
                         "{expr} substituted)", block_end=".endfor")
    def _for(self, line: Line, body: list[Line] | None) -> None:
        if body is None:  # no .endfor: check the header only
            if _FOR.fullmatch(line.tail) is None:
                raise self.error(".for takes 'v in A..B'", line)
            return
        self.feed(self._expand(line, body, {}))

    @DIRECTIVES.register(".endfor", "", "end of a .for body")
    def _endfor(self, line: Line) -> None:
        raise self.error(".endfor without .for", line)

    def _expand(self, line: Line, body: list[Line], env: dict[str, int]):
        m = _FOR.fullmatch(line.tail)
        if m is None:
            raise self.error(".for takes 'v in A..B'", line)
        names = {**self.symbols, **env}
        try:
            a, b = (eval_int(self._subst(m.group(k), env, line), names) for k in (2, 3))
        except OperandError as exc:
            raise self.error(f".for: {exc}", line) from None
        if b - a > 10_000_000:
            raise self.error(".for range too large", line)
        for v in range(a, b + 1):
            inner = {**env, m.group(1): v}
            i = 0
            while i < len(body):
                if body[i].head.lower() == ".for":  # a nested loop: its body up to the matching .endfor
                    depth, j = 1, i + 1
                    while depth:
                        h = body[j].head.lower()
                        depth += (h == ".for") - (h == ".endfor")
                        j += 1
                    yield from self._expand(body[i], body[i + 1:j - 1], inner)
                    i = j
                    continue
                yield self._subst_line(body[i], inner)
                i += 1

    # ---------------------------------------------------------------- directives
    @DIRECTIVES.register(".config", "NAME", "the configuration preset the program is for", before_code=True)
    def _config(self, line: Line) -> None:
        args = line.tail.strip()
        if args not in PRESETS:
            raise self.error(f"unknown preset {args!r} (presets: {', '.join(PRESETS)})", line)
        named = preset(args)
        if self.cfg_given and named.sha256 != self.cfg.sha256:
            raise self.error(f".config {args} does not match the configuration given to the assembler", line)
        self.cfg, self.config_name = named if not self.cfg_given else self.cfg, args

    @DIRECTIVES.register(".config_hash", "HEX", "SHA-256 of the configuration (64 hex digits)")
    def _config_hash(self, line: Line) -> None:
        try:
            digest = bytes.fromhex(line.tail.strip())
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise self.error(".config_hash takes 64 hex digits", line)
        self.config_sha = digest
        if not self.cfg_given and self.cfg is None and (name := preset_for_hash(digest)):
            self.cfg = preset(name)

    @DIRECTIVES.register(".tile", "N", "the instructions that follow go to tile N's stream")
    def _tile(self, line: Line) -> None:
        self.tile = self._int(line.tail, line, ".tile")
        if not 0 <= self.tile < self.config().n_tiles:
            raise self.error(f"tile {self.tile} outside the {self.config().n_tiles}-tile mesh", line)

    @DIRECTIVES.register(".equ", "NAME, value", "a symbol for integer expressions")
    def _equ(self, line: Line) -> None:
        name, sep, value = line.tail.strip().partition(",")
        name = name.strip()
        if not sep or not _IDENT.fullmatch(name):
            raise self.error(".equ takes NAME, value", line)
        self.symbols[name] = self._int(value, line, ".equ")

    def _int(self, text: str, line: Line, what: str) -> int:
        try:
            return eval_int(text, self.symbols)
        except OperandError as exc:
            raise self.error(f"{what}: {exc}", line) from None

    @DIRECTIVES.register(".data", 'ADDR, "file" | ADDR, hex:...', "a DRAM segment")
    def _data(self, line: Line) -> None:
        addr_txt, sep, payload = line.tail.strip().partition(",")
        if not sep:
            raise self.error('.data takes ADDR, "file" or ADDR, hex:...', line)
        addr = self._int(addr_txt, line, ".data")
        payload = payload.strip()
        if payload.lower().startswith("hex:"):
            try:
                data = bytes.fromhex(payload[4:])
            except ValueError:
                raise self.error(".data hex: payload is not hexadecimal", line) from None
        elif len(payload) >= 2 and payload[0] == payload[-1] == '"':
            path = Path(payload[1:-1])
            if not path.is_absolute() and self.file:
                path = Path(self.file).parent / path
            try:
                data = read_bytes(path)
            except NnisaError as exc:
                raise self.error(f".data: {exc.message}", line) from None
        else:
            raise self.error('.data takes ADDR, "file" or ADDR, hex:...', line)
        if not 0 <= addr or addr + len(data) > 1 << 48:
            raise self.error(".data segment outside the 48-bit DRAM address space", line)
        self.segments.append((addr, data))

    # ---------------------------------------------------------------- instructions
    def instruction(self, line: Line) -> None:
        head = line.head
        tile = self.tile
        if head.startswith("@"):
            m = re.fullmatch(r"@t(\d+)", head.lower())
            if m is None:
                raise self.error(f"bad stream tag {head!r} (expected @tN)", line)
            tile = int(m.group(1))
            if not 0 <= tile < self.config().n_tiles:
                raise self.error(f"tile {tile} outside the {self.config().n_tiles}-tile mesh", line)
            rest = line.tail.strip()
            if not rest:
                raise self.error("@tN needs an instruction", line)
            first = rest.split(None, 1)
            col = line.tail_col + (len(line.tail) - len(line.tail.lstrip()))
            line = Line(line.lineno, col, None, first[0], rest[len(first[0]):], col + len(first[0]))
            head = line.head
        mnem, _, suffix = head.lower().partition(".")
        tokens = self.tokens(line)
        if mnem == "tile_bcast":
            self._bcast(line, tokens)
            return
        spec = ISA.by_mnemonic.get(mnem)
        if spec is None:
            raise self.error(f"unknown instruction {line.head!r}", line)
        pred = 0
        if suffix:
            if not spec.facts.predicated or suffix not in _SUFFIX:
                raise self.error(f"{line.head}: unknown predication suffix (use .m, .c or .nc on compute)", line)
            pred = _SUFFIX[suffix]
        vals = list(parse_operands(ISA, spec, tokens, line, self.file))
        idx = ISA._col_index
        if pred:
            vals[idx["pred"]] = pred
        if spec.facts.stream:
            own = vals[idx[spec.facts.stream]]
            if tile is not None and tile != own:
                raise self.error(f"{mnem} executes in the stream of t{own}, not t{tile}", line)
            tile = own
        if tile is None:
            raise self.error(f"{mnem}: no tile (use .tile N or an @tN prefix)", line)
        for c in spec.facts.own:
            vals[idx[c]] = tile
        if mnem == "load_shf" or (mnem in ("tile_tx", "tile_rx") and (vals[idx["shf_en"]] or vals[idx["bcast"]])):
            self._fill_shuffle_size(vals, line)
        self._emit(tuple(vals), tile, line.lineno)

    def _emit(self, row: tuple, tile: int, lineno: int) -> None:
        self.emit(row, lineno)
        self.tiles.append(tile)

    def _fill_shuffle_size(self, vals: list[int], line: Line) -> None:
        from ..program import shuffle_size
        idx = ISA._col_index
        want = shuffle_size(self.config(), vals[idx["bcast"]], vals[idx["shf_en"]], vals[idx["shf"]], 0)
        if vals[idx["size"]] == 0:
            vals[idx["size"]] = want
        elif vals[idx["size"]] != want:
            raise self.error(f"shuffled transfer size {vals[idx['size']]} must be {want} (or all)", line)

    def tokens(self, line: Line) -> list[tuple[int, str]]:
        """Comma-separated tokens; whitespace also separates ``key=value`` options; expressions
        over ``.equ`` names are evaluated."""
        out: list[tuple[int, str]] = []
        for col, tok in split_operands(line.tail, line.tail_col):
            parts = re.split(r"\s+(?=[A-Za-z_]\w*\s*=)", tok) if "=" in tok else [tok]
            for part in parts:
                out.append((col, self._value(part.strip(), line, col)))
        return out

    def _value(self, tok: str, line: Line, col: int) -> str:
        key, eq, val = tok.partition("=")
        body = val if eq else tok
        names = set(_IDENT.findall(body))
        if (names & self.symbols.keys()) or (_EXPR_CHARS.search(body) and not names - self.symbols.keys()):
            try:
                body = str(eval_int(body, self.symbols))
            except OperandError as exc:
                raise self.error(str(exc), line, col) from None
        return f"{key}={body}" if eq else body

    def _bcast(self, line: Line, tokens: list[tuple[int, str]]) -> None:
        opts: dict[str, str] = {}
        pos: list[str] = []
        for _, tok in tokens:
            k, eq, v = tok.partition("=")
            if eq:
                opts[k.strip().lower()] = v.strip()
            elif "to" in opts and len(pos) >= 3:
                opts["to"] += "," + tok  # continuation of a to= list
            else:
                pos.append(tok)
        unknown = set(opts) - {"to", "mode", "bcast", "shf"}
        if len(pos) != 3 or "to" not in opts or unknown:
            raise self.error("tile_bcast takes tS:rS, size, p, to=tA..tB[,tC] [mode=systolic|one_to_many] "
                             "[bcast=0|1] [shf=k]" + (f" (unknown option {sorted(unknown)[0]})" if unknown else ""),
                             line)
        cfg = self.config()
        try:
            src_tile, row = TILE_ROW.parse(pos[0])
            size = SIZE.parse(pos[1])[0]
            prec = P.parse_token(pos[2])
            receivers = parse_tile_set(opts["to"], cfg.n_tiles)
            bcast = int(parse_int(opts.get("bcast", "0")))
            shf = None if "shf" not in opts else int(parse_int(opts["shf"]))
        except OperandError as exc:
            raise self.error(f"tile_bcast: {exc}", line) from None
        mode = opts.get("mode", "systolic" if cfg.broadcast_type == "systolic" else "one_to_many").lower()
        if mode not in ("systolic", "one_to_many"):
            raise self.error("tile_bcast mode must be systolic or one_to_many", line)
        if not 0 <= src_tile < cfg.n_tiles or bcast not in (0, 1) or (shf is not None and not 0 <= shf <= 3):
            raise self.error("tile_bcast: sender tile, bcast or shf out of range", line)
        for tile, row_ in expand_broadcast(cfg, src_tile, row, size, prec, receivers, mode, bcast, shf):
            self._emit(row_, tile, line.lineno)


def assemble_text(text: str, *, file: str | None = None, config=None) -> PimsabProgram:
    """Assemble PIMSAB assembly text into a program (checked against the configuration)."""
    return PimsabAssembler(file, config).assemble(text)


def disassemble(prog: PimsabProgram, config=None) -> str:
    """Canonical text: header, ``.config``, ``.data`` segments, then each tile's stream."""
    prog = prog.tile_major()
    fmt = make_formatter(ISA)
    out = [f"; PIMSAB program: {len(prog)} instructions in {len(prog.stream_tiles())} tile streams"]
    name = preset_for_hash(prog.config_sha) if prog.config_sha != ZERO_SHA else None
    if name is not None:
        out.append(f".config {name}")
    elif prog.config_sha != ZERO_SHA:
        out.append(f".config_hash {prog.config_sha.hex()}")
    for addr, data in prog.segments:
        out.append(f".data 0x{addr:06X}, hex:{bytes(data).hex()}")
    pred_col = ISA._col_index["pred"]
    current = None
    for row, tile in zip(prog.rows.tolist(), prog.tiles.tolist()):
        if tile != current:
            out.append(f".tile {tile}")
            current = tile
        text = fmt(row)
        if row[pred_col]:
            mn, sep, rest = text.partition(" ")
            text = mn + PRED_SUFFIX[row[pred_col]] + sep + rest
        out.append("    " + text)
    return "\n".join(out) + "\n"


__all__ = ["assemble_text", "disassemble", "eval_int", "strip_comment", "OPCODES"]
