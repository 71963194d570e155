"""Memories of the PIM functional simulator (spec ``pim_isa.md`` §1.4–§1.6, D12).

* :class:`GlobalMemory` — the chip's sparse, zero-initialised global memory (64 KiB pages,
  created on first write), optionally bounded, with a per-byte "written" mask so that reads
  of never-written bytes can be reported (§5.7 warning).
* element helpers :func:`load_elems` / :func:`store_elems` — vectors of ``biw``-bit two's
  complement elements stored little-endian in ``byw`` bytes, sign-extended on store (D12).

Local memories are zero-initialised numpy byte arrays owned by the simulator (touched pages only,
used through a ``memoryview`` for byte work); their bound checks are done by the instruction
semantics.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np

from ....core import fixedpoint as fx
from ....core.errors import SimError

PAGE_BITS = 16
PAGE_SIZE = 1 << PAGE_BITS
_PAGE_MASK = PAGE_SIZE - 1
_ONES = b"\x01" * PAGE_SIZE
_ZEROS = bytes(PAGE_SIZE)

#: little-endian integer dtypes for the directly viewable byte widths
_LE = {1: np.dtype("i1"), 2: np.dtype("<i2"), 4: np.dtype("<i4"), 8: np.dtype("<i8")}


class GmemRangeError(SimError):
    """An access outside the addressable global range (address, size, limit); the interpreters
    turn it into a fault naming core and pc."""

    def __init__(self, addr: int, size: int, limit: int):
        self.addr, self.size, self.limit = addr, size, limit
        super().__init__(f"global address range [{addr:#x}, {addr + size:#x}) outside [0, {limit:#x})")


class GlobalMemory:
    """Sparse byte-addressed global memory.

    Parameters
    ----------
    limit
        Addressable size in bytes: accesses must lie in ``[0, limit)``.  Default ``2**32``
        (§1.4: unbounded configurations address ``[0, 2^32)``); pass ``2**64`` to allow the
        whole 64-bit space of register pairs.
    segments
        Initial contents: ``{address: bytes-like or uint8 array}``.

    Notes
    -----
    Reads of bytes that were never written return 0; :meth:`read` reports whether that
    happened so the simulator can warn.
    """

    def __init__(self, limit: int = 1 << 32, segments: dict[int, object] | None = None):
        self.limit = int(limit)
        self._data: dict[int, bytearray] = {}
        self._mask: dict[int, bytearray] = {}
        for addr, seg in (segments or {}).items():
            self.write(int(addr), as_bytes(seg))

    # ------------------------------------------------------------------ raw access
    def _check(self, addr: int, size: int) -> None:
        if addr < 0 or size < 0 or addr + size > self.limit:
            raise GmemRangeError(addr, size, self.limit)

    def _page(self, no: int) -> tuple[bytearray, bytearray]:
        data = self._data.get(no)
        if data is None:
            data = self._data[no] = bytearray(PAGE_SIZE)
            self._mask[no] = bytearray(PAGE_SIZE)
        return data, self._mask[no]

    def read(self, addr: int, size: int) -> tuple[bytes, bool]:
        """Return ``(data, fully_initialised)`` for ``size`` bytes at ``addr``."""
        self._check(addr, size)
        off = addr & _PAGE_MASK
        if off + size <= PAGE_SIZE:  # fast path: one page
            no = addr >> PAGE_BITS
            data = self._data.get(no)
            if data is None:
                return _ZEROS[:size] if size <= PAGE_SIZE else bytes(size), size == 0
            return bytes(data[off:off + size]), self._mask[no].find(0, off, off + size) < 0
        out = bytearray()
        init = True
        for no, lo, hi in _pieces(addr, size):
            data = self._data.get(no)
            if data is None:
                out += bytes(hi - lo)
                init = False
            else:
                out += data[lo:hi]
                init = init and self._mask[no].find(0, lo, hi) < 0
        return bytes(out), init

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        """Store ``data`` at ``addr`` (marks the bytes as initialised)."""
        size = len(data)
        self._check(addr, size)
        off = addr & _PAGE_MASK
        if off + size <= PAGE_SIZE:
            page, mask = self._page(addr >> PAGE_BITS)
            page[off:off + size] = data
            mask[off:off + size] = _ONES[:size]
            return
        pos = 0
        mv = memoryview(bytes(data))
        for no, lo, hi in _pieces(addr, size):
            page, mask = self._page(no)
            n = hi - lo
            page[lo:hi] = mv[pos:pos + n]
            mask[lo:hi] = _ONES[:n]
            pos += n

    # ------------------------------------------------------------------ user API
    def read_bytes(self, addr: int, nbytes: int) -> bytes:
        """The ``nbytes`` bytes at ``addr`` (never-written bytes read as 0)."""
        return self.read(int(addr), int(nbytes))[0]

    def read_tensor(self, addr: int, shape: int | tuple[int, ...], bits: int) -> np.ndarray:
        """Read a tensor of ``bits``-bit elements (``⌈bits/8⌉`` bytes each, D12) as int64."""
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        count = int(np.prod(shape, dtype=np.int64))
        byw = (bits + 7) // 8
        raw = np.frombuffer(self.read_bytes(addr, count * byw), dtype=np.uint8)
        return load_elems(raw, 0, count, bits, byw).reshape(shape)

    def write_tensor(self, addr: int, values, bits: int) -> None:
        """Store integer ``values`` as ``bits``-bit elements (wrapped, sign-extended, D12)."""
        v = np.asarray(values, dtype=np.int64).reshape(-1)
        byw = (bits + 7) // 8
        buf = np.zeros(v.size * byw, dtype=np.uint8)
        store_elems(buf, 0, wrap_np(v, bits), byw)
        self.write(int(addr), buf.tobytes())

    def segments(self) -> Iterator[tuple[int, bytes]]:
        """Maximal runs of written bytes as ``(address, data)``, ascending."""
        for no in sorted(self._data):
            mask = self._mask[no]
            base = no << PAGE_BITS
            pos = 0
            while True:
                lo = mask.find(1, pos)
                if lo < 0:
                    break
                hi = mask.find(0, lo)
                hi = PAGE_SIZE if hi < 0 else hi
                yield base + lo, bytes(self._data[no][lo:hi])
                pos = hi
                if pos >= PAGE_SIZE:
                    break

    def merged_segments(self) -> list[tuple[int, bytes]]:
        """:meth:`segments` with runs that continue across page boundaries joined."""
        out: list[tuple[int, bytearray]] = []
        for addr, data in self.segments():
            if out and out[-1][0] + len(out[-1][1]) == addr:
                out[-1][1].extend(data)
            else:
                out.append((addr, bytearray(data)))
        return [(a, bytes(d)) for a, d in out]

    @property
    def pages(self) -> int:
        """Number of allocated 64 KiB pages."""
        return len(self._data)


def as_bytes(seg) -> bytes:
    """A segment given as bytes-like or uint8 array, as ``bytes``."""
    if isinstance(seg, (bytes, bytearray, memoryview)):
        return bytes(seg)
    arr = np.asarray(seg)
    if arr.dtype != np.uint8:
        raise TypeError(f"global memory segments must be uint8 arrays or bytes, got {arr.dtype}")
    return arr.reshape(-1).tobytes()


def _pieces(addr: int, size: int) -> Iterable[tuple[int, int, int]]:
    """Split ``[addr, addr+size)`` into ``(page, lo, hi)`` pieces."""
    end = addr + size
    while addr < end:
        no = addr >> PAGE_BITS
        lo = addr & _PAGE_MASK
        hi = min(PAGE_SIZE, lo + (end - addr))
        yield no, lo, hi
        addr += hi - lo


# ---------------------------------------------------------------------- element vectors
wrap_np = fx.wrap  # ``wrap_bits`` of an int64 array (modular; right even after int64 overflow)


def load_elems(buf: np.ndarray, addr: int, count: int, biw: int, byw: int, stride: int = 1) -> np.ndarray:
    """Read ``count`` elements (int64) from a uint8 buffer.

    Element ``i`` is at ``addr + i*stride*byw``; only its low ``biw`` bits are used, sign
    extended from bit ``biw-1`` (D12).  The caller checks bounds.
    """
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    signed = False
    if stride == 1:
        raw = buf[addr:addr + count * byw]
        if byw in _LE:
            v = raw.view(_LE[byw]).astype(np.int64)
            signed = True
        else:
            b = raw.reshape(count, byw).astype(np.int64)
            v = b[:, 0].copy()
            for j in range(1, byw):
                v |= b[:, j] << (8 * j)
    else:
        starts = addr + np.arange(count, dtype=np.int64) * (stride * byw)
        v = np.zeros(count, dtype=np.int64)
        for j in range(byw):
            v |= buf[starts + j].astype(np.int64) << (8 * j)
    if biw < 8 * byw or not signed:
        v = wrap_np(v, biw)
    return v


def store_elems(buf: np.ndarray, addr: int, values: np.ndarray, byw: int) -> None:
    """Write already wrapped/saturated int64 ``values`` as ``byw``-byte little-endian
    two's-complement elements (sign-extended to the full bytes, D12)."""
    n = values.size
    if n == 0:
        return
    if byw in _LE:
        buf[addr:addr + n * byw] = values.astype(_LE[byw]).view(np.uint8)
    else:
        full = values.astype("<i8").view(np.uint8).reshape(n, 8)
        buf[addr:addr + n * byw] = full[:, :byw].reshape(-1)
