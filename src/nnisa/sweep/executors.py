"""Where sweep points run: a local process pool (default) or Ray (a local instance or a cluster).

Both executors take points as dicts and call ``on_result(row)`` in the driver for each finished
point, in completion order; a point over its ``timeout_s`` is stopped (its worker killed) and
reported as ``timeout``, a worker that dies is reported as ``crashed``; neither stops the sweep.

The local pool keeps ``jobs`` long-lived worker processes (started by a fork server that has
imported nnisa once), each fed one point at a time over a pipe, so a killed worker is replaced
without disturbing the others.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import tempfile
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterable

from ..core.errors import UnsupportedError
from ..core.fileio import remove_stale_temps
from .worker import failure_row, run_point

Row = dict[str, Any]
OnResult = Callable[[Row], None]
OnStart = Callable[[Row], None]


def _worker_main(conn: Connection, func: Callable[[Row], Row]) -> None:
    """Worker loop: points in, rows out, until the pipe closes.  Ctrl-C is the driver's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            point = conn.recv()
        except (EOFError, OSError):
            return
        if point is None:
            return
        conn.send(func(point))


class _Worker:
    def __init__(self, ctx: Any, func: Callable[[Row], Row]) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, func), daemon=True)
        self.proc.start()
        child.close()
        self.point: Row | None = None
        self.started = 0.0

    def give(self, point: Row) -> None:
        self.point, self.started = point, time.monotonic()
        self.conn.send(point)

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(2)
        if self.proc.is_alive():
            self.kill()
        else:
            self.conn.close()


class LocalExecutor:
    """``jobs`` worker processes on this machine; ``func`` (an importable function) runs each point."""

    name = "local"

    def __init__(self, jobs: int | None = None, func: Callable[[Row], Row] = run_point) -> None:
        self.jobs = max(1, int(jobs or os.cpu_count() or 1))
        self._func = func
        self._ctx = mp.get_context("forkserver")
        self._ctx.set_forkserver_preload(["nnisa.sweep.worker"])
        self._workers: list[_Worker] = []

    def run(self, points: Iterable[Row], on_result: OnResult, on_start: OnStart | None = None) -> None:
        todo = deque(points)
        idle: list[_Worker] = list(self._workers)
        busy: list[_Worker] = []
        while todo or busy:
            while todo and len(busy) < self.jobs:
                w = idle.pop() if idle else self._spawn()
                point = todo.popleft()
                w.give(point)
                busy.append(w)
                if on_start:
                    on_start(point)
            now = time.monotonic()
            wait_s = min(max(0.0, w.started + float(w.point["timeout_s"]) - now) for w in busy)
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=min(wait_s, 1.0))
            for w in list(busy):
                point = w.point
                assert point is not None
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        row = w.conn.recv()
                    except (EOFError, OSError):  # the worker died mid-point (segfault, OOM killer, kill)
                        w.kill()
                        self._workers.remove(w)
                        busy.remove(w)
                        on_result(failure_row(point, "crashed", f"worker process died (exit code {w.proc.exitcode})",
                                              wall_s=time.monotonic() - w.started, executor=self.name))
                        continue
                    row["executor"] = self.name
                    w.point = None
                    busy.remove(w)
                    idle.append(w)
                    on_result(row)
                elif time.monotonic() - w.started > float(point["timeout_s"]):
                    w.kill()
                    self._workers.remove(w)
                    busy.remove(w)
                    on_result(failure_row(point, "timeout", f"no result within {point['timeout_s']:g} s",
                                          wall_s=time.monotonic() - w.started, executor=self.name))

    def _spawn(self) -> _Worker:
        w = _Worker(self._ctx, self._func)
        self._workers.append(w)
        return w

    def close(self) -> None:
        """Stop every worker (a running point is killed) and remove the temporary folders the
        killed ones left (``nnisa-run.PID@HOST...``: their owners are dead now)."""
        killed = False
        for w in self._workers:
            if w.point is not None:
                w.kill()
                killed = True
            else:
                w.stop()
        self._workers.clear()
        if killed:
            remove_stale_temps(tempfile.gettempdir(), "nnisa-*", hidden=False)


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _on_ray_node(func: Callable[[Row], Row], point: Row) -> Row:
    """A Ray task: ``func(point)`` plus ``ray_node``, the id of the Ray node it ran on (hosts of a
    cluster on one machine share a name; the node id tells them apart)."""
    row = func(point)
    try:
        import ray
        row["ray_node"] = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - provenance only
        pass
    return row


