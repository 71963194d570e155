"""Run every benchmark script in this folder (``make bench``).

Each script times the real job, compares with the reference tool's figure from the spec in the
same run, prints a Markdown table and updates its own section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_"))
    failed = []
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        proc = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        if proc.returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
