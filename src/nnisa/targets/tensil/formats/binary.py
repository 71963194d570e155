"""``.tprog`` binary codec: little-endian instruction words, no header (spec §3, §5.2).

Two paths over the same :class:`~nnisa.targets.tensil.isa.TensilISA` table:

* the reference path (:func:`decode_word`, :func:`encode_row`) on Python integers;
* the bulk path (:func:`decode_program`, :func:`encode_program`) on a ``(n, bytes)`` uint8
  matrix, one header group at a time (tested against the reference).

The decoder is total: a word that is not canonical (unknown header, non-zero padding, a field
past its memory's depth) becomes ``RAW`` and is kept verbatim, so ``encode(decode(b)) == b``.
"""

from __future__ import annotations

import numpy as np

from ....core.errors import DecodeError, EncodeError
from ..config import TensilArch
from ..isa import RAW, TensilISA, build_isa
from ..program import DTYPE, TensilProgram


# ---------------------------------------------------------------------------- reference path
def decode_word(word: int, isa: TensilISA) -> tuple[tuple, str | None]:
    """One word → ``(row tuple, None)`` when canonical, else ``(raw row, reason)``."""
    W = isa.word_bits
    hdr = word >> (W - 8)
    spec = isa.by_opcode.get(hdr)
    zero = (0,) * (len(isa.columns) - 1)
    if spec is None:
        return (RAW,) + zero, non_canonical_reason(word, isa)
    if word & spec.format.reserved_mask:
        return (RAW,) + zero, f"non-zero padding bits (mask 0x{word & spec.format.reserved_mask:x})"
    vals = spec.format.decode(word)
    vals["hdr"] = hdr
    row = tuple(vals.get(c, 0) for c in isa.columns)
    bad = row_offenders(row, isa)
    if bad:
        return (RAW,) + zero, bad[0]
    return row, None


def non_canonical_reason(word: int, isa: TensilISA) -> str:
    """Why a word with an unknown header byte is not an instruction."""
    hdr = word >> (isa.word_bits - 8)
    op, flags = hdr >> 4, hdr & 0xF
    if op == 0x2:
        return f"invalid DataMove kind 0x{flags:x}"
    if op in (0x0, 0x1, 0x3, 0x4, 0xF):
        name = {0: "NoOp", 1: "MatMul", 3: "LoadWeights", 4: "SIMD", 0xF: "Configure"}[op]
        return f"invalid {name} flags 0x{flags:x}"
    if op == 0x5:
        return "LoadLUT (opcode 0x5) needs the x_nnisa_lut extension" if not isa.layout.arch.lut else \
            f"invalid LoadLUT flags 0x{flags:x}"
    return f"reserved opcode 0x{op:x}"


def row_offenders(row, isa: TensilISA) -> list[str]:
    """Messages for every field of ``row`` outside its limit (empty when encodable)."""
    r = dict(zip(isa.columns, (int(v) for v in row)))
    spec = isa.by_opcode.get(r["hdr"])
    if spec is None:
        return [f"unknown header 0x{r['hdr']:x}"]
    out = []
    for f in spec.format.fields:
        v = r[f.name]
        if not f.fits(v):
            lim = isa.limits.get((r["hdr"], f.name))
            if lim is not None and v >= 0:
                out.append(f"{lim.label} {v} ≥ {lim.bound} {lim.value}")
            else:
                lo, hi = f.value_range
                out.append(f"{f.name} = {v} outside {lo}..{hi} ({f.width}-bit field)")
    used = {f.name for f in spec.format.fields}
    arch = isa.layout.arch
    for c in isa.columns[1:]:
        if c not in used and r[c] != 0:
            if c in ("s0", "s1"):
                depth = arch.stride0_depth if c == "s0" else arch.stride1_depth
                out.append(f"stride field {r[c]} ≥ stride{c[1]}_depth {depth}")
            else:
                out.append(f"{spec.mnemonic} has no field {c} (got {r[c]})")
    return out


def encode_row(row, isa: TensilISA, raw_word: int | None = None) -> int:
    """Reference encoder: one IR row (or a raw word) → integer word."""
    if int(row[0]) == RAW:
        if raw_word is None:
            raise EncodeError("raw instruction without its word")
        return raw_word
    bad = row_offenders(row, isa)
    if bad:
        raise EncodeError(f"{isa.by_opcode.get(int(row[0])).mnemonic if int(row[0]) in isa.by_opcode else 'instruction'}: "
                          + "; ".join(bad))
    return isa.by_opcode[int(row[0])].format.encode(dict(zip(isa.columns, (int(v) for v in row))))


