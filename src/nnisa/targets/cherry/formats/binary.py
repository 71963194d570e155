"""Binary Cherry programs: 16-bit words in the canonical or the cherrycore encoding, and images.

Image = the 186-byte header followed by the instruction words, 2 bytes each, big-endian (§2.6).
The canonical words come from the ISA table (:mod:`nnisa.targets.cherry.isa`); the cherrycore
hardware encoding (§2.7) has a 2-bit category and sub-layouts, so it is its own small table here.
"""

from __future__ import annotations

import numpy as np

from ....core.bitfields import Field
from ....core.errors import DecodeError, EncodeError
from ..isa import COLUMNS, OP, cherry_isa, spec_field as F
from ..program import HEADER_BYTES, MAX_PROGRAM, Header, Program

ENCODINGS = ("canonical", "cherrycore")

# --- the cherrycore encoding (§2.7): fields in the spec's MSB-first numbering ------------------
CAT = F("cat", 0, 1)
MEM = {"is_load": F("is_load", 2, 2), "apu": F("apu", 3, 5), "slot": F("slot", 6, 7), "reg": F("reg", 8, 9),
       "zero": F("zero", 10, 10), "skip": F("skip", 11, 11)}
RAM = {"is_write": F("is_write", 2, 2), "capu": F("capu", 3, 5), "mapu": F("mapu", 6, 8), "slot": F("slot", 9, 10)}
PCAT = F("pcat", 2, 4)
UNOP = F("unop", 5, 6)
BINOP, BIN_ACC = F("binop", 5, 7), F("use_acc", 8, 8)
RED = {"red_op": F("red_op", 5, 5), "acc": F("acc", 6, 6), "axis": F("axis", 7, 8), "count": F("count", 9, 10)}
LOOP = {"indep": F("indep", 2, 2), "start": F("start", 3, 3), "loop": F("loop", 4, 6)}
UNOPS = ["relu", "exp", "log", "gtz"]
BINOPS = ["add", "sub", "mul", "div", "mulacc", "pow"]
_USED_MASK = {  # bits each alternate layout uses (the rest must be zero)
    0: 0xFFF0, 1: 0xFFE0, "unop": 0xFE00, "binop": 0xFF80, "mm": 0xF800, "red": 0xFFE0, 3: 0xFE00}


def _pack(fields: list[tuple[Field, int]]) -> int:
    w = 0
    for f, v in fields:
        if not f.fits(v):
            raise EncodeError(f"{f.name}={v} does not fit the cherrycore encoding ({f.width} bits)")
        w |= f.pack(v)
    return w


def encode_alt(row: dict[str, int]) -> int:
    """One canonical IR row → a cherrycore word (raises EncodeError for what it cannot express)."""
    op = row["op"]
    mnem = next(m for m, o in OP.items() if o == op)

    def need_zero(*cols):
        for c in cols:
            if row.get(c, 0):
                raise EncodeError(f"{mnem}: {c}={row[c]} cannot be encoded in the cherrycore encoding "
                                  "(full tiles only)" if c in ("h", "w") else
                                  f"{mnem}: {c}={row[c]} cannot be encoded in the cherrycore encoding")

    if mnem in ("load", "store"):
        need_zero("h", "w", *(() if mnem == "load" else ("zero", "skip")))
        return _pack([(CAT, 0), (MEM["is_load"], int(mnem == "load")), (MEM["apu"], row["apu"]),
                      (MEM["slot"], row["slot"]), (MEM["reg"], row["reg"]), (MEM["zero"], row["zero"]),
                      (MEM["skip"], row["skip"])])
    if mnem in ("mem_read", "mem_write"):
        return _pack([(CAT, 1), (RAM["is_write"], int(mnem == "mem_write")), (RAM["capu"], row["capu"]),
                      (RAM["mapu"], row["mapu"]), (RAM["slot"], row["slot"])])
    if mnem in UNOPS:
        return _pack([(CAT, 2), (PCAT, 0), (UNOP, UNOPS.index(mnem))])
    if mnem in BINOPS and mnem != "mulacc":
        return _pack([(CAT, 2), (PCAT, 1), (BINOP, BINOPS.index(mnem))])
    if mnem == "matmul":
        return _pack([(CAT, 2), (PCAT, 2)])
    if mnem == "mulacc":
        return _pack([(CAT, 2), (PCAT, 3)])
    if mnem in ("sum", "max"):
        return _pack([(CAT, 2), (PCAT, 4), (RED["red_op"], int(mnem == "max")), (RED["acc"], row["acc"]),
                      (RED["axis"], row["axis"]), (RED["count"], row["count"])])
    if mnem in ("start_loop", "start_independent_loop"):
        return _pack([(CAT, 3), (LOOP["indep"], int(mnem == "start_independent_loop")), (LOOP["start"], 1),
                      (LOOP["loop"], row["loop"])])
    if mnem == "end_loop":
        return _pack([(CAT, 3)])
    raise EncodeError(f"{mnem} cannot be encoded in the cherrycore encoding (cherrycore's assembler has no "
                      "copy/zero/transpose)")


