"""Conformance of the timing/energy model on the ResNet-18 program (spec §12.5, C5–C7, C9).

C6 (the key acceptance test) also runs by default: loading + timing take a few seconds.
Everything else on the full program is ``slow``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from nnisa.core.errors import DeadlockError
from nnisa.targets.pim.config import load_config
from nnisa.targets.pim.sim.timing import simulate_timing
from nnisa.targets.pim.sim.timing_report import format_pimsim_report

from shared_data import require_shared
from .pim_loader import read_program

# "ref. model finish (ns)" column of spec §12.3 (tie seed 0)
REF_MODEL_NS = [
    15974340, 16151263, 16295456, 16182702, 16161188, 16202431, 12403640, 12403540, 12402540,
    12457887, 12503083, 12503183, 12504703, 12450253, 12338225, 12338325, 12338525, 12338425,
    12337145, 13853282, 13863808, 14073916, 14092000, 14078294, 14098444, 14079515, 14097939,
    14062445, 14033070, 6409965, 6420085, 6420725, 8029006, 8029726, 8028048, 6430466, 6424091,
    6425257, 6433546, 6426950, 6434446, 6428610, 6429722, 116960,
]
CHIP_LATENCY_NS = 16_295_456
DYNAMIC_PJ = 163_888 * 24_490.24 + 177_094 * 46  # = 4,021,802,777.12 (§9)


@pytest.fixture(scope="module")
def conf():
    d = require_shared("conformance", "pim")
    prog = read_program(d / "resnet18_batch_8x8.json.gz")
    return prog, load_config(d / "pimsim_config.json"), d


@pytest.fixture(scope="module")
def result(conf):
    prog, cfg, _ = conf
    return simulate_timing(prog, cfg, mode="pimsim")


def test_c6_chip_latency_and_every_core_exact(result):
    assert result.latency_ps == CHIP_LATENCY_NS * 1000
    got = [result.finish_ps[c] for c in range(44)]
    assert got == [v * 1000 for v in REF_MODEL_NS]
    assert all(result.finish_recorded.values())


@pytest.mark.slow
def test_c5_energy_identity(result):
    assert DYNAMIC_PJ == pytest.approx(4_021_802_777.12, rel=1e-12)
    assert result.dynamic_energy_pj == pytest.approx(DYNAMIC_PJ, rel=1e-9)
    assert result.energy_pj["mvmul"] == pytest.approx(163_888 * 24_490.24, rel=1e-12)
    assert result.energy_pj["noc"] == pytest.approx(177_094 * 46, rel=1e-12)
    assert result.static_power_mw == 45.0
    assert result.total_energy_pj == pytest.approx(DYNAMIC_PJ + 45.0 * CHIP_LATENCY_NS, rel=1e-12)
    flits = result.noc_flits
    assert sum(f for (s, d), f in flits.items() if d == -10) == 83_488 + 77_648
    assert sum(f for (s, d), f in flits.items() if d != -10 and s != -10) == 15_958


def parse_report(text):
    out = {}
    out["latency_ms"] = float(re.search(r"- latency:\s+([\d.]+) ms", text).group(1))
    out["power_mw"] = float(re.search(r"- average power:\s+([\d.]+) mW", text).group(1))
    out["energy_pj"] = float(re.search(r"- average energy:\s+([\d.]+) pJ", text).group(1))
    out["cores"] = {int(c): float(v) for c, v in
                    re.findall(r"Core (\d+) Information\s+- finish time:\s+([\d.]+) ms", text)}
    return out


@pytest.mark.slow
def test_c7_against_pimsim_nn_reports(conf, result):
    _, _, d = conf
    rep17 = parse_report((d / "resnet18_batch_pimsim_report.txt").read_text())
    rep50 = parse_report((d / "resnet18_batch_pimsim_percore.txt").read_text())
    assert rep17["latency_ms"] == 16.27687 and rep50["latency_ms"] == 16.299501
    ours = result.latency_ps / 1e9
    for rep in (rep17, rep50):
        assert abs(ours / rep["latency_ms"] - 1) < 0.015
        # pimsim-nn's own energy/power obey the C5 identity with its latency
        assert rep["energy_pj"] == pytest.approx(DYNAMIC_PJ + 45.0 * rep["latency_ms"] * 1e6, rel=1e-9)
        assert rep["power_mw"] == pytest.approx(rep["energy_pj"] / (rep["latency_ms"] * 1e6), rel=1e-8)
    assert len(rep50["cores"]) == 44
    dev = [result.finish_ps[c] / 1e9 / v - 1 for c, v in rep50["cores"].items()]
    assert max(abs(x) for x in dev) < 0.03
    assert float(np.mean(np.abs(dev))) < 0.005
    # our own report is consistent with C5
    assert result.average_power_mw == pytest.approx(result.total_energy_pj / CHIP_LATENCY_NS, rel=1e-12)
    text = format_pimsim_report(result, "pimsim_config.json", "resnet18_batch_8x8.json.gz", verbose=1)
    mine = parse_report(text)
    assert mine["latency_ms"] == pytest.approx(CHIP_LATENCY_NS / 1e6, abs=1e-9)
    assert mine["energy_pj"] == pytest.approx(result.total_energy_pj, rel=1e-12)
    assert len(mine["cores"]) == 44


@pytest.mark.slow
def test_c9_deadlock_report(conf):
    prog, cfg, _ = conf
    import copy
    p2 = copy.copy(prog)
    p2.cores = dict(prog.cores)
    rows = prog.cores[6]
    recv_idx = np.flatnonzero(rows["op"] == 29)
    p2.cores[6] = np.delete(rows, recv_idx[-1])
    with pytest.raises(DeadlockError) as ei:
        simulate_timing(p2, cfg, mode="pimsim")
    err = ei.value
    assert err.exit_code == 3
    rep = err.report
    lines = {int(m.group(1)): m.group(0) for m in re.finditer(r"^  core (\d+) .*$", rep, re.M)}
    send7 = np.flatnonzero(prog.cores[7]["op"] == 28)
    assert f"pc {send7[-1]} " in lines[7] and "send" in lines[7]
    assert "recv on core 6 from core 7 (core 6 finished)" in lines[7]
    assert "send" in lines[8] and "recv on core 7 from core 8 (core 7 is blocked" in lines[8]
    assert 6 not in lines


@pytest.mark.slow
def test_rob_model_with_one_entry_reproduces_c6(conf, result):
    """The general rob_size > 1 engine, run with one entry, equals the reduced model (§8.5)."""
    from nnisa.targets.pim.sim.timing_rob import run_rob
    from nnisa.targets.pim.sim.timing_units import Params, plan_core
    prog, cfg, _ = conf
    prm = Params.from_config(cfg, False)
    plans = {c: plan_core(c, prog.cores[c], prm, cfg, prog.array_group_map.get(c, [])) for c in prog.cores}
    eng, _ = run_rob(prog, plans, prm, cfg, False)
    assert {c: int(eng.inst_times[c][2][-1]) for c in prog.cores} == result.finish_ps


@pytest.mark.slow
def test_throughput_mode_matches_informative_figures(conf):
    """§12.4 (informative): sim_mode 0, sim_time 100 ms → count 8.02, 367.3 mW, 4.58e9 pJ/it."""
    prog, cfg, _ = conf
    cfg = cfg.model_copy(deep=True)
    cfg.sim_config.sim_time = 100
    r = simulate_timing(prog, cfg, mode="pimsim", sim_mode=0)
    assert abs(r.output_count - 8.02) <= 0.1  # ±1 round per core (§14)
    assert r.average_power_mw == pytest.approx(367.3, rel=0.01)
    assert r.total_energy_pj / r.output_count == pytest.approx(4.58e9, rel=0.01)
    assert r.slowest_rounds == 5
