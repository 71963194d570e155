"""Device memory of a batched Cherry machine (issue 30: one pass for N samples).

A run of N samples keeps one value per sample in every register and cache tile (a batch axis
after the tile index: ``(tiles, N, SZ, SZ)``).  Device memory is mostly constants (a model's
weights), identical for every sample: :class:`DeviceMemory` holds each tile either once, *shared*
by all samples (uploaded constants, tiles never written), or once per sample (*own*: inputs,
activations, anything a program has written).  A program's ``mem_write`` makes a tile own; a
shared upload makes it shared again.  Reading returns ``(n, N, SZ, SZ)`` either way, so the
machine sees one batched memory.

The own tiles live in an array of ``own_tiles`` tiles (a compiled plan's device-memory top; a
full ``dram_tiles x N`` array would reserve gigabytes of address space at SZ 32), zero-filled
lazily by the OS so only tiles written take memory, and grown if a program writes above it.
"""

from __future__ import annotations

import numpy as np


class DeviceMemory:
    """``tiles`` device-memory tiles of ``sz x sz`` float32 for ``batch`` samples (all 0 at first)."""

    def __init__(self, tiles: int, batch: int, sz: int, own_tiles: int = 0):
        self.tiles, self.batch, self.sz = tiles, batch, sz
        self.shared = np.zeros((tiles, sz, sz), np.float32)  # calloc: untouched pages cost nothing
        self.is_shared = np.ones(tiles, bool)
        self.own = np.zeros((min(own_tiles, tiles), batch, sz, sz), np.float32)

    # ------------------------------------------------------------------ batched access
    def read(self, index: slice | np.ndarray) -> np.ndarray:
        """Tiles ``index`` (a slice or an array of n tiles) of every sample → ``(n, batch, sz, sz)``,
        or ``(n, 1, sz, sz)`` when they are all shared (broadcast it)."""
        sh = self.is_shared[index]
        if sh.all():
            return self.shared[index][:, None]
        if not sh.any():
            return self.own[index]
        addr = np.arange(self.tiles)[index] if isinstance(index, slice) else np.asarray(index)
        out = np.empty((len(addr), self.batch, self.sz, self.sz), np.float32)
        out[sh] = self.shared[addr[sh]][:, None]
        out[~sh] = self.own[addr[~sh]]
        return out

    def write(self, index: slice | np.ndarray, values: np.ndarray) -> None:
        """Every sample's tiles ``index`` = ``values`` (``(n, batch, sz, sz)`` or broadcastable)."""
        self._reserve(_top(index))
        self.own[index] = values
        self.is_shared[index] = False

    def upload_shared(self, base: int, tiles: np.ndarray) -> None:
        """Tiles ``(T, sz, sz)`` at ``base``, the same for every sample (a constant)."""
        self.shared[base:base + len(tiles)] = tiles
        self.is_shared[base:base + len(tiles)] = True

    def upload(self, base: int, tiles: np.ndarray) -> None:
        """Tiles ``(T, batch, sz, sz)`` at ``base``, one per sample."""
        self.write(slice(base, base + len(tiles)), tiles)

    def range(self, base: int, count: int) -> np.ndarray:
        """Tiles ``base .. base + count`` → ``(count, batch, sz, sz)`` (a copy)."""
        got = self.read(slice(base, base + count))
        return np.array(np.broadcast_to(got, (count, self.batch, self.sz, self.sz)))

    # ------------------------------------------------------------------ one sample (reference path)
    def tile(self, t: int, b: int) -> np.ndarray:
        """Sample ``b``'s tile ``t`` (a copy)."""
        return (self.shared[t] if self.is_shared[t] else self.own[t, b]).copy()

    def set_tile(self, t: int, b: int, value: np.ndarray) -> None:
        """Sample ``b``'s tile ``t`` = ``value`` (a shared tile becomes own, the others keep their value)."""
        if self.is_shared[t]:
            self._reserve(t + 1)
            self.own[t] = self.shared[t]
            self.is_shared[t] = False
        self.own[t, b] = value

    # ------------------------------------------------------------------ whole state
    def copy(self) -> "DeviceMemory":
        new = DeviceMemory.__new__(DeviceMemory)
        new.tiles, new.batch, new.sz = self.tiles, self.batch, self.sz
        new.shared, new.is_shared, new.own = self.shared.copy(), self.is_shared.copy(), self.own.copy()
        return new

    def equals(self, other: "DeviceMemory") -> bool:
        """Same values for every sample (NaNs equal), however each tile is held."""
        hi = max(len(self.own), len(other.own))
        if not np.array_equal(self.range(0, hi), other.range(0, hi), equal_nan=True):
            return False
        return np.array_equal(self.shared[hi:], other.shared[hi:], equal_nan=True)

    def _reserve(self, n: int) -> None:
        if n <= len(self.own):
            return
        cap = min(self.tiles, max(n, 2 * len(self.own), 64))
        grown = np.zeros((cap, self.batch, self.sz, self.sz), np.float32)
        grown[:len(self.own)] = self.own
        self.own = grown


def _top(index: slice | np.ndarray) -> int:
    """1 + the largest tile of ``index`` (a slice with a known start and stop, or an array)."""
    if isinstance(index, slice):
        start, stop, step = index.start, index.stop, index.step or 1
        if step > 0:
            return start + (stop - start - 1) // step * step + 1
        return start + 1
    return int(np.max(index)) + 1
