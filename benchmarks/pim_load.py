"""Benchmark (issue 30): ``nnisa sim -t pim`` end to end on reference-size program files.

Each job is the CLI in its own process (``nice -n 10`` unless ``--nice``; wall, CPU = user + system, peak RSS of
that process), on:

* PIMCOMP-NN's ResNet-18 (spec §13 conformance program, 3,119,907 instructions) as shipped
  (``.json.gz``), decompressed (``.json``) and converted to ``.nnpi``;
* a 24-image throughput stream of nnisa's own ResNet-18 (throughput schedule, ``images=24``,
  written as ``.json.gz`` and ``.nnpi``; about 12 M instructions), the program pimsim-nn was timed
  on in issue 30.

``--before SRC`` runs the same jobs with another source tree (e.g. an export of main) in the
same run, rounds alternating between the trees; figures are medians over ``--rounds``.  The
machine's load (1-minute average) is recorded before every job.

The reference: ``--pimsim BIN`` (or ``$PIMSIM_NN``) is a pimsim-nn ``ChipTest`` built on this
machine; it simulates each program's ``.json.gz`` with the same configuration in the same run
(``--pimsim-rounds`` times, in the rounds; its report's latency and energy are recorded beside
the wall time, so the table shows the binary reproduced the conformance report).  Built so::

    git clone https://github.com/wangxy-2000/pimsim-nn && cd pimsim-nn && git checkout 3e3442b
    cmake -B build -DCMAKE_BUILD_TYPE=Release && make -C build -j2 ChipTest

Without it, the figures recorded in issue 30 (13.0 s / 2.25 GB, 145 s / 10.3 GB) are used and
the table says so.  Both ratios are printed when the binary ran.

Usage: python benchmarks/pim_load.py [--rounds 3] [--before DIR/src] [--pimsim BIN] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _results import machine, today, update_section  # noqa: E402

SHARED = ROOT.parent / "shared" / "conformance" / "pim"
PROGRAM = SHARED / "resnet18_batch_8x8.json.gz"
CONFIG = SHARED / "pimsim_config.json"
#: pimsim-nn's figures recorded in issue 30 (wall s, peak GB): used when no binary runs here
PIMSIM = {"resnet18": (13.0, 2.25), "stream24": (145.0, 10.3)}
#: issue 30's goals: speed-up over pimsim-nn per case
GOALS = {"resnet18 .json.gz": 10, "resnet18 .json": 10, "resnet18 .nnpi": 15, "stream24 .json.gz": 10,
         "stream24 .nnpi": 10}


#: the stream's 24 images take ~180 ms of simulated time: its config raises sim_time (100 ms in the shipped one)
STREAM_CONFIG = "pimsim_config_stream.json"
FILES = {"resnet18 .json.gz": PROGRAM.name, "resnet18 .json": "resnet18.json", "resnet18 .nnpi": "resnet18.nnpi",
         "stream24 .json.gz": "stream24.json.gz", "stream24 .nnpi": "stream24.nnpi"}


def make_files(folder: Path) -> None:
    """The program files of every case but the shipped one (converted / compiled with this tree)."""
    import gzip

    import numpy as np

    from nnisa.frontend import load_model, quantize
    from nnisa.frontend.models import make_resnet18
    from nnisa.targets.pim.compiler import compile_program
    from nnisa.targets.pim.config import load_config
    from nnisa.targets.pim.formats.jsonio import read_json, write_json
    from nnisa.targets.pim.formats.program_files import encode
    files = {case: folder / name for case, name in FILES.items()}
    conf = json.loads(CONFIG.read_text())
    conf["sim_config"]["sim_time"] = 1000  # ms
    net = conf["chip_config"]["network_config"]
    net["net_config_file_path"] = str(SHARED / net["net_config_file_path"])
    (folder / STREAM_CONFIG).write_text(json.dumps(conf))
    files["resnet18 .json"].write_bytes(gzip.decompress(PROGRAM.read_bytes()))
    files["resnet18 .nnpi"].write_bytes(encode(read_json(PROGRAM), extended=True))
    cfg = load_config(CONFIG)
    calib = {"input": np.random.default_rng(0).random((2, 3, 224, 224)).astype(np.float32)}
    qg = quantize(load_model(make_resnet18()), calib, scale_mode="pow2")
    stream = compile_program(qg, cfg, images=24, schedule="throughput").program
    stream.image_ends = {}  # as a reference tool reads it: one program, no image marks
    write_json(stream, files["stream24 .json.gz"])
    files["stream24 .nnpi"].write_bytes(encode(stream, extended=True))
    print(f"stream: {len(stream):,} instructions", flush=True)


def run_job(src: Path, program: Path, nice: int = 10) -> dict:
    """``nnisa sim`` on ``program`` with the tree ``src``: wall s, CPU s, peak GB, load."""
    env = dict(os.environ, PYTHONPATH=str(src))
    config = program.parent / STREAM_CONFIG if program.name.startswith("stream") else CONFIG
    cmd = ["nice", "-n", str(nice), sys.executable, "-m", "nnisa.cli", "sim", "-t", "pim", "--config", str(config),
           str(program), "--json"]
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "gb": ru.ru_maxrss / 1e6, "load": load}


def run_pimsim(binary: Path, program: Path) -> dict:
    """pimsim-nn's ``ChipTest`` on ``program`` (a ``.json.gz``) with the case's configuration, in
    the configuration's folder (its NoC table path is relative): wall s, CPU s, peak GB, load,
    and its report's latency (ms) and energy (pJ)."""
    config = program.parent / STREAM_CONFIG if program.name.startswith("stream") else CONFIG
    cmd = [str(binary), str(program), str(config)]
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=config.parent, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    lat, en = re.search(r"latency:\s*([0-9.]+) ms", out), re.search(r"average energy:\s*([0-9.]+) pJ", out)
    if os.waitstatus_to_exitcode(status) != 0 or not lat or not en:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out[-2000:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "gb": ru.ru_maxrss / 1e6, "load": load,
            "latency_ms": float(lat.group(1)), "energy_pj": float(en.group(1))}


