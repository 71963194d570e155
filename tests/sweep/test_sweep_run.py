"""A real sweep over pim and dais (24 points): locally and on a local Ray instance; resume; Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from extras import require

from nnisa.sweep import read_table, run_sweep, sweep_report
from nnisa.sweep.store import JOURNAL, read_journal

require("pyarrow", "sweep")


def _check_rows(rows, executor):
    assert len(rows) == 24
    bad = [(r["target"], r.get("error")) for r in rows if r["status"] != "ok"]
    assert not bad
    for r in rows:
        assert r["executor"] == executor and r["nnisa_version"] and r["wall_s"] > 0
        assert r["bit_exact"] is True and r["area_proxy"] > 0
        # 3-bit DAIS weights may flip one of the 2 images' top-1 (bit-exact to its own integer reference still)
        assert r["top1_agreement"] == 1.0 or (r["target"] == "dais" and r["opt.bits"] == 3)
    pim = [r for r in rows if r["target"] == "pim"]
    assert all(r["latency_ns"] > 0 and r["energy_pj"] > 0 and r["cycles"] > 0 for r in pim)
    assert {r["cfg.chip_config.core_cnt"] for r in pim} == {16, 64}
    # a bigger chip costs more area; more adder bits for wider DAIS words
    dais = sorted((r for r in rows if r["target"] == "dais" and r["opt.method"] == "wmc"), key=lambda r: r["opt.bits"])
    assert [r["area_proxy"] for r in dais] == sorted(r["area_proxy"] for r in dais)


def test_local_sweep_resume_and_report(small_spec, tmp_path):
    out = tmp_path / "res"
    summary = run_sweep(small_spec, out, jobs=2, progress=False)
    assert summary["points"] == 24 and summary["ok"] == 24 and summary["executor"] == "local"
    _check_rows(read_table(out), "local")
    again = run_sweep(small_spec, out, jobs=2, resume=True, progress=False)
    assert again["run"] == 0 and again["skipped"] == 24 and again["executor"] is None
    rep = sweep_report(out)
    assert set(rep["fronts"]) == {"pim", "dais"}
    assert rep["fronts"]["pim"]["objectives"][:3] == ["latency_ns", "energy_pj", "area_proxy"]
    assert 1 <= len(rep["fronts"]["pim"]["front"]) <= 16
    md = (out / "report" / "report.md").read_text()
    assert "## pim:" in md and "## dais:" in md and (out / "report" / "pareto_pim.png").stat().st_size > 1000


def test_timeouts_are_recorded(small_spec, tmp_path):
    spec = small_spec.read_text().replace("timeout_s: 120", "timeout_s: 0.001").replace("[16, 64]", "[16]")
    small_spec.write_text(spec)
    summary = run_sweep(small_spec, tmp_path / "res", jobs=2, progress=False)
    assert summary["timeout"] == summary["points"] == 12  # 4 pim + 8 dais
    # a resumed sweep runs timed-out points again
    assert run_sweep(small_spec, tmp_path / "res", jobs=2, resume=True, progress=False)["run"] == 12


def test_ray_sweep(small_spec, tmp_path):
    require("ray", "dist")
    import psutil  # a dependency of ray
    import ray
    # Ray processes this test worker already had (another test's cluster still stopping) are not ours
    before = set(_ray_children(psutil))
    summary = run_sweep(small_spec, tmp_path / "res", jobs=2, ray="local", progress=False)
    assert summary["executor"] == "ray" and summary["ok"] == 24
    _check_rows(read_table(tmp_path / "res"), "ray")
    assert not ray.is_initialized()  # the private instance is shut down ...
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and set(_ray_children(psutil)) - before:
        time.sleep(0.2)
    assert not set(_ray_children(psutil)) - before  # ... with every process it started (GCS, raylet, workers)


def _ray_children(psutil):
    left = []
    for c in psutil.Process().children(recursive=True):
        try:
            if "ray" in " ".join(c.cmdline()).lower() and c.status() != psutil.STATUS_ZOMBIE:
                left.append(c.pid)
        except psutil.Error:
            pass
    return left


DAIS_SPEC = """\
name: dais-bits
models: [digits_mlp]
samples: 2
targets:
  dais:
    options:
      bits: {from: 3, to: 8}
      method: [wmc, mc]
"""


def test_ctrl_c_loses_nothing(tmp_path):
    """SIGINT mid-sweep: exit 130, every finished point is in the journal and the table, workers gone."""
    spec = tmp_path / "dais.yaml"
    spec.write_text(DAIS_SPEC)
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "nnisa", "sweep", str(spec), "-o", str(out), "-j", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(read_journal(out / JOURNAL)) < 2 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    rows = read_journal(out / JOURNAL)
    assert proc.returncode == 130, err.decode()[-500:]
    assert 2 <= len(rows) < 12
    table = read_table(out / "results.parquet")
    assert {r["point_id"] for r in table} == {r["point_id"] for r in rows}
    time.sleep(0.3)
    for pid in {r["worker_pid"] for r in rows}:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    # --resume finishes the rest
    rest = run_sweep(spec, out, jobs=2, resume=True, progress=False)
    assert rest["skipped"] == len(rows) and rest["ok"] == 12 - len(rows)
