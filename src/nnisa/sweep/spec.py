"""Sweep specifications: models x targets x configuration grids, validated before any work starts.

A spec (YAML or JSON) names the models, and per target a base configuration, a grid of
configuration keys (dotted, as the target's configuration dumps: ``chip_config.core_cnt``) and a
grid of ``-O`` options.  :func:`load_spec` validates the file with pydantic and :func:`expand`
turns it into :class:`Point` records, checking every configuration through the target's own
:meth:`~nnisa.core.target.Target.configure` and every option against its declared
:class:`~nnisa.core.options.OptionSpec` — so a typo or an out-of-range value is one error naming
the key, before the first point runs.

Axis values: a list (``[16, 32, 64]``), a single value (fixed), ``{from: 4, to: 8, step: 2}``
(inclusive) or ``{pow2: [16, 256]}`` (16, 32, ..., 256).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core import jsonsafe
from ..core.errors import ConfigError, NnisaError, OptionError, UnsupportedError
from ..core.fileio import read_text
from ..core.target import get_target, target_names

#: prefix of a model entry that names a target's built-in workload instead of an ONNX model
BENCH_PREFIX = "bench:"
#: most points one spec may expand to (a typo in a range should not queue a million jobs)
MAX_POINTS = 100_000
#: most values one axis may have
MAX_AXIS = 10_000


class TargetSpec(BaseModel):
    """One target's part of a sweep."""

    model_config = ConfigDict(extra="forbid")

    #: base configuration (preset name, file relative to the spec, or an inline object); None = default
    config: str | dict[str, Any] | None = None
    #: dotted configuration key → axis
    grid: dict[str, Any] = Field(default_factory=dict)
    #: ``-O`` option → axis
    options: dict[str, Any] = Field(default_factory=dict)
    #: models for this target only (default: the sweep's models)
    models: list[str] | None = None


class SweepSpec(BaseModel):
    """A whole sweep (the file's top level)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("sweep", min_length=1, max_length=120)
    #: bundled model names, ONNX paths (relative to the spec file) or ``bench:WORKLOAD``
    models: list[str] = Field(default_factory=lambda: ["digits_mlp"], min_length=1)
    targets: dict[str, TargetSpec] = Field(min_length=1)
    #: test inputs simulated per point (the bundled test set for bundled models, else random)
    samples: int = Field(4, ge=1, le=100_000)
    #: wall-time limit of one point, seconds
    timeout_s: float = Field(600.0, gt=0, le=7 * 24 * 3600)

    @field_validator("targets")
    @classmethod
    def _known_targets(cls, v: dict[str, TargetSpec]) -> dict[str, TargetSpec]:
        unknown = [k for k in v if k not in target_names()]
        if unknown:
            raise ValueError(f"unknown target(s) {', '.join(unknown)} (targets: {', '.join(target_names())})")
        return v


@dataclass
class Point:
    """One independent job of a sweep: a model (or workload) on a target with one configuration."""

    target: str
    model: str
    model_path: str | None
    base_config: str | dict[str, Any] | None
    overrides: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    samples: int = 4
    timeout_s: float = 600.0
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            key = json.dumps([self.target, self.model, self.base_config, self.overrides, self.options, self.samples],
                             sort_keys=True, default=str)
            self.id = hashlib.sha256(key.encode()).hexdigest()[:16]

    @property
    def workload(self) -> str | None:
        """The built-in workload name of a ``bench:`` point, else ``None``."""
        return self.model[len(BENCH_PREFIX):] if self.model.startswith(BENCH_PREFIX) else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Point":
        return cls(**d)


#: most values a parsed spec may hold once YAML aliases are expanded (a "billion laughs" file is
#: small but expands to 10^9 values: refused before anything walks it)
MAX_SPEC_VALUES = 1_000_000


def _brief(v: Any, width: int = 60) -> str:
    """``repr(v)`` cut to ``width`` characters (an error line echoes values from the spec)."""
    import reprlib
    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlist, r.maxdict, r.maxlevel = width, width, 6, 6, 3
    text = r.repr(v)
    return text if len(text) <= width else text[:width - 3] + "..."


def expanded_size(data: Any, source: str = "spec") -> int:
    """How many values ``data`` holds with shared (aliased) parts counted each time they are used.

    Raises
    ------
    ConfigError
        Over :data:`MAX_SPEC_VALUES`, or a structure that contains itself (a recursive YAML alias).
    """
    memo: dict[int, int] = {}
    busy: set[int] = set()

    def size(x: Any) -> int:
        if not isinstance(x, (list, dict)):
            return 1
        key = id(x)
        if key in memo:
            return memo[key]
        if key in busy:
            raise ConfigError("the spec contains itself (a recursive YAML alias)", file=source)
        busy.add(key)
        items = x.values() if isinstance(x, dict) else x
        total = 1
        for item in items:
            total += size(item)
            if total > MAX_SPEC_VALUES:
                raise ConfigError(f"the spec holds more than {MAX_SPEC_VALUES:,} values once its YAML aliases "
                                  "are expanded", file=source)
        busy.discard(key)
        memo[key] = total
        return total

    return size(data)


def _loc(err: dict) -> str:
    return ".".join(str(p) for p in err.get("loc", ())) or "the top level"


def parse_spec(data: Any, *, source: str = "spec") -> SweepSpec:
    """Validate a parsed spec object; errors name the key (``targets.pim.grid``)."""
    if not isinstance(data, dict):
        raise ConfigError("a sweep spec must be a mapping (models, targets, ...)", file=source)
    try:
        return SweepSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        msg = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{_loc(first)}: {msg}" + (f" (and {more} more)" if more else ""), file=source) from None


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a YAML (``.yaml``/``.yml``) or JSON spec file."""
    p = Path(path)
    text = read_text(p, ConfigError)
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ConfigError("YAML specs need PyYAML (pip install 'nnisa[sweep]'); or write the spec as JSON",
                              file=str(p)) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise ConfigError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", file=str(p),
                              line=None if mark is None else mark.line + 1) from None
        except RecursionError:  # PyYAML composes nested collections recursively
            raise ConfigError("invalid YAML: nested too deeply", file=str(p)) from None
        except ValueError as exc:  # an integer of more than 4,300 digits (Python's conversion limit)
            raise ConfigError(f"invalid YAML: {' '.join(str(exc).split())[:120]}", file=str(p)) from None
        expanded_size(data, str(p))
    else:
        data = jsonsafe.loads(text, str(p), ConfigError)
    return parse_spec(data, source=str(p))


