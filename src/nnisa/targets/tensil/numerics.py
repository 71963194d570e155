"""Tensil numerics (spec §6): storage, float↔fixed conversion and the MAC primitive.

Every fixed-point operation of the machine is ``mac(x, y, z) = x*y + z`` on raw integers with
round-half-to-even at the binary point and saturation (never wrap) — in each PE, in the
accumulator adds and in the SIMD ALU.  FLOAT32 uses two float32 roundings (no FMA).

Arrays are int64 for the fixed types and float32 for FLOAT32.  :class:`Numeric` also counts
overflows/underflows (saturation events) the way Tensil's summary reports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.fixedpoint import int_range, shift_right_round
from .config import DATA_TYPES, TensilArch

#: absolute tolerance of ``-c compare.csv`` per data type (spec §5.5)
TOLERANCE = {"FP8BP4": 0.2, "FP16BP8": 0.2, "FP18BP10": 0.05, "FP32BP16": 0.01, "FLOAT32": 1e-4}


@dataclass
class SatStats:
    """Saturation statistics: count, maximum and total |delta| (in raw units / floats)."""

    overflows: int = 0
    underflows: int = 0
    max_delta: float = 0.0
    sum_delta: float = 0.0

    def add(self, exact: np.ndarray, clamped: np.ndarray) -> None:
        over = exact > clamped
        under = exact < clamped
        no, nu = int(over.sum()), int(under.sum())
        if no or nu:
            d = np.abs(exact - clamped)
            self.overflows += no
            self.underflows += nu
            self.max_delta = max(self.max_delta, float(d.max()))
            self.sum_delta += float(d.sum())

    @property
    def count(self) -> int:
        return self.overflows + self.underflows

    def to_dict(self, scale: float = 1.0) -> dict:
        n = self.count
        return {"overflows": self.overflows, "underflows": self.underflows,
                "max_delta": self.max_delta * scale, "avg_delta": (self.sum_delta / n * scale) if n else 0.0}


@dataclass
class Numeric:
    """Arithmetic of one data type."""

    data_type: str
    stats: dict[str, SatStats] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bits, self.bp, self.nbytes = DATA_TYPES[self.data_type]
        self.is_float = self.bp is None
        if not self.is_float:
            self.lo, self.hi = int_range(self.bits)
            self.one = 1 << self.bp
        else:
            self.one = np.float32(1.0)
        self.dtype = np.float32 if self.is_float else np.int64

    @classmethod
    def of(cls, arch: TensilArch) -> "Numeric":
        return cls(arch.data_type)

    def zeros(self, shape) -> np.ndarray:
        return np.zeros(shape, dtype=self.dtype)

    def _stat(self, key: str) -> SatStats:
        s = self.stats.get(key)
        if s is None:
            s = self.stats[key] = SatStats()
        return s

    def clamp(self, exact: np.ndarray, key: str | None = None) -> np.ndarray:
        r = np.clip(exact, self.lo, self.hi)
        if key is not None:
            self._stat(key).add(exact, r)
        return r

    # -- the MAC primitive and what derives from it (§6.3)
    def mac(self, x, y, z, key: str | None = None) -> np.ndarray:
        if self.is_float:
            return (np.float32(x) * np.float32(y)).astype(np.float32) + np.float32(z)
        m = np.asarray(x, dtype=np.int64) * np.asarray(y, dtype=np.int64) + (np.asarray(z, dtype=np.int64) << self.bp)
        return self.clamp(shift_right_round(m, self.bp, "half_even"), key)

    def plus(self, x, y, key: str | None = None) -> np.ndarray:
        if self.is_float:
            return (np.asarray(x, np.float32) + np.asarray(y, np.float32)).astype(np.float32)
        return self.clamp(np.asarray(x, dtype=np.int64) + np.asarray(y, dtype=np.int64), key)

    def minus(self, x, y, key: str | None = None) -> np.ndarray:
        if self.is_float:
            return (np.asarray(x, np.float32) - np.asarray(y, np.float32)).astype(np.float32)
        return self.clamp(np.asarray(x, dtype=np.int64) - np.asarray(y, dtype=np.int64), key)

    def times(self, x, y, key: str | None = None) -> np.ndarray:
        return self.mac(x, y, 0, key)

    # -- conversions (§6.2)
    def from_float(self, x, key: str | None = "convert", rule: str = "tensil") -> np.ndarray:
        """float32 values → raw (``tensil``: round half up + saturate; ``pynq``: half even + wrap)."""
        f = np.asarray(x, dtype=np.float32)
        if self.is_float:
            return f
        scaled = f.astype(np.float64) * float(1 << self.bp)
        if rule == "pynq":
            r = np.round(scaled).astype(np.int64)
            return ((r - self.lo) & ((1 << self.bits) - 1)) + self.lo
        if rule != "tensil":
            raise ValueError(f"unknown conversion rule {rule!r}")
        r = np.floor(scaled + 0.5)
        r = np.clip(r, self.lo - 1, self.hi + 1).astype(np.int64)  # keep the over/underflow visible
        return self.clamp(r, key)

    def to_float(self, raw) -> np.ndarray:
        if self.is_float:
            return np.asarray(raw, dtype=np.float32)
        return np.asarray(raw, dtype=np.int64) / float(1 << self.bp)

    # -- file bytes (§6.1)
    def to_bytes(self, raw: np.ndarray) -> bytes:
        a = np.asarray(raw)
        if self.is_float:
            return a.astype(">f4").tobytes()
        if self.data_type == "FP18BP10":
            return (a.astype(np.int64) & 0x3FFFF).astype("<u4").tobytes()
        return a.astype({1: "<i1", 2: "<i2", 4: "<i4"}[self.nbytes]).tobytes()

    def from_bytes(self, data: bytes) -> np.ndarray:
        if self.is_float:
            return np.frombuffer(data, dtype=">f4").astype(np.float32)
        if self.data_type == "FP18BP10":
            v = np.frombuffer(data, dtype="<u4").astype(np.int64) & 0x3FFFF
            return np.where(v >= 1 << 17, v - (1 << 18), v)
        return np.frombuffer(data, dtype={1: "<i1", 2: "<i2", 4: "<i4"}[self.nbytes]).astype(np.int64)


def mac_int(x: int, y: int, z: int, bits: int, bp: int) -> int:
    """Reference MAC of spec §6.3 on Python ints (round half to even, saturate)."""
    m = x * y + (z << bp)
    half = (m >> (bp - 1)) & 1
    rest = (m & ((1 << (bp - 1)) - 1)) != 0
    lsb = (m >> bp) & 1
    r = (m >> bp) + (1 if half and (rest or lsb) else 0)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return lo if r < lo else hi if r > hi else r
