"""One point in a worker: rows for refusals, bundled models found on any node, provenance."""

from __future__ import annotations

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
