"""Conformance C1-C4 (spec §12.5) on shared/conformance/pim/resnet18_batch_8x8.json.gz.

The fast tests (default) load the program once per session with the numba scanner; the full
round trips (JSON export, orjson path, full text round trip) are marked slow.
"""

from __future__ import annotations

import re

import numpy as np
import orjson
import pytest

from shared_data import require_shared
from nnisa.core.errors import EncodeError
from nnisa.targets.pim.formats import nnpi
from nnisa.targets.pim.formats.jsonio import _decompress, dump_json, read_json
from nnisa.targets.pim.stats import program_stats
from nnisa.targets.pim.formats.text import assemble_text, disassemble

OPS = {"sldi": 2109911, "lmv": 628329, "mvmul": 132500, "vvadd": 102267, "ld": 83488, "st": 30234,
       "vrelu": 20874, "lldi": 8462, "send": 1899, "recv": 1899, "setbw": 44}
PER_CORE = [306636, 316044, 316451, 316281, 316790, 314994, 57788, 51606, 51122, 51062, 50549, 50364, 50170,
            49204, 52295, 51975, 51789, 49097, 48819, 49799, 49479, 46305, 44797, 41400, 42886, 42278, 41563,
            29940, 17738, 15793, 15702, 15997, 16165, 21171, 15744, 8508, 7609, 7609, 8257, 7635, 8110, 7635,
            4739, 12]


def _groups(c):
    if c <= 26:
        return [1] * 64
    return {27: None, 28: [2] * 32, 29: [2] * 32, 30: [2] * 32, 31: [2] * 32, 32: [2] * 32, 33: [2] * 32,
            34: None, 42: None, 43: [8]}.get(c, [4] * 16)


@pytest.fixture(scope="session")
def conf_path():
    return require_shared("conformance", "pim", "resnet18_batch_8x8.json.gz")


@pytest.fixture(scope="session")
def prog(conf_path):
    return read_json(conf_path)


def test_c1_import(prog):
    assert sorted(prog.cores) == list(range(44))
    assert len(prog) == 3_119_907
    assert prog.op_counts() == OPS
    assert [len(prog.cores[c]) for c in range(44)] == PER_CORE
    assert prog.chip_cores == 64
    for c in range(44):
        g = prog.array_group_map[c]
        want = _groups(c)
        if want is not None:
            assert g == want, c
    from collections import Counter
    assert Counter(prog.array_group_map[27]) == {1: 30, 2: 17}
    assert Counter(prog.array_group_map[34]) == {2: 20, 4: 6}
    assert Counter(prog.array_group_map[42]) == {4: 10, 8: 3}
    odd = [w for w in prog.warnings if "odd global-address" in w]
    assert len(odd) == 1 and odd[0].startswith("83488 ")
    assert len(prog.warnings) == 1
    assert prog.config_extra == {"xbar_size": [128, 128], "xbar_array_count": 64, "cell_precision": 2,
                                 "adc_count": 16}


def test_stats_figures(prog):
    s = program_stats(prog)
    t = s["traffic"]
    assert (t["ld_bytes"], t["st_bytes"], t["send_bytes"], t["send_messages"]) == (7390042, 2484712, 389096, 1899)
    assert len(t["send_pairs"]) == 33 and t["send_pairs"]["43->42"] == 1
    assert all(int(a) > int(b) for a, b in (k.split("->") for k in t["send_pairs"]))
    assert s["array_groups"]["groups"] == 2119 and s["array_groups"]["crossbars"] == 2760
    assert s["array_groups"]["mvmul_group_gt_15"] == 91275
    r = s["field_ranges"]
    assert r["sldi"]["imm"] == [0, 802752] and r["mvmul"]["group"] == [0, 63] and r["ld"]["len"] == [15, 1000]
    assert r["lmv"]["len"] == [1, 128] and r["vrelu"]["len"] == [64, 512]


def test_c3_strict_offenders(prog):
    with pytest.raises(EncodeError) as ei:
        nnpi.encode_nnpi(prog)
    offs = ei.value.offenders
    groups = [(w, v) for w, f, v in offs if f == "group"]
    assert len(groups) == 91_275 and all(v > 15 for _, v in groups)
    want = {(c, int(i)) for c, r in prog.items()
            for i in np.flatnonzero((r["op"] == 9) & (r["group"] > 15))}
    got = {tuple(int(x) for x in re.match(r"core (\d+), instruction (\d+)", w).groups()) for w, _ in groups}
    assert got == want
    # exactly those (C3): the importer marked the program odd_pairs after warning once about
    # PIMCOMP-NN's odd global-address register (ld rs1 = 1), so the even rule does not fire
    assert prog.odd_pairs
    assert {f for _, f, _ in offs} == {"group"} and len(offs) == 91_275


@pytest.mark.parametrize("bits,nbytes", [(64, 24_959_256), (32, 12_479_628)])
def test_c4_binary_extended(prog, bits, nbytes):
    p = prog.with_mode(bits, True)
    words = nnpi.encode_words(p)
    assert sum(w.nbytes for w in words.values()) == nbytes
    blob = nnpi.encode_nnpi(p)
    back = nnpi.decode_nnpi(blob)
    assert back.equals(prog) and back.word_bits == bits and back.extended


def test_c4_text_slice(prog):
    p = prog.with_mode(64, True)
    p.cores = {c: r[:3000] for c, r in p.cores.items()}
    text = disassemble(p)
    back = assemble_text(text)
    assert back.equals(p)
    w1, w2 = nnpi.encode_words(back), nnpi.encode_words(p)
    assert all(np.array_equal(w1[c], w2[c]) for c in w2)


@pytest.mark.slow
def test_c2_json_roundtrip(prog, conf_path):
    ref = orjson.loads(_decompress(conf_path.read_bytes(), "f"))
    data, warns = dump_json(prog)
    assert warns == []
    assert orjson.loads(data) == ref  # 0.0 == 0 numerically


@pytest.mark.slow
def test_orjson_path_agrees(prog, conf_path):
    other = read_json(conf_path, fast=False)
    assert other.equals(prog) and other.warnings == prog.warnings


@pytest.mark.slow
def test_c4_full_text_roundtrip(prog):
    p = prog.with_mode(64, True)
    back = assemble_text(disassemble(p))
    assert back.equals(p)
    w1, w2 = nnpi.encode_words(back), nnpi.encode_words(p)
    assert all(np.array_equal(w1[c], w2[c]) for c in w2)
    assert nnpi.encode_nnpi(back) == nnpi.encode_nnpi(p)  # the container too (config_extra, issue 9)
