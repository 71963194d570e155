"""Run every benchmark script in this folder (``make bench``).

Each script times the real job, compares with the reference tool's figure from the spec in the
same run, prints a Markdown table and updates its own section of ``benchmarks/out/RESULTS.md``
(of the tracked ``benchmarks/RESULTS.md`` with ``--update-docs``), with one progress line per script.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_"))
    failed = []
    env = {**os.environ, **({"NNISA_UPDATE_DOCS": "1"} if "--update-docs" in sys.argv else {})}
    t0 = time.perf_counter()
    for i, script in enumerate(scripts, 1):
        print(f"\n=== [{i}/{len(scripts)}] {script.name} ({time.perf_counter() - t0:.0f} s so far)", flush=True)
        proc = subprocess.run([sys.executable, str(script)], cwd=HERE.parent, env=env)
        if proc.returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
