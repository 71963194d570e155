"""pimsim-nn JSON dialect: import and export of PIM programs (spec §6).

:func:`read_json` runs the numba tokenizer of :mod:`.jsonscan` over the decompressed bytes (no
Python objects per instruction; it writes the IR rows in place).  Files are read in one pass
with bounded memory (:mod:`.jsonstream`): a gzip file is inflated piece by piece in a background
thread while the tokenizer consumes the pieces, a plain file is read piece by piece.  Anything
but a clean pass (a malformed or out-of-range instruction, something outside the common dialect)
rereads the whole document: the same tokenizer then places the error (file, line, column, core,
instruction), or an orjson-based path, which gives identical results, decides.
:func:`write_json` renders every core with per-opcode
templates (:mod:`.render`).
"""

from __future__ import annotations

import gzip
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ....core.errors import FormatError
from ....core.fileio import check_regular_file, inflate, is_compressed, read_bytes, write_atomic
from . import jsonscan as js
from . import jsonstream as js_stream
from ..isa import OPCODE, OPCODES
from ..program import DTYPE, PimProgram

if TYPE_CHECKING:
    from .render import RenderPlan  # numba kernels: imported when a program is written

_CORE_KEY = re.compile(r"core([0-9]+)")
#: core ids (and crossbar counts) are 31-bit, like the text form's
MAX_CORE_ID = 1 << 31
_GADDR = (("sld", "rs1"), ("ld", "rs1"), ("st", "rd"))
_SELECT_OPS = set(js._SELECT_OPS)
_BARE_SEL = {"vavg": 2, "lldi": 1, "send": 1, "recv": 1}  # §6.5 rule 4


# =========================================================================== input
def _decompress(raw: bytes, name: str) -> bytes:
    """Plain, gzip (any number of members) or zlib bytes → plain bytes (bounded, core.fileio)."""
    if raw[:2] == b"\x1f\x8b":
        return inflate(raw, name)
    if is_compressed(raw):
        try:
            return inflate(raw, name)
        except FormatError:
            return raw  # looked like zlib but is not: treat as plain text
    return raw


def _line_col(data, pos: int) -> tuple[int, int]:
    """1-based line and column of byte ``pos`` in a bytes-like object."""
    head = np.frombuffer(data, dtype=np.uint8)[:max(0, pos)]
    nl = np.flatnonzero(head == 10)
    line = len(nl) + 1
    return line, len(head) - (int(nl[-1]) + 1 if len(nl) else 0) + 1


def _slot_name(slot: int) -> str:
    return {js.S_OSEL: "offset.offset_select", js.S_OVAL: "offset.offset_value"}.get(slot, js.SLOT_KEYS[slot])


def _semantic_error(status: int, core: int, index: int, slot: int, *, name: str, op: str = "",
                    line: int | None = None, column: int | None = None) -> FormatError:
    where = f"core {core}, instruction {index}"
    if status == js.ST_UNKNOWN_OP:
        msg = f"unknown op {op!r}"
    elif status == js.ST_MISSING_OP:
        msg = "instruction object has no 'op' field"
    elif status == js.ST_LLDI_IMM:
        msg = "lldi imm outside -128..255"
    else:
        msg = f"field {_slot_name(slot)} out of range (32-bit integer expected)"
    return FormatError(msg, file=name, line=line, column=column, where=where)


