"""Per-layer figures of a compiled model (issue 28 item 5): one :class:`LayerRow` per layer.

Every target reports its layers in the same columns, **per input** (one sample):

``layer``
    The ONNX node name of the (first) node the layer computes; ``"host"`` for work done on the
    host, ``"other"`` for device work no layer owns.
``op``
    The operator kind (``Conv``, ``MatMul``, fused kinds joined by ``+``: ``Conv+Relu``).
``cycles``
    Cycles of the target's timing model from the layer's first instruction issue to its last
    completion.  On pipelined machines layers overlap: the rows are spans, not a partition of the
    run's cycles.
``latency_ns``
    ``cycles`` at the configured clock (``None`` without one).
``energy_pj``
    The *dynamic* energy of the layer's actions; static energy stays in the run's totals.  The
    rows add up to the run's ``energy_dynamic_pj / inputs``.
``utilization``
    Fraction (0..1) of the target's compute resource the layer keeps busy; what that resource is
    is the target's :attr:`~nnisa.core.target.Target.layer_utilization` phrase.
``memory_bytes``
    On-chip bytes the layer occupies (its weights and the output activations held on chip).
``instructions``
    Instructions issued for the layer (``None`` where not meaningful).
``extra``
    Target-specific scalar columns (DAIS adders and depth, PIM crossbars, PIMSAB tiles, ...).

Simulators put rows in :attr:`Stats.layers <nnisa.core.target.Stats.layers>`; compilers put what
they know before simulation in :attr:`CompileResult.layer_table
<nnisa.core.target.CompileResult.layer_table>`.  ``nnisa run|sim|compile --layers`` prints them
(:func:`nnisa.report.tables.print_layers`); JSON output carries them as ``"layers"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterable

__all__ = ["LAYER_COLUMNS", "LayerRow", "layer_dicts", "layer_rows", "sum_column"]

#: the columns every target's rows have, in table order
LAYER_COLUMNS = ("layer", "op", "cycles", "latency_ns", "energy_pj", "utilization", "memory_bytes", "instructions")


@dataclass
class LayerRow:
    """One layer's figures per input (see the module docstring for each column)."""

    layer: str
    op: str
    cycles: int | None = None
    latency_ns: float | None = None
    energy_pj: float | None = None
    utilization: float | None = None
    memory_bytes: int | None = None
    instructions: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.utilization is not None and not -1e-9 <= self.utilization <= 1 + 1e-9:
            raise ValueError(f"layer {self.layer}: utilization {self.utilization} is not a fraction in [0, 1]")
        clash = set(self.extra) & set(LAYER_COLUMNS)
        if clash:
            raise ValueError(f"layer {self.layer}: extra columns {sorted(clash)} shadow the common ones")

    def to_dict(self) -> dict[str, Any]:
        """The row flat: the common columns, then the target's extras (JSON-serialisable)."""
        d = {c: _plain(getattr(self, c)) for c in LAYER_COLUMNS}
        d.update({k: _plain(v) for k, v in self.extra.items()})
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LayerRow":
        """The inverse of :meth:`to_dict` (unknown keys become ``extra``)."""
        known = {f.name for f in fields(cls) if f.name != "extra"}
        return cls(**{k: v for k, v in d.items() if k in known},
                   extra={k: v for k, v in d.items() if k not in known and k != "extra"} | dict(d.get("extra") or {}))


def _plain(v: Any) -> Any:
    """numpy scalars as Python numbers (rows go into JSON and Parquet)."""
    item = getattr(v, "item", None)
    return item() if callable(item) and getattr(v, "ndim", 1) == 0 else v


def layer_rows(rows: Iterable[LayerRow | dict[str, Any]] | None) -> list[LayerRow] | None:
    """Rows as :class:`LayerRow` objects (dicts converted); ``None`` stays ``None``."""
    if rows is None:
        return None
    return [r if isinstance(r, LayerRow) else LayerRow.from_dict(r) for r in rows]


def layer_dicts(rows: Iterable[LayerRow | dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Rows as flat dicts (:meth:`LayerRow.to_dict`); ``None`` stays ``None``."""
    conv = layer_rows(rows)
    return None if conv is None else [r.to_dict() for r in conv]


def sum_column(rows: Iterable[LayerRow], column: str) -> float | None:
    """The sum of one column over the rows (``None`` if any row lacks it)."""
    total = 0.0
    for r in rows:
        v = getattr(r, column)
        if v is None:
            return None
        total += v
    return total
