"""The resumable numba tokenizer and the streaming gzip reader (jsonscan.scan, jsonio._GzipFeed).

The fast path must give exactly the orjson path's result wherever the data is cut between
calls, whatever the row/segment capacities, and with any gzip member layout; numbers at the
edges of the conversion rules and look-alike keys must agree with the orjson path too.
"""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.core.errors import FormatError
from nnisa.targets.pim.formats import jsonio
from nnisa.targets.pim.formats import jsonscan as js
from nnisa.targets.pim.formats.jsonio import read_json

CFG = {"core_cnt": 4, "array_group_map": {"core0": [1, 2], "core1": [4]}, "xbar_size": [128, 128]}

INSTS = [
    {"ibiw": 8, "obiw": 8, "op": "setbw"},
    {"imm": 8800, "op": "sldi", "rd": 0},
    {"offset": {"offset_select": 0, "offset_value": 0}, "op": "ld", "rd": 0, "rs1": 1, "size": 64},
    {"len": 12, "offset": {"offset_select": 1, "offset_value": -4}, "op": "lmv", "rd": 0, "rs1": 1},
    {"imm": 0.0, "len": 72, "offset": {"offset_select": 0, "offset_value": 0}, "op": "lldi", "rd": 0},
    {"group": 1, "mbiw": 8, "op": "mvmul", "rd": 0, "relu": 1, "rs1": 1},
    {"core": 6, "offset": {"offset_select": 0, "offset_value": 5}, "op": "send", "rd": 3, "size": 64, "rs1": 0.5},
    {"core": 1, "event_register": 2, "op": "sync"},
    {"event_register": 0, "op": "wait", "wait_value": 7},
    {"op": "sld", "rd": 4, "rs1": 2, "offset_value": -8},
    {"op": "sldi", "rd": 1.5, "imm": -2.5e3, "zz": [1, {"a": None}], "offset_select": 3},
    {"op": "nop"},
]


def _doc(obj, pretty=False) -> bytes:
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 if pretty else 0)
    return data.replace(b"  ", b"\t").replace(b": ", b" : \n") if pretty else data


def _same(a, b):
    assert sorted(a.cores) == sorted(b.cores)
    for c in a.cores:
        assert a.cores[c].dtype == b.cores[c].dtype
        assert a.cores[c].tobytes() == b.cores[c].tobytes()
    assert (a.array_group_map, a.chip_cores, a.config_extra, a.warnings, a.odd_pairs) == \
           (b.array_group_map, b.chip_cores, b.config_extra, b.warnings, b.odd_pairs)


def _outcome(data, **kw):
    try:
        return "ok", read_json(data, **kw)
    except FormatError as exc:
        return "error", exc


def _agree(data, **kw):
    """Fast path (plain and gzip) and orjson path: same program or both a FormatError."""
    ref_kind, ref = _outcome(data, fast=False, **kw)
    for blob in (data, gzip.compress(data)):
        kind, got = _outcome(blob, fast=True, **kw)
        assert kind == ref_kind, (data[:200], got, ref)
        if kind == "ok":
            _same(got, ref)
        elif "unknown op" in str(ref) or "out of range" in str(ref) or "no 'op'" in str(ref):
            assert str(ref).split(": ", 1)[-1] in str(got)
    return ref


