"""A sweep on a multi-node Ray cluster (issue 25): three Ray nodes on this machine (Ray's own
``ray.cluster_utils.Cluster``), points spread over the nodes, a node killed mid-sweep loses no
point (its running point is a ``crashed`` row, the journal holds one row per point), and
``--resume`` completes the sweep on the nodes left."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sweep"))  # extras.py, faults.py

from extras import require  # noqa: E402

SPEC = """\
name: multinode
models: [digits_mlp]
samples: 1
timeout_s: 300
targets:
  dais:
    options:
      bits: {from: 3, to: 8}
"""


@pytest.fixture
def cluster():
    """A head node and two worker nodes, one CPU each (node deaths noticed within ~2 s)."""
    require("ray", "dist")
    from ray.cluster_utils import Cluster
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False,
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3}})
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    c.wait_for_nodes()
    try:
        yield c, workers
    finally:
        import ray
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


def lose_node(c, node) -> None:
    """A node lost like a machine: its Ray workers (children of its raylet) and then the node's own
    processes are killed with SIGKILL (``remove_node`` alone stops the raylet, and a worker busy in
    a point would not notice before finishing it)."""
    import signal
    raylets = {p.process.pid for p in node.all_processes.get("raylet", [])}
    for pid in (int(x) for x in os.listdir("/proc") if x.isdigit()):
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid in raylets:
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass
    c.remove_node(node, allow_graceful=False)


def kill_a_busy_worker(c, workers, warm) -> list:
    """In the background: once ``warm()`` (a point has finished, so every node's Ray worker is up
    and a new point starts at once), kill a worker node that runs a point (its CPU taken), not
    gracefully, like a machine lost; the returned list gets the node once done."""
    import threading

    import ray
    from ray._private.state import available_resources_per_node
    killed: list = []

    def watch() -> None:
        deadline = time.monotonic() + 300
        settled = False
        while time.monotonic() < deadline:
            if ray.is_initialized() and warm():
                if not settled:  # points that finish together: let the next ones start and the
                    time.sleep(1.5)  # resource view catch up, so "busy" is not a stale wave's CPU
                    settled = True
                try:
                    free = available_resources_per_node()
                except Exception:  # noqa: BLE001 - the driver is (re)connecting
                    free = {}
                busy = [w for w in workers if w.node_id in free and free[w.node_id].get("CPU", 0) < 1]  # 0: left out
                if busy:
                    time.sleep(0.3)  # the point is under way
                    lose_node(c, busy[0])
                    killed.append(busy[0])
                    return
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()
    return killed


@pytest.mark.slow  # ~1-2 min: a 3-node cluster starting, 6 DAIS points twice, a node killed
def test_sweep_survives_a_node_killed_mid_sweep(cluster, tmp_path):
    from nnisa.sweep import read_table, run_sweep
    from nnisa.sweep.store import JOURNAL, read_journal
    c, workers = cluster
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "r"
    killed = kill_a_busy_worker(c, workers, lambda: len(read_journal(out / JOURNAL)) >= 1)
    t0 = time.monotonic()
    first = run_sweep(spec, out, ray=c.address, progress=False)
    assert killed and first["executor"] == "ray" and first["jobs"] == 3  # the cluster's CPUs
    rows = read_journal(out / JOURNAL)
    ids = [r["point_id"] for r in rows]
    assert len(rows) == first["points"] == 6 and len(set(ids)) == 6, "a point was lost or recorded twice"
    status = Counter(r["status"] for r in rows)
    assert status["crashed"] >= 1 and status["ok"] + status["crashed"] == 6, status
    nodes = {r["ray_node"] for r in rows if r["status"] == "ok"}
    assert len(nodes) >= 2, f"points did not spread over the nodes: {nodes}"
    table = read_table(out / "results.parquet")
    assert sorted(r["point_id"] for r in table) == sorted(ids)

    second = run_sweep(spec, out, ray=c.address, resume=True, progress=False)
    assert second["skipped"] == status["ok"] and second["ok"] == status["crashed"]
    final = {r["point_id"]: r for r in read_table(out / "results.parquet")}
    assert sorted(final) == sorted(ids) and {r["status"] for r in final.values()} == {"ok"}
    assert all(r["bit_exact"] for r in final.values())
    assert time.monotonic() - t0 < 900


def test_points_spread_and_a_dead_node_loses_none(cluster):
    """The fast form (no model compiled): echo points that sleep, over the nodes still up; the
    node running some is killed; every point has exactly one row, ``crashed`` for those it ran."""
    import faults
    from ray import cloudpickle

    from nnisa.sweep.executors import RayExecutor
    from nnisa.sweep.spec import Point
    cloudpickle.register_pickle_by_value(faults)  # Ray's workers do not have tests/sweep on their path
    c, workers = cluster
    points = [Point(target="dais", model=f"m{i}", model_path=None, base_config=None, options={"sleep": 6},
                    timeout_s=120).to_dict() for i in range(6)]
    rows = []
    ex = RayExecutor(None, c.address, func=faults.crash_or_echo)
    killed = kill_a_busy_worker(c, workers, lambda: len(rows) >= 1)
    try:
        ex.run(points, rows.append)
    finally:
        ex.close()
    assert sorted(r["model"] for r in rows) == [f"m{i}" for i in range(6)]
    status = Counter(r["status"] for r in rows)
    assert status["crashed"] >= 1 and status["ok"] + status["crashed"] == 6, status
    assert len({r.get("ray_node") for r in rows if r["status"] == "ok"}) >= 2