def axis_values(raw: Any, where: str) -> list[Any]:
    """The values of one axis (list, scalar, ``{from, to, step}`` or ``{pow2: [lo, hi]}``)."""
    if isinstance(raw, list):
        if not raw:
            raise ConfigError(f"{where}: an empty list (give at least one value)")
        vals = raw
    elif isinstance(raw, dict) and set(raw) <= {"from", "to", "step"} and {"from", "to"} <= set(raw):
        lo, hi, step = raw["from"], raw["to"], raw.get("step", 1)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi, step)) or step <= 0:
            raise ConfigError(f"{where}: from/to/step must be numbers with step > 0")
        if not all(math.isfinite(v) if isinstance(v, float) else abs(v) < 1 << 63 for v in (lo, hi, step)):
            raise ConfigError(f"{where}: from/to/step must be finite numbers below 2^63, got "
                              f"{_brief(lo, 20)}, {_brief(hi, 20)}, {_brief(step, 20)}")
        span = (hi - lo) / step
        n = math.floor(span + 1e-9) + 1 if math.isfinite(span) else MAX_AXIS + 1
        if n < 1 or n > MAX_AXIS:
            raise ConfigError(f"{where}: from {lo} to {hi} step {step} gives {max(n, 0)} values (1..{MAX_AXIS})")
        ints = all(isinstance(v, int) for v in (lo, hi, step))
        vals = [lo + i * step if ints else round(lo + i * step, 12) for i in range(n)]
    elif isinstance(raw, dict) and set(raw) == {"pow2"}:
        pair = raw["pow2"]
        if (not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                                                    and v >= 1 for v in pair)):
            raise ConfigError(f"{where}: pow2 takes [lo, hi], two positive integers")
        lo, hi = pair
        vals = [1 << k for k in range(max(lo, 1).bit_length() - 1, hi.bit_length()) if lo <= 1 << k <= hi]
        if not vals:
            raise ConfigError(f"{where}: no power of two between {lo} and {hi}")
    elif isinstance(raw, dict) and raw and set(raw) & {"from", "to", "step", "pow2"}:
        raise ConfigError(f"{where}: a range is {{from: A, to: B, step: S}} or {{pow2: [A, B]}}, got keys "
                          f"{', '.join(map(str, raw))}")
    else:
        vals = [raw]
    if len(vals) > MAX_AXIS:
        raise ConfigError(f"{where}: {len(vals)} values (at most {MAX_AXIS})")
    return vals


