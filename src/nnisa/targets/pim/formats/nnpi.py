"""Binary PIM programs: the NNPI container, raw per-core word files and HEAPLab PIMB import (§3.9).

NNPI layout (all little-endian)::

    0  "NNPI"   4  u16 version = 1   6  u8 word_bits   7  u8 flags (bit 0 = extended)
    8  u32 core_count   12  u32 meta_len   16  meta JSON
    then per core (ascending id): u32 core_id, u32 n_words, n_words words

Words are mapped with ``numpy.frombuffer`` and decoded with the bulk codec of the ISA table.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import orjson

from .... import __version__ as _VERSION
from ....core.bulk_decode import decode_words
from ....core.errors import DecodeError, EncodeError, FormatError, format_offenders
from ....core.fileio import write_atomic
from ....core.jsonsafe import as_int
from ..isa import OPCODE, build_isa
from ..program import DTYPE, PimProgram

MAGIC = b"NNPI"
VERSION = 1
_HEADER = struct.Struct("<4sHBBII")


def encode_words(program: PimProgram) -> dict[int, np.ndarray]:
    """Encode every core in the program's mode; raise one :class:`EncodeError` listing all
    offending instructions of all cores (``offenders``: ``(where, field, value)``)."""
    isa = program.isa
    out: dict[int, np.ndarray] = {}
    offenders: list[tuple] = []
    for c, rows in program.items():
        try:
            out[c] = isa.encode_array(rows, where=lambda i, c=c: f"core {c}, instruction {i}")
        except EncodeError as exc:
            offenders.extend(exc.offenders)
    if offenders:
        mode = f"{program.word_bits}-bit {'extended' if program.extended else 'strict'}"
        hint = None
        if any(f == "group" for _, f, _ in offenders) and not program.extended:
            hint = "mvmul group > 15 needs the extended encoding (spec §3.5): -O extended=true, or extended=True in the API"
        n_instr = len({w for w, _, _ in offenders})
        raise EncodeError(f"{n_instr} instruction(s) cannot be encoded in {mode} mode "
                          f"({len(offenders)} bad field values): {format_offenders(offenders)}",
                          offenders=offenders, hint=hint)
    return out


def _meta(program: PimProgram) -> dict:
    meta = {
        # an empty group list is no groups (as in PimProgram.equals): not written, so text, which has
        # no way to say "no groups", round-trips the container byte for byte
        "array_group_map": {f"core{c}": [int(x) for x in g] for c, g in sorted(program.array_group_map.items())
                            if len(g)},
        "chip_core_count": int(program.core_count),
        "producer": f"nnisa {_VERSION}",
        "encoding": "extended" if program.extended else "strict",
    }
    if program.act_frac:
        meta["act_frac"] = {f"core{c}": list(v) for c, v in sorted(program.act_frac.items())}
    if program.odd_pairs:
        meta["odd_pairs"] = True
    if program.config_extra:
        meta["config_extra"] = program.config_extra
    return meta


def encode_nnpi(program: PimProgram) -> bytes:
    """The NNPI container of a program (mode = ``program.word_bits`` / ``program.extended``)."""
    words = encode_words(program)
    meta = orjson.dumps(_meta(program), option=orjson.OPT_SORT_KEYS)
    parts = [_HEADER.pack(MAGIC, VERSION, program.word_bits, 1 if program.extended else 0, len(words), len(meta)),
             meta]
    for c, w in sorted(words.items()):
        parts.append(struct.pack("<II", c, len(w)))
        parts.append(w.astype(program.isa.word_dtype, copy=False).tobytes())
    return b"".join(parts)


def _core_key(key: str, what: str, name: str) -> int:
    if not (isinstance(key, str) and key.startswith("core") and key[4:].isascii() and key[4:].isdigit()
            and len(key) <= 14 and int(key[4:]) < 2 ** 31):
        raise DecodeError(f"metadata {what}: bad core key {key[:40]!r}", file=name)
    return int(key[4:])


def check_head(head: bytes | memoryview, size: int, name: str | None = None) -> None:
    """Check an NNPI header (the first bytes ``head`` of a ``size``-byte file): magic, version,
    word size, flags and that the metadata fits, before the file is read whole."""
    if len(head) < _HEADER.size:
        raise DecodeError(f"truncated NNPI header ({len(head)} of {_HEADER.size} bytes)", file=name)
    magic, version, word_bits, flags, _, meta_len = _HEADER.unpack_from(head, 0)
    if magic != MAGIC:
        raise DecodeError(f"bad magic {bytes(magic)!r} (expected b'NNPI')", file=name)
    if version != VERSION:
        raise DecodeError(f"unsupported NNPI version {version} (this reader knows {VERSION})", file=name)
    if word_bits not in (32, 64):
        raise DecodeError(f"bad word size {word_bits} (32 or 64)", file=name)
    if flags & ~1:
        raise DecodeError(f"unknown header flags 0x{flags:02x}", file=name)
    if _HEADER.size + meta_len > size:
        raise DecodeError(f"truncated metadata ({size - _HEADER.size} of {meta_len} bytes)", file=name)


def decode_nnpi(data: bytes, lenient: bool = False, *, file: str | None = None) -> PimProgram:
    """Decode an NNPI container.

    Parameters
    ----------
    data
        The file content.
    lenient
        Tolerate non-zero reserved bits (counted in ``program.warnings``) instead of failing.
    file
        Name used in error messages.
    """
    name = file or "<nnpi>"
    mv = memoryview(data)
    check_head(mv[:_HEADER.size], len(mv), name)
    magic, version, word_bits, flags, ncores, meta_len = _HEADER.unpack_from(mv, 0)
    pos = _HEADER.size
    try:
        meta = orjson.loads(mv[pos:pos + meta_len]) if meta_len else {}
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"bad metadata JSON: {exc.msg}", file=name) from None
    if not isinstance(meta, dict):
        raise DecodeError("metadata must be a JSON object", file=name)
    pos += meta_len
    extended = bool(flags & 1)
    odd_pairs = bool(meta.get("odd_pairs", False))
    isa = build_isa(word_bits, extended, odd_pairs=odd_pairs)
    wbytes = word_bits // 8
    sections: list[tuple[int, np.ndarray]] = []
    warnings: list[str] = []
    prev = -1
    try:
        for k in range(ncores):
            if pos + 8 > len(mv):
                raise DecodeError(f"truncated core section header (section {k} of {ncores})", file=name)
            core, nwords = struct.unpack_from("<II", mv, pos)
            pos += 8
            if core <= prev:
                raise DecodeError(f"core sections not in ascending order (core {core} after {prev})", file=name)
            prev = core
            end = pos + nwords * wbytes
            if end > len(mv):
                raise DecodeError(f"core {core}: truncated words ({(len(mv) - pos) // wbytes} of {nwords})",
                                  file=name)
            sections.append((core, np.frombuffer(mv[pos:end], dtype=isa.word_dtype)))
            pos = end
        if pos != len(mv):
            raise DecodeError(f"{len(mv) - pos} trailing bytes after the last core section", file=name)
    except DecodeError:
        _decode_sections(isa, sections, lenient)  # a bad word of an earlier core is reported first
        raise
    cores = _decode_sections(isa, sections, lenient)
    n_reserved = sum(_count_reserved(isa, words) for _, words in sections) if lenient else 0
    if n_reserved:
        warnings.append(f"{n_reserved} word(s) with non-zero reserved bits (ignored, lenient decoding)")
    count = dict(lo=0, hi=2 ** 31 - 1, file=name, error=DecodeError)
    try:
        agm = {_core_key(k, "array_group_map", name): _group_list(v, count)
               for k, v in meta.get("array_group_map", {}).items()}
        act = {_core_key(k, "act_frac", name): (as_int(v[0], "metadata act_frac", lo=0, hi=31, file=name,
                                                        error=DecodeError),
                                                 as_int(v[1], "metadata act_frac", lo=0, hi=31, file=name,
                                                        error=DecodeError))
               for k, v in meta.get("act_frac", {}).items()}
        chip = meta.get("chip_core_count")
        chip = None if chip is None else as_int(chip, "metadata chip_core_count", **count)
    except (TypeError, ValueError, AttributeError, IndexError, KeyError) as exc:
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(f"bad metadata: {str(exc)[:200]}", file=name) from None
    extra = meta.get("config_extra", {})
    return PimProgram(cores=cores, array_group_map=agm, chip_cores=chip, word_bits=word_bits, odd_pairs=odd_pairs,
                      extended=extended, act_frac=act, config_extra=extra if isinstance(extra, dict) else {},
                      warnings=warnings)


def _group_list(values, count: dict) -> list[int]:
    """One core's ``array_group_map`` entry: its ints (each checked by ``as_int`` only when one
    is not a plain int in range, for the exact message)."""
    if type(values) is list and all(type(x) is int and 0 <= x < 2 ** 31 for x in values):
        return list(values)
    return [as_int(x, "metadata array_group_map", **count) for x in values]


def _decode_sections(isa, sections: list[tuple[int, np.ndarray]], lenient: bool) -> dict[int, np.ndarray]:
    """The rows of every core: all words decoded in one call (views of one array), or, when a word
    is bad, core by core for the error of the first bad core."""
    if not sections:
        return {}
    words = np.concatenate([w for _, w in sections]) if len(sections) > 1 else sections[0][1]
    rows = decode_words(isa, words, lenient)
    if rows is None:
        return {c: isa.decode_array(w, lenient=lenient, where=lambda i, c=c: f"core {c}, word {i}")
                for c, w in sections}
    ends = np.cumsum([len(w) for _, w in sections]).tolist()
    return {c: rows[end - len(w):end] for (c, w), end in zip(sections, ends)}


def _count_reserved(isa, words: np.ndarray) -> int:
    w = words.astype(np.uint64)
    ops = isa.opcode_field.unpack_array(w)
    n = 0
    for op in np.unique(ops).tolist():
        s = isa.by_opcode[op]
        n += int(((w[ops == op] & np.uint64(s.format.reserved_mask)) != 0).sum())
    return n


def write_raw_words(program: PimProgram, out_dir: str | os.PathLike) -> list[Path]:
    """Write one headerless little-endian word file ``core<k>.bin`` per core (``--raw``)."""
    out = Path(out_dir)
    paths = []
    for c, w in sorted(encode_words(program).items()):
        p = out / f"core{c}.bin"
        write_atomic(p, w.astype(program.isa.word_dtype, copy=False).tobytes())
        paths.append(p)
    return paths


def read_raw_words(data: bytes, word_bits: int = 64, extended: bool = False, *, core: int = 0,
                   lenient: bool = False, file: str | None = None) -> np.ndarray:
    """Decode one headerless word file (the inverse of :func:`write_raw_words` for one core)."""
    wbytes = word_bits // 8
    if len(data) % wbytes:
        raise DecodeError(f"length {len(data)} is not a multiple of {wbytes} bytes", file=file)
    isa = build_isa(word_bits, extended)
    words = np.frombuffer(data, dtype=isa.word_dtype)
    return isa.decode_array(words, lenient=lenient, where=lambda i: f"core {core}, word {i}")


# --------------------------------------------------------------------------- HEAPLab PIMB
_PIMB = struct.Struct("<4sII")
_PIMB_REC = np.dtype([("op", "u1"), ("rd", "u1"), ("r1", "u1"), ("flags", "u1"), ("r2", "<i4"),
                      ("g1", "<i4"), ("g2", "<i4"), ("g3", "<i4")])


def read_pimb_dir(path: str | os.PathLike) -> PimProgram:
    """Import a HEAPLab fork program directory (``core_<id>.pim`` files plus ``config.json``)."""
    d = Path(path)
    if not d.is_dir():
        raise FormatError("expected a directory with core_<id>.pim files", file=str(d))
    cores: dict[int, np.ndarray] = {}
    warnings: list[str] = []
    n_rs2 = 0
    for f in sorted(d.glob("core_*.pim")):
        stem = f.stem[5:]
        if not stem.isdigit():
            continue
        rows, lost = _read_pimb(f.read_bytes(), str(f))
        cores[int(stem)] = rows
        n_rs2 += lost
    if not cores:
        if (d / "phases.json").exists():   # a phased compile (docs/pim_compiler.md)
            phases = sorted(p.name for p in d.glob("phase*") if p.is_dir())
            raise FormatError(f"a phased compile ({len(phases)} device phases, see phases.json): simulate one phase "
                              f"(nnisa sim -t pim {d / 'phase0'}) or run the model with nnisa run", file=str(d))
        raise FormatError("no core_<id>.pim files found", file=str(d))
    agm: dict[int, list[int]] = {}
    chip = None
    cfg_path = d / "config.json"
    if cfg_path.exists():
        try:
            cfg = orjson.loads(cfg_path.read_bytes())
            agm = {int(k[4:]): [int(x) for x in v] for k, v in cfg.get("array_group_map", {}).items()}
            chip = cfg.get("core_cnt")
        except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
            raise FormatError(f"bad config.json: {exc}", file=str(cfg_path)) from None
    if n_rs2:
        warnings.append(f"{n_rs2} sadd/ssub/smul instruction(s): the PIMB format does not store rs2 "
                        "(HEAPLab defect); rs2 imported as 0")
    return PimProgram(cores=cores, array_group_map=agm, chip_cores=chip, extended=True, warnings=warnings)


def _read_pimb(data: bytes, name: str) -> tuple[np.ndarray, int]:
    if len(data) < _PIMB.size:
        raise FormatError("truncated PIMB header", file=name)
    magic, version, count = _PIMB.unpack_from(data, 0)
    if magic != b"PIMB" or version != 1:
        raise FormatError(f"not a PIMB v1 file (magic {magic!r}, version {version})", file=name)
    if len(data) != _PIMB.size + count * _PIMB_REC.itemsize:
        raise FormatError(f"PIMB length mismatch: {count} records need "
                          f"{_PIMB.size + count * _PIMB_REC.itemsize} bytes, file has {len(data)}", file=name)
    rec = np.frombuffer(data, dtype=_PIMB_REC, count=count, offset=_PIMB.size)
    op = rec["op"].astype(np.int64)
    if (op == 21).any():
        i = int(np.flatnonzero(op == 21)[0])
        raise FormatError("pimsim-nn does not support opcode vsoftmax", file=name, where=f"record {i}")
    if (op > 32).any():
        i = int(np.flatnonzero(op > 32)[0])
        raise FormatError(f"unknown PIMB opcode {int(op[i])}", file=name, where=f"record {i}")
    op = np.where(op > 21, op - 1, op)
    rows = np.zeros(count, dtype=DTYPE)
    rows["op"] = op
    O = OPCODE
    cat = lambda *names: np.isin(op, [O[n] for n in names])
    rows["rd"] = np.where(cat("setbw", "wait", "sync", "send"), 0, rec["rd"])
    rows["rs1"] = np.where(cat("sldi", "setbw", "lldi", "recv", "wait", "sync"), 0, rec["r1"])
    rows["rs1"][op == O["send"]] = rec["rd"][op == O["send"]]
    rows["imm"] = np.where(cat("sldi", "saddi", "smuli"), rec["r2"], 0)
    rows["imm"] = np.where(op == O["lldi"], rec["r2"] & 0xFF, rows["imm"])
    rows["ofs_val"] = np.where(op == O["sld"], rec["g2"], 0)
    rows["ibiw"] = np.where(op == O["setbw"], rec["g1"], 0)
    rows["obiw"] = np.where(op == O["setbw"], rec["g2"], 0)
    mv = op == O["mvmul"]
    rows["mbiw"][mv], rows["relu"][mv], rows["group"][mv] = rec["r2"][mv], rec["g1"][mv], rec["g2"][mv]
    vec = (op >= O["vvadd"]) & (op <= O["vrsl"])
    rows["rs2"][vec] = np.where(cat("vrelu", "vtanh", "vsigm")[vec], 0, rec["r2"][vec])
    xfer = (op >= O["ld"]) & (op <= O["recv"])
    rows["len"] = np.where(vec | xfer, rec["g3"], 0)
    sel_ok = (vec & ~cat("vavg", "vmv")) | cat("ld", "st", "lmv")
    rows["ofs_sel"] = np.where(sel_ok, rec["g1"], 0)
    rows["ofs_val"] += np.where((vec & (op != O["vmv"])) | xfer, rec["g2"], 0)
    rows["core"] = np.where(cat("send", "recv", "sync"), rec["r2"], 0)
    rows["ev"] = np.where(cat("wait", "sync"), rec["g1"], 0)
    rows["val"] = np.where(op == O["wait"], rec["g2"], 0)
    return rows, int(cat("sadd", "ssub", "smul").sum())
