"""Benchmark: the pimsim-nn JSON loader on variants of the conformance program (issue 9).

The numba scanner must stay on its fast path for any valid pimsim-nn JSON, not only for the
exact spelling PIMCOMP-NN writes.  This script derives variants of the conformance program
(3,119,907 instructions), gzips each at the same level as the baseline, and loads each one in
its own process (median of ``--repeat`` loads after a warm-up on a tiny file, so numba's cache
load is not counted; peak RSS = ru_maxrss of that process):

* the conformance program re-compressed (the baseline),
* one ``lldi`` immediate written with 17 significant digits (``0.020408162847161293``) at
  the first, the middle and the last ``lldi``,
* every ``lldi`` immediate (8,462) written that way,
* unknown top-level keys (a 1 MB ``"meta"`` object with escaped and non-ASCII strings and
  long numbers) before ``config``,
* nnisa's own compact export of the program (another size: compared per MB).

``--before SRC`` also times the loader of another source tree (e.g. an export of ``main``)
in the same run.  Rewrites the "PIM JSON loader: dialect variants" section of RESULTS.md.

Usage: python benchmarks/pim_json_variants.py [--repeat 3] [--before DIR/src] [--no-write]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _results import machine, today, update_section  # noqa: E402

CONF = ROOT.parent / "shared" / "conformance" / "pim" / "resnet18_batch_8x8.json.gz"
LONG = b"0.020408162847161293"
LLDI_IMM = b'"imm" : 0.0'
LEVEL = 6

_CHILD = r"""
import json, resource, statistics, sys, time
from nnisa.targets.pim.formats.jsonio import read_json
read_json(b'{"config": {"core_cnt": 1, "array_group_map": {}}, "core0": [{"op": "ld"}]}')  # numba cache
path, repeat = sys.argv[1], int(sys.argv[2])
times = []
for _ in range(repeat):
    t = time.perf_counter()
    prog = read_json(path)
    times.append(time.perf_counter() - t)
    n = len(prog)
    del prog
print(json.dumps({"median": statistics.median(times), "times": times, "n": n,
                  "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))
"""


def _replace_at(data: bytes, token: bytes, new: bytes, which) -> bytes:
    hits, p = [], data.find(token)
    while p >= 0:
        hits.append(p)
        p = data.find(token, p + 1)
    pick = sorted({hits[i] for i in which(len(hits))})
    out, last = bytearray(), 0
    for i in pick:
        out += data[last:i] + new
        last = i + len(token)
    out += data[last:]
    return bytes(out)


def _meta() -> bytes:
    item = {"name": "caf\u00e9 \u4e2d \"quoted\" \\ tab\t", "scale": 0.020408162847161293, "w": [1.5e-300] * 8}
    blob = json.dumps({"generator": "PIMCOMP-NN (modified)", "layers": [item] * 4000}, ensure_ascii=False)
    return blob.encode()


def variants(raw: bytes) -> list[tuple[str, bytes]]:
    from nnisa.targets.pim.formats.jsonio import dump_json, read_json
    out = [("conformance program (baseline)", raw),
           ("17-digit `lldi` imm at the first, middle, last `lldi`",
            _replace_at(raw, LLDI_IMM, b'"imm" : ' + LONG, lambda k: (0, k // 2, k - 1))),
           ("17-digit `lldi` imm in every `lldi` (8,462)",
            _replace_at(raw, LLDI_IMM, b'"imm" : ' + LONG, range)),
           ("unknown top-level keys (1 MB `meta`, non-ASCII, escapes)",
            b'{"meta": ' + _meta() + b', "notes": "\\u00e9",' + raw[raw.index(b"{") + 1:])]
    compact, _ = dump_json(read_json(raw))
    out.append(("nnisa's compact export (other size)", compact))
    return out


def _make_files(tmp: str) -> list[tuple[str, str, float]]:
    """Write the gzipped variants (label, path, plain MB).  Runs in a child process so that this
    one stays small: ru_maxrss survives fork + exec, a big parent would inflate every child's peak."""
    raw = gzip.decompress(CONF.read_bytes())
    out = []
    for i, (label, data) in enumerate(variants(raw)):
        path = os.path.join(tmp, f"v{i}.json.gz")
        Path(path).write_bytes(gzip.compress(data, LEVEL, mtime=0))
        out.append((label, path, len(data) / 1e6))
    return out


def _run(src: Path | None, path: str) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    proc = subprocess.run([sys.executable, "-c", _CHILD, path, "1"], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another source tree (its src/) to time in the same run")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--make-files", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.make_files:
        print(json.dumps(_make_files(args.make_files)))
        return 0
    if not CONF.exists():
        print(f"conformance program not found: {CONF}", file=sys.stderr)
        return 1
    load_avg = os.getloadavg()[0]
    trees = [None] + ([args.before] if args.before else [])
    with tempfile.TemporaryDirectory() as tmp:
        made = subprocess.run([sys.executable, __file__, "--make-files", tmp], capture_output=True, text=True,
                              check=True)
        files = json.loads(made.stdout.strip().splitlines()[-1])
        runs: dict = {}
        for r in range(args.repeat):  # rounds: a load spike hits every variant alike
            for label, path, mb in files:
                for k, src in enumerate(trees):
                    res = _run(src, path)
                    runs.setdefault((label, k), []).append(res)
                    print(f"round {r + 1}: {label:<58} {'before' if k else 'now':>6} {res['median']:6.2f} s "
                          f"{res['rss_gb']:.2f} GB", flush=True)
    rows = []
    for label, _, mb in files:
        med = [(statistics.median(x["median"] for x in runs[(label, k)]), max(x["rss_gb"] for x in runs[(label, k)]))
               for k in range(len(trees))]
        rows.append((label, mb, med))
    base = rows[0][2][0][0] / rows[0][1]
    head = "| variant | MB (plain) | load (s) | s/MB vs baseline | peak RSS (GB) |"
    sep = "| --- | ---: | ---: | ---: | ---: |"
    if args.before:
        head += " before: load (s) | before: peak RSS (GB) |"
        sep += " ---: | ---: |"
    lines = [
        f"{today()} — {machine()}; load average {load_avg:.1f} at the start (2 shared cores: medians).",
        f"`python benchmarks/pim_json_variants.py{' --before …' if args.before else ''}`: each variant gzipped at "
        f"level {LEVEL} and loaded by `read_json` in a fresh process after a warm-up call (numba's cache load "
        f"not counted); median of {args.repeat} rounds (variants interleaved); peak RSS = the process's "
        "ru_maxrss." + (" *before* = main at 3270c05 (`--before`), same files, same rounds." if args.before else ""),
        "Goal (issue 9): every variant within 1.5× the baseline's time per MB.",
        "",
        head,
        sep,
    ]
    worst = 0.0
    for label, mb, med in rows:
        ratio = med[0][0] / mb / base
        worst = max(worst, ratio)
        line = f"| {label} | {mb:.1f} | {med[0][0]:.2f} | {ratio:.2f}× | {med[0][1]:.2f} |"
        if args.before:
            line += f" {med[1][0]:.2f} | {med[1][1]:.2f} |"
        lines.append(line)
    lines += ["", f"Worst time per MB: {worst:.2f}× the baseline's."]
    table = "\n".join(lines)
    print()
    print(table)
    if not args.no_write:
        update_section("PIM JSON loader: dialect variants", table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
