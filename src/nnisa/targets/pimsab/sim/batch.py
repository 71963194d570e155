"""Batched functional state: one PIMSAB program run for B samples at once.

A PIMSAB program's control flow never depends on data (streams, messages and mailboxes are fixed
by the instructions), so B samples can share one pass over the instructions: every state array
gets a leading sample axis and :mod:`.compute` / :mod:`.machine` run unchanged on it.

* :class:`ColumnTileState` keeps a tile's CRAM as bitline *columns* (``cols[b, g, k]``: word k of
  bitline g of sample b, :mod:`.cram_nb`), so an element is one or two shifted words.  A state
  may hold only the first E bitlines of the tile (its *extent*: :mod:`.plan` computes the
  largest bitline any instruction of the program reads); writes beyond it are dropped and reads
  beyond it give zeros.  The program interpreter (:mod:`.interp_nb`) works on the same arrays.
* :class:`FlatDram` is the DRAM of a planned run: the byte ranges the program, its data segments
  and its inputs touch, in one per-sample buffer (ranges stored to, or whose inputs differ per
  sample) and one shared buffer (read-only data: weights, constants).
* :class:`BatchDram` is the sparse DRAM of a step-by-step batched machine (pages shared by all
  samples until one differs).

Tests check a batched run against B reference runs.
"""

from __future__ import annotations

import bisect

import numpy as np

from ....core.errors import SimError
from ..config import PimsabConfig
from . import cram_nb
from .cram import TileState, bits_to_patterns, patterns_to_bits
from .dram import Dram

U64 = np.uint64


def stack_samples(arrays: list) -> np.ndarray:
    """One array per sample → their bytes as (1 | B, n) uint8: one row when every sample holds the
    same data (the same object or equal bytes)."""
    if all(a is arrays[0] for a in arrays):
        return _flat_bytes(arrays[0])[None]
    base = arrays[0].base
    if isinstance(base, np.ndarray) and base.ndim == 2 and base.shape[0] == len(arrays) and \
            base.flags.c_contiguous and all(a.base is base and a.ndim == 1 and a.ctypes.data == base[i].ctypes.data
                                            for i, a in enumerate(arrays)):
        return _uniform(base.view(np.uint8))  # the rows of one (B, n) array, in order: no copy
    return _uniform(np.stack([_flat_bytes(a) for a in arrays]))


def _uniform(arr: np.ndarray) -> np.ndarray:
    """``arr`` (samples, ...) as (1, ...) when every sample holds the same data."""
    if arr.shape[0] > 1 and np.array_equal(arr[1], arr[0]) and (arr == arr[:1]).all():
        return arr[:1]
    return arr


def words_per_bitline(cfg: PimsabConfig) -> int:
    return (cfg.cram_rows + 63) // 64


class ColumnTileState(TileState):
    """CRAM columns, mask/carry latches and RF of one tile for B samples.

    The arrays have the samples innermost (``columns`` (E, words, B), latches (E, B), RF (regs, B),
    possibly views of a planned run's state shared with the interpreter); ``mask``, ``carry`` and
    ``rf`` are exposed transposed, (B, E) and (B, regs), as :mod:`.compute` indexes them."""

    fast = True

    def __init__(self, cfg: PimsabConfig, tile: int, batch: int, cols: np.ndarray | None = None,
                 mask: np.ndarray | None = None, carry: np.ndarray | None = None,
                 rf: np.ndarray | None = None) -> None:
        self.tile = tile
        self.B = batch
        self.W = cfg.tile_bitlines
        self.n_rows = cfg.cram_rows
        self.cols = cfg.cram_cols
        self.crams = cfg.crams_per_tile
        self.columns = np.zeros((self.W, words_per_bitline(cfg), batch), U64) if cols is None else cols
        self.E = self.columns.shape[0]
        self.mask = (np.zeros((self.E, batch), bool) if mask is None else mask).T
        self.carry = (np.zeros((self.E, batch), bool) if carry is None else carry).T
        self.rf = (np.zeros((cfg.rf_regs, batch), np.uint32) if rf is None else rf).T

    def read(self, row: int, p: int, start: int = 0, n: int | None = None) -> np.ndarray:
        """(B, n) uint64 patterns of the p-bit elements at (row, bitlines [start, start+n))."""
        n = self.W - start if n is None else n
        self._check(row, p, start, n)
        return cram_nb.gather_words(self.columns, row, p, start, n)

    def write(self, row: int, p: int, values: np.ndarray, start: int = 0,
              enable: np.ndarray | None = None) -> None:
        """Write the low p bits of ``values`` ((n,) or (1 | B, n) uint64) at (row, [start, start+n));
        ``enable`` ((n,) or (1 | B, n) bool) keeps the bits of disabled bitlines."""
        values = np.asarray(values, U64)
        values = values[None] if values.ndim == 1 else values
        self._check(row, p, start, values.shape[-1])
        en = cram_nb.NO_ENABLE if enable is None else np.ascontiguousarray(enable if enable.ndim == 2 else enable[None])
        cram_nb.scatter_words(self.columns, row, p, start, values, en)

    def read_bits(self, row: int, p: int, start: int = 0, n: int | None = None) -> np.ndarray:
        """(B, p, n) uint8 bits of rows [row, row+p), bitlines [start, start+n)."""
        return patterns_to_bits(self.read(row, p, start, n), p)

    def write_bits(self, row: int, bits: np.ndarray, start: int = 0, enable: np.ndarray | None = None) -> None:
        """Write (p, n) or (1 | B, p, n) bits at rows [row, row+p), bitlines [start, start+n)."""
        self.write(row, bits.shape[-2], bits_to_patterns(bits), start, enable)

    def rf_image_bits(self) -> np.ndarray:
        """The RF of every sample as a (B, 1, 32·32) bit matrix (register 0 bit 0 first)."""
        return np.unpackbits(np.ascontiguousarray(self.rf, "<u4").view(np.uint8), axis=-1, bitorder="little")[:, None, :]

    def set_rf_image_bits(self, bits: np.ndarray) -> None:
        flat = bits.reshape(bits.shape[0], -1).astype(np.uint8)
        self.rf[...] = np.packbits(flat, axis=-1, bitorder="little").view("<u4")


