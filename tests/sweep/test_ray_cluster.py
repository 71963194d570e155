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
