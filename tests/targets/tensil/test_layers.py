"""Per-layer figures on Tensil (issue 28 item 5): the layers partition the program, so their cycles
add up to the estimator's run, their energy to the dynamic energy; utilization is MAC-array busy
cycles over layer cycles; the compiler's table equals the simulation's under the estimator; a
compiled folder carries the spans; a segmented model lists its host steps as 0-cycle host rows."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from nnisa.api import target
from nnisa.cli import main
from nnisa.frontend.models import bundled_model_path
from nnisa.frontend.transformers import make_bert
from nnisa.targets.tensil.compiler.output import compile_model

from .tensil_models import concat_model, conv_model


@pytest.mark.parametrize("make", [conv_model, concat_model], ids=["conv", "concat"])
def test_layers_partition_the_run(make, tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save(make(), p)
    res = compile_model(p, config="zcu104", out_dir=tmp_path / "b")
    g = onnx.load(p).graph
    x = np.random.default_rng(0).uniform(-1, 1, [d.dim_value for d in g.input[0].type.tensor_type.shape.dim])
    run = target("tensil").simulate(res.program, inputs=res.encode_inputs({g.input[0].name: x.astype(np.float32)}))
    rows = run.stats.layers
    assert rows and sum(r.cycles for r in rows) == run.stats.cycles
    assert sum(r.instructions for r in rows) == run.stats.instructions
    assert sum(r.energy_pj for r in rows) == pytest.approx(run.stats.extra["energy_dynamic_pj"], rel=1e-9)
    names = {n.name for n in g.node}
    for r in rows:
        assert r.layer in names or r.layer == "other"
        assert r.utilization == pytest.approx(min(1.0, r.extra["matmul_vectors"] / r.cycles) if r.cycles else 0.0)
    assert any(r.op.startswith("Conv") and r.utilization > 0 for r in rows)
    # the compiler's table is the same estimate before any run
    assert [(r.layer, r.cycles, r.energy_pj) for r in res.layer_table] == [(r.layer, r.cycles, r.energy_pj)
                                                                          for r in rows]


def test_other_cycle_models_scale_the_estimators_split(tmp_path):
    res = compile_model(bundled_model_path("digits_cnn"), config="zcu104", out_dir=tmp_path / "b")
    x = np.random.default_rng(1).uniform(0, 1, (1, 1, 8, 8)).astype(np.float32)
    run = target("tensil").simulate(res.program, inputs=res.encode_inputs({"input": x}), timing="detailed")
    rows = run.stats.layers
    assert abs(sum(r.cycles for r in rows) - run.stats.cycles) <= len(rows)  # rounding per row
    assert all("detailed" in r.extra["cycles_split"] for r in rows)


def test_compiled_folder_and_cli_layers(tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(["compile", "-t", "tensil", "digits_cnn", "-o", str(out), "--json"])
    assert exc.value.code == 0
    assert json.loads(capsys.readouterr().out)["layers"]
    assert json.loads((out / "manifest.json").read_text())["layer_spans"]
    np.save(tmp_path / "x.npy", np.zeros((2, 1, 8, 8), np.float32))
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(out), "--inputs", str(tmp_path / "x.npy"), "--json"])
    assert exc.value.code == 0
    d = json.loads(capsys.readouterr().out)
    assert sum(r["energy_pj"] for r in d["layers"]) == pytest.approx(d["energy_dynamic_pj"] / d["inputs"])
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(out), "--inputs", str(tmp_path / "x.npy"), "--layers"])
    assert exc.value.code == 0 and "MAC-array busy" in capsys.readouterr().out


def test_segmented_model_layers_name_the_host_steps(tmp_path):
    res = compile_model(make_bert(3, seq=5, hidden=16, heads=2, layers=1).SerializeToString(), config="zcu104",
                        out_dir=tmp_path / "b", name="bert")
    tokens = np.random.default_rng(2).integers(0, 32, (3, 5))
    run = target("tensil").simulate(res.program, inputs={"input": tokens})
    rows = run.stats.layers
    host = [r for r in rows if r.layer == "host"]
    assert [r.op for r in host] == [s["ops"] and "+".join(s["ops"]) for s in res.report["host_steps"]]
    assert all(r.cycles == 0 and r.energy_pj == 0 and r.extra["host_ops"] > 0 for r in host)
    assert sum(r.cycles for r in rows) == run.stats.cycles
    assert sum(r.energy_pj for r in rows) == pytest.approx(run.stats.extra["energy_dynamic_pj"] / 3)
    assert len(res.layer_table) == len(rows)
