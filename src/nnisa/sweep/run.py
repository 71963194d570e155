"""``nnisa sweep``: expand a spec, run its points (locally or on Ray), record every row safely.

>>> from nnisa.sweep import run_sweep
>>> summary = run_sweep("examples/sweeps/pim_dais_small.yaml", "results/", jobs=2)
>>> summary["ok"], summary["table"]
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .executors import make_executor
from .spec import Point, SweepSpec, expand, expand_file, load_spec
from .store import ResultStore

#: statuses a resumed sweep does not run again (a refusal by the target is deterministic)
DONE = ("ok", "error")
#: seconds between rebuilds of results.parquet while a sweep runs
TABLE_EVERY_S = 60.0


@contextmanager
def progress_display(total: int, enabled: bool, description: str) -> Iterator[Callable[[dict[str, Any]], None]]:
    """A rich progress bar with ETA on a terminal; yields ``advance(row)``."""
    if not (enabled and sys.stderr.isatty()):
        yield lambda row: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[failed]}"),
                  TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=False) as prog:
        task = prog.add_task(description, total=total, failed="")
        failed = [0]

        def advance(row: dict[str, Any]) -> None:
            if row.get("status") != "ok":
                failed[0] += 1
            prog.update(task, advance=1, failed=f"[red]{failed[0]} failed[/red]" if failed[0] else "")
        yield advance


def run_sweep(spec: str | Path | SweepSpec, out_dir: str | Path, *, jobs: int | None = None, ray: str | None = None,
              resume: bool = False, progress: bool = True,
              on_row: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run every point of ``spec`` and write ``out_dir/points.jsonl`` and ``out_dir/results.parquet``.

    Parameters
    ----------
    spec
        A spec file (YAML/JSON; relative model and config paths are taken from its folder) or a
        validated :class:`SweepSpec`.
    out_dir
        Results folder; one that already holds results needs ``resume``.
    jobs
        Points run at once (default: the machine's cores, or the Ray cluster's CPUs).
    ray
        ``None`` for the local process pool; ``"local"`` (a private local Ray instance), ``"auto"`` or
        a cluster address for Ray.
    resume
        Skip points already recorded as ``ok`` or ``error``; run the rest (new, timed out, crashed).
    on_row
        Called in the driver with each finished row (after it is recorded).

    Returns
    -------
    dict
        ``points``, ``run``, ``skipped``, counts per status, ``wall_s``, ``points_per_hour``,
        ``executor``, ``jobs``, ``table``.
    """
    if isinstance(spec, SweepSpec):
        sp, points = spec, expand(spec, Path("."))
    else:
        sp, points = load_spec(spec), expand_file(spec)
    t0 = time.perf_counter()
    with ResultStore(out_dir, resume=resume) as store:
        done = {r["point_id"] for r in store.rows() if r.get("status") in DONE}
        todo = [p for p in points if p.id not in done]
        store.save_spec({"spec": sp.model_dump(mode="json"), "points": [p.to_dict() for p in points]})
        counts: dict[str, int] = {}
        last_table = [time.monotonic()]
        ids = [p.id for p in points]

        executor = make_executor(jobs, ray) if todo else None
        try:
            with progress_display(len(todo), progress, f"sweep {sp.name}") as advance:
                def record(row: dict[str, Any]) -> None:
                    row["sweep"] = sp.name
                    store.append(row)
                    counts[row.get("status", "?")] = counts.get(row.get("status", "?"), 0) + 1
                    advance(row)
                    if on_row is not None:
                        on_row(row)
                    if time.monotonic() - last_table[0] > TABLE_EVERY_S:
                        store.write_table(ids)
                        last_table[0] = time.monotonic()
                if executor is not None:
                    executor.run([p.to_dict() for p in todo], record)
        finally:
            try:
                if executor is not None:
                    executor.close()
            finally:  # even when a second Ctrl-C cuts the close short: the table is the promise
                table = store.write_table(ids)
    wall = time.perf_counter() - t0
    ran = sum(counts.values())
    return {"sweep": sp.name, "points": len(points), "run": ran, "skipped": len(points) - len(todo),
            **{s: counts.get(s, 0) for s in ("ok", "error", "exception", "timeout", "crashed")},
            "wall_s": wall, "points_per_hour": ran / wall * 3600 if ran and wall > 0 else None,
            "executor": None if executor is None else executor.name,
            "jobs": None if executor is None else executor.jobs, "out_dir": str(out_dir), "table": str(table)}


def point_list(spec: str | Path) -> list[Point]:
    """The points a spec file expands to (``nnisa sweep --dry-run``)."""
    return expand_file(spec)