def decode_alt(word: int, open_loops: list[int]) -> dict[str, int]:
    """One cherrycore word → a canonical IR row dict; ``open_loops`` is the static loop stack
    (updated here; ``end_loop`` takes the innermost address)."""
    cat = CAT.unpack(word)

    def check(mask_key):
        extra = word & ~_USED_MASK[mask_key] & 0xFFFF
        if extra:
            raise DecodeError(f"cherrycore word 0x{word:04X}: reserved bits set (mask 0x{extra:04X})")

    if cat == 0:
        check(0)
        v = {k: f.unpack(word) for k, f in MEM.items()}
        if v["is_load"]:
            return {"op": OP["load"], "apu": v["apu"], "slot": v["slot"], "reg": v["reg"], "zero": v["zero"],
                    "skip": v["skip"]}
        if v["zero"] or v["skip"]:
            raise DecodeError(f"cherrycore word 0x{word:04X}: store with zero/skip flags")
        return {"op": OP["store"], "apu": v["apu"], "slot": v["slot"], "reg": v["reg"]}
    if cat == 1:
        check(1)
        v = {k: f.unpack(word) for k, f in RAM.items()}
        return {"op": OP["mem_write" if v["is_write"] else "mem_read"], "capu": v["capu"], "mapu": v["mapu"],
                "slot": v["slot"]}
    if cat == 2:
        pcat = PCAT.unpack(word)
        if pcat == 0:
            check("unop")
            return {"op": OP[UNOPS[UNOP.unpack(word)]]}
        if pcat == 1:
            check("binop")
            b = BINOP.unpack(word)
            if b >= len(BINOPS):
                raise DecodeError(f"cherrycore word 0x{word:04X}: unknown binary op {b}")
            if BIN_ACC.unpack(word):
                raise DecodeError(f"cherrycore word 0x{word:04X}: binop use_acc is undefined (illegal)")
            return {"op": OP[BINOPS[b]]}
        if pcat in (2, 3):
            check("mm")
            return {"op": OP["matmul" if pcat == 2 else "mulacc"]}
        if pcat == 4:
            check("red")
            v = {k: f.unpack(word) for k, f in RED.items()}
            if v["axis"] == 3:
                raise DecodeError(f"cherrycore word 0x{word:04X}: reduction axis 3 is illegal")
            return {"op": OP["max" if v["red_op"] else "sum"], "acc": v["acc"], "axis": v["axis"],
                    "count": v["count"]}
        raise DecodeError(f"cherrycore word 0x{word:04X}: unknown processing category {pcat}")
    check(3)
    v = {k: f.unpack(word) for k, f in LOOP.items()}
    if v["start"]:
        open_loops.append(v["loop"])
        return {"op": OP["start_independent_loop" if v["indep"] else "start_loop"], "loop": v["loop"]}
    if v["indep"] or v["loop"]:
        raise DecodeError(f"cherrycore word 0x{word:04X}: end loop must have all other bits 0")
    return {"op": OP["end_loop"], "loop": open_loops.pop() if open_loops else 0}


def _row_tuple(d: dict[str, int]) -> tuple:
    return tuple(int(d.get(c, 0)) for c, _ in COLUMNS)


