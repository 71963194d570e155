"""Batched functional state: one PIMSAB program run for B samples at once.

A PIMSAB program's control flow never depends on data (streams, messages and mailboxes are fixed
by the instructions), so B samples can share one pass over the instructions: every state array
gets a leading sample axis and :mod:`.compute` / :mod:`.machine` run unchanged on it.

* :class:`BatchTileState` keeps the CRAM wordlines as packed bit rows like the reference
  :class:`.cram.TileState`, each of shape (1, bytes) while every sample holds the same bits
  (weights, constants, zeroed rows: stored once) and (B, bytes) once a sample writes its own data.
  Operands are read into uint64 words and written back by the compiled kernels of
  :mod:`.cram_nb`; arithmetic is word-level NumPy on (samples, bitlines) arrays.
* :class:`BatchDram` is the sparse DRAM with the same sharing per page.

Latches and the RF are (B, ...) arrays.  Tests check a batched run against B reference runs.
"""

from __future__ import annotations

import numpy as np

from ....core.errors import SimError
from ..config import PimsabConfig
from . import cram_nb
from .cram import TileState
from .dram import ADDR_LIMIT, Dram

U64 = np.uint64


def _uniform(arr: np.ndarray) -> np.ndarray:
    """``arr`` (samples, ...) as (1, ...) when every sample holds the same data."""
    if arr.shape[0] > 1 and (arr == arr[:1]).all():
        return arr[:1]
    return arr


