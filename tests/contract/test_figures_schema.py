"""One vocabulary of figures (issue 28 item 4): every target's ``--json`` of ``sim``, ``bench`` and
``run`` has ``cycles``, ``latency_ns``, ``period_ns``, ``energy_pj`` with ``energy_dynamic_pj`` and
``energy_static_pj``, ``energy_per_input_pj``, ``inputs`` and ``instructions`` under these names
(``None`` where a target does not model one), and none of the older per-target names."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_runner import run_cli
from nnisa.core.target import SCHEMA, Stats, get_target, schema_figures, target_names

LEGACY = ("time_ns", "energy_j", "static_energy_j", "dynamic_energy_pj", "static_energy_pj")


def check_schema(rep: dict, where: str) -> None:
    missing = [k for k in SCHEMA if k not in rep]
    assert not missing, f"{where}: missing {missing}"
    old = [k for k in LEGACY if k in rep]
    assert not old, f"{where}: older names {old}"
    total, dyn, stat = rep["energy_pj"], rep["energy_dynamic_pj"], rep["energy_static_pj"]
    if total is not None:
        assert rep["energy_per_input_pj"] == pytest.approx(total / rep["inputs"]), where
        if dyn is not None and stat is not None:
            assert total == pytest.approx(dyn + stat), where
    else:
        assert rep["energy_per_input_pj"] is None


def test_schema_figures_renames_and_completes():
    d = schema_figures({"cycles": 10, "time_ns": 5.0, "energy_pj": 2e3, "energy_j": 2e-9, "static_energy_j": 1e-9})
    assert d["latency_ns"] == 5.0 and "time_ns" not in d and "energy_j" not in d
    assert d["energy_dynamic_pj"] == pytest.approx(2e3) and d["energy_static_pj"] == pytest.approx(1e3)
    assert d["energy_pj"] == pytest.approx(3e3) and d["energy_per_input_pj"] == pytest.approx(3e3)
    stream = schema_figures({"energy_pj": 1600.0, "dynamic_energy_pj": 1000.0, "images": 16})
    assert stream["energy_static_pj"] == pytest.approx(600.0) and stream["energy_per_input_pj"] == 100.0
    none = Stats(cycles=3).to_dict()
    assert none["energy_pj"] is None and none["energy_per_input_pj"] is None and none["inputs"] == 1


@pytest.mark.parametrize("name", target_names())
def test_sim_and_bench_json_speak_the_schema(name, tmp_path, capsys):
    t = get_target(name)
    ex = t.example
    src = tmp_path / "example.s"
    src.write_text(ex.text)
    args = ["sim", "-t", name, src, "--json"]
    if ex.config is not None:
        args += ["--config", str(ex.config)]
    if ex.inputs:
        np.savez(tmp_path / "in.npz", **ex.sim_inputs())
        args += ["--inputs", tmp_path / "in.npz"]
    for k, v in ex.sim_options.items():
        args += ["-O", f"{k}={v}"]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    check_schema(json.loads(out), f"{name} sim")
    if ex.workload is not None:
        code, out, err = run_cli(["bench", "-t", name, ex.workload, "--json"], capsys)
        assert code == 0, err
        check_schema(json.loads(out), f"{name} bench {ex.workload}")


@pytest.mark.slow
@pytest.mark.parametrize("name", target_names())
def test_run_json_speaks_the_schema(name, capsys):
    code, out, err = run_cli(["run", "-t", name, "digits_mlp", "--samples", "2", "--json"], capsys)
    assert code == 0, err
    check_schema(json.loads(out), f"{name} run")
