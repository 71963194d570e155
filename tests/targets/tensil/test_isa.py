"""Tensil architectures, derived layouts, golden encodings and the total codec (spec §1–§3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.core.errors import ConfigError, DecodeError, EncodeError, UnsupportedError
from nnisa.targets.tensil.config import PRESETS, TensilArch, load_arch, parse_tarch
from nnisa.targets.tensil.formats.binary import decode_program, decode_word, encode_program, encode_row
from nnisa.targets.tensil.isa import RAW, Layout, build_isa, log2ceil

ZCU104_TARCH = """{
    "data_type": "FP16BP8",
    "array_size": 32,
    "dram0_depth": 2097152,
    "dram1_depth": 2097152,
    "local_depth": 16384,
    "accumulator_depth": 4096,
    "simd_registers_depth": 1,
    "stride0_depth": 8,
    "stride1_depth": 8,
    "number_of_threads": 1,
    "thread_queue_depth": 8
  }"""


def test_tarch_writer_reproduces_tensil_bytes():
    assert PRESETS["zcu104"][0].to_tarch() == ZCU104_TARCH
    sizes = {"pynqz1": 301, "artya7100t": 301, "cmoda7": 296, "ultra96v2": 303, "zcu104": 303, "zcu104_uram": 304}
    for name, size in sizes.items():
        assert len(PRESETS[name][0].to_tarch().encode()) == size, name
    assert parse_tarch(ZCU104_TARCH) == PRESETS["zcu104"][0]


def test_tarch_reader_errors(tmp_path):
    d = json.loads(ZCU104_TARCH)
    with pytest.raises(ConfigError, match="missing key"):
        TensilArch.from_dict({k: v for k, v in d.items() if k != "local_depth"})
    with pytest.raises(ConfigError, match="unknown key"):
        TensilArch.from_dict({**d, "colour": 1})
    with pytest.raises(ConfigError, match="outside"):
        TensilArch.from_dict({**d, "local_depth": 1 << 17})
    with pytest.raises(ConfigError, match="data_type"):
        TensilArch.from_dict({**d, "data_type": "INT8"})
    assert TensilArch.from_dict({**d, "x_nnisa_lut": {"tables": 2, "depth": 64}}).lut == (2, 64)
    with pytest.raises(UnsupportedError, match="thread"):
        TensilArch.from_dict({**d, "number_of_threads": 2}).check_supported()
    bad = tmp_path / "bad.tarch"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_arch(str(bad))
    with pytest.raises(ConfigError, match="not a preset"):
        load_arch("nosuch")


# (arch, local/acc/dram0/dram1 bits, op0 addr bits, op1 addr bits, op2 addr bits, bytes) — spec §2
LAYOUTS = [
    ("pynqz1", (13, 11, 20, 20), 13, 20, 13, 8),
    ("cmoda7", (12, 12, 12, 15), 12, 15, 12, 8),
    ("ultra96v2", (15, 12, 21, 21), 15, 21, 15, 9),
    ("zcu104", (14, 12, 21, 21), 14, 21, 14, 9),
    ("zcu104_uram", (16, 15, 21, 21), 16, 21, 16, 9),
    ("tiny2x2", (8, 8, 8, 8), 8, 8, 8, 4),
    ("stride2x2", (7, 7, 7, 7), 7, 7, 7, 4),
    ("large2x2", (16, 16, 16, 16), 16, 16, 16, 7),
    ("formal", (2, 2, 2, 2), 2, 2, 7, 4),
]


@pytest.mark.parametrize("name,bits,op0,op1,op2,nbytes", LAYOUTS)
def test_layouts(name, bits, op0, op1, op2, nbytes):
    L = Layout.from_arch(PRESETS[name][0])
    assert (L.local_bits, L.acc_bits, L.dram0_bits, L.dram1_bits) == bits
    assert (L.op0_addr_bits, L.op1_addr_bits, L.op2_addr_bits, L.instruction_bytes) == (op0, op1, op2, nbytes)
    assert "instruction bytes" in L.table()


def test_log2ceil():
    assert [log2ceil(x) for x in (1, 2, 3, 4, 5, 20480)] == [0, 1, 2, 2, 3, 15]


GOLDEN = [
    ("tiny2x2", "00 00 02 22", "datamove local[0] <- dram1[0], 3"),
    ("tiny2x2", "00 00 09 40", "simd R1 = Zero(I, I)"),
    ("tiny2x2", "01 00 7a 43", "simd.rw O = Max(I, R1), w=acc[1], r=acc[0]"),
    ("tiny2x2", "00 00 00 31", "loadweights.zeroes local[0], 1"),
    ("tiny2x2", "06 00 00 11", "matmul.acc local[6], acc[0], 1"),
    ("stride2x2", "00 80 02 22", "datamove local[0] <- dram1[0]@2^1, 3"),
    ("large2x2", "00 00 02 00 00 00 30", "loadweights local[0], 3"),
    ("large2x2", "00 00 00 00 09 00 40", "simd R1 = Zero(I, I)"),
    ("zcu104", "00 00 01 00 00 00 00 00 f0", "configure dram0_offset, 4096"),
    ("zcu104", "48 06 00 00 00 00 00 00 f0", "configure timeout, 100"),
]


@pytest.mark.parametrize("arch,hexbytes,text", GOLDEN)
def test_golden_encodings(arch, hexbytes, text):
    from nnisa.targets.tensil.formats.text import assemble, disassemble
    a = PRESETS[arch][0]
    data = bytes.fromhex(hexbytes)
    prog = decode_program(data, a)
    assert not prog.raw
    assert disassemble(prog).strip() == text
    assert encode_program(assemble(text, a)) == data


def test_lut_extension_golden():
    from nnisa.targets.tensil.formats.text import assemble, disassemble
    a = PRESETS["zcu104"][0].with_(simd_registers_depth=3, extensions=(("x_nnisa_lut", {"tables": 2, "depth": 64}),))
    for hexbytes, text in (("64 00 00 01 00 00 00 00 50", "loadlut local[100], table=1"),
                           ("00 00 00 05 00 00 01 04 41", "simd.r R1 = Lookup(I, I), r=acc[5]")):
        data = bytes.fromhex(hexbytes)
        prog = decode_program(data, a)
        assert disassemble(prog).strip() == text
        assert encode_program(assemble(text, a)) == data
    # without the extension both words are raw
    plain = decode_program(bytes.fromhex("64 00 00 01 00 00 00 00 50"), PRESETS["zcu104"][0])
    assert plain.raw


def _arch_strategy():
    return st.sampled_from(["tiny2x2", "stride2x2", "large2x2", "formal", "zcu104", "pynqz1", "cmoda7"])


@settings(max_examples=300, deadline=None)
@given(_arch_strategy(), st.data())
def test_decoder_is_total_and_roundtrips(name, data):
    """encode(decode(b)) == b for every bit pattern; bulk == reference path."""
    a = PRESETS[name][0]
    isa = build_isa(a)
    B = isa.layout.instruction_bytes
    hdr = data.draw(st.one_of(st.sampled_from([s.opcode for s in isa.instrs]), st.integers(0, 255)))
    low = data.draw(st.one_of(st.integers(0, (1 << (8 * B - 8)) - 1), st.integers(0, 1 << 12)))
    word = hdr << (8 * B - 8) | low
    raw = word.to_bytes(B, "little")
    prog = decode_program(raw, a)
    assert encode_program(prog) == raw
    row, why = decode_word(word, isa)
    assert (why is None) == (not prog.raw)
    if why is None:
        assert tuple(prog.rows[0]) == row
        assert encode_row(row, isa) == word


@settings(max_examples=200, deadline=None)
@given(_arch_strategy(), st.data())
def test_text_roundtrip_of_canonical_rows(name, data):
    from nnisa.targets.tensil.formats.text import assemble, disassemble
    a = PRESETS[name][0]
    isa = build_isa(a)
    spec = data.draw(st.sampled_from(isa.instrs))
    vals = {f.name: data.draw(st.integers(*f.value_range)) for f in spec.format.fields}
    vals["hdr"] = spec.opcode
    row = tuple(vals.get(c, 0) for c in isa.columns)
    word = encode_row(row, isa)
    prog = decode_program(word.to_bytes(isa.layout.instruction_bytes, "little"), a)
    text = disassemble(prog)
    assert assemble(text, a) == prog
    assert disassemble(assemble(text, a)) == text


def test_raw_words_and_reasons():
    from nnisa.targets.tensil.formats.text import assemble, disassemble
    a = PRESETS["tiny2x2"][0]
    cases = {"00 00 00 70": "reserved opcode 0x7", "00 00 00 25": "invalid DataMove kind 0x5",
             "00 00 00 14": "invalid MatMul flags", "00 00 00 01": "invalid NoOp flags",
             "00 00 80 40": "padding"}
    for hexbytes, why in cases.items():
        prog = decode_program(bytes.fromhex(hexbytes), a)
        assert 0 in prog.raw and prog.rows["hdr"][0] == RAW
        text = disassemble(prog)
        assert text.startswith(".word 0x") and why in text
        assert encode_program(assemble(text, a)) == bytes.fromhex(hexbytes)


def test_addresses_past_depth_decode_raw_and_fail_to_assemble():
    from nnisa.core.errors import AsmError
    from nnisa.targets.tensil.formats.text import assemble
    a = PRESETS["zcu104"][0]  # local depth 16384 in 14 bits: 16384 needs bit 14
    uram = PRESETS["zcu104_uram"][0]  # local 49152 in 16 bits: 50000 fits the field, not the depth
    word = (0x20 << 64) | 50000
    prog = decode_program(word.to_bytes(9, "little"), uram)
    assert prog.raw
    with pytest.raises(AsmError, match="local address 50000 ≥ local_depth 49152"):
        assemble("datamove local[50000] <- dram0[0], 1", uram)
    with pytest.raises(AsmError, match="stride"):
        assemble("datamove local[0] <- dram0[0]@2^8, 1", a)
    with pytest.raises(AsmError, match="size"):
        assemble("matmul local[0], acc[0], 5000", a)
    with pytest.raises(AsmError, match=r"R2 outside"):
        assemble("simd R2 = Zero(I, I)", a)
    with pytest.raises(AsmError, match="unknown instruction"):
        assemble("frobnicate", a)
    with pytest.raises(AsmError, match="loadlut"):
        assemble("loadlut local[0], table=1", a)
    with pytest.raises(EncodeError, match="local address"):
        prog = assemble("nop", a)
        prog.rows = np.array([(0x20, 20000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)], dtype=prog.rows.dtype)
        encode_program(prog)
    with pytest.raises(DecodeError, match="not a multiple"):
        decode_program(b"\x00" * 10, a)


def test_fast_and_general_assembler_paths_agree():
    """The disassembler's exact spelling (one-regex path) and free spellings (general parser)."""
    from nnisa.core.errors import AsmError
    from nnisa.targets.tensil.formats.text import assemble
    a = PRESETS["stride2x2"][0]
    canonical = ("matmul.acc local[3]@2^1, acc[0], 4\ndatamove local[7] +> acc[4]@2^1, 2\n"
                 "simd.rwa R1 = Add(I, R1), w=acc[4], r=acc[0]\nloadweights.zeroes local[0], 1\n")
    free = ("MATMUL.ACC  local[ 3 ] @ 2^1 ,acc[0],4   ; comment\n# full-line comment\n"
            "DataMove local[0x7] +> ACC[4]@2^1, 2\nsimd.rwa R1=add(I,R1) , w = acc[4], r=acc[0]\n"
            "loadweights.zeroes local[0], 0x1\n")
    assert assemble(canonical, a) == assemble(free, a)
    with pytest.raises(AsmError) as exc:
        assemble("nop\nnop\nmatmul local[0], acc[200], 1\n", a)
    assert exc.value.line == 3 and "acc address 200" in str(exc.value)