def _scan_all(data: bytes, cuts, rows_cap=None, segs_cap=64):
    """Drive js.scan over growing prefixes (a new call at every cut), growing outputs on ST_FULL."""
    buf = np.frombuffer(data, dtype=np.uint8)
    state = np.zeros(js.NSTATE, dtype=np.int64)
    info = np.full(10, -1, dtype=np.int64)
    rows = np.zeros(rows_cap if rows_cap is not None else len(data) // 12 + 2, dtype=js.ROW_DTYPE)
    segs = np.zeros((segs_cap, 6), dtype=np.int64)
    for n in list(cuts) + [len(data)]:
        final = n == len(data)
        while True:
            status = js.scan(buf, n, final, state, rows.view(np.uint8), segs, info, *js.tables())
            if status != js.ST_FULL:
                break
            if state[2] == len(rows):
                grown = np.zeros(2 * len(rows) + 1, dtype=js.ROW_DTYPE)
                grown[:len(rows)] = rows
                rows = grown
            if state[3] == len(segs):
                segs = np.concatenate([segs, np.zeros((len(segs) + 1, 6), dtype=np.int64)])
        if status != js.ST_MORE:
            assert final or status not in (js.ST_OK, js.ST_UNSUPPORTED)
            return status, rows[:int(info[1])], segs[:int(info[2])], info
    raise AssertionError("ST_MORE with final data")


@pytest.mark.parametrize("pretty", [False, True])
def test_resumable_at_every_byte(pretty):
    data = _doc({"config": CFG, "core0": INSTS, "core1": [], "core3": INSTS[:3]}, pretty)
    ref = _scan_all(data, [])
    assert ref[0] == js.ST_OK
    for step in (1, 2, 3, 7):
        got = _scan_all(data, range(step, len(data), step))
        assert got[0] == ref[0]
        assert got[1].tobytes() == ref[1].tobytes()
        np.testing.assert_array_equal(got[2], ref[2])
        np.testing.assert_array_equal(got[3][1:5], ref[3][1:5])


def test_resumable_semantic_errors_same_position():
    for bad in ({"op": "vfoo"}, {"rd": 1}, {"op": "sldi", "rd": 2 ** 33}, {"op": "lldi", "imm": 256}):
        data = _doc({"config": CFG, "core2": INSTS + [bad]}, pretty=True)
        ref = _scan_all(data, [])
        assert ref[0] in (js.ST_UNKNOWN_OP, js.ST_MISSING_OP, js.ST_RANGE, js.ST_LLDI_IMM)
        got = _scan_all(data, range(1, len(data)))
        assert got[0] == ref[0]
        np.testing.assert_array_equal(got[3], ref[3])


def test_full_outputs_grow():
    cores = {f"core{k}": INSTS[k % 5:k % 5 + 3] for k in range(150)}
    data = _doc({"config": CFG, **cores})
    ref = _scan_all(data, [])
    got = _scan_all(data, range(50, len(data), 997), rows_cap=1, segs_cap=1)
    assert got[0] == ref[0] == js.ST_OK
    assert got[1].tobytes() == ref[1].tobytes()
    np.testing.assert_array_equal(got[2], ref[2])
    # through read_json: many compact rows (more than the row estimate) and > 64 core arrays
    compact = _doc({"config": CFG, "core0": [{"op": "ld"}] * 9000, **cores})
    _agree(compact)


def test_gzip_small_chunks_members_and_wrong_size_hint(monkeypatch):
    data = _doc({"config": CFG, "core0": INSTS * 40, "core1": INSTS[::-1] * 40}, pretty=True)
    ref = read_json(data, fast=False)
    for chunk in (5, 64, 4096):
        monkeypatch.setattr(jsonio._GzipFeed, "CHUNK", chunk)
        _same(read_json(gzip.compress(data)), ref)
        # several members: the size in the trailer is the last member's, the buffer must grow
        _same(read_json(gzip.compress(data[:-100]) + gzip.compress(data[-100:])), ref)
        _same(read_json(gzip.compress(data[:50]) + gzip.compress(data[50:])), ref)
    _same(read_json(zlib.compress(data)), ref)


def test_gzip_errors_take_precedence(monkeypatch):
    monkeypatch.setattr(jsonio._GzipFeed, "CHUNK", 256)
    data = _doc({"config": CFG, "core0": [{"op": "vfoo"}] + INSTS * 50}, pretty=True)
    with pytest.raises(FormatError, match="unknown op 'vfoo'") as ei:
        read_json(gzip.compress(data), file="x.json.gz")
    assert ei.value.line is not None
    blob = gzip.compress(data)
    with pytest.raises(FormatError, match="truncated"):
        read_json(blob[:len(blob) // 2], file="x.json.gz")
    broken = bytearray(blob)
    broken[len(blob) // 2:len(blob) // 2 + 40] = b"\xff" * 40
    with pytest.raises(FormatError, match="corrupt gzip|truncated|invalid JSON|unknown op"):
        read_json(bytes(broken), file="x.json.gz")
    with pytest.raises(FormatError, match="corrupt gzip"):
        read_json(blob[:30] + b"\x00" * 20 + blob[50:], file="x.json.gz")


def test_semantic_error_line_and_column_match_plain():
    data = _doc({"config": CFG, "core0": INSTS * 3 + [{"op": "sldi", "rd": 2 ** 31}]}, pretty=True)
    with pytest.raises(FormatError) as plain:
        read_json(data, file="p.json")
    with pytest.raises(FormatError) as gz:
        read_json(gzip.compress(data), file="p.json")
    assert str(plain.value) == str(gz.value) and plain.value.line > 1


@pytest.mark.parametrize("value", [
    0, -0, 1, -1, 2147483647, 2147483648, -2147483648, -2147483649, 4294967295, 4294967296,
    10 ** 17, 10 ** 18, 10 ** 19, 0.0, -0.0, 0.5, -0.5, 1.9, -1.9, 255, 256, -128, -129, 255.5,
    1e3, 1.5e3, 2.5e-3, 1e22, 1e23, 1e300, 4294967295.5, 4294967296.0, -2147483648.5, -2147483649.0,
    "1", None, True, [1], {"a": 1},
])
@pytest.mark.parametrize("key", ["rd", "imm", "rs1", "size", "len", "offset_value"])
@pytest.mark.parametrize("op", ["sldi", "lldi", "send", "ld", "sld"])
def test_number_edges_agree(op, key, value):
    _agree(_doc({"config": CFG, "core0": [{"op": op, key: value}, {"op": op, "offset": {"offset_value": value}}]}))


@pytest.mark.parametrize("text", [b"1E2", b"1e+2", b"1.0e-0", b"-0.0", b"00", b"01", b"-", b"1.", b".5", b"1e",
                                  b"-01", b"0x10", b"+1", b"1.25E1", b"123456789012345678901", b"NaN",
                                  b"0.000000000000000000000001"])
def test_number_syntax_agrees(text):
    _agree(b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "sldi", "imm": ' + text + b"}]}")


@pytest.mark.parametrize("key", ["r", "rd2", "rdx", "rs", "rs3", "im", "imms", "offset_v", "offset_valu",
                                 "offset_value_", "offset_selectx", "event_registe", "event_register_x",
                                 "wait_values", "groups", "Op", "OP", "opp", "o", "offsets", "core_", "a" * 40,
                                 "event_register\u00e9", "r\\u0064"])
def test_lookalike_keys_agree(key):
    insts = [{"op": "vvadd", key: 5, "rd": 1, "offset": {key: 3, "offset_value": 2}}]
    raw = orjson.dumps({"config": CFG, "core0": insts}).replace(b"\\\\", b"\\")
    _agree(raw)


@pytest.mark.parametrize("op", ["ld", "st", "sldi", "vfoo", "l", "ldd", "mvmu", "mvmull", "vvaddvvadd", "sync ",
                                "LD", "\u00e9", "s\\u006ddi"])
def test_mnemonics_agree(op):
    raw = b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "' + op.encode() + b'"}]}'
    _agree(raw)


@pytest.mark.parametrize("data", [
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "offset": {}}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "offset": {"x": [1, {}]}, '
    b'"offset": {"offset_value": 4}}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "offset": {"offset_value": 4}, '
    b'"offset": {"offset_select": 1}}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "offset": {"op": "x"}}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "offset": 5}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "offset": {"offset_value": "1"}}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "op": "st", "rd": 1, "rd": 3}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "vfoo", "op": "st"}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld"}], "config": {"core_cnt": 2, '
    b'"array_group_map": {}}}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld"},]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld"}]} ',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld"}]} x',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld"}]}{}',
    b' \t\r\n{"config" :{"core_cnt":1,"array_group_map":{}} ,"core0":[ {"op":"ld" } , {"op" :"st"} ] } \n',
    b'{"config": 7}',
    b'{"config": 1e1, "core0": []}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core00": [{"op": "ld"}], "core0": []}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core123456789": [{"op": "ld"}]}',
    b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core": [{"op": "ld"}]}',
    b'{}',
    b'{"core0": []}',
])
def test_structure_edges_agree(data):
    _agree(data)


def test_conformance_style_agrees():
    """The pimsim-nn pretty printer's layout (tabs, ' : ' and a newline before nested values)."""
    data = _doc({"config": CFG, "core0": INSTS * 20, "core1": INSTS}, pretty=True)
    assert b"\t\t\t" in data and b" : \n" in data
    _agree(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutations_agree(data):
    """Byte-level mutations of a valid file: both paths accept it identically or both reject it."""
    base = bytearray(_doc({"config": CFG, "core0": INSTS[:6], "core1": INSTS[6:]}, data.draw(st.booleans())))
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(base) - 1))
        what = data.draw(st.sampled_from(["set", "del", "ins"]))
        byte = data.draw(st.sampled_from(b'{}[]":,0123456789-.eE \t\nabnoprtuxy\\'))
        if what == "set":
            base[pos] = byte
        elif what == "del":
            del base[pos]
        else:
            base.insert(pos, byte)
    _agree(bytes(base))
