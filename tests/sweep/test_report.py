"""``nnisa sweep report`` on a hand-made journal: per-target fronts on the objectives each target
models, the cross-target latency-energy front, failed points listed, pictures drawn."""

from __future__ import annotations

import json

from nnisa.sweep.report import sweep_report, target_front
from nnisa.sweep.store import JOURNAL


def _row(i, target, lat, en, area, err=0.1, status="ok", **cfg):
    return {"point_id": f"p{i}", "sweep": "hand", "target": target, "model": "m", "status": status,
            "latency_ns": lat, "energy_pj": en, "area_proxy": area, "area_unit": "cells", "max_abs_error": err,
            "overrides": cfg, "options": {}}


ROWS = [
    _row(0, "a", 10.0, 100.0, 4.0, cores=4),     # fast, costly
    _row(1, "a", 20.0, 50.0, 2.0, cores=2),      # balanced
    _row(2, "a", 30.0, 60.0, 2.0, cores=1),      # dominated by p1
    _row(3, "b", 15.0, 40.0, 8.0),
    _row(4, "b", 15.0, 40.0, 8.0),               # equal to p3: both stay
    _row(5, "c", None, None, 5.0, err=0.2),      # no timing model: ranked on area and error
    _row(6, "c", None, None, 3.0, err=0.3),
    _row(7, "c", None, None, 6.0, err=0.3),      # dominated by p6
    _row(8, "a", None, None, None, status="error"),
]


def test_target_front_uses_the_objectives_every_row_has():
    objs, idx = target_front([r for r in ROWS if r["target"] == "c"])
    assert objs == ["area_proxy", "max_abs_error"] and idx == [0, 1]


def test_report(tmp_path):
    res = tmp_path / "res"
    res.mkdir()
    (res / JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    rep = sweep_report(res)
    assert rep["points"] == 9 and rep["ok"] == 8 and rep["failed"] == 1
    assert rep["fronts"]["a"]["front"] == ["p0", "p1"]
    assert rep["fronts"]["b"]["front"] == ["p3", "p4"]
    assert rep["fronts"]["c"] == {"objectives": ["area_proxy", "max_abs_error"], "points": 3, "front": ["p5", "p6"]}
    out = res / "report"
    for name in ("pareto_a.png", "pareto_b.png", "pareto_c.png", "pareto_all.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    md = (out / "report.md").read_text()
    assert "## a: 2 Pareto-optimal of 3 points" in md and "cores=2" in md and "cores=1" not in md
    assert "## Failed points" in md and "| a | m | (defaults) | error |" in md


def test_report_survives_a_foreign_or_edited_table(tmp_path):
    """Rows another writer made (wrong types, no identity) are skipped; figures that are not numbers
    count as not modelled; a table with no sweep row at all is a clean error."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytest

    from nnisa.core.errors import FormatError
    res = tmp_path / "res"
    res.mkdir()
    rows = [{"point_id": "a", "target": 5, "status": "ok"}, {"point_id": "c"},
            {**_row(1, "x", 3.0, "fast", 1.0), "overrides": [1, 2]}, _row(2, "x", 4.0, 5.0, 2.0)]
    (res / JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = sweep_report(res)
    assert rep["points"] == 2 and rep["fronts"]["x"]["objectives"] == ["latency_ns", "area_proxy", "max_abs_error"]
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"a": [1, 2], "target": [1, 2]}), other)
    with pytest.raises(FormatError, match="not a sweep results table"):
        sweep_report(other)
