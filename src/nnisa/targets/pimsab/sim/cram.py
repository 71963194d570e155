"""The functional state of one PIMSAB tile: CRAM wordlines as packed bit rows, latches and the RF.

Wordline r of a tile is one packed row of ``crams_per_tile × cram_cols`` bits (tile-global bitline
g = c × cram_cols + b is bit g & 7 of byte g >> 3), allocated on first write.  An operand
(row, precision) occupies p consecutive wordlines, LSB first (spec §2.2).  Reads return raw
uint64 patterns; writes take patterns and an optional per-bitline enable (predication).
"""

from __future__ import annotations

import numpy as np

from ....core.errors import SimError
from ..config import PimsabConfig

U64 = np.uint64


class TileState:
    """CRAM rows, mask latch M, carry latch C and register file of one tile."""

    def __init__(self, cfg: PimsabConfig, tile: int) -> None:
        self.tile = tile
        self.W = cfg.tile_bitlines
        self.n_rows = cfg.cram_rows
        self.cols = cfg.cram_cols
        self.crams = cfg.crams_per_tile
        self.rows: list[np.ndarray | None] = [None] * self.n_rows
        self.mask = np.zeros(self.W, bool)
        self.carry = np.zeros(self.W, bool)
        self.rf = np.zeros(cfg.rf_regs, np.uint32)

    # ------------------------------------------------------------------ bit matrices
    def _check(self, row: int, p: int, start: int, n: int) -> None:
        if row < 0 or row + p > self.n_rows:
            raise SimError(f"tile {self.tile}: rows {row}..{row + p - 1} outside the {self.n_rows} wordlines")
        if start < 0 or start + n > self.W:
            raise SimError(f"tile {self.tile}: bitlines {start}..{start + n - 1} outside the {self.W} of a tile")

    def read_bits(self, row: int, p: int, start: int = 0, n: int | None = None) -> np.ndarray:
        """(p, n) uint8 bit matrix of rows [row, row+p), bitlines [start, start+n)."""
        n = self.W - start if n is None else n
        self._check(row, p, start, n)
        b0, off = start >> 3, start & 7
        b1 = (start + n + 7) >> 3
        out = np.zeros((p, n), np.uint8)
        for j in range(p):
            r = self.rows[row + j]
            if r is not None:
                out[j] = np.unpackbits(r[b0:b1], bitorder="little")[off:off + n]
        return out

    def write_bits(self, row: int, bits: np.ndarray, start: int = 0, enable: np.ndarray | None = None) -> None:
        """Write a (p, n) bit matrix at rows [row, row+p), bitlines [start, start+n); bitlines
        whose ``enable`` is False keep their bits."""
        p, n = bits.shape
        self._check(row, p, start, n)
        b0, off = start >> 3, start & 7
        b1 = (start + n + 7) >> 3
        whole = off == 0 and n % 8 == 0 and enable is None
        rows = self.rows
        # rows never written read as zeros: a zero write to one leaves it unallocated
        nonzero = None
        sel = []
        for j in range(p):
            if rows[row + j] is None:
                if nonzero is None:
                    nonzero = bits.any(axis=1)     # once per call, only when a row is unallocated
                if not nonzero[j]:
                    continue
            sel.append(j)
        if not sel:
            return
        for j in sel:
            if rows[row + j] is None:
                rows[row + j] = np.zeros(self.W // 8, np.uint8)
        # all selected rows at once (one unpack/pack of a (rows, bytes) matrix, not one per row)
        if whole:
            packed = np.packbits(bits[sel], axis=1, bitorder="little")
        else:
            cur = np.unpackbits(np.stack([rows[row + j][b0:b1] for j in sel]), axis=1, bitorder="little")
            if enable is None:
                cur[:, off:off + n] = bits[sel]
            else:
                seg = cur[:, off:off + n]
                seg[:, enable] = bits[sel][:, enable]
            packed = np.packbits(cur, axis=1, bitorder="little")
        for k, j in enumerate(sel):
            rows[row + j][b0:b1] = packed[k]

    def write_groups(self, row: int, bits: np.ndarray, G: int, reps: int) -> None:
        """Write ``bits`` (p, m·G) from bitline 0 with each group of G bitlines repeated ``reps``
        times (m·G·reps bitlines): the tilings of broadcast and shuffled transfers."""
        lead, m = bits.shape[:-1], bits.shape[-1] // G
        block = bits.reshape(lead + (m, 1, G))
        self.write_bits(row, np.broadcast_to(block, lead + (m, reps, G)).reshape(lead + (m * reps * G,)), 0)

    # ------------------------------------------------------------------ element patterns
    def read(self, row: int, p: int, start: int = 0, n: int | None = None) -> np.ndarray:
        """uint64 patterns of the p-bit elements at (row, bitlines [start, start+n))."""
        return bits_to_patterns(self.read_bits(row, p, start, n))

    def write(self, row: int, p: int, values: np.ndarray, start: int = 0,
              enable: np.ndarray | None = None) -> None:
        """Write the low p bits of ``values`` (uint64) at (row, bitlines [start, start+len))."""
        self.write_bits(row, patterns_to_bits(values, p), start, enable)

    def read_cram(self, cram: int, row: int, p: int) -> np.ndarray:
        return self.read_bits(row, p, cram * self.cols, self.cols)

    def rf_image_bits(self) -> np.ndarray:
        """The RF as a 1 × (32·32) bit matrix (register 0 bit 0 first)."""
        return np.unpackbits(self.rf.astype("<u4").view(np.uint8), bitorder="little")[None, :]

    def set_rf_image_bits(self, bits: np.ndarray) -> None:
        self.rf[:] = np.packbits(bits.reshape(-1).astype(np.uint8), bitorder="little").view("<u4")


def bits_to_patterns(bits: np.ndarray) -> np.ndarray:
    """(p, n) bit matrix (p ≤ 64) → n uint64 patterns (bit j from row j); leading axes are kept."""
    lead, (p, n) = bits.shape[:-2], bits.shape[-2:]
    if p == 0:
        return np.zeros(lead + (n,), U64)
    packed = np.packbits(np.swapaxes(bits, -1, -2), axis=-1, bitorder="little")  # (..., n, ceil(p/8))
    full = np.zeros(lead + (n, 8), np.uint8)
    full[..., :packed.shape[-1]] = packed
    return full.view("<u8").reshape(lead + (n,)).astype(U64)


def patterns_to_bits(values: np.ndarray, p: int) -> np.ndarray:
    """n uint64 patterns → (p, n) bit matrix of their low p bits; leading axes are kept."""
    v = np.ascontiguousarray(values, dtype="<u8")
    bits = np.unpackbits(v.view(np.uint8).reshape(v.shape + (8,)), axis=-1, bitorder="little")  # (..., n, 64)
    return np.ascontiguousarray(np.swapaxes(bits[..., :p], -1, -2))
