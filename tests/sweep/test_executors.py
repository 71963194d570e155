"""The local process pool: results in completion order, time limits, crashed workers."""

from __future__ import annotations

import os
import time

import faults

from nnisa.sweep.executors import LocalExecutor
from nnisa.sweep.spec import Point


def _point(i, timeout=30.0, **options):
    return Point(target="dais", model=f"m{i}", model_path=None, base_config=None, options=options,
                 timeout_s=timeout).to_dict()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_timeout_and_crash_do_not_stop_the_pool():
    rows = []
    ex = LocalExecutor(2, func=faults.crash_or_echo)
    try:
        points = [_point(0), _point(1, crash=True), _point(2, timeout=0.5, sleep=30), _point(3), _point(4)]
        t0 = time.monotonic()
        ex.run(points, rows.append)
        assert time.monotonic() - t0 < 20
    finally:
        ex.close()
    by_model = {r["model"]: r for r in rows}
    assert len(rows) == 5
    assert by_model["m1"]["status"] == "crashed" and "exit code 7" in by_model["m1"]["error"]
    assert by_model["m2"]["status"] == "timeout" and "0.5 s" in by_model["m2"]["error"]
    assert all(by_model[m]["status"] == "ok" for m in ("m0", "m3", "m4"))
    assert all(r["executor"] == "local" for r in rows)
    pids = {by_model[m]["worker_pid"] for m in ("m0", "m3", "m4")}
    time.sleep(0.2)
    assert not any(_alive(p) for p in pids)  # close() stopped every worker


def test_workers_are_reused():
    rows = []
    ex = LocalExecutor(1, func=faults.crash_or_echo)
    try:
        ex.run([_point(i) for i in range(4)], rows.append)
    finally:
        ex.close()
    assert len({r["worker_pid"] for r in rows}) == 1
