"""``nnisa sweep --ray HOST:PORT``: joining a running Ray cluster (a stand-in started by a helper
process), its CPUs as the default parallelism, time limits enforced there, the cluster left running."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from extras import require


HERE = Path(__file__).resolve().parent
SPEC = """\
name: cluster
models: [digits_mlp]
samples: 1
timeout_s: {timeout}
targets:
  dais:
    options:
      bits: [3, 4, 5]
"""


@pytest.fixture
def cluster(tmp_path):
    require("ray", "dist")
    # a token of our own: Ray >= 2.59 authenticates local clusters, and the CLI must reach this one
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))
    holder = subprocess.Popen([sys.executable, str(HERE / "ray_holder.py"), "3"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        address = holder.stdout.readline().strip()
        assert ":" in address, "the stand-in Ray cluster did not start"
        yield address, env
    finally:
        holder.stdin.close()
        try:
            holder.wait(60)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()


def _sweep(spec, out, address, env, *extra):
    proc = subprocess.run([sys.executable, "-m", "nnisa", "sweep", str(spec), "-o", str(out), "--ray", address,
                           "--json", *extra], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-800:]
    return json.loads(proc.stdout)


@pytest.mark.slow  # ~40 s wall: a second Ray instance plus three CLI processes joining it
def test_sweep_on_a_running_cluster(cluster, tmp_path):
    address, env = cluster
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.format(timeout=0.001))
    got = _sweep(spec, tmp_path / "r", address, env)
    assert got["executor"] == "ray" and got["jobs"] == 3 and got["timeout"] == 3  # the cluster's CPUs
    spec.write_text(SPEC.format(timeout=120))  # same points (the limit is not part of a point's identity)
    got = _sweep(spec, tmp_path / "r", address, env, "--resume")
    assert got["run"] == 3 and got["ok"] == 3  # the cluster survived the cancelled tasks
    from nnisa.sweep import read_table
    rows = read_table(tmp_path / "r")
    assert [r["status"] for r in rows] == ["ok"] * 3 and {r["executor"] for r in rows} == {"ray"}
    assert all(r["bit_exact"] and r["host"] for r in rows)


@pytest.mark.slow  # ~15 s: a private Ray instance
def test_ray_executor_crash_and_timeout():
    """On Ray, as in the local pool: a dying worker is 'crashed', a point over its limit 'timeout',
    and the other points finish."""
    require("ray", "dist")
    import faults
    from ray import cloudpickle

    from nnisa.sweep.executors import RayExecutor
    from nnisa.sweep.spec import Point
    cloudpickle.register_pickle_by_value(faults)  # Ray's workers do not have tests/sweep on their path

    def point(i, timeout=60.0, **options):
        return Point(target="dais", model=f"m{i}", model_path=None, base_config=None, options=options,
                     timeout_s=timeout).to_dict()

    rows = []
    ex = RayExecutor(2, "local", func=faults.crash_or_echo)
    try:
        ex.run([point(0), point(1, crash=True), point(2, timeout=1.0, sleep=60), point(3)], rows.append)
    finally:
        ex.close()
    by = {r["model"]: r for r in rows}
    assert by["m1"]["status"] == "crashed" and by["m2"]["status"] == "timeout"
    assert by["m0"]["status"] == by["m3"]["status"] == "ok" and {r["executor"] for r in rows} == {"ray"}