def read_json(src: str | os.PathLike | bytes | bytearray | memoryview, legacy_groups: str | None = None,
              *, file: str | None = None, fast: bool = True) -> PimProgram:
    """Read a pimsim-nn JSON program (plain, gzip or zlib).

    Parameters
    ----------
    src
        A path, or the file content as bytes.
    legacy_groups
        ``None`` (a missing ``config.array_group_map`` is an error) or ``"by-size"`` (spec §6.4
        rule 5: build one group per distinct crossbar count; the IR is flagged with
        ``program.legacy_groups = "by-size"``).
    file
        Name used in messages when ``src`` is bytes.
    fast
        Use the numba tokenizer (falls back to orjson automatically); ``False`` forces the
        orjson path.

    Returns
    -------
    PimProgram
        With aggregated import warnings in ``program.warnings``.
    """
    if legacy_groups not in (None, "by-size"):
        raise ValueError("legacy_groups must be None or 'by-size'")
    if isinstance(src, (bytes, bytearray, memoryview)):
        name = file or "<bytes>"
        return _read_doc(bytes(src), name, legacy_groups, fast)
    name = str(src)
    check_regular_file(src)
    try:
        with open(src, "rb") as fh:
            head = fh.read(2)
            if fast and len(head) == 2 and not is_compressed(head + b"\x00"):  # plain text: read as it is scanned
                size = os.fstat(fh.fileno()).st_size
                if size >= js_stream.SPLIT_MIN:  # two threads, each reading its half
                    parts = js_stream.scan_file_split(src, size)
                    if parts is not None:
                        prog = _finish_scans(parts, name, legacy_groups)
                        if prog is not None:
                            return prog
                # one thread (also when the split was not clean: the reread decides, in bounded memory)
                prog = _read_streamed(js_stream.file_pieces(fh, head), size, name, legacy_groups, split=False)
                if prog is not None:
                    return prog
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", file=name) from None
    return _read_doc(read_bytes(src), name, legacy_groups, fast)


def _read_doc(raw: bytes, name: str, legacy_groups: str | None, fast: bool) -> PimProgram:
    """Read from the whole file content (plain bytes are in memory already: scanned as they are)."""
    if fast and raw[:2] == b"\x1f\x8b":  # gzip: inflated while it is scanned
        pieces = js_stream.GzipPieces(raw, name)
        try:
            prog = _read_streamed(pieces, pieces.size_hint, name, legacy_groups)
        finally:
            pieces.close()
        if prog is not None:
            return prog
    # not clean in one pass (an error to place, a case for orjson) or zlib: the whole document
    data = _decompress(raw, name)
    del raw
    if fast:
        prog = _read_fast(_BytesFeed(data), name, legacy_groups)
        if prog is not None:
            return prog
    return _read_orjson(data, name, legacy_groups)


def _read_streamed(pieces, size_hint: int, name: str, legacy_groups: str | None,
                   split: bool = True) -> PimProgram | None:
    """The one-pass reader (:mod:`.jsonstream`; a large document in two threads unless not
    ``split``); ``None`` if the whole-document path must decide."""
    if split and size_hint >= js_stream.SPLIT_MIN:
        parts = js_stream.scan_split(pieces, size_hint)
    else:
        got = js_stream.scan_pieces(pieces, size_hint)
        parts = None if got is None else [got]
    return None if parts is None else _finish_scans(parts, name, legacy_groups)


def _finish_scans(parts, name: str, legacy_groups: str | None) -> PimProgram | None:
    config = next((p.config for p in reversed(parts) if p.config is not None), None)
    return _finish_parts([(p.rows, p.segs, p.spans, p.info, p.kept) for p in parts], config, name, legacy_groups)


class _BytesFeed:
    """The scanner's input when all bytes are there (the whole-document path)."""

    def __init__(self, data: bytes):
        self._data = data
        self._buf = np.frombuffer(data, dtype=np.uint8)

    def size_hint(self) -> int:
        return len(self._data)

    def wait(self, seen: int):
        return self._buf, len(self._buf), True

    def finish(self) -> None:
        pass

    def data(self):
        return self._data


def _scan(feed):
    """Run the tokenizer over a whole document: (status, rows, segs, spans, info, buf)."""
    out = js_stream.ScanOutputs(feed.size_hint())
    buf, n, done = feed.wait(0)
    st = out.scan(buf, n, done)
    return st, out.rows, out.segs, out.spans[:int(out.state[9])], out.info, buf


def _read_fast(feed, name: str, legacy_groups: str | None) -> PimProgram | None:
    st, rows, segs, spans, info, buf = _scan(feed)
    if st == js.ST_UNSUPPORTED:
        return None
    if st != js.ST_OK and (spans[:, 0] >= 0).any():
        return None  # an earlier number left to Python may be the first error: orjson decides
    if st != js.ST_OK:
        pos = int(info[0])
        line, col = _line_col(buf, pos)
        op = bytes(buf[int(info[8]):int(info[9])]).decode("ascii", "replace") if st == js.ST_UNKNOWN_OP else ""
        raise _semantic_error(st, int(info[5]), int(info[6]), int(info[7]), name=name, op=op,
                              line=line, column=col)
    config = bytes(buf[int(info[3]):int(info[4])]) if info[3] >= 0 else None
    return _finish_parts([(rows, segs, spans, info, buf)], config, name, legacy_groups)


