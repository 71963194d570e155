"""PIMSAB ISA codec: hand-computed words, hypothesis round trips (binary, text, image)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from nnisa.core.errors import AsmError, DecodeError, EncodeError
from nnisa.targets.pimsab import precision as P
from nnisa.targets.pimsab.formats.image import decode_image, encode_image, rows_to_bytes, bytes_to_rows
from nnisa.targets.pimsab.formats.text import assemble_text, disassemble
from nnisa.targets.pimsab.isa import OPCODES, build_isa
from nnisa.targets.pimsab.program import ISA, check_program

from .pimsab_strategies import CFG, instruction, program

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _word(text: str) -> int:
    prog = assemble_text(".tile 0\n" + text + "\n")
    return int.from_bytes(rows_to_bytes(prog.rows)[:16], "big")


def test_precision_bytes():
    assert P.parse_token("i8") == 0x47 and P.parse_token("u1") == 0x00 and P.parse_token("int6") == 0x45
    assert P.parse_token("uint6") == 0x05 and P.parse_token("f32") == 0x80 and P.parse_token("bf16") == 0x82
    assert P.decode(0x80).bits == 32 and P.decode(0x81).bits == 16 and P.decode(0x82).bits == 16
    assert [P.decode(P.make("i", w)).dram_bits for w in (1, 2, 3, 4, 5, 7, 8, 9, 17)] == [1, 2, 8, 4, 8, 8, 8, 16, 24]
    for bad in ("i0", "i65", "q8", "f64", "8"):
        with pytest.raises(ValueError):
            P.parse_token(bad)
    assert not P.valid_byte(0xC0) and not P.valid_byte(0x83)


def test_hand_encoded_words():
    # Listing 1: load r0, 0x000000, all, i8 → opcode 0x20, tr=1, p=0x47
    assert _word("load r0, 0, all, i8") == (0x20 << 121) | (1 << 120) | (0x47 << 77)
    w = _word("mult r16, i16, r8, i8, r0, i8")
    assert w == (0x03 << 121) | (16 << 88) | (0x4F << 80) | (8 << 70) | (0x47 << 62) | (0 << 52) | (0x47 << 44)
    w = _word("add.nc r16, u9, r0, u8, r8, u8, size=512")
    assert w == (0x01 << 121) | (3 << 119) | (512 << 98) | (16 << 88) | (8 << 80) | (7 << 62) | (8 << 52) | (7 << 44)
    assert _word("reduce_tile r24, i32, r16, i16, levels=8") == \
        (0x10 << 121) | (24 << 88) | (0x5F << 80) | (16 << 70) | (0x4F << 62) | (8 << 39)
    assert _word("shift r0, i16, r0, i16, dir=right, dist=3") == \
        (0x0D << 121) | (0x4F << 80) | (0x4F << 62) | (1 << 43) | (2 << 33)
    assert _word("write_rf rf3, -1") == (0x1C << 121) | (3 << 88) | (0xFFFFFFFF << 12)
    assert _word("load_shf r32, 0x1000, all, u4, shf=2") == \
        (0x22 << 121) | (1 << 120) | (1 << 118) | (2 << 116) | (1024 << 95) | (32 << 85) | (3 << 77) | (0x1000 << 29)
    assert _word("tile_tx t1:r56, t0:r24, 61440, i32") == \
        (0x27 << 121) | (61440 << 96) | (0 << 84) | (1 << 72) | (24 << 42) | (56 << 32) | (0x5F << 24)
    assert _word("signal t3:c4, t0:c1, tag=9") == (0x30 << 121) | (3 << 72) | (1 << 62) | (4 << 52) | 9
    assert _word("halt") == 0x3F << 121


def test_big_endian_bytes():
    prog = assemble_text(".tile 0\nhalt\n")
    assert rows_to_bytes(prog.rows) == bytes([0x3F << 1]) + bytes(15)


@SETTINGS
@given(instruction())
def test_word_roundtrip_reference_vs_bulk(item):
    _, row = item
    word = ISA.encode_one(row)
    assert ISA.decode_one(word) == row
    bulk = rows_to_bytes(ISA.rows([row]))
    assert int.from_bytes(bulk, "big") == word
    assert tuple(bytes_to_rows(bulk)[0].tolist()) == row


@SETTINGS
@given(program())
def test_program_roundtrips(prog):
    assert check_program(prog, CFG) is None
    blob = encode_image(prog)
    back = decode_image(blob)
    assert back.equals(prog)
    text = disassemble(prog)
    again = assemble_text(text)
    assert again.equals(prog)
    assert disassemble(again) == text
    assert encode_image(again) == blob


def test_every_opcode_in_the_table():
    isa = build_isa()
    assert {s.mnemonic: s.opcode for s in isa.instrs} == OPCODES
    md = isa.markdown()
    assert all(f"`{m}`" in md for m in OPCODES)


def test_decode_rejects_reserved_and_unknown():
    prog = assemble_text(".tile 0\nload r0, 0, all, i8\n")
    raw = bytearray(encode_image(prog))
    raw[-1] |= 1  # bit 0 of the word: reserved in format M
    with pytest.raises(DecodeError, match="reserved"):
        decode_image(bytes(raw))
    assert decode_image(bytes(raw), lenient=True).rows["op"][0] == OPCODES["load"]
    raw = bytearray(encode_image(prog))
    raw[-16] = 0x13 << 1  # opcode 0x13 is reserved
    with pytest.raises(DecodeError, match="unknown opcode 19"):
        decode_image(bytes(raw))


def test_encode_reports_bad_fields():
    rows = ISA.rows([ISA.row("add", rd=2000), ISA.row("read_rf", ra=40)])
    with pytest.raises(EncodeError) as ei:
        rows_to_bytes(rows)
    assert "rd=2000" in str(ei.value) and "ra=40" in str(ei.value)


def test_listing1_in_paper_form():
    src = """; Listing 1 (mult into i16)
    .config base
    .equ A, 0x000000
    .equ B, 0x010000
    .for t in 0..2
    @t{t} load  r0, A + {t}*65536, all, i8
    @t{t} load  r8, B + {t}*65536, all, i8
    @t{t} mult  r16, i16, r8, i8, r0, i8
    @t{t} store 0x020000 + {t * 131072}, r16, all, i16
    .endfor
    """
    prog = assemble_text(src)
    assert len(prog) == 12 and prog.stream_tiles() == [0, 1, 2]
    assert prog.rows["addr"][prog.stream(2)].tolist() == [131072, 65536 + 131072, 0, 0x020000 + 2 * 131072]
    assert prog.config_name == "base"


def test_data_segments(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"\x01\x02\x03")
    src = '.data 0x100, "x.bin"\n.data 0x200, hex:0a0b\n.tile 0\nhalt\n'
    f = tmp_path / "p.s"
    f.write_text(src)
    prog = assemble_text(src, file=str(f))
    assert prog.segments == [(0x100, b"\x01\x02\x03"), (0x200, b"\x0a\x0b")]
    assert decode_image(encode_image(prog)).segments == prog.segments


@pytest.mark.parametrize("src,match", [
    ("add r0, i65, r0, i8, r8, i8", "width must be 1..64"),
    ("add r0, q8, r0, i8, r8, i8", "expected a precision"),
    ("load r250, 0, all, i8", "exceed the 256 wordlines"),
    ("frob r0", "unknown instruction"),
    ("add.x r0, i8, r0, i8, r8, i8", "predication suffix"),
    ("load_rf rf40, 0", "out of range"),
    ("reduce_cram r0, i16, r8, i8", "needs option levels"),
    ("reduce_tile r0, i16, r8, i8, levels=9", "2\\^levels <= 256"),
    ("load r0, 0, 300, i8, cram=255", "exceeds the 65536 bitlines"),
    ("add r0, f32, r8, i8, r16, i8", "cannot be mixed"),
    ("load_shf r0, 0, 100, i8, shf=0", "must be 256"),
    ("tile_rx t0:r0, t0:r0, 256, i8", "cannot send to itself"),
    ("tile_tx t1:r0, t2:r0, 256, i8", "executes in the stream of t2"),
    ("load r0, 0, all, i8, foo=1", "no option 'foo'"),
    (".tile 200", "outside the 120-tile mesh"),
    (".for i in 0..", "takes 'v in A..B'"),
    ("load r0, X, all, i8", "unknown symbol|expected an integer"),
])
def test_assembler_errors(src, match):
    with pytest.raises(AsmError, match=match) as ei:
        assemble_text(".tile 0\n" + src + "\n", file="prog.s")
    assert str(ei.value).startswith("prog.s:2")


def test_image_errors():
    prog = assemble_text(".tile 0\nhalt\n")
    blob = encode_image(prog)
    with pytest.raises(DecodeError, match="magic"):
        decode_image(b"XXXX" + blob[4:])
    with pytest.raises(DecodeError, match="truncated"):
        decode_image(blob[:10])
    with pytest.raises(DecodeError, match="outside the payload"):
        decode_image(blob[:-1])
    with pytest.raises(DecodeError, match="version"):
        decode_image(blob[:4] + b"\x02\x00" + blob[6:])