def encode_words(prog: Program, encoding: str | None = None) -> np.ndarray:
    """Instruction words (uint16) of ``prog`` in its (or the given) encoding."""
    enc = encoding or prog.encoding
    if enc == "canonical":
        def where(i):
            return f"pc {prog.org + i}"
        return prog.isa.encode_array(prog.rows, where=where).astype(np.uint16)
    if enc != "cherrycore":
        raise EncodeError(f"unknown encoding {enc!r} (encodings: {', '.join(ENCODINGS)})")
    out = np.zeros(len(prog.rows), dtype=np.uint16)
    for i, r in enumerate(prog.instructions()):
        try:
            out[i] = encode_alt(r)
        except EncodeError as exc:
            raise EncodeError(f"pc {prog.org + i}: {exc.message}") from None
    return out


def decode_words(words: np.ndarray, sz: int = 4, encoding: str = "canonical") -> np.ndarray:
    """Words → canonical IR rows (reserved bits and illegal opcodes are errors)."""
    words = np.asarray(words, dtype=np.uint16)
    isa = cherry_isa(sz)
    if encoding == "canonical":
        rows = isa.decode_array(words, where=lambda i: f"word {i}")
        bad = np.flatnonzero(rows["axis"] == 3)
        if len(bad):
            raise DecodeError(f"word {int(bad[0])}: reduction axis 3 is illegal")
        return rows
    if encoding != "cherrycore":
        raise DecodeError(f"unknown encoding {encoding!r} (encodings: {', '.join(ENCODINGS)})")
    stack: list[int] = []
    out = []
    for i, w in enumerate(words.tolist()):
        try:
            out.append(_row_tuple(decode_alt(int(w), stack)))
        except DecodeError as exc:
            raise DecodeError(f"word {i}: {exc.message}") from None
    return isa.rows(out)


def encode_image(prog: Program, encoding: str | None = None) -> bytes:
    """Header + big-endian words."""
    if len(prog) > MAX_PROGRAM:
        raise EncodeError(f"program has {len(prog)} instructions; at most {MAX_PROGRAM} fit")
    words = encode_words(prog, encoding)
    return prog.header.pack() + words.astype(">u2").tobytes()


def encode_images(progs: list[Program]) -> list[bytes]:
    """:func:`encode_image` of many programs; canonical ones of one tile size are encoded in one
    pass over all their rows (a compiled model has hundreds of short programs)."""
    for i, p in enumerate(progs):
        if len(p) > MAX_PROGRAM:
            raise EncodeError(f"program {i} has {len(p)} instructions; at most {MAX_PROGRAM} fit")
    if not progs or any(p.encoding != "canonical" or p.sz != progs[0].sz for p in progs):
        return [encode_image(p) for p in progs]
    starts = np.cumsum([0] + [len(p) for p in progs])

    def where(i):
        k = int(np.searchsorted(starts, i, side="right")) - 1
        return f"program {k} pc {progs[k].org + i - int(starts[k])}"

    words = progs[0].isa.encode_array(np.concatenate([p.rows for p in progs]), where=where).astype(">u2")
    return [p.header.pack() + words[a:b].tobytes() for p, a, b in zip(progs, starts[:-1], starts[1:])]


def decode_image(data: bytes, sz: int = 4, encoding: str = "canonical", org: int = 0) -> Program:
    """Parse a program image (header + words)."""
    if len(data) < HEADER_BYTES:
        raise DecodeError(f"a Cherry image starts with a {HEADER_BYTES}-byte header; the file has "
                          f"{len(data)} bytes")
    body = data[HEADER_BYTES:]
    if len(body) % 2:
        raise DecodeError(f"instruction section has an odd number of bytes ({len(body)})")
    if len(body) // 2 > MAX_PROGRAM:
        raise DecodeError(f"program has {len(body) // 2} instructions; at most {MAX_PROGRAM} fit")
    header = Header.unpack(bytes(data[:HEADER_BYTES]))
    words = np.frombuffer(body, dtype=">u2")
    return Program(decode_words(words, sz, encoding), header, sz=sz, org=org, encoding=encoding)
