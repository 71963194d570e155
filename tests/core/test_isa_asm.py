"""The ISA table model and the generic assembler on a small made-up ISA."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.core.asm import format_row, iter_lines, make_formatter, parse_instruction, split_operands
from nnisa.core.bitfields import Field, Format
from nnisa.core.errors import AsmError, DecodeError, EncodeError
from nnisa.core.isa import ISA, InstrSpec, Operand
from nnisa.core.operands import Enum, Int, Reg

OP = Field("op", 3, 0)
REG = Reg("r", 8)


def toy_isa():
    cols = [("op", "i2"), ("a", "i4"), ("b", "i4"), ("k", "i8")]
    a, b = Field("a", 6, 4), Field("b", 9, 7)
    k = Field("k", 15, 10, signed=True)
    specs = [
        InstrSpec("nop", 0, Format(16, ((OP, 0),)), (), "misc"),
        InstrSpec("add", 1, Format(16, ((OP, 1),), (a, b)), (Operand(REG, ("a",)), Operand(REG, ("b",))), "alu"),
        InstrSpec("addi", 2, Format(16, ((OP, 2),), (a, k)),
                  (Operand(REG, ("a",)), Operand(Int(omit_default=True), ("k",), optional=True)), "alu"),
        InstrSpec("mode", 3, Format(16, ((OP, 3),), (a,)), (Operand(Enum({"fast": 1, "slow": 2}), ("a",)),), "misc"),
    ]
    return ISA("toy", 16, OP, cols, specs)


def test_overlap_detected():
    with pytest.raises(ValueError, match="overlap"):
        ISA("bad", 16, OP, [("op", "i2")], [InstrSpec("x", 1, Format(16, ((OP, 1),))),
                                             InstrSpec("y", 2, Format(16, ((Field("op", 1, 0), 1),)))])


def test_markdown_lists_every_instruction():
    md = toy_isa().markdown()
    for m in ("nop", "add", "addi", "mode"):
        assert f"`{m}`" in md
    assert "k [15:10] s6" in md


def test_encode_errors_name_instruction_field_value():
    isa = toy_isa()
    rows = isa.rows([isa.row("addi", a=1, k=40), isa.row("add", a=1, b=2), isa.row("add", a=9)])
    with pytest.raises(EncodeError) as ei:
        isa.encode_array(rows)
    assert [(o[1], o[2]) for o in ei.value.offenders] == [("a", 9), ("k", 40)] or \
        sorted((o[1], o[2]) for o in ei.value.offenders) == [("a", 9), ("k", 40)]
    assert "instruction 0 (addi) k=40" in str(ei.value)
    # a column the instruction does not use must be zero
    with pytest.raises(EncodeError, match="k=1"):
        isa.encode_one(isa.row("add", a=1, k=1))


def test_decode_errors():
    isa = toy_isa()
    with pytest.raises(DecodeError, match="unknown opcode 7"):
        isa.decode_array(np.array([7], dtype=np.uint16))
    with pytest.raises(DecodeError, match="reserved"):
        isa.decode_one(0x8001)  # add uses bits 0-9; bit 15 is reserved
    assert isa.decode_one(0x8001, lenient=True)[0] == 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["nop", "add", "addi", "mode"]), st.integers(0, 7),
                          st.integers(0, 7), st.integers(-32, 31)), min_size=1, max_size=30))
def test_roundtrips(items):
    isa = toy_isa()
    rows = []
    for m, a, b, k in items:
        if m == "nop":
            rows.append(isa.row(m))
        elif m == "add":
            rows.append(isa.row(m, a=a, b=b))
        elif m == "addi":
            rows.append(isa.row(m, a=a, k=k))
        else:
            rows.append(isa.row(m, a=1 + (a & 1)))
    arr = isa.rows(rows)
    words = isa.encode_array(arr)
    assert [int(w) for w in words] == [isa.encode_one(r) for r in rows]
    assert np.array_equal(isa.decode_array(words), arr)
    fmt = make_formatter(isa)
    for r in rows:
        text = fmt(r)
        assert text == format_row(isa, r)
        assert parse_instruction(isa, next(iter_lines(text))) == r


def test_asm_errors_have_line_and_column():
    isa = toy_isa()
    src = "nop\n  add r1, r9\n"
    lines = list(iter_lines(src))
    with pytest.raises(AsmError) as ei:
        parse_instruction(isa, lines[1], file="t.s")
    assert str(ei.value).startswith("t.s:2:")
    assert "r9" in str(ei.value)
    with pytest.raises(AsmError, match="unknown instruction"):
        parse_instruction(isa, next(iter_lines("jump r1")))
    with pytest.raises(AsmError, match="takes 2 operand"):
        parse_instruction(isa, next(iter_lines("add r1")))
    with pytest.raises(AsmError, match="out of range"):
        parse_instruction(isa, next(iter_lines("addi r1, 99")))


def test_lines_labels_comments():
    lines = list(iter_lines("start: add r1, r2 # c\n; only comment\n\nend:\n"))
    assert [(l.label, l.head) for l in lines] == [("start", "add"), ("end", "")]
    assert split_operands(" r1, ofs(a, b), 3", 10) == [(11, "r1"), (15, "ofs(a, b)"), (26, "3")]
