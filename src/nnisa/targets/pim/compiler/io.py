"""Conversion between logical (NCHW/NC) integer tensors and the compiled program's storage.

A tensor's storage is described by its manifest entry (``shape``/``layout``/``address``) and
the permutation ``perm`` of :class:`~nnisa.targets.pim.compiler.graph.TensorRef`.
"""

from __future__ import annotations

import numpy as np

from .graph import TensorRef
from .memory_plan import encode_elems


def to_storage(t: TensorRef, q: np.ndarray) -> np.ndarray:
    """Logical integer tensor (batch 1) → flat storage order."""
    flat = np.asarray(q, np.int64).reshape(-1)
    return flat if t.perm is None else flat[t.perm]


def from_storage(t: TensorRef, s: np.ndarray) -> np.ndarray:
    """Flat storage values → logical tensor of ``t.shape``."""
    s = np.asarray(s, np.int64).reshape(-1)
    if t.perm is None:
        return s.reshape(t.shape)
    out = np.empty_like(s)
    out[t.perm] = s
    return out.reshape(t.shape)


def input_segments(t: TensorRef, q: np.ndarray) -> dict[int, bytes]:
    """``{address: bytes}`` placing integer input ``q`` into global memory."""
    return {int(t.buf.addr): encode_elems(to_storage(t, q), t.bits)}


def read_output(t: TensorRef, gmem) -> np.ndarray:
    """Read output ``t`` from a :class:`~nnisa.targets.pim.sim.memory.GlobalMemory` (logical shape)."""
    n = int(np.prod(t.shape))
    return from_storage(t, gmem.read_tensor(int(t.buf.addr), n, t.bits))
