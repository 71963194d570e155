"""Text is lossless for everything the NNPI container carries (issue 9): ``bin → text → bin`` is
byte-identical — instructions, mode, chip core count, array groups (also of cores without
instructions: ``.nocode``), activation fractions, odd pairs and ``config_extra``
(``.config_extra {JSON}``) — through the numba scanner and through the Python assembler."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.core.errors import AsmError
from nnisa.targets.pim.formats import nnpi
from nnisa.targets.pim.formats.text import assemble_text, disassemble
from nnisa.targets.pim.program import PimProgram

from .pim_strategies import program_strategy

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                       st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
_json = st.recursive(_json_leaf, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                        st.dictionaries(st.text(max_size=6), kids, max_size=3)),
                     max_leaves=8)
_extra = st.dictionaries(st.text(max_size=8).filter(lambda k: k not in ("core_cnt", "array_group_map")), _json,
                         max_size=4)


def _bin_text_bin(prog: PimProgram) -> None:
    blob = nnpi.encode_nnpi(prog)
    text = disassemble(nnpi.decode_nnpi(blob))
    for fast in (True, False):
        back = assemble_text(text, fast=fast)
        assert nnpi.encode_nnpi(back) == blob, fast


@pytest.mark.parametrize("bits,ext", [(64, False), (64, True), (32, False), (32, True)])
def test_bin_text_bin_byte_identity(bits, ext):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(program_strategy(bits, ext, exclude=()), _extra, st.lists(st.integers(0, 80), max_size=3),
           st.booleans(), st.one_of(st.none(), st.integers(0, 100)), st.data())
    def run(prog, extra, group_only, odd, chip, data):
        prog.config_extra = extra
        for c in group_only:  # array groups / fractions of cores without instructions
            if c not in prog.cores:
                prog.array_group_map[c] = data.draw(st.lists(st.integers(0, 9), max_size=3))
                if data.draw(st.booleans()):
                    prog.act_frac[c] = (data.draw(st.integers(0, 31)), data.draw(st.integers(0, 31)))
        for c in list(prog.cores)[:1]:
            if data.draw(st.booleans()):
                prog.act_frac[c] = (3, 5)
        prog.odd_pairs = odd and not prog.extended
        prog.chip_cores = chip
        _bin_text_bin(prog)
    run()


def test_config_extra_text_is_one_ascii_line_without_comment_characters():
    prog = PimProgram(cores={0: np.zeros(0, dtype=nnpi.DTYPE)}, config_extra={"a#b;c": ["é\n", 1.5, None]})
    text = disassemble(prog)
    line = next(ln for ln in text.splitlines() if ln.startswith(".config_extra"))
    assert line.isascii() and "#" not in line and ";" not in line
    assert assemble_text(text).config_extra == {"a#b;c": ["é\n", 1.5, None]}


def test_config_extra_directive_by_hand():
    src = ".config_extra {\"xbar_size\": [128, 128]}  # PIMCOMP-NN keys\n.config_extra {\"adc_count\": 16}\n.core 0\n"
    for fast in (True, False):
        assert assemble_text(src, fast=fast).config_extra == {"xbar_size": [128, 128], "adc_count": 16}


@pytest.mark.parametrize("src,where,match", [
    ('.config_extra {"a": "x#y"}', (1, 1), r"bad JSON.*\\u0023"),
    (".config_extra [1, 2]", (1, 1), "expected a JSON object"),
    (".config_extra", (1, 1), "bad JSON"),
    (".config_extra {\"a\": NaN}", (1, 1), "bad JSON"),
    (".core 1\n.nocode\nsldi $r0, 1", (3, 1), "declared .nocode"),
    (".core 1\nsldi $r0, 1\n.nocode", (3, 1), "must follow the only .core"),
    (".nocode", (1, 1), "must follow"),
    (".core 1\n.nocode 3", (2, 1), "takes no argument"),
])
def test_directive_errors(src, where, match):
    with pytest.raises(AsmError, match=match) as ei:
        assemble_text(src, file="m.s")
    assert (ei.value.line, ei.value.column) == where


def test_nocode_core_has_groups_only():
    prog = assemble_text(".core 0\nsldi $r0, 1\n.core 7\n.nocode\n.group 0, 4\n.act_frac 2, 3\n")
    assert sorted(prog.cores) == [0] and prog.array_group_map[7] == [4] and prog.act_frac[7] == (2, 3)
