"""The resumable numba tokenizer and the streaming gzip reader (jsonscan.scan, jsonstream).

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
from nnisa.targets.pim.formats import jsonstream
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
    spans = np.zeros((js.NSLOTS + 1, js.SPAN_COLS), dtype=np.int64)
    for n in list(cuts) + [len(data)]:
        final = n == len(data)
        while True:
            status = js.scan(buf, n, final, state, rows.view(np.uint8), segs, spans, info, *js.tables())
            if status != js.ST_FULL:
                break
            if state[2] == len(rows):
                grown = np.zeros(2 * len(rows) + 1, dtype=js.ROW_DTYPE)
                grown[:len(rows)] = rows
                rows = grown
            if state[3] == len(segs):
                segs = np.concatenate([segs, np.zeros((len(segs) + 1, 6), dtype=np.int64)])
            if state[9] + js.NSLOTS + 1 > len(spans):
                spans = np.concatenate([spans, np.zeros((1, js.SPAN_COLS), dtype=np.int64)])
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
        monkeypatch.setattr(jsonstream.GzipPieces, "CHUNK", chunk)
        _same(read_json(gzip.compress(data)), ref)
        # several members: the size in the trailer is the last member's, the buffer must grow
        _same(read_json(gzip.compress(data[:-100]) + gzip.compress(data[-100:])), ref)
        _same(read_json(gzip.compress(data[:50]) + gzip.compress(data[50:])), ref)
    _same(read_json(zlib.compress(data)), ref)


def test_gzip_errors_take_precedence(monkeypatch):
    monkeypatch.setattr(jsonstream.GzipPieces, "CHUNK", 256)
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
    if data.draw(st.booleans()):  # numbers left to Python, an unknown top-level key, escapes
        base = bytearray(bytes(base).replace(b"0.0", LONG).replace(b"-2500.0", b"-2.50000000000000000001e3")
                         .replace(b"{", b'{"m\\u00e9ta": ["\\u00e9\\n", 1e-30],', 1))
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


# --------------------------------------------------------------------------- no fallback (issue 9)
def _fast_only(monkeypatch, data, **kw):
    """read_json on the fast path alone (the orjson fallback raises), plain and gzip; equal to
    the orjson path's program."""
    ref = read_json(data, fast=False, **kw)

    def no_fallback(*a, **k):
        raise AssertionError("fell back to the orjson path")
    with monkeypatch.context() as m:
        m.setattr(jsonio, "_read_orjson", no_fallback)
        for blob in (data, gzip.compress(data)):
            _same(read_json(blob, **kw), ref)
    return ref


LONG = b"0.020408162847161293"  # 17 significant digits: beyond the cheap exact conversion


def _with_long(where: str) -> bytes:
    insts = INSTS * 3
    data = _doc({"config": CFG, "core0": insts, "core1": insts[:4], "core3": insts}, pretty=True)
    lldi = b'"imm" : \n0.0'
    hits = [i for i in range(len(data)) if data.startswith(lldi, i)]
    pick = {"first": hits[:1], "middle": hits[len(hits) // 2:len(hits) // 2 + 1], "last": hits[-1:],
            "all": hits}[where]
    out, last = bytearray(), 0
    for i in pick:
        out += data[last:i] + b'"imm" : \n' + LONG
        last = i + len(lldi)
    return bytes(out + data[last:])


@pytest.mark.parametrize("where", ["first", "middle", "last", "all"])
def test_long_numbers_stay_on_fast_path(monkeypatch, where):
    data = _with_long(where)
    assert LONG in data
    prog = _fast_only(monkeypatch, data)
    assert "non-integral numbers truncated" in prog.warnings[0]


@pytest.mark.parametrize("text", [
    b"0.020408162847161293", b"-0.020408162847161293", b"1.00000000000000000001", b"2.99999999999999999999",
    b"254.999999999999999999", b"255.0000000000000000000001", b"-127.99999999999999999", b"1e-400",
    b"12.5e-30", b"3e22", b"3.0e+22", b"0.3e-22", b"9007199254740993.0", b"123456789.123456789",
    b"4294967294.999999999999", b"2147483647.99999999999999",
])
@pytest.mark.parametrize("key", ["imm", "rd", "rs1", "size", "len", "offset_value", "zz"])
@pytest.mark.parametrize("op", ["lldi", "sldi", "send", "ld"])
def test_long_number_slots_fast_and_exact(monkeypatch, op, key, text):
    body = (b'{"config": {"core_cnt": 1, "array_group_map": {}, "q": ' + text + b'}, "core0": [{"op": "sldi"}, '
            b'{"op": "' + op.encode() + b'", "' + key.encode() + b'": ' + text + b', "offset": {"offset_value": '
            + text + b'}}, {"op": "' + op.encode() + b'", "rs1": 1.5, "' + key.encode() + b'": ' + text + b"}]}")
    kind, _ = _outcome(body, fast=False)
    if kind == "ok":
        _fast_only(monkeypatch, body)
    else:
        _agree(body)  # out of range: the orjson path reports it (same message)


@pytest.mark.parametrize("text", [b"123456789012345678901", b"-99999999999999999999", b"1e400", b"-1e309",
                                  b"1" + b"0" * 400, b"0.1e309", b"1.5e308"])
def test_huge_numbers_agree(text):
    for key in (b"imm", b"zz"):
        _agree(b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "lldi", "' + key + b'": '
               + text + b"}]}")
        _agree(b'{"config": {"core_cnt": 1, "array_group_map": {}, "x": [' + text + b']}, "core0": []}')


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10 ** 25), st.integers(0, 30), st.integers(-40, 40), st.booleans(), st.booleans(),
       st.sampled_from(["imm", "rd", "len", "rs1", "wait_value"]))
