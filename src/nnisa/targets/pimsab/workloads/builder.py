"""A small helper to emit per-tile instruction streams in a global order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..config import PimsabConfig, preset_for_hash
from ..formats.broadcast import expand_broadcast
from ..isa import build_isa
from ..program import PimsabProgram

ISA = build_isa()
#: largest generated program (instructions): bigger workload parameters are an error, not hours of
#: generation and gigabytes of memory (the paper's largest replay, gemm, has 172,928)
MAX_INSTRUCTIONS = 4_000_000


class Builder:
    """Collects ``(tile, row)`` pairs and DRAM segments, then makes a :class:`PimsabProgram`."""

    _templates: dict[str, list[int]] = {}
    _index = ISA._col_index

    def __init__(self, cfg: PimsabConfig) -> None:
        self.cfg = cfg
        self.count = 0
        self.rows: list = []
        self.tiles: list[int] = []
        self.segments: list[tuple[int, bytes]] = []
        self._blocks: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, tile: int, mnemonic: str, **fields: int) -> None:
        tpl = self._templates.get(mnemonic)
        if tpl is None:
            tpl = self._templates[mnemonic] = list(ISA.row(mnemonic))
        vals = tpl.copy()
        index = self._index
        for k, v in fields.items():
            vals[index[k]] = v
        self.rows.append(vals)
        self.tiles.append(tile)
        self._grow(1)

    def _grow(self, n: int) -> None:
        self.count += n
        if self.count > MAX_INSTRUCTIONS:
            raise ValueError(f"the program would have more than {MAX_INSTRUCTIONS:,} instructions "
                             "(smaller parameters, please)")
        if len(self.rows) >= 1 << 16:  # keep the Python rows short: numpy blocks are 10x smaller
            self._flush()

    def bcast(self, sender: int, row: int, size: int, prec: int, receivers, *, bcast: int = 0,
              shf: int | None = None, mode: str | None = None) -> None:
        """``tile_bcast`` expansion (the configured broadcast type unless ``mode`` is given)."""
        mode = mode or ("systolic" if self.cfg.broadcast_type == "systolic" else "one_to_many")
        for tile, row_ in expand_broadcast(self.cfg, sender, row, size, prec, set(receivers), mode, bcast, shf):
            self.rows.append(list(row_))
            self.tiles.append(tile)
            self._grow(1)

    def chunks(self, n: int) -> list[tuple[int, int]]:
        """(offset, size) pieces of at most one tile vector covering n elements (size 0 = all)."""
        W = self.cfg.tile_bitlines
        out = [(o, min(W, n - o)) for o in range(0, n, W)]
        return [(o, 0 if k == W else k) for o, k in out]

    def data(self, addr: int, payload: np.ndarray | bytes) -> None:
        self.segments.append((addr, bytes(payload) if isinstance(payload, (bytes, bytearray))
                              else np.ascontiguousarray(payload).tobytes()))

    def mark(self) -> int:
        """Current position (for :meth:`repeat_since`)."""
        self._flush()
        return sum(len(m) for m, _ in self._blocks)

    def repeat_since(self, mark: int, times: int, addr_step: dict[str, int] | None = None) -> None:
        """Append ``times - 1`` more copies of the rows emitted since ``mark``; in copy j the DRAM
        address of every instruction whose mnemonic is in ``addr_step`` advances by j × its step."""
        self._flush()
        block, btiles = self._tail(mark)
        if times <= 1 or len(block) == 0:
            return
        self._grow((times - 1) * len(block))
        step = np.zeros(len(block), np.int64)
        for mn, st in (addr_step or {}).items():
            step[block[:, 0] == ISA.by_mnemonic[mn].opcode] = st
        j = np.arange(1, times, dtype=np.int64)[:, None]
        reps = np.broadcast_to(block, (times - 1,) + block.shape).copy()
        reps[:, :, self._index["addr"]] += j * step[None, :]
        self._blocks.append((reps.reshape(-1, block.shape[1]), np.tile(btiles, times - 1)))

    def _tail(self, mark: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and tiles emitted since ``mark`` (blocks are split so the tail is one block)."""
        pos, keep = 0, []
        out_m, out_t = [], []
        for m, t in self._blocks:
            if pos + len(m) <= mark:
                keep.append((m, t))
            else:
                cut = max(0, mark - pos)
                if cut:
                    keep.append((m[:cut], t[:cut]))
                out_m.append(m[cut:])
                out_t.append(t[cut:])
            pos += len(m)
        if not out_m:
            return np.zeros((0, len(ISA.columns)), np.int64), np.zeros(0, np.int64)
        tail = (np.concatenate(out_m), np.concatenate(out_t))
        self._blocks = keep + [tail]
        return tail

    def _flush(self) -> None:
        if self.rows:
            mat = np.array(self.rows, dtype=np.int64).reshape(len(self.rows), len(ISA.columns))
            self._blocks.append((mat, np.asarray(self.tiles, np.int64)))
            self.rows, self.tiles = [], []

    def program(self) -> PimsabProgram:
        self._flush()
        mats, tiles = zip(*self._blocks) if self._blocks else ((), ())
        mat = np.concatenate(mats) if mats else np.zeros((0, len(ISA.columns)), np.int64)
        rows = ISA.empty(len(mat))
        for j, c in enumerate(ISA.columns):
            rows[c] = mat[:, j]
        til = np.concatenate(tiles) if tiles else np.zeros(0, np.int64)
        return PimsabProgram(rows, til.astype(np.int32), self.segments, self.cfg.sha256,
                             preset_for_hash(self.cfg.sha256))


@dataclass
class Workload:
    """A generated program plus what a functional run must produce.

    ``expected`` maps DRAM addresses to the bytes a correct run leaves there (functional
    replays only); ``meta`` records sizes and precisions for reports.
    """

    name: str
    program: PimsabProgram
    expected: dict[int, bytes] = field(default_factory=dict)
    functional: bool = True
    meta: dict[str, Any] = field(default_factory=dict)
    parts: list["Workload"] = field(default_factory=list)
    weights: list[int] = field(default_factory=list)
    extra_cycles: int = 0
    check: Callable | None = None
