"""The functional PIMSAB machine: tiles, DRAM, messages and mailboxes (spec §2.7.5–§2.7.7).

:class:`Machine` executes one instruction at a time (:meth:`Machine.step`); a receive whose
message has not been sent yet, or a ``wait`` on an empty mailbox, returns ``False`` (blocked).
:func:`run_functional` runs every tile's stream until each ends: in a given event order (the
timing model's, so values follow simulated time) or, without one, round-robin (each tile runs
until it blocks).  No progress with streams left is a deadlock.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from typing import Any, Iterable

import numpy as np

from ....core.errors import DeadlockError, NnisaError, SimError
from ..config import PimsabConfig
from ..isa import build_isa
from ..precision import decode
from ..program import PimsabProgram, shuffle_size
from .compute import HANDLERS
from .cram import TileState, bits_to_patterns, patterns_to_bits
from .dram import Dram, element_bytes, pack_elements, pack_planes, unpack_elements, unpack_planes
from .values import extend

ISA = build_isa()
COLS = ISA.columns


class Machine:
    """Architectural state of a PIMSAB chip plus the functional semantics of every instruction.

    ``batch=None`` is the readable single-sample reference (:class:`.cram.TileState`, bit rows
    unpacked with NumPy).  ``batch=B`` runs B samples of the same program at once: the control
    flow of a PIMSAB program does not depend on data, so every state array gets a leading sample
    axis (:mod:`.batch`: packed rows shared by all samples until one writes its own data, compiled
    bit/word kernels); the semantics below are the same code for both.
    """

    def __init__(self, cfg: PimsabConfig, segments: Iterable[tuple[int, bytes]] = (),
                 batch: int | None = None) -> None:
        self.cfg = cfg
        self.batch = batch
        if batch is None:
            self.dram, self._tile_state = Dram(), TileState
        else:
            from .batch import BatchDram, BatchTileState
            self.dram = BatchDram(batch)
            self._tile_state = lambda cfg, t: BatchTileState(cfg, t, batch)
        for addr, data in segments:
            self.dram.write(addr, data, record=False)
        self.tiles: dict[int, TileState] = {}
        self.messages: dict[tuple, deque] = defaultdict(deque)
        self.mailbox: Counter = Counter()
        self.executed = 0
        self._spread_cache: dict[tuple, np.ndarray] = {}   # (bcast, shf_en, shf) → source bitlines

    def tile(self, t: int) -> TileState:
        ts = self.tiles.get(t)
        if ts is None:
            ts = self.tiles[t] = self._tile_state(self.cfg, t)
        return ts

    # ------------------------------------------------------------------ one instruction
    def step(self, tile: int, row: tuple) -> bool:
        """Execute one instruction of ``tile``'s stream; ``False`` when it must wait."""
        ins = dict(zip(COLS, row))
        mn = ISA.by_opcode[ins["op"]].mnemonic
        ts = self.tile(tile)
        h = HANDLERS.get(mn)
        if h is not None:
            h(ts, ins)
        elif mn in ("load", "store", "load_shf"):
            self._cram_dram(ts, ins, mn)
        elif mn in ("load_rf", "store_rf"):
            self._rf_dram(ts, ins, mn)
        elif mn == "cram_tx_rx":
            bits = ts.read_cram(ins["src_cram"], ins["src_row"], decode(ins["p"]).bits)
            ts.write_bits(ins["dst_row"], bits, ins["dst_cram"] * ts.cols)
        elif mn == "cram_bcast":
            bits = ts.read_cram(0, ins["src_row"], decode(ins["p"]).bits)
            for c in range(1, ts.crams):
                ts.write_bits(ins["dst_row"], bits, c * ts.cols)
        elif mn == "tile_tx":
            self._send(ts, ins)
        elif mn == "tile_rx":
            if not self._receive(ts, ins):
                return False
        elif mn == "signal":
            self.mailbox[(ins["src_tile"], ins["src_cram"], ins["dst_tile"], ins["dst_cram"], ins["tag"])] += 1
        elif mn == "wait":
            key = (ins["src_tile"], ins["src_cram"], tile, ins["dst_cram"], ins["tag"])
            if self.mailbox[key] <= 0:
                return False
            self.mailbox[key] -= 1
        elif mn == "reset_sync":
            for key in [k for k in self.mailbox if k[2] == tile]:
                del self.mailbox[key]
        elif mn != "halt":
            raise SimError(f"no semantics for {mn}")
        self.executed += 1
        return True

    # ------------------------------------------------------------------ DRAM transfers
    def _vector_from_dram(self, ins: dict, n: int, p: int, w: int) -> np.ndarray:
        """(p, n) bits of the DRAM vector at ins['addr'] in the instruction's layout."""
        if ins["tr"]:
            pats = unpack_elements(self.dram.read(ins["addr"], element_bytes(n, w)), n, w)
            return patterns_to_bits(pats, p)
        return unpack_planes(self.dram.read(ins["addr"], p * ((n + 7) // 8)), n, p)

    def _cram_dram(self, ts: TileState, ins: dict, mn: str) -> None:
        prec = decode(ins["p"])
        p, w = prec.bits, prec.dram_bits
        if mn == "load_shf":
            count = shuffle_size(self.cfg, ins["bcast"], ins["shf_en"], ins["shf"], ins["size"])
            bits = self._vector_from_dram(ins, count, p, w)
            self._write_spread(ts, ins["row"], bits, ins["bcast"], ins["shf_en"], ins["shf"])
            return
        n = ins["size"] or ts.W
        start = ins["cram"] * ts.cols
        if mn == "load":
            ts.write_bits(ins["row"], self._vector_from_dram(ins, n, p, w), start)
            return
        bits = ts.read_bits(ins["row"], p, start, n)
        if ins["tr"]:
            pats = extend(bits_to_patterns(bits), prec) if not prec.is_float else bits_to_patterns(bits)
            self.dram.write(ins["addr"], pack_elements(pats, w))
        else:
            self.dram.write(ins["addr"], pack_planes(bits))

    def _write_spread(self, ts: TileState, row: int, bits: np.ndarray, bcast: int, shf_en: int, shf: int) -> None:
        """Write a broadcast/shuffled receive: tile bitline g gets element ``self._spread(...)[g]``
        of ``bits``.  The spread patterns are tilings (a CRAM's pattern repeated, or each CRAM
        repeating its own 2^shf elements), written as repeated groups (:meth:`TileState.write_groups`)
        instead of a gather over every bitline."""
        cols, W = self.cfg.cram_cols, self.cfg.tile_bitlines
        crams, G = W // cols, 1 << shf
        if not bcast and not shf_en:
            ts.write_bits(row, bits[..., :W], 0)
        elif shf_en and cols % G:   # a group size that does not divide a CRAM: the general gather
            ts.write_bits(row, bits[..., self._spread(bcast, shf_en, shf)], 0)
        elif bcast:
            k = G if shf_en else cols                                      # one CRAM's pattern source
            ts.write_groups(row, bits[..., :k], k, W // k)
        else:
            ts.write_groups(row, bits[..., :crams * G], G, cols // G)      # CRAM c repeats its own G elements

    def _spread(self, bcast: int, shf_en: int, shf: int) -> np.ndarray:
        """Source element of every tile bitline for a broadcast/shuffled receive (§2.7.6)."""
        key = (bool(bcast), bool(shf_en), shf)
        if key not in self._spread_cache:
            self._spread_cache[key] = self._spread_map(bcast, shf_en, shf)
        return self._spread_cache[key]

    def _spread_map(self, bcast: int, shf_en: int, shf: int) -> np.ndarray:
        cols, W = self.cfg.cram_cols, self.cfg.tile_bitlines
        g = np.arange(W)
        b, c = g % cols, g // cols
        G = 1 << shf
        if bcast:
            return b % G if shf_en else b
        if shf_en:
            return c * G + b % G
        return g

    def _rf_dram(self, ts: TileState, ins: dict, mn: str) -> None:
        s, base = ins["size"], ins["row"]
        if s == 0:
            if mn == "load_rf":
                ts.rf[...] = self.dram.read(ins["addr"], 4 * ts.rf.shape[-1]).view("<u4")
            else:
                self.dram.write(ins["addr"], ts.rf.astype("<u4").view(np.uint8))
            return
        prec = decode(ins["p"])
        w = prec.dram_bits
        if mn == "load_rf":
            pats = unpack_elements(self.dram.read(ins["addr"], element_bytes(s, w)), s, w)
            ts.rf[..., base:base + s] = (extend(pats, prec) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        else:
            pats = extend(ts.rf[..., base:base + s].astype(np.uint64), prec)
            self.dram.write(ins["addr"], pack_elements(pats, w))

    # ------------------------------------------------------------------ tile-to-tile
    def _send(self, ts: TileState, ins: dict) -> None:
        p = decode(ins["p"]).bits
        if ins["rf"]:
            bits = ts.rf_image_bits()
        elif ins["shf_en"]:
            G = 1 << ins["shf"]
            idx = (np.arange(ts.crams)[:, None] * ts.cols + np.arange(G)[None, :]).reshape(-1)
            bits = ts.read_bits(ins["src_row"], p, 0, ts.W)[..., idx]
        else:
            bits = ts.read_bits(ins["src_row"], p, 0, ins["size"] or ts.W)
        key = (ins["src_tile"], ins["src_row"], ins["dst_tile"], ins["dst_row"])
        self.messages[key].append((ins["size"], ins["p"], ins["rf"], bits))

    def _receive(self, ts: TileState, ins: dict) -> bool:
        key = (ins["src_tile"], ins["src_row"], ins["dst_tile"], ins["dst_row"])
        queue = self.messages.get(key)
        if not queue:
            return False
        size, p, rf, bits = queue.popleft()
        if (size, p, rf) != (ins["size"], ins["p"], ins["rf"]):
            raise SimError(f"tile_rx expects size {ins['size']}, precision byte 0x{ins['p']:02X}, rf={ins['rf']} "
                           f"but the matching tile_tx sent size {size}, 0x{p:02X}, rf={rf}")
        if rf:
            ts.set_rf_image_bits(bits)
        elif ins["bcast"] or ins["shf_en"]:
            self._write_spread(ts, ins["dst_row"], bits, ins["bcast"], ins["shf_en"], ins["shf"])
        else:
            ts.write_bits(ins["dst_row"], bits, 0)
        return True

    # ------------------------------------------------------------------ outputs
    def dram_outputs(self, sample: int | None = None) -> dict[str, np.ndarray]:
        """Every DRAM range the program stored to, as ``dram_0x<addr>`` uint8 arrays (of one
        ``sample`` of a batched machine)."""
        dram = self.dram if sample is None else self.dram.sample(sample)
        return {f"dram_0x{a:x}": dram.read(a, n) for a, n in self.dram.written_regions()}


def _where(prog: PimsabProgram, i: int, tile: int) -> str:
    mn = ISA.by_opcode[int(prog.rows["op"][i])].mnemonic
    line = f", line {int(prog.lines[i])}" if prog.lines is not None else ""
    return f"tile {tile}, instruction {i} ({mn}{line})"


def run_functional(prog: PimsabProgram, cfg: PimsabConfig, machine: Machine | None = None,
                   order: Iterable[int] | None = None, hook=None) -> Machine:
    """Execute every stream; ``order`` (row indices) fixes a global event order; ``hook(machine,
    tile, index, row)`` is called before each instruction executes."""
    m = machine or Machine(cfg, prog.segments)
    rows = prog.rows.tolist()
    tiles = prog.tiles.tolist()
    if order is not None:
        for i in order:
            try:
                if hook is not None:
                    hook(m, tiles[i], i, rows[i])
                if not m.step(tiles[i], rows[i]):
                    raise SimError("blocked in the timing model's event order (internal inconsistency)")
            except NnisaError as exc:
                raise exc.with_context(where=_where(prog, i, tiles[i])) from None
        return m
    streams = {t: prog.stream(t).tolist() for t in prog.stream_tiles()}
    pcs = {t: 0 for t in streams}
    halted: set[int] = set()
    while True:
        progress = False
        for t, idx in streams.items():
            pc = pcs[t]
            while pc < len(idx) and t not in halted:
                i = idx[pc]
                try:
                    if hook is not None:
                        hook(m, t, i, rows[i])
                    ok = m.step(t, rows[i])
                except NnisaError as exc:
                    raise exc.with_context(where=_where(prog, i, t)) from None
                if not ok:
                    break
                if rows[i][0] == ISA.by_mnemonic["halt"].opcode:
                    halted.add(t)
                pc += 1
                progress = True
            pcs[t] = pc
        left = {t: idx[pcs[t]] for t, idx in streams.items() if pcs[t] < len(idx) and t not in halted}
        if not left:
            return m
        if not progress:
            lines = [f"  {_where(prog, i, t)}: blocked" for t, i in sorted(left.items())]
            first_t, first_i = min(left.items())
            raise DeadlockError(f"deadlock: {len(left)} tile stream(s) blocked forever, first "
                                f"{_where(prog, first_i, first_t)}", report="\n".join(lines))


def describe(m: Machine) -> dict[str, Any]:
    """A few facts of the final state (for reports)."""
    return {"tiles_touched": len(m.tiles), "instructions_executed": m.executed,
            "pending_messages": sum(len(q) for q in m.messages.values())}
