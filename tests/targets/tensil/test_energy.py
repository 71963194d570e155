"""The Tensil energy model (issue 28 item 4) and the three cycle models reachable from run (item 9)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nnisa.core.errors import ConfigError
from nnisa.core.target import get_target
from nnisa.targets.tensil.config import load_arch
from nnisa.targets.tensil.sim.energy import DEFAULT_ENERGY, mac_pj, program_energy, sram_pj_per_bit

PROG = "loadweights local[0], 5\nmatmul local[5], acc[0], 2\ndatamove local[0] <- dram0[0], 4\n"


def _prog(config="tiny4x4"):
    return get_target("tensil").assemble(PROG, config=config)


def test_energy_counts_each_action():
    prog = _prog()
    arch = prog.arch
    N, bits = arch.array_size, arch.bits
    e = program_energy(prog, runs=1, latency_ns=100.0)
    mac = mac_pj(DEFAULT_ENERGY, arch)
    assert mac == pytest.approx(0.2 * 4 + 0.03 * 2)  # 16-bit: mult 0.2·(16/8)², add 0.03·2
    parts = e["energy_breakdown_pj"]
    assert parts["mac"] == pytest.approx(2 * N * N * mac)       # matmul of 2 vectors
    assert parts["dram"] == pytest.approx(4 * N * bits * 20.0)  # datamove of 4 vectors
    local = sram_pj_per_bit(DEFAULT_ENERGY, arch.local_depth * bits / 8) * N * bits
    assert parts["local"] == pytest.approx((5 + 2 + 4) * local)  # loadweights 5, matmul 2, datamove 4
    assert e["energy_dynamic_pj"] == pytest.approx(sum(parts.values()))
    assert e["energy_static_pj"] == pytest.approx(600.0 * 100.0)  # mW × ns = pJ
    assert e["energy_pj"] == pytest.approx(e["energy_dynamic_pj"] + e["energy_static_pj"])


def test_energy_scales_with_runs_and_per_input():
    prog = _prog()
    one, four = program_energy(prog, runs=1, latency_ns=50.0), program_energy(prog, runs=4, latency_ns=50.0)
    assert four["energy_pj"] == pytest.approx(4 * one["energy_pj"])
    assert four["energy_per_input_pj"] == pytest.approx(one["energy_pj"]) and four["inputs"] == 4


def test_sram_energy_grows_with_bank_size():
    assert sram_pj_per_bit(DEFAULT_ENERGY, 4 << 10) == DEFAULT_ENERGY["sram_8kb_pj_per_bit"]
    mid = sram_pj_per_bit(DEFAULT_ENERGY, 16 << 10)
    assert DEFAULT_ENERGY["sram_8kb_pj_per_bit"] < mid < DEFAULT_ENERGY["sram_32kb_pj_per_bit"]
    assert sram_pj_per_bit(DEFAULT_ENERGY, 1 << 30) == DEFAULT_ENERGY["sram_1mb_pj_per_bit"]


def test_energy_table_from_the_architecture_file(tmp_path):
    d = load_arch("tiny4x4").to_dict()
    d["x_nnisa_energy"] = {"dram_pj_per_bit": 40.0, "static_mw": 0.0}
    path = tmp_path / "a.tarch"
    path.write_text(json.dumps(d))
    prog = get_target("tensil").assemble(PROG, config=str(path))
    base, e = program_energy(_prog(), latency_ns=10.0), program_energy(prog, latency_ns=10.0)
    assert e["energy_breakdown_pj"]["dram"] == pytest.approx(2 * base["energy_breakdown_pj"]["dram"])
    assert e["energy_static_pj"] == 0.0
    d["x_nnisa_energy"] = {"dram_pj": 1.0}
    path.write_text(json.dumps(d))
    with pytest.raises(ConfigError, match="dram_pj"):
        program_energy(get_target("tensil").assemble(PROG, config=str(path)))


@pytest.mark.parametrize("timing", ["estimator", "detailed", "scalesim"])
def test_run_reaches_every_cycle_model_with_energy(timing):
    from nnisa.api import run_model
    from nnisa.frontend.models import bundled_model_path
    r = run_model("tensil", bundled_model_path("digits_mlp"), samples=2, timing=timing)
    assert r["timing_model"].startswith({"estimator": "tensil-estimator", "detailed": "tensil-detailed",
                                         "scalesim": "scalesim"}[timing])
    assert r["energy_pj"] == pytest.approx(r["energy_dynamic_pj"] + r["energy_static_pj"])
    assert r["energy_static_pj"] == pytest.approx(600.0 * r["latency_ns"] * r["inputs"])
    assert r["energy_per_input_pj"] == pytest.approx(r["energy_pj"] / r["inputs"])
    assert np.isfinite(r["energy_pj"]) and r["energy_dynamic_pj"] > 0
