"""Fuzzed bad inputs: every reader fails with its own error type, never another exception."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.core.errors import AsmError, DecodeError, FormatError
from nnisa.targets.pim.formats import nnpi
from nnisa.targets.pim.formats.jsonio import read_json
from nnisa.targets.pim.formats.text import assemble_text

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_GOOD = nnpi.encode_nnpi(assemble_text(".core 0\nsetbw 8, 8\nsldi $r1, 5\nvvadd $r0, $r1, $r2, 4\n"
                                       ".core 3\nsend $r0, 1, 64\n"))
_JSON = orjson.dumps({"config": {"core_cnt": 2, "array_group_map": {"core0": [1]}},
                      "core0": [{"op": "ld", "rd": 0, "rs1": 1, "size": 8,
                                 "offset": {"offset_select": 0, "offset_value": 0}},
                                {"op": "lldi", "imm": 0.0, "len": 8}]})


@FAST
@given(st.integers(0, len(_GOOD) - 1))
def test_truncated_nnpi(n):
    try:
        nnpi.decode_nnpi(_GOOD[:n])
    except DecodeError as e:
        assert str(e)
    else:
        raise AssertionError("truncated container decoded")


@FAST
@given(st.binary(min_size=0, max_size=200))
def test_random_bytes_nnpi(data):
    try:
        nnpi.decode_nnpi(b"NNPI" + data)
    except DecodeError:
        pass


@FAST
@given(st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=20), st.booleans(), st.sampled_from([32, 64]))
def test_random_words(words, lenient, bits):
    data = b"".join(w.to_bytes(8, "little")[:bits // 8] for w in words)
    try:
        nnpi.read_raw_words(data, word_bits=bits, extended=True, lenient=lenient)
    except DecodeError:
        pass


@FAST
@given(st.integers(0, len(_JSON) - 1), st.binary(max_size=4), st.booleans())
def test_mutated_json(cut, junk, fast):
    data = _JSON[:cut] + junk + _JSON[cut + len(junk):]
    try:
        read_json(data, fast=fast, file="f.json")
    except FormatError as e:
        assert "f.json" in str(e)


@FAST
@given(st.binary(max_size=100), st.booleans())
def test_garbage_json(data, fast):
    try:
        read_json(data, fast=fast)
    except FormatError:
        pass


_TOKENS = st.sampled_from(["ld", "vvadd", "mvmul", "$r1", "$r99", "$x", "ofs(", "ofs(rd, 1)", ")", ",", "-",
                           "0x", "12", "99999999999999999999", ".core", ".group", "0", ":", "#", ";", " ", "\n",
                           "lldi", "send", ".mode 32", ".encoding", "wait", "\t", "é"])


@FAST
@given(st.lists(_TOKENS, max_size=30))
def test_bad_assembly(tokens):
    try:
        assemble_text(".core 0\n" + " ".join(tokens), file="z.s")
    except AsmError as e:
        assert e.file == "z.s" and e.line is not None
