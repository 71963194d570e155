"""Sparse byte-addressed DRAM (48-bit addresses) and the element layouts of spec §2.2.

Memory is kept in 1 MiB pages allocated on first write (reads of untouched memory give zeros).
:func:`pack_elements`/:func:`unpack_elements` convert between element values and DRAM bytes for
``tr=1`` (normal layout, elements of width w packed little-endian) and ``tr=0`` (pre-transposed bit
planes, one plane of ceil(n/8) bytes per bit).
"""

from __future__ import annotations

import numpy as np

from ....core.errors import SimError

PAGE_BITS = 20
PAGE = 1 << PAGE_BITS
ADDR_LIMIT = 1 << 48


class Dram:
    """Sparse DRAM: ``read(addr, n)`` / ``write(addr, data)`` on byte ranges."""

    page_bits = PAGE_BITS

    def __init__(self) -> None:
        self.page_size = 1 << self.page_bits
        self.pages: dict[int, np.ndarray] = {}
        self.written: list[tuple[int, int]] = []

    def _check(self, addr: int, n: int) -> None:
        if addr < 0 or addr + n > ADDR_LIMIT:
            raise SimError(f"DRAM access 0x{addr:x}+{n} outside the 48-bit address space")

    def _spans(self, addr: int, n: int):
        """(page, offset in page, position in the range, length) pieces of a byte range."""
        pos, size = 0, self.page_size
        while pos < n:
            a = addr + pos
            off = a & (size - 1)
            take = min(size - off, n - pos)
            yield a >> self.page_bits, off, pos, take
            pos += take

    def read(self, addr: int, n: int) -> np.ndarray:
        self._check(addr, n)
        out = np.zeros(n, np.uint8)
        for page, off, pos, take in self._spans(addr, n):
            buf = self.pages.get(page)
            if buf is not None:
                out[pos:pos + take] = buf[off:off + take]
        return out

    def write(self, addr: int, data: np.ndarray | bytes, *, record: bool = True) -> None:
        data = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else \
            np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        n = len(data)
        self._check(addr, n)
        for page, off, pos, take in self._spans(addr, n):
            buf = self.pages.get(page)
            if buf is None:
                buf = self.pages[page] = np.zeros(self.page_size, np.uint8)
            buf[off:off + take] = data[pos:pos + take]
        if record and n:
            self.written.append((addr, n))

    def written_regions(self) -> list[tuple[int, int]]:
        """Merged (address, length) ranges written by the program (stores), ascending."""
        out: list[list[int]] = []
        for a, n in sorted(self.written):
            if out and a <= out[-1][0] + out[-1][1]:
                out[-1][1] = max(out[-1][1], a + n - out[-1][0])
            else:
                out.append([a, n])
        return [(a, n) for a, n in out]


def element_bytes(n: int, w: int) -> int:
    """Bytes of n elements of w bits in the normal layout."""
    return (n * w + 7) // 8


def unpack_elements(raw: np.ndarray, n: int, w: int) -> np.ndarray:
    """``tr=1`` layout: n elements of w bits (little-endian packing) → uint64 patterns (leading
    axes, such as a batch axis, are kept: (..., bytes) → (..., n))."""
    lead = raw.shape[:-1]
    if w >= 8:
        nb = w // 8
        b = raw[..., : n * nb].reshape(lead + (n, nb)).astype(np.uint64)
        out = np.zeros(lead + (n,), np.uint64)
        for j in range(nb):
            out |= b[..., j] << np.uint64(8 * j)
        return out
    bits = np.unpackbits(raw[..., : element_bytes(n, w)], axis=-1, bitorder="little")[..., : n * w]
    bits = bits.reshape(lead + (n, w))
    return (bits.astype(np.uint64) << np.arange(w, dtype=np.uint64)).sum(axis=-1).astype(np.uint64)


def pack_elements(vals: np.ndarray, w: int) -> np.ndarray:
    """uint64 patterns → ``tr=1`` bytes of w-bit elements (only the low w bits are kept;
    (..., n) → (..., bytes))."""
    vals = vals.astype(np.uint64)
    lead, n = vals.shape[:-1], vals.shape[-1]
    if w >= 8:
        nb = w // 8
        out = np.empty(lead + (n, nb), np.uint8)
        for j in range(nb):
            out[..., j] = (vals >> np.uint64(8 * j)) & np.uint64(0xFF)
        return out.reshape(lead + (n * nb,))
    bits = ((vals[..., None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    return np.packbits(bits.reshape(lead + (n * w,)), axis=-1, bitorder="little")


def unpack_planes(raw: np.ndarray, n: int, p: int) -> np.ndarray:
    """``tr=0`` layout: p bit planes of ceil(n/8) bytes → (p, n) uint8 bit matrix ((..., p, n))."""
    nb = (n + 7) // 8
    planes = raw[..., : p * nb].reshape(raw.shape[:-1] + (p, nb))
    return np.unpackbits(planes, axis=-1, bitorder="little")[..., :n]


def pack_planes(bits: np.ndarray) -> np.ndarray:
    """(p, n) bit matrix → ``tr=0`` bytes (one plane of ceil(n/8) bytes per bit; (..., p, n) →
    (..., bytes))."""
    packed = np.packbits(bits.astype(np.uint8), axis=-1, bitorder="little")
    return packed.reshape(packed.shape[:-2] + (-1,))
