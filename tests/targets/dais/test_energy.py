"""DAIS energy model and per-layer figures (issue 28 items 4-5)."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.core.errors import ConfigError
from nnisa.frontend.models import bundled_model_path
from nnisa.targets.dais.compiler import compile_model
from nnisa.targets.dais.energy import energy_figures, load_energy_config, op_energy_pj
from nnisa.targets.dais.formats.text import assemble
from nnisa.targets.dais.sim.simulate import simulate

TEXT = (".dais 1\n.inputs 2 shifts 0 0\n.outputs 2\n%0 = input 0 : (1,3,0)\n%1 = input 1 : (1,3,0)\n"
        "%2 = sub %0, %1, 0 : (1,4,0)\n%3 = add %2, %1, 2 : (1,5,0)\nout 0 = %3\nout 1 = -%2\n")


def test_energy_by_hand():
    """Two adders of 5 and 6 bits: 11 adder bits; depth 2 → latency 2 adder delays."""
    p = assemble(TEXT)
    cfg = load_energy_config("adder_pj_per_bit=0.1,static_uw_per_lut6=2,adder_delay_ns=0.5")
    f = energy_figures(p, cfg, samples=3)
    assert f["energy_dynamic_pj"] == pytest.approx(3 * 11 * 0.1)
    assert f["latency_ns"] == pytest.approx(1.0)
    assert f["energy_static_pj"] == pytest.approx(3 * 11 * 2 * 1.0 * 1e-3)
    assert f["energy_pj"] == pytest.approx(f["energy_dynamic_pj"] + f["energy_static_pj"])
    assert f["energy_per_input_pj"] == pytest.approx(f["energy_pj"] / 3)


def test_sim_reports_the_shared_vocabulary():
    p = assemble(TEXT)
    st = simulate(p, inputs={"x": np.array([[1.0, 2.0], [3.0, -4.0]])}).stats.to_dict()
    for k in ("energy_pj", "energy_dynamic_pj", "energy_static_pj", "energy_per_input_pj", "latency_ns",
              "instructions"):
        assert st[k] is not None and st[k] >= 0, k
    assert st["energy_pj"] == pytest.approx(st["energy_dynamic_pj"] + st["energy_static_pj"])


def test_bad_energy_config_is_one_line():
    with pytest.raises(ConfigError, match="adder_pj_per_bit"):
        load_energy_config({"adder_pj_per_bit": -1})
    with pytest.raises(ConfigError):
        load_energy_config({"no_such_key": 1})


def test_layers_have_adders_bits_depth_energy():
    res = compile_model(bundled_model_path("digits_mlp"))
    rows = res.report["layers"]
    prog = res.program
    e = op_energy_pj(prog, load_energy_config(None))[0]
    assert sum(r["adders"] for r in rows) <= prog.stat("n_adders")
    assert sum(r["adder_bits"] for r in rows) <= prog.stat("adder_bits")
    assert max(r["depth"] for r in rows) <= prog.stat("adder_depth")
    assert all(0 <= r["adder_depth"] <= r["depth"] for r in rows)
    assert sum(r["energy_pj"] for r in rows) == pytest.approx(e.sum(), rel=1e-3, abs=1.0)
    gemm = [r for r in rows if r["op"] == "Gemm"]
    assert gemm and all(r["adder_bits"] > r["adders"] > 0 for r in gemm)
