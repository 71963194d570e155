"""Energy accounting of the timing model (spec §9).

Energy = Σ dynamic events + Σ static power × running time.  Dynamic energies only depend on
the program and the configuration (not on timing), except the per-event fetch/decode/register
file/scalar charges, whose pimsim-nn de-duplication filter is broken (§9): it only skips
further events at exactly the *first* recorded timestamp of a counter.  pimsim mode replicates
that (events issued at the core's first issue cycle, other than the first one, are free);
native mode charges every event.
"""

from __future__ import annotations

import numpy as np

from ..config import PimConfig
from ..isa import build_isa
from .timing_units import (EV_LD, EV_RECV, EV_SEND, EV_SLD, EV_ST, OBYW_WB, ONE_ELEM, OP_MVMUL,
                           TWO_SRC, CorePlan, Params, cdiv)

#: energy components, in report order
COMPONENTS = ("static", "mvmul", "vector", "local_memory", "global_memory", "noc", "inst_fetch",
              "inst_decode", "reg_file", "scalar")

# register-file reads (source and address registers) and writes per opcode: facts of the ISA table
_REG_READS = build_isa().fact_array("reads", 0, np.int64, 32)
_REG_WRITES = build_isa().fact_array("writes", 0, np.int64, 32)


def xbar_energy(cfg: PimConfig, ibiw: int, native: bool) -> float:
    """Energy of one crossbar activation (pJ), §9 ``E_xbar``."""
    m = cfg.chip_config.core_config.matrix_config
    rows, cols = m.xbar_size
    div = (lambda a, b: -(-a // b)) if native else (lambda a, b: a // b)
    n_in, n_dac, n_adc = div(ibiw, m.dac_resolution), div(rows, m.dac_count), div(cols, m.adc_count)
    P = m.period
    ib_lat = m.input_buffer_latency_cycle if native else 0
    e_front = (P * m.input_buffer_dynamic_power * ib_lat
               + P * m.dac_dynamic_power * m.dac_latency_cycle * m.dac_count
               + m.xbar_read_power * m.xbar_latency
               + P * m.sample_hold_dynamic_power * m.sample_hold_latency_cycle * cols)
    e_back = n_adc * (P * m.adc_dynamic_power * m.adc_latency_cycle * m.adc_count
                      + P * m.shift_adder_dynamic_power * m.shift_adder_latency_cycle
                      + P * m.output_buffer_dynamic_power * m.output_buffer_latency_cycle)
    return n_in * n_dac * (e_front + e_back)


def _local_reference(plan: CorePlan, rows: np.ndarray, prm: Params, cfg: PimConfig, agm: list[int],
                     e_step: float) -> dict[str, np.ndarray]:
    """mvmul, vector, lmv and lldi energies with numpy (the readable reference)."""
    n = plan.n
    op = plan.op
    ln = rows["len"].astype(np.int64)
    lm = prm.lmem
    out = {k: np.zeros(n) for k in ("mvmul", "vector", "local_memory")}
    ibyw, obyw = cdiv(plan.ibiw, 8), cdiv(plan.obiw, 8)
    # mvmul crossbars
    mi = np.flatnonzero(op == OP_MVMUL)
    if len(mi):
        xb = np.asarray(agm, np.int64)[rows["group"][mi].astype(np.int64)]
        exb = {int(v): xbar_energy(cfg, int(v), prm.native) for v in np.unique(plan.ibiw[mi])}
        e = np.array([exb[int(v)] for v in plan.ibiw[mi]]) if len(exb) > 1 else \
            np.full(len(mi), next(iter(exb.values())))
        out["mvmul"][mi] = xb * e
        mb = rows["mbiw"][mi].astype(np.int64)
        in_b = prm.rows * ibyw[mi] * (1 if prm.native else 8)
        out_b = (prm.cols * prm.cell // mb) * obyw[mi] * xb
        out["local_memory"][mi] = lm.beats(in_b) * lm.e_rd + lm.beats(out_b) * lm.e_wr
    # vector ops
    vi = np.flatnonzero((op >= 10) & (op <= 23))
    if len(vi):
        vl = ln[vi]
        out["vector"][vi] = cdiv(vl, prm.vw) * e_step
        vop = op[vi]
        nsrc = np.where(np.isin(vop, TWO_SRC), 2, 1)
        wb = vl * np.where(np.isin(vop, OBYW_WB), obyw[vi], ibyw[vi])
        if prm.native:
            wb = np.where(np.isin(vop, ONE_ELEM), obyw[vi], wb)
        out["local_memory"][vi] = nsrc * lm.beats(vl * ibyw[vi]) * lm.e_rd + lm.beats(wb) * lm.e_wr
    for o, rd in ((27, True), (26, False)):  # lmv, lldi
        idx = np.flatnonzero(op == o)
        if len(idx):
            bt = lm.beats(ln[idx])
            out["local_memory"][idx] = bt * lm.e_wr + (bt * lm.e_rd if rd else 0)
    return out


def per_instruction_dynamic(plan: CorePlan, rows: np.ndarray, prm: Params, cfg: PimConfig,
                            agm: list[int], fast: bool = True) -> dict[str, np.ndarray]:
    """Dynamic energy of every instruction of one core by component (pJ, float arrays).

    Fetch/decode/register-file/scalar charges are returned as totals in a separate call
    (:func:`frontend_energy`), because the broken filter is not per instruction.  ``fast``:
    mvmul/vector/lmv/lldi by the compiled loop of :mod:`.timing_plan_fast` (same values as
    :func:`_local_reference`).
    """
    n = plan.n
    core = cfg.chip_config.core_config
    lm, gmm = prm.lmem, prm.gmem
    e_step = (core.vector_alu_dynamic_energy + 2 * core.vector_reg_read_dynamic_energy
              + core.vector_reg_write_dynamic_energy)
    if fast:
        from .timing_plan_fast import energy_local
        out = energy_local(plan, rows, prm, agm, e_step, lambda v: xbar_energy(cfg, v, prm.native))
    else:
        out = _local_reference(plan, rows, prm, cfg, agm, e_step)
    out["global_memory"], out["noc"] = np.zeros(n), np.zeros(n)
    # event instructions: memories and NoC (message energies precomputed by plan_core)
    ev, kinds, B = plan.ev_idx, plan.ev_kind, plan.ev_size
    if len(ev):
        out["noc"][ev] = plan.ev_noc_e
        bl, bg = lm.beats(B), gmm.beats(B)
        is_ld, is_st = kinds == EV_LD, kinds == EV_ST
        g = np.where(is_ld | (kinds == EV_SLD), bg * gmm.e_rd, 0.0) + np.where(is_st, bg * gmm.e_wr, 0.0)
        loc = (np.where(is_ld | (kinds == EV_RECV), bl * lm.e_wr, 0.0)
               + np.where(is_st | (kinds == EV_SEND), bl * lm.e_rd, 0.0))
        out["global_memory"][ev] = g
        out["local_memory"][ev] = loc
    return out


def frontend_energy(plan: CorePlan, rows: np.ndarray, cfg: PimConfig, native: bool,
                    upto: int | None = None, rounds: int = 1, fast: bool = True) -> dict[str, float]:
    """Fetch / decode / register-file / scalar energy of one core (pJ), §9.

    One fetch and one decode event per instruction, one decode-offset event per instruction
    with a non-zero offset, register reads/writes per operand, one scalar event per scalar
    instruction; each charged ``period · dynamic_power``.  ``fast``: the event counts by the
    compiled loop of :mod:`.timing_plan_fast` (same counts as :func:`frontend_counts`).
    """
    core = cfg.chip_config.core_config
    P = core.period
    n = plan.n if upto is None else upto
    if fast:
        from .timing_plan_fast import frontend_counts_fast
        counts = frontend_counts_fast(plan, rows, n, _REG_READS, _REG_WRITES)
    else:
        counts = frontend_counts(plan, rows, n)
    (n_all, h_all), (n_ofs, h_ofs), (n_wr, h_wr), (n_sc, h_sc), reads = counts

    def cnt(count, head):
        """Charged events: pimsim-nn's broken filter frees events at the first issue time but one."""
        if upto is not None or native or count == 0:
            return count
        return count - max(head - 1, 0)

    fetch = cnt(n_all, h_all) * P * core.inst_fetch_dynamic_power
    decode = (cnt(n_all, h_all) * P * core.inst_decode_dynamic_power
              + cnt(n_ofs, h_ofs) * P * core.inst_decode_offset_dynamic_power)
    reg = (P * core.reg_file_read_dynamic_power * reads
           + P * core.reg_file_write_dynamic_power * cnt(n_wr, h_wr))
    scal = cnt(n_sc, h_sc) * P * core.scalar_dynamic_power
    f = float(rounds)
    return {"inst_fetch": fetch * f, "inst_decode": decode * f, "reg_file": reg * f, "scalar": scal * f}


def frontend_counts(plan: CorePlan, rows: np.ndarray, n: int) -> tuple:
    """Front-end event counts of the first ``n`` instructions (numpy reference): (count, head)
    of every instruction, of those with an address offset, of register writers and of scalar
    instructions, then the register reads.  ``head`` counts the events issued at the core's
    first issue cycle (cursor 0) up to its first event instruction."""
    op = plan.op[:n]
    first_ev = int(plan.ev_idx[0]) if len(plan.ev_idx) else plan.n - 1
    at_start = plan.pre[:min(first_ev + 1, n)] == 0

    def both(mask):
        return int(np.count_nonzero(mask)), int(np.count_nonzero(mask[:len(at_start)] & at_start))

    ofs = (rows["ofs_sel"][:n] != 0) | (rows["ofs_val"][:n] != 0)
    return (both(np.ones(n, bool)), both(ofs), both(_REG_WRITES[op] > 0), both((op >= 1) & (op <= 7)),
            int(_REG_READS[op].sum()))


def static_power_mw(cfg: PimConfig, n_cores: int) -> float:
    """Chip static power (mW): Σ over instantiated cores + the global memory (§9)."""
    return (n_cores * cfg.chip_config.core_config.static_power()
            + cfg.chip_config.global_memory_config.static_power)
