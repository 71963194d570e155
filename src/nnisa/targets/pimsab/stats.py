"""Static statistics of a PIMSAB program: instruction mix, streams, precisions, declared traffic."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .config import PimsabConfig
from .isa import CATEGORY, build_isa
from .program import PimsabProgram
from . import precision as P

ISA = build_isa()


def program_stats(prog: PimsabProgram, cfg: PimsabConfig) -> dict[str, Any]:
    """Instruction mix, per-tile stream lengths, precisions used, field ranges and the DRAM/network
    traffic the transfers declare (before any ablation rewrite)."""
    rows = prog.rows
    mn = prog.mnemonics()
    mix = Counter(mn)
    cats = Counter(CATEGORY[m] for m in mn)
    per_tile = Counter(prog.tiles.tolist())
    precs: Counter = Counter()
    ranges: dict[str, dict[str, list[int]]] = {}
    for spec in ISA.instrs:
        sel = rows["op"] == spec.opcode
        if not sel.any():
            continue
        sub = rows[sel]
        for f in spec.format.fields:
            if f.name in ("pd", "pa", "pb", "p", "px", "py", "pin"):
                precs.update(P.token(int(b)) for b in np.unique(sub[f.name]))
            else:
                ranges.setdefault(spec.mnemonic, {})[f.name] = [int(sub[f.name].min()), int(sub[f.name].max())]
    W = cfg.tile_bitlines
    dram_rd = dram_wr = net = 0
    for r, m in zip(rows.tolist(), mn):
        row = dict(zip(ISA.columns, r))
        n = row["size"] or W
        if m in ("load", "load_shf", "store"):
            bits = P.decode(row["p"]).dram_bits * n
            if m == "store":
                dram_wr += bits
            else:
                dram_rd += bits
        elif m in ("load_rf", "store_rf"):
            bits = 32 * cfg.rf_bits if row["size"] == 0 else row["size"] * P.decode(row["p"]).dram_bits
            if m == "store_rf":
                dram_wr += bits
            else:
                dram_rd += bits
        elif m == "tile_tx":
            net += P.decode(row["p"]).bits * n
    return {
        "instructions": len(prog), "tiles_with_streams": len(per_tile),
        "longest_stream": max(per_tile.values(), default=0),
        "dram_segments": len(prog.segments), "dram_image_bytes": sum(len(d) for _, d in prog.segments),
        "declared_dram_read_bits": dram_rd, "declared_dram_write_bits": dram_wr, "declared_tile_tx_bits": net,
        "config": prog.config_name or "", "by_category": dict(cats.most_common()),
        "by_mnemonic": dict(mix.most_common()), "precisions": dict(precs.most_common()),
        "field_ranges": ranges,
    }
