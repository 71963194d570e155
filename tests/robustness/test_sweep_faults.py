"""Sweep results folders under attack (issue 25): the journal is never written through a symlink or
into a device, a table's target names do not choose where pictures go, a stop right after the
last point still leaves ``results.parquet``, and a big table reports quickly."""

from __future__ import annotations

import os
import signal
import stat
import sys
import time
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import assert_clean_error, run_cli  # noqa: E402

pytest.importorskip("pyarrow")

SPEC = "name: t\nmodels: [digits_mlp]\nsamples: 1\ntargets:\n  dais:\n    options:\n      bits: [3, 4]\n"


def _spec(tmp_path: Path) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(SPEC)
    return p


@pytest.mark.parametrize("link_to", ["outside", "/dev/zero"])
def test_resume_refuses_a_journal_symlink(tmp_path, link_to):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    res_dir = tmp_path / "r"
    res_dir.mkdir()
    (res_dir / "points.jsonl").symlink_to(outside if link_to == "outside" else link_to)
    res = run_cli(["sweep", str(_spec(tmp_path)), "-o", str(res_dir), "--resume"])
    assert_clean_error(res, says="symbolic link")
    assert outside.read_text() == "precious\n"


def test_journal_device_is_refused_not_read_forever(tmp_path):
    res_dir = tmp_path / "r"
    res_dir.mkdir()
    try:
        os.mknod(res_dir / "points.jsonl", 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # like /dev/zero
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here ({exc.strerror})")
    t0 = time.monotonic()
    assert_clean_error(run_cli(["sweep", str(_spec(tmp_path)), "-o", str(res_dir), "--resume"]),
                       says="not a regular file")
    assert_clean_error(run_cli(["sweep", "report", str(res_dir)]))
    from nnisa.core.errors import NnisaError
    from nnisa.sweep.store import read_journal
    with pytest.raises(NnisaError, match="not a regular file"):
        read_journal(res_dir / "points.jsonl")
    assert time.monotonic() - t0 < 30


def test_lock_symlink_is_refused(tmp_path):
    res_dir = tmp_path / "r"
    res_dir.mkdir()
    (res_dir / ".lock").symlink_to(tmp_path / "elsewhere.lock")
    assert_clean_error(run_cli(["sweep", str(_spec(tmp_path)), "-o", str(res_dir)]), says="symbolic link")
    assert not (tmp_path / "elsewhere.lock").exists()


def _journal(path: Path, rows: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def test_report_target_names_do_not_choose_paths(tmp_path):
    res_dir = tmp_path / "deep" / "er" / "r"
    res_dir.mkdir(parents=True)
    bad = ["../../../x", "/abs/olute", "a b", "..", "pim", "all"]
    rows = [{"point_id": f"{t}-{k}", "target": t, "status": "ok", "latency_ns": 1.0 + k, "energy_pj": 3.0 - k,
             "area_proxy": 1.0 + k % 2} for t in bad for k in range(3)]
    _journal(res_dir / "points.jsonl", rows)
    res = run_cli(["sweep", "report", str(res_dir), "--json"])
    assert res.code == 0, res.err
    out = res_dir / "report"
    for f in orjson.loads(res.out)["files"]:
        assert Path(f).resolve().parent == out.resolve(), f
    assert not (tmp_path / "x.png").exists() and not list(tmp_path.rglob("pareto_..*"))
    names = sorted(p.name for p in out.iterdir())
    assert "pareto_pim.png" in names and "pareto_all.png" in names and len(names) == len(bad) + 2


def test_stop_right_after_the_last_point_keeps_the_table(tmp_path, monkeypatch):
    """A Ctrl-C that lands while the final table is written waits for it (the table is kept)."""
    from nnisa.sweep import run as run_mod
    from nnisa.sweep import store

    real = store.write_table

    def interrupted_write(rows, path):
        os.kill(os.getpid(), signal.SIGINT)  # arrives in the middle of the write
        time.sleep(0.05)
        return real(rows, path)

    monkeypatch.setattr(store, "write_table", interrupted_write)
    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        run_mod.run_sweep(_spec(tmp_path), out, jobs=1, progress=False)
    table = store.read_table(out / "results.parquet")
    assert sorted(r["status"] for r in table) == ["ok", "ok"]


def _big_journal(path: Path, n: int) -> None:
    import random
    rnd = random.Random(0)
    _journal(path, [{"point_id": f"p{i}", "target": ("pim", "dais", "cherry")[i % 3],
                     "status": "ok" if i % 50 else "error", "error": None if i % 50 else "refused",
                     "latency_ns": rnd.random() * 1e6, "energy_pj": rnd.random() * 1e9,
                     "area_proxy": float(rnd.randrange(1, 1000)), "max_abs_error": rnd.random(), "cycles": i,
                     "overrides": {"chip_config.core_cnt": i % 64}, "options": {"bits": 3 + i % 6}}
                    for i in range(n)])


@pytest.mark.parametrize("n, cpu_limit", [
    (20_000, 20),
    pytest.param(100_000, 60, marks=pytest.mark.slow),  # the most a sweep may have: ~16 s of CPU here
])
def test_big_report_is_quick(tmp_path, n, cpu_limit):
    """A report's cost grows with the rows and the Pareto front, not with rows squared (100,000 rows
    took more than 180 s before): CPU seconds, so a loaded machine does not fail it."""
    res_dir = tmp_path / "r"
    res_dir.mkdir()
    _big_journal(res_dir / "points.jsonl", n)
    from nnisa.sweep.report import sweep_report
    t0 = time.process_time()
    rep = sweep_report(res_dir)
    cpu = time.process_time() - t0
    assert rep["points"] == n and len(rep["files"]) == 5
    assert cpu < cpu_limit, f"sweep report of {n:,} rows took {cpu:.0f} s of CPU"