@settings(max_examples=150, deadline=None)
@given(_arch_strategy(), st.data())
def test_tasm_extended_roundtrip_of_canonical_rows(name, data):
    from nnisa.targets.tensil.formats.tasm import parse_tasm, write_tasm
    a = PRESETS[name][0]
    isa = build_isa(a)
    spec = data.draw(st.sampled_from(isa.instrs))
    vals = {f.name: data.draw(st.integers(*f.value_range)) for f in spec.format.fields}
    vals["hdr"] = spec.opcode
    row = tuple(vals.get(c, 0) for c in isa.columns)
    word = encode_row(row, isa)
    prog = decode_program(word.to_bytes(isa.layout.instruction_bytes, "little"), a)
    assert parse_tasm(write_tasm(prog, extended=True), a) == prog


def test_targets_and_isa_commands(capsys):
    import json
    from nnisa.cli import main
    with pytest.raises(SystemExit):
        main(["targets", "--json"])
    rows = {r["target"]: r for r in json.loads(capsys.readouterr().out)["targets"]}
    caps = set(rows["tensil"]["capabilities"])
    assert caps >= {"isa", "asm", "disasm", "encode", "decode", "read", "write", "compile", "simulate", "stats",
                    "bench"}
    assert "zcu104" in rows["tensil"]["presets"]
    with pytest.raises(SystemExit):
        main(["isa", "-t", "tensil", "--arch", "ultra96v2"])
    out = capsys.readouterr().out
    assert "| instruction bytes | 9 |" in out and "`simd.rw`" in out
