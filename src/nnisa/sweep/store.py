"""A sweep's results folder: an append-only journal that loses nothing, and the columnar table.

``points.jsonl`` gets one JSON line per finished point, written with a single ``write`` on an
``O_APPEND`` descriptor and ``fsync``-ed before the next point is taken, by the driver process
only: a Ctrl-C, a killed driver or a crashed worker loses at most the points that were running.
A torn last line (power loss mid-write) is skipped on reading.  ``results.parquet`` is rebuilt
from the journal (atomically) after every batch of points and at the end: one row per point with
the configuration, the metrics and the provenance.  ``spec.json`` keeps the expanded spec;
``.lock`` stops two sweeps from writing the same folder.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path
from typing import Any, Iterable

import orjson

from ..core.errors import FormatError, OutputError
from ..core.fileio import check_regular_file, write_atomic
from ..core.interrupts import deferred_interrupts
from ..core.jsonsafe import to_jsonable

JOURNAL = "points.jsonl"
TABLE = "results.parquet"
SPEC = "spec.json"
LOCK = ".lock"

#: columns that come first in the table, in this order
LEAD_COLUMNS = ("point_id", "sweep", "target", "model", "status", "error")


def _need_pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise OutputError("sweep results are Parquet tables: install pyarrow (pip install 'nnisa[sweep]')") from None
    return pa, pq


def read_journal(path: str | Path) -> list[dict[str, Any]]:
    """Every complete row of a journal, in order (a torn or garbled line is skipped).  A journal
    that is not a regular file (a device, a FIFO) is refused: it could be endless."""
    p = Path(path)
    if not os.path.lexists(p):
        return []
    check_regular_file(p, OutputError)
    rows = []
    with open(p, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break  # torn tail: the point was not recorded
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict) and all(isinstance(row.get(k), str) for k in ("point_id", "target", "status")):
                rows.append(row)  # a row this journal's writer could not have written is skipped like a torn line
    return rows


def latest(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """point id → its last recorded row (a re-run after a failure replaces the failure)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        out[r["point_id"]] = r
    return out


