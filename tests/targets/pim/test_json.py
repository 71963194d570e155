"""pimsim-nn JSON dialect: fast scanner vs orjson path, edge cases, round trips, export rules."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from nnisa.core.errors import FormatError
from nnisa.targets.pim.formats.jsonio import dump_json, read_json, write_json
from nnisa.targets.pim.program import DTYPE, PimProgram

from .pim_strategies import program_strategy

CFG = {"core_cnt": 4, "array_group_map": {"core0": [1, 2], "core1": [4]}, "xbar_size": [128, 128]}


def both(data, **kw):
    """Read with the fast scanner and with the orjson path; assert they agree."""
    a = read_json(data, fast=True, **kw)
    b = read_json(data, fast=False, **kw)
    assert sorted(a.cores) == sorted(b.cores)
    for c in a.cores:
        np.testing.assert_array_equal(a.cores[c], b.cores[c])
    assert a.array_group_map == b.array_group_map
    assert (a.chip_cores, a.config_extra, a.warnings) == (b.chip_cores, b.config_extra, b.warnings)
    return a


def doc(**cores):
    d = {"config": CFG}
    d.update(cores)
    return orjson.dumps(d)


def test_basic_fields():
    p = both(doc(core0=[
        {"ibiw": 8, "obiw": 8, "op": "setbw"},
        {"imm": 8800, "op": "sldi", "rd": 0},
        {"offset": {"offset_select": 0, "offset_value": 0}, "op": "ld", "rd": 0, "rs1": 1, "size": 64},
        {"len": 12, "offset": {"offset_select": 0, "offset_value": 0}, "op": "lmv", "rd": 0, "rs1": 1},
        {"imm": 0.0, "len": 72, "offset": {"offset_select": 0, "offset_value": 0}, "op": "lldi", "rd": 0},
        {"group": 1, "mbiw": 8, "op": "mvmul", "rd": 0, "relu": 1, "rs1": 1},
        {"core": 6, "offset": {"offset_select": 0, "offset_value": 5}, "op": "send", "rd": 3, "size": 64},
        {"core": 1, "event_register": 2, "op": "sync"},
        {"event_register": 0, "op": "wait", "wait_value": 7},
        {"op": "sld", "rd": 4, "rs1": 2, "offset_value": -8},
    ]))
    r = p.cores[0]
    assert r["op"].tolist() == [8, 1, 24, 27, 26, 9, 28, 31, 30, 2]
    assert (r["ibiw"][0], r["obiw"][0], r["imm"][1]) == (8, 8, 8800)
    assert (r["rs1"][2], r["len"][2], r["len"][3], r["len"][4]) == (1, 64, 12, 72)
    assert (r["group"][5], r["relu"][5], r["mbiw"][5]) == (1, 1, 8)
    assert (r["rs1"][6], r["rd"][6], r["core"][6], r["ofs_val"][6], r["ofs_sel"][6]) == (3, 0, 6, 5, 0)
    assert (r["ev"][7], r["core"][7], r["ev"][8], r["val"][8]) == (2, 1, 0, 7)
    assert (r["rs1"][9], r["ofs_val"][9]) == (2, -8)
    assert p.chip_cores == 4 and p.config_extra == {"xbar_size": [128, 128]}
    assert p.array_group_map == {0: [1, 2], 1: [4]}


def test_pretty_printed_any_key_order_and_whitespace():
    insts = [{"rs2": 2, "op": "vvadd", "len": 64, "rd": 0, "rs1": 1,
              "offset": {"offset_value": -3, "offset_select": 6}}]
    compact = doc(core2=insts)
    pretty = orjson.dumps(orjson.loads(compact), option=orjson.OPT_INDENT_2)
    tabbed = pretty.replace(b"  ", b"\t").replace(b": ", b" : \r\n ")
    for data in (compact, pretty, tabbed):
        r = both(data).cores[2]
        assert r[0]["ofs_sel"] == 6 and r[0]["ofs_val"] == -3 and r[0]["rs2"] == 2


def test_missing_fields_unknown_fields_floats_negative():
    p = both(doc(core0=[{"op": "vvadd", "foo": {"x": [1, "a", None, True]}, "bar": "s"},
                        {"op": "sldi", "rd": 1.0, "imm": -2.5e3},
                        {"op": "lldi", "imm": 1.9, "len": 4},
                        {"op": "lldi", "imm": -1, "size": 9}]))
    r = p.cores[0]
    assert r[0].tolist() == np.zeros(1, DTYPE)[0].tolist()[:0] + (10,) + (0,) * 15
    assert (r["rd"][1], r["imm"][1]) == (1, -2500)
    assert (r["imm"][2], r["len"][2], r["imm"][3], r["len"][3]) == (1, 4, 255, 9)
    assert any("truncated toward zero" in w and "1 instruction" in w for w in p.warnings)


def test_config_keys_and_cores_in_any_order_duplicates_last_wins():
    data = b'{"core1": [{"op": "nop"}], "config": {"core_cnt": 2, "array_group_map": {}},' \
           b' "core0": [], "core1": [{"op": "setbw", "ibiw": 4, "obiw": 4}]}'
    p = both(data)
    assert sorted(p.cores) == [0, 1] and p.cores[1]["op"].tolist() == [8] and len(p.cores[0]) == 0


def test_unknown_top_level_key_and_high_core_warn():
    p = both(b'{"config": {"core_cnt": 1, "array_group_map": {}}, "meta": 1, "core5": [{"op": "nop"}]}')
    assert any("ignored top-level key" in w for w in p.warnings)
    assert any("core(s) 5" in w and "ignore" in w for w in p.warnings)


def test_odd_register_warning_aggregated():
    insts = [{"op": "ld", "rd": 0, "rs1": 1, "size": 8}] * 5 + [{"op": "st", "rd": 3, "rs1": 0, "size": 8}] * 2
    p = both(doc(core0=insts))
    odd = [w for w in p.warnings if "odd global-address" in w]
    assert len(odd) == 1 and odd[0].startswith("7 instruction(s)") and "ld rs1: 5" in odd[0]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("insts,match", [
    ([{"op": "setbw"}, {"op": "vfoo"}], r"core 0, instruction 1: unknown op 'vfoo'"),
    ([{"rd": 1}], r"core 0, instruction 0: instruction object has no 'op' field"),
    ([{"op": "lldi", "imm": 300}], r"lldi imm outside"),
    ([{"op": "sldi", "rd": 2 ** 40}], r"field rd out of range"),
    ([{"op": "sldi", "rd": "x"}], r"field rd must be a number"),
    ([{"op": "sldi", "rd": True}], r"field rd must be a number"),
    ([{"op": 5}], r"op must be a string"),
    ([{"op": "ld", "offset": 3}], r"offset must be an object"),
    ([3], r"expected an instruction object"),
])
def test_semantic_errors(fast, insts, match):
    with pytest.raises(FormatError, match=match) as ei:
        read_json(doc(core0=insts), fast=fast, file="prog.json")
    assert ei.value.file == "prog.json"


@pytest.mark.parametrize("data", [b"", b"{", b'{"config": ', b"[1, 2]", b'{"core0": [{"op": "nop"}', b"\xff\xfe",
                                  b'{"config": {"core_cnt": 1}, "core0": 5}', b'{"config": 7}',
                                  b'{"config": {"core_cnt": -1, "array_group_map": {}}}',
                                  b'{"config": {"core_cnt": 1, "array_group_map": {"c": 1}}}'])
def test_garbage_is_format_error(data):
    with pytest.raises(FormatError) as ei:
        read_json(data, file="g.json")
    assert "g.json" in str(ei.value)


def test_missing_group_map_and_legacy_by_size():
    data = orjson.dumps({"config": {"core_cnt": 1}, "core0": [
        {"op": "mvmul", "group": 4, "mbiw": 8}, {"op": "mvmul", "group": 1, "mbiw": 8},
        {"op": "mvmul", "group": 4, "mbiw": 8}]})
    with pytest.raises(FormatError, match="array_group_map missing.*by-size"):
        read_json(data)
    p = both(data, legacy_groups="by-size")
    assert p.array_group_map == {0: [1, 4]} and p.cores[0]["group"].tolist() == [1, 0, 1]
    assert p.legacy_groups == "by-size"


def test_compressed_inputs(tmp_path):
    data = doc(core0=[{"op": "setbw", "ibiw": 8, "obiw": 8}])
    for blob in (gzip.compress(data), zlib.compress(data), gzip.compress(data[:20]) + gzip.compress(data[20:])):
        assert read_json(blob).cores[0]["ibiw"][0] == 8
    with pytest.raises(FormatError, match="gzip|truncated"):
        read_json(gzip.compress(data)[:-10], file="t.json.gz")
    with pytest.raises(FormatError, match="not found"):
        read_json(tmp_path / "nope.json")


def test_export_rules():
    rows = np.zeros(6, dtype=DTYPE)
    rows["op"] = [0, 26, 28, 17, 2, 21]  # nop lldi send vavg sld vmv
    rows["ofs_val"] = [0, 8, 0, 3, -4, 0]
    rows["rs1"][2] = 5
    rows["len"] = [0, 16, 64, 4, 0, 4]
    prog = PimProgram(cores={1: rows}, array_group_map={1: [2]}, chip_cores=64, config_extra={"zz": {"b": 1, "a": 2}})
    data, warns = dump_json(prog)
    d = orjson.loads(data)
    assert list(d) == ["config", "core1"] and list(d["config"]) == sorted(d["config"])
    assert d["config"]["core_cnt"] == 64 and d["config"]["zz"] == {"a": 2, "b": 1}
    insts = d["core1"]
    assert [i["op"] for i in insts] == ["lldi", "send", "vavg", "sld", "vmv"]
    assert insts[0] == {"imm": 0, "len": 16, "offset": {"offset_select": 1, "offset_value": 8}, "op": "lldi", "rd": 0}
    assert insts[1] == {"core": 0, "offset": {"offset_select": 0, "offset_value": 0}, "op": "send", "rd": 5, "size": 64}
    assert insts[2]["offset"] == {"offset_select": 2, "offset_value": 3}
    assert insts[3] == {"offset_value": -4, "op": "sld", "rd": 0, "rs1": 0}
    assert "offset" not in insts[4]
    assert len(warns) == 1 and "1 nop" in warns[0]
    for line in data.decode().splitlines()[1:]:  # every object has its keys sorted
        if line.startswith("{"):
            assert list(orjson.loads(line.rstrip(","))) == sorted(orjson.loads(line.rstrip(",")))
    kept = orjson.loads(dump_json(prog, keep_nop=True)[0])
    assert kept["core1"][0] == {"op": "nop"}


@pytest.mark.parametrize("bits,ext", [(64, False), (64, True), (32, False), (32, True)])
def test_roundtrip_json(bits, ext, tmp_path):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])
    @given(program_strategy(bits, ext))
    def run(prog):
        data, warns = dump_json(prog)
        assert warns == []
        for fast in (True, False):
            back = read_json(data, fast=fast)
            assert back.equals(prog)
            for c in prog.cores:
                np.testing.assert_array_equal(back.cores[c], prog.cores[c])
    run()


def test_write_json_gz_atomic(tmp_path):
    rows = np.zeros(1, dtype=DTYPE)
    rows["op"] = 8
    prog = PimProgram(cores={0: rows}, array_group_map={0: []})
    out = tmp_path / "p.json.gz"
    write_json(prog, out)
    assert out.read_bytes()[:2] == b"\x1f\x8b" and read_json(out).equals(prog)
    assert [p.name for p in tmp_path.iterdir()] == ["p.json.gz"]