# ---------------------------------------------------------------------------- bulk path
def _byte_path_ok(spec) -> bool:
    return all(f.width <= 57 and f.hi // 8 - f.lo // 8 < 8 for f in spec.format.fields)


def decode_program(data: bytes, arch: TensilArch, *, file: str | None = None) -> TensilProgram:
    """Decode a whole ``.tprog`` (bulk path)."""
    isa = build_isa(arch)
    B = isa.layout.instruction_bytes
    if len(data) % B:
        raise DecodeError(f"program length {len(data)} bytes is not a multiple of the {B}-byte instruction "
                          f"size of this architecture", file=file)
    u8 = np.frombuffer(data, dtype=np.uint8).reshape(-1, B)
    n = len(u8)
    rows = np.zeros(n, dtype=DTYPE)
    hdr = u8[:, B - 1].astype(np.int64)
    raw_mask = np.zeros(n, dtype=bool)
    for h in np.unique(hdr).tolist():
        idx = np.flatnonzero(hdr == h)
        spec = isa.by_opcode.get(h)
        if spec is None:
            raw_mask[idx] = True
            continue
        sub = u8[idx]
        if not _byte_path_ok(spec):  # e.g. Configure's 60-bit value: reference path per word
            for i in idx.tolist():
                row, why = decode_word(int.from_bytes(u8[i].tobytes(), "little"), isa)
                rows[i] = row
                raw_mask[i] = why is not None
            continue
        res = np.frombuffer(spec.format.reserved_mask.to_bytes(B, "little"), dtype=np.uint8)
        bad = (sub & res).any(axis=1)
        rows["hdr"][idx] = h
        for f in spec.format.fields:
            v = f.unpack_bytes(sub)
            lo, hi = f.value_range
            bad |= (v < lo) | (v > hi)
            rows[f.name][idx] = v
        raw_mask[idx[bad]] = True
    raw = {}
    for i in np.flatnonzero(raw_mask).tolist():
        rows[i] = (RAW,) + (0,) * (len(DTYPE) - 1)
        raw[i] = int.from_bytes(u8[i].tobytes(), "little")
    return TensilProgram(arch, rows, raw)


def encode_program(prog: TensilProgram) -> bytes:
    """Encode a program (bulk path); every out-of-range field is reported with its index."""
    isa = build_isa(prog.arch)
    B = isa.layout.instruction_bytes
    rows = prog.rows
    n = len(rows)
    out = np.zeros((n, B), dtype=np.uint8)
    hdr = rows["hdr"].astype(np.int64)
    problems: list[str] = []
    for h in np.unique(hdr).tolist():
        idx = np.flatnonzero(hdr == h)
        if h == RAW:
            for i in idx.tolist():
                if i not in prog.raw:
                    problems.append(f"instruction {i}: raw instruction without its word")
                    continue
                w = prog.raw[i]
                if not 0 <= w < 1 << (8 * B):
                    problems.append(f"instruction {i}: raw word 0x{w:x} wider than {B} bytes")
                    continue
                out[i] = np.frombuffer(w.to_bytes(B, "little"), dtype=np.uint8)
            continue
        spec = isa.by_opcode.get(h)
        if spec is None:
            problems.append(f"instruction {int(idx[0])}: unknown header 0x{h:x}")
            continue
        sub_rows = rows[idx]
        if not _byte_path_ok(spec):
            for j, i in enumerate(idx.tolist()):
                try:
                    w = encode_row(tuple(sub_rows[j]), isa)
                except EncodeError as exc:
                    problems.append(f"instruction {i}: {exc.message}")
                    continue
                out[i] = np.frombuffer(w.to_bytes(B, "little"), dtype=np.uint8)
            continue
        sub = np.zeros((len(idx), B), dtype=np.uint8)
        sub[:, B - 1] = h
        for f in spec.format.fields:
            v = sub_rows[f.name].astype(np.int64)
            lo, hi = f.value_range
            badf = (v < lo) | (v > hi)
            if badf.any():
                for j in np.flatnonzero(badf)[:5].tolist():
                    msg = "; ".join(row_offenders(tuple(sub_rows[j]), isa))
                    problems.append(f"instruction {int(idx[j])} ({spec.mnemonic}): {msg}")
            f.pack_bytes(v, sub)
        used = {f.name for f in spec.format.fields}
        for c in DTYPE.names[1:]:
            if c not in used and sub_rows[c].any():
                j = int(np.flatnonzero(sub_rows[c])[0])
                problems.append(f"instruction {int(idx[j])} ({spec.mnemonic}): "
                                + "; ".join(row_offenders(tuple(sub_rows[j]), isa)))
        out[idx] = sub
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise EncodeError("; ".join(problems[:5]) + more)
    return out.tobytes()
