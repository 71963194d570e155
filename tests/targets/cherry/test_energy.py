"""Cherry's energy model (issue 28 item 4): per-action energies from the config times the actions."""

from __future__ import annotations

import pytest

from nnisa.api import run_model
from nnisa.core.errors import ConfigError
from nnisa.core.target import get_target
from nnisa.frontend.models import bundled_model_path
from nnisa.targets.cherry.config import load_config
from nnisa.targets.cherry.sim.energy import onchip_mb


def test_fast_relu_energy_by_hand():
    cfg = load_config("sz4")
    st = get_target("cherry").bench("fast_relu", config=cfg).to_dict()
    bits = 16 * 18                               # one SZ=4 tile of cherry18 elements
    dynamic = (128 * 16 * cfg.e_fadd_pj          # relu: one compare per element
               + 128 * 4 * bits * cfg.e_rf_pj_per_bit      # relu reads+writes, load writes, store reads
               + 128 * 4 * bits * cfg.e_sram_pj_per_bit    # load, store, mem_read, mem_write
               + 256 * bits * cfg.e_dram_pj_per_bit)       # mem_read, mem_write
    static = cfg.static_mw_per_mb * onchip_mb(cfg) * 328
    assert st["energy_dynamic_pj"] == pytest.approx(dynamic)
    assert st["energy_static_pj"] == pytest.approx(static)
    assert st["energy_pj"] == pytest.approx(dynamic + static) == st["energy_per_input_pj"]


def test_energy_follows_the_config_and_format():
    base = get_target("cherry").bench("fast_relu", config=load_config("sz4")).to_dict()
    free_dram = get_target("cherry").bench("fast_relu", config=load_config("sz4,e_dram_pj_per_bit=0")).to_dict()
    assert free_dram["energy_dynamic_pj"] == pytest.approx(base["energy_dynamic_pj"] - 256 * 288 * 20.3)
    wide = get_target("cherry").bench("fast_relu", config=load_config("sz4,element_format=fp32")).to_dict()
    assert wide["energy_dynamic_pj"] > base["energy_dynamic_pj"]  # 32-bit elements move more bits
    with pytest.raises(ConfigError):
        load_config("e_sram_pj_per_bit=-1")


def test_compiled_model_reports_energy_parts():
    r = run_model("cherry", bundled_model_path("digits_cnn"), samples=2)
    assert r["energy_pj"] == pytest.approx(r["energy_dynamic_pj"] + r["energy_static_pj"])
    assert r["energy_per_input_pj"] == pytest.approx(r["energy_pj"])
    assert sum(r["energy_breakdown_pj"].values()) == pytest.approx(r["energy_dynamic_pj"])
    assert r["energy_breakdown_pj"]["multiply"] > 0 and r["energy_breakdown_pj"]["host_steps"] > 0