class RayExecutor:
    """Ray tasks, one per point (``num_cpus=1``, no retries).

    ``address``: ``None``/``"local"`` starts a private local instance with ``jobs`` CPUs (shut down
    by :meth:`close`); ``"auto"`` joins the cluster this machine belongs to; ``HOST:PORT`` or
    ``ray://HOST:10001`` joins that cluster.  At most ``jobs`` points are in flight (default: the
    cluster's CPUs), so a point's time limit counts from its start.  ``func`` runs each point
    (default :func:`~nnisa.sweep.worker.run_point`).
    """

    name = "ray"

    def __init__(self, jobs: int | None = None, address: str | None = None,
                 func: Callable[[Row], Row] = run_point) -> None:
        try:
            import ray
        except ImportError:
            raise UnsupportedError("--ray needs Ray: pip install 'nnisa[dist]' (or make install)") from None
        import logging
        self._ray = ray
        self._own = address in (None, "", "local")
        kwargs = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                      configure_logging=False)
        try:
            if self._own:
                ray.init(num_cpus=max(1, int(jobs or os.cpu_count() or 1)), **kwargs)
            else:
                ray.init(address=address, **kwargs)
        except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError...
            raise UnsupportedError(f"cannot start or reach Ray at {address or 'a local instance'}: "
                                   f"{str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.jobs = max(1, int(jobs) if jobs else cpus)
        self._func = func
        self._task = ray.remote(num_cpus=1, max_retries=0)(_on_ray_node)

    def run(self, points: Iterable[Row], on_result: OnResult, on_start: OnStart | None = None) -> None:
        ray = self._ray
        todo = deque(points)
        flight: dict[Any, tuple[Row, float]] = {}
        while todo or flight:
            while todo and len(flight) < self.jobs:
                point = todo.popleft()
                flight[self._task.remote(self._func, point)] = (point, time.monotonic())
                if on_start:
                    on_start(point)
            now = time.monotonic()
            wait_s = min(max(0.0, t0 + float(p["timeout_s"]) - now) for p, t0 in flight.values())
            ready, _ = ray.wait(list(flight), num_returns=1, timeout=min(wait_s, 1.0))
            for ref in ready:
                point, t0 = flight.pop(ref)
                on_result(self._get(ref, point, t0))
            now = time.monotonic()
            for ref, (point, t0) in list(flight.items()):
                if now - t0 > float(point["timeout_s"]):
                    ray.cancel(ref, force=True)
                    flight.pop(ref)
                    on_result(failure_row(point, "timeout", f"no result within {point['timeout_s']:g} s",
                                          wall_s=now - t0, executor=self.name))

    def _get(self, ref: Any, point: Row, t0: float) -> Row:
        ex = self._ray.exceptions
        try:
            row = self._ray.get(ref)
        except (ex.WorkerCrashedError, ex.NodeDiedError, ex.ActorDiedError) as exc:
            return failure_row(point, "crashed", f"Ray worker died: {type(exc).__name__}",
                               wall_s=time.monotonic() - t0, executor=self.name)
        except ex.RayError as exc:
            first = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
            return failure_row(point, "exception", first, wall_s=time.monotonic() - t0, executor=self.name)
        row["executor"] = self.name
        return row

    def close(self) -> None:
        """Disconnect; a local instance started here is shut down with all its processes."""
        if self._ray.is_initialized():
            self._ray.shutdown()


def make_executor(jobs: int | None = None, ray: str | None = None) -> LocalExecutor | RayExecutor:
    """The local pool, or Ray when ``ray`` is given (``"local"``, ``"auto"`` or an address)."""
    return LocalExecutor(jobs) if ray is None else RayExecutor(jobs, ray)
