"""Unit latency formulas (spec §8.2, §8.11) and the vectorised per-core plan of the timing model.

All times are integer **picoseconds** (§8.1).  :func:`plan_core` turns one core's instruction
array into numpy arrays: the execution time ``X`` of every purely local instruction, the issue
cursor increment ``inc`` it causes (§8.5), and a compact description of the *event*
instructions (ld, st, send, recv, sync, wait; native mode also sld) that the discrete-event loop
of :mod:`.timing_engine` processes.  Everything that does not depend on other cores is computed
here, with numpy, once per core.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ....core.errors import SimError
from ..config import PimConfig
from ..isa import OPCODE, build_isa
from .timing_plan_fast import plan_local

PS = 1000  # ps per ns

# event kinds of the discrete-event loop
EV_LD, EV_ST, EV_SEND, EV_RECV, EV_SYNC, EV_WAIT, EV_SLD = range(7)
EVENT_NAMES = ("ld", "st", "send", "recv", "sync", "wait", "sld")

OP_NOP, OP_SLD, OP_SETBW, OP_MVMUL = OPCODE["nop"], OPCODE["sld"], OPCODE["setbw"], OPCODE["mvmul"]
OP_LD, OP_ST, OP_LLDI, OP_LMV = OPCODE["ld"], OPCODE["st"], OPCODE["lldi"], OPCODE["lmv"]
OP_SEND, OP_RECV, OP_WAIT, OP_SYNC = OPCODE["send"], OPCODE["recv"], OPCODE["wait"], OPCODE["sync"]
_ISA = build_isa()
#: per-opcode facts of the ISA table (:class:`~nnisa.targets.pim.isa.Facts`)
SCALAR_OPS = tuple(s.opcode for s in _ISA.instrs if s.category == "scalar")
VECTOR_OPS = _ISA.opcodes_where("unit", "vector")
#: two-source vector ops (n_src = 2)
TWO_SRC = _ISA.opcodes_where("srcs", 2)
#: vector ops whose write-back is len·obyw (pimsim-nn)
OBYW_WB = _ISA.opcodes_where("obyw_wb")
#: vector ops that produce one element (native mode writes one obyw element)
ONE_ELEM = _ISA.opcodes_where("one_elem")

#: unit of each opcode for busy-time accounting
UNITS = ("scalar", "matrix", "vector", "transfer")
UNIT_OF_OP = _ISA.fact_array("unit", "scalar", np.int8, 32, UNITS.index)
EVENT_OF_OP = _ISA.fact_array("event", "", np.int8, 32, lambda e: EVENT_NAMES.index(e) if e else -1)
#: EVENT_OF_OP with nop marked too (plan_core finds events and nops in one lookup)
_NOP_MARK = len(EVENT_NAMES)
_EVENT_OR_NOP = EVENT_OF_OP.copy()
_EVENT_OR_NOP[OP_NOP] = _NOP_MARK


def cdiv(a, b):
    """Ceiling division for non-negative integers (scalars or numpy arrays)."""
    return -(-a // b)


def ps(ns: float) -> int:
    """ns → integer ps (rounded to nearest)."""
    return int(round(ns * PS))


def fmix32(h: np.ndarray | int):
    """MurmurHash3 32-bit finalizer (D13), on uint32 numpy arrays or ints."""
    h = np.asarray(h, dtype=np.uint64) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


class Memory:
    """Latency/energy of one memory (§8.2): beats = cdiv(B, data_width)."""

    def __init__(self, mc):
        self.dw = mc.data_width
        self.rd = ps(mc.read_latency_cycle * mc.period)
        self.wr = ps(mc.write_latency_cycle * mc.period)
        self.e_rd = mc.read_dynamic_energy
        self.e_wr = mc.write_dynamic_energy
        self.rd_ns = mc.read_latency_cycle * mc.period
        self.wr_ns = mc.write_latency_cycle * mc.period

    def beats(self, nbytes):
        return cdiv(nbytes, self.dw)

    def read(self, nbytes):
        """Read latency in ps (vectorised)."""
        if self.rd_ns * PS == self.rd:
            return cdiv(nbytes, self.dw) * self.rd
        return np.rint(cdiv(nbytes, self.dw) * (self.rd_ns * PS)).astype(np.int64)

    def write(self, nbytes):
        """Write latency in ps (vectorised)."""
        if self.wr_ns * PS == self.wr:
            return cdiv(nbytes, self.dw) * self.wr
        return np.rint(cdiv(nbytes, self.dw) * (self.wr_ns * PS)).astype(np.int64)


@dataclass
class Params:
    """Mode-dependent constants derived from a :class:`PimConfig`."""

    native: bool
    P: int  # core period, ps
    lmem: Memory
    gmem: Memory
    bw: int  # bus width, bytes per flit
    vw: int  # vector width
    vlat: int  # ps per vector step
    rows: int
    cols: int
    cell: int
    mvm_cache: dict = field(default_factory=dict)
    cfg: PimConfig | None = None

    @classmethod
    def from_config(cls, cfg: PimConfig, native: bool) -> "Params":
        core = cfg.chip_config.core_config
        P = ps(core.period)
        vlat = core.vector_latency_cycle * (P if native else PS)
        rows, cols = core.matrix_config.xbar_size
        return cls(native=native, P=P, lmem=Memory(core.local_memory_config),
                   gmem=Memory(cfg.chip_config.global_memory_config),
                   bw=cfg.chip_config.network_config.bus_width, vw=core.vector_width, vlat=vlat,
                   rows=rows, cols=cols, cell=core.matrix_config.cell_precision, cfg=cfg)

    def mvm_cycles(self, ibiw: int) -> int:
        """Pipelined DAC→xbar→ADC latency of one mvmul in matrix cycles (§8.2)."""
        m = self.cfg.chip_config.core_config.matrix_config
        div = (lambda a, b: cdiv(a, b)) if self.native else (lambda a, b: a // b)
        n_in = div(ibiw, m.dac_resolution)
        n_dac = div(self.rows, m.dac_count)
        n_adc = div(self.cols, m.adc_count)
        ib = m.input_buffer_latency_cycle if self.native else 0
        P = m.period
        front = ib + m.dac_latency_cycle + int(np.ceil(m.xbar_latency / P - 1e-12)) + m.sample_hold_latency_cycle
        back = (m.adc_latency_cycle + m.shift_adder_latency_cycle + m.output_buffer_latency_cycle
                + max(n_adc - 1, 0) * max(m.adc_latency_cycle,
                                          m.shift_adder_latency_cycle + m.output_buffer_latency_cycle))
        n = n_in * n_dac
        if n <= 0:
            return 0  # no input slices (bit-width 0 before setbw): nothing to convert
        if m.pipeline_mode:
            return front + back + (n - 1) * max(front, back)
        return (front + back) * n

    def mvm_ps(self, ibiw: int) -> int:
        """mvmul crossbar latency in ps for the given input width (cached)."""
        v = self.mvm_cache.get(ibiw)
        if v is None:
            P = self.cfg.chip_config.core_config.matrix_config.period
            v = self.mvm_cache[ibiw] = ps(self.mvm_cycles(ibiw) * P)
        return v

    def flit_ps(self, nbytes, lat_ns):
        """NoC latency of a message: cdiv(B, bus_width) · lat, truncated to whole ns (§8.2)."""
        return int(cdiv(int(nbytes), self.bw) * lat_ns) * PS


@dataclass
class CorePlan:
    """Static, per-core part of the timing model (arrays over the core's instructions).

    Attributes
    ----------
    core, n
        Core id and instruction count.
    op
        Opcodes (int64).
    X
        Execution time of every local non-scalar instruction (ps; 0 elsewhere).
    start
        Issue→start offset: 1 P (vector, lmv, lldi, events), 2 P (mvmul), 0 (scalar, setbw).
    inc
        Issue-cursor increment of every local instruction (0 for event instructions).
    pre
        Exclusive prefix sum of ``inc`` (length n + 1).
    ev_idx, ev_kind
        Index and kind (``EV_*``) of every event instruction.
    ev_a, ev_b, ev_c, ev_d
        Per-event static latencies (meaning per kind, see :func:`plan_core`).
    ev_peer, ev_size, ev_e, ev_v, ev_key
        Peer core (send/recv/sync), byte count, event register, wait value, D13 tie key.
    hang
        Index of the first nop in pimsim mode (the core never passes it), else -1.
    lmem_busy
        Local-memory busy time of all local instructions (ps).
    """

    core: int
    n: int
    op: np.ndarray
    X: np.ndarray
    start: np.ndarray
    inc: np.ndarray
    pre: np.ndarray
    ibiw: np.ndarray
    obiw: np.ndarray
    ev_idx: np.ndarray
    ev_kind: np.ndarray
    ev_a: np.ndarray
    ev_b: np.ndarray
    ev_c: np.ndarray
    ev_d: np.ndarray
    ev_peer: np.ndarray
    ev_size: np.ndarray
    ev_e: np.ndarray
    ev_v: np.ndarray
    ev_key: np.ndarray
    ev_noc_e: np.ndarray  # NoC energy of each event's messages (pJ)
    hang: int
    lmem_local: np.ndarray  # per-instruction local-memory busy time of local instructions
    lr: np.ndarray | None = None  # per local instruction: one read's latency, number of reads,
    nrd: np.ndarray | None = None  # compute time between reads and write, write latency
    mid: np.ndarray | None = None  # (X = nrd·lr + mid + lw), used by the rob_size > 1 model
    lw: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)


def widths(rows: np.ndarray, init: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(ibiw, obiw) in force at every instruction (forward fill of setbw, §1.4)."""
    op = rows["op"]
    n = len(op)
    is_set = op == OP_SETBW
    idx = np.where(is_set, np.arange(n), -1)
    last = np.maximum.accumulate(idx) if n else idx
    ib = np.where(last >= 0, rows["ibiw"][np.maximum(last, 0)], init[0]).astype(np.int64)
    ob = np.where(last >= 0, rows["obiw"][np.maximum(last, 0)], init[1]).astype(np.int64)
    return ib, ob


def _plan_local_reference(core: int, rows: np.ndarray, op: np.ndarray, prm: Params, init: tuple[int, int],
                          fixed: int | None, agm: list[int]) -> tuple:
    """Per-instruction arrays of :func:`plan_core` with numpy (the readable reference of
    :mod:`.timing_plan_fast`): widths, X, start, inc, local-memory busy, rob split."""
    native = prm.native
    P = prm.P
    n = len(op)
    ln = rows["len"].astype(np.int64)
    if fixed is not None:
        ib = np.full(n, fixed, np.int64)
        ob = ib.copy()
    else:
        ib, ob = widths(rows, init)
    ibyw, obyw = cdiv(ib, 8), cdiv(ob, 8)
    lm = prm.lmem
    X = np.zeros(n, np.int64)
    start = np.zeros(n, np.int64)
    inc = np.zeros(n, np.int64)
    lbusy = np.zeros(n, np.int64)
    p_lr, p_nrd, p_mid, p_lw = (np.zeros(n, np.int64) for _ in range(4))

    # scalar instructions and setbw: one front-end cycle (the first setbw is free)
    is_scalar = (op >= 1) & (op <= 7)
    if native:
        is_scalar &= op != OP_SLD
    inc[is_scalar] = P
    set_idx = np.flatnonzero(op == OP_SETBW)
    inc[set_idx] = P
    if len(set_idx):
        inc[set_idx[0]] = 0

    # vector instructions
    vec = (op >= 10) & (op <= 23)
    if vec.any():
        vi = np.flatnonzero(vec)
        vop, vl = op[vi], ln[vi]
        nsrc = np.where(np.isin(vop, TWO_SRC), 2, 1)
        wb_w = np.where(np.isin(vop, OBYW_WB), obyw[vi], ibyw[vi])
        wb = vl * wb_w
        if native:
            one = np.isin(vop, ONE_ELEM)
            wb = np.where(one, obyw[vi], wb)
        one_rd = lm.read(vl * ibyw[vi])
        rd = nsrc * one_rd
        wr = lm.write(wb)
        p_lr[vi], p_nrd[vi], p_mid[vi], p_lw[vi] = one_rd, nsrc, cdiv(vl, prm.vw) * prm.vlat, wr
        X[vi] = rd + cdiv(vl, prm.vw) * prm.vlat + wr
        lbusy[vi] = rd + wr
        start[vi] = P
        inc[vi] = X[vi] + 2 * P
    # lmv / lldi (byte counts in len)
    for o, has_read in ((OP_LMV, True), (OP_LLDI, False)):
        idx = np.flatnonzero(op == o)
        if len(idx):
            b = ln[idx]
            t = lm.write(b) + (lm.read(b) if has_read else 0)
            p_lw[idx] = lm.write(b)
            if has_read:
                p_lr[idx], p_nrd[idx] = lm.read(b), 1
            X[idx] = t
            lbusy[idx] = t
            start[idx] = P
            inc[idx] = t + 2 * P
    # mvmul
    mi = np.flatnonzero(op == OP_MVMUL)
    if len(mi):
        grp = rows["group"][mi].astype(np.int64)
        mbiw = rows["mbiw"][mi].astype(np.int64)
        agm_arr = np.asarray(agm if agm else [0], dtype=np.int64)
        if (grp >= len(agm)).any() or (grp < 0).any():
            bad = int(mi[np.flatnonzero((grp >= len(agm)) | (grp < 0))[0]])
            raise SimError(f"mvmul names array group {int(rows['group'][bad])}, but the core has "
                           f"{len(agm)} groups", where=f"core {core}, pc {bad}")
        if (mbiw <= 0).any():
            bad = int(mi[np.flatnonzero(mbiw <= 0)[0]])
            raise SimError("mvmul with mbiw 0", where=f"core {core}, pc {bad}")
        xb = agm_arr[grp]
        mib = ib[mi]
        in_bytes = prm.rows * ibyw[mi] * (1 if native else 8)
        out_bytes = (prm.cols * prm.cell // mbiw) * obyw[mi] * xb
        mvm = np.array([prm.mvm_ps(int(v)) for v in mib]) if len(np.unique(mib)) > 1 else \
            np.full(len(mi), prm.mvm_ps(int(mib[0])), np.int64)
        rd, wr = lm.read(in_bytes), lm.write(out_bytes)
        p_lr[mi], p_nrd[mi], p_mid[mi], p_lw[mi] = rd, 1, mvm, wr
        X[mi] = rd + mvm + wr
        lbusy[mi] = rd + wr
        start[mi] = 2 * P
        inc[mi] = X[mi] + 3 * P

    if native:
        inc[op == OP_NOP] = P  # nop: one front-end cycle (pimsim-nn: never retires, see plan_core)
    return ib, ob, X, start, inc, lbusy, p_lr, p_nrd, p_mid, p_lw


def _messages_reference(kind: int, core: int, pcs: np.ndarray, peers: np.ndarray, B: np.ndarray, prm: Params,
                        pair, out: tuple, sel: np.ndarray) -> None:
    """Static costs of a core's send, recv or sync events (``kind``), event by event (the
    readable form of :func:`_messages`): ``out`` = the a, b, c, d and NoC energy arrays of
    :func:`plan_core`, written at ``sel``; ``pair(s, t)`` = the config's (ns, pJ) per flit."""
    a, b, c, d, noc_e = out
    for j, i in enumerate(sel.tolist()):
        r = int(peers[j])
        if kind == EV_SEND:
            if r == core:
                raise SimError("send to the own core", where=f"core {core}, pc {int(pcs[j])}")
            a[i] = prm.flit_ps(1, pair(core, r)[0])
            b[i] = prm.flit_ps(1, pair(r, core)[0])
            d[i] = prm.flit_ps(B[j], pair(core, r)[0])
            e_cr, e_rc = pair(core, r)[1], pair(r, core)[1]
            noc_e[i] = e_cr + e_rc + int(cdiv(int(B[j]), prm.bw)) * e_cr  # ready, answer, data
        elif kind == EV_RECV:
            if r == core:
                raise SimError("recv from the own core", where=f"core {core}, pc {int(pcs[j])}")
        elif kind == EV_SYNC:
            a[i] = prm.flit_ps(1, pair(core, r)[0])
            noc_e[i] = pair(core, r)[1]
    if kind == EV_SEND:
        c[sel] = prm.lmem.read(B)
    elif kind == EV_RECV:
        c[sel] = prm.lmem.write(B)


def _messages(kind: int, core: int, pcs: np.ndarray, peers: np.ndarray, B: np.ndarray, prm: Params,
              pair, out: tuple, sel: np.ndarray) -> None:
    """:func:`_messages_reference` per peer instead of per event: the peers are taken in the
    order of their first event, so the first bad event (own core, a NoC pair missing) raises the
    same error as event by event."""
    a, b, c, d, noc_e = out
    if kind == EV_RECV:
        own = np.flatnonzero(peers == core)
        if len(own):
            raise SimError("recv from the own core", where=f"core {core}, pc {int(pcs[own[0]])}")
        c[sel] = prm.lmem.write(B)
        return
    if kind not in (EV_SEND, EV_SYNC):
        return
    distinct, inv = peers_in_order(peers)
    for j, r in enumerate(distinct):
        if kind == EV_SEND:
            if r == core:
                raise SimError("send to the own core", where=f"core {core}, pc {int(pcs[np.argmax(inv == j)])}")
            pair(core, r), pair(r, core)
        else:
            pair(core, r)
    a[sel] = np.array([prm.flit_ps(1, pair(core, r)[0]) for r in distinct], np.int64)[inv]
    e_cr = np.array([pair(core, r)[1] for r in distinct])[inv]
    if kind == EV_SYNC:
        noc_e[sel] = e_cr
        return
    b[sel] = np.array([prm.flit_ps(1, pair(r, core)[0]) for r in distinct], np.int64)[inv]
    flits = cdiv(B, prm.bw)
    l_cr = np.array([pair(core, r)[0] for r in distinct])[inv]
    d[sel] = (flits * l_cr).astype(np.int64) * PS  # flit_ps: whole ns, truncated
    noc_e[sel] = e_cr + np.array([pair(r, core)[1] for r in distinct])[inv] + flits * e_cr  # ready, answer, data
    c[sel] = prm.lmem.read(B)


def peers_in_order(peers: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The distinct peers of some events in order of first use, and each event's index among them."""
    uniq, first, inv = np.unique(peers, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return uniq[order].tolist(), rank[inv.reshape(-1)]


def plan_core(core: int, rows: np.ndarray, prm: Params, cfg: PimConfig,
              agm: list[int], fast: bool = True, op: np.ndarray | None = None,
              split: bool | None = None) -> CorePlan:
    """Vectorised per-core precomputation (see :class:`CorePlan`).

    Per-event static values ``ev_a … ev_d`` (ps):

    * ld / sld: a = request flight to GM, b = GM read, c = local write (0 for sld);
    * st: a = local read, b = request flight (B bytes), c = GM write;
    * send: a = "ready" flight c→r, b = answer flight r→c, c = local read, d = data flight;
    * recv: c = local write;  sync: a = flight to the target core;  wait: –.

    ``op``: the core's opcodes as int64 when the caller has them (else read from ``rows``).
    ``split``: compute ``lr``/``nrd``/``mid``/``lw`` for the rob model (default: when the
    configuration's ``rob_size`` > 1; else they are None).
    """
    native = prm.native
    P = prm.P
    op = rows["op"].astype(np.int64) if op is None else op
    n = len(op)
    init = cfg.nnisa.init_widths(core) if native else (0, 0)
    fixed = cfg.nnisa.fixed_bitwidth if native and not cfg.nnisa.variable_bitwidth else None
    if split is None:  # the rob model's read/compute/write split: only the rob model reads it
        split = cfg.chip_config.core_config.rob_size > 1
    local = plan_local(rows, op, prm, init, fixed, agm, split) if fast else None
    if local is not None:
        ib, ob, X, start, inc, lbusy, p_lr, p_nrd, p_mid, p_lw, bad_grp, bad_mbiw = local
        if bad_grp >= 0:
            raise SimError(f"mvmul names array group {int(rows['group'][bad_grp])}, but the core has "
                           f"{len(agm)} groups", where=f"core {core}, pc {bad_grp}")
        if bad_mbiw >= 0:
            raise SimError("mvmul with mbiw 0", where=f"core {core}, pc {bad_mbiw}")
    else:
        ib, ob, X, start, inc, lbusy, p_lr, p_nrd, p_mid, p_lw = _plan_local_reference(core, rows, op, prm, init,
                                                                                        fixed, agm)
        if not split:
            p_lr = p_nrd = p_mid = p_lw = None
    warnings: list[str] = []
    # event instructions and nops, found by one table lookup
    ev_kind_all = _EVENT_OR_NOP[op] if n else np.zeros(0, np.int8)
    if native:
        ev_kind_all[op == OP_SLD] = EV_SLD
    marked = np.flatnonzero(ev_kind_all >= 0)
    is_nop = ev_kind_all[marked] == _NOP_MARK
    nops = marked[is_nop]
    ev_idx = marked[~is_nop] if len(nops) else marked
    # nop: pimsim-nn never retires it (the core hangs)
    hang = -1
    if len(nops) and not native:
        hang = int(nops[0])
        warnings.append(f"core {core}: nop at pc {hang} never retires in pimsim-nn; the core hangs")
    lm = prm.lmem
    if hang >= 0:
        ev_idx = ev_idx[ev_idx < hang]
    ev_kind = ev_kind_all[ev_idx].astype(np.int64)
    start[ev_idx] = P
    size = rows["len"][ev_idx].astype(np.int64)
    peer = rows["core"][ev_idx].astype(np.int64)
    m = len(ev_idx)
    a = np.zeros(m, np.int64)
    b = np.zeros(m, np.int64)
    c = np.zeros(m, np.int64)
    d = np.zeros(m, np.int64)
    gm = cfg.chip_config.core_config.global_memory_switch_id
    gmem = prm.gmem
    # the D13 key: k = 1-based index among the core's ld/st instructions
    is_gm = (ev_kind == EV_LD) | (ev_kind == EV_ST) | (ev_kind == EV_SLD)
    k = np.cumsum(is_gm)
    seed = cfg.nnisa.tie_seed
    key = fmix32(((core << 20) ^ k ^ seed) & 0xFFFFFFFF).astype(np.int64)
    cache: dict[tuple[int, int], tuple[float, float]] = {}
    noc_e = np.zeros(m)

    def pair(s, t):
        v = cache.get((s, t))
        if v is None:
            v = cache[(s, t)] = cfg.noc_pair(s, t)
        return v

    def lat(s, t):
        return pair(s, t)[0]

    for kind in np.flatnonzero(np.bincount(ev_kind, minlength=len(EVENT_NAMES))).tolist():
        sel = np.flatnonzero(ev_kind == kind)
        B = size[sel]
        if kind in (EV_LD, EV_SLD):
            if kind == EV_SLD:
                B = np.full(len(sel), 4, np.int64)
                size[sel] = 4
            a[sel] = prm.flit_ps(1, lat(core, gm))
            b[sel] = gmem.read(B)
            c[sel] = lm.write(B) if kind == EV_LD else 0
            noc_e[sel] = pair(core, gm)[1]  # 1-byte request (the response carries 0 bytes)
        elif kind == EV_ST:
            a[sel] = lm.read(B)
            L = lat(core, gm)
            b[sel] = (cdiv(B, prm.bw) * L).astype(np.int64) * PS
            c[sel] = gmem.write(B)
            noc_e[sel] = cdiv(B, prm.bw) * pair(core, gm)[1]
        else:
            messages = _messages if fast else _messages_reference
            messages(kind, core, ev_idx[sel], peer[sel], B, prm, pair, (a, b, c, d, noc_e), sel)
    pre = np.empty(n + 1, np.int64)
    pre[0] = 0
    np.cumsum(inc, out=pre[1:])
    return CorePlan(core=core, n=n, op=op, X=X, start=start, inc=inc, pre=pre, ibiw=ib, obiw=ob,
                    ev_idx=ev_idx.astype(np.int64), ev_kind=ev_kind, ev_a=a, ev_b=b, ev_c=c, ev_d=d,
                    ev_peer=peer, ev_size=size, ev_e=rows["ev"][ev_idx].astype(np.int64),
                    ev_v=rows["val"][ev_idx].astype(np.int64), ev_key=key, ev_noc_e=noc_e, hang=hang,
                    lmem_local=lbusy, lr=p_lr, nrd=p_nrd, mid=p_mid, lw=p_lw,
                    warnings=warnings)
