"""Timing and energy simulation of PIM programs (spec §8, §9).

:func:`simulate_timing` runs the pimsim-nn-compatible model (``mode="pimsim"``, §8.5–8.7,
defects included) or nnisa's native model (``mode="native"``, §8.11) on a
:class:`~nnisa.targets.pim.program.PimProgram` and returns a :class:`TimingResult`.

Implementation: per-core latencies of purely local instructions are precomputed with numpy
(:mod:`.timing_units`), a small discrete-event loop handles ld/st/send/recv/sync/wait
(:mod:`.timing_engine`), energies follow §9 (:mod:`.energy`).  rob_size > 1 (§8.8) is handled
by :mod:`.timing_rob`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

import numpy as np

from ....core.errors import ConfigError, DeadlockError, SimError, SimTimeExceeded
from ....core.parallel import map_in_threads, worth_threads
from ..config import PimConfig, default_config, load_config
from .energy import COMPONENTS, frontend_energy, per_instruction_dynamic, static_power_mw
from ..program import PimProgram
from .timing_engine import DONE, HUNG, EngineResult, run_events
from .timing_units import (EV_LD, EV_RECV, EV_SEND, EV_SLD, EV_ST, EV_SYNC, OP_NOP, OP_SETBW, PS,
                           SCALAR_OPS, CorePlan, Params, cdiv, peers_in_order, plan_core)
from .trace import TRACE_DTYPE, instruction_times

__all__ = ["TimingResult", "simulate_timing", "resolve_config"]


@dataclass
class TimingResult:
    """Result of :func:`simulate_timing`.  Times are integer ps (``*_ps``) with ns/ms helpers.

    Attributes
    ----------
    mode, sim_mode
        ``"pimsim"`` / ``"native"``; 1 = latency, 0 = throughput.
    core_period_ps
        Core clock period.
    latency_ps
        Chip latency (max recorded finish); the running time (sim_time) in throughput mode.
    finish_ps
        core → finish time (R of the last instruction); 0 where pimsim-nn records none.
    finish_recorded
        core → whether pimsim-nn would record a finish (False: last instruction scalar/setbw,
        hung at nop, deadlocked, or not finished by sim_time).
    instructions
        core → instruction count.
    busy_ps
        core → {"matrix", "vector", "transfer", "local_memory", "scalar"} busy time.
    gm_busy_ps, gm_utilisation
        Global-memory service time and its share of the running time.
    noc_bytes, noc_flits
        (src, dst) → payload bytes / flits (node -10 = global memory).
    energy_pj
        component → pJ (:data:`~nnisa.targets.pim.sim.energy.COMPONENTS`); ``total_energy_pj``,
        ``dynamic_energy_pj``, ``average_power_mw`` summarise it.
    core_energy_pj
        core → dynamic energy of that core's instructions.
    chip_core_count
        ``chip_config.core_cnt`` (printed as "core count").
    rounds
        core → completed rounds (throughput mode; 1 per finished core in latency mode).
    trace
        core → structured array (pc, op, S, E, R) when requested.
    layers
        Per-layer figures of a compiled one-image program in latency mode (:mod:`.layer_figures`).
    incomplete_report
        §5.6 report of cores that did not finish (only with ``on_incomplete="report"``).
    warnings
        Non-fatal findings.
    """

    mode: str
    sim_mode: int
    core_period_ps: int
    latency_ps: int
    finish_ps: dict[int, int]
    finish_recorded: dict[int, bool]
    instructions: dict[int, int]
    busy_ps: dict[int, dict[str, int]]
    gm_busy_ps: int
    noc_bytes: dict[tuple[int, int], int]
    noc_flits: dict[tuple[int, int], int]
    energy_pj: dict[str, float]
    core_energy_pj: dict[int, float]
    static_power_mw: float
    rounds: dict[int, int]
    sim_time_ps: int
    chip_core_count: int = 0
    trace: dict[int, np.ndarray] | None = None
    image_done_ps: list[int] | None = None
    pipeline_depth: int = 1
    incomplete_report: str | None = None
    warnings: list[str] = field(default_factory=list)
    layers: list[dict] | None = None

    @property
    def latency_ns(self) -> float:
        return self.latency_ps / PS

    @property
    def latency_ms(self) -> float:
        return self.latency_ps / 1e9

    @property
    def cycles(self) -> float:
        """Latency in core cycles."""
        return self.latency_ps / self.core_period_ps

    @property
    def finish_ns(self) -> dict[int, float]:
        return {c: v / PS for c, v in self.finish_ps.items()}

    @property
    def total_energy_pj(self) -> float:
        return float(sum(self.energy_pj.values()))

    @property
    def dynamic_energy_pj(self) -> float:
        return self.total_energy_pj - self.energy_pj.get("static", 0.0)

    @property
    def running_time_ps(self) -> int:
        """Time the static power is charged for: chip latency or sim_time (§9)."""
        return self.latency_ps if self.sim_mode == 1 else self.sim_time_ps

    @property
    def average_power_mw(self) -> float:
        t = self.running_time_ps
        return self.total_energy_pj / (t / PS) if t else 0.0

    @property
    def gm_utilisation(self) -> float:
        t = self.running_time_ps
        return self.gm_busy_ps / t if t else 0.0

    # throughput-mode figures (§8.9)
    @property
    def output_count(self) -> float:
        """Mean rounds over the instantiated cores."""
        return float(np.mean(list(self.rounds.values()))) if self.rounds else 0.0

    @property
    def throughput_sps(self) -> float:
        """Samples per second = output count / sim_time."""
        return self.output_count / (self.sim_time_ps / 1e12) if self.sim_time_ps else 0.0

    @property
    def slowest_rounds(self) -> int:
        """Rounds of the slowest core that has instructions (nnisa's addition)."""
        vals = [r for c, r in self.rounds.items() if self.instructions.get(c)]
        return min(vals) if vals else 0

    @property
    def images(self) -> int:
        """Images of the simulated stream (1 for a plain program)."""
        return len(self.image_done_ps) if self.image_done_ps else 1

    @property
    def stream_latency_ps(self) -> int:
        """Latency of the first image (in → out); the chip latency for a plain program."""
        from .stream import stream_figures
        lat, _ = stream_figures(self.image_done_ps, self.pipeline_depth)
        return self.latency_ps if lat is None else lat

    @property
    def period_ps(self) -> float | None:
        """Steady-state time per image of a stream (``None``: one image, or throughput mode)."""
        from .stream import stream_figures
        return stream_figures(self.image_done_ps, self.pipeline_depth)[1]

    @property
    def slowest_rate_sps(self) -> float:
        return self.slowest_rounds / (self.sim_time_ps / 1e12) if self.sim_time_ps else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``--json``)."""
        from .timing_report import result_to_dict
        return result_to_dict(self)


def resolve_config(config: PimConfig | str | os.PathLike | None, program: PimProgram) -> PimConfig:
    """A :class:`PimConfig` from a config object, a file path or ``None`` (defaults)."""
    if config is None:
        return default_config(program.core_count or 1, preset="conformance")
    if isinstance(config, PimConfig):
        return config
    return load_config(config)


def _ns(t_ps: int) -> str:
    """ps → ns text: an integer when exact, else with 3 decimals."""
    return str(t_ps // PS) if t_ps % PS == 0 else f"{t_ps / PS:.3f}"


def _row_text(program: PimProgram, c: int, pc: int) -> str:
    from ....core.asm import format_row  # the assembler: loaded for a message only
    try:
        return format_row(program.isa, tuple(program.cores[c][pc].tolist()))
    except Exception:  # disassembly is best-effort in a report
        return f"<op {int(program.cores[c][pc]['op'])}>"


def _incomplete_report(program, plans, eng: EngineResult, unfinished, title: str) -> str:
    """The §5.6 report: one line per unfinished core and any wait-for cycle."""
    lines = []
    waits_on: dict[int, int] = {}
    rows = []
    for c in unfinished:
        p = plans[c]
        st = eng.state[c]
        info = eng.blocked_info.get(c)
        if st == HUNG:
            pc = p.hang
            why = "nothing: pimsim-nn never retires nop (the core hangs)"
        else:
            pc = int(p.ev_idx[eng.pos[c]]) if eng.pos[c] < len(p.ev_idx) else p.n - 1
            why = "?"
            if info and info[0] in ("send", "recv"):
                other = info[1]
                waits_on[c] = other
                if other not in plans:
                    ost = f"core {other} does not exist"
                elif eng.state[other] == DONE:
                    ost = f"core {other} finished"
                elif eng.state[other] == HUNG:
                    ost = f"core {other} hangs at pc {plans[other].hang}"
                else:
                    opc = plans[other].ev_idx[eng.pos[other]] if eng.pos[other] < len(plans[other].ev_idx) else "?"
                    ost = f"core {other} is blocked at pc {opc}"
                if info[0] == "send":
                    why = f"recv on core {other} from core {c} ({ost})"
                else:
                    why = f"send from core {other} ({ost})"
            elif info and info[0] == "wait":
                _, e, v, cur = info
                why = f"ev{e} == {v} (current {cur}"
                why += ": already passed, can never match)" if cur > v else ")"
            elif info and info[0] == "limit":
                why = "sim_time reached"
        rows.append((c, pc, _row_text(program, c, pc), why))
    w_text = max((len(r[2]) for r in rows), default=0)
    w_core = max((len(str(r[0])) for r in rows), default=1)
    w_pc = max((len(str(r[1])) for r in rows), default=1)
    lines.append(title)
    for c, pc, text, why in rows:
        lines.append(f"  core {c:<{w_core}}  pc {pc:<{w_pc}}  {text:<{w_text}}  waits for: {why}")
    # wait-for cycles
    seen_cycles = set()
    for start in waits_on:
        path, cur = [], start
        while cur in waits_on and cur not in path:
            path.append(cur)
            cur = waits_on[cur]
        if cur in path:
            cyc = path[path.index(cur):]
            k = min(range(len(cyc)), key=lambda i: cyc[i])
            cyc = tuple(cyc[k:] + cyc[:k])
            if cyc not in seen_cycles:
                seen_cycles.add(cyc)
                lines.append("  wait-for cycle: " + " -> ".join(map(str, cyc + (cyc[0],))))
    return "\n".join(lines)


def simulate_timing(program: PimProgram, config: PimConfig | str | os.PathLike | None = None,
                    mode: Literal["pimsim", "native"] = "pimsim", sim_mode: int | None = None, *,
                    trace: bool = False,
                    on_incomplete: Literal["raise", "report"] = "raise", repeat: int = 1,
                    engine: Literal["fast", "reference"] = "fast",
                    opcodes: Mapping[int, np.ndarray] | None = None) -> TimingResult:
    """Simulate the timing and energy of a program.

    Parameters
    ----------
    program
        The program (timing never needs weights or data).
    config
        :class:`PimConfig`, path of a pimsim-nn config JSON, or ``None`` (conformance
        hardware with a uniform 10 ns / 1 pJ NoC).
    mode
        ``"pimsim"`` reproduces pimsim-nn 3e3442b (§8.5–8.8); ``"native"`` fixes its defects
        (§8.11).
    sim_mode
        Override ``sim_config.sim_mode`` (1 latency, 0 throughput).
    trace
        Also return the per-instruction trace (core, pc, S, E, R); latency mode only.
    on_incomplete
        ``"raise"``: :class:`~nnisa.core.errors.DeadlockError` (exit 3) when cores deadlock,
        :class:`~nnisa.core.errors.SimTimeExceeded` (exit 4) when sim_time is reached first.
        ``"report"``: return pimsim-nn's numbers (finish 0 for those cores) with the §5.6
        report in ``incomplete_report``.
    repeat
        Latency mode: run every core's program ``repeat`` times back to back (a stream of
        images through a program without image marks, :mod:`.stream`); energies cover all
        rounds.  Programs compiled for a stream carry image marks instead.
    engine
        The event loop (rob_size 1): ``"fast"`` (compiled, :mod:`.timing_engine_fast`) or
        ``"reference"`` (Python, :func:`.timing_engine.run_events`); identical results.
    opcodes
        Each core's ``op`` column as an int64 array, when the caller has it (it is read once
        per simulation and shared with the lint).

    Raises
    ------
    DeadlockError, SimTimeExceeded, ConfigError, SimError
    """
    if mode not in ("pimsim", "native"):
        raise ConfigError(f"unknown timing mode {mode!r} (use 'pimsim' or 'native')")
    cfg = resolve_config(config, program)
    native = mode == "native"
    smode = cfg.sim_config.sim_mode if sim_mode is None else int(sim_mode)
    throughput = smode == 0
    prm = Params.from_config(cfg, native)
    P = prm.P
    sim_time_ps = int(round(cfg.sim_config.sim_time * 1e9))
    warnings: list[str] = []
    core_cnt = cfg.chip_config.core_cnt
    ids = sorted(program.cores)
    if not native:
        dropped = [c for c in ids if c >= core_cnt]
        if dropped:
            warnings.append(f"cores {dropped} have ids >= core_cnt {core_cnt}; pimsim-nn ignores them")
            ids = [c for c in ids if c < core_cnt]
    n_total = sum(len(program.cores[c]) for c in ids)
    plans: dict[int, CorePlan] = dict(zip(ids, _per_core(
        lambda c: plan_core(c, program.cores[c], prm, cfg, program.array_group_map.get(c, []),
                            op=None if opcodes is None else opcodes.get(c)), ids, n_total)))
    for c in ids:
        warnings.extend(plans[c].warnings)
    rob = cfg.chip_config.core_config.rob_size
    repeat = int(repeat)
    if repeat < 1 or (repeat > 1 and (throughput or rob > 1 or program.image_ends)):
        raise ConfigError("repeating a program (images > 1) needs latency mode, rob_size 1 and a program "
                          "without image marks" if repeat >= 1 else f"repeat must be >= 1, got {repeat}")
    if rob > 1 and not throughput:
        from .timing_rob import run_rob
        eng, plans = run_rob(program, plans, prm, cfg, native)
    else:
        if rob > 1:
            warnings.append("rob_size > 1 is modelled in latency mode only; throughput mode uses rob_size 1")
        if engine not in ("fast", "reference"):
            raise ConfigError(f"unknown timing engine {engine!r} (use 'fast' or 'reference')")
        loop = run_events
        if engine == "fast":
            from .timing_engine_fast import run_events_fast as loop
        eng = loop(plans, P, native, throughput=throughput, limit=sim_time_ps, repeat=repeat)

    if eng.size_mismatch:
        s, spc, r, rpc, bs, br = eng.size_mismatch[0]
        msg = (f"send of {bs} bytes (core {s}, pc {spc}) matched with a recv of {br} bytes "
               f"(core {r}, pc {rpc})")
        if native:
            raise SimError(msg, where=f"core {r}, pc {rpc}")
        warnings.append(f"{msg}; pimsim-nn uses the receiver's size for the local write "
                        f"({len(eng.size_mismatch)} mismatched pair(s))")
    finish: dict[int, int] = {}
    recorded: dict[int, bool] = {}
    unfinished = []
    for c in ids:
        p = plans[c]
        st = eng.state[c]
        if throughput:
            finish[c], recorded[c] = 0, False
            continue
        if st != DONE or p.n == 0:
            finish[c], recorded[c] = 0, False
            if st != DONE:
                unfinished.append(c)
            continue
        lop = int(p.op[-1])
        if lop in SCALAR_OPS or lop == OP_SETBW or lop == OP_NOP:
            if native:
                finish[c] = int(eng.inst_times[c][2][-1]) if eng.inst_times else eng.T_end[c]
                recorded[c] = True
            else:
                finish[c], recorded[c] = 0, False
                warnings.append(f"core {c}: last instruction is scalar/setbw; pimsim-nn records no "
                                f"finish time (reported as 0)")
        else:
            finish[c], recorded[c] = eng.T_end[c] + P, True

    incomplete_report = None
    blocked = [c for c in unfinished if eng.state[c] != HUNG]
    if blocked or (unfinished and native):
        title = (f"DEADLOCK at t = {_ns(eng.t_last)} ns: {len(unfinished)} of {len(ids)} cores unfinished")
        rep = _incomplete_report(program, plans, eng, unfinished, title)
        if on_incomplete == "raise":
            raise DeadlockError(f"deadlock: {len(unfinished)} of {len(ids)} cores cannot make progress "
                                f"(cores {', '.join(map(str, unfinished))})", report=rep)
        incomplete_report = rep
    elif unfinished:
        warnings.append(f"cores {unfinished} hang at a nop and never finish (pimsim-nn reports 0)")
    if not throughput:
        late = [c for c in ids if finish[c] > sim_time_ps]
        if late:
            rep = _sim_time_report(program, plans, eng, late, sim_time_ps, P, len(ids))
            if on_incomplete == "raise":
                raise SimTimeExceeded(f"sim_time {cfg.sim_config.sim_time:g} ms reached before cores "
                                      f"{', '.join(map(str, late))} finished", report=rep)
            for c in late:
                finish[c], recorded[c] = 0, False
            incomplete_report = (incomplete_report + "\n" if incomplete_report else "") + rep
    latency = sim_time_ps if throughput else max([v for v in finish.values()], default=0)

    # busy time, NoC traffic, energy
    busy, noc_b, noc_f = _busy_and_noc(plans, eng, cfg, prm, throughput)
    energy = {k: 0.0 for k in COMPONENTS}
    core_energy = {}
    by_layer = bool(program.layers) and not throughput and repeat == 1 and not unfinished and not program.image_ends
    inst_energy: dict[int, np.ndarray] = {}

    def core_energy_terms(c: int) -> tuple[list, dict, np.ndarray | None]:
        """One core's dynamic energy terms in the order they are added up (computed per core,
        possibly in another thread; the sums below keep the one order)."""
        p = plans[c]
        rows = program.cores[c]
        dyn = per_instruction_dynamic(p, rows, prm, cfg, program.array_group_map.get(c, []))
        if throughput:
            done = eng.events_done.get(c, 0)
            full, part = divmod(done, p.n) if p.n else (0, 0)
            terms = [(k, full * float(arr.sum()) + float(arr[:part].sum())) for k, arr in dyn.items()]
            fe = frontend_energy(p, rows, cfg, True, upto=None, rounds=full)
            if part:
                fe2 = frontend_energy(p, rows, cfg, True, upto=part)
                fe = {k: fe[k] + fe2[k] for k in fe}
        else:
            terms = [(k, float(arr.sum()) * repeat) for k, arr in dyn.items()]
            fe = {k: v * repeat for k, v in frontend_energy(p, rows, cfg, native).items()}
        inst = sum(dyn.values(), np.zeros(p.n)) + sum(fe.values()) / max(p.n, 1) if by_layer else None
        return terms, fe, inst  # inst: per instruction, the front end's share spread over them

    for c, (terms, fe, inst) in zip(ids, _per_core(core_energy_terms, ids, n_total)):
        tot = 0.0
        for k, v in terms:
            energy[k] += v
            tot += v
        for k, v in fe.items():
            energy[k] += v
            tot += v
        core_energy[c] = tot
        if inst is not None:
            inst_energy[c] = inst
    spow = static_power_mw(cfg, len(ids))
    running = sim_time_ps if throughput else latency
    energy["static"] = spow * running / PS

    rounds = dict(eng.rounds) if throughput else {c: int(eng.state[c] == DONE) for c in ids}
    tr = None
    if (trace or by_layer) and eng.inst_times is not None:
        tr = {}
        for c in ids:
            S_, E_, R_ = eng.inst_times[c]
            a = np.zeros(plans[c].n, TRACE_DTYPE)
            a["pc"] = np.arange(plans[c].n)
            a["op"] = plans[c].op
            a["S"], a["E"], a["R"] = S_, E_, R_
            tr[c] = a
    elif (trace or by_layer) and not throughput:
        tr = {c: instruction_times(plans[c], eng.ev_S[c], eng.ev_E[c], P,
                                   upto_event=None if eng.state[c] in (DONE, HUNG) else eng.pos[c])
              for c in ids}
    layers = None
    if by_layer and tr is not None:
        from .layer_figures import layer_figures
        m = cfg.chip_config.core_config.matrix_config
        layers = layer_figures(program, tr, inst_energy, P, sum(v for k, v in energy.items() if k != "static"),
                               core_cnt * m.xbar_array_count)
    if not trace:
        tr = None
    done = None
    if not throughput and not unfinished:
        from .stream import compiled_image_done, repeated_image_done
        done = repeated_image_done(eng, P) if repeat > 1 else compiled_image_done(program, plans, eng, P)
    return TimingResult(mode=mode, sim_mode=smode, core_period_ps=P, latency_ps=int(latency),
                        finish_ps=finish, finish_recorded=recorded,
                        instructions={c: plans[c].n for c in ids}, busy_ps=busy,
                        gm_busy_ps=int(eng.gm_busy), noc_bytes=noc_b, noc_flits=noc_f,
                        energy_pj=energy, core_energy_pj=core_energy, static_power_mw=spow,
                        rounds=rounds, sim_time_ps=sim_time_ps, chip_core_count=core_cnt, trace=tr,
                        incomplete_report=incomplete_report, warnings=warnings, image_done_ps=done,
                        pipeline_depth=program.pipeline_depth if program.image_ends else 1, layers=layers)


def _sim_time_report(program, plans, eng, late, limit, P, n_total) -> str:
    lines = [f"SIM_TIME reached at t = {_ns(limit)} ns: {len(late)} of {n_total} cores unfinished"]
    rows = []
    for c in late:
        tr = instruction_times(plans[c], eng.ev_S[c], eng.ev_E[c], P)
        k = int(np.searchsorted(tr["R"], limit, side="right"))
        k = min(k, len(tr) - 1)
        rows.append((c, k, _row_text(program, c, k)))
    w = max(len(r[2]) for r in rows)
    for c, pc, text in rows:
        lines.append(f"  core {c}  pc {pc}  {text:<{w}}  executing at sim_time (would finish later)")
    return "\n".join(lines)


#: programs with at least this many instructions plan their cores (and sum their energies) in two
#: threads (:mod:`nnisa.core.parallel`)
PARALLEL_MIN = 200_000


def _per_core(fn, ids: list[int], n_total: int) -> list:
    """``fn(c)`` for every core in ``ids``, in order (two threads for a large program)."""
    return map_in_threads(fn, ids, "core", worth_threads(n_total, PARALLEL_MIN) and len(ids) > 1)


def _busy_and_noc(plans, eng, cfg, prm, throughput):
    busy = {}
    noc_b: dict[tuple[int, int], int] = {}
    noc_f: dict[tuple[int, int], int] = {}
    gm = cfg.chip_config.core_config.global_memory_switch_id
    bw = prm.bw

    def add(s, d, nbytes, flits):
        noc_b[(s, d)] = noc_b.get((s, d), 0) + nbytes
        noc_f[(s, d)] = noc_f.get((s, d), 0) + flits

    from .timing_plan_fast import busy_local
    for c, p in plans.items():
        n_ev = len(p.ev_idx)
        done = n_ev if eng.state[c] in (DONE, HUNG) else min(eng.pos[c], n_ev)
        ev_busy = int((eng.ev_E[c][:done] - eng.ev_S[c][:done]).sum()) if done else 0
        kinds, sizes = p.ev_kind, p.ev_size
        lm_ev = 0
        for kind in (EV_LD, EV_ST, EV_SEND, EV_RECV):
            sel = kinds == kind
            if sel.any():
                lm_ev += int((p.ev_a[sel] if kind == EV_ST else p.ev_c[sel]).sum())
        matrix, vector, transfer, lmem, scalar = busy_local(p)
        busy[c] = {"matrix": matrix, "vector": vector, "transfer": transfer + ev_busy,
                   "local_memory": lmem + lm_ev, "scalar": scalar}
        for kind in (EV_LD, EV_SLD, EV_ST, EV_SEND, EV_SYNC):
            sel = np.flatnonzero(kinds == kind)
            if not len(sel):
                continue
            if kind in (EV_LD, EV_SLD):
                noc_b[(c, gm)] = noc_b.get((c, gm), 0) + len(sel)
                noc_f[(c, gm)] = noc_f.get((c, gm), 0) + len(sel)
            elif kind == EV_ST:
                B = sizes[sel]
                noc_b[(c, gm)] = noc_b.get((c, gm), 0) + int(B.sum())
                noc_f[(c, gm)] = noc_f.get((c, gm), 0) + int(cdiv(B, bw).sum())
            else:  # per peer, in the order of first use (the dictionaries' order as event by event)
                peers, inv = peers_in_order(p.ev_peer[sel])
                count = np.bincount(inv, minlength=len(peers)).tolist()
                if kind == EV_SEND:
                    data, data_flits = np.zeros(len(peers), np.int64), np.zeros(len(peers), np.int64)
                    np.add.at(data, inv, sizes[sel])
                    np.add.at(data_flits, inv, cdiv(sizes[sel], bw))
                for j, r in enumerate(peers):
                    add(c, r, count[j], count[j] * int(cdiv(1, bw)))  # ready (send) or the sync
                    if kind == EV_SEND:
                        add(r, c, count[j], count[j] * int(cdiv(1, bw)))  # answer
                        add(c, r, int(data[j]), int(data_flits[j]))
    return busy, noc_b, noc_f
