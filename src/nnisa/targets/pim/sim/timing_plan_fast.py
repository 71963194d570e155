"""Compiled (numba) per-instruction part of :func:`.timing_units.plan_core`.

The reference is the numpy code of ``plan_core`` (one masked array expression per instruction
class); this kernel computes the same arrays — bit widths in force (setbw forward fill),
execution time ``X``, issue offset ``start``, cursor increment ``inc``, local-memory busy time
and the read/compute/write split of the rob model — in one pass over the core's instructions,
with the same integer formulas and the same float rounding where a memory latency is not a
whole number of ps.  The tests compare both on random programs and on PIMCOMP-NN's ResNet-18.
"""

from __future__ import annotations

import numpy as np
from ....core.native import kernel

from ..isa import OPCODE, build_isa

# opcodes and per-opcode facts straight from the ISA table (timing_units imports this module)
OP_NOP, OP_SLD, OP_SETBW, OP_MVMUL = OPCODE["nop"], OPCODE["sld"], OPCODE["setbw"], OPCODE["mvmul"]
OP_LLDI, OP_LMV = OPCODE["lldi"], OPCODE["lmv"]
_ISA = build_isa()
_TWO_SRC = _ISA.fact_array("srcs", 0, np.int64, 32) == 2
_OBYW_WB = _ISA.fact_array("obyw_wb", False, np.bool_, 32)
_ONE_ELEM = _ISA.fact_array("one_elem", False, np.bool_, 32)


