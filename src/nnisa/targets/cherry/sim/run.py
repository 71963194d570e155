"""Running programs on a :class:`Machine` with the cycle model, and the result as nnisa's
``Stats`` and ``Timeline`` (spec ``cherry.md`` §3-§4); the entry point is :mod:`.simulate`."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ....core.errors import FormatError, OptionError, SimError
from ....core.target import MODES, Stats
from ..config import CherryConfig
from ..isa import OP
from ..program import Program
from .element import tile_bytes
from .energy import energy_of
from .machine import Machine
from .timing import UNITS, QueueModel

TIMING_MODEL = "cherrycore superscalar instruction queue (spec cherry.md §4)"


def make_timing(cfg: CherryConfig, record: bool = False) -> QueueModel:
    link = (cfg.link_latency, cfg.link_bytes_per_cycle, tile_bytes(cfg.sz, cfg.element_format)) \
        if cfg.host_link else None
    return QueueModel(sw=cfg.superscalar_width, lat=(cfg.lat_ram, cfg.lat_ls, cfg.lat_ar, cfg.lat_end),
                      iq_entries=cfg.iq_entries, reserve=cfg.iq_reserve, link=link, record=record)


def run_programs(machine: Machine, programs: list[Program], *, mode: str = "both", engine: str = "fast",
                 timing: QueueModel | None = None) -> QueueModel | None:
    """Run programs back to back on ``machine``; returns the cycle model (None in functional mode)."""
    if mode not in MODES:
        raise OptionError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    tm = timing if timing is not None else (make_timing(machine.cfg) if mode != "functional" else None)
    for prog in programs:
        machine.run(prog, timing=tm, functional=mode != "timing", engine=engine)
    return tm


def stats_of(machine: Machine, tm: QueueModel | None, programs: list[Program], wall_s: float,
             extra: dict[str, Any] | None = None) -> Stats:
    """nnisa ``Stats``: cycles, latency, IPC and per-unit utilisation, FLOPs, device traffic and
    (with the cycle model) energy: ``energy_pj`` = dynamic + static, both parts, per input."""
    cfg = machine.cfg
    st = Stats(instructions=int(sum(len(p) for p in programs)), wall_s=wall_s)
    ex: dict[str, Any] = {"timing_model": TIMING_MODEL, "sz": cfg.sz, "element_format": cfg.element_format,
                          "programs": len(programs), "issued_copies": machine.counts["copies"],
                          "instruction_groups": machine.counts["groups"],
                          "loop_instructions": machine.counts["loop_instructions"], "flops": machine.counts["flops"],
                          "dram_tiles_read": machine.counts["dram_tiles_read"],
                          "dram_tiles_written": machine.counts["dram_tiles_written"]}
    if tm is not None and tm.program_cycles:
        cycles = tm.cycles
        st.cycles = cycles
        st.latency_ns = cycles / cfg.clock_ghz
        ex["ipc"] = machine.counts["copies"] / cycles
        for u, name in enumerate(UNITS):
            ex[f"{name}_busy"] = tm.busy[u]
            ex[f"{name}_utilization"] = tm.busy[u] / cycles
        mm = machine.op_copies.get(OP["matmul"], 0)
        ex["matmul_utilization"] = mm / cycles
        ex["stall_cycles"] = tm.stall_cycles
        ex["program_cycles"] = list(tm.program_cycles) if len(tm.program_cycles) <= 64 else None
        ex["gflops"] = machine.counts["flops"] / cycles * cfg.clock_ghz
    if extra:
        ex.update(extra)
    if st.latency_ns is not None:
        e = energy_of(cfg, machine.op_copies, st.latency_ns, int(ex.get("host_bytes", 0)))
        st.energy_pj = e.pop("energy_pj")
        ex.update(e)
    st.extra = {k: v for k, v in ex.items() if v is not None}
    return st


def load_inputs(machine: Machine, inputs: dict[str, np.ndarray] | None) -> None:
    """Raw-program inputs: ``dram`` / ``dram_<base>`` and ``cache`` / ``cache_<base>`` arrays whose
    size is a multiple of SZ² (tiles in row-major order)."""
    sz = machine.cfg.sz
    for key, arr in (inputs or {}).items():
        name, _, base_txt = key.partition("_")
        if name not in ("dram", "cache") or (base_txt and not base_txt.isdigit()):
            raise FormatError(f"input {key!r}: Cherry program inputs are named dram, dram_<tile>, cache or "
                              "cache_<tile>")
        a = np.asarray(arr, dtype=np.float32)
        if a.size % (sz * sz):
            raise FormatError(f"input {key!r}: {a.size} elements is not a whole number of {sz}x{sz} tiles")
        tiles = a.reshape(-1, sz, sz)
        base = int(base_txt or 0)
        if name == "dram":
            machine.write_dram(base, tiles)
        else:
            if base + len(tiles) > machine.cfg.cache_tiles:
                raise SimError(f"input {key!r}: {len(tiles)} tiles at {base} exceed the cache "
                               f"({machine.cfg.cache_tiles} tiles)")
            from .element import quantize
            machine.cache[base:base + len(tiles)] = quantize(tiles, machine.cfg.element_format)[:, None]


def timeline_of(tm: QueueModel, title: str):
    """The recorded pushes as a :class:`~nnisa.report.timeline.Timeline` (one track per unit)."""
    from ....report.timeline import build_timeline
    from ..isa import OP as ops
    names = {v: k for k, v in ops.items()}
    ev = np.array(tm.events, dtype=np.int64).reshape(-1, 5)
    labels = sorted({names[int(o)] for o in ev[:, 4]}) if len(ev) else []
    lab_idx = {n: i for i, n in enumerate(labels)}
    label = np.array([lab_idx[names[int(o)]] for o in ev[:, 4]], np.int32)
    return build_timeline([u.upper() for u in UNITS], ev[:, 0], ev[:, 1], ev[:, 1] + ev[:, 2],
                          unit=ev[:, 0].astype(np.int16), label=label, pc=ev[:, 3],
                          units=tuple(u.upper() for u in UNITS), labels=tuple(labels) or ("busy",),
                          time_unit="cycles", ns_per_unit=None, title=title, process="Cherry device")


def simulate_program(programs: list[Program], cfg: CherryConfig, inputs: dict[str, np.ndarray] | None = None, *,
                     mode: str = "both", engine: str = "fast",
                     timeline: bool = False) -> tuple[dict[str, np.ndarray], Stats, Machine, Any]:
    """Run raw programs (device memory given by ``inputs``); outputs = the device tiles used.
    Returns the outputs, the statistics, the machine and the timeline (``None`` unless asked)."""
    t0 = time.perf_counter()
    machine = Machine(cfg)
    load_inputs(machine, inputs)
    tm = make_timing(cfg, record=timeline) if mode != "functional" else None
    run_programs(machine, programs, mode=mode, engine=engine, timing=tm)
    st = stats_of(machine, tm, programs, time.perf_counter() - t0)
    outs = {} if mode == "timing" else {"dram": machine.read_dram(0, machine.dram_hi)[:, 0]}
    return outs, st, machine, recorded_timeline(tm, timeline, "Cherry program")


def recorded_timeline(tm: QueueModel | None, wanted: bool, title: str):
    """The timeline of a run when one was asked for (it needs the cycle model)."""
    if not wanted:
        return None
    if tm is None:
        raise OptionError("--trace/--gantt need the cycle model (mode timing or both)")
    return timeline_of(tm, title)