def _flat_bytes(a) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _as_rows(data) -> np.ndarray:
    """Bytes or an array as (1 | B, n) uint8."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, np.uint8)[None]
    data = np.ascontiguousarray(data)
    data = data.reshape(1, -1) if data.ndim <= 1 else data.reshape(data.shape[0], -1)
    return data.view(np.uint8)


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
        data = _as_rows(data)
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
        self.write(addr, stack_samples(arrays), record=False)

    def sample(self, b: int) -> "SampleView":
        return SampleView(self, b)


class FlatDram(BatchDram):
    """DRAM of a planned batched run: the byte intervals ``[starts[i], ends[i])`` (sorted, disjoint)
    that the program, its segments and its inputs touch; interval i lives at ``offsets[i]`` of the
    per-sample buffer ``own`` (bytes, B: samples innermost, like the CRAM columns) when
    ``per_sample[i]``, else of the shared ``shared``.
    Bytes outside every interval read as zeros (a write there is an internal error)."""

    def __init__(self, batch: int, starts, ends, per_sample) -> None:
        super().__init__(batch)
        self.starts = np.asarray(starts, np.int64)
        self.ends = np.asarray(ends, np.int64)
        self.per_sample = np.asarray(per_sample, bool)
        size = self.ends - self.starts
        self.offsets = np.zeros(len(size), np.int64)
        for kind in (True, False):
            sel = self.per_sample == kind
            self.offsets[sel] = np.concatenate(([0], np.cumsum(size[sel])[:-1])) if sel.any() else []
        self.own = np.zeros((int(size[self.per_sample].sum()), batch), np.uint8)
        self.shared = np.zeros(int(size[~self.per_sample].sum()), np.uint8)

    def _pieces(self, addr: int, n: int):
        """(interval, offset in its buffer, position in the range, length) of a byte range."""
        i = max(bisect.bisect_right(self.starts, addr) - 1, 0)
        while i < len(self.starts) and self.starts[i] < addr + n:
            lo, hi = max(addr, int(self.starts[i])), min(addr + n, int(self.ends[i]))
            if lo < hi:
                yield i, int(self.offsets[i]) + lo - int(self.starts[i]), lo - addr, hi - lo
            i += 1

    def locate(self, addr: int, n: int) -> tuple[bool, int]:
        """(per-sample buffer?, offset) of a range inside one interval."""
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0 or addr + n > self.ends[i]:
            raise SimError(f"internal: DRAM range 0x{addr:x}+{n} outside the planned intervals")
        return bool(self.per_sample[i]), int(self.offsets[i]) + addr - int(self.starts[i])

    def read(self, addr: int, n: int) -> np.ndarray:
        """(1 | B, n) bytes."""
        self._check(addr, n)
        pieces = list(self._pieces(addr, n))
        out = np.zeros((self.B if any(self.per_sample[i] for i, *_ in pieces) else 1, n), np.uint8)
        for i, off, pos, take in pieces:
            out[:, pos:pos + take] = self.own[off:off + take].T if self.per_sample[i] else self.shared[off:off + take]
        return out

    def write(self, addr: int, data, *, record: bool = True) -> None:
        """``data``: bytes or an array, (n,) for every sample or (1 | B, n) (viewed as bytes)."""
        data = _as_rows(data)
        n = data.shape[1]
        self._check(addr, n)
        done = 0
        for i, off, pos, take in self._pieces(addr, n):
            piece = data[:, pos:pos + take]
            if self.per_sample[i]:
                self.own[off:off + take] = piece.T
            else:
                piece = _uniform(piece)
                if piece.shape[0] > 1:
                    raise SimError(f"internal: per-sample data written to the shared DRAM range at 0x{addr:x}")
                self.shared[off:off + take] = piece[0]
            done += take
        if done != n:
            raise SimError(f"internal: DRAM write 0x{addr:x}+{n} outside the planned intervals")
        if record and n:
            self.written.append((addr, n))


class SampleView:
    """``read(addr, n)`` of one sample of a batched DRAM (1-D, like :class:`.dram.Dram`)."""

    def __init__(self, dram, b: int) -> None:
        self.dram, self.b = dram, b

    def read(self, addr: int, n: int) -> np.ndarray:
        out = self.dram.read(addr, n)
        return out[min(self.b, out.shape[0] - 1)].copy()


__all__ = ["ColumnTileState", "FlatDram", "BatchDram", "SampleView", "stack_samples"]