@kernel(cache=True, nogil=True, inline="always")
def _cdiv(a, b):
    return -(-a // b)


@kernel(cache=True, nogil=True, inline="always")
def _mem(nbytes, dw, lat, lat_f, exact):
    """:meth:`.timing_units.Memory.read` / ``write`` of one access."""
    if exact:
        return _cdiv(nbytes, dw) * lat
    return np.int64(np.rint(np.float64(_cdiv(nbytes, dw)) * lat_f))


@kernel(cache=True, nogil=True)
def _plan_local(op, ln, set_ib, set_ob, grp, mbiw, fill, init_ib, init_ob, native, P,
                dw, rd, rd_f, rd_exact, wr, wr_f, wr_exact, vw, vlat, rows, cols, cell,
                two_src, obyw_wb, one_elem, agm, mvm_tab, split,
                ib, ob, X, start, inc, lbusy, lr, nrd, mid, lw):
    """Fill the per-instruction arrays (``split``: also the rob model's lr/nrd/mid/lw, else those
    are empty); returns (first mvmul with a bad group, first with mbiw 0), -1 if none."""
    n = len(op)
    cur_ib, cur_ob = init_ib, init_ob
    ibyw, obyw = _cdiv(cur_ib, 8), _cdiv(cur_ob, 8)
    first_set = True
    bad_grp, bad_mbiw = -1, -1
    for i in range(n):
        o = op[i]
        if fill and o == OP_SETBW:
            cur_ib, cur_ob = np.int64(set_ib[i]), np.int64(set_ob[i])
            ibyw, obyw = _cdiv(cur_ib, 8), _cdiv(cur_ob, 8)
        ib[i], ob[i] = cur_ib, cur_ob
        if 1 <= o <= 7 and not (native and o == OP_SLD):
            inc[i] = P
        elif o == OP_SETBW:
            inc[i] = 0 if first_set else P
            first_set = False
        elif 10 <= o <= 23:
            vl = np.int64(ln[i])
            nsrc = 2 if two_src[o] else 1
            wb = vl * (obyw if obyw_wb[o] else ibyw)
            if native and one_elem[o]:
                wb = obyw
            one_rd = _mem(vl * ibyw, dw, rd, rd_f, rd_exact)
            r = nsrc * one_rd
            w = _mem(wb, dw, wr, wr_f, wr_exact)
            steps = _cdiv(vl, vw) * vlat
            if split:
                lr[i], nrd[i], mid[i], lw[i] = one_rd, nsrc, steps, w
            X[i] = r + steps + w
            lbusy[i] = r + w
            start[i] = P
            inc[i] = X[i] + 2 * P
        elif o == OP_LMV or o == OP_LLDI:
            b = np.int64(ln[i])
            w = _mem(b, dw, wr, wr_f, wr_exact)
            t = w
            if split:
                lw[i] = w
            if o == OP_LMV:
                r = _mem(b, dw, rd, rd_f, rd_exact)
                t = w + r
                if split:
                    lr[i], nrd[i] = r, 1
            X[i] = t
            lbusy[i] = t
            start[i] = P
            inc[i] = t + 2 * P
        elif o == OP_MVMUL:
            g = grp[i]
            if g < 0 or g >= len(agm):
                if bad_grp < 0:
                    bad_grp = i
                continue
            mb = mbiw[i]
            if mb <= 0:
                if bad_mbiw < 0:
                    bad_mbiw = i
                continue
            xb = agm[g]
            in_bytes = rows * ibyw * (1 if native else 8)
            out_bytes = (cols * cell // mb) * obyw * xb
            mvm = mvm_tab[cur_ib]
            r = _mem(in_bytes, dw, rd, rd_f, rd_exact)
            w = _mem(out_bytes, dw, wr, wr_f, wr_exact)
            if split:
                lr[i], nrd[i], mid[i], lw[i] = r, 1, mvm, w
            X[i] = r + mvm + w
            lbusy[i] = r + w
            start[i] = 2 * P
            inc[i] = X[i] + 3 * P
        elif o == OP_NOP and native:
            inc[i] = P
    return bad_grp, bad_mbiw


def plan_local(rows: np.ndarray, op: np.ndarray, prm, init: tuple[int, int], fixed: int | None,
               agm: list[int], split: bool = True) -> tuple:
    """The per-instruction arrays of ``plan_core`` (compiled): (ib, ob, X, start, inc, lbusy, lr,
    nrd, mid, lw, bad_group, bad_mbiw); ``fixed``: one bit width everywhere (no setbw);
    ``split``: the rob model's lr/nrd/mid/lw are wanted (else None: 100 MB less to touch on
    PIMCOMP-NN's ResNet-18, whose first touch costs more than computing it)."""
    n = len(op)
    i64 = [np.zeros(n if k < 6 or split else 0, np.int64) for k in range(10)]
    ib, ob = i64[0], i64[1]
    is_mvm = op == OP_MVMUL
    widths_set = rows["ibiw"][op == OP_SETBW]
    cand = {int(v) for v in np.unique(widths_set)} | {int(init[0])}
    if fixed is not None:
        cand = {int(fixed)}
    top = max(cand) if cand else 0
    if not 0 <= min(cand, default=0) or top > 1 << 16:
        return None  # widths outside any table: the caller takes the numpy path
    mvm_tab = np.zeros(top + 1, np.int64)
    if is_mvm.any():
        for v in cand:
            mvm_tab[v] = prm.mvm_ps(v)
    lm = prm.lmem
    rd_f, wr_f = lm.rd_ns * 1000, lm.wr_ns * 1000
    start_ib, start_ob = (fixed, fixed) if fixed is not None else init
    bad = _plan_local(op, rows["len"], rows["ibiw"], rows["obiw"], rows["group"], rows["mbiw"],
                      fixed is None, np.int64(start_ib), np.int64(start_ob), bool(prm.native), np.int64(prm.P),
                      np.int64(lm.dw), np.int64(lm.rd), float(rd_f), bool(rd_f == lm.rd),
                      np.int64(lm.wr), float(wr_f), bool(wr_f == lm.wr), np.int64(prm.vw), np.int64(prm.vlat),
                      np.int64(prm.rows), np.int64(prm.cols), np.int64(prm.cell), _TWO_SRC, _OBYW_WB, _ONE_ELEM,
                      np.asarray(agm, np.int64) if agm else np.zeros(0, np.int64), mvm_tab, bool(split), *i64)
    return (*i64[:6], *(i64[6:] if split else (None,) * 4), int(bad[0]), int(bad[1]))


@kernel(cache=True, nogil=True)
def _energy_local(op, ln, grp, mbiw, ib, ob, native, rows, cols, cell, vw, e_step, dw, e_rd, e_wr,
                  two_src, obyw_wb, one_elem, agm, exb, mvmul, vector, local):
    """Per-instruction dynamic energy of mvmul, vector, lmv and lldi (``energy.per_instruction_dynamic``)."""
    for i in range(len(op)):
        o = op[i]
        if o == OP_MVMUL:
            xb = agm[grp[i]]
            ibyw, obyw = _cdiv(ib[i], 8), _cdiv(ob[i], 8)
            mvmul[i] = xb * exb[ib[i]]
            in_b = rows * ibyw * (1 if native else 8)
            out_b = (cols * cell // np.int64(mbiw[i])) * obyw * xb
            local[i] = _cdiv(in_b, dw) * e_rd + _cdiv(out_b, dw) * e_wr
        elif 10 <= o <= 23:
            vl = np.int64(ln[i])
            ibyw, obyw = _cdiv(ib[i], 8), _cdiv(ob[i], 8)
            vector[i] = _cdiv(vl, vw) * e_step
            nsrc = 2 if two_src[o] else 1
            wb = vl * (obyw if obyw_wb[o] else ibyw)
            if native and one_elem[o]:
                wb = obyw
            local[i] = nsrc * _cdiv(vl * ibyw, dw) * e_rd + _cdiv(wb, dw) * e_wr
        elif o == OP_LMV:
            bt = _cdiv(np.int64(ln[i]), dw)
            local[i] = bt * e_wr + bt * e_rd
        elif o == OP_LLDI:
            local[i] = _cdiv(np.int64(ln[i]), dw) * e_wr


def energy_local(plan, rows: np.ndarray, prm, agm: list[int], e_step: float, xbar) -> dict[str, np.ndarray]:
    """Compiled local part of ``energy.per_instruction_dynamic``: {"mvmul", "vector",
    "local_memory"} arrays (pJ); ``xbar(ibiw)`` = energy of one crossbar activation."""
    n = plan.n
    out = {k: np.zeros(n) for k in ("mvmul", "vector", "local_memory")}
    mi = plan.op == OP_MVMUL
    top = int(plan.ibiw.max(initial=0))
    exb = np.zeros(top + 1)
    if mi.any():
        for v in np.unique(plan.ibiw[mi]).tolist():
            exb[v] = xbar(int(v))
    lm = prm.lmem
    _energy_local(plan.op, rows["len"], rows["group"], rows["mbiw"], plan.ibiw, plan.obiw, bool(prm.native),
                  np.int64(prm.rows), np.int64(prm.cols), np.int64(prm.cell), np.int64(prm.vw), float(e_step),
                  np.int64(lm.dw), float(lm.e_rd), float(lm.e_wr), _TWO_SRC, _OBYW_WB, _ONE_ELEM,
                  np.asarray(agm, np.int64) if agm else np.zeros(1, np.int64), exb,
                  out["mvmul"], out["vector"], out["local_memory"])
    return out


@kernel(cache=True, nogil=True)
def _frontend_counts(op, ofs_sel, ofs_val, pre, n, n_head, reads_tab, writes_tab, out):
    """out = [all, all@head, ofs, ofs@head, writers, writers@head, scalar, scalar@head, reads]."""
    for i in range(n):
        o = op[i]
        head = i < n_head and pre[i] == 0
        out[0] += 1
        out[1] += head
        if ofs_sel[i] != 0 or ofs_val[i] != 0:
            out[2] += 1
            out[3] += head
        if writes_tab[o] > 0:
            out[4] += 1
            out[5] += head
        if 1 <= o <= 7:
            out[6] += 1
            out[7] += head
        out[8] += reads_tab[o]


def frontend_counts_fast(plan, rows: np.ndarray, n: int, reads_tab: np.ndarray, writes_tab: np.ndarray) -> tuple:
    """``energy.frontend_counts`` by one compiled loop."""
    first_ev = int(plan.ev_idx[0]) if len(plan.ev_idx) else plan.n - 1
    out = np.zeros(9, np.int64)
    _frontend_counts(plan.op, rows["ofs_sel"], rows["ofs_val"], plan.pre, n, min(first_ev + 1, n),
                     reads_tab, writes_tab, out)
    c = out.tolist()
    return (c[0], c[1]), (c[2], c[3]), (c[4], c[5]), (c[6], c[7]), c[8]


@kernel(cache=True, nogil=True)
def _busy_local(op, X, inc, start, lmem, out):
    """out = [matrix, vector, lmv+lldi transfer, local memory, scalar] busy ps of local instructions."""
    for i in range(len(op)):
        o = op[i]
        if o == OP_MVMUL:
            out[0] += X[i]
        elif 10 <= o <= 23:
            out[1] += X[i]
        elif o == OP_LMV or o == OP_LLDI:
            out[2] += X[i]
        if o <= 8 and start[i] == 0:
            out[4] += inc[i]
        out[3] += lmem[i]


def busy_local(plan) -> list[int]:
    """Busy time of a core's local instructions by unit (``timing._busy_and_noc``)."""
    out = np.zeros(5, np.int64)
    _busy_local(plan.op, plan.X, plan.inc, plan.start, plan.lmem_local, out)
    return out.tolist()