class BatchTileState:
    """CRAM rows (shared or per sample), mask/carry latches and RF of one tile for B samples."""

    fast = True    # :mod:`.compute` may use the compiled kernels of :mod:`.cram_nb`

    def __init__(self, cfg: PimsabConfig, tile: int, batch: int) -> None:
        self.tile = tile
        self.B = batch
        self.W = cfg.tile_bitlines
        self.n_rows = cfg.cram_rows
        self.cols = cfg.cram_cols
        self.crams = cfg.crams_per_tile
        self.rows: list[np.ndarray | None] = [None] * self.n_rows   # (1 | B, W/8) uint8
        self.mask = np.zeros((batch, self.W), bool)
        self.carry = np.zeros((batch, self.W), bool)
        self.rf = np.zeros((batch, cfg.rf_regs), np.uint32)

    def _check(self, row: int, p: int, start: int, n: int) -> None:
        if row < 0 or row + p > self.n_rows:
            raise SimError(f"tile {self.tile}: rows {row}..{row + p - 1} outside the {self.n_rows} wordlines")
        if start < 0 or start + n > self.W:
            raise SimError(f"tile {self.tile}: bitlines {start}..{start + n - 1} outside the {self.W} of a tile")

    # ------------------------------------------------------------------ packed row slices
    # A row is None (zeros), a (1 | B, width) byte array holding bytes [0, width) of the row (the
    # rest is zeros: rows grow as far as they are written), or a _Tiled row (a broadcast).
    def _bytes(self, r, b0: int, b1: int, out: np.ndarray) -> None:
        """Bytes [b0, b1) of row ``r`` into ``out`` (1 | B, b1-b0)."""
        if r is None:
            out[...] = 0
        elif isinstance(r, _Tiled):
            out[...] = r.bytes(b0, b1)
        else:
            w = min(b1, r.shape[1])
            if w > b0:
                out[:, :w - b0] = r[:, b0:w]
                out[:, w - b0:] = 0
            else:
                out[...] = 0

    def _stack(self, row: int, p: int, b0: int, b1: int) -> np.ndarray:
        """Bytes [b0, b1) of rows [row, row+p) as (p, 1 | B, b1-b0): shared unless a row is not."""
        rows = self.rows[row:row + p]
        nb = 1 if all(r is None or r.shape[0] == 1 for r in rows) else self.B
        out = np.empty((p, nb, b1 - b0), np.uint8)
        for j, r in enumerate(rows):
            self._bytes(r, b0, b1, out[j])
        return out

    def _target(self, r: int, nb: int, b0: int, b1: int) -> np.ndarray:
        """Row r ready for a write of ``nb`` (1 or B) samples' data at bytes [b0, b1): allocated at
        least b1 bytes wide, and per sample when the data are.  A write that covers everything the
        row holds needs none of its old bytes."""
        cur = self.rows[r]
        held = 0 if cur is None else cur.shape[1]
        if b0 == 0 and b1 >= held:
            new = self.rows[r] = np.empty((nb, b1), np.uint8)
            return new
        if cur is None:
            cur = np.zeros((nb, 0), np.uint8)
        elif isinstance(cur, _Tiled):
            cur = cur.bytes(0, held)
        width = held if b1 <= held else min(self.W // 8, max(b1, 2 * held))
        rows_ = max(nb, cur.shape[0])
        if width != held or rows_ != cur.shape[0]:
            grown = np.zeros((rows_, width), np.uint8)
            grown[:, :held] = cur
            cur = grown
        self.rows[r] = cur
        return cur

    def _put(self, row: int, stack: np.ndarray, b0: int, b1: int) -> None:
        """Store (p, 1 | B, bytes) at bytes [b0, b1) of rows [row, row+p); all-zero rows never
        written stay unallocated, shared rows become per-sample ones when the data differ."""
        nb = stack.shape[1]
        for j in range(stack.shape[0]):
            data = stack[j]
            if self.rows[row + j] is None and not data.any():
                continue
            self._target(row + j, nb, b0, b1)[:, b0:b1] = data

    # ------------------------------------------------------------------ bit matrices
    def read_bits(self, row: int, p: int, start: int = 0, n: int | None = None) -> np.ndarray:
        """(1 | B, p, n) uint8 bits of rows [row, row+p), bitlines [start, start+n)."""
        n = self.W - start if n is None else n
        self._check(row, p, start, n)
        b0, off = start >> 3, start & 7
        st = self._stack(row, p, b0, (start + n + 7) >> 3)
        bits = np.unpackbits(st, axis=-1, bitorder="little")[..., off:off + n]
        return np.ascontiguousarray(np.swapaxes(bits, 0, 1))

    def write_bits(self, row: int, bits: np.ndarray, start: int = 0, enable: np.ndarray | None = None) -> None:
        """Write (p, n) or (1 | B, p, n) bits at rows [row, row+p), bitlines [start, start+n)."""
        if bits.ndim == 2:
            bits = bits[None]
        p, n = bits.shape[-2:]
        self._check(row, p, start, n)
        if enable is not None:
            raise SimError("internal: predicated bit-matrix writes go through write()")
        b0, off = start >> 3, start & 7
        b1 = (start + n + 7) >> 3
        if off == 0 and n % 8 == 0:
            packed = np.packbits(bits, axis=-1, bitorder="little")
            self._put(row, np.ascontiguousarray(np.swapaxes(packed, 0, 1)), b0, b1)
            return
        st = self._stack(row, p, b0, b1)
        cur = np.unpackbits(st, axis=-1, bitorder="little")
        nb = max(cur.shape[1], bits.shape[0])
        cur = np.broadcast_to(cur, (p, nb, cur.shape[-1])).copy()
        cur[..., off:off + n] = np.swapaxes(bits, 0, 1)
        self._put(row, np.packbits(cur, axis=-1, bitorder="little"), b0, b1)

    def write_groups(self, row: int, bits: np.ndarray, G: int, reps: int) -> None:
        """:meth:`.cram.TileState.write_groups` (broadcast/shuffle tilings) on packed bytes, each
        row's tiling written in place: groups of whole bytes are repeated as bytes, groups of
        1, 2 or 4 bitlines as the byte that holds 8/G copies of them."""
        if (G % 8 and 8 % G) or (G * reps) % 8:
            TileState.write_groups(self, row, bits, G, reps)
            return
        if bits.ndim == 2:
            bits = bits[None]
        nb, p, mG = bits.shape
        m, nbytes = mG // G, mG * reps // 8
        self._check(row, p, 0, mG * reps)
        if G % 8 == 0:
            unit = np.packbits(bits, axis=-1, bitorder="little").reshape(nb, p, m, 1, G // 8)
            shape = (m, reps, G // 8)
        else:   # the byte of 8/G copies of a group: its G-bit value times 0b...0001_0001 (G = 4)
            val = (bits.reshape(nb, p, m, G).astype(np.uint16) << np.arange(G, dtype=np.uint16)).sum(-1)
            unit = (val * sum(1 << (G * k) for k in range(8 // G))).astype(np.uint8)[..., None]
            shape = (m, G * reps // 8)
        for j in range(p):
            src = unit[:, j]
            if self.rows[row + j] is None and not src.any():
                continue
            if nbytes == self.W // 8:    # the whole row: kept as the tiling, expanded where read
                self.rows[row + j] = _Tiled(src.reshape(nb, -1), shape)
                continue
            dst = self._target(row + j, nb, 0, nbytes)
            dst[:, :nbytes].reshape((dst.shape[0],) + shape)[...] = src

    # ------------------------------------------------------------------ element patterns
    def read(self, row: int, p: int, start: int = 0, n: int | None = None) -> np.ndarray:
        """(1 | B, n) uint64 patterns of the p-bit elements at (row, bitlines [start, start+n))."""
        n = self.W - start if n is None else n
        self._check(row, p, start, n)
        b0 = start >> 3
        st = self._stack(row, p, b0, (start + n + 7) >> 3)
        return cram_nb.gather_words(st, start & 7, n)

    def write(self, row: int, p: int, values: np.ndarray, start: int = 0,
              enable: np.ndarray | None = None) -> None:
        """Write the low p bits of ``values`` ((n,) or (1 | B, n) uint64) at (row, [start, start+n));
        ``enable`` ((n,) or (B, n) bool) keeps the bits of disabled bitlines."""
        values = np.asarray(values, U64)
        if values.ndim == 1:
            values = values[None]
        n = values.shape[-1]
        self._check(row, p, start, n)
        b0, off = start >> 3, start & 7
        b1 = (start + n + 7) >> 3
        if enable is not None:
            enable = np.ascontiguousarray(enable if enable.ndim == 2 else enable[None])
            if enable.all():
                enable = None
        nb = max(values.shape[0], 1 if enable is None else enable.shape[0])
        if off == 0 and n % 8 == 0 and enable is None:
            st = np.empty((p, values.shape[0], b1 - b0), np.uint8)
        else:
            st = self._stack(row, p, b0, b1)
        if st.shape[1] < nb:
            st = np.repeat(st, nb, axis=1)
        cram_nb.scatter_words(st, off, values, enable if enable is not None else cram_nb.NO_ENABLE)
        self._put(row, st, b0, b1)

    def read_cram(self, cram: int, row: int, p: int) -> np.ndarray:
        return self.read_bits(row, p, cram * self.cols, self.cols)

    def rf_image_bits(self) -> np.ndarray:
        """The RF of every sample as a (B, 1, 32·32) bit matrix (register 0 bit 0 first)."""
        return np.unpackbits(self.rf.astype("<u4").view(np.uint8), axis=-1, bitorder="little")[:, None, :]

    def set_rf_image_bits(self, bits: np.ndarray) -> None:
        flat = bits.reshape(bits.shape[0], -1).astype(np.uint8)
        self.rf[...] = np.packbits(flat, axis=-1, bitorder="little").view("<u4")


class _Tiled:
    """A row written by a broadcast/shuffled transfer, kept unexpanded: byte i of the row is
    ``unit[:, (i // R) * g + i % g]`` for a tiling of ``shape`` (m, R/g, g) (groups of g bytes,
    each repeated) or (m, R) (one byte per group, repeated R times)."""

    def __init__(self, unit: np.ndarray, shape: tuple[int, ...]) -> None:
        self.unit = unit
        self.g = shape[2] if len(shape) == 3 else 1
        self.R = shape[1] * self.g
        self.shape = (unit.shape[0], shape[0] * self.R)

    def bytes(self, b0: int, b1: int) -> np.ndarray:
        i = np.arange(b0, b1)
        return self.unit[:, (i // self.R) * self.g + i % self.g]


class BatchDram(Dram):
    """Sparse DRAM for B samples: pages of (1 | B, PAGE) bytes, shared until a sample differs."""

    page_bits = 16   # a page that becomes per-sample is copied B times: keep them small

    def __init__(self, batch: int) -> None:
        super().__init__()
        self.B = batch

    def read(self, addr: int, n: int) -> np.ndarray:
        """(1 | B, n) bytes."""
        self._check(addr, n)
        spans = list(self._spans(addr, n))
        nb = max((self.pages[pg].shape[0] for pg, *_ in spans if pg in self.pages), default=1)
        out = np.zeros((nb, n), np.uint8)
        for page, off, pos, take in spans:
            buf = self.pages.get(page)
            if buf is not None:
                out[:, pos:pos + take] = buf[:, off:off + take]
        return out

    def write(self, addr: int, data, *, record: bool = True) -> None:
        """``data``: bytes or an array, (n,) for every sample or (1 | B, n) (viewed as bytes)."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = np.frombuffer(data, np.uint8)[None]
        else:
            data = np.ascontiguousarray(data)
            data = data.reshape(1, -1) if data.ndim <= 1 else data.reshape(data.shape[0], -1)
            data = data.view(np.uint8)
        n = data.shape[1]
        self._check(addr, n)
        for page, off, pos, take in self._spans(addr, n):
            piece = data[:, pos:pos + take]
            buf = self.pages.get(page)
            if buf is None:
                buf = self.pages[page] = np.zeros((1, self.page_size), np.uint8)
            if piece.shape[0] > buf.shape[0]:
                piece = _uniform(piece)
                if piece.shape[0] > buf.shape[0]:
                    buf = self.pages[page] = np.repeat(buf, self.B, axis=0)
            buf[:, off:off + take] = piece
        if record and n:
            self.written.append((addr, n))

    def write_samples(self, addr: int, arrays: list[np.ndarray]) -> None:
        """One array per sample at ``addr`` (raw bytes; stored once when all are equal)."""
        data = np.stack([np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays])
        self.write(addr, _uniform(data), record=False)

    def sample(self, b: int) -> "SampleView":
        return SampleView(self, b)


class SampleView:
    """``read(addr, n)`` of one sample of a :class:`BatchDram` (1-D, like :class:`.dram.Dram`)."""

    def __init__(self, dram: BatchDram, b: int) -> None:
        self.dram, self.b = dram, b

    def read(self, addr: int, n: int) -> np.ndarray:
        out = self.dram.read(addr, n)
        return out[min(self.b, out.shape[0] - 1)].copy()


__all__ = ["BatchTileState", "BatchDram", "SampleView", "ADDR_LIMIT"]
