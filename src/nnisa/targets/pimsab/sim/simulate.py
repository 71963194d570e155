"""The PIMSAB ``simulate()`` entry point: values, cycles, energy and the reports of spec §3.9.

``mode`` = ``functional`` (values only), ``timing`` (cycles and energy only) or ``both``.  Values
come from :mod:`.machine` (round-robin over tiles, or in the timing model's event order when both
run and the cycle mode does not need values first); cycles from :mod:`.timing`; energy from
:mod:`.energy`.  Outputs are the DRAM ranges the program stored to (``dram_0x<addr>`` uint8
arrays) plus any ranges asked for with ``dump``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....core.errors import ConfigError, OptionError, SimError
from ....core.fileio import write_atomic
from ....core.target import SimResult, Stats, check_mode
from ..config import PimsabConfig, load_config, preset_for_hash
from ..isa import build_isa
from ..program import PimsabProgram, ZERO_SHA, check_program
from .energy import program_energy
from .machine import Machine, run_functional
from .ops import KIND_NAMES, MN_NAMES, TimingOps, classify, lower
from .timing import STATES, TimingResult, run_timing

__all__ = ["PimsabRun", "check_values", "parse_dump", "simulate"]

ISA = build_isa()
CLASSES = ("compute", "dram", "network")


@dataclass
class PimsabRun:
    """Everything one simulation produced (``SimResult.details``)."""

    config: PimsabConfig
    machine: Machine | None = None
    ops: TimingOps | None = None
    timing: TimingResult | None = None
    energy: dict[str, Any] = field(default_factory=dict)


def parse_dump(spec: str) -> list[tuple[int, int]]:
    """``ADDR:LEN[,ADDR:LEN]`` (integers, hex allowed) → ranges."""
    out = []
    for part in str(spec).split(","):
        a, sep, n = part.partition(":")
        try:
            addr, length = int(a.strip(), 0), int(n.strip(), 0)
        except ValueError:
            raise OptionError(f"option dump: expected ADDR:LEN[,ADDR:LEN], got {spec!r}") from None
        if not sep or addr < 0 or not 0 < length <= 1 << 32:
            raise OptionError(f"option dump: expected ADDR:LEN[,ADDR:LEN], got {spec!r}")
        out.append((addr, length))
    return out


def _inputs_to_dram(m: Machine, inputs: dict[str, np.ndarray] | list[dict[str, np.ndarray]] | None) -> None:
    """``dram_0x<addr>`` (or ``dram_<decimal>``) arrays are written at their address (raw bytes);
    a batched machine takes one such dict per sample (the same names in each)."""
    batch = inputs if isinstance(inputs, list) else [inputs or {}]
    for name in batch[0] if batch else ():
        if not name.startswith("dram_"):
            raise OptionError(f"input {name!r}: PIMSAB inputs are DRAM images named dram_0x<address>")
        try:
            addr = int(name[5:], 0)
        except ValueError:
            raise OptionError(f"input {name!r}: bad address (expected dram_0x<hex address>)") from None
        if m.batch is None:
            m.dram.write(addr, np.ascontiguousarray(batch[0][name]), record=False)
        else:
            try:
                m.dram.write_samples(addr, [sample[name] for sample in batch])
            except (KeyError, ValueError):
                raise OptionError(f"input {name!r}: every sample of a batch needs it, with the same size") from None


def _rf_recorder(prog: PimsabProgram) -> tuple[dict[int, tuple[int, ...]], Any]:
    """A ``step`` wrapper that records the RF constants bitexact mul_const/dot_const read."""
    values: dict[int, tuple[int, ...]] = {}
    mul, dot = ISA.by_mnemonic["mul_const"].opcode, ISA.by_mnemonic["dot_const"].opcode
    cols = ISA._col_index

    def reg(rf: np.ndarray, k: int) -> int:   # the first sample's value in a batched machine
        return int(rf[..., k].reshape(-1)[0])

    def record(m: Machine, tile: int, i: int, row: tuple) -> None:
        if row[0] == mul:
            values[i] = (reg(m.tile(tile).rf, row[cols["rb"]]),)
        elif row[0] == dot:
            rf = m.tile(tile).rf
            values[i] = (reg(rf, row[cols["xrf"]]), reg(rf, row[cols["yrf"]]))
    return values, record


def simulate(prog: PimsabProgram, *, config: Any = None, inputs: dict[str, np.ndarray] | None = None,
             mode: str | None = None, engine: str = "fast", timeline: bool = False, log: str | None = None,
             dump: str | None = None, max_cycles: int = 2_000_000_000, microops: bool = False,
             **_: Any) -> SimResult:
    """Simulate a program; see the module docstring.  ``timeline``: ``SimResult.timeline`` (one
    track per tile stream) of a timed run."""
    return _simulate(prog, config, inputs, None, mode, engine, timeline, log, dump, max_cycles, microops)[0]


def simulate_many(prog: PimsabProgram, *, inputs: list[dict[str, np.ndarray]], config: Any = None,
                  mode: str | None = None, engine: str = "fast", timeline: bool = False, log: str | None = None,
                  dump: str | None = None, max_cycles: int = 2_000_000_000, microops: bool = False,
                  observed: np.ndarray | None = None, **_: Any) -> list[SimResult]:
    """:func:`simulate` for many samples (one ``inputs`` dict each) in one pass: the values of
    every sample come from one batched functional run (:mod:`.batch`), cycles and energy from one
    timing run (they do not depend on the data).  One :class:`SimResult` per sample; they share
    the statistics and details.  Micro-op mode runs the samples one by one.  ``observed`` (bool
    per DRAM byte from address 0): the bytes the caller will read; the batched run then skips the
    work that cannot reach them (:mod:`.liveness`; other bytes are unspecified)."""
    if microops or not inputs:
        return [simulate(prog, config=config, inputs=x, mode=mode, engine=engine, timeline=timeline, log=log,
                         dump=dump, max_cycles=max_cycles, microops=microops) for x in inputs]
    return _simulate(prog, config, list(inputs), len(inputs), mode, engine, timeline, log, dump, max_cycles, False,
                     None if dump else observed)


def _simulate(prog, config, inputs, batch, mode, engine, timeline, log, dump, max_cycles,
              microops, observed=None) -> list[SimResult]:
    t0 = time.perf_counter()
    if config is None and prog.config_sha != ZERO_SHA and (name := preset_for_hash(prog.config_sha)):
        config = name
    cfg = load_config(config)
    mode = check_mode(mode)
    bad = check_program(prog, cfg)
    if bad is not None:
        i, msg = bad
        raise ConfigError(f"instruction {i} (tile {int(prog.tiles[i])}, {prog.mnemonics()[i]}) does not fit the "
                          f"configuration: {msg}")
    warnings = []
    if prog.config_sha not in (ZERO_SHA, cfg.sha256):
        name = preset_for_hash(prog.config_sha)
        warnings.append(f"program was built for {'preset ' + name if name else 'another configuration'}; "
                        f"simulated with {preset_for_hash(cfg.sha256) or 'the given configuration'}")
    run = PimsabRun(cfg)
    tl = None
    functional = mode in ("functional", "both") and cfg.functional
    timing = mode in ("timing", "both")
    rf_values = None
    if microops and not functional:
        raise OptionError("micro-op mode needs values (--mode functional or both, config functional=true)")
    if functional and (not timing or cfg.cycle_mode == "bitexact" or microops or batch is not None):
        rf_values, hook = _rf_recorder(prog) if cfg.cycle_mode == "bitexact" else (None, None)
        if batch is not None and hook is None:   # the compiled interpreter, all samples at once
            from .fastrun import run_batched
            run.machine = run_batched(prog, cfg, inputs, _inputs_to_dram, observed)
        else:
            if microops:
                from .microops import micro_machine
                run.machine = micro_machine(cfg, prog.segments)
            else:
                run.machine = Machine(cfg, prog.segments, batch=batch)
            _inputs_to_dram(run.machine, inputs)
            run_functional(prog, cfg, run.machine, hook=hook)
    stats = Stats(instructions=len(prog))
    extra: dict[str, Any] = {"mode": mode, "config": preset_for_hash(cfg.sha256) or "custom",
                             "cycle_mode": cfg.cycle_mode}
    if timing:
        run.ops = lower(prog, cfg, rf_values)
        run.timing = run_timing(run.ops, cfg, engine=engine, max_cycles=max_cycles)
        if functional and run.machine is None:  # values in the timing model's event order
            run.machine = Machine(cfg, prog.segments)
            _inputs_to_dram(run.machine, inputs)
            run_functional(prog, cfg, run.machine, order=event_order(run.ops, run.timing))
        tr = run.timing
        run.energy = program_energy(prog, run.ops, cfg, int(tr.hops.sum()), tr.cycles)
        stats.cycles = tr.cycles
        stats.latency_ns = tr.cycles / cfg.clock_ghz
        stats.energy_pj = run.energy["dynamic_j"] * 1e12
        extra.update(timing_report(run.ops, tr, cfg))
        extra.update({"timing_model": f"pimsab-{cfg.cycle_mode} (spec 3.2-3.5, 3.4a: the official simulator's "
                                      f"formulas and controller/NoC/DRAM rules, {tr.engine} engine)",
                      "time_ns": tr.cycles / cfg.clock_ghz, "energy_j": run.energy["dynamic_j"],
                      "static_energy_j": run.energy["static_j"],
                      "energy_by_component_j": run.energy["dynamic_by_component_j"],
                      "static_by_component_j": run.energy["static_by_component_j"]})
        if log:
            write_atomic(log, instruction_log(prog, run.ops, tr))
        if timeline:
            from .timeline import to_timeline
            tl = to_timeline(prog, run.ops, tr, cfg)
    per_sample: list[dict[str, np.ndarray]] = [{}] * (batch or 1)
    if run.machine is not None:
        if microops:
            extra["microops"] = run.machine.micro
        samples = [None] if batch is None else range(batch)
        per_sample = []
        stored = run.machine.dram_outputs_all() if batch is not None else None
        for b in samples:
            outputs = run.machine.dram_outputs(b) if stored is None else stored[b]
            dram = run.machine.dram if b is None else run.machine.dram.sample(b)
            for addr, n in parse_dump(dump) if dump else []:
                outputs[f"dram_0x{addr:x}"] = dram.read(addr, n)
            per_sample.append(outputs)
        extra["dram_outputs"] = {k: int(v.size) for k, v in per_sample[0].items()}
        if batch is not None:
            extra["batch"] = batch
    elif dump:
        raise OptionError("option dump needs values (--mode functional or both, config functional=true)")
    if warnings:
        extra["warnings"] = warnings
    stats.wall_s = time.perf_counter() - t0
    stats.extra = extra
    return [SimResult(outputs, stats, run, timeline=tl) for outputs in per_sample]


def event_order(ops: TimingOps, tr: TimingResult) -> list[int]:
    """Instruction indices in simulated-time order: sends/computes/loads at their start, receives
    and waits at their end (ties: tile order)."""
    from .ops import K_RX, K_WAIT
    keep = ops.row >= 0
    when = np.where(np.isin(ops.kind, (K_RX, K_WAIT)), tr.end, tr.start)
    idx = np.flatnonzero(keep)
    order = idx[np.lexsort((idx, when[idx]))]
    # an instruction lowered to several ops (an ablation pair) appears once
    rows = ops.row[order]
    _, first = np.unique(rows, return_index=True)
    return rows[np.sort(first)].tolist()


def timing_report(ops: TimingOps, tr: TimingResult, cfg: PimsabConfig) -> dict[str, Any]:
    """DRAM traffic, per-tile state cycles, the Fig. 18 breakdown, flit hops (spec §3.9)."""
    cls = classify(ops.mnem)
    dur = (tr.end - tr.start).astype(np.int64)
    per_tile_state = {}
    busy = np.zeros((cfg.n_tiles, 3), np.int64)
    for k, t in enumerate(ops.tiles.tolist()):
        lo, hi = int(ops.start[k]), int(ops.start[k + 1])
        per_tile_state[t] = {s: int(v) for s, v in zip(STATES, tr.op_state[lo:hi].sum(axis=0))}
        for c in range(3):
            busy[t, c] = int(dur[lo:hi][cls[lo:hi] == c].sum())
    T = cfg.tiles_used
    avg = busy[:T].sum(axis=0) / T
    idle = tr.cycles - avg.sum()
    breakdown = {name: float(v) for name, v in zip(CLASSES, avg)}
    breakdown["idle"] = float(idle)
    total = max(tr.cycles, 1)
    # per tile (issue 28 item 5): the tiles with a stream, each its own busy/idle split, and their
    # average (the Fig. 18 figure above averages over every tile the workload may use, idle ones too)
    active = sorted(set(ops.tiles.tolist()))
    per_tile = {int(t): {**{name: int(busy[t, c]) for c, name in enumerate(CLASSES)},
                         "idle": int(tr.cycles - busy[t].sum())} for t in active}
    act = busy[active].mean(axis=0) if active else np.zeros(3)
    active_avg = {name: float(v) for name, v in zip(CLASSES, act)}
    active_avg["idle"] = float(tr.cycles - act.sum())
    return {"dram_read_bits": int(ops.dram_rd.sum()), "dram_write_bits": int(ops.dram_wr.sum()),
            "flit_hops": int(tr.hops.sum()), "dram_busy_cycles": [int(x) for x in tr.dram_busy],
            "time_breakdown_cycles": breakdown,
            "time_breakdown_fraction": {k: v / total for k, v in breakdown.items()},
            "time_breakdown_per_tile": per_tile, "time_breakdown_active_tiles": active_avg,
            "state_cycles_total": {s: int(v) for s, v in zip(STATES, tr.op_state.sum(axis=0))},
            "state_cycles_per_tile": per_tile_state,
            "ops": len(ops), "tiles_with_streams": int(len(ops.tiles)),
            "busiest_router_hops": int(tr.hops.max()) if len(tr.hops) else 0}


def instruction_log(prog: PimsabProgram, ops: TimingOps, tr: TimingResult) -> str:
    """CSV: tile, stream index, instruction index, mnemonic, kind, start, end, cycles per state."""
    lines = ["tile,stream_index,instruction,mnemonic,kind,start,end," + ",".join(STATES)]
    for k, t in enumerate(ops.tiles.tolist()):
        lo, hi = int(ops.start[k]), int(ops.start[k + 1])
        for j in range(lo, hi):
            st = ",".join(str(int(x)) for x in tr.op_state[j])
            lines.append(f"{t},{j - lo},{int(ops.row[j])},{MN_NAMES[ops.mnem[j]]},{KIND_NAMES[ops.kind[j]]},"
                         f"{int(tr.start[j])},{int(tr.end[j])},{st}")
    return "\n".join(lines) + "\n"


def check_values(run: PimsabRun, expected: dict[int, bytes]) -> list[str]:
    """Mismatches between the final DRAM and expected bytes (empty when all equal)."""
    if run.machine is None:
        raise SimError("no values were computed (timing-only run)")
    bad = []
    for addr, want in expected.items():
        got = run.machine.dram.read(addr, len(want)).tobytes()
        if got != want:
            first = next(i for i in range(len(want)) if got[i] != want[i])
            bad.append(f"DRAM 0x{addr:x}: first difference at byte {first}")
    return bad
