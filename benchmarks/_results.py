"""Shared helpers for benchmark scripts: machine description and RESULTS.md sections."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import resource
import sys
from pathlib import Path

#: the tracked results table; a benchmark writes it only with ``--update-docs`` (issue 28 item 8)
TRACKED = Path(__file__).resolve().parent / "RESULTS.md"
#: where a benchmark writes otherwise (untracked): benchmarks/out/RESULTS.md, started from the tracked one
OUT_DIR = Path(__file__).resolve().parent / "out"
UPDATE_DOCS = "--update-docs" in sys.argv or os.environ.get("NNISA_UPDATE_DOCS") == "1"
if "--update-docs" in sys.argv:  # consumed here, so each script's own argument parser never sees it
    sys.argv.remove("--update-docs")
RESULTS = TRACKED if UPDATE_DOCS else OUT_DIR / "RESULTS.md"


def docs_path(tracked: Path) -> Path:
    """Where a benchmark writes a tracked file (a doc page, a figure): the file itself with
    ``--update-docs``, else the same name under benchmarks/out/."""
    if UPDATE_DOCS:
        return tracked
    OUT_DIR.mkdir(exist_ok=True)
    return OUT_DIR / tracked.name


def machine() -> str:
    """One line describing this machine (CPU model, cores, memory, Python)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, AttributeError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}"


def today() -> str:
    return _dt.date.today().isoformat()


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def update_section(title: str, body: str) -> None:
    """Replace (or append) the ``## title`` section of RESULTS.md with ``body``."""
    if not RESULTS.exists() and TRACKED.exists():  # benchmarks/out/ starts as a copy of the tracked table
        OUT_DIR.mkdir(exist_ok=True)
        RESULTS.write_text(TRACKED.read_text())
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nRecorded by `make bench` (each script rewrites its own section).\n"
    header = f"## {title}"
    section = f"{header}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(section + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)
    if not UPDATE_DOCS:
        print(f"wrote {RESULTS} (the tracked benchmarks/RESULTS.md changes only with --update-docs)", file=sys.stderr)


class captured:
    """Context manager that echoes stdout and keeps a copy (for scripts that print their tables)."""

    def __enter__(self):
        import io
        import sys
        self._old = sys.stdout
        self._buf = io.StringIO()
        outer = self

        class _Tee:
            def write(self, s):
                outer._old.write(s)
                return outer._buf.write(s)

            def flush(self):
                outer._old.flush()

        sys.stdout = _Tee()
        return self

    def __exit__(self, *exc):
        import sys
        sys.stdout = self._old
        return False

    @property
    def text(self) -> str:
        return self._buf.getvalue()
