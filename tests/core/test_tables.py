"""The house ISA-table idiom, on every target: codec and text round trips drawn from the tables,
the facts the cost models read, and the directive registry of every assembler."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nnisa.core.asm import Assembler, Directives, format_row, iter_lines, parse_instruction
from nnisa.core.errors import AsmError
from nnisa.core.isa import Instr, parse_syntax, table_isa
from nnisa.core.bitfields import Field
from nnisa.core.operands import Int, Reg
from nnisa.core.target import get_target


def _isas():
    """Every bit-field ISA the targets build (all modes and architectures that change the table)."""
    from nnisa.targets.cherry.isa import cherry_isa
    from nnisa.targets.pim.isa import build_isa as pim_isa
    from nnisa.targets.pimsab.isa import build_isa as pimsab_isa
    from nnisa.targets.tensil.config import PRESETS
    from nnisa.targets.tensil.isa import build_isa as tensil_isa
    out = {f"pim-{w}-{'ext' if e else 'strict'}": pim_isa(w, e) for w in (32, 64) for e in (False, True)}
    out.update({f"cherry-sz{sz}": cherry_isa(sz) for sz in (4, 16, 32)})
    out["pimsab"] = pimsab_isa()
    out.update({f"tensil-{n}": tensil_isa(a) for n, (a, *_) in sorted(PRESETS.items())})
    return out


ISAS = _isas()


def _value(draw, spec, f):
    """A canonical value of field ``f`` (what the decoder gives back: signed for wrap fields)."""
    lo, hi = f.value_range
    if f.wrap_unsigned:
        hi = (1 << (f.width - 1)) - 1
    kind = next((o.kind for o in spec.operands if f.name in o.columns), None)
    if type(kind).__name__ == "Prec":  # PIMSAB precision bytes: the defined ones print and parse
        from nnisa.targets.pimsab import precision as P
        return draw(st.integers(0, 255).filter(lambda b: P.valid_byte(b) and lo <= b <= hi))
    v = draw(st.integers(lo, hi))
    return v - v % f.multiple_of if f.multiple_of != 1 and v - v % f.multiple_of >= lo else v


@st.composite
def rows(draw, isa, text=False):
    """A row of the table; for ``text``, only the columns its operands name (the others come from
    the context of a program: PIMSAB's stream tile and predication suffix)."""
    spec = draw(st.sampled_from(isa.instrs))
    named = {c for o in spec.operands for c in o.columns}
    vals = {f.name: _value(draw, spec, f) for f in spec.format.fields if not text or f.name in named}
    return isa.row(spec.mnemonic, **vals)


@pytest.mark.parametrize("name", list(ISAS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_codec_round_trip_from_the_table(name, data):
    """decode(encode(x)) == x for every instruction of the table, word by word and in bulk."""
    isa = ISAS[name]
    batch = [data.draw(rows(isa)) for _ in range(4)]
    for row in batch:
        assert isa.decode_one(isa.encode_one(row)) == row
    arr = isa.rows(batch)
    assert not isa.bad_rows(arr).any()
    if isa.wide and any(f.width > 57 for r in batch for f in isa.spec(r[0]).format.fields):
        return  # the core byte-matrix path stops at 57-bit fields (Tensil's Configure value has its own path)
    assert isa.decode_array(isa.encode_array(arr)).tolist() == arr.tolist()


@pytest.mark.parametrize("name", list(ISAS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_text_round_trip_from_the_table(name, data):
    """The table's printer and parser: asm(disasm(x)) == x and disasm(asm(t)) == t for one line."""
    isa = ISAS[name]
    drawn = data.draw(rows(isa, text=True))
    text = format_row(isa, drawn)
    row = parse_instruction(isa, next(iter_lines(text)))  # the canonical row of the text
    assert format_row(isa, row) == text
    assert parse_instruction(isa, next(iter_lines(format_row(isa, row)))) == row
    # the text loses nothing but what a kind defines away (PIMSAB's shuffle pattern while disabled)
    lossy = ("shf", "shf_en") if name == "pimsab" else ()
    assert [v for c, v in zip(isa.columns, row) if c not in lossy] == \
        [v for c, v in zip(isa.columns, drawn) if c not in lossy]


def test_rows_build_the_table_and_facts_are_read_from_it():
    common = {"a": Field("a", 6, 4), "k": Field("k", 15, 10, signed=True)}
    isa = table_isa("toy", 16, Field("op", 3, 0), [("op", "i2"), ("a", "i4"), ("k", "i8")], [
        Instr("nop", 0, "", "", "misc", "nothing", {"cost": 1}, "C"),
        Instr("addi", 1, "a k", "a, [k]", "alu", "a += k", {"cost": 3, "unit": "alu"}, "C"),
        Instr("lda", 2, "wide", "a, [k=]", "mem", "a ← mem", {"cost": 7, "unit": "mem"}, "M"),
    ], {"C": common, "M": {"wide": Field("a", 9, 4)}}, {"a": (Reg("r", 64), "a"), "k": (Int(omit_default=True), "k")})
    assert isa.spec("lda").format.field("a").width == 6 and isa.spec("addi").syntax == "addi $a, [k]"
    assert isa.fact_array("cost").tolist() == [1, 3, 7]
    assert isa.opcodes_where("unit", "mem") == (2,) and isa.fact("addi", "unit") == "alu"
    assert format_row(isa, isa.row("addi", a=1)) == "addi r1"  # a trailing optional at its default
    assert format_row(isa, isa.row("lda", a=40)) == "lda r40"
    with pytest.raises(ValueError, match="not in the operand table"):
        parse_syntax("a, b", {"a": (Int(), "a")}, "x")


def test_pim_facts_are_the_tables_the_models_used():
    from nnisa.targets.pim.isa import build_isa
    isa = build_isa()
    reads = {2: 1, 3: 2, 4: 2, 5: 2, 6: 1, 7: 1, 9: 2, 10: 3, 11: 3, 12: 3, 13: 3, 14: 3, 15: 3, 16: 3, 17: 3,
             18: 2, 19: 2, 20: 2, 21: 3, 22: 3, 23: 3, 24: 2, 25: 2, 26: 1, 27: 2, 28: 1, 29: 1}
    assert isa.fact_array("reads", 0, np.int64, 32).tolist() == [reads.get(o, 0) for o in range(32)]
    assert isa.opcodes_where("srcs", 2) == tuple(range(10, 17))
    assert isa.opcodes_where("obyw_wb") == (12, 15, 16, 19, 20, 22, 23)
    assert isa.opcodes_where("one_elem") == (13, 17)


# --------------------------------------------------------------------------- directive registry
UNKNOWN = {"pim": ".core 0\n.bogus 3\n", "dais": ".dais 1\n.bogus 3\n", "tensil": "nop\n.bogus 3\n",
           "pimsab": ".tile 0\n.bogus 3\n", "cherry": ".sz 4\n.bogus 3\n"}


@pytest.mark.parametrize("target", list(UNKNOWN))
def test_every_assembler_refuses_an_unknown_directive_with_file_and_line(target):
    t = get_target(target)
    cfg = {"config": "tiny2x2"} if target == "tensil" else {}
    with pytest.raises(AsmError) as ei:
        t.assemble(UNKNOWN[target], file="prog.s", **cfg)
    err = ei.value
    assert (err.file, err.line, err.column) == ("prog.s", 2, 1)
    assert "unknown directive '.bogus' (directives: ." in str(err) and "\n" not in str(err)
    assert str(err).startswith("prog.s:2:1: ")


def test_directive_registry_and_block_directives():
    reg = Directives("toy")
    seen = []

    class Toy(Assembler):
        directives = reg

        @reg.register(".org", "ADDR", "origin", before_code=True)
        def _org(self, line):
            seen.append(("org", self.ints(line, 1)[0]))

        @reg.register(".rep", "N", "repeat the body", block_end=".endr")
        def _rep(self, line, body):
            if body is None:
                return
            for _ in range(self.ints(line, 1)[0]):
                self.feed(body)

    isa = table_isa("toy", 8, Field("op", 3, 0), [("op", "i2"), ("a", "i4")],
                    [Instr("inc", 1, "a", "a", "alu", "a += 1")], {"a": Field("a", 7, 4)}, {"a": (Int(), "a")})
    rows = Toy(isa, file="t.s").assemble(".org 4\n.rep 2\ninc 3\n.rep 2\ninc 5\n.endr\n.endr\n")
    assert seen == [("org", 4)] and rows["a"].tolist() == [3, 5, 5, 3, 5, 5]
    with pytest.raises(AsmError, match=r"t.s:2:1: .org must come before the first instruction"):
        Toy(isa, file="t.s").assemble("inc 1\n.org 3\n")
    with pytest.raises(AsmError, match=r"t.s:1:1: .rep without .endr"):
        Toy(isa, file="t.s").assemble(".rep 2\ninc 1\n")
    with pytest.raises(AsmError, match=r"t.s:1:1: labels are not used"):
        Toy(isa, file="t.s").assemble("x: inc 1\n")
    assert "| `.org` | ADDR | origin |" in reg.markdown()


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_dais_templates_parse_what_they_print(data):
    """DAIS ops are SSA records: each table row's template prints and parses its opcode's text."""
    from nnisa.targets.dais.formats.text import TEMPLATES, _parse_op, op_text
    t = data.draw(st.sampled_from(list(TEMPLATES.values())))
    slot = st.integers(0, 10 ** 6)
    a = data.draw(slot) if "id0" in t.cols else -1
    c = data.draw(slot) if "id1" in t.cols else -1
    v = {}
    for p in t.parts:
        if p[0] == "ref" and p[1] not in ("id0", "id1"):  # mux's key slot
            v[p[1]] = data.draw(slot)
        elif p[0] == "enum":
            v[p[1]] = data.draw(st.integers(0, len(p[2]) - 1))
        elif p[0] == "flag":
            v[p[1]] = data.draw(st.integers(0, 1))
        elif p[1] == "data":
            v["data"] = data.draw(st.integers(-(1 << 63), (1 << 63) - 1))
        elif p[1] in ("lo", "hi"):
            v[p[1]] = data.draw(st.integers(-(1 << 31), (1 << 31) - 1))
    d = t.pack(v)
    lo, hi = (d & 0xFFFFFFFF) - ((d & 0x80000000) << 1), d >> 32
    text = op_text(t.opcode, a, c, d, lo, hi)
    assert text is not None and _parse_op(text) == (t.opcode, a, c, d)
    if "lo" in t.cols and not {"hi", "sub"} & t.cols:  # a high data word the form cannot hold: raw
        assert op_text(t.opcode, a, c, d + (1 << 32), lo, hi + 1) is None
