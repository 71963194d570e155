"""The Tensil program model: an architecture, a table of decoded instructions, raw words, and
(optionally) the model (``.tmodel``) it belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import TensilArch
from .isa import COLUMNS, Layout, TensilISA, build_isa

DTYPE = np.dtype(COLUMNS)


@dataclass
class TensilProgram:
    """A decoded Tensil program.

    Attributes
    ----------
    arch
        The architecture the instructions are laid out for.
    rows
        Structured array of IR rows (:data:`nnisa.targets.tensil.isa.COLUMNS`).
    raw
        Index → word of every non-canonical instruction (``rows["hdr"] == RAW`` there).
    model
        The :class:`~nnisa.targets.tensil.formats.model.TensilModel` the program came from, if any.
    """

    arch: TensilArch
    rows: np.ndarray
    raw: dict[int, int] = field(default_factory=dict)
    model: Any = None

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def layout(self) -> Layout:
        return Layout.from_arch(self.arch)

    @property
    def isa(self) -> TensilISA:
        return build_isa(self.arch)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensilProgram) and self.arch == other.arch and self.raw == other.raw
                and np.array_equal(self.rows, other.rows))

    @classmethod
    def empty(cls, arch: TensilArch, n: int = 0) -> "TensilProgram":
        return cls(arch, np.zeros(n, dtype=DTYPE))
