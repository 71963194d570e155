"""The numba text scanner (textscan) against the Python assembler: same programs, same errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.core.errors import AsmError
from nnisa.targets.pim.formats import textscan as ts
from nnisa.targets.pim.formats.text import _scan_text, assemble_text, disassemble

from .pim_strategies import program_strategy

MODES = [(64, False), (64, True), (32, False), (32, True)]


def _same(a, b):
    assert list(a.cores) == list(b.cores)
    for c in a.cores:
        assert a.cores[c].dtype == b.cores[c].dtype
        assert a.cores[c].tobytes() == b.cores[c].tobytes()
    assert a.array_group_map == b.array_group_map and list(a.array_group_map) == list(b.array_group_map)
    assert a.act_frac == b.act_frac and list(a.act_frac) == list(b.act_frac)
    assert (a.chip_cores, a.word_bits, a.extended, a.odd_pairs) == (b.chip_cores, b.word_bits, b.extended,
                                                                      b.odd_pairs)
    assert a.warnings == b.warnings and a.config_extra == b.config_extra


def _outcome(text, fast):
    try:
        return assemble_text(text, file="t.s", fast=fast)
    except AsmError as exc:
        return (str(exc), exc.file, exc.line, exc.column)


def check(text, scanned=None):
    """Both paths agree; ``scanned`` = whether the scanner must (not) handle the text itself."""
    slow = _outcome(text, False)
    fast = _outcome(text, True)
    if isinstance(slow, tuple):
        assert fast == slow
    else:
        _same(fast, slow)
    if scanned is not None:
        assert (_scan_text(text) is not None) == scanned
    return slow


def _extras(draw, prog):
    prog.odd_pairs = draw(st.booleans()) and not prog.extended
    prog.chip_cores = draw(st.one_of(st.none(), st.integers(0, 5000)))
    for c in draw(st.lists(st.sampled_from(sorted(prog.cores)), max_size=3)):
        prog.act_frac[c] = (draw(st.integers(0, 31)), draw(st.integers(0, 31)))
    return prog


@pytest.mark.parametrize("bits,ext", MODES)
def test_canonical_text_scanned_and_equal(bits, ext):
    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data):
        prog = _extras(data.draw, data.draw(program_strategy(bits, ext, exclude=())))
        text = disassemble(prog)
        check(text, scanned=True)
        assert assemble_text(text).equals(prog)

    run()


VARIANTS = [
    lambda t: t.replace("\n", "\r\n"),
    lambda t: t.replace("\n", "\r"),
    lambda t: t.replace(" ", "\t"),
    lambda t: t.replace(", ", " ,  \t"),
    lambda t: t.replace("\n", "   # a comment; with ümlauts ← \n\n;\n  \t\n"),
    lambda t: "".join("    " + ln.upper() + " ;x\n" for ln in t.splitlines()),
    lambda t: t.replace("$r", "$R").replace("ofs(", "OFS(").replace("rs1", "$RS1"),
    lambda t: t.replace("$r", "$"),
    lambda t: t.rstrip("\n"),
]


@pytest.mark.parametrize("variant", range(len(VARIANTS)))
@pytest.mark.parametrize("bits,ext", MODES)
def test_spelling_variants_scanned(bits, ext, variant):
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data):
        prog = _extras(data.draw, data.draw(program_strategy(bits, ext, exclude=())))
        text = VARIANTS[variant](disassemble(prog))
        check(text, scanned=True)
        assert assemble_text(text).equals(prog)

    run()


HAND = [
    # (source, scanned by the kernel)
    (".core 0\nsldi $r1, 0x7fffffff\nsldi $r2, -0X80000000\nsldi $r3, 0xFFFFFFFF\nsldi $r4, +007", True),
    (".core 0\nlldi $r0, -128, 4\nlldi $r0, 255, 4, 12\nlldi $r0, 0x80, 0", True),
    (".encoding extended\n.core 1\nvvadd $r0,$r1,$r2,4,ofs( $rd | rs2 ,-5 )\nvrelu $r1,$r1,8,ofs(0x7,1)", True),
    (".core 0\n.core 1\nsync 1, 0\n.core 0\nwait 1, 1\n.core 1\nnop\n.core 0\n.group 0, 3\n.group 1, 0", True),
    (".CORE 3\n.Act_Frac 3, 4\n.act_frac 5, 6\n.chip_cores 0x10\nNOP", True),
    (".core 0\nsld $r0, $r2\nsld $r0, $r2, -7\nvavg $r0, $r1, $r2, 4, 3", True),
    ("", True),
    ("# only a comment\n\n", True),
    (".mode 32\n.core 0\nsld $r0, $r2, 0", True),
    # the scanner leaves these to the Python path (labels, other integer forms, odd spacing) ...
    ("top:\n.core 0\nloop: nop", False),
    (".core 0\nsldi $r1, 0b101\nsldi $r1, 1_000", False),
    (".core 0\nsetbw 0o7, 8", False),
    (".odd_pairs yes\n.core 0\nnop", False),
    (".core 0\nsldi $r1, 5\x0cnop", False),
    (".core 0\nsldi $r1, 5\u2028nop", False),
    (".core 0\nsldi $r1, 5  # \u2029\nnop", False),
    (".core 0\nsldi $r1, 5  # \x85\nnop", False),
    (".core 0\nsldi $r1, \u0665", False),
    # ... and every error
    ("sldi $r0, 1", False),
    (".core 0\n  ld $r0, $r2, 5000", False),
    (".core 0\n  frob $r1", False),
    (".core 0\n  vvadd $r0, $r1", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4,", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs(rd, 1),", False),
    (".core 0\n  vvadd $r0, $r1, $x2, 4", False),
    (".core 0\n  vvadd $r0, $r1, $r32, 4", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs(rq, 1)", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs(8, 1)", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs(rd, 1", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs (rd, 1)", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs(rd, 1 2)", False),
    (".core 0\n  vvadd $r0, $r1, $r2, 4, ofs(rd, 268435456)", False),
    (".core 0\n  ld $r0, $r1, 4", False),
    (".core 0\n.group 1, 4", False),
    (".core 0\n.group 0, -4", False),
    (".group 0, 4", False),
    (".core 0\n.act_frac 3, 32", False),
    (".chip_cores -1", False),
    (".core 0\nsetbw 8, 8\n.mode 32", False),
    (".core 0\nsetbw 0, 8", False),
    (".core 0\nlldi $r0, 256, 4", False),
    (".core 0\nsldi $r0, 99999999999999999999999", False),
    (".bogus 3", False),
    (".core x", False),
    (".core 1, 2", False),
    (".core -1", False),
    (".mode 16", False),
    (".encoding wide", False),
    ("a:\nb:\na:", False),
    (".mode 32\n.core 0\nvvadd $r0, $r1, $r2, 4, ofs(1, 1)", False),
    (".mode 32\n.core 0\nsldi $r0, 2000000", False),
    (".core 0\nsadd $r1 $r2, $r3", False),
    (".core 0\nsadd $r1, $r2, $r3 $r4", False),
    (".core 0\nsadd $r1,, $r2, $r3", False),
    (".core 0\nsadd$r1, $r2, $r3", False),
    (".core 0\nnop 1", False),
]


@pytest.mark.parametrize("src,scanned", HAND)
def test_hand_made(src, scanned):
    check(src, scanned=scanned)


def test_bail_reports_line():
    info = np.zeros(ts.NINFO, dtype=np.int64)
    data = b".core 0\nnop\n\nfrob\nnop\n"
    rows = np.zeros(8, dtype=ts.DTYPE)
    segs = np.zeros((4, 2), dtype=np.int64)
    dirs = np.zeros((4, 4), dtype=np.int64)
    st_ = ts.scan(np.frombuffer(data, dtype=np.uint8), rows.view(np.uint8), segs, dirs, info, *ts.tables())
    assert st_ == ts.ST_BAIL and info[ts.I_BAIL_LINE] == 4 and info[ts.I_ROWS] == 1


ALPHABET = " \t\n\r,#;:$()|.-+0123456789xXabrdsofRD_"


@pytest.mark.parametrize("bits,ext", MODES)
def test_mutations_agree(bits, ext):
    """Random edits of canonical text: both paths give the same program or the same error."""
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data):
        prog = _extras(data.draw, data.draw(program_strategy(bits, ext, exclude=(), max_rows=8)))
        text = disassemble(prog)
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, len(text)))
            how = data.draw(st.integers(0, 2))
            if how == 0:
                text = text[:i] + text[i + 1:]
            else:
                ch = data.draw(st.sampled_from(ALPHABET))
                text = text[:i] + ch + text[i + (how == 2):]
        check(text)

    run()