def test_long_decimals_agree_with_orjson(mant, frac, exp, neg, use_exp, key):
    digits = str(mant).rjust(frac + 1, "0")
    text = ("-" if neg else "") + digits[:len(digits) - frac] + ("." + digits[len(digits) - frac:] if frac else "")
    if use_exp:
        text += f"e{exp}"
    for op in ("lldi", "sldi", "send", "wait"):
        _agree(b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "' + op.encode()
               + b'", "' + key.encode() + b'": ' + text.encode() + b"}]}")


def test_error_after_a_long_number_is_the_orjson_one(monkeypatch):
    """A deferred number may be the first error (out of range): the orjson path decides."""
    data = _doc({"config": CFG, "core0": [{"op": "ld"}] * 3, "core1": [{"op": "vfoo"}]})
    bad_first = data.replace(b'[{"op":"ld"}', b'[{"op":"sldi","rd":4294967296.000000000001}', 1)
    with pytest.raises(FormatError, match="core 0, instruction 0: field rd out of range"):
        read_json(bad_first)
    _agree(bad_first)
    same_row = data.replace(b'[{"op":"ld"}', b'[{"op":"lldi","imm":0.50000000000000001,"len":1e12}', 1)
    _agree(same_row)


def test_unknown_top_level_keys_stay_on_fast_path(monkeypatch):
    meta = {"generator": "caf\u00e9 \"q\" \\ \t", "weights": [[1.5, 0.020408162847161293] * 50, {"a": None}],
            "n": 12345678901234567890}
    obj = {"meta": meta, "config": CFG, "core0": INSTS, "notes": "x", "core1": INSTS[:2], "meta2": {}}
    raw = orjson.dumps(obj).replace(b"12345678901234567890", b"123456789012345678901234")
    prog = _fast_only(monkeypatch, raw)
    assert any("ignored top-level key(s): 'meta', 'notes', 'meta2'" in w for w in prog.warnings)
    twice = raw[:-1] + b', "notes": 1}'
    _fast_only(monkeypatch, twice)
    many = b"{" + b"".join(b'"k%d": %d, ' % (i, i) for i in range(100)) + raw[1:]
    assert any("and 93 more" in w for w in _fast_only(monkeypatch, many).warnings)


@pytest.mark.parametrize("s", [b'"\\u00e9\\n\\"\\\\\\/\\b\\f\\r\\t"', '"\u00e9\u4e2d\U0001f600"'.encode(),
                               b'"\\ud83d\\ude00"', b'"\\ud83d"', b'"\\udc00x"', b'"\\u12"', b'"\\u12g4"', b'"\\x"',
                               b'"\xc0\x80"', b'"\xed\xa0\x80"', b'"\xf4\x90\x80\x80"', b'"\xe2\x82"', b'"\x80"',
                               b'"\xf0\x9f\x98"', b'"a\x01"', b'"\x7f"', b'"\xef\xbf\xbf"', b'"\xf4\x8f\xbf\xbf"'])
def test_skipped_strings_validated_like_orjson(s):
    for wrap in (b'{"config": {"core_cnt": 1, "array_group_map": {}, "s": %s}, "core0": [{"op": "ld", "c": %s}]}',
                 b'{"m": [%s, {"k": %s}], "config": {"core_cnt": 1, "array_group_map": {}}, "core0": []}'):
        _agree(wrap % (s, s))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=0, max_size=6))
def test_random_string_bytes_agree(raw):
    _agree(b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld", "c": "' + raw + b'"}]}')


@pytest.mark.parametrize("key", ["caf\u00e9", "\u00e9", "r\u00e9d", "\u4e2d" * 10, "op\u00e9", "x\\u00e9\u00e9",
                                 "core0\u00e9", "config\u00e9"])
def test_non_ascii_keys_stay_on_fast_path(monkeypatch, key):
    k = key.encode().replace(b"\\\\", b"\\")
    raw = (b'{"config": {"core_cnt": 1, "array_group_map": {}}, "' + k + b'": [1], "core0": [{"op": "ld", "'
           + k + b'": {"rd": 7}, "rd": 2, "offset": {"' + k + b'": 1, "offset_value": 3}}]}')
    prog = _fast_only(monkeypatch, raw)
    assert any(w.startswith("ignored top-level key(s): ") for w in prog.warnings)
