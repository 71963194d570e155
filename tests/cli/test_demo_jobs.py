"""``nnisa demo`` shares its jobs between this process and a worker process (``demo.run_steps``):
the rows come back complete and in order, the pictures' callback sees every compare row, and a
worker that cannot take jobs leaves them to this process."""

from __future__ import annotations

import pytest

import nnisa.demo as demo

COMPARE = [("compare", "digits_cnn", 1, "tensil", None), ("compare", "digits_cnn", 1, "cherry", None),
           ("skip", "digits_vit", 0, "dais", None)]
REFERENCE = [("reference", "cherry", "fast_relu", None, None), ("reference", "cherry", "matmul1024", "sz32", None)]


@pytest.fixture
def small_jobs(monkeypatch):
    monkeypatch.setattr(demo, "compare_jobs", lambda samples=demo.DEMO_SAMPLES: list(COMPARE))
    monkeypatch.setattr(demo, "reference_jobs", lambda pictures: list(REFERENCE))
    monkeypatch.setenv("NNISA_DEMO_JOBS", "2")


def _check(rows, refs, seen):
    assert [(r["target"], r["model"]) for r in rows] == [("tensil", "digits_cnn"), ("cherry", "digits_cnn"),
                                                          ("dais", "digits_vit")]
    assert [r["status"] for r in rows] == ["ok", "ok", "skipped"]
    assert all(r["top1_agreement"] == 1.0 and r["cycles"] > 0 for r in rows[:2])
    assert [(r["target"], r["workload"]) for r in refs] == [("cherry", "fast_relu"), ("cherry", "matmul1024")]
    assert all(r["cycles"] > 0 and r["summary"] for r in refs)
    assert seen == [rows]  # the pictures' callback: once, with every compare row


@pytest.mark.skipif(__import__("os").cpu_count() < 2, reason="the worker process needs two cores")
def test_jobs_shared_with_a_worker(tmp_path, small_jobs):
    seen = []
    rows, refs, worker_cpu = demo.run_steps(tmp_path, lambda r: seen.append(list(r)))
    _check(rows, refs, seen)
    assert worker_cpu is not None and worker_cpu > 0  # the worker took at least one job


@pytest.mark.skipif(__import__("os").cpu_count() < 2, reason="the worker process needs two cores")
def test_jobs_the_worker_cannot_take_run_here(tmp_path, small_jobs, monkeypatch):
    monkeypatch.setattr(demo, "_worker_job", lambda job: None)  # cannot be sent to a worker
    seen = []
    rows, refs, worker_cpu = demo.run_steps(tmp_path, lambda r: seen.append(list(r)))
    _check(rows, refs, seen)
    assert worker_cpu is None


def test_one_process(tmp_path, small_jobs, monkeypatch):
    monkeypatch.setenv("NNISA_DEMO_JOBS", "1")
    seen = []
    rows, refs, worker_cpu = demo.run_steps(tmp_path, lambda r: seen.append(list(r)))
    _check(rows, refs, seen)
    assert worker_cpu is None
