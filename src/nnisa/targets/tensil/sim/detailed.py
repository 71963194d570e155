"""The detailed systolic timing model of spec §8.2 ("tensil-detailed", nnisa's own).

Event-driven at instruction granularity with per-vector hazards.  Instructions issue in order
(one per cycle at most, after they are fetched); each waits for its unit(s) and for every vector
it reads (last writer complete) or writes (last writer and last reader complete).  Units: DRAM0,
DRAM1, Array, SIMD, Mover (local↔acc).  A LoadWeights waits ``2N−1`` cycles after the array's
last input; a MatMul vector completes ``2N−1 + acc_write_latency`` after it entered.

The per-instruction loop is a numba kernel (:func:`_schedule`); :func:`run_detailed` wraps it,
derives the breakdowns and draws the Gantt chart / Perfetto trace.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from numba import njit

from ....core.errors import OptionError
from ..isa import DATAMOVE, LOADWEIGHTS, MATMUL, SIMD
from ..program import TensilProgram
from .estimator import instruction_class
from .machine import program_extents

UNITS = ("DRAM0", "DRAM1", "Array", "SIMD", "Mover", "Issue")
STALLS = ("fetch", "in-order", "structural", "hazard", "array drain")


@dataclass(frozen=True)
class Profile:
    """Platform parameters of the detailed model (spec §8.2.3); cycles are TCU cycles."""

    name: str
    clock_mhz: float = 100.0
    dram_bytes_per_cycle: float = 16.0
    fetch_bytes_per_cycle: float = 16.0
    dram_efficiency: float = 1.0  # DRAM0 (vars)
    dram1_efficiency: float = 1.0  # DRAM1 (consts)
    dram_read_latency: float = 32.0
    dram_write_latency: float = 16.0
    mm_interval: float = 1.0
    mm_acc_interval: float = 1.0
    acc_write_latency: float = 1.0
    mover_interval: float = 1.0
    mover_latency: float = 2.0
    simd_interval: float = 1.0
    simd_latency: float = 4.0
    host_overhead_cycles: float = 0.0


#: fitted on the six measured ZCU104 configurations (benchmarks/tensil_calibrate.py, docs/tensil.md)
PROFILES = {
    "zcu104-single": Profile("zcu104-single", dram_bytes_per_cycle=16.0, fetch_bytes_per_cycle=16.0,
                             dram_efficiency=0.99, dram1_efficiency=0.457, dram_read_latency=256.0,
                             mm_acc_interval=1.5, mover_interval=2.0, simd_interval=3.0, simd_latency=5.0),
    "zcu104-dual": Profile("zcu104-dual", dram_bytes_per_cycle=53.3, fetch_bytes_per_cycle=53.3,
                           dram_efficiency=0.859, dram1_efficiency=0.0997, dram_read_latency=256.0,
                           mm_acc_interval=1.5, mover_interval=2.0, simd_interval=3.0, simd_latency=5.0),
    "pynqz1": Profile("pynqz1", clock_mhz=50.0, dram_bytes_per_cycle=8.0, fetch_bytes_per_cycle=8.0),
    "ultra96v2": Profile("ultra96v2", dram_bytes_per_cycle=16.0, fetch_bytes_per_cycle=16.0),
}


@njit(cache=True)
def _span(t_first, step, count, last, base, stride):
    """Earliest start so that vector v (at ``t + v*step``) is after ``last[base + v*2^stride]``."""
    t = t_first
    for v in range(count):
        x = last[base + (v << stride)] - v * step
        if x > t:
            t = x
    return t


@njit(cache=True)
def _mark(t, step, lat, count, base, stride, last_w, last_r, write):
    for v in range(count):
        a = base + (v << stride)
        if write:
            last_w[a] = t + v * step + step + lat
        else:
            done = t + v * step + step
            if done > last_r[a]:
                last_r[a] = done


@njit(cache=True)
def _schedule(hdr, a0, s0, a1, s1, nn, sl, sr, sd, params, N, nbytes, loc_w, loc_r, acc_w, acc_r, d0_w, d0_r, d1_w, d1_r,
              start, end, unit, busy, stall):
    (fetch_bpc, dram_cpv_eff, dram1_cpv_eff, rlat, wlat, mm_i, mm_acc_i, acc_wl, mov_i, mov_l, simd_i, simd_l,
     array_only) = params[0], params[1], params[2], params[3], params[4], params[5], params[6], params[7], \
        params[8], params[9], params[10], params[11], params[12]
    ufree = np.zeros(6)
    prev_start = -1.0
    last_input = -1e18
    reg_ready = np.zeros(17)
    finish = 0.0
    drain = 2 * N - 1
    for i in range(hdr.shape[0]):
        h = hdr[i]
        op = h >> 4
        fl = h & 15
        fetched = (i + 1) * nbytes / fetch_bpc
        base = max(fetched, prev_start + 1.0)
        if fetched > prev_start + 1.0 and i > 0:
            stall[0] += fetched - (prev_start + 1.0)
        t = base
        cause = 1
        u = 5
        occ = 1.0
        step = 1.0
        lat = 0.0
        cnt = 1
        if op == 1:
            u = 2
            cnt = nn[i] + 1
            step = mm_acc_i if fl & 1 else mm_i
            occ = cnt * step
            lat = drain + acc_wl
        elif op == 3:
            u = 2
            cnt = a1[i] + 1
            occ = cnt
            x = last_input + drain
            if x > t:
                t = x
                cause = 4
        elif op == 2:
            cnt = nn[i] + 1
            if fl <= 3:
                u = 0 if fl <= 1 else 1
                step = dram_cpv_eff if fl <= 1 else dram1_cpv_eff
                lat = rlat if (fl & 1) == 0 else wlat
            else:
                u = 4
                step = mov_i
                lat = mov_l
            occ = cnt * step
        elif op == 4:
            u = 3
            occ = simd_i
            lat = simd_l
        if array_only and (op == 2 or op == 4):
            continue
        if ufree[u] > t:
            t = ufree[u]
            cause = 2
        # hazards (per vector)
        th = t
        if op == 1:
            if (fl & 2) == 0:
                th = _span(th, step, cnt, loc_w, a0[i], s0[i])
            th = _span(th, step, cnt, acc_w, a1[i], s1[i])
            th = _span(th, step, cnt, acc_r, a1[i], s1[i])
        elif op == 3:
            if (fl & 1) == 0:
                th = _span(th, step, cnt, loc_w, a0[i], s0[i])
        elif op == 2 and not array_only:
            into_local = fl == 0 or fl == 2 or fl == 12
            if fl <= 1:
                ow, orr = d0_w, d0_r
            elif fl <= 3:
                ow, orr = d1_w, d1_r
            else:
                ow, orr = acc_w, acc_r
            if into_local:
                th = _span(th, step, cnt, ow, a1[i], s1[i])
                th = _span(th, step, cnt, loc_w, a0[i], s0[i])
                th = _span(th, step, cnt, loc_r, a0[i], s0[i])
            else:
                th = _span(th, step, cnt, loc_w, a0[i], s0[i])
                th = _span(th, step, cnt, ow, a1[i], s1[i])
                th = _span(th, step, cnt, orr, a1[i], s1[i])
        elif op == 4 and not array_only:
            if fl & 1:
                th = _span(th, 1.0, 1, acc_w, a1[i], 0)
            if fl & 2:
                th = _span(th, 1.0, 1, acc_w, a0[i], 0)
                th = _span(th, 1.0, 1, acc_r, a0[i], 0)
            if sl[i] != 0 and reg_ready[sl[i]] > th:
                th = reg_ready[sl[i]]
            if sr[i] != 0 and reg_ready[sr[i]] > th:
                th = reg_ready[sr[i]]
        if th > t:
            t = th
            cause = 3
        if t > base:
            stall[cause] += t - base
        # effects
        if op == 1:
            if (fl & 2) == 0:
                _mark(t, step, 0.0, cnt, a0[i], s0[i], loc_w, loc_r, False)
            _mark(t, step, lat, cnt, a1[i], s1[i], acc_w, acc_r, True)
            last_input = t + (cnt - 1) * step
        elif op == 3:
            if (fl & 1) == 0:
                _mark(t, 1.0, 0.0, cnt, a0[i], s0[i], loc_w, loc_r, False)
        elif op == 2:
            into_local = fl == 0 or fl == 2 or fl == 12
            if fl <= 1:
                ow, orr = d0_w, d0_r
            elif fl <= 3:
                ow, orr = d1_w, d1_r
            else:
                ow, orr = acc_w, acc_r
            if into_local:
                _mark(t, step, 0.0, cnt, a1[i], s1[i], ow, orr, False)
                _mark(t, step, lat, cnt, a0[i], s0[i], loc_w, loc_r, True)
            else:
                _mark(t, step, 0.0, cnt, a0[i], s0[i], loc_w, loc_r, False)
                _mark(t, step, lat, cnt, a1[i], s1[i], ow, orr, True)
        elif op == 4:
            if fl & 1:
                _mark(t, 1.0, 0.0, 1, a1[i], 0, acc_w, acc_r, False)
            if fl & 2:
                _mark(t, 1.0, lat - 1.0, 1, a0[i], 0, acc_w, acc_r, True)
            if sd[i] != 0:
                reg_ready[sd[i]] = t + simd_l - 2.0  # the ALU's input and output registers
        ufree[u] = t + occ
        busy[u] += occ
        start[i] = t
        end[i] = t + occ + lat
        unit[i] = u
        if end[i] > finish:
            finish = end[i]
        prev_start = t
    return finish


def run_detailed(prog: TensilProgram, *, profile: str | Profile = "zcu104-single", true_macs: int | None = None,
                 array_only: bool = False, timeline: bool = False,
                 keep_schedule: bool = False, **overrides: Any) -> dict[str, Any]:
    """Cycles, unit busy time, stalls by cause, per-kind breakdown, utilisation and FPS; with
    ``timeline`` also the run as a :class:`~nnisa.report.timeline.Timeline` (key ``timeline``)."""
    prof = PROFILES.get(profile) if isinstance(profile, str) else profile
    if prof is None:
        raise OptionError(f"unknown profile {profile!r} (profiles: {', '.join(PROFILES)})")
    known = {k: v for k, v in overrides.items() if k in Profile.__dataclass_fields__}
    prof = replace(prof, **known) if known else prof
    arch = prog.arch
    N = arch.array_size
    vec_bytes = N * arch.scalar_bytes
    dram_cpv = vec_bytes / prof.dram_bytes_per_cycle / prof.dram_efficiency
    dram1_cpv = vec_bytes / prof.dram_bytes_per_cycle / prof.dram1_efficiency
    params = np.array([prof.fetch_bytes_per_cycle, dram_cpv, dram1_cpv, prof.dram_read_latency, prof.dram_write_latency,
                       prof.mm_interval, prof.mm_acc_interval, prof.acc_write_latency, prof.mover_interval,
                       prof.mover_latency, prof.simd_interval, prof.simd_latency, 1.0 if array_only else 0.0])
    ext = program_extents(prog)
    size = {m: ext.get(m, (0, 0))[0] + 1 for m in ("local", "acc", "dram0", "dram1")}
    arrs = [np.zeros(size[m]) for m in ("local", "local", "acc", "acc", "dram0", "dram0", "dram1", "dram1")]
    r = prog.rows
    n = len(r)
    start, end = np.zeros(n), np.zeros(n)
    unit = np.full(n, 5, np.int16)
    busy, stall = np.zeros(len(UNITS)), np.zeros(len(STALLS))
    finish = _schedule(r["hdr"], r["a0"], r["s0"], r["a1"], r["s1"], r["n"], r["sl"], r["sr"], r["sd"], params, N,
                       prog.layout.instruction_bytes, *arrs, start, end, unit, busy, stall)
    cycles = int(np.ceil(finish))
    kinds: dict[str, dict[str, float]] = {}
    hdr = r["hdr"].astype(np.int64)
    occ = np.where(unit == 5, 0.0, end - start)
    for h in np.unique(hdr).tolist():
        m = hdr == h
        k = kinds.setdefault(instruction_class(h), {"instructions": 0, "span_cycles": 0.0})
        k["instructions"] += int(m.sum())
        k["span_cycles"] += float(occ[m].sum())
    op = hdr >> 4
    dram_vec = int((r["n"][(op == DATAMOVE) & ((hdr & 0xF) <= 3)] + 1).sum())
    out: dict[str, Any] = {
        "cycles": cycles, "profile": prof.name, "clock_mhz": prof.clock_mhz, "array_only": array_only,
        "unit_busy": {u: float(b) for u, b in zip(UNITS, busy) if u != "Issue"},
        "unit_utilization": {u: float(b) / cycles if cycles else 0.0 for u, b in zip(UNITS, busy) if u != "Issue"},
        "stalls": {s: float(v) for s, v in zip(STALLS, stall)},
        "by_kind": kinds, "dram_vectors": dram_vec, "dram_bytes": dram_vec * vec_bytes,
        "fps": prof.clock_mhz * 1e6 / (cycles + prof.host_overhead_cycles) if cycles else None,
        "parameters": asdict(prof),
    }
    if true_macs:
        out["mac_utilization"] = true_macs / (N * N * cycles) if cycles else 0.0
    if keep_schedule:  # per-instruction start/end (not JSON: for tests and tools)
        out["schedule"] = (start, end, unit)
    if timeline:
        out["timeline"] = _timeline(prog, start, end, unit, prof)
    return out


def _timeline(prog, start, end, unit, prof):
    """One track per unit that ran something; labels = instruction classes."""
    from ....report.timeline import build_timeline
    hdr = prog.rows["hdr"].astype(np.int64)
    names = sorted({instruction_class(h) for h in np.unique(hdr).tolist()})
    label = np.array([names.index(instruction_class(h)) for h in hdr.tolist()], np.int32) if len(hdr) else \
        np.zeros(0, np.int32)
    keep = np.flatnonzero(unit < len(UNITS) - 1)
    return build_timeline(UNITS[:-1], unit[keep], start[keep], end[keep], unit=unit[keep].astype(np.int16),
                          label=label[keep], pc=keep, drop_empty=True, units=UNITS[:-1], labels=tuple(names),
                          time_unit="cycles", ns_per_unit=1000.0 / prof.clock_mhz,
                          title=f"Tensil detailed model ({prof.name})", process="Tensil TCU")


__all__ = ["Profile", "PROFILES", "run_detailed", "MATMUL", "LOADWEIGHTS", "SIMD"]
