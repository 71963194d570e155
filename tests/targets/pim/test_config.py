"""Tests of the pimsim-nn configuration loader (spec §7)."""

from __future__ import annotations

import json

import pytest

from nnisa.core.errors import ConfigError
from nnisa.targets.pim.config import default_config, load_config


def write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return p


def test_defaults_are_pimsim_defaults(tmp_path):
    cfg = load_config(write(tmp_path, "c.json", {}))
    core = cfg.chip_config.core_config
    assert core.period == 1 and core.rob_size == 1
    assert core.vector_width == 16 and core.vector_latency_cycle == 8
    assert core.global_memory_switch_id == -10
    m = core.matrix_config
    assert m.period == pytest.approx(0.78125)
    assert m.xbar_size == (128, 128) and m.dac_count == 128 and m.xbar_latency == 30
    assert m.input_buffer_latency_cycle == 0 and m.pipeline_mode is True
    lm = core.local_memory_config
    assert (lm.memory_size, lm.data_width, lm.read_latency_cycle, lm.write_latency_cycle) == (1048576, 16, 8, 10)
    assert lm.static_power == 1.0
    assert cfg.chip.network_config.bus_width == 16
    assert cfg.sim.sim_mode == 0 and cfg.sim.sim_time == 1 and cfg.sim.report_verbose_level == 0
    assert cfg.chip.core_cnt == 1
    assert cfg.nnisa.tie_seed == 0 and cfg.nnisa.allow_missing_noc_pairs is False
    assert cfg.gmem_bounded is False


def test_unknown_keys_ignored_and_partial_override(tmp_path):
    cfg = load_config(write(tmp_path, "c.json", {
        "chip_config": {"bogus": 1, "core_config": {"rob_size": 4, "whatever": [1],
                                                     "local_memory_config": {"read_latency_cycle": 3}}},
        "sim_config": {"sim_mode": 1}, "other": {}}))
    assert cfg.chip.core_config.rob_size == 4
    assert cfg.chip.core_config.local_memory_config.read_latency_cycle == 3
    assert cfg.chip.core_config.local_memory_config.write_latency_cycle == 10
    assert cfg.sim.sim_mode == 1


def test_noc_path_relative_to_config(tmp_path):
    sub = tmp_path / "cfgdir"
    sub.mkdir()
    write(sub, "noc.json", {"latency": {"0": {"1": 7, "-10": 15}, "-10": {"0": 15}},
                            "energy": {"0": {"1": 3, "-10": 46}, "-10": {"0": 46}}})
    cfg = load_config(write(sub, "c.json", {"chip_config": {"network_config": {"net_config_file_path": "noc.json"}}}))
    assert cfg.noc_pair(0, 1) == (7.0, 3.0)
    assert cfg.noc_pair(0, -10) == (15.0, 46.0)
    with pytest.raises(ConfigError, match="no entry for core 1 -> core 0"):
        cfg.noc_pair(1, 0)
    cfg.nnisa.allow_missing_noc_pairs = True
    assert cfg.noc_pair(1, 0) == (0.0, 0.0)


def test_nnisa_section(tmp_path):
    cfg = load_config(write(tmp_path, "c.json", {
        "chip_config": {"global_memory_config": {"memory_size": 4096}},
        "nnisa": {"tie_seed": 3, "global_address_mode": "single32", "init_ibiw": 16,
                  "cores": {"7": {"act_in_frac": 2, "init_obiw": 4}}}}))
    assert cfg.nnisa.tie_seed == 3 and cfg.nnisa.global_address_mode == "single32"
    assert cfg.nnisa.act_frac(7, 8, 8) == (2, 7)
    assert cfg.nnisa.act_frac(1, 8, 16) == (4, 15)
    assert cfg.nnisa.init_widths(7) == (16, 4)
    assert cfg.nnisa.init_widths(0) == (16, 8)
    assert cfg.gmem_bounded is True


@pytest.mark.parametrize("body, key", [
    ({"chip_config": {"core_config": {"rob_size": "big"}}}, "chip_config.core_config.rob_size"),
    ({"chip_config": {"core_config": {"local_memory_config": {"data_width": 0}}}},
     "chip_config.core_config.local_memory_config.data_width"),
    ({"sim_config": {"sim_mode": 5}}, "sim_config.sim_mode"),
    ({"chip_config": []}, "chip_config"),
])
def test_bad_values_name_file_and_key(tmp_path, body, key):
    p = write(tmp_path, "bad.json", body)
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    assert "bad.json" in str(ei.value) and key in str(ei.value)


def test_malformed_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_config(write(tmp_path, "x.json", "{not json"))
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.json")
    cfg = load_config(write(tmp_path, "c.json", {"chip_config": {"network_config": {"net_config_file_path": "missing.json"}}}))
    with pytest.raises(ConfigError, match="NoC table file not found"):
        cfg.noc


def test_default_config_presets():
    cfg = default_config(4, preset="conformance")
    assert cfg.chip.core_cnt == 4 and cfg.sim.sim_mode == 1
    assert cfg.chip.core_config.matrix_config.adc_latency_cycle == 20
    assert cfg.noc_pair(3, -10) == (10.0, 1.0)
    assert default_config().chip.core_config.vector_width == 16
    assert default_config(rob_size=2).chip.core_config.rob_size == 2
    cfg2 = default_config(overrides={"chip_config": {"core_config": {"period": 2}}})
    assert cfg2.chip.core_config.period == 2


def test_conformance_config(shared_dir):
    cfg = load_config(shared_dir / "conformance/pim/pimsim_config.json")
    m = cfg.chip.core_config.matrix_config
    assert (m.xbar_latency, m.adc_latency_cycle, m.adc_count, m.xbar_read_power) == (7, 20, 16, 22.24)
    assert cfg.chip.network_config.bus_width == 32
    assert cfg.noc_pair(7, 6)[1] == 46.0 and cfg.noc_pair(0, -10) == (15.0, 46.0)
    assert cfg.sim.sim_time == 17 and cfg.sim.sim_mode == 1
