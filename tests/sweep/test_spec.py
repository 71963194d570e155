"""Sweep specs: axes, validation errors that name the key, expansion into points."""

from __future__ import annotations

import json

import pytest

from nnisa.core.errors import ConfigError, OptionError
from nnisa.sweep.spec import MAX_AXIS, Point, axis_values, expand, load_spec, parse_spec


def test_axis_forms():
    assert axis_values([1, 2], "k") == [1, 2]
    assert axis_values(5, "k") == [5]
    assert axis_values({"from": 3, "to": 8, "step": 2}, "k") == [3, 5, 7]
    assert axis_values({"from": 0.5, "to": 1.0, "step": 0.25}, "k") == [0.5, 0.75, 1.0]
    assert axis_values({"pow2": [16, 256]}, "k") == [16, 32, 64, 128, 256]
    assert axis_values({"pow2": [3, 20]}, "k") == [4, 8, 16]
    assert axis_values({"a": 1}, "k") == [{"a": 1}]  # an object value, not a range


@pytest.mark.parametrize("raw, says", [
    ([], "empty list"),
    ({"from": 1, "to": 5, "step": 0}, "step > 0"),
    ({"from": 5, "to": 1}, "gives 0 values"),
    ({"from": 0, "to": 10 * MAX_AXIS}, "values"),
    ({"pow2": [0, 4]}, "positive"),
    ({"pow2": [5, 7]}, "no power of two"),
    ({"from": 1}, "a range is"),
])
def test_axis_errors(raw, says):
    with pytest.raises(ConfigError, match=says) as e:
        axis_values(raw, "targets.pim.grid.x")
    assert "targets.pim.grid.x" in str(e.value)


@pytest.mark.parametrize("data, says", [
    ({"targets": {"nosuch": {}}}, "unknown target(s) nosuch"),
    ({"targets": {}}, "targets"),
    ({"targets": {"pim": {"gird": {}}}}, "targets.pim.gird"),
    ({"targets": {"pim": {}}, "samples": 0}, "samples"),
    ({"targets": {"pim": {}}, "colour": 1}, "colour"),
    ([1, 2], "mapping"),
])
def test_spec_errors_name_the_key(data, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_spec(data)


def test_expand_counts_and_ids(small_spec):
    spec = load_spec(small_spec)
    pts = expand(spec, small_spec.parent)
    assert len(pts) == 24
    assert sum(p.target == "pim" for p in pts) == 16 and sum(p.target == "dais" for p in pts) == 8
    assert len({p.id for p in pts}) == 24
    p = pts[0]
    assert Point.from_dict(json.loads(json.dumps(p.to_dict()))).id == p.id
    assert p.model == "digits_mlp" and p.model_path.endswith("digits_mlp.onnx")
    dais = [p for p in pts if p.target == "dais"]
    assert sorted({p.options["bits"] for p in dais}) == [3, 4, 5, 6]


def _spec(targets, **top):
    return parse_spec({"targets": targets, **top})


@pytest.mark.parametrize("targets, exc, says", [
    ({"pim": {"grid": {"chip_config.core_cn": [4]}}}, ConfigError, "did you mean chip_config.core_cnt"),
    ({"pim": {"grid": {"core_cnt": [4]}}}, ConfigError, "chip_config.core_cnt"),
    ({"pim": {"grid": {"chip_config.core_cnt": [4, -1]}}}, ConfigError, "core_cnt=-1"),
    ({"dais": {"grid": {"bits": [4]}}}, ConfigError, "dais configuration has no key 'bits'"),
    ({"dais": {"options": {"bitz": [4]}}}, OptionError, "targets.dais.options: unknown option 'bitz'"),
    ({"dais": {"options": {"bits": [4, 99]}}}, OptionError, "above the maximum"),
    ({"tensil": {"grid": {"array_size": [4]}}}, ConfigError, "need a base configuration"),
    ({"tensil": {"config": "zcu104", "grid": {"array_size": [1]}}}, ConfigError, "array_size"),
    ({"cherry": {"grid": {"sz": [5]}}}, ConfigError, "targets.cherry.grid"),
    ({"dais": {"models": ["bench:nosuch"]}}, ConfigError, "no workload 'nosuch'"),
    ({"dais": {"models": ["nosuch"]}}, ConfigError, "no bundled model"),
    ({"dais": {"models": ["missing.onnx"]}}, ConfigError, "no such ONNX file"),
])
def test_expand_errors(targets, exc, says, tmp_path):
    with pytest.raises(exc) as e:
        expand(_spec(targets), tmp_path)
    assert says in str(e.value)


def test_bench_points_and_config_files(tmp_path):
    cfg = tmp_path / "sz16.json"
    cfg.write_text('{"sz": 16}')
    pts = expand(_spec({"cherry": {"config": "sz16.json", "models": ["bench:fast_relu"],
                                   "grid": {"superscalar_width": [4, 8]}}}), tmp_path)
    assert [p.workload for p in pts] == ["fast_relu", "fast_relu"]
    assert pts[0].base_config == str(cfg.resolve())


def test_yaml_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets:\n  pim: [\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_spec(bad)
    with pytest.raises(ConfigError, match="not found|No such"):
        load_spec(tmp_path / "none.yaml")
    js = tmp_path / "s.json"
    js.write_text('{"targets": {"dais": {"options": {"bits": 4}}}}')
    assert len(expand(load_spec(js), tmp_path)) == 1


def test_yaml_aliases_are_bounded(tmp_path):
    """A spec may share parts with YAML aliases, but not expand to millions of values."""
    from nnisa.sweep.spec import MAX_SPEC_VALUES, expanded_size
    shared = tmp_path / "shared.yaml"
    shared.write_text("name: ok\ntargets:\n  dais:\n    options: &o\n      bits: [3, 4]\n  pim:\n    options: *o\n")
    spec = load_spec(shared)
    assert spec.targets["dais"].options == spec.targets["pim"].options == {"bits": [3, 4]}
    row = [1] * 100
    table = [row] * 100  # 10^4 values sharing one list
    assert expanded_size({"t": [table] * 50}) == 1 + 1 + 50 * (1 + 100 * 101)
    with pytest.raises(ConfigError, match="more than"):
        expanded_size({"t": [table] * (MAX_SPEC_VALUES // 10_000 + 1)})