def native_status(src: Path) -> str:
    """Whether the tree's PIM kernels run from its ahead-of-time native module (core/native.py)."""
    code = "from nnisa.core import native; print(native.native_status())"
    got = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(src)),
                         capture_output=True, text=True)
    return got.stdout.strip() or "no core/native.py (numba JIT)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another source tree (its src/) timed in the same run")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--make-files", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=("resnet18", "stream24"), help="one program's cases")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the jobs (on a busy machine a niced job's "
                    "wall time is mostly waiting: its CPU time is the comparable figure)")
    ap.add_argument("--pimsim", type=Path, default=os.environ.get("PIMSIM_NN") or None,
                    help="pimsim-nn's ChipTest built here: run in the same run on each program's .json.gz")
    ap.add_argument("--pimsim-rounds", type=int, default=1, help="runs of the reference per program (~50 s "
                    "for ResNet-18, ~10 min and 10 GB for the stream on a 2-core machine)")
    args = ap.parse_args()
    trees = [("now", ROOT / "src")] + ([("before", args.before)] if args.before else [])
    args.native = {label: native_status(src) for label, src in trees}
    if args.make_files:
        make_files(args.make_files)
        return 0
    with tempfile.TemporaryDirectory(prefix="nnisa-pimload-") as tmp:
        # in a child: a forked job's ru_maxrss would start at this process's peak
        subprocess.run([sys.executable, __file__, "--make-files", tmp], check=True)
        files = {case: Path(tmp) / name for case, name in FILES.items()}
        files["resnet18 .json.gz"] = PROGRAM
        if args.only:
            files = {k: v for k, v in files.items() if k.startswith(args.only)}
        for _, src in trees:  # warm-up: numba cache loads (or a cold tree's compiles) not timed
            run_job(src, Path(tmp) / FILES["resnet18 .nnpi"], args.nice)
        res: dict = {}
        for r in range(args.rounds):
            for case, path in files.items():
                for label, src in (trees if r % 2 == 0 else trees[::-1]):
                    got = run_job(src, path, args.nice)
                    res.setdefault((case, label), []).append(got)
                    print(f"round {r + 1} {case:<20} {label:>6}: {got['wall']:6.2f} s wall, {got['cpu']:6.2f} s CPU, "
                          f"{got['gb']:.2f} GB (load {got['load']:.1f})", flush=True)
                if args.pimsim and r < args.pimsim_rounds and case.endswith(".json.gz"):
                    got = run_pimsim(args.pimsim, path)
                    res.setdefault((case.split()[0], "pimsim-nn"), []).append(got)
                    print(f"round {r + 1} {case:<20} pimsim-nn: {got['wall']:6.2f} s wall, {got['cpu']:6.2f} s CPU, "
                          f"{got['gb']:.2f} GB (load {got['load']:.1f}); latency {got['latency_ms']} ms, "
                          f"energy {got['energy_pj']} pJ", flush=True)
    section = render(res, trees, args)
    print(section)
    if not args.no_write:
        update_section("PIM simulation from reference files (issue 30)", section)
    return 0


