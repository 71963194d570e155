"""The bad-input campaign (issues 8 and 25): run every case of ``tests/robustness/cases.py`` through
the CLI and tabulate the outcomes per target and area; measure the peak memory of the cases whose
inputs claim (or amplify to) gigabytes; run the scenario suites that check that nothing is
silently corrupted, replaced or left behind (devices, bundles, sweep folders, signals, $TMPDIR,
a multi-node Ray sweep losing a node).

A case passes when ``nnisa`` exits with the expected status and prints exactly one
``nnisa: error:`` line naming the problem, with no traceback, within ``HANG_S`` seconds.  Writes
the "Robustness campaign" section of RESULTS.md; exits 1 when anything failed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "robustness"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import machine, today, update_section  # noqa: E402
from harness import assert_clean_error, catalogue, run_cli  # noqa: E402

#: a case running longer than this counts as a hang
HANG_S = 60.0
#: cases whose input claims or amplifies to far more memory than it holds: peak RSS measured
MEMORY_CASES = {  # case id → what the input claims
    "arrays-header-lies": "npy header: 10^12 x 64 float64 (512 TB)",
    "arrays-npz-bomb": "npz: 300 MB of zeros in a few kB",
    "pim-json-bomb": "gzip JSON: 300 MB of spaces",
    "pim-nnpi-metadata": "NNPI metadata: 10^30 crossbars and cores",
    "dais-text-outputs-count": ".outputs 100,000,000",
    "cherry-huge-image": "3 GiB .cisa (sparse file)",
    "pimsab-huge-garbage": "3 GiB .psab of zeros (sparse file)",
    "pimsab-stream-amplification": "4,000 streams over one 48-byte payload",
    "pimsab-segment-amplification": "20,000 segments over one 4 kB payload",
    "cherry-absurd-cache_tiles": "cache_tiles = 4e9 (64 GB of tiles)",
    "cherry-time-limit": "3 nested 262,142-iteration loops (1.8e16 iterations)",
}
#: pytest files checking that nothing is silently corrupted, replaced or left behind
SCENARIOS = {
    "test_outputs.py": "devices/FIFOs written in place on private mknod nodes, no file beside a device, compile -o "
                       "replaces only nnisa's own bundles and deletes nothing it did not write, stale temporaries",
    "test_sweep_faults.py": "journal never written through a symlink or into a device, report paths confined, a "
                            "stop right after the last point keeps results.parquet, 20k/100k-row reports",
    "test_leftovers.py": "interrupted sweeps leave nothing in TMPDIR (nnisa-run*, pymp-*), no onnxruntime .ses, "
                         "SIGTERM in Verilator/Yosys leaves no cc*.s/yowasp_*, signals in numba kernels exit 130",
    "test_files.py": "atomic/all-or-nothing outputs, modes, confined and self-contained bundles, racing writers",
    "test_signals.py": "SIGTERM/SIGINT during nnisa run: exit 130, temporary folder removed",
    "test_ray_multinode.py": "3-node Ray cluster: points spread, a node killed mid-sweep loses no point, --resume",
}


def run_catalogue() -> tuple[dict, list[str], tuple[str, float]]:
    """Per (target, area): [cases, clean, tracebacks, hangs]; the failures; the slowest case."""
    rows: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    failures = []
    slowest = ("", 0.0)
    for case in catalogue().values():
        t0 = time.perf_counter()
        res = run_cli(case.args)
        wall = time.perf_counter() - t0
        key = (case.target, case.area)
        rows[key][0] += 1
        traceback = res.escaped is not None or "Traceback" in res.err
        hang = wall > HANG_S
        rows[key][2] += traceback
        rows[key][3] += hang
        if wall > slowest[1]:
            slowest = (case.id, wall)
        try:
            assert not hang, f"took {wall:.0f} s"
            assert_clean_error(res, case.code, case.says)
            rows[key][1] += 1
        except AssertionError as exc:
            failures.append(f"{case.id}: {' '.join(str(exc).split())[:200]}")
    return rows, failures, slowest


def measure_memory() -> list[tuple[str, str, int, float, str]]:
    """(case, claim, exit status, peak RSS MB, error line) in a fresh process each."""
    from test_memory import peak_rss_mb
    out = []
    cases = catalogue()
    with tempfile.TemporaryDirectory() as d:
        code, rss, _ = peak_rss_mb(["--version"], Path(d))
        out.append(("(baseline: nnisa --version)", "nothing", code, rss, ""))
        for cid, claim in MEMORY_CASES.items():
            code, rss, err = peak_rss_mb(list(cases[cid].args), Path(d))
            out.append((cid, claim, code, rss, (err.strip().splitlines() or [""])[-1][:110]))
    return out


def run_scenarios() -> list[tuple[str, int, int, int, str]]:
    """(file, passed, failed, skipped, what) for each scenario suite (slow tests included)."""
    out = []
    for f, what in SCENARIOS.items():
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "", "-p", "no:cacheprovider",
                               f"tests/robustness/{f}"], cwd=ROOT, capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep
                                       + os.environ.get("PYTHONPATH", "")))
        last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-200:]
        count = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", last)}
        out.append((f, count.get("passed", 0), count.get("failed", 0) + count.get("error", 0),
                    count.get("skipped", 0), what))
    return out


def main() -> int:
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    rows, failures, slowest = run_catalogue()
    t_cat = time.perf_counter() - t0
    memory = measure_memory()
    scenarios = run_scenarios()
    wall = time.perf_counter() - t0
    mem_bad = [m for m in memory[1:] if m[3] >= 1024 or m[2] not in (2, 4)]
    scen_bad = sum(s[2] for s in scenarios)
    lines = [f"Measured {today()} on {machine()}, load {load:.1f} at the start; "
             f"`python benchmarks/robustness_campaign.py` ({wall:.0f} s: catalogue {t_cat:.0f} s).", "",
             "Each case: the expected exit status, exactly one `nnisa: error:` line naming the problem, no "
             f"traceback, within {HANG_S:.0f} s (`tests/robustness/cases.py` and `cases_surface.py`, run by "
             "`tests/robustness/test_cli_cases.py`).", "",
             "| target | area | cases | clean one-line error | tracebacks | hangs |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    total = [0, 0, 0, 0]
    for (target, area), r in sorted(rows.items()):
        lines.append(f"| {target} | {area} | {r[0]} | {r[1]} | {r[2]} | {r[3]} |")
        total = [a + b for a, b in zip(total, r)]
    lines.append(f"| **all** | | **{total[0]}** | **{total[1]}** | **{total[2]}** | **{total[3]}** |")
    lines += ["", f"Slowest case: `{slowest[0]}` ({slowest[1]:.1f} s).", "",
              "Memory bounded by the input: peak RSS (VmHWM) of a fresh `nnisa` process on inputs that claim "
              "or amplify to far more than they hold:", "",
              "| case | the input claims | exit | peak RSS (MB) |", "| --- | --- | ---: | ---: |"]
    for cid, claim, code, rss, _ in memory:
        lines.append(f"| {cid if cid.startswith('(') else '`' + cid + '`'} | {claim} | {code} | {rss:.0f} |")
    lines += ["", "No silent corruption, nothing replaced, nothing left behind: the scenario suites "
              "(`pytest -m '' tests/robustness/FILE`, slow tests included):", "",
              "| suite | passed | failed | skipped | what it checks |", "| --- | ---: | ---: | ---: | --- |"]
    for f, ok, bad, skipped, what in scenarios:
        lines.append(f"| {f} | {ok} | {bad} | {skipped} | {what} |")
    lines += ["", f"Totals: {total[2]} tracebacks, {total[3]} hangs, {scen_bad} failed corruption/leftover "
              f"scenarios, {len(mem_bad)} memory cases at or over 1 GB."]
    if failures or mem_bad:
        lines += ["", "Failing cases:", ""] + [f"- {f}" for f in failures] + \
                 [f"- memory `{m[0]}`: exit {m[2]}, {m[3]:.0f} MB: {m[4]}" for m in mem_bad]
    body = "\n".join(lines)
    print(body)
    update_section("Robustness campaign", body)
    return 1 if failures or mem_bad or scen_bad else 0


if __name__ == "__main__":
    sys.exit(main())
