"""Generic ISA features: words wider than 64 bits (byte-matrix bulk codec) and keyword operands."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.core.asm import Line, format_row, make_formatter, parse_operands
from nnisa.core.bitfields import Field, Format
from nnisa.core.errors import AsmError, DecodeError
from nnisa.core.isa import ISA, InstrSpec, Operand
from nnisa.core.operands import Int, Reg

OP = Field("op", 99, 96)
COLS = [("op", "i2"), ("a", "i8"), ("b", "i8"), ("k", "i4")]


def wide_isa():
    a, b = Field("a", 70, 30), Field("b", 95, 80, signed=True)  # a crosses the 64-bit boundary
    k = Field("k", 7, 0)
    reg = Reg("r", 256)
    return ISA("wide", 100, OP, COLS, [
        InstrSpec("x", 1, Format(100, ((OP, 1),), (a, b)), (Operand(Int(), ("a",)), Operand(Int(), ("b",)))),
        InstrSpec("y", 2, Format(100, ((OP, 2),), (k,)),
                  (Operand(reg, ("k",)), Operand(Int(omit_default=True), ("a",), True, keyword="size"))),
    ])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 ** 41 - 1), st.integers(-2 ** 15, 2 ** 15 - 1)), min_size=1, max_size=20))
def test_wide_bulk_matches_reference(items):
    isa = wide_isa()
    rows = isa.rows([isa.row("x", a=a, b=b) for a, b in items])
    mat = isa.encode_array(rows)
    assert mat.shape == (len(items), 13) and mat.dtype == np.uint8
    for i, (a, b) in enumerate(items):
        assert int.from_bytes(mat[i].tobytes(), "little") == isa.encode_one(rows[i])
    assert np.array_equal(isa.decode_array(mat), rows)


def test_wide_decode_errors():
    isa = wide_isa()
    mat = isa.encode_array(isa.rows([isa.row("x", a=5, b=-1)]))
    bad = mat.copy()
    bad[0, 0] |= 1  # bit 0 is reserved for x
    with pytest.raises(DecodeError, match="reserved bits set"):
        isa.decode_array(bad)
    bad = mat.copy()
    bad[0, 12] = 0x0F  # opcode 15
    with pytest.raises(DecodeError, match="unknown opcode 15"):
        isa.decode_array(bad)


def _line(tail):
    return Line(1, 1, None, "y", tail, 2)


def test_keyword_operands():
    isa = wide_isa()
    spec = isa.spec("y")
    row = parse_operands(isa, spec, [(2, "r7"), (6, "size=12")], _line(" r7, size=12"))
    assert row == isa.row("y", k=7, a=12)
    assert format_row(isa, row) == "y r7, size=12"
    assert make_formatter(isa)(row) == "y r7, size=12"
    assert format_row(isa, isa.row("y", k=7)) == "y r7"
    assert spec.syntax == "y $k, [size=a]"
    with pytest.raises(AsmError, match="no option 'foo'"):
        parse_operands(isa, spec, [(2, "r7"), (6, "foo=1")], _line(""))
    with pytest.raises(AsmError, match="given twice"):
        parse_operands(isa, spec, [(2, "r7"), (6, "size=1"), (9, "size=2")], _line(""))
    with pytest.raises(AsmError, match="after an option"):
        parse_operands(isa, spec, [(2, "size=1"), (6, "r7")], _line(""))
