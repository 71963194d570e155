"""Sweep scaling: points/hour of a real pim + dais sweep with 1 and 2 local workers and on a local
Ray instance, and what Ray costs per point, in the same run.

Every configuration runs the shipped example spec (``examples/sweeps/pim_dais_small.yaml``, 36
points) into a fresh results folder through :func:`nnisa.sweep.run_sweep` — the job ``nnisa sweep``
does, journal and Parquet table included.  Per configuration: wall time (executor start-up
included), points/hour, the summed in-worker time of the points, and the overhead per point
``(jobs x wall - sum of in-worker time) / points`` (dispatch, worker start and imports, idle tail;
for Ray without its start-up, which is timed on its own).  The load average (``uptime``) before and
after each run is recorded: the machine is shared.

Usage: python benchmarks/sweep_scaling.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import captured, machine, today, update_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the shipped example: 24 pim points (digits CNN, chip size x crossbars x schedule) + 12 dais points
SPEC = ROOT / "examples" / "sweeps" / "pim_dais_small.yaml"


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def run_once(spec: Path, jobs: int, ray: str | None) -> tuple[float, list[dict], str]:
    """One sweep run into a fresh folder: (wall s, rows, load average before)."""
    from nnisa.sweep import read_table, run_sweep
    before = load()
    with tempfile.TemporaryDirectory() as tmp:
        s = run_sweep(spec, Path(tmp) / "res", jobs=jobs, ray=ray, progress=False)
        assert s["ok"] == s["points"], s  # every point really ran
        return s["wall_s"], read_table(Path(tmp) / "res"), before


def summarise(runs: list[tuple[float, list[dict], str]], jobs: int, startup: float = 0.0) -> dict:
    wall = sum(r[0] for r in runs)
    rows = [row for r in runs for row in r[1]]
    n = len(rows)
    inside = sum(r["wall_s"] for r in rows)
    net = wall - startup * len(runs)  # Ray: its start-up, once per sweep run, measured apart
    return {"points": n, "wall": wall, "pph": n / wall * 3600, "inside": inside,
            "overhead": (jobs * net - inside) / n, "load": ", ".join(r[2].split(" / ")[0] for r in runs)}


def ray_startup(jobs: int) -> float:
    from nnisa.sweep.executors import RayExecutor
    t0 = time.perf_counter()
    ex = RayExecutor(jobs, "local")
    ex.close()
    return time.perf_counter() - t0


def executor_overhead(n: int, jobs: int, ray: bool) -> tuple[float, float]:
    """Dispatch cost alone: ``n`` points that do nothing through a started executor, after a warm-up
    batch (workers up).  Returns (points/s, worker-seconds per point = jobs x wall / n)."""
    import _sweep_noop
    from _sweep_noop import noop_point
    if ray:  # Ray's workers do not have benchmarks/ on their path: ship the function by value
        from ray import cloudpickle
        cloudpickle.register_pickle_by_value(_sweep_noop)

    from nnisa.sweep.executors import LocalExecutor, RayExecutor
    from nnisa.sweep.spec import Point
    pts = [Point(target="dais", model=f"m{i}", model_path=None, base_config=None, samples=i).to_dict()
           for i in range(n + jobs)]
    ex = RayExecutor(jobs, "local", func=noop_point) if ray else LocalExecutor(jobs, func=noop_point)
    try:
        got: list[dict] = []
        ex.run(pts[:jobs], got.append)
        t0 = time.perf_counter()
        ex.run(pts[jobs:], got.append)
        wall = time.perf_counter() - t0
    finally:
        ex.close()
    bad = [r for r in got if r["status"] != "ok"]
    assert len(got) == n + jobs and not bad, (len(got), bad[:2])
    return n / wall, jobs * wall / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="each configuration once, Ray start-up timed once")
    args = ap.parse_args()
    from nnisa.sweep.executors import ray_available
    from nnisa.sweep.run import point_list
    repeat = 1 if args.quick else 2
    specs = [SPEC] * repeat
    n_points = len(point_list(SPEC))
    print(f"Machine: {machine()}; date {today()}; `python benchmarks/sweep_scaling.py`: the shipped example "
          f"`examples/sweeps/pim_dais_small.yaml` ({n_points} points: pim on the digits CNN, 3 core counts x 2 "
          "crossbar counts x 2 crossbar sizes x 2 schedules; dais on the digits MLP, 6 bit widths x 2 CSE methods; "
          f"4 test images each), run {repeat}x per configuration through `run_sweep` (journal and Parquet table "
          "included), each run in a fresh results folder. Overhead per point = (workers x wall - summed in-worker "
          "time) / points: dispatch, worker start and imports, idle tail; for Ray without its start-up (timed "
          "apart, below). Configurations are interleaved (each repetition runs all four in turn). Load = `uptime`'s "
          "1-minute load average before each run (2 cores shared with other engineers; a sweep with 2 workers "
          "adds about 2).\n")
    starts = []
    if ray_available():
        starts = [ray_startup(2) for _ in range(1 if args.quick else 3)]
    configs = [("local", 1, None), ("local", 2, None)]
    if ray_available():
        configs += [("Ray (local instance)", 1, "local"), ("Ray (local instance)", 2, "local")]
    runs: dict[tuple[str, int], list] = {(label, jobs): [] for label, jobs, _ in configs}
    for spec in specs:  # configurations interleaved, so a change of load hits all of them alike
        for label, jobs, ray in configs:
            runs[label, jobs].append(run_once(spec, jobs, ray))
            print(f"{label} x{jobs}: {runs[label, jobs][-1][0]:.1f} s", file=sys.stderr, flush=True)
    res = {key: summarise(r, key[1], min(starts) if key[0] != "local" else 0.0) for key, r in runs.items()}
    print("| executor | workers | points | wall (s) | points/hour | in-worker time (s) | overhead per point (s) "
          "| 1-min load before each run |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for (label, jobs), r in res.items():
        print(f"| {label} | {jobs} | {r['points']} | {r['wall']:.1f} | {r['pph']:,.0f} | {r['inside']:.1f} "
              f"| {r['overhead']:.2f} | {r['load']} |")
    print(f"\nSpeed-up with 2 local workers: {res['local', 2]['pph'] / res['local', 1]['pph']:.2f}x (2 cores).")
    per = [res["local", j]["inside"] / res["local", j]["points"] for j in (1, 2)]
    print(f"In-worker time per point: {per[0]:.2f} s with 1 local worker, {per[1]:.2f} s with 2 (x{per[1] / per[0]:.2f}): "
          "with the cores already busy (load above 2 on 2 cores) two points at once run that much slower each, so "
          "a second worker pays only on idle cores or more machines.")
    if starts:
        print(f"Ray start-up (a private local instance: init + shutdown, {len(starts)} runs): "
              f"{min(starts):.1f}-{max(starts):.1f} s, paid once per sweep run (included in the walls above).")
        for jobs in (1, 2):
            ray_r, loc = res["Ray (local instance)", jobs], res["local", jobs]
            print(f"Ray with {jobs} worker(s): {ray_r['pph'] / loc['pph']:.2f}x the local pool's points/hour; "
                  f"Ray overhead per point beyond the local pool's: {ray_r['overhead'] - loc['overhead']:+.2f} s.")
    else:
        print("Ray is not installed (pip install 'nnisa[dist]'): Ray rows not measured.")
    n = 100 if args.quick else 400
    print(f"\nDispatch cost alone ({n} points that do nothing, executor already started and warmed up; "
          f"1-min load {load().split(' / ')[0]} before):\n")
    print("| executor | workers | points/s | worker time per point (ms) |")
    print("|---|---:|---:|---:|")
    for ray in (False, True) if ray_available() else (False,):
        for jobs in (1, 2):
            rate, cost = executor_overhead(n, jobs, ray)
            print(f"| {'Ray (local instance)' if ray else 'local'} | {jobs} | {rate:,.0f} | {cost * 1e3:.2f} |")


if __name__ == "__main__":
    with captured() as out:
        main()
    if "--quick" not in sys.argv:
        update_section("Sweep scaling (benchmarks/sweep_scaling.py)", out.text)
