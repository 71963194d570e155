"""Where the cycles of the two golden replays go (spec §3.10.3-4): the evidence behind the
difference between nnisa's timing model and the official simulator's 30,944 (vadd) and 116,781
(gemv) cycles, recorded in docs/pimsab.md ("Timing model").

For each replay it prints, from one timing run of the numba engine (``--engine reference`` for the
Python reference):

* per DRAM channel: the data flits it must stream (loads and stores of its column's tiles), the
  cycles it streams (a request is ready) and the cycles it has nothing to stream;
* the tile that ends last (the critical path): its loads, then every instruction after its last
  load (the gemv tree round by round and the final store) with start/end cycles;
* the flit bound of that path: the flits its channel streams until the tile's last load ends, plus
  the flits of the transfers it makes after, one flit per cycle.

Usage: ``python benchmarks/pimsab_golden_gap.py [vadd|gemv ...] [--engine fast|reference]``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from nnisa.targets.pimsab.config import preset
from nnisa.targets.pimsab.sim.ops import K_LOAD, K_STORE, MN_NAMES, lower
from nnisa.targets.pimsab.sim.timing import run_timing
from nnisa.targets.pimsab.workloads import vector
from nnisa.targets.pimsab.workloads.paper import GOLDEN


def analyse(name: str, engine: str) -> None:
    cfg = preset("base")
    w = vector.vadd(cfg) if name == "vadd" else vector.gemv(cfg)
    ops = lower(w.program, cfg)
    tr = run_timing(ops, cfg, engine=engine)
    golden = GOLDEN[name][0]
    print(f"## {name}: nnisa {tr.cycles:,} cycles, official simulator {golden:,} ({tr.cycles - golden:+,})")
    op_tile = np.repeat(ops.tiles, np.diff(ops.start))
    chan = op_tile % cfg.mesh_width
    dram = np.isin(ops.kind, (K_LOAD, K_STORE))
    print("channel | flits to stream | streaming cycles | cycles with nothing to stream")
    for c in range(cfg.mesh_width):
        flits = int(ops.flits[dram & (chan == c)].sum())
        busy = int(tr.dram_busy[c])
        print(f"{c:7d} | {flits:15,} | {busy:16,} | {tr.cycles + 1 - busy:,}")
    names = [MN_NAMES[m] for m in ops.mnem]
    last = int(np.argmax(tr.end))
    k = int(np.searchsorted(ops.start, last, side="right") - 1)
    lo, hi = int(ops.start[k]), int(ops.start[k + 1])
    tile, c = int(ops.tiles[k]), int(ops.tiles[k]) % cfg.mesh_width
    loads = [i for i in range(lo, hi) if ops.kind[i] == K_LOAD]
    print(f"critical tile {tile} (channel {c}): {len(loads)} loads from {int(tr.start[lo]):,} to "
          f"{int(tr.end[loads[-1]]):,}; longest wait for one load {max(int(tr.op_state[i, 3]) for i in loads):,} "
          f"cycles; then:")
    for i in range(loads[-1] + 1, hi):
        print(f"  {names[i]:9s} {int(tr.start[i]):7,} .. {int(tr.end[i]):7,}  {int(tr.end[i] - tr.start[i]):5,} cycles"
              + (f"  ({int(ops.flits[i]):,} flits)" if ops.flits[i] else ""))
    on_c = dram & (chan == c)
    before = on_c & (tr.end <= tr.end[loads[-1]])
    idle_before = int(tr.end[loads[-1]]) + 1 - int(ops.flits[before].sum())
    serial = [i for i in range(loads[-1] + 1, hi) if ops.flits[i]]
    bound = int(ops.flits[before].sum()) + int(sum(int(ops.flits[i]) for i in serial))
    print(f"channel {c} idle until tile {tile}'s last load ends: {idle_before:,} cycles")
    print(f"flit bound of the critical path: {int(ops.flits[before].sum()):,} channel flits + "
          f"{bound - int(ops.flits[before].sum()):,} flits of the serial transfers after = {bound:,} cycles; "
          f"nnisa is {tr.cycles - bound:+,} above it, the official simulator {golden - bound:+,}")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", default=["vadd", "gemv"], help="vadd and/or gemv (default both)")
    ap.add_argument("--engine", default="fast", choices=["fast", "reference"])
    args = ap.parse_args()
    for name in args.workloads:
        if name not in ("vadd", "gemv"):
            ap.error(f"unknown workload {name!r} (vadd, gemv)")
        analyse(name, args.engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
