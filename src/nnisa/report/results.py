"""Results as notebook-friendly objects (issue 28 item 7).

:class:`Report` is the dict ``nnisa.run_model`` returns with ``to_dict()`` and ``to_pandas()``
(one row); :class:`Rows` is a list of such rows (``compare_model``) with a DataFrame of one row per
target.  Both stay plain ``dict``/``list`` underneath, so JSON and older code see no change.
pandas is imported only when asked for (the ``sweep`` extra installs it).
"""

from __future__ import annotations

from typing import Any


def _pandas():
    try:
        import pandas
    except ImportError:  # pragma: no cover - depends on the installation
        from ..core.errors import UnsupportedError
        raise UnsupportedError("pandas is not installed (pip install 'nnisa[sweep]')") from None
    return pandas


def _flat(d: dict[str, Any]) -> dict[str, Any]:
    """Scalar figures only: nested tables (per layer, per core, the compile report) stay in ``to_dict``."""
    return {k: v for k, v in d.items() if v is None or isinstance(v, (bool, int, float, str))}


class Report(dict):
    """One run's figures (a ``dict``) with ``to_dict()`` and ``to_pandas()``."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self)

    def to_pandas(self):
        """A one-row DataFrame of the scalar figures."""
        return _pandas().DataFrame([_flat(self)])


class Rows(list):
    """Rows of figures (one per target or point) with ``to_dict()`` and ``to_pandas()``."""

    def to_dict(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self]

    def to_pandas(self):
        """One row per entry, scalar figures as columns."""
        return _pandas().DataFrame([_flat(r) for r in self])


def results_frame(results: Any):
    """A sweep's results (a results folder or ``results.parquet``) as a pandas DataFrame."""
    from ..sweep.store import read_table
    return _pandas().DataFrame(read_table(results))
