"""JSON both ways: reports to strict JSON (one rule for the CLI, the demo, bundles and benchmarks),
and strict reading of user JSON (no NaN/Infinity, bounded nesting, exact integers checked by range)."""

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


# ------------------------------------------------------------------------------ strict reading
#: nesting deeper than this is refused (real documents nest a handful of levels)
MAX_DEPTH = 512


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def loads(data: str | bytes, file: str | None = None, error: type | None = None) -> Any:
    """Parse strict JSON (no NaN/Infinity, no absurd nesting); big integers stay exact.

    Every problem is one ``error`` (default :class:`~nnisa.core.errors.FormatError`) naming ``file``.
    """
    from .errors import FormatError
    error = error or FormatError
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=file) from None
    if data.startswith("\ufeff"):
        data = data[1:]
    depth = max_nesting(data)
    if depth > MAX_DEPTH:
        raise error(f"invalid JSON: nested {depth} levels deep (limit {MAX_DEPTH})", file=file)
    try:
        return json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise error(f"invalid JSON: {str(exc)[:200]}", file=file) from None


def max_nesting(text: str) -> int:
    """Deepest ``[``/``{`` nesting outside strings (a cheap pre-check before parsing)."""
    import re
    # drop strings (with escapes) so brackets inside them do not count
    stripped = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text) if '"' in text else text
    depth = best = 0
    for ch in re.findall(r"[\[\]{}]", stripped):
        if ch in "[{":
            depth += 1
            best = max(best, depth)
        else:
            depth -= 1
    return best


def as_int(value: Any, what: str, *, lo: int = -(1 << 63), hi: int = (1 << 63) - 1,
           file: str | None = None, error: type | None = None) -> int:
    """``value`` as an int in ``[lo, hi]``: ints, or floats that are whole and exact (|v| < 2^53).

    Booleans, fractions (``1.5``), non-finite and out-of-range values raise ``error``."""
    from .errors import FormatError
    error = error or FormatError
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise error(f"{what}: expected an integer, got {str(value)[:40]!r}", file=file)
    if isinstance(value, (float, np.floating)):
        if not (math.isfinite(value) and float(value).is_integer() and abs(value) < 2.0 ** 53):
            raise error(f"{what}: expected an integer, got {value!r}", file=file)
        value = int(value)
    value = int(value)
    if not lo <= value <= hi:
        raise error(f"{what}: {str(value)[:40]} is outside [{lo}, {hi}]", file=file)
    return value


def int_array(values: Any, what: str, *, lo: int = -(1 << 63), hi: int = (1 << 63) - 1,
              file: str | None = None, error: type | None = None) -> np.ndarray:
    """An int64 array of JSON numbers, with the rules of :func:`as_int` applied to every element."""
    from .errors import FormatError
    error = error or FormatError
    try:
        a = np.asarray(values)
    except ValueError:
        raise error(f"{what}: ragged or malformed array", file=file) from None
    if a.dtype.kind in "iu":
        if a.size and (int(a.min()) < lo or int(a.max()) > hi):
            bad = next(int(v) for v in a.reshape(-1).tolist() if not lo <= int(v) <= hi)
            raise error(f"{what}: {bad} is outside [{lo}, {hi}]", file=file)
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        ok = np.isfinite(a) & (a == np.floor(a)) & (np.abs(a) < 2.0 ** 53)
        if not ok.all():
            raise error(f"{what}: expected integers, got {float(a[~ok].reshape(-1)[0])!r}", file=file)
        return int_array(a.astype(np.int64), what, lo=lo, hi=hi, file=file, error=error)
    if a.dtype.kind == "O" or a.dtype.kind == "b":
        flat = [as_int(v, what, lo=lo, hi=hi, file=file, error=error) for v in a.reshape(-1).tolist()]
        return np.asarray(flat, dtype=np.int64).reshape(a.shape)
    raise error(f"{what}: expected numbers, got {a.dtype}", file=file)