class ResultStore:
    """The results folder of one sweep run (locked while open).

    Parameters
    ----------
    out_dir
        The folder (created if missing).
    resume
        Continue the journal already there; without it a folder holding a journal is refused, so
        earlier results are never mixed or overwritten by accident.
    """

    def __init__(self, out_dir: str | Path, *, resume: bool = False) -> None:
        self.dir = Path(out_dir)
        if self.dir.exists() and not self.dir.is_dir():
            raise OutputError("not a folder", file=str(self.dir))
        self.journal = self.dir / JOURNAL
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = self._lock()
        except OSError as exc:
            raise OutputError(f"cannot write a results folder here: {exc.strerror or exc}", file=str(self.dir)) \
                from None
        try:
            self._fd = self._open_in_folder(JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            if os.fstat(self._fd).st_size and not resume:
                raise OutputError("the folder already holds sweep results; pass --resume to continue that sweep, "
                                  "or choose another folder", file=str(self.dir))
            self._terminate_torn_line()
        except OSError as exc:
            self.close()
            raise OutputError(f"cannot write the journal: {exc.strerror or exc}", file=str(self.journal)) from None
        except BaseException:
            self.close()
            raise

    def _open_in_folder(self, name: str, flags: int) -> int:
        """A descriptor of the regular file ``name`` in the folder: a symlink (which could lead
        outside the folder) or a device/FIFO there is refused, never written through."""
        path = self.dir / name
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OutputError("is a symbolic link; the results folder's own files are not written through "
                                  "links", file=str(path)) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OutputError("is not a regular file (a device, FIFO or socket); refusing to use it", file=str(path))
        os.set_blocking(fd, True)
        return fd

    def _lock(self) -> int:
        import fcntl
        fd = self._open_in_folder(LOCK, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputError("another nnisa sweep is writing to this folder", file=str(self.dir)) from None
        return fd

    def _terminate_torn_line(self) -> None:
        size = self.journal.stat().st_size
        if size:
            with open(self.journal, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    os.write(self._fd, b"\n")  # the torn line stays unparsable; the next row starts clean

    def rows(self) -> list[dict[str, Any]]:
        return read_journal(self.journal)

    def append(self, row: dict[str, Any]) -> None:
        """Record one finished point durably (one write, then fsync)."""
        line = orjson.dumps(to_jsonable(row), option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
        os.write(self._fd, line)
        os.fsync(self._fd)

    def save_spec(self, spec: dict[str, Any]) -> None:
        write_atomic(self.dir / SPEC, orjson.dumps(to_jsonable(spec), option=orjson.OPT_INDENT_2))

    def write_table(self, point_ids: list[str] | None = None) -> Path:
        """Rebuild ``results.parquet`` from the journal (only ``point_ids`` when given, in that order).

        Ctrl-C and SIGTERM wait until the table is written (a stop right after the last point
        still leaves the table), then take effect."""
        with deferred_interrupts():
            rows = latest(self.rows())
            order = point_ids if point_ids is not None else list(rows)
            return write_table([rows[i] for i in order if i in rows], self.dir / TABLE)

    def close(self) -> None:
        for name in ("_fd", "_lock_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, None)

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _json_text(v: Any) -> str | None:
    return None if v is None else orjson.dumps(to_jsonable(v), option=orjson.OPT_SORT_KEYS).decode()


#: columns that are numbers even when no row has a value (Parquet needs one type per column)
_FLOAT_COLUMNS = ("top1_agreement", "max_abs_error", "latency_ns", "period_ns", "energy_pj", "energy_dynamic_pj",
                  "energy_static_pj", "energy_per_input_pj", "area_proxy",
                  "compile_s", "sim_s", "wall_s", "started_at", "finished_at")


def _typed(values: list[Any], name: str = ""):
    """A column of one Arrow type: bool, int64, float64 or string (JSON text for anything else)."""
    pa, _ = _need_pyarrow()
    present = [v for v in values if v is not None]
    if not present and name in _FLOAT_COLUMNS:
        return pa.array(values, pa.float64())
    if present and all(isinstance(v, bool) for v in present):
        return pa.array(values, pa.bool_())
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present) \
            and all(-(1 << 63) <= v < 1 << 63 for v in present):
        return pa.array(values, pa.int64())
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array([v if v is None or isinstance(v, str) else _json_text(v) for v in values], pa.string())


def flatten_row(row: dict[str, Any]) -> dict[str, Any]:
    """A journal row → table columns: ``cfg.<key>``/``opt.<key>`` per swept setting, the whole
    configuration and options as JSON text, ``extra`` (target-specific figures) as JSON text."""
    out = {k: v for k, v in row.items() if k not in ("overrides", "options", "extra", "base_config")}
    overrides = row.get("overrides") if isinstance(row.get("overrides"), dict) else {}
    options = row.get("options") if isinstance(row.get("options"), dict) else {}
    for k, v in overrides.items():
        out[f"cfg.{k}"] = v
    for k, v in options.items():
        out[f"opt.{k}"] = v
    out["config"] = _json_text(overrides)
    out["options"] = _json_text(options)
    out["base_config"] = row.get("base_config") if isinstance(row.get("base_config"), (str, type(None))) \
        else _json_text(row.get("base_config"))
    out["extra"] = _json_text(row.get("extra") or {})
    return out


def write_table(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Rows → a Parquet file (atomically), columns in a stable order."""
    pa, pq = _need_pyarrow()
    flat = [flatten_row(r) for r in rows]
    cols: list[str] = list(LEAD_COLUMNS)
    for r in flat:
        for k in r:
            if k not in cols:
                cols.append(k)
    table = pa.table({c: _typed([r.get(c) for r in flat], c) for c in cols})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    write_atomic(path, buf.getvalue())
    return Path(path)


def read_table(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a results table (``results.parquet``, or a results folder) as dicts."""
    p = Path(path)
    if p.is_dir():
        if (p / TABLE).is_file():
            p = p / TABLE
        elif (p / JOURNAL).is_file():  # a sweep stopped before its first table: read the journal
            rows = latest(read_journal(p / JOURNAL)).values()
            if not rows:
                raise FormatError(f"no finished point recorded in {JOURNAL} (yet)", file=str(p))
            return [flatten_row(r) for r in rows]
        else:
            raise FormatError(f"no {TABLE} or {JOURNAL} here: not a sweep results folder", file=str(p))
    _, pq = _need_pyarrow()
    from ..core.fileio import check_regular_file
    check_regular_file(p)
    try:
        return pq.read_table(p).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
        why = " ".join(str(exc).split())
        raise FormatError(f"not a Parquet results table ({why[:117] + '...' if len(why) > 120 else why})",
                          file=str(p)) from None
