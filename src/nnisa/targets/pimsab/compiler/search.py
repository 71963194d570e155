"""Exhaustive distribution search (spec §4.3, §4.4, §4.7) and the infeasibility feedback (§4.2).

Tile factors divide the data-parallel loops (product ≤ tiles); array factors divide what remains
of every loop (product ≤ CRAMs per tile, reduction factors powers of two).  Candidates are compared
lexicographically: occupancy, estimated DRAM traffic, estimated cycles, smallest factor vectors.
Tile vectors are visited by decreasing occupancy bound so the search stops early.
"""

from __future__ import annotations

import math

from ..config import PimsabConfig
from .lang import CompileError, Loop
from .model import Candidate, Nest, evaluate, log2_exact
from .residency import residency_variants


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _vectors(loops: list[Loop], extents: dict[Loop, int], bound: int, allowed) -> list[dict[Loop, int]]:
    out: list[dict[Loop, int]] = []

    def rec(i: int, prod: int, cur: dict) -> None:
        if i == len(loops):
            out.append(dict(cur))
            return
        lp = loops[i]
        for d in allowed(lp, extents[lp]):
            if prod * d > bound:
                break
            cur[lp] = d
            rec(i + 1, prod * d, cur)
        cur.pop(lp, None)
    rec(0, 1, {})
    return out


def search(nest: Nest, cfg: PimsabConfig, *, adaptive: bool = True, bit_lifetime: bool = True,
           search_limit: int = 20000, explicit: bool = False) -> tuple[Candidate, dict]:
    """The best feasible candidate and search statistics; :class:`CompileError` when none fits."""
    s = nest.sched
    pin_t, pin_a, pin_s = set(s.pin_tiles), set(s.pin_arrays), set(s.pin_serial)
    for lp in pin_t | pin_a | pin_s:
        if lp not in nest.leaves or lp is nest.bitline:
            raise CompileError(f"pinned loop {lp.name} is not a non-bitline loop of the schedule")
    for lp in pin_a:
        if lp.reduce and log2_exact(lp.extent) is None:
            raise CompileError(f"reduction loop {lp.name} pinned to the CRAMs has extent {lp.extent}: a reduction "
                               "over CRAMs halves a power of two (reduce_tile); pad it to one or split it")
    for lp in pin_t:
        if lp.reduce:
            raise CompileError(f"reduction loop {lp.name} cannot be mapped to tiles (no cross-tile reductions)")
    sum_red = nest.reduce is not None and nest.reduce.kind == "sum"

    def t_allowed(lp, e):
        if lp in pin_t:
            return [e]
        if lp in pin_a or lp in pin_s:
            return [1]
        return divisors(e)

    def a_allowed(lp, e):
        if lp in pin_a:
            return [e]
        if lp in pin_s:
            return [1]
        ds = divisors(e)
        if lp.reduce:
            ds = [d for d in ds if log2_exact(d) is not None] if sum_red else [1]
        return ds

    all_loops = [lp for lp in nest.leaves if lp is not nest.bitline]
    tvecs = _vectors(nest.dp, {lp: lp.extent for lp in nest.dp}, cfg.tiles_used, t_allowed)

    def ub(tv):
        rest = math.prod(max(a_allowed(lp, lp.extent // tv.get(lp, 1))) for lp in all_loops)
        return math.prod(tv.values()) * min(cfg.crams_per_tile, rest)
    tvecs.sort(key=lambda tv: -ub(tv))
    best: Candidate | None = None
    best_key = None
    closest: Candidate | None = None
    evals = fallback = 0
    for tv in tvecs:
        n_t = math.prod(tv.values())
        if best is not None and ub(tv) * nest.bitline.extent < best.occupancy * cfg.tiles_used * \
                cfg.crams_per_tile * cfg.cram_cols - 1e-9:
            break
        rem = {lp: lp.extent // tv.get(lp, 1) for lp in all_loops}
        avecs = _vectors(all_loops, rem, cfg.crams_per_tile, a_allowed)
        avecs.sort(key=lambda av: -math.prod(av.values()))
        for av in avecs:
            occ = n_t * math.prod(av.values()) * nest.bitline.extent
            if best is not None and occ < best.occupancy * cfg.tiles_used * cfg.crams_per_tile * cfg.cram_cols - 1e-9:
                break
            evals += 1
            c = evaluate(nest, cfg, {k: v for k, v in tv.items() if v > 1}, {k: v for k, v in av.items() if v > 1},
                         adaptive=adaptive, bit_lifetime=bit_lifetime, explicit=explicit)
            if max(c.rows, c.real_rows) > cfg.cram_rows:
                if closest is None or (c.occupancy, -c.rows) > (closest.occupancy, -closest.rows):
                    closest = c
                moved = residency_variants(nest, cfg, c.tiles, c.arrays, c, adaptive=adaptive,
                                           bit_lifetime=bit_lifetime, explicit=explicit)  # §4.5 fallback
                fallback += len(moved)
                if not moved:
                    continue
                c = min(moved, key=lambda v: v.key(nest.leaves))
            k = c.key(nest.leaves)
            if best is None or k < best_key:
                best, best_key = c, k
            if evals >= search_limit:
                break
        if evals >= search_limit:
            break
    stats = {"candidates_evaluated": evals, "tile_vectors": len(tvecs), "residency_variants": fallback}
    if best is None:
        name = s.op.name
        if closest is None:
            raise CompileError(f"compute {name}: no distribution satisfies the constraints; "
                               "use a more conservative loop organisation")
        raise CompileError(f"compute {name}: no feasible distribution: the best candidate needs "
                           f"{closest.breakdown()} > {cfg.cram_rows} ({describe(closest)}); use a more conservative "
                           "loop organisation (split or reorder loops so the largest buffer is reused across an "
                           "outer serial loop, or lower declared precisions)")
    return best, stats


def describe(c: Candidate) -> str:
    t = " x ".join(f"{lp.name}={v}" for lp, v in c.tiles.items()) or "1"
    a = " x ".join(f"{lp.name}={v}" for lp, v in c.arrays.items()) or "1"
    return f"tiles {t}, arrays {a}"


__all__ = ["search", "divisors", "describe"]