def _resolve_model(entry: str, base_dir: Path) -> tuple[str, str | None]:
    """(label, ONNX path or None for a bench point)."""
    if entry.startswith(BENCH_PREFIX):
        if not entry[len(BENCH_PREFIX):]:
            raise ConfigError(f"models: {entry!r} names no workload (bench:NAME)")
        return entry, None
    from ..frontend.models import bundled_model_path
    p = Path(entry)
    if not p.suffix and not p.is_absolute():
        try:
            return entry, str(bundled_model_path(entry))
        except NnisaError as exc:
            raise ConfigError(f"models: {exc.message}") from None
    full = p if p.is_absolute() else base_dir / p
    if not full.is_file():
        raise ConfigError(f"models: {entry!r}: no such ONNX file ({full})")
    return p.stem, str(full.resolve())


def _resolve_config(config: Any, base_dir: Path) -> Any:
    """A base configuration naming a file is taken relative to the spec's folder."""
    if isinstance(config, str) and ("/" in config or config.endswith((".json", ".tarch", ".tmodel"))):
        p = Path(config)
        return str((p if p.is_absolute() else base_dir / p).resolve())
    return config


def _product(axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(axes)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys))]


def expand(spec: SweepSpec, base_dir: str | Path = ".") -> list[Point]:
    """Every point of ``spec``, each configuration and option set validated by its target.

    Raises
    ------
    ConfigError, OptionError
        The first bad key or value, naming ``targets.T.grid.KEY`` or ``targets.T.options.KEY``.
    """
    base = Path(base_dir)
    models = {m: _resolve_model(m, base) for m in spec.models}
    points: list[Point] = []
    for tname, ts in spec.targets.items():
        try:
            t = get_target(tname)
        except NnisaError as exc:  # registered, but its package has not landed on this branch
            raise UnsupportedError(f"targets.{tname}: {exc.message}") from None
        caps = t.capabilities()
        entries = [models[m] if m in models else _resolve_model(m, base) for m in (ts.models or spec.models)]
        grids = {k: axis_values(v, f"targets.{tname}.grid.{k}") for k, v in ts.grid.items()}
        opt_axes = {k: axis_values(v, f"targets.{tname}.options.{k}") for k, v in ts.options.items()}
        base_cfg = _resolve_config(ts.config, base)
        configs = _product(grids)
        n = len(configs) * len(_product(opt_axes)) * len(entries)
        if len(points) + n > MAX_POINTS:
            raise ConfigError(f"targets.{tname}: the spec expands to more than {MAX_POINTS} points")
        checked = []
        for overrides in configs:
            try:
                if overrides:
                    t.configure(base_cfg, overrides)
                elif base_cfg is not None:
                    t.load_config(base_cfg)
            except ConfigError as exc:
                shown = ", ".join(f"{k}={_brief(v)}" for k, v in overrides.items()) or "(base)"
                raise ConfigError(f"targets.{tname}.grid ({shown}): {exc.message}") from None
            checked.append(overrides)
        for label, path in entries:
            workload = label[len(BENCH_PREFIX):] if path is None else None
            need = "bench" if path is None else "compile"
            if need not in caps or (need == "compile" and "simulate" not in caps):
                raise ConfigError(f"targets.{tname}: target {tname} cannot "
                                  + ("run built-in workloads" if path is None else "compile and simulate ONNX models")
                                  + (" (its workloads: bench:" + ", bench:".join(t.workloads()) + ")"
                                     if path is not None and t.workloads() else ""))
            if workload is not None and workload not in t.workloads():
                raise ConfigError(f"targets.{tname}: no workload {workload!r} "
                                  f"(workloads: {', '.join(t.workloads()) or 'none'})")
            command = "bench" if path is None else "run"
            for opts in _product(opt_axes):
                try:
                    typed = t.option_table().validate(command, opts)
                except OptionError as exc:
                    raise OptionError(f"targets.{tname}.options: {exc.message}") from None
                for overrides in checked:
                    points.append(Point(target=tname, model=label, model_path=path, base_config=base_cfg,
                                        overrides=overrides, options=typed, samples=spec.samples,
                                        timeout_s=spec.timeout_s))
    seen: set[str] = set()
    unique = []
    for p in points:  # the same point listed twice (e.g. a model under two names) runs once
        if p.id not in seen:
            seen.add(p.id)
            unique.append(p)
    return unique


def expand_file(path: str | Path) -> list[Point]:
    """:func:`load_spec` + :func:`expand` of a spec file (relative paths taken from its folder);
    an error names the file as well as the key."""
    spec = load_spec(path)
    try:
        return expand(spec, Path(path).parent)
    except NnisaError as exc:
        raise exc.with_context(file=str(path)) from None
