"""Lowering a PIMSAB program to timing operations (spec §3.3, §3.7).

Each instruction becomes one timing op of a kind the controller FSM knows (compute with a cycle
count T, load, store, send, receive, signal, wait) with its flit count, destination router and
message key.  The ablation rewrites of §3.7 happen here: shuffled loads become full-tile loads
(``shuffle=off``), constant operations are wrapped by a one-row spill
(``const_op_kick_out_1_row``), shifts become a full-tile store/load pair
(``cross_cram_shift=off``).  Values are not affected by these rewrites (the functional simulator
runs the original program).

The lowering is vectorised: per-row fields come from lookup tables over opcodes and precision
bytes, and compute cycle counts are evaluated once per distinct instruction shape
(:func:`.costs.compute_cycles`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import PimsabConfig
from ..isa import OPCODES, build_isa
from .. import precision as P
from ..program import PimsabProgram
from .costs import compute_cycles

ISA = build_isa()
COLS = ISA.columns

K_COMPUTE, K_LOAD, K_STORE, K_TX, K_RX, K_SIGNAL, K_WAIT = range(7)
KIND_NAMES = ("compute", "load", "store", "send", "receive", "signal", "wait")
DRAM_MN = tuple(s.mnemonic for s in ISA.instrs if s.category == "dram")
NET_MN = tuple(s.mnemonic for s in ISA.instrs if s.category == "network")
MN_NAMES = tuple(sorted(OPCODES, key=OPCODES.get))
MN_INDEX = {m: i for i, m in enumerate(MN_NAMES)}

_OP_MN = np.full(128, -1, np.int64)
for _m, _o in OPCODES.items():
    _OP_MN[_o] = MN_INDEX[_m]
#: timing-op kind of each mnemonic: the ``timing`` fact of the ISA table
_KIND_OF_MN = np.array([KIND_NAMES.index(ISA.fact(m, "timing")) for m in MN_NAMES], np.int64)
_BITS = np.array([P.decode(b).bits if P.valid_byte(b) else 0 for b in range(256)], np.int64)
_DRAM_BITS = np.array([P.decode(b).dram_bits if P.valid_byte(b) else 0 for b in range(256)], np.int64)
#: columns that decide the cycle count of a compute instruction
_COST_COLS = ("op", "pd", "pa", "pb", "levels", "dist", "pin", "px", "py")


@dataclass
class TimingOps:
    """Flat arrays of timing operations, grouped by tile stream (``start[t]:start[t+1]``)."""

    tiles: np.ndarray        # stream tile ids (ascending)
    start: np.ndarray        # offsets into the op arrays, len(tiles) + 1
    kind: np.ndarray         # K_*
    cycles: np.ndarray       # T (compute) ; 0 otherwise
    flits: np.ndarray        # flits of the transfer (loads: data flits)
    dst: np.ndarray          # destination router (sends, store/load DRAM router, signals)
    key: np.ndarray          # message key (send/receive/signal/wait; loads: per-tile key)
    bypass: np.ndarray       # 1: skip the DRAM request model
    row: np.ndarray          # source instruction index (-1: inserted by an ablation rewrite)
    mnem: np.ndarray         # mnemonic index (MN_NAMES)
    dram_rd: np.ndarray      # DRAM bits read by the op
    dram_wr: np.ndarray      # DRAM bits written by the op
    n_keys: int

    def __len__(self) -> int:
        return len(self.kind)


def classify(mnem_idx: np.ndarray) -> np.ndarray:
    """Fig. 18 class per op: 0 compute, 1 DRAM, 2 network."""
    names = np.array(MN_NAMES)[mnem_idx]
    return np.where(np.isin(names, DRAM_MN), 1, np.where(np.isin(names, NET_MN), 2, 0))


def _ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -(-a // b)


def group_rows(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an int64 matrix: (index of one representative per group, group of every
    row).  Rows are hashed to one int64 first (fast 1-D unique); a hash collision falls back to
    an exact row-wise unique."""
    if len(mat) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    mat = np.ascontiguousarray(mat, np.int64)
    h = np.full(len(mat), 1469598103934665603, np.uint64)
    with np.errstate(over="ignore"):
        for j in range(mat.shape[1]):
            h = (h ^ mat[:, j].astype(np.uint64)) * np.uint64(1099511628211)
            h ^= h >> np.uint64(29)
    _, rep, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if not np.array_equal(mat, mat[rep[inv]]):
        _, rep, inv = np.unique(mat, axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
    return rep, inv


def _keys(*cols: np.ndarray) -> np.ndarray:
    """Dense ids of the distinct tuples of the given integer columns."""
    if len(cols[0]) == 0:
        return np.zeros(0, np.int64)
    return group_rows(np.stack([c.astype(np.int64) for c in cols], axis=1))[1]


def _compute_cycles(rows: np.ndarray, idx: np.ndarray, cfg: PimsabConfig,
                    rf_values: dict[int, tuple[int, ...]] | None) -> np.ndarray:
    """Cycle counts of the compute rows ``idx``: one formula evaluation per distinct shape."""
    out = np.zeros(len(idx), np.int64)
    if len(idx) == 0:
        return out
    sub = rows[idx]
    shapes = np.stack([sub[c].astype(np.int64) for c in _COST_COLS], axis=1)
    rep, inv = group_rows(shapes)
    vals = np.zeros(len(rep), np.int64)
    for u, shape in enumerate(shapes[rep].tolist()):
        ins = dict(zip(COLS, (0,) * len(COLS)))
        ins.update(zip(_COST_COLS, shape))
        vals[u] = compute_cycles(MN_NAMES[_OP_MN[shape[0]]], ins, cfg)
    out[:] = vals[inv]
    if rf_values and cfg.cycle_mode == "bitexact":  # data-dependent mul_const / dot_const
        pos = {int(i): j for j, i in enumerate(idx.tolist())}
        for i, values in rf_values.items():
            j = pos.get(int(i))
            if j is not None:
                out[j] = compute_cycles(MN_NAMES[_OP_MN[rows["op"][i]]], dict(zip(COLS, rows[i].tolist())), cfg,
                                        values)
    return out


def lower(prog: PimsabProgram, cfg: PimsabConfig, rf_values: dict[int, tuple[int, ...]] | None = None) -> TimingOps:
    """Timing operations of every stream (ablations applied); ``rf_values`` maps instruction
    indices to the RF constants of ``bitexact`` ``mul_const``/``dot_const``."""
    rows, tiles = prog.rows, prog.tiles.astype(np.int64)
    W, link = cfg.tile_bitlines, cfg.link_bits
    order = np.argsort(tiles, kind="stable")
    stream_tiles, counts = np.unique(tiles, return_counts=True)
    op = rows["op"].astype(np.int64)
    mn = _OP_MN[op]
    halt = mn == MN_INDEX["halt"]
    if halt.any():  # a stream ends at its first halt
        keep = np.ones(len(rows), bool)
        for t in np.unique(tiles[halt]).tolist():
            idx = np.flatnonzero(tiles == t)
            first = idx[np.argmax(halt[idx])]
            keep[idx[idx >= first]] = False
        order = order[keep[order]]
    n = len(rows)
    kind = _KIND_OF_MN[mn]
    size = rows["size"].astype(np.int64)
    elems = np.where(size == 0, W, size)
    p = rows["p"].astype(np.int64)
    dram_bits = _DRAM_BITS[p]
    cycles = np.zeros(n, np.int64)
    flits = np.zeros(n, np.int64)
    dram_rd = np.zeros(n, np.int64)
    dram_wr = np.zeros(n, np.int64)
    is_shf = mn == MN_INDEX["load_shf"]
    if is_shf.any():
        shf_n = np.where(rows["bcast"] == 1, cfg.cram_cols,
                         np.where(rows["shf_en"] == 1, cfg.crams_per_tile << rows["shf"].astype(np.int64), elems))
        elems = np.where(is_shf, W if not cfg.shuffle else shf_n, elems)
    cram_xfer = np.isin(mn, [MN_INDEX[m] for m in ("load", "load_shf", "store")])
    bits = dram_bits * elems
    flits = np.where(cram_xfer, _ceil_div(bits, link), flits)
    dram_rd = np.where(cram_xfer & (mn != MN_INDEX["store"]), bits, dram_rd)
    dram_wr = np.where(mn == MN_INDEX["store"], bits, dram_wr)
    rf_x = np.isin(mn, [MN_INDEX["load_rf"], MN_INDEX["store_rf"]])
    rf_bits = np.where(size == 0, 32 * cfg.rf_bits, size * dram_bits)
    flits = np.where(rf_x, np.where(size == 0, cfg.rf_transfer_flits, _ceil_div(size, link)), flits)
    dram_rd = np.where(mn == MN_INDEX["load_rf"], rf_bits, dram_rd)
    dram_wr = np.where(mn == MN_INDEX["store_rf"], rf_bits, dram_wr)
    net = np.isin(mn, [MN_INDEX["tile_tx"], MN_INDEX["tile_rx"]])
    net_bits = np.where(rows["rf"] == 1, 32 * cfg.rf_bits, _BITS[p] * elems)
    flits = np.where(net, _ceil_div(net_bits, link), flits)
    sync = np.isin(mn, [MN_INDEX["signal"], MN_INDEX["wait"]])
    flits = np.where(sync, 1, flits)
    local = np.isin(mn, [MN_INDEX["cram_tx_rx"], MN_INDEX["cram_bcast"]])
    cycles = np.where(local, _BITS[p], cycles)
    cycles = np.where(mn == MN_INDEX["reset_sync"], 1, cycles)
    formula = (kind == K_COMPUTE) & ~local & (mn != MN_INDEX["reset_sync"]) & ~halt
    fidx = np.flatnonzero(formula)
    cycles[fidx] = _compute_cycles(rows, fidx, cfg, rf_values)
    dram_router = tiles % cfg.mesh_width if cfg.dram_distributed else np.full(n, cfg.dram_tile, np.int64)
    dst = np.where(np.isin(kind, (K_LOAD, K_STORE)), dram_router,
                   np.where(np.isin(kind, (K_TX, K_SIGNAL)), rows["dst_tile"].astype(np.int64), 0))
    key = np.zeros(n, np.int64)
    msg = net
    key[msg] = _keys(rows["src_tile"][msg], rows["src_row"][msg], rows["dst_tile"][msg], rows["dst_row"][msg])
    n_keys = int(key[msg].max()) + 1 if msg.any() else 0
    if sync.any():
        key[sync] = n_keys + _keys(rows["src_tile"][sync], rows["src_cram"][sync], rows["dst_tile"][sync],
                                   rows["dst_cram"][sync], rows["tag"][sync])
        n_keys = int(key[sync].max()) + 1
    load = kind == K_LOAD
    key[load] = n_keys + tiles[load]
    n_keys += cfg.n_tiles
    fields = dict(kind=kind, cycles=cycles, flits=flits, dst=dst, key=key, bypass=np.zeros(n, np.int64),
                  row=np.arange(n, dtype=np.int64), mnem=mn, dram_rd=dram_rd, dram_wr=dram_wr)
    fields = {k: v[order] for k, v in fields.items()}
    op_tiles = tiles[order]
    fields, op_tiles = _ablations(fields, op_tiles, rows, cfg, n_keys)
    stream_tiles, counts = np.unique(op_tiles, return_counts=True)
    start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return TimingOps(stream_tiles.astype(np.int64), start, n_keys=n_keys, **fields)


def _ablations(f: dict[str, np.ndarray], op_tiles: np.ndarray, rows: np.ndarray, cfg: PimsabConfig, n_keys: int):
    """Insert the store/load pairs of ``cross_cram_shift=off`` and the one-row spills of
    ``const_op_kick_out_1_row`` (spec §3.7)."""
    W, link = cfg.tile_bitlines, cfg.link_bits
    mn = f["mnem"]
    shift = (mn == MN_INDEX["shift"]) & (not cfg.cross_cram_shift)
    spill = np.isin(mn, [MN_INDEX[m] for m in ("mul_const", "add_const", "dot_const")]) \
        & (not cfg.const_op) & cfg.const_op_kick_out_1_row
    if not (shift.any() or spill.any()):
        return f, op_tiles
    reps = np.where(shift, 2, np.where(spill, 3, 1))
    pos = np.repeat(np.arange(len(mn)), reps)
    within = np.arange(len(pos)) - np.repeat(np.cumsum(reps) - reps, reps)
    g = {k: v[pos].copy() for k, v in f.items()}
    tiles = op_tiles[pos]
    dram_router = tiles % cfg.mesh_width if cfg.dram_distributed else np.full(len(tiles), cfg.dram_tile, np.int64)
    src_shift, src_spill = shift[pos], spill[pos]
    wbits = np.where(src_shift, _DRAM_BITS[rows["pa"].astype(np.int64)[np.maximum(g["row"], 0)]] * W, W)
    is_store = (src_shift & (within == 0)) | (src_spill & (within == 0))
    is_load = (src_shift & (within == 1)) | (src_spill & (within == 2))
    for sel, kind, name in ((is_store, K_STORE, "store"), (is_load, K_LOAD, "load")):
        g["kind"][sel] = kind
        g["cycles"][sel] = 0
        g["flits"][sel] = _ceil_div(wbits[sel], link)
        g["dst"][sel] = dram_router[sel]
        g["mnem"][sel] = MN_INDEX[name]
        g["bypass"][sel] = int(cfg.bypass_dram) * src_shift[sel]
        g["dram_rd"][sel] = wbits[sel] if kind == K_LOAD else 0
        g["dram_wr"][sel] = wbits[sel] if kind == K_STORE else 0
    g["key"][is_load] = n_keys - cfg.n_tiles + tiles[is_load]
    g["row"][is_load | (src_spill & (within == 0))] = -1
    return g, tiles
