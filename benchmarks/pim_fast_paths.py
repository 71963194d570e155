"""A/B of the PIM load and simulate fast paths against their readable references (issue 30),
on PIMCOMP-NN's ResNet-18 (3,119,907 instructions, 44 cores) in one process, alternated:

* NNPI decode: ``ISA.decode_array`` (table-driven, all cores in one call) vs
  ``ISA.decode_array_reference`` core by core (the decoder before);
* lint: ``lint_program`` with the timing model's op columns vs ``lint_program_reference``;
* ``plan_core`` of every core: per-peer message costs vs event by event (``fast=False`` also
  takes the numpy per-instruction path, so only the totals of the fast path are shown).

Prints best and median wall seconds of ``--repeat`` rounds and the machine load.

Usage: python benchmarks/pim_fast_paths.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT.parent / "shared" / "conformance" / "pim"


def _stats(ts: list[float]) -> str:
    return f"best {min(ts):.3f} s, median {sorted(ts)[len(ts) // 2]:.3f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from nnisa.targets.pim.config import load_config
    from nnisa.targets.pim.formats.jsonio import read_json
    from nnisa.targets.pim.formats.nnpi import decode_nnpi, encode_nnpi
    from nnisa.targets.pim.lint import lint_program, lint_program_reference
    from nnisa.targets.pim.sim.timing_units import Params, plan_core

    prog = read_json(CONF / "resnet18_batch_8x8.json.gz")
    prog.extended = True
    blob = encode_nnpi(prog)
    prog = decode_nnpi(blob)
    isa = prog.isa
    words = {c: isa.encode_array(r) for c, r in prog.items()}
    cfg = load_config(CONF / "pimsim_config.json")
    prm = Params.from_config(cfg, False)
    ops = {c: r["op"].astype(np.int64) for c, r in prog.items()}

    def old_decode():
        return {c: isa.decode_array_reference(w, where=lambda i, c=c: f"core {c}, word {i}") for c, w in words.items()}

    cases = {
        "decode_nnpi (whole file)": lambda: decode_nnpi(blob),
        "decode, reference core by core": old_decode,
        "lint_program (shared op columns)": lambda: lint_program(prog, ops),
        "lint_program_reference": lambda: lint_program_reference(prog),
        "plan_core x44 (fast)": lambda: [plan_core(c, prog.cores[c], prm, cfg, prog.array_group_map.get(c, []),
                                                   op=ops[c]) for c in prog.cores],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeat):
        for name, fn in cases.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    print(f"ResNet-18 ({len(prog):,} instructions, {len(prog.cores)} cores), load {os.getloadavg()[0]:.2f}")
    for name, ts in times.items():
        print(f"  {name:<36} {_stats(ts)}")


if __name__ == "__main__":
    main()
