"""The bad-input campaign (issue 8): run every case of ``tests/robustness/cases.py`` through the CLI
and tabulate the outcomes per target and area, plus the sizes of the other robustness suites.

A case passes when ``nnisa`` exits with the expected status and prints exactly one
``nnisa: error:`` line naming the problem, with no traceback.  Writes the "Robustness campaign"
section of RESULTS.md.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "robustness"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import machine, today, update_section  # noqa: E402
from harness import assert_clean_error, catalogue, run_cli  # noqa: E402


def main() -> int:
    t0 = time.perf_counter()
    rows: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    failures = []
    for case in catalogue().values():
        res = run_cli(case.args)
        key = (case.target, case.area)
        rows[key][0] += 1
        try:
            assert_clean_error(res, case.code, case.says)
            rows[key][1] += 1
        except AssertionError as exc:
            failures.append(f"{case.id}: {str(exc)[:200]}")
    wall = time.perf_counter() - t0
    # the other robustness suites: count their tests (collection only)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/robustness"],
                         cwd=ROOT, capture_output=True, text=True).stdout
    per_file: dict[str, int] = defaultdict(int)
    for line in out.splitlines():
        if "::" in line:
            per_file[line.split("::")[0].rsplit("/", 1)[-1]] += 1
    lines = [f"Measured {today()} on {machine()}; `python benchmarks/robustness_campaign.py` "
             f"({wall:.1f} s).", "",
             "Each case: the expected exit status, exactly one `nnisa: error:` line naming the problem, no "
             "traceback (`tests/robustness/cases.py`, run by `tests/robustness/test_cli_cases.py`).", "",
             "| target | area | cases | clean one-line error |", "| --- | --- | ---: | ---: |"]
    total = [0, 0]
    for (target, area), (n, ok) in sorted(rows.items()):
        lines.append(f"| {target} | {area} | {n} | {ok} |")
        total[0] += n
        total[1] += ok
    lines.append(f"| **all** | | **{total[0]}** | **{total[1]}** |")
    lines += ["", "Other robustness suites (tests in `tests/robustness/`):", "",
              "| suite | tests | what it asserts |", "| --- | ---: | --- |"]
    what = {"test_cli_cases.py": "the catalogue above, plus `--json` error objects",
            "test_files.py": "atomic/all-or-nothing outputs, file modes, confined and self-contained bundles, "
                             "4 writers racing on one folder never mix",
            "test_memory.py": "peak RSS of a child process < 1 GB for inputs whose headers claim 4-500 GB, "
                              "decompression bombs, 8 GiB of configured local memory; `--max-memory`",
            "test_signals.py": "SIGTERM/SIGINT during `nnisa run`: exit 130, temporary folder removed",
            "test_fuzz_readers.py": "every registered target x file format: 40 hypothesis cases of random and "
                                    "mutated bytes, only NnisaError",
            "test_hygiene.py": "warnings as one line after success and never before an error, BOM, "
                               "long echoes cut, deadlock as JSON"}
    for f, n in sorted(per_file.items()):
        lines.append(f"| {f} | {n} | {what.get(f, '')} |")
    if failures:
        lines += ["", "Failing cases:", ""] + [f"- {f}" for f in failures]
    body = "\n".join(lines)
    print(body)
    update_section("Robustness campaign", body)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
