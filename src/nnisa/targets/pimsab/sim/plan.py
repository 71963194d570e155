"""Static plan of a batched functional run: the instruction stream lowered once into arrays.

A PIMSAB program's control never depends on data, so everything but the values is known before
it runs:

* the **execution order** — the round-robin order of :func:`.machine.run_functional` (each tile
  runs until a ``tile_rx`` finds no message or a ``wait`` an empty mailbox), found by replaying
  only the messages and mailboxes; a deadlock is found here too and raised after the
  instructions that run before it;
* the **message slots** — which ``tile_tx`` each ``tile_rx`` takes (the FIFO per
  (source tile, source row, destination tile, destination row)) and where its payload waits in a
  message buffer (slots are reused once received);
* each tile's **extent** — the largest bitline any of its instructions reads (plus the bitlines
  its compute instructions write), so that the state holds only those bitlines (a layer on 256
  bitlines of a 65,536-bitline tile keeps 256 columns);
* the **DRAM ranges** every instruction touches (:class:`.batch.FlatDram` is laid out from them);
* one int64 row of operands per instruction (:data:`COLUMNS`) for the interpreter
  (:mod:`.interp_nb`), or the opcode :data:`PY` for the instructions it leaves to the reference
  semantics in Python (floats, and anything the reference would reject with an error, so that the
  error and its message come from the reference code).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

import numpy as np

from ....core.errors import DeadlockError
from ..config import PimsabConfig
from ..isa import build_isa
from ..precision import FLOAT, valid_byte
from ..program import PimsabProgram

ISA = build_isa()
OPC = {m: r.opcode for m, r in ISA.by_mnemonic.items()}
PY = 255            #: kernel opcode: run this instruction with the reference semantics (Python)
ADDR_LIMIT = 1 << 48

#: operand columns of the instruction matrix (meaning per instruction kind in :mod:`.interp_nb`)
COLUMNS = ("op", "t", "n", "pred", "rd", "ra", "rb", "rs", "pd", "sd", "pa", "sa", "pb", "sb", "pc", "sc",
           "pe", "se", "x0", "x1", "x2", "x3", "addr", "dbytes", "doff", "down", "moff")
COL = {c: i for i, c in enumerate(COLUMNS)}

BINARY = ("add", "sub", "mult", "max", "min", "and", "or", "xor")
ELEMENTWISE = BINARY + ("not", "copy", "set", "reset", "set_mask", "shift", "cram_local_shf", "mac", "mul_const",
                        "add_const", "dot_const", "popcount_rf", "reduce_cram", "reduce_tile")
CONTROL = ("nop", "read_rf", "signal", "wait", "reset_sync", "halt")
DRAM_OPS = ("load", "store", "load_shf", "load_rf", "store_rf")


def _precision_table() -> np.ndarray:
    """(256, 3) int64: storage bits (-1 invalid), signed, float of every precision byte."""
    from ..precision import decode
    t = np.full((256, 3), -1, np.int64)
    for b in range(256):
        if valid_byte(b):
            p = decode(b)
            t[b] = (p.bits, int(p.signed), int(p.kind == FLOAT))
    return t


PREC = _precision_table()


@dataclass
class FunctionalPlan:
    """Everything a batched run needs besides the values (see the module docstring)."""

    order: np.ndarray          #: instruction indices in execution order
    code: np.ndarray           #: (len(order), len(COLUMNS)) int64 operand rows, in execution order
    tiles: np.ndarray          #: tile id of each dense tile index
    extents: np.ndarray        #: bitlines kept per dense tile (multiple of 8)
    bases: np.ndarray          #: first column of each dense tile in the state arrays
    msg_words: int             #: words of the message buffer (per sample)
    deadlock: DeadlockError | None   #: raised after the order has run
    stores: list[tuple[int, int]]    #: (address, bytes) of every DRAM store, in execution order

    @property
    def columns(self) -> int:
        return int(self.bases[-1] + self.extents[-1]) if len(self.extents) else 0


def _spread_source_max(cfg: PimsabConfig, mode: np.ndarray, G: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Largest source element a spread write (mode 1 bcast, 2 bcast+shuffle, 3 shuffle) reads for
    the bitlines [0, E)."""
    cols = cfg.cram_cols
    last = np.maximum(E, 1) - 1
    full = E >= cols
    b_max = np.where(full, cols - 1, last % cols)
    out = np.where(mode == 1, b_max, 0)
    out = np.where(mode == 2, np.where(b_max >= G, G - 1, b_max), out)
    shf = (last // cols) * G + np.minimum(G - 1, last % cols)   # the last CRAM's largest
    return np.where(mode == 3, shf, out)


def build_plan(prog: PimsabProgram, cfg: PimsabConfig) -> FunctionalPlan:
    """Lower ``prog`` for a batched run under ``cfg`` (see the module docstring)."""
    r = prog.rows
    K = len(r)
    W, R, cols, crams, regs = cfg.tile_bitlines, cfg.cram_rows, cfg.cram_cols, cfg.crams_per_tile, cfg.rf_regs
    f = {c: r[c].astype(np.int64) for c in ISA.columns}
    op = f["op"]
    is_ = {m: op == o for m, o in OPC.items()}

    def any_of(names):
        return np.logical_or.reduce([is_[m] for m in names]) if names else np.zeros(K, bool)

    code = np.zeros((K, len(COLUMNS)), np.int64)
    C = {c: code[:, i] for c, i in COL.items()}       # column views
    C["op"][:] = op
    tile_ids, C["t"][:] = np.unique(prog.tiles, return_inverse=True) if K else (np.zeros(0, np.int64), 0)
    n = np.where(f["size"] == 0, W, f["size"])
    C["n"][:] = n
    C["pred"][:] = f["pred"]
    for dst, src in (("rd", "rd"), ("ra", "ra"), ("rb", "rb"), ("rs", "scratch")):
        C[dst][:] = f[src]
    prec = {k: PREC[f[k] & 255] for k in ("pd", "pa", "pb", "pin", "px", "py", "p")}
    for (pc, sc), src in ((("pd", "sd"), "pd"), (("pa", "sa"), "pa"), (("pb", "sb"), "pb")):
        C[pc][:], C[sc][:] = prec[src][:, 0], prec[src][:, 1]
    py = np.zeros(K, bool)                            # instructions left to Python
    need = np.zeros(K, np.int64)                      # bitlines read (extent)

    def rows_bad(row, bits):
        return (row < 0) | (bits < 1) | (row + bits > R)

    def overlap(d0, dn, s0, sn):
        return (s0 != d0) & (s0 < d0 + dn) & (d0 < s0 + sn)

    # ---------------------------------------------------------------- compute instructions
    comp = any_of(ELEMENTWISE)
    uses_b = any_of(BINARY + ("dot_const", "mac"))
    uses_a = comp & ~any_of(("set", "reset"))
    writes_d = comp & ~any_of(("set_mask", "popcount_rf"))
    bad = comp & (n > W)
    bad |= writes_d & (rows_bad(f["rd"], prec["pd"][:, 0]) | (prec["pd"][:, 2] == 1))
    bad |= uses_a & (rows_bad(f["ra"], np.where(is_["set_mask"], 1, prec["pa"][:, 0])) | (prec["pa"][:, 2] == 1))
    bad |= uses_b & (rows_bad(f["rb"], prec["pb"][:, 0]) | (prec["pb"][:, 2] == 1))
    pdb, pab, pbb = prec["pd"][:, 0], prec["pa"][:, 0], prec["pb"][:, 0]
    two = uses_a & writes_d
    bad |= two & overlap(f["rd"], pdb, f["ra"], pab)
    bad |= uses_b & ~is_["mac"] & overlap(f["rd"], pdb, f["rb"], pbb)
    # mac: accumulator at pin, scratch rows
    mac = is_["mac"]
    pin = prec["pin"]
    sbits = (pab + pbb + 1) // 2
    dmax = np.maximum(pdb, pin[:, 0])
    bad |= mac & (rows_bad(f["rd"], pin[:, 0]) | (pin[:, 2] == 1) | rows_bad(f["scratch"], sbits))
    bad |= mac & (overlap(f["rd"], dmax, f["ra"], pab) | overlap(f["rd"], dmax, f["rb"], pbb)
                  | overlap(f["rd"], dmax, f["scratch"], sbits) | overlap(f["scratch"], sbits, f["ra"], pab)
                  | overlap(f["scratch"], sbits, f["rb"], pbb))
    C["pc"][:] = np.where(mac, pin[:, 0], C["pc"])
    C["sc"][:] = np.where(mac, pin[:, 1], C["sc"])
    C["x0"][:] = np.where(mac, sbits, 0)
    # constants from the RF
    const = any_of(("mul_const", "add_const"))
    bad |= const & ((f["rb"] >= regs) | (prec["pb"][:, 0] < 1) | (prec["pb"][:, 2] == 1))
    dot = is_["dot_const"]
    bad |= dot & ((f["xrf"] >= regs) | (f["yrf"] >= regs) | (prec["px"][:, 0] < 1) | (prec["py"][:, 0] < 1)
                  | (prec["px"][:, 2] == 1) | (prec["py"][:, 2] == 1))
    for ci, si, src in (("pc", "sc", "px"), ("pe", "se", "py")):
        C[ci][:] = np.where(dot, prec[src][:, 0], C[ci])
        C[si][:] = np.where(dot, prec[src][:, 1], C[si])
    C["x0"][:] = np.where(dot, f["xrf"], C["x0"])
    C["x1"][:] = np.where(dot, f["yrf"], C["x1"])
    bad |= is_["popcount_rf"] & (f["rd"] >= regs)
    # shift, reductions, local shuffle
    sh = is_["shift"]
    C["x0"][:] = np.where(sh, f["dist"] + 1, C["x0"])
    C["x1"][:] = np.where(sh, f["dir"], C["x1"])
    g = np.left_shift(1, np.clip(f["levels"], 0, 30))
    red_c, red_t, local = is_["reduce_cram"], is_["reduce_tile"], is_["cram_local_shf"]
    C["x0"][:] = np.where(red_c | red_t, g, C["x0"])
    bad |= red_c & (cols % g != 0)
    bad |= red_t & (crams % g != 0)
    G = np.left_shift(1, np.clip(f["shf"], 0, 30))
    C["x0"][:] = np.where(local, G, C["x0"])
    need = np.where(comp, n, need)
    need = np.where(red_c, -(-n // g) * g, need)
    need = np.where(red_t, -(-n // (g * cols)) * (g * cols), need)
    # RF scalar instructions
    rfs = any_of(("write_rf", "add_rf", "sub_rf"))
    bad |= rfs & ((f["rd"] >= regs) | (~is_["write_rf"] & ((f["ra"] >= regs) | (f["rb"] >= regs))))
    C["x0"][:] = np.where(is_["write_rf"], f["imm"] & 0xFFFFFFFF, C["x0"])

    # ---------------------------------------------------------------- data movement
    pbits, psigned, pfloat = prec["p"][:, 0], prec["p"][:, 1], prec["p"][:, 2]
    dram_w = np.where(pfloat == 1, np.where((f["p"] & 63) == 0, 32, 16),
                      np.where(np.isin(pbits, (1, 2, 4, 8)), pbits, 8 * -(-pbits // 8)))
    moves = any_of(DRAM_OPS + ("cram_tx_rx", "cram_bcast", "tile_tx", "tile_rx"))
    uses_p = moves & ~(any_of(("load_rf", "store_rf")) & (f["size"] == 0)) & ~((is_["tile_tx"] | is_["tile_rx"]) & (f["rf"] == 1))
    bad |= uses_p & (pbits < 1)
    C["pd"][:] = np.where(moves, pbits, C["pd"])
    C["sd"][:] = np.where(moves, np.where(pfloat == 1, 0, psigned), C["sd"])
    C["x1"][:] = np.where(any_of(DRAM_OPS), dram_w, C["x1"])
    C["x2"][:] = np.where(any_of(DRAM_OPS), f["tr"], C["x2"])
    ld_st = any_of(("load", "store"))
    start = f["cram"] * cols
    C["rd"][:] = np.where(any_of(DRAM_OPS), f["row"], C["rd"])
    C["x0"][:] = np.where(ld_st, start, C["x0"])
    bad |= ld_st & (rows_bad(f["row"], pbits) | (start + n > W) | (start < 0))
    need = np.where(is_["store"], start + n, need)
    # load_shf / tile_rx spreads: mode 0 plain, 1 bcast, 2 bcast + shuffle, 3 shuffle
    mode = np.where(f["bcast"] == 1, np.where(f["shf_en"] == 1, 2, 1), np.where(f["shf_en"] == 1, 3, 0))
    count = np.where(f["bcast"] == 1, cols, np.where(f["shf_en"] == 1, crams * G, n))
    lshf = is_["load_shf"]
    C["n"][:] = np.where(lshf, count, C["n"])
    C["x3"][:] = np.where(lshf | is_["tile_rx"], mode, 0)
    C["x0"][:] = np.where(lshf | is_["tile_rx"] | is_["tile_tx"], G, C["x0"])
    bad |= lshf & rows_bad(f["row"], pbits)
    # RF transfers
    rft = any_of(("load_rf", "store_rf"))
    C["n"][:] = np.where(rft, f["size"], C["n"])
    bad |= rft & (f["size"] > 0) & ((f["row"] + f["size"] > regs) | (f["row"] < 0))
    # DRAM byte ranges
    elem_bytes = (C["n"] * dram_w + 7) // 8
    plane_bytes = pbits * ((C["n"] + 7) // 8)
    nbytes = np.where(f["tr"] == 1, elem_bytes, plane_bytes)
    nbytes = np.where(rft, np.where(f["size"] == 0, 4 * regs, elem_bytes), nbytes)
    dram = any_of(DRAM_OPS)
    C["addr"][:] = np.where(dram, f["addr"], 0)
    C["dbytes"][:] = np.where(dram, nbytes, 0)
    bad |= dram & ((f["addr"] < 0) | (f["addr"] + nbytes > ADDR_LIMIT))
    # CRAM-to-CRAM
    ctr, cbc = is_["cram_tx_rx"], is_["cram_bcast"]
    C["ra"][:] = np.where(ctr | cbc | is_["tile_tx"], f["src_row"], C["ra"])
    C["rd"][:] = np.where(ctr | cbc | is_["tile_rx"], f["dst_row"], C["rd"])
    C["x0"][:] = np.where(ctr, f["src_cram"] * cols, C["x0"])
    C["x1"][:] = np.where(ctr, f["dst_cram"] * cols, C["x1"])
    C["n"][:] = np.where(ctr | cbc, cols, C["n"])
    bad |= (ctr | cbc) & (rows_bad(f["src_row"], pbits) | rows_bad(f["dst_row"], pbits))
    bad |= ctr & ((f["src_cram"] >= crams) | (f["dst_cram"] >= crams))
    need = np.where(ctr, f["src_cram"] * cols + cols, need)
    need = np.where(cbc, cols, need)
    # tile-to-tile: tx mode 0 plain, 1 shuffle (one group per CRAM), 2 RF image
    tx, rx = is_["tile_tx"], is_["tile_rx"]
    msg = tx | rx
    tx_count = np.where(f["rf"] == 1, regs, np.where(f["shf_en"] == 1, crams * G, n))
    C["n"][:] = np.where(msg, tx_count, C["n"])
    C["x3"][:] = np.where(rx & (f["rf"] == 1), 4, C["x3"])
    C["x1"][:] = np.where(tx, np.where(f["rf"] == 1, 2, f["shf_en"]), C["x1"])
    bad |= msg & (f["rf"] == 0) & rows_bad(np.where(tx, f["src_row"], f["dst_row"]), pbits)
    bad |= tx & (f["rf"] == 0) & (f["shf_en"] == 1) & ((crams - 1) * cols + G > W)
    need = np.where(tx & (f["rf"] == 0), np.where(f["shf_en"] == 1, (crams - 1) * cols + G, n), need)

    # ---------------------------------------------------------------- extents
    T = len(tile_ids)
    ext = np.zeros(T, np.int64)
    if K:
        np.maximum.at(ext, C["t"], np.minimum(need, W))
    ext = np.minimum((ext + 7) // 8 * 8, W)
    ext = np.maximum(ext, 8)
    # spread writes whose sources run short of the bitlines kept are left to the reference
    spread = (lshf | rx) & (C["x3"] >= 1) & (C["x3"] <= 3)
    bad |= spread & (_spread_source_max(cfg, C["x3"], G, ext[C["t"]] if K else need) >= C["n"])

    known = any_of(tuple(OPC))
    py |= bad | ~known
    order, deadlock, slots, pairs, msg_words = _schedule(prog, f, tx_count, cfg)
    for tx_i, rx_i in pairs:        # a message runs in Python at both ends or at neither
        if py[tx_i] or py[rx_i] or (f["size"][tx_i], f["p"][tx_i], f["rf"][tx_i]) != \
                (f["size"][rx_i], f["p"][rx_i], f["rf"][rx_i]):
            py[tx_i] = py[rx_i] = True
    C["moff"][:] = slots
    C["op"][:] = np.where(py, PY, np.where(any_of(CONTROL), OPC["nop"], op))
    bases = np.concatenate(([0], np.cumsum(ext)[:-1])).astype(np.int64) if T else np.zeros(0, np.int64)
    st = order[(is_["store"] | is_["store_rf"])[order] & ~py[order]]
    stores = list(zip(f["addr"][st].tolist(), nbytes[st].tolist()))
    return FunctionalPlan(order, code[order], tile_ids, ext, bases, msg_words, deadlock, stores)


def _schedule(prog: PimsabProgram, f: dict, tx_count: np.ndarray, cfg: PimsabConfig):
    """The round-robin execution order of :func:`.machine.run_functional` (each tile runs until it
    blocks), the message slot of every ``tile_tx``/``tile_rx``, the (tx, rx) pairs, the message
    buffer size and the deadlock (or None)."""
    from .machine import _where
    K = len(prog)
    op = f["op"]
    events = {OPC[m] for m in ("tile_tx", "tile_rx", "signal", "wait", "reset_sync", "halt")}
    is_event = np.isin(op, list(events))
    streams = {t: prog.stream(t) for t in prog.stream_tiles()}
    ev_pos = {t: np.flatnonzero(is_event[idx]) for t, idx in streams.items()}
    pcs = {t: 0 for t in streams}
    halted: set[int] = set()
    queues: dict[tuple, deque] = {}
    mailbox: Counter = Counter()
    chunks: list[np.ndarray] = []
    slots = np.zeros(K, np.int64)
    pairs: list[tuple[int, int]] = []
    alloc = _SlotAllocator()
    TX, RX, SIG, WAIT, RST, HALT = (OPC[m] for m in ("tile_tx", "tile_rx", "signal", "wait", "reset_sync", "halt"))
    deadlock = None
    while True:
        progress = False
        for t, idx in streams.items():
            pc, evs = pcs[t], ev_pos[t]
            while pc < len(idx) and t not in halted:
                k = np.searchsorted(evs, pc)
                e = int(evs[k]) if k < len(evs) else len(idx)
                if e > pc:
                    chunks.append(idx[pc:e])
                    pc, progress = e, True
                    if pc == len(idx):
                        break
                i = int(idx[pc])
                o = op[i]
                if o == RX:
                    key = (f["src_tile"][i], f["src_row"][i], f["dst_tile"][i], f["dst_row"][i])
                    q = queues.get(key)
                    if not q:
                        break
                    j = q.popleft()
                    slots[i] = slots[j]
                    alloc.free(slots[j], tx_count[j])
                    pairs.append((j, i))
                elif o == WAIT:
                    key = (f["src_tile"][i], f["src_cram"][i], t, f["dst_cram"][i], f["tag"][i])
                    if mailbox[key] <= 0:
                        break
                    mailbox[key] -= 1
                elif o == SIG:
                    mailbox[(f["src_tile"][i], f["src_cram"][i], f["dst_tile"][i], f["dst_cram"][i], f["tag"][i])] += 1
                elif o == RST:
                    for key in [k_ for k_ in mailbox if k_[2] == t]:
                        del mailbox[key]
                elif o == TX:
                    key = (f["src_tile"][i], f["src_row"][i], f["dst_tile"][i], f["dst_row"][i])
                    queues.setdefault(key, deque()).append(i)
                    slots[i] = alloc.alloc(int(tx_count[i]))
                elif o == HALT:
                    halted.add(t)
                chunks.append(np.array([i]))
                pc += 1
                progress = True
            pcs[t] = pc
        left = {t: int(idx[pcs[t]]) for t, idx in streams.items() if pcs[t] < len(idx) and t not in halted}
        if not left:
            break
        if not progress:
            lines = [f"  {_where(prog, i, t)}: blocked" for t, i in sorted(left.items())]
            first_t, first_i = min(left.items())
            deadlock = DeadlockError(f"deadlock: {len(left)} tile stream(s) blocked forever, first "
                                     f"{_where(prog, first_i, first_t)}", report="\n".join(lines))
            break
    order = np.concatenate(chunks).astype(np.int64) if chunks else np.zeros(0, np.int64)
    return order, deadlock, slots, pairs, alloc.size


class _SlotAllocator:
    """First-fit allocation of message payloads (words) in one buffer, reused once received."""

    def __init__(self) -> None:
        self.free_blocks: list[list[int]] = []     # sorted [start, length]
        self.size = 0

    def alloc(self, n: int) -> int:
        for blk in self.free_blocks:
            if blk[1] >= n:
                start = blk[0]
                blk[0] += n
                blk[1] -= n
                if blk[1] == 0:
                    self.free_blocks.remove(blk)
                return start
        if self.free_blocks and self.free_blocks[-1][0] + self.free_blocks[-1][1] == self.size:
            start = self.free_blocks.pop()[0]      # grow the free tail
        else:
            start = self.size
        self.size = start + n
        return start

    def free(self, start: int, n: int) -> None:
        import bisect
        blocks = self.free_blocks
        k = bisect.bisect_left(blocks, [start, n])
        blocks.insert(k, [int(start), int(n)])
        # merge with neighbours
        if k + 1 < len(blocks) and blocks[k][0] + blocks[k][1] == blocks[k + 1][0]:
            blocks[k][1] += blocks.pop(k + 1)[1]
        if k > 0 and blocks[k - 1][0] + blocks[k - 1][1] == blocks[k][0]:
            blocks[k - 1][1] += blocks.pop(k)[1]
