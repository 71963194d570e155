"""PIM text assembly: directives, errors with file:line:column, canonical round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from nnisa.core.errors import AsmError
from nnisa.targets.pim.formats.text import assemble_text, disassemble

from .pim_strategies import program_strategy

SRC = """\
.mode 64            # word size
.encoding extended
.chip_cores 8
.core 2
.group 0, 1
.group 1, 4
.act_frac 4, 7
top:
  SLDI $5, 0x10     ; any case, $N registers, hex
  vvadd $r0, $r1, $r2, 64, ofs(rs1|rs2, -3)
loop: vrelu $r0, $r1, 8, ofs(7, 0)
  lldi $r0, -1, 16
  mvmul $r0, $r1, 8, 1, 40
.core 0
  setbw 0b1000, 8
"""


def test_directives_and_canonical_form():
    p = assemble_text(SRC, file="a.s")
    assert (p.word_bits, p.extended, p.chip_cores) == (64, True, 8)
    assert p.array_group_map == {2: [1, 4]} and p.act_frac == {2: (4, 7)}
    r = p.cores[2]
    assert r["op"].tolist() == [1, 10, 18, 26, 9]
    assert (r["rd"][0], r["imm"][0], r["imm"][3], r["group"][4]) == (5, 16, 255, 40)
    assert p.cores[0]["ibiw"][0] == 8
    text = disassemble(p)
    assert text.splitlines()[:4] == [".mode 64", ".encoding extended", ".chip_cores 8", ".core 0"]
    assert "sldi $r5, 16\n" in text and "lldi $r0, 0xFF, 16\n" in text
    assert "vrelu $r0, $r1, 8, ofs(rd|rs1|rs2, 0)\n" in text
    assert "vvadd $r0, $r1, $r2, 64, ofs(rs1|rs2, -3)\n" in text
    again = assemble_text(text)
    assert again.equals(p) and disassemble(again) == text


@pytest.mark.parametrize("src,where,match", [
    ("sldi $r0, 1", (1, 1), "before the first .core"),
    (".core 0\n  ld $r0, $r2, 5000", (2, 16), "out of range"),
    (".core 0\n  frob $r1", (2, 3), "unknown instruction"),
    (".core 0\n  vvadd $r0, $r1", (2, 3), "takes 4-5 operand"),
    (".core 0\n  vvadd $r0, $r1, $x2, 4", (2, 19), "register"),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs(rq, 1)", (2, 27), "offset mask"),
    (".core 0\n  ld $r0, $r1, 4", (2, 11), "multiple of 2"),  # odd register, strict
    (".core 0\n.group 1, 4", (2, 1), "in order"),
    (".core 0\nsetbw 8, 8\n.mode 32", (3, 1), "before the first instruction"),
    (".bogus 3", (1, 1), "unknown directive"),
    (".core x", (1, 1), "integer"),
    (".mode 16", (1, 1), ".mode must be"),
    ("a:\nb:\na:", (3, 1), "duplicate label"),
    (".mode 32\n.core 0\nvvadd $r0, $r1, $r2, 4, ofs(1, 1)", (3, None), "not supported in 32-bit"),
    (".mode 32\n.core 0\nsldi $r0, 2000000", (3, 11), "out of range"),
])
def test_errors_have_location(src, where, match):
    with pytest.raises(AsmError, match=match) as ei:
        assemble_text(src, file="bad.s")
    e = ei.value
    assert e.file == "bad.s" and (e.line, e.column) == where


@pytest.mark.parametrize("bits,ext", [(64, False), (64, True), (32, False), (32, True)])
def test_roundtrip_text(bits, ext):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(program_strategy(bits, ext, exclude=()))
    def run(prog):
        text = disassemble(prog)
        back = assemble_text(text)
        assert back.equals(prog) and (back.word_bits, back.extended) == (bits, ext)
        for c in prog.cores:
            np.testing.assert_array_equal(back.cores[c], prog.cores[c])
        assert disassemble(back) == text
    run()


def test_even_register_rule_in_strict_text():
    from nnisa.core.errors import AsmError
    from nnisa.targets.pim.formats.text import assemble_text, disassemble
    with pytest.raises(AsmError, match=r"rs1=1 must be a multiple of 2 \(even register"):
        assemble_text(".core 0\nld $r0, $r1, 64\n", file="t.s")
    # .odd_pairs relaxes it (what JSON-imported PIMCOMP-NN programs carry), and round-trips
    p = assemble_text(".odd_pairs\n.core 0\nld $r0, $r1, 64\n")
    assert p.odd_pairs and ".odd_pairs" in disassemble(p)
    assert assemble_text(disassemble(p)).equals(p)