def _finish_parts(parts: list[tuple], config_bytes: bytes | None, name: str,
                  legacy_groups: str | None) -> PimProgram | None:
    """Clean scans of consecutive parts of one document (rows, segs, spans, info, and the bytes
    the spans' positions index, each; one part, or two of :func:`.jsonstream.scan_split`) → the
    program, as if scanned in one pass."""
    config = None
    if config_bytes is not None:
        try:
            config = orjson.loads(config_bytes)
        except orjson.JSONDecodeError:
            return None
    chosen, ignored = {}, []
    for rows, segs, spans, info, span_bytes in parts:
        segs = segs[:int(info[2])]
        got = js.apply_spans(rows, segs, spans, span_bytes)
        if got is None:
            return None
        ignored += got
        nrows = int(info[1])
        try:  # give back the unused tail of the row allocation (a realloc, no copy)
            rows.resize((nrows,), refcheck=True)
        except ValueError:
            rows = rows[:nrows]
        for c, s, e, ntr, ftr, nsend in segs.tolist():
            chosen[c] = (rows[s:e], ntr, ftr, nsend)  # a repeated key: the last wins
    cores = {c: chosen[c][0] for c in sorted(chosen)}
    first_trunc = next(((c, chosen[c][2]) for c in sorted(chosen) if chosen[c][1]), None)
    n_trunc = sum(v[1] for v in chosen.values())
    n_send = sum(v[3] for v in chosen.values())
    return _build(cores, n_trunc, first_trunc, n_send, config, name, legacy_groups,
                  ignored_keys=list(dict.fromkeys(ignored)))


def _read_orjson(data: bytes, name: str, legacy_groups: str | None) -> PimProgram:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON: {exc.msg}", file=name, line=exc.lineno, column=exc.colno) from None
    if not isinstance(doc, dict):
        raise FormatError(f"top level must be a JSON object, got {type(doc).__name__}", file=name)
    parts, ignored = {}, []
    for key, value in doc.items():
        if key == "config":
            continue
        m = _CORE_KEY.fullmatch(key)
        if not m:
            ignored.append(key)
            continue
        core = int(m.group(1))
        if not isinstance(value, list):
            raise FormatError(f"{key} must be an array of instruction objects", file=name)
        parts[core] = _rows_from_dicts(value, core, name)
    cores: dict[int, np.ndarray] = {}
    n_trunc = n_send = 0
    first_trunc = None
    for c in sorted(parts):
        ops, cols, imm, flags = parts[c]
        rows = np.zeros(len(ops), dtype=DTYPE)
        rows["op"] = ops
        for j, col in enumerate(js.ICOLS):
            rows[col] = cols[:, j]
        rows["imm"] = imm
        cores[c] = rows
        if len(flags):
            t = (flags & js.F_TRUNC) != 0
            if t.any():
                n_trunc += int(t.sum())
                if first_trunc is None:
                    first_trunc = (c, int(np.argmax(t)))
            n_send += int(((flags & js.F_SEND_RS1) != 0).sum())
    return _build(cores, n_trunc, first_trunc, n_send, doc.get("config"), name, legacy_groups,
                  ignored_keys=ignored)


def _number(v: Any, key: str, where: str, name: str) -> float:
    if type(v) is int or type(v) is float:
        try:
            return float(v)
        except OverflowError:
            return float("inf")
    raise FormatError(f"field {key} must be a number, got {type(v).__name__}", file=name, where=where)