def render(res: dict, trees, args) -> str:
    med = lambda rows, k: statistics.median(x[k] for x in rows)
    loads = [x["load"] for rows in res.values() for x in rows]
    ref = {prog: rows for (prog, label), rows in res.items() if label == "pimsim-nn"}
    ref_text = ("pimsim-nn: `ChipTest` built here (" + str(args.pimsim) + ") on each program's `.json.gz` in "
                f"the same run ({args.pimsim_rounds} run(s) each; its report: "
                + "; ".join(f"{p} latency {rows[0]['latency_ms']} ms, energy {rows[0]['energy_pj']} pJ"
                            for p, rows in ref.items())
                + "); *recorded* = issue 30's figures (13.0 s / 2.25 GB ResNet-18, 145 s / 10.3 GB stream)."
                if ref else "pimsim-nn is not built here: its figures are issue 30's record (13.0 s / 2.25 GB "
                "ResNet-18, 145 s / 10.3 GB 24-image stream; 2 cores, load ~1).")
    lines = [
        f"Machine: {machine()}; date {today()}; `python benchmarks/pim_load.py"
        f"{' --before …' if args.before else ''}{' --pimsim …' if ref else ''} --rounds {args.rounds} "
        f"--nice {args.nice}`: `nnisa sim -t pim --config pimsim_config.json FILE --json` in its own process under "
        f"`nice -n {args.nice}`, median of {args.rounds} rounds (trees alternated); CPU = user + system; "
        f"peak = ru_maxrss. Load (1-min average) during the jobs: {min(loads):.1f}–{max(loads):.1f}. "
        + ref_text
        + (f" *before* = the tree `{args.before}`." if args.before else "")
        + " Kernels: " + "; ".join(f"{label}: {st}" for label, st in args.native.items()) + ".",
        "",
    ]
    head = "| program | wall | CPU | peak | vs pimsim-nn wall (goal) | CPU-s ratio | peak ratio |"
    rule = "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    if ref:
        head += " vs recorded wall |"
        rule += " ---: |"
    if args.before:
        head += " before: wall | before: CPU | before: peak |"
        rule += " ---: | ---: | ---: |"
    lines += [head, rule]
    for prog, rows in ref.items():
        lines.append(f"| pimsim-nn ({prog} .json.gz) | {med(rows, 'wall'):.2f} s | {med(rows, 'cpu'):.2f} s | "
                     f"{med(rows, 'gb'):.2f} GB | reference | | | |" + (" | | |" if args.before else ""))
    for case in dict.fromkeys(c for c, label in res if label != "pimsim-nn"):
        rows = res[(case, "now")]
        prog = case.split()[0]
        rec_s, rec_gb = PIMSIM[prog]
        ref_s, ref_cpu, ref_gb = ((med(ref[prog], "wall"), med(ref[prog], "cpu"), med(ref[prog], "gb"))
                                  if prog in ref else (rec_s, rec_s, rec_gb))
        w, c, g = med(rows, "wall"), med(rows, "cpu"), med(rows, "gb")
        line = (f"| {case} | {w:.2f} s | {c:.2f} s | {g:.2f} GB | {ref_s / w:.1f}x (≥ {GOALS[case]}x) | "
                f"{ref_cpu / c:.1f}x | 1/{ref_gb / g:.1f} |")
        if ref:
            line += f" {rec_s / w:.1f}x |"
        if args.before:
            b = res[(case, "before")]
            line += f" {med(b, 'wall'):.2f} s | {med(b, 'cpu'):.2f} s | {med(b, 'gb'):.2f} GB |"
        lines.append(line)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
