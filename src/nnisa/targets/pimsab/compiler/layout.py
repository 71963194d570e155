"""DRAM layout of a compiled DSL program and the host side of running it (spec §4.8–§4.9).

Every transfer the code generator emits reads or writes one DRAM *region*: a contiguous run of
elements whose tensor positions are ``offset + pattern`` (a flat index per element, −1 = padding).
Since indices are affine in the loops, one pattern serves all the transfers of an operand; the
host packs inputs into the regions (activations element-wise little-endian, ``tr=1``; constant
tensors as pre-transposed bit planes, ``tr=0``) and unpacks outputs from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..sim.dram import element_bytes, pack_elements, pack_planes, unpack_elements
from ..sim.values import bf16_bits
from .lang import CompileError


FLOAT_TOKENS = ("f32", "f16", "bf16")


def float_patterns(a, fmt: str) -> np.ndarray:
    """Host float values → bit patterns of ``fmt`` (f16/bf16: rounded to nearest even)."""
    if fmt == "f16":
        with np.errstate(over="ignore"):
            return np.asarray(a, np.float16).view(np.uint16)
    if fmt == "bf16":
        return bf16_bits(np.asarray(a, np.float32))
    return np.asarray(a, np.float32).view(np.uint32)


def float_values(v: np.ndarray, fmt: str) -> np.ndarray:
    """Bit patterns of ``fmt`` (in int64) → float32 values (exact)."""
    if fmt == "f32":
        return (v & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    if fmt == "f16":
        return (v & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32)
    return ((v & 0xFFFF).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _bit_planes(v: np.ndarray, p: int) -> np.ndarray:
    """(..., n) uint64 patterns → (..., p, n) uint8 bits (plane j = bit j), through the bytes of
    each element (one unpack, no p-fold 64-bit shifts)."""
    nbytes = (p + 7) // 8
    le = np.ascontiguousarray(v.astype("<u8", copy=False)).view(np.uint8).reshape(v.shape + (8,))[..., :nbytes]
    bits = np.unpackbits(le, axis=-1, bitorder="little")[..., :p]      # (..., n, p)
    if p > 64:   # planes above the 64-bit pattern are zeros
        bits = np.concatenate([bits, np.zeros(bits.shape[:-1] + (p - 64,), np.uint8)], axis=-1)
    return np.moveaxis(bits, -1, -2)


@dataclass
class Region:
    tensor: str
    addr: int
    n: int
    bits: int  # DRAM element width
    prec_bits: int  # CRAM precision (bit planes for tr=0)
    signed: bool
    tr: int
    pattern: int
    offset: int
    fmt: str = ""  # "f32"/"f16"/"bf16": the elements are float bit patterns
    stack: int = 1  # k > 1: element e packs tensor[offset + pattern[j·n + e]] in bits [j·b, (j+1)·b), b = prec/k

    @property
    def nbytes(self) -> int:
        return element_bytes(self.n, self.bits) if self.tr else self.prec_bits * ((self.n + 7) // 8)


@dataclass
class Layout:
    """Tensors, index patterns and DRAM regions of a compiled program."""

    inputs: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)  # name → (shape, dtype token)
    outputs: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    patterns: list[np.ndarray] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    store_regions: list[Region] = field(default_factory=list)
    next_addr: int = 0
    _seen: dict = field(default_factory=dict)

    def pattern(self, arr: np.ndarray) -> int:
        arr = np.ascontiguousarray(arr, dtype=np.int64)
        key = (arr.size, hash(arr.tobytes()))
        if key in self._seen:
            return self._seen[key]
        self.patterns.append(arr)
        self._seen[key] = len(self.patterns) - 1
        return self._seen[key]

    def _alloc(self, nbytes: int) -> int:
        addr = self.next_addr
        self.next_addr += -(-nbytes // 64) * 64
        return addr

    def load_region(self, tensor: str, pattern: int, offset: int, bits: int, prec_bits: int, signed: bool,
                    tr: int, stack: int = 1) -> int:
        """DRAM address of the region holding ``tensor[offset + pattern]`` (shared by equal loads);
        ``stack`` = k packs k pattern blocks side by side in each element (``Region.stack``)."""
        key = ("ld", tensor, pattern, offset, tr, stack)
        if key in self._seen:
            return self._seen[key]
        r = Region(tensor, 0, len(self.patterns[pattern]) // stack, bits, prec_bits, signed, tr, pattern, offset,
                   stack=stack)
        r.addr = self._alloc(r.nbytes)
        self.regions.append(r)
        self._seen[key] = r.addr
        return r.addr

    def store_region(self, tensor: str, pattern: int, offset: int, bits: int, signed: bool, fmt: str = "") -> int:
        r = Region(tensor, 0, len(self.patterns[pattern]), bits, bits, signed, 1, pattern, offset, fmt)
        r.addr = self._alloc(r.nbytes)
        self.store_regions.append(r)
        return r.addr

    # ------------------------------------------------------------------ host side
    def pack(self, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Input arrays (by tensor name) → ``{"dram_0x0": image}`` for :func:`simulate`."""
        return {"dram_0x0": self.pack_batch([values])[0]}

    def pack_batch(self, samples: list[dict[str, np.ndarray]]) -> np.ndarray:
        """:meth:`pack` of many samples at once: their DRAM images as one (samples, bytes) array.
        A tensor every sample holds alike (weights, constants) is gathered and packed once, its
        regions broadcast into the images."""
        flat = self._flat_inputs(samples)
        end = max((r.addr + r.nbytes for r in self.regions), default=0)
        img = np.zeros((len(samples), end), np.uint8)
        for r in self.regions:
            data = self._pack_region(r, flat[r.tensor])
            img[:, r.addr:r.addr + data.shape[-1]] = data
        return img

    def _flat_inputs(self, samples: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """Input tensors flattened to (1 | samples, size + 1) int64 (the last column 0: the value of
        index −1); one row when every sample holds the same tensor."""
        flat = {}
        for name, (shape, tok) in self.inputs.items():
            arrs = []
            for values in samples:
                if name not in values:
                    raise CompileError(f"missing input tensor {name!r} (inputs: {', '.join(self.inputs)})")
                a = np.asarray(values[name])
                if a.shape != shape:
                    raise CompileError(f"input {name!r}: shape {a.shape}, expected {shape}")
                arrs.append(a)
            if all(a is arrs[0] or np.array_equal(a, arrs[0]) for a in arrs[1:]):
                arrs = arrs[:1]
            stacked = np.stack(arrs).reshape(len(arrs), -1)
            if tok in FLOAT_TOKENS:  # float tensors travel as their bit patterns
                stacked = float_patterns(stacked, tok)
            flat[name] = np.concatenate([stacked.astype(np.int64), np.zeros((len(arrs), 1), np.int64)], axis=1)
        return flat

    def _pack_region(self, r: Region, src: np.ndarray) -> np.ndarray:
        """The bytes of region ``r`` from the flat input rows ``src`` (one row per sample or one)."""
        pat = self.patterns[r.pattern]
        v = src[:, pat + np.where(pat >= 0, r.offset, 0)].view(np.uint64)
        if r.stack > 1:
            b = r.prec_bits // r.stack
            parts = v.reshape(len(src), r.stack, r.n) & np.uint64((1 << b) - 1)
            v = parts[:, 0].copy()
            for j in range(1, r.stack):
                v |= parts[:, j] << np.uint64(j * b)
        if r.tr:
            return pack_elements(v, r.bits)
        return pack_planes(_bit_planes(v, r.prec_bits))

    def unpack(self, read) -> dict[str, np.ndarray]:
        """Outputs from DRAM (``read(addr, nbytes)`` → uint8 array) → arrays by tensor name."""
        return self.unpack_batch(lambda addr, n: np.asarray(read(addr, n), np.uint8)[None], 1)[0]

    def unpack_batch(self, read, samples: int) -> list[dict[str, np.ndarray]]:
        """:meth:`unpack` of many samples: ``read(addr, nbytes)`` → (samples or 1, nbytes) uint8."""
        out = {name: np.zeros((samples, int(np.prod(shape))), np.float32 if tok in FLOAT_TOKENS else np.int64)
               for name, (shape, tok) in self.outputs.items()}
        for r in self.store_regions:
            raw = np.asarray(read(r.addr, r.nbytes), np.uint8)
            v = unpack_elements(raw, r.n, r.bits).view(np.int64)
            if r.fmt:
                v = float_values(v, r.fmt)
            elif r.signed and r.bits < 64:
                v = np.where(v >= (1 << (r.bits - 1)), v - (1 << r.bits), v)
            pat = self.patterns[r.pattern]
            ok = pat >= 0
            out[r.tensor][:, pat[ok] + r.offset] = v[:, ok]
        return [{name: out[name][b].reshape(shape) for name, (shape, _) in self.outputs.items()}
                for b in range(samples)]

    def observed_bytes(self) -> np.ndarray:
        """Bool per DRAM byte from address 0: the bytes :meth:`unpack` reads (the elements of the
        output regions that hold a tensor element, not padding)."""
        seen = np.zeros(self.next_addr, bool)
        for r in self.store_regions:
            e = np.flatnonzero(self.patterns[r.pattern] >= 0)
            first, last = (e * r.bits) >> 3, (e * r.bits + r.bits - 1) >> 3
            for j in range(int((last - first).max(initial=0)) + 1):
                seen[r.addr + np.minimum(first + j, last)] = True
        return seen

    def summary(self) -> dict:
        return {"input_regions": len(self.regions), "output_regions": len(self.store_regions),
                "input_bytes": int(sum(r.nbytes for r in self.regions)),
                "output_bytes": int(sum(r.nbytes for r in self.store_regions)), "dram_bytes": int(self.next_addr)}
