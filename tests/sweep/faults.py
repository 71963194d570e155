"""Point functions that misbehave, for the executor tests (imported by the worker processes)."""

from __future__ import annotations

import os
import time

from nnisa.sweep.worker import failure_row


def crash_or_echo(point: dict) -> dict:
    """Kill the worker for options.crash, sleep for options.sleep, else return an ok row."""
    opts = point.get("options") or {}
    if opts.get("crash"):
        os._exit(7)
    time.sleep(float(opts.get("sleep", 0)))
    row = failure_row(point, "ok", "")
    row.pop("error")
    row["worker_pid"] = os.getpid()
    return row
