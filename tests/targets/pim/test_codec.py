"""Binary codec of the PIM ISA: worked examples, round trips in all four modes, NNPI container."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from nnisa.core.errors import DecodeError, EncodeError
from nnisa.targets.pim.formats import nnpi
from nnisa.targets.pim.isa import build_isa
from nnisa.targets.pim.program import DTYPE, PimProgram
from nnisa.targets.pim.formats.text import assemble_text

from .pim_strategies import program_strategy

MODES = [(64, False), (64, True), (32, False), (32, True)]

# spec §3.8: (text, word_bits, extended, word)
EXAMPLES = [
    ("sldi $r1, 802752", 64, False, 0x000C3FC0_00000041),
    ("sldi $r2, -1", 64, False, 0xFFFFFFFF_00000081),
    ("vvadd $r0, $r1, $r2, 64, ofs(rs1|rs2, -3)", 64, False, 0xFFFFFFEE_0802080A),
    ("mvmul $r0, $r1, 8, 1, 5", 64, False, 0x00000000_80A80809),
    ("mvmul $r0, $r1, 8, 0, 63", 64, True, 0x00000000_07E80809),
    ("ld $r0, $r2, 1000, ofs(0, 0)", 64, False, 0x00000000_7D001018),
    ("send $r0, 42, 1000, 0", 64, False, 0x00000000_7D01501C),
    ("lldi $r3, 0xFF, 16, 8", 64, False, 0x00000040_0207F8DA),
    ("wait 3, 2", 64, False, 0x00000000_000010DE),
    ("sync 0, 43", 64, False, 0x00000000_0001581F),
    ("setbw 8, 16", 64, False, 0x00000000_00008208),
    ("sldi $r0, -5", 32, False, 0xFFFFD801),
    ("saddi $r4, $r4, -1", 32, False, 0xFFFF2106),
    ("sldi $r1, 802752", 32, False, 0x61FE0041),
    ("mvmul $r0, $r1, 8, 0, 63", 32, True, 0x07E80809),
]


def _asm(line, bits, ext):
    return assemble_text(f".mode {bits}\n.encoding {'extended' if ext else 'strict'}\n.core 0\n{line}\n")


@pytest.mark.parametrize("text,bits,ext,word", EXAMPLES)
def test_worked_examples(text, bits, ext, word):
    prog = _asm(text, bits, ext)
    blob = nnpi.encode_nnpi(prog)
    words = np.frombuffer(blob[-bits // 8:], dtype=f"<u{bits // 8}")
    assert int(words[0]) == word
    back = nnpi.decode_nnpi(blob)
    assert back.equals(prog)


def test_first_example_bytes():
    prog = _asm("sldi $r1, 802752", 64, False)
    assert nnpi.encode_nnpi(prog)[-8:] == bytes.fromhex("41000000c03f0c00")


def _same(a: PimProgram, b: PimProgram):
    assert sorted(a.cores) == sorted(b.cores)
    for c in a.cores:
        np.testing.assert_array_equal(a.cores[c], b.cores[c])
    assert a.equals(b)


@pytest.mark.parametrize("bits,ext", MODES)
def test_roundtrip_binary(bits, ext):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(program_strategy(bits, ext, exclude=()))
    def run(prog):
        blob = nnpi.encode_nnpi(prog)
        back = nnpi.decode_nnpi(blob)
        _same(prog, back)
        assert (back.word_bits, back.extended) == (bits, ext)
        assert back.chip_cores == prog.core_count
    run()


def test_strict_group_offenders_listed():
    rows = np.zeros(5, dtype=DTYPE)
    rows["op"] = 9
    rows["mbiw"] = 8
    rows["group"] = [1, 16, 3, 63, 20]
    prog = PimProgram(cores={3: rows})
    with pytest.raises(EncodeError) as ei:
        nnpi.encode_nnpi(prog)
    where = [w for w, f, v in ei.value.offenders]
    assert where == ["core 3, instruction 1 (mvmul)", "core 3, instruction 3 (mvmul)",
                     "core 3, instruction 4 (mvmul)"]
    assert "extended" in str(ei.value)
    assert len(nnpi.encode_nnpi(prog.with_mode(extended=True))) > 0


def test_32bit_offset_rejected():
    isa = build_isa(64, False)
    rows = isa.rows([isa.row("vvadd", rd=0, rs1=1, rs2=2, len=4, ofs_sel=1, ofs_val=3)])
    with pytest.raises(EncodeError, match="ofs"):
        nnpi.encode_nnpi(PimProgram(cores={0: rows}, word_bits=32))


def _blob():
    prog = _asm("sldi $r1, 5\nsetbw 8, 8\nvvadd $r0, $r1, $r2, 4", 64, False)
    return nnpi.encode_nnpi(prog)


@pytest.mark.parametrize("mutate,match", [
    (lambda b: b[:10], "truncated NNPI header"),
    (lambda b: b"XXXX" + b[4:], "bad magic"),
    (lambda b: b[:4] + struct.pack("<H", 9) + b[6:], "version"),
    (lambda b: b[:6] + bytes([48]) + b[7:], "word size"),
    (lambda b: b[:7] + bytes([6]) + b[8:], "flags"),
    (lambda b: b[:-3], "truncated words"),
    (lambda b: b + b"\0", "trailing"),
    (lambda b: b[:-8] + (63).to_bytes(8, "little"), "unknown opcode 63"),
    (lambda b: b[:-8] + (0x0008 | 8 << 6 | 8 << 11 | 1 << 40).to_bytes(8, "little"), "reserved bits"),
])
def test_decode_errors(mutate, match):
    with pytest.raises(DecodeError, match=match):
        nnpi.decode_nnpi(mutate(_blob()), file="x.nnpi")


def test_lenient_reserved_bits():
    bad = _blob()[:-8] + (0x0008 | 8 << 6 | 8 << 11 | 1 << 40).to_bytes(8, "little")  # setbw + junk
    prog = nnpi.decode_nnpi(bad, lenient=True)
    assert prog.cores[0]["op"][-1] == 8
    assert any("reserved" in w for w in prog.warnings)


def test_raw_words(tmp_path):
    prog = _asm("sldi $r1, 802752\nsetbw 8, 16", 64, False)
    paths = nnpi.write_raw_words(prog, tmp_path)
    assert [p.name for p in paths] == ["core0.bin"]
    data = paths[0].read_bytes()
    assert data[:8] == bytes.fromhex("41000000c03f0c00") and len(data) == 16
    np.testing.assert_array_equal(nnpi.read_raw_words(data), prog.cores[0])
    with pytest.raises(DecodeError, match="multiple of 8"):
        nnpi.read_raw_words(data[:-1])


def test_pimb_import(tmp_path):
    rec = np.zeros(3, dtype=nnpi._PIMB_REC)
    rec[0] = (1, 2, 0, 0, 77, 0, 0, 0)  # sldi $r2, 77
    rec[1] = (9, 0, 1, 0, 8, 1, 5, 0)  # mvmul rd0 rs1 mbiw 8 relu 1 group 5
    rec[2] = (23, 0, 0, 0, 42, 0, 0, 64)  # send (PIMB 29 -> ours 28)? 23 -> ld in ours
    (tmp_path / "core_0.pim").write_bytes(b"PIMB" + struct.pack("<II", 1, 3) + rec.tobytes())
    prog = nnpi.read_pimb_dir(tmp_path)
    r = prog.cores[0]
    assert r["op"].tolist() == [1, 9, 22] and r["imm"][0] == 77 and r["group"][1] == 5 and r["relu"][1] == 1
    rec[0]["op"] = 21
    (tmp_path / "core_0.pim").write_bytes(b"PIMB" + struct.pack("<II", 1, 3) + rec.tobytes())
    with pytest.raises(Exception, match="vsoftmax"):
        nnpi.read_pimb_dir(tmp_path)
