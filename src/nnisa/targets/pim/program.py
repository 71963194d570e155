"""The in-memory PIM program: per-core numpy arrays of decoded instructions plus metadata.

Every file format (pimsim-nn JSON, NNPI binary, text) reads into and writes from
:class:`PimProgram`.  Instructions are rows of a structured array with the columns of
:data:`nnisa.targets.pim.isa.COLUMNS`, so a whole core is processed with numpy at once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .isa import COLUMNS, OPCODES, build_isa

DTYPE = np.dtype(COLUMNS)


@dataclass
class PimProgram:
    """A multi-core PIM program.

    Attributes
    ----------
    cores
        core id → structured array (dtype :data:`DTYPE`), in program order.
    array_group_map
        core id → list of crossbar counts; the index is the array-group id.
    chip_cores
        Total cores of the chip (pimsim-nn ``config.core_cnt``); ``None`` = max id + 1.
    word_bits, extended
        Binary encoding mode: 64/32-bit words, strict or extended mvmul group field.
    act_frac
        core id → (act_in_frac, act_out_frac) set by ``.act_frac`` (D9).
    config_extra
        Other ``config`` keys of a pimsim-nn JSON file, written back unchanged.
    odd_pairs
        Odd global-address registers are accepted in strict mode (set when a pimsim-nn JSON
        program uses them; the importer warns once, spec §1.6).
    warnings
        Non-fatal findings from reading the program (aggregated, one line each).
    image_ends
        Streams of images (a compiled program with ``images`` > 1, or marks kept in a bundle):
        core id → for every image, the end (exclusive pc) of that image's work on the core
        (0: no work).  The simulator derives each image's completion time from them.
    pipeline_depth
        Stages of a pipelined stream (the throughput schedule): the simulator's period uses the
        images that complete while every stage is busy (:mod:`~nnisa.targets.pim.sim.stream`).
    layers, layer_starts
        A compiled program's layers (per layer index: ``name`` = the ONNX node, ``op``,
        ``crossbars`` holding its weights, on-chip ``memory_bytes``) and, per core, where each
        layer's code starts: ``[(pc, layer index), ...]`` ascending (a layer's code runs to the
        next start; index -1 = code no layer owns).  The simulator attributes its figures to
        layers with them (``Stats.layers``).
    """

    cores: dict[int, np.ndarray] = field(default_factory=dict)
    array_group_map: dict[int, list[int]] = field(default_factory=dict)
    chip_cores: int | None = None
    word_bits: int = 64
    extended: bool = False
    act_frac: dict[int, tuple[int, int]] = field(default_factory=dict)
    config_extra: dict[str, Any] = field(default_factory=dict)
    odd_pairs: bool = False
    warnings: list[str] = field(default_factory=list)
    image_ends: dict[int, list[int]] = field(default_factory=dict)
    pipeline_depth: int = 1
    layers: list[dict[str, Any]] = field(default_factory=list)
    layer_starts: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def images(self) -> int:
        """Images of the stream the program processes (1 when it carries no image marks)."""
        return max((len(v) for v in self.image_ends.values()), default=1)

    @property
    def isa(self):
        """The ISA table for this program's encoding mode."""
        return build_isa(self.word_bits, self.extended, odd_pairs=self.odd_pairs)

    @property
    def core_count(self) -> int:
        """Chip core count: ``chip_cores`` or the highest used core id + 1."""
        if self.chip_cores is not None:
            return self.chip_cores
        ids = list(self.cores) + list(self.array_group_map)
        return max(ids) + 1 if ids else 0

    def __len__(self) -> int:
        return sum(len(a) for a in self.cores.values())

    def items(self) -> Iterator[tuple[int, np.ndarray]]:
        """(core id, instructions) in ascending core id."""
        for c in sorted(self.cores):
            yield c, self.cores[c]

    def op_counts(self) -> dict[str, int]:
        """Instruction mix over all cores (mnemonic → count, nonzero only)."""
        total = Counter()
        for _, rows in self.items():
            counts = np.bincount(rows["op"].astype(np.int64), minlength=len(OPCODES))
            for i, n in enumerate(counts.tolist()):
                if n:
                    total[OPCODES[i]] += n
        return dict(sorted(total.items(), key=lambda kv: -kv[1]))

    def equals(self, other: "PimProgram") -> bool:
        """Same instructions on the same cores and the same array-group map."""
        if sorted(self.cores) != sorted(other.cores):
            return False
        for c, rows in self.cores.items():
            if len(rows) != len(other.cores[c]) or not np.array_equal(rows, other.cores[c]):
                return False
        norm = lambda m: {k: list(v) for k, v in m.items() if v}
        return norm(self.array_group_map) == norm(other.array_group_map)

    def with_mode(self, word_bits: int | None = None, extended: bool | None = None) -> "PimProgram":
        """A shallow copy with another encoding mode (instructions shared)."""
        import copy
        p = copy.copy(self)
        if word_bits is not None:
            p.word_bits = word_bits
        if extended is not None:
            p.extended = extended
        return p