def _rows_from_dicts(insts: list, core: int, name: str):
    n = len(insts)
    ops = np.zeros(n, dtype=np.int16)
    vals = np.zeros((n, js.NSLOTS), dtype=np.float64)
    present = np.zeros(n, dtype=np.int64)
    flat = js.FLAT_KEYS
    for i, d in enumerate(insts):
        if type(d) is not dict:
            raise FormatError(f"expected an instruction object, got {type(d).__name__}", file=name,
                              where=f"core {core}, instruction {i}")
        pres = 0
        row = vals[i]
        op = None
        for k, v in d.items():
            if k == "op":
                if type(v) is not str:
                    raise FormatError(f"op must be a string, got {type(v).__name__}", file=name,
                                      where=f"core {core}, instruction {i}")
                op = OPCODE.get(v)
                if op is None:
                    raise _semantic_error(js.ST_UNKNOWN_OP, core, i, -1, name=name, op=v)
            elif k == "offset":
                if type(v) is not dict:
                    raise FormatError(f"offset must be an object, got {type(v).__name__}", file=name,
                                      where=f"core {core}, instruction {i}")
                pres &= ~(3 << 14)
                for kk, vv in v.items():
                    if kk == "offset_select" or kk == "offset_value":
                        slot = js.S_OSEL if kk == "offset_select" else js.S_OVAL
                        row[slot] = _number(vv, f"offset.{kk}", f"core {core}, instruction {i}", name)
                        pres |= 1 << slot
            else:
                slot = flat.get(k)
                if slot is None:
                    continue
                row[slot] = _number(v, k, f"core {core}, instruction {i}", name)
                pres |= 1 << slot
        if op is None:
            raise _semantic_error(js.ST_MISSING_OP, core, i, -1, name=name)
        ops[i] = op
        present[i] = pres
    cols = np.zeros((n, len(js.ICOLS)), dtype=np.int32)
    imm = np.zeros(n, dtype=np.int64)
    flags = np.zeros(n, dtype=np.uint8)
    st, i, slot = js.apply_rows(ops, vals, present, js.SLOT_MAP, cols, imm, flags)
    if st != js.ST_OK:
        raise _semantic_error(st, core, int(i), int(slot), name=name)
    return ops, cols, imm, flags


def _parse_group_map(cfg: dict, name: str) -> dict[int, list[int]]:
    agm = cfg["array_group_map"]
    if not isinstance(agm, dict):
        raise FormatError("config.array_group_map must be an object", file=name)
    out = {}
    for key, groups in agm.items():
        m = _CORE_KEY.fullmatch(key)
        if not m or int(m.group(1)) >= MAX_CORE_ID or not isinstance(groups, list) or not all(
                type(g) in (int, float) and 0 <= g < MAX_CORE_ID and g == int(g) for g in groups):
            raise FormatError(f"config.array_group_map entry {key!r} must map core<k> to a list of "
                              "non-negative integers", file=name)
        out[int(m.group(1))] = [int(g) for g in groups]
    return out


