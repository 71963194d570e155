"""Run a generated model (:mod:`tests.generated.modelgen`) on a target and classify the outcome.

Outcomes: ``exact`` (ran; simulated integers equal the frontend's integer reference), ``ran``
(ran; no integer reference to compare, e.g. a float machine), ``inexact`` (ran, but the integers
differ from the reference), ``refused`` (a one-line :class:`~nnisa.core.errors.NnisaError` before
or during the work: an operator or a hardware limit the target names) and ``crash`` (any other
exception: a defect).  ``max_rel_error`` against onnxruntime comes with every run.
"""

from __future__ import annotations

import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from nnisa.core.errors import NnisaError

from .modelgen import Generated


@dataclass
class Outcome:
    kind: str                       # exact | ran | inexact | refused | crash
    message: str = ""
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def max_rel_error(self) -> float | None:
        return self.report.get("max_rel_error")


def run_generated(target: str, gen: Generated, *, samples: int = 2, **options: Any) -> Outcome:
    """Compile and simulate ``gen`` on ``target`` with ``samples`` random samples."""
    from nnisa.api import run_model
    with tempfile.TemporaryDirectory(prefix="nnisa-gen-") as tmp:
        path = Path(tmp) / f"{gen.op}_{gen.seed}.onnx"
        onnx.save(gen.model, path)
        try:
            r = run_model(target, path, samples=samples, **options)
        except NnisaError as exc:
            return Outcome("refused", str(exc))
        except Exception as exc:  # a defect: keep where it happened
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            return Outcome("crash", f"{type(exc).__name__}: {exc} ({Path(tb.filename).name}:{tb.lineno})")
    exact = r.get("bit_exact")
    kind = "ran" if exact is None else ("exact" if exact else "inexact")
    return Outcome(kind, "", r)
