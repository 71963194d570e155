"""Array-group weights: loading (``.npz`` or mappings), generated fills and capacity checks."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ....core.errors import ConfigError, FormatError
from ....core.fileio import load_npz
from ..isa import OPCODE
from ..program import PimProgram


@dataclass
class GroupWeights:
    """The programmed matrix of one array group (K × N integers) and derived data."""

    w: np.ndarray  # int64 (K, N)
    wmin: int
    wmax: int
    zero: bool
    _plans: dict = field(default_factory=dict, repr=False)
    _zeros: np.ndarray | None = field(default=None, repr=False)

    @property
    def K(self) -> int:
        return self.w.shape[0]

    @property
    def N(self) -> int:
        return self.w.shape[1]

    def zeros(self) -> np.ndarray:
        """An all-zero output vector (shared; never modified)."""
        if self._zeros is None:
            self._zeros = np.zeros(self.N, dtype=np.int64)
        return self._zeros

    def plan(self, ibiw: int) -> tuple[str, np.ndarray]:
        """How to multiply exactly for ``ibiw``-bit inputs: float32 BLAS if every partial sum is
        below 2^24, float64 below 2^53, else int64 (exact modulo 2^64, enough for wrap_obiw)."""
        p = self._plans.get(ibiw)
        if p is None:
            bound = self.K * (1 << (ibiw - 1)) * max(-self.wmin, self.wmax, 0)
            if bound < 1 << 24:
                p = ("f32", self.w.astype(np.float32))
            elif bound < 1 << 53:
                p = ("f64", self.w.astype(np.float64))
            else:
                p = ("i64", self.w)
            self._plans[ibiw] = p
        return p

    @classmethod
    def of(cls, arr: np.ndarray) -> "GroupWeights":
        w = np.ascontiguousarray(arr, dtype=np.int64)
        lo = int(w.min()) if w.size else 0
        hi = int(w.max()) if w.size else 0
        return cls(w, lo, hi, lo == 0 and hi == 0)


def _parse_key(key: Any) -> tuple[int, int]:
    if isinstance(key, tuple) and len(key) == 2:
        return int(key[0]), int(key[1])
    if isinstance(key, str) and key.startswith("c") and ".g" in key:
        c, g = key[1:].split(".g", 1)
        if c.isascii() and g.isascii() and c.isdigit() and g.isdigit() and len(c) < 10 and len(g) < 10:
            return int(c), int(g)
    raise FormatError(f"bad weights key {str(key)[:40]!r}: expected 'c<core>.g<group>' (e.g. 'c7.g12')")


def load_weights(src: str | os.PathLike | Mapping) -> dict[tuple[int, int], np.ndarray]:
    """Read weights from an ``.npz`` file (keys ``c<core>.g<group>``) or a mapping whose keys are
    such strings or ``(core, group)`` tuples.  Values must be 2-D integer arrays."""
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        if not path.exists():
            raise FormatError("weights file not found", file=str(path))
        src = load_npz(path)
    out = {}
    for key, arr in src.items():
        cg = _parse_key(key)
        a = np.asarray(arr)
        if a.ndim != 2:
            raise FormatError(f"weights c{cg[0]}.g{cg[1]}: expected a 2-D K x N matrix, got shape {a.shape}")
        if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
            raise FormatError(f"weights c{cg[0]}.g{cg[1]}: expected an integer dtype, got {a.dtype}")
        out[cg] = a
    return out


def _xbar_size(program: PimProgram, config) -> tuple[int, int]:
    xs = program.config_extra.get("xbar_size") if config is None else None
    if config is not None:
        xs = config.chip_config.core_config.matrix_config.xbar_size
    if not xs:
        xs = (128, 128)
    return int(xs[0]), int(xs[1])


def _group_mbiw(program: PimProgram) -> dict[tuple[int, int], int]:
    """Smallest mbiw each (core, group) is used with (for random weights)."""
    out: dict[tuple[int, int], int] = {}
    for c, rows in program.items():
        sel = rows[rows["op"] == OPCODE["mvmul"]]
        for g, mb in zip(sel["group"].tolist(), sel["mbiw"].tolist()):
            if mb > 0:
                out[(c, g)] = min(out.get((c, g), 64), mb)
    return out


def make_weights(program: PimProgram, kind: str, *, config=None, seed: int = 0) -> dict[tuple[int, int], np.ndarray]:
    """Weights for every group of ``program.array_group_map`` at full capacity
    (K = xbar rows, N = crossbars × xbar columns): ``"zeros"`` or ``"random"`` (uniform in the
    signed range of the smallest mbiw the group is used with, default 8 bits; seeded)."""
    rows, cols = _xbar_size(program, config)
    mb = _group_mbiw(program)
    rng = np.random.default_rng(seed)
    out = {}
    for c in sorted(program.array_group_map):
        for g, nx in enumerate(program.array_group_map[c]):
            shape = (rows, int(nx) * cols)
            if kind == "zeros":
                out[(c, g)] = np.zeros(shape, dtype=np.int64)
            elif kind == "random":
                b = mb.get((c, g), 8)
                out[(c, g)] = rng.integers(-(1 << (b - 1)), 1 << (b - 1), size=shape, dtype=np.int64)
            else:
                raise ConfigError(f"unknown weights mode {kind!r}: use a file, a mapping, 'zeros' or 'random'")
    return out


def _check_capacity(program: PimProgram, weights: dict, config) -> None:
    rows, cols = _xbar_size(program, config)
    for (c, g), w in sorted(weights.items()):
        groups = program.array_group_map.get(c)
        if groups is None or g >= len(groups):
            have = 0 if groups is None else len(groups)
            raise ConfigError(f"weights c{c}.g{g}: core {c} has {have} array group(s) in the array_group_map")
        K, N = w.shape
        nx = int(groups[g])
        if K > rows or N > nx * cols:
            raise ConfigError(f"weights c{c}.g{g}: shape {K} x {N} exceeds the group's capacity "
                              f"{rows} x {nx * cols} ({nx} crossbar(s) of {rows} x {cols})")