def _build(cores: dict[int, np.ndarray], n_trunc: int, first_trunc: tuple[int, int] | None, n_send: int,
           config: Any, name: str, legacy_groups: str | None, ignored_keys: list) -> PimProgram:
    """Shared tail of both readers: config and aggregated warnings around the IR arrays
    (``cores`` in ascending core id; ``n_trunc``/``first_trunc``/``n_send`` count the
    instructions with truncated numbers and with a send ``rs1``)."""
    big = [c for c in cores if not 0 <= c < MAX_CORE_ID]
    # the fast scanner passes a core key whose id does not fit 64 bits over as an unknown key
    big += [m.group(1) for k in ignored_keys if isinstance(k, str) and (m := _CORE_KEY.fullmatch(k))]
    if big:
        raise FormatError(f"core id {str(big[0])[:40]} out of range (core ids are below 2^31)", file=name)
    warnings: list[str] = []
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise FormatError("config must be a JSON object", file=name)
    if n_trunc:
        warnings.append(f"{n_trunc} instruction(s) with non-integral numbers truncated toward zero like "
                        f"pimsim-nn (first: core {first_trunc[0]}, instruction {first_trunc[1]})")
    if n_send:
        warnings.append(f"{n_send} send instruction(s) carry a non-zero 'rs1', which is ignored: the source "
                        "address register of send is JSON 'rd' (spec §6.3)")
    # odd global-address registers (§1.6): one aggregated line
    ops = {c: np.ascontiguousarray(rows["op"]) for c, rows in cores.items()}  # one strided read per core
    odd = {}
    for mnem, col in _GADDR:
        n = 0
        for c, rows in cores.items():
            idx = np.flatnonzero(ops[c] == OPCODE[mnem])
            if len(idx):
                n += int((rows[col][idx] % 2 != 0).sum())
        if n:
            odd[f"{mnem} {col}"] = n
    if odd:
        total = sum(odd.values())
        detail = ", ".join(f"{k}: {v}" for k, v in odd.items())
        warnings.append(f"{total} instruction(s) use an odd global-address register ({detail}); accepted "
                        "(PIMCOMP-NN single-register addressing, spec §1.6); the program is marked odd_pairs")
    if ignored_keys:
        warnings.append(f"ignored top-level key(s): {', '.join(repr(k) for k in ignored_keys[:10])}"
                        + (f" and {len(ignored_keys) - 10} more" if len(ignored_keys) > 10 else ""))
    chip = config.get("core_cnt")
    if chip is not None and (type(chip) not in (int, float) or chip != int(chip) or chip < 0):
        raise FormatError(f"config.core_cnt must be a non-negative integer, got {chip!r}", file=name)
    chip = None if chip is None else int(chip)
    if chip is None:
        warnings.append("config.core_cnt missing (pimsim-nn requires it); using the highest core id + 1")
    else:
        beyond = [c for c in cores if c >= chip]
        if beyond:
            warnings.append(f"core(s) {', '.join(map(str, beyond))} have ids >= config.core_cnt = {chip}: "
                            "pimsim-nn would ignore them")
    legacy = None
    if "array_group_map" in config:
        agm = _parse_group_map(config, name)
        if legacy_groups:
            warnings.append("legacy_groups ignored: the file has config.array_group_map")
    elif legacy_groups == "by-size":
        agm = {}
        for c, rows in cores.items():
            g = rows["group"][rows["op"] == OPCODE["mvmul"]]
            sizes = np.unique(g)
            agm[c] = [int(s) for s in sizes]
            sel = rows["op"] == OPCODE["mvmul"]
            rows["group"][sel] = np.searchsorted(sizes, rows["group"][sel])
        legacy = "by-size"
        warnings.append("legacy file without array_group_map: groups rebuilt by crossbar count (by-size); "
                        "timing-equivalent for rob_size 1, not usable for functional simulation")
    else:
        raise FormatError("config.array_group_map missing", file=name,
                          hint="PIMCOMP-NN output before its Feb-2025 fix stores crossbar counts in "
                               "mvmul.group; read it with legacy_groups='by-size'")
    bad_group = 0
    for c, rows in cores.items():
        sel = ops[c] == OPCODE["mvmul"]
        if sel.any():
            bad_group += int((rows["group"][sel] >= len(agm.get(c, []))).sum())
    if bad_group:
        warnings.append(f"{bad_group} mvmul name an array group not listed in config.array_group_map")
    extra = {k: v for k, v in config.items() if k not in ("core_cnt", "array_group_map")}
    prog = PimProgram(cores=cores, array_group_map=agm, chip_cores=chip, config_extra=extra, warnings=warnings,
                      odd_pairs=bool(odd))
    if legacy:
        prog.legacy_groups = legacy
    return prog


# =========================================================================== output
_JCOLS = ("rd", "rs1", "rs2", "len", "imm", "mbiw", "relu", "group", "core", "ev", "val", "ibiw", "obiw",
          "ofs_sel", "ofs_val")
_OFFSET_ITEMS = ['{"offset_select": ', ("dec", "ofs_sel"), ', "offset_value": ', ("dec", "ofs_val"), "}"]


