"""What a sweep worker does with one point (in a local worker process or a Ray task).

:func:`run_point` takes and returns plain JSON-like dicts, so the same function runs under the
local pool and on any Ray node; provenance (nnisa version, git hash, host) is read where the point
runs, which is what matters on a cluster.
"""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from .spec import Point


@functools.lru_cache(maxsize=1)
def provenance() -> dict[str, Any]:
    """nnisa version, git commit of the source tree (``+dirty`` when it has uncommitted changes;
    ``None`` outside a checkout), Python version and host of this process."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        ver = version("nnisa")
    except PackageNotFoundError:
        ver = None
    src = Path(__file__).resolve().parents[1]
    git_hash = None
    try:
        out = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            git_hash = out.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no", "."],
                                   capture_output=True, text=True, timeout=10)
            if dirty.returncode == 0 and dirty.stdout.strip():
                git_hash += "+dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    return {"nnisa_version": ver, "git_hash": git_hash, "python": platform.python_version(),
            "host": socket.gethostname()}


def point_fields(p: Point) -> dict[str, Any]:
    """The identifying fields of a point as they go into its row."""
    return {"point_id": p.id, "target": p.target, "model": p.model, "base_config": p.base_config,
            "overrides": p.overrides, "options": p.options, "samples": p.samples}


def failure_row(point: dict[str, Any], status: str, error: str, *, wall_s: float | None = None,
                executor: str = "") -> dict[str, Any]:
    """The row of a point that produced none itself (timed out, or its worker died)."""
    p = Point.from_dict(point)
    return {**point_fields(p), "status": status, "error": error, "wall_s": wall_s, "executor": executor,
            "finished_at": time.time()}


def _local_model_path(p: Point) -> str | None:
    """The point's ONNX file on this node: the driver's path, or — for a bundled model on a cluster
    node where nnisa is installed elsewhere — the same bundled model of this node's install."""
    if p.model_path is None or Path(p.model_path).is_file():
        return p.model_path
    from ..core.errors import NnisaError
    from ..frontend.models import bundled_model_path
    try:
        return str(bundled_model_path(p.model))
    except NnisaError:
        return p.model_path  # not bundled: measure() reports the missing file in the row


def run_point(point: dict[str, Any]) -> dict[str, Any]:
    """Run one point (a :meth:`Point.to_dict`) and return its row: identity, status, metrics,
    provenance and timestamps.  Never raises for a failure of the point itself."""
    from ..core.errors import NnisaError
    from ..core.target import get_target
    from .measure import measure
    p = Point.from_dict(point)
    started = time.time()
    model_path = _local_model_path(p)
    config: Any = p.base_config
    try:
        if p.overrides:
            config = get_target(p.target).configure(p.base_config, p.overrides)
    except NnisaError as exc:
        row = {"status": "error", "error": str(exc), "wall_s": time.time() - started}
    else:
        row = measure(p.target, p.model, model_path, samples=p.samples, config=config, **p.options)
    row.update(point_fields(p))
    row.update(provenance())
    row.update({"worker_pid": os.getpid(), "started_at": started, "finished_at": time.time()})
    return row
