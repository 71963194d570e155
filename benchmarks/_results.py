"""Shared helpers for benchmark scripts: machine description and RESULTS.md sections."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import resource
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


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
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nRecorded by `make bench` (each script rewrites its own section).\n"
    header = f"## {title}"
    section = f"{header}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(section + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


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
