"""Small configurations and helpers for functional tests (independent Python-int references)."""

from __future__ import annotations

import numpy as np

from nnisa.targets.pimsab import precision as P
from nnisa.targets.pimsab.config import make_config
from nnisa.targets.pimsab.isa import build_isa
from nnisa.targets.pimsab.sim.machine import Machine

ISA = build_isa()
SMALL = make_config(dict(mesh_width=2, mesh_height=2, crams_per_tile=4, cram_cols=16, cram_rows=96, htree_depth=1))


def value_of(pattern: int, byte: int) -> int:
    """Python-int value of a raw pattern at a precision byte (integers only)."""
    p = P.decode(byte)
    pattern &= (1 << p.bits) - 1
    if p.signed and pattern >> (p.bits - 1):
        return pattern - (1 << p.bits)
    return pattern


def rand_patterns(rng, n: int, bits: int) -> np.ndarray:
    hi = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    lo = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    v = (hi << np.uint64(32)) | lo
    return v & np.uint64((1 << bits) - 1) if bits < 64 else v


def machine(cfg=SMALL) -> Machine:
    return Machine(cfg)


def run(m: Machine, tile: int, mnemonic: str, **fields) -> bool:
    return m.step(tile, ISA.row(mnemonic, **fields))