def _json_fields(mnem: str) -> dict[str, Any]:
    """JSON key → template item(s) of one instruction (spec §6.2, §6.5)."""
    d = lambda c: [("dec", c)]
    f: dict[str, Any] = {}
    if mnem == "sldi":
        f = {"rd": d("rd"), "imm": d("imm")}
    elif mnem == "sld":
        f = {"rd": d("rd"), "rs1": d("rs1"), "offset_value": d("ofs_val")}
    elif mnem in ("sadd", "ssub", "smul"):
        f = {"rd": d("rd"), "rs1": d("rs1"), "rs2": d("rs2")}
    elif mnem in ("saddi", "smuli"):
        f = {"rd": d("rd"), "rs1": d("rs1"), "imm": d("imm")}
    elif mnem == "setbw":
        f = {"ibiw": d("ibiw"), "obiw": d("obiw")}
    elif mnem == "mvmul":
        f = {"rd": d("rd"), "rs1": d("rs1"), "mbiw": d("mbiw"), "group": d("group"), "relu": d("relu")}
    elif mnem in ("vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vrsu", "vrsl", "vavg"):
        f = {"rd": d("rd"), "rs1": d("rs1"), "rs2": d("rs2"), "len": d("len"), "offset": _OFFSET_ITEMS}
    elif mnem in ("vrelu", "vtanh", "vsigm"):
        f = {"rd": d("rd"), "rs1": d("rs1"), "len": d("len"), "offset": _OFFSET_ITEMS}
    elif mnem == "vmv":
        f = {"rd": d("rd"), "rs1": d("rs1"), "rs2": d("rs2"), "len": d("len")}
    elif mnem in ("ld", "st"):
        f = {"rd": d("rd"), "rs1": d("rs1"), "size": d("len"), "offset": _OFFSET_ITEMS}
    elif mnem == "lldi":
        f = {"rd": d("rd"), "imm": d("imm"), "len": d("len"), "offset": _OFFSET_ITEMS}
    elif mnem == "lmv":
        f = {"rd": d("rd"), "rs1": d("rs1"), "len": d("len"), "offset": _OFFSET_ITEMS}
    elif mnem == "send":
        f = {"rd": d("rs1"), "core": d("core"), "size": d("len"), "offset": _OFFSET_ITEMS}
    elif mnem == "recv":
        f = {"rd": d("rd"), "core": d("core"), "size": d("len"), "offset": _OFFSET_ITEMS}
    elif mnem == "wait":
        f = {"event_register": d("ev"), "wait_value": d("val")}
    elif mnem == "sync":
        f = {"event_register": d("ev"), "core": d("core")}
    f["op"] = [f'"{mnem}"']
    return f


def _json_plan() -> RenderPlan:
    from .render import RenderPlan
    templates = {}
    for code, mnem in enumerate(OPCODES):
        fields = _json_fields(mnem)
        items: list = ["{"]
        for i, key in enumerate(sorted(fields)):
            items.append(("" if i == 0 else ", ") + f'"{key}": ')
            items.extend(fields[key])
        items.append("},\n")
        templates[code] = items
    return RenderPlan(templates, _JCOLS)


_PLAN: RenderPlan | None = None


def dump_json(program: PimProgram, keep_nop: bool = False) -> tuple[bytes, list[str]]:
    """Render a program as pimsim-nn JSON bytes; returns ``(data, warnings)``."""
    global _PLAN
    if _PLAN is None:
        _PLAN = _json_plan()
    warnings: list[str] = []
    agm_cores = set(program.array_group_map) | {c for c, r in program.cores.items() if len(r)}
    config = dict(program.config_extra)
    config["core_cnt"] = int(program.core_count)
    config["array_group_map"] = {f"core{c}": [int(x) for x in program.array_group_map.get(c, [])]
                                 for c in sorted(agm_cores)}
    chunks = [b'{"config": ', orjson.dumps(config, option=orjson.OPT_SORT_KEYS)]
    n_nop = 0
    bare = {OPCODE[m]: s for m, s in _BARE_SEL.items()}
    for c in sorted(program.cores, key=lambda c: f"core{c}"):
        rows = program.cores[c]
        if not keep_nop:
            nop = rows["op"] == 0
            if nop.any():
                n_nop += int(nop.sum())
                rows = rows[~nop]
        chunks.append(f', \n"core{c}": ['.encode())
        if len(rows):
            v = _PLAN.matrix(rows)
            j_sel, j_val = _JCOLS.index("ofs_sel"), _JCOLS.index("ofs_val")
            for code, selbit in bare.items():
                idx = rows["op"] == code
                if idx.any():
                    v[idx, j_sel] = np.where(v[idx, j_val] != 0, selbit, 0)
            body = _PLAN.render(rows["op"], v)
            chunks.append(b"\n" + body[:-2] + b"\n")
        chunks.append(b"]")
    chunks.append(b"}\n")
    if n_nop:
        warnings.append(f"{n_nop} nop instruction(s) dropped (pimsim-nn would stall on them; use keep_nop)")
    return b"".join(chunks), warnings


def write_json(program: PimProgram, path: str | os.PathLike, keep_nop: bool = False,
               compresslevel: int = 6) -> list[str]:
    """Write a program as pimsim-nn JSON (gzip when the name ends in ``.gz``), atomically.

    Returns the export warnings (e.g. dropped nops).
    """
    data, warnings = dump_json(program, keep_nop=keep_nop)
    if str(path).endswith(".gz"):
        data = gzip.compress(data, compresslevel=compresslevel, mtime=0)
    write_atomic(path, data)
    return warnings
