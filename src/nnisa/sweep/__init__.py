"""Design-space exploration: ``nnisa compare`` (one model on every target) and ``nnisa sweep``
(models x targets x configuration grids, locally or on Ray) with Pareto reports.

Modules: ``spec`` (the validated sweep spec and its points), ``measure`` (one row: a model or
workload on one target), ``compare``, ``worker`` (a point in a worker, with provenance),
``executors`` (local process pool, Ray), ``store`` (append-only journal, Parquet table),
``run`` (the driver), ``pareto`` and ``report``.  See ``docs/sweep.md``.
"""

from .compare import compare_model
from .measure import measure
from .pareto import pareto_front
from .report import sweep_report
from .run import run_sweep
from .spec import Point, SweepSpec, expand, load_spec
from .store import read_table

__all__ = ["compare_model", "measure", "pareto_front", "sweep_report", "run_sweep", "Point", "SweepSpec", "expand",
           "load_spec", "read_table"]
