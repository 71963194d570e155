"""Cherry ISA tables, canonical and cherrycore encodings, header, images (spec §2, §7, §8.3-8.4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .cherry_progs import (FAST_RELU_ALT_WORDS, FAST_RELU_HEADER, FAST_RELU_WORDS, TINY_HEADER, TINY_TEXT,
                          relu_program)
from nnisa.core.errors import DecodeError, EncodeError
from nnisa.targets.cherry.formats.binary import (decode_alt, decode_image, decode_words, encode_alt, encode_image,
                                                 encode_words)
from nnisa.targets.cherry.formats.files import decode_packets, encode_packets
from nnisa.targets.cherry.formats.text import assemble, disassemble, format_formula, parse_formula
from nnisa.targets.cherry.isa import COLUMNS, OP, cherry_isa
from nnisa.targets.cherry.program import Header, Program


def test_fast_relu_canonical_words_and_header():
    p = relu_program()
    assert encode_words(p).tolist() == FAST_RELU_WORDS
    assert p.header.pack() == FAST_RELU_HEADER
    assert p.header.loop_word(0) == 0x002006
    assert decode_image(encode_image(p)) == p


def test_fast_relu_alternate_words():
    p = relu_program(encoding="cherrycore")
    assert encode_words(p).tolist() == FAST_RELU_ALT_WORDS
    assert decode_image(encode_image(p), encoding="cherrycore") == p


def test_tiny_prog_words_and_header():
    p = assemble(TINY_TEXT)
    assert encode_words(p).tolist() == [0x9000, 0xA280, 0x9800]
    assert encode_words(p, "cherrycore").tolist() == [0xD000, 0x4A00, 0xC000]
    assert p.header.pack() == TINY_HEADER
    assert p.header.loop_word(0) == 0x0000C2


@pytest.mark.parametrize("word, text", [
    (0xF000, "start_independent_loop 0"), (0xD000, "start_loop 0"), (0x4080, "mem_read 0, 1"),
    (0x4A00, "mem_read 2, 4"), (0x6120, "mem_write 0, 2, 1"), (0x2000, "load 0, INPUT"),
    (0x0180, "store 0, OUTPUT, slot=1"), (0x8000, "relu")])
def test_known_alternate_words(word, text):
    stack: list[int] = []
    row = decode_alt(word, stack)
    assert encode_alt({c: row.get(c, 0) for c, _ in COLUMNS}) == word
    p = assemble(f".encoding cherrycore\n{text}\n" if "loop" not in text else
                 f".encoding cherrycore\n.loop 0 iterations=1\n{text}\nend_loop 0\n")
    assert encode_words(p).tolist()[0] == word


def test_alternate_end_loop_and_legacy_words():
    stack = [5]
    assert decode_alt(0xC000, stack) == {"op": OP["end_loop"], "loop": 5}
    for w, slot in ((0x0000, 0), (0x0300, 3)):
        r = decode_alt(w, [])
        assert r["op"] == OP["store"] and r["reg"] == 0 and r["slot"] == slot


def test_alternate_encoding_rejects_copy_and_lengths():
    with pytest.raises(Exception, match="cherrycore"):
        assemble(".encoding cherrycore\ncopy OUTPUT, ACC\n")
    with pytest.raises(Exception, match="full tiles"):
        assemble(".encoding cherrycore\nload 0, INPUT, 2, 4\n")
    with pytest.raises(DecodeError, match="use_acc"):
        decode_alt(0b1000_1000_1000_0000, [])


def test_reserved_bits_and_illegal_opcodes():
    for op in range(22, 32):
        with pytest.raises(DecodeError, match="unknown opcode"):
            decode_words(np.array([op << 11], np.uint16))
    with pytest.raises(DecodeError, match="reserved"):
        decode_words(np.array([0x4801], np.uint16))  # relu with a low bit set
    with pytest.raises(DecodeError, match="axis 3"):
        decode_words(np.array([(OP["sum"] << 11) | (3 << 8)], np.uint16))
    with pytest.raises(DecodeError, match="header"):
        decode_image(b"\0" * 10)
    with pytest.raises(DecodeError, match="odd"):
        decode_image(b"\0" * 187)


def test_header_signed_values_and_limits():
    h = Header()
    h.formulas[3, 8] = -1
    h.iterations[1] = 262142
    raw = h.pack()
    acc = int.from_bytes(raw, "big")
    assert (acc >> (1488 - 192 - 3 * 162 - 8 * 18 - 18)) & 0x3FFFF == 0x3FFFF
    assert Header.unpack(raw) == h
    h.iterations[1] = 262143
    with pytest.raises(EncodeError, match="iterations"):
        h.pack()
    h.iterations[1] = 5
    h.jumps[2] = 64
    with pytest.raises(EncodeError, match="jump"):
        h.pack()


def test_formula_parser():
    assert parse_formula("2*i + 3*j + 16") == [2, 3, 0, 0, 0, 0, 0, 0, 16]
    assert parse_formula("-(j - 2)*3 + p") == [0, -3, 0, 0, 0, 0, 0, 1, 6]
    assert format_formula(parse_formula("16 - i + 4*k")) == "-i + 4*k + 16"
    assert format_formula([0] * 9) == "0"
    for bad in ("i*j", "q + 1", "2 +", "(i", "3 / i"):
        with pytest.raises(ValueError):
            parse_formula(bad)


def test_packets_round_trip():
    p = relu_program()
    data = encode_packets(p)
    assert data[0] == 0 and data[1:187] == FAST_RELU_HEADER
    assert data[187] == (7 << 2) | 1
    assert decode_packets(data) == p
    with pytest.raises(DecodeError, match="ends inside"):
        decode_packets(data[:-2])


# ------------------------------------------------------------------ hypothesis round trips
def _row_strategy(sz: int, alt: bool = False):
    isa = cherry_isa(sz)
    mnems = [m for m in OP if "loop" not in m and not (alt and m in ("copy", "zero"))]

    @st.composite
    def row(draw):
        m = draw(st.sampled_from(mnems))
        spec = isa.by_mnemonic[m]
        vals = {}
        for f in spec.format.fields:
            lo, hi = f.value_range
            vals[f.name] = draw(st.integers(lo, hi))
        if alt and m in ("load", "store"):
            vals.update(h=0, w=0, slot=draw(st.integers(0, 3)))
        return isa.row(m, **vals)
    return row()


@st.composite
def programs(draw, alt: bool = False):
    sz = draw(st.sampled_from([4, 16, 32]))
    body = draw(st.lists(_row_strategy(sz, alt), min_size=0, max_size=20))
    isa = cherry_isa(sz)
    rows = list(body)
    h = Header()
    if draw(st.booleans()) and rows:
        a = draw(st.integers(0, 7))
        k = draw(st.integers(0, len(rows)))
        start = isa.row(draw(st.sampled_from(["start_loop", "start_independent_loop"])), loop=a)
        rows = rows[:k] + [start] + rows[k:] + [isa.row("end_loop", loop=a)]
        h.iterations[a] = draw(st.integers(1, 262142))
        h.jumps[a] = len(rows) - 1 - k
    for f in draw(st.lists(st.integers(0, 7), max_size=4, unique=True)):
        h.formulas[f] = draw(st.lists(st.integers(-(1 << 17), (1 << 17) - 1), min_size=9, max_size=9))
    return Program(isa.rows(rows), h, sz=sz, org=draw(st.integers(0, 100)),
                   encoding="cherrycore" if alt else "canonical")


@settings(max_examples=150, deadline=None)
@given(programs())
def test_roundtrip_canonical(p):
    img = encode_image(p)
    q = decode_image(img, p.sz, org=p.org)
    assert q == p
    assert encode_image(q) == img
    assert assemble(disassemble(p)) == p
    assert disassemble(assemble(disassemble(p))) == disassemble(p)


@settings(max_examples=100, deadline=None)
@given(programs(alt=True))
def test_roundtrip_cherrycore(p):
    img = encode_image(p)
    assert decode_image(img, p.sz, "cherrycore", org=p.org) == p
    assert assemble(disassemble(p)) == p


@settings(max_examples=50, deadline=None)
@given(programs())
def test_bulk_vs_scalar_codec(p):
    isa = cherry_isa(p.sz)
    words = encode_words(p)
    assert [isa.encode_one(r) for r in p.rows.tolist()] == words.tolist()
    assert [isa.decode_one(int(w)) for w in words.tolist()] == [tuple(r) for r in p.rows.tolist()]


def test_lines_seen_before_assemble_and_fail_the_same():
    """Instruction lines assembled before take the memo (``CherryAssembler.fast_line``): the same
    program, and errors still name the line and column (the Line is rebuilt from the text)."""
    from nnisa.core.errors import AsmError
    from nnisa.targets.cherry.formats import text as T
    src = ".loop 0 iterations=3\n.apu 0 = i\nstart_independent_loop 0\n    load 0, INPUT\n  relu\n" \
          "    store 0, OUTPUT\nend_loop 0\n"
    T._ROWS.clear()
    first = assemble(src)
    assert T._ROWS  # the lines are remembered
    again = assemble(src)
    assert again == first and np.array_equal(again.rows, first.rows)
    bad = ".apu 0 = i\n  start_loop 0\n      load 0, INPUT\n  end_loop 0\n"
    msgs = []
    for _ in range(2):
        with pytest.raises(AsmError) as exc:
            assemble(bad, file="x.s")
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] == "x.s:2:3: loop 0 has no iteration count (add `.loop 0 iterations=N`)"
    assert assemble(".sz 16\nrelu\n").sz == 16 and assemble("relu\n").sz == 4  # the memo is per tile size
