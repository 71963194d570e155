"""DAIS per-layer figures on the common contract (issue 28 item 5, :mod:`nnisa.targets.dais.layers`):
rows by hand on a two-layer program, on generated models (every adder and every picojoule of the run
in exactly one row), from a compiled folder through ``nnisa sim``, and none for a bare program."""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from nnisa.api import run_model
from nnisa.cli import cli
from nnisa.targets.dais.compiler import compile_model
from nnisa.targets.dais.energy import load_energy_config
from nnisa.targets.dais.formats.text import assemble
from nnisa.targets.dais.layers import program_layer_rows
from nnisa.targets.dais.sim.simulate import simulate

from generated.modelgen import generate
from .test_energy import TEXT


def test_rows_by_hand():
    """``%2 = sub`` (5 bits, level 1) is layer a, ``%3 = add %2`` (6 bits, level 2) layer b; both
    results are read outside their layer (b, the outputs): one byte each."""
    p = assemble(TEXT)
    p.meta["layers"] = [["a", "Sub", 2, 1], ["b", "Add", 3, 1]]
    cfg = load_energy_config("adder_pj_per_bit=0.1,adder_delay_ns=0.5")
    a, b = program_layer_rows(p, cfg)
    assert (a.layer, a.op, a.cycles, a.latency_ns, a.instructions, a.memory_bytes) == ("a", "Sub", 1, 0.5, 1, 1)
    assert (b.cycles, b.instructions, b.memory_bytes) == (1, 1, 1)
    assert a.energy_pj == pytest.approx(0.5) and b.energy_pj == pytest.approx(0.6)
    assert a.utilization == pytest.approx(5 / 11) and b.utilization == pytest.approx(6 / 11)
    assert a.extra == {"adders": 1, "adder_bits": 5, "depth": 1, "lut6": 5.0}
    assert b.extra["depth"] == 1  # one adder on top of layer a's result
    st = simulate(p, inputs={"x": np.array([[1.0, 2.0]])}, config=cfg).stats
    assert st.cycles == 2 and [r.layer for r in st.layers] == ["a", "b"]


def test_bare_program_has_no_layer_rows(tmp_path):
    p = assemble(TEXT)
    assert simulate(p, inputs={"x": np.array([[1.0, 2.0]])}).stats.layers is None
    f = tmp_path / "p.dais.txt"
    f.write_text(TEXT)
    np.save(tmp_path / "x.npy", np.array([[1, 2]]))
    res = CliRunner().invoke(cli, ["sim", "-t", "dais", str(f), "--inputs", str(tmp_path / "x.npy"), "--layers"])
    assert res.exit_code == 0, res.output
    assert "no figures to layers" in res.output or "no per-layer" in res.output


@pytest.mark.parametrize("op,seed", [("Conv", 1), ("Gemm", 0), ("MaxPool", 0), ("Add", 0), ("Softmax", 0),
                                     ("LayerNormalization", 0), ("Concat", 0)])
def test_generated_models_rows_partition_the_run(op, seed, tmp_path):
    """Every adder of the program is in exactly one row, the rows' energy is the run's dynamic
    energy per input, their logic shares add up to the design, no span exceeds the run's cycles."""
    path = tmp_path / f"{op}.onnx"
    onnx.save(generate(op, seed).model, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = run_model("dais", path, samples=2)
    rows = rep["layers"]
    assert rep["layers_source"] == "simulation" and rep["bit_exact"]
    prog = compile_model(path).program
    names = {n.name for n in onnx.load(path).graph.node}
    assert all(r["layer"] == "other" or any(r["layer"].startswith(n) for n in names) for r in rows)
    assert sum(r["adders"] for r in rows) == prog.stat("n_adders")
    assert sum(r["adder_bits"] for r in rows) == prog.stat("adder_bits")
    assert sum(r["energy_pj"] for r in rows) == pytest.approx(rep["energy_dynamic_pj"] / rep["inputs"], rel=1e-9)
    assert rows and sum(r["utilization"] for r in rows) == pytest.approx(1.0 if sum(r["lut6"] for r in rows) else 0.0)
    assert rep["cycles"] == prog.stat("adder_depth")
    assert max(r["cycles"] for r in rows) <= rep["cycles"]
    assert all(r["instructions"] >= 0 and r["memory_bytes"] >= 0 for r in rows)
    assert sum(r["instructions"] for r in rows) <= prog.n_ops


def test_sim_of_a_compiled_folder_reports_the_compilers_rows(tmp_path):
    out = tmp_path / "c"
    res = CliRunner().invoke(cli, ["compile", "-t", "dais", "digits_mlp", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    compiled = json.loads(res.output.strip().splitlines()[-1])["layers"]
    assert [r["layer"] for r in compiled] == ["/fc1/Gemm", "/fc2/Gemm"]
    np.save(tmp_path / "x.npy", np.random.default_rng(0).uniform(0, 1, (3, 1, 8, 8)).astype(np.float32))
    res = CliRunner().invoke(cli, ["sim", "-t", "dais", str(out), "--inputs", str(tmp_path / "x.npy"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["layers"] == compiled
    res = CliRunner().invoke(cli, ["sim", "-t", "dais", str(out), "--inputs", str(tmp_path / "x.npy"), "--layers"])
    assert res.exit_code == 0 and "per layer" in res.output and "/fc1/Gemm" in res.output
