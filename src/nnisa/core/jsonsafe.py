"""JSON-safe conversion of reports: one rule for the CLI, the demo, bundles and benchmarks."""

from __future__ import annotations

import dataclasses
import json
import math
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """A copy of ``obj`` made of dicts, lists, strings, ints, floats, bools and ``None``.

    numpy arrays and scalars become lists and Python numbers, paths and enums strings, dataclasses
    and pydantic models dicts, sets sorted lists, dict keys strings.  Non-finite floats become
    ``None`` (JSON has no NaN/Infinity).
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [to_jsonable(v) for v in sorted(obj, key=repr)]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (Path, Enum)):
        return str(obj.value if isinstance(obj, Enum) else obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    if hasattr(obj, "model_dump"):  # pydantic models
        return to_jsonable(obj.model_dump(mode="json"))
    return obj


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """``json.dumps`` of :func:`to_jsonable` (strict JSON: no NaN)."""
    return json.dumps(to_jsonable(obj), indent=indent, allow_nan=False)
