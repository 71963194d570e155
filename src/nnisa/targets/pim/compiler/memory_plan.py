"""Global-memory plan: activation buffers, interned constant vectors, and the memory map.

Layout (byte addresses, 64-byte aligned): graph inputs first, then every computed activation
buffer (HWC int8) with **liveness-based reuse** (a buffer's space is recycled once its last
consumer layer has run — safe because batch mode separates layers by barriers), then the
constant vectors (bias + rounding, shift amounts, replicated per batch) which are deduplicated
by content and shipped in ``gmem.npz``.
"""

from __future__ import annotations

import numpy as np

from .graph import Lowered

ALIGN = 64


def _align(x: int) -> int:
    return -(-x // ALIGN) * ALIGN


def elem_bytes(bits: int) -> int:
    return (bits + 7) // 8


def encode_elems(values: np.ndarray, bits: int) -> bytes:
    """Little-endian, sign-extended ``ceil(bits/8)``-byte elements (D12)."""
    nb = elem_bytes(bits)
    v = np.asarray(values, np.int64).ravel()
    return (v.astype("<i8").view(np.uint8).reshape(-1, 8)[:, :nb]).tobytes()


class ConstPool:
    """Constant vectors in global memory, deduplicated by content."""

    def __init__(self, base: int = 0):
        self.base = base
        self.top = base
        self.segments: dict[int, bytes] = {}
        self._index: dict[bytes, int] = {}

    def add(self, values: np.ndarray, bits: int) -> int:
        data = encode_elems(values, bits)
        a = self._index.get(data)
        if a is None:
            a = self._index[data] = self.top
            self.segments[a] = data
            self.top = _align(self.top + len(data))
        return a

    @property
    def nbytes(self) -> int:
        return sum(len(d) for d in self.segments.values())


def _reads(layer) -> list:
    """Every activation a layer reads: its inputs and a fused residual operand (read by the
    conv that absorbed the Add, so its buffer must live until then)."""
    add = getattr(layer, "fused_add", None)
    return list(layer.inputs) + ([add.other] if add is not None else [])


def plan_gmem(low: Lowered, *, reuse: bool = True, images: int = 1) -> dict:
    """Assign ``Buffer.addr`` for every activation buffer; returns the memory map.

    Buffers of graph inputs and outputs are never reused.  With ``images`` > 1 (a stream of
    images compiled into one program) every image gets its own copy of the whole activation
    area: image ``k``'s buffers lie ``k · image_stride`` bytes above image 0's, so no image can
    overwrite another's data (no write-after-read hazards between images).  Returns a dict
    with ``buffers`` (name → [address, bytes], image 0), ``activation_bytes`` (one image),
    ``image_stride`` and ``end`` (first free address after all images).
    """
    pinned = {t.buf.name for t in low.inputs} | {t.buf.name for t in low.outputs}
    last_use: dict[str, int] = {}
    for i, layer in enumerate(low.layers):
        for t in _reads(layer):
            last_use[t.buf.name] = i
    top = 0
    for t in low.inputs:
        t.buf.addr = top
        top = _align(top + t.buf.size)
    free: list[tuple[int, int]] = []   # (addr, size) holes
    for i, layer in enumerate(low.layers):
        buf = layer.out.buf
        size = _align(max(buf.size, 1))
        addr = None
        if reuse and buf.name not in pinned:
            for k, (a, s) in enumerate(free):
                if s >= size:
                    addr = a
                    free[k] = (a + size, s - size)
                    break
        if addr is None:
            addr = top
            top += size
        buf.addr = addr
        if reuse:
            for t in _reads(layer):
                b = t.buf
                if last_use.get(b.name) == i and b.name not in pinned and b.addr >= 0:
                    free.append((b.addr, _align(max(b.size, 1))))
                    last_use[b.name] = -1
    seen = set()
    bufs = {}
    for b in low.buffers:
        if b.name in seen or b.addr < 0:
            continue
        seen.add(b.name)
        bufs[b.name] = [b.addr, b.size]
    stride = _align(top)
    return {"buffers": bufs, "activation_bytes": top, "image_stride": stride, "images": images,
            "end": stride * max(1, images)}
