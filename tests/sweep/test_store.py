"""The results folder: durable journal, torn lines, locking, typed Parquet columns."""

from __future__ import annotations

import pytest
from extras import require

from nnisa.core.errors import FormatError, OutputError
from nnisa.sweep.store import JOURNAL, ResultStore, read_journal, read_table, write_table

pa = require("pyarrow", "sweep")


def _row(i, **kw):
    return {"point_id": f"p{i}", "target": "pim", "model": "m", "status": "ok", "overrides": {"a.b": i},
            "options": {"schedule": "batch"}, "latency_ns": 10.0 * i, "cycles": i, "extra": {"k": i}, **kw}


def test_journal_and_resume(tmp_path):
    with ResultStore(tmp_path / "r") as st:
        st.append(_row(1))
        st.append(_row(2, status="timeout"))
        with pytest.raises(OutputError, match="another nnisa sweep"):
            ResultStore(tmp_path / "r", resume=True)
    with pytest.raises(OutputError, match="--resume"):
        ResultStore(tmp_path / "r")
    # a torn last line (a crash mid-write) is ignored and the next row starts on its own line
    with open(tmp_path / "r" / JOURNAL, "ab") as f:
        f.write(b'{"point_id": "p3", "sta')
    with ResultStore(tmp_path / "r", resume=True) as st:
        assert [r["point_id"] for r in st.rows()] == ["p1", "p2"]
        st.append(_row(2))  # the re-run replaces the timeout
        table = st.write_table(["p1", "p2", "p9"])
    rows = read_table(table)
    assert [r["point_id"] for r in rows] == ["p1", "p2"] and rows[1]["status"] == "ok"
    assert rows[0]["cfg.a.b"] == 1 and rows[0]["opt.schedule"] == "batch" and rows[0]["config"] == '{"a.b":1}'
    assert len(read_journal(tmp_path / "r" / JOURNAL)) == 3


def test_column_types(tmp_path):
    rows = [_row(1, period_ns=None, mixed=1), _row(2, period_ns=None, mixed="x", flag=True)]
    t = __import__("pyarrow.parquet").parquet.read_table(write_table(rows, tmp_path / "t.parquet"))
    types = {f.name: str(f.type) for f in t.schema}
    assert types["cycles"] == "int64" and types["latency_ns"] == "double" and types["period_ns"] == "double"
    assert types["mixed"] == "string" and types["flag"] == "bool" and types["extra"] == "string"


def test_read_table_errors(tmp_path):
    with pytest.raises(FormatError, match="not a sweep results folder"):
        read_table(tmp_path)
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(FormatError, match="not a Parquet"):
        read_table(bad)
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / JOURNAL).write_bytes(b'{"point_id": "a", "status": "ok", "target": "pim"}\n')
    assert read_table(tmp_path / "j")[0]["point_id"] == "a"


def test_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="not a folder"):
        ResultStore(tmp_path / "f")
