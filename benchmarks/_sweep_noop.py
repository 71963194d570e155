"""A point that does nothing (for measuring what an executor costs per point)."""

import os
import time


def noop_point(point: dict) -> dict:
    """An ok row for ``point`` at once, with the worker's pid and the time spent (none)."""
    t0 = time.perf_counter()
    return {"point_id": point["id"], "status": "ok", "worker_pid": os.getpid(), "wall_s": time.perf_counter() - t0}
