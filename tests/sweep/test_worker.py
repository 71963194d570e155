"""One point in a worker: rows for refusals, bundled models found on any node, provenance."""

from __future__ import annotations

import pytest

from nnisa.sweep.spec import Point
from nnisa.sweep.worker import provenance, run_point


def _run(**kw):
    base = dict(target="dais", model="digits_mlp", model_path=None, base_config=None, samples=1)
    return run_point(Point(**{**base, **kw}).to_dict())


def test_bundled_model_found_where_the_point_runs():
    """A cluster node with nnisa installed elsewhere runs a bundled model from its own install."""
    row = _run(model_path="/another/node/site-packages/nnisa/data/digits_mlp.onnx", options={"bits": 4})
    assert row["status"] == "ok" and row["bit_exact"] is True and row["area_unit"] == "adder bits"
    assert row["options"] == {"bits": 4} and row["worker_pid"] > 0 and row["finished_at"] >= row["started_at"]


def test_missing_model_and_bad_override_are_rows():
    row = _run(model="mine", model_path="/nowhere/mine.onnx")
    assert row["status"] == "error" and "/nowhere/mine.onnx: file not found" in row["error"]
    row = _run(target="pim", model_path="/nowhere/digits_mlp.onnx", overrides={"chip_config.core_cnnt": 4})
    assert row["status"] == "error" and "core_cnnt" in row["error"] and row["point_id"]


def test_provenance():
    prov = provenance()
    assert prov["nnisa_version"] and prov["python"].count(".") == 2 and prov["host"]
    assert prov["git_hash"] is None or len(prov["git_hash"].removesuffix("+dirty")) == 40


def test_workload_point_on_a_target_without_onnx_compiler():
    """PIMSAB (no ONNX compiler yet) joins sweeps through its built-in workloads; its joules and
    nanoseconds become the row's energy and latency, its tiles come from the configuration keys."""
    small = _run(target="pimsab", model="bench:vadd", base_config="base", options={"scale": 0.05},
                 overrides={"mesh_width": 6})
    big = _run(target="pimsab", model="bench:vadd", base_config="base", options={"scale": 0.05})
    for row in (small, big):
        assert row["status"] == "ok", row.get("error")
        assert row["latency_ns"] > 0 and row["energy_pj"] > 0 and row["cycles"] > 0
        # the paper's joules as the schema's picojoules: dynamic + static
        assert row["energy_pj"] == pytest.approx(row["energy_dynamic_pj"] + row["energy_static_pj"])
    assert small["overrides"] == {"mesh_width": 6} and small["latency_ns"] != big["latency_ns"]
