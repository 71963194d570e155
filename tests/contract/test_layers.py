"""Per-layer figures (issue 28 item 5): the one table of :mod:`nnisa.core.layers` on every target.

Each target runs the bundled CNN (and the bundled encoder where it runs transformers) through
``run_model`` and its rows are checked against the run's totals.  ``LAYERS_PENDING`` names the
targets that do not report per-layer figures yet: their test must fail (strict xfail), so a target
that starts reporting them is taken off the list in the same commit.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from nnisa.api import run_model
from nnisa.cli import cli
from nnisa.core.layers import LAYER_COLUMNS, LayerRow, layer_dicts, sum_column
from nnisa.core.target import Stats, get_target, target_names
from nnisa.frontend.models import resolve_model

#: targets whose per-layer figures are still to come (strict xfail: remove a name when it passes)
LAYERS_PENDING: set[str] = set()
#: bundled models each target is checked on (the encoder where the target runs transformers)
MODELS = {"pim": ["digits_cnn"], "dais": ["digits_cnn"], "tensil": ["digits_cnn", "digits_bert"], "pimsab": ["digits_cnn"],
          "cherry": ["digits_cnn", "digits_bert"]}
CASES = [pytest.param(t, m, marks=[pytest.mark.xfail(strict=True, reason=f"{t}: per-layer figures pending")]
                      if t in LAYERS_PENDING else [], id=f"{t}-{m}")
         for t in target_names() for m in MODELS.get(t, [])]


def _node_names(model: str) -> set[str]:
    return {n.name for n in onnx.load(resolve_model(model)).graph.node}


@pytest.mark.parametrize("target_name,model", CASES)
def test_run_reports_layers_that_add_up(target_name: str, model: str) -> None:
    rep = run_model(target_name, model, samples=1)
    rows = rep.get("layers")
    assert rows, f"{target_name}: no per-layer rows"
    assert rep.get("layers_source") == "simulation"
    assert get_target(target_name).layer_utilization, "the target says what utilization measures"
    names = _node_names(model)
    for r in rows:
        assert r["layer"] in ("host", "other") or any(r["layer"].startswith(n) for n in names), r["layer"]
        for c in ("cycles", "energy_pj", "utilization", "memory_bytes"):
            assert r[c] is not None, f"{target_name} layer {r['layer']}: {c} missing"
        assert 0.0 <= r["utilization"] <= 1.0
        assert r["cycles"] >= 0 and r["energy_pj"] >= 0 and r["memory_bytes"] >= 0
    assert max(r["cycles"] for r in rows) <= rep["cycles"]
    per_input = rep["energy_dynamic_pj"] / rep["inputs"]
    assert sum(r["energy_pj"] for r in rows) == pytest.approx(per_input, rel=0.01)
    json.dumps(rows)  # JSON as it is


@pytest.mark.parametrize("target_name", [t for t in target_names() if "compile" in get_target(t).capabilities()])
def test_layers_flag_prints_a_table_or_says_why(target_name: str, tmp_path) -> None:
    res = CliRunner().invoke(cli, ["run", "-t", target_name, "digits_cnn", "--layers"])
    assert res.exit_code == 0, res.output
    if target_name in LAYERS_PENDING:
        assert "no per-layer figures" in res.output
    else:
        assert "per layer" in res.output and "utilization" in res.output
        res = CliRunner().invoke(cli, ["run", "-t", target_name, "digits_cnn", "--json"])
        assert json.loads(res.output.strip().splitlines()[-1])["layers"]


def test_layer_rows_round_trip_and_check_their_columns() -> None:
    row = LayerRow("conv1", "Conv", cycles=np.int64(10), energy_pj=2.5, utilization=0.5, memory_bytes=64,
                   extra={"crossbars": 4})
    d = row.to_dict()
    assert list(d)[:len(LAYER_COLUMNS)] == list(LAYER_COLUMNS) and d["crossbars"] == 4
    assert type(d["cycles"]) is int  # numpy scalars become Python numbers (JSON, Parquet)
    assert LayerRow.from_dict(d) == LayerRow("conv1", "Conv", cycles=10, energy_pj=2.5, utilization=0.5,
                                             memory_bytes=64, extra={"crossbars": 4})
    with pytest.raises(ValueError, match="utilization"):
        LayerRow("x", "Relu", utilization=1.5)
    with pytest.raises(ValueError, match="shadow"):
        LayerRow("x", "Relu", extra={"cycles": 3})
    assert sum_column([row, row], "energy_pj") == 5.0
    assert sum_column([row, LayerRow("y", "Relu")], "energy_pj") is None


def test_stats_carry_layers_in_every_form() -> None:
    st = Stats(cycles=100, energy_pj=4.0, layers=[{"layer": "a", "op": "Conv", "cycles": 60, "energy_pj": 4.0}])
    assert isinstance(st.layers[0], LayerRow)
    d = st.to_dict()
    assert d["layers"] == layer_dicts(st.layers) and d["cycles"] == 100
    again = Stats.from_figures(st.figures())
    assert again.layers == st.layers and "layers" not in again.extra
    assert "layers" not in Stats(cycles=1).to_dict()


@pytest.mark.parametrize("target_name", [t for t in target_names() if "compile" in get_target(t).capabilities()])
def test_compile_layers_flag_prints_the_compilers_table_or_says_why(target_name: str, tmp_path) -> None:
    out = tmp_path / "c"
    res = CliRunner().invoke(cli, ["compile", "-t", target_name, "digits_cnn", "-o", str(out), "--layers"])
    assert res.exit_code == 0, res.output
    assert "no per-layer" in res.output or "per layer" in res.output
