"""``nnisa compare``: one model on every target, one row per target, and its pictures.

The same rows feed ``nnisa demo``'s side-by-side table (:func:`compare_model` is its step 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..core.errors import NnisaError, UnsupportedError
from ..core.fileio import special_kind
from ..core.target import get_target, target_names
from .measure import measure


def resolve_targets(spec: str | None) -> list[str]:
    """``all``/``None`` → every registered target; else a comma-separated list (unknown names are an
    :class:`UnsupportedError` listing the targets)."""
    if spec is None or spec.strip().lower() == "all":
        return target_names()
    names = [s.strip().lower() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in target_names()]
    if unknown or not names:
        raise UnsupportedError(f"unknown target(s) {', '.join(unknown) or '(none given)'}; "
                               f"available: {', '.join(target_names())}, or all")
    return list(dict.fromkeys(names))


def model_label(model: str | Path) -> str:
    """A model's short name (the file stem)."""
    return Path(model).stem


def compare_model(model: str | Path, targets: list[str] | None = None, *, samples: int = 8,
                  progress: Callable[[str], None] | None = None, variants: bool = False,
                  configs: dict[str, Any] | None = None,
                  options: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Compile and run ``model`` on each target (default: all) with its default configuration, or
    ``configs[target]`` (a preset or file) and ``options[target]`` (its ``-O`` options) where given.

    Returns one row per target (:func:`nnisa.sweep.measure.measure`): ``status`` ``ok`` with the
    figures, or ``error``/``unsupported``/``exception`` with the reason in ``error``.  With
    ``variants``, also one row per :attr:`Target.demo_variants` entry (target ``"pim (LABEL)"``).
    """
    from ..frontend.prepared import PreparedModel, default_inputs
    # imported, checked and quantized once for every target; a missing or broken model file is the
    # user's error, not a row per target
    prepared = PreparedModel(model, default_inputs(model, samples))
    rows = []
    for name in targets or target_names():
        if progress is not None:
            progress(name)
        try:
            caps = get_target(name).capabilities()
        except NnisaError as exc:
            rows.append({"target": name, "model": model_label(model), "status": "unsupported", "error": exc.message})
            continue
        if "compile" not in caps or "simulate" not in caps:
            rows.append({"target": name, "model": model_label(model), "status": "unsupported",
                         "error": f"target {name} cannot compile ONNX models yet"})
            continue
        mine = dict((options or {}).get(name, {}))
        rows.append(measure(name, model_label(model), prepared, samples=samples,
                            config=(configs or {}).get(name), **mine))
        for label, opts in get_target(name).demo_variants if variants else ():
            row = measure(name, model_label(model), prepared, samples=samples, **opts)
            rows.append({**row, "target": f"{name} ({label})"})
    return rows


def compare_pictures(rows: list[dict[str, Any]], out: str | Path, name: str = "") -> list[str]:
    """Latency against energy (log axes) at ``out`` and the per-target breakdown next to it
    (``<stem>_breakdown.png``, not when ``out`` is a device or FIFO); returns the files written."""
    from ..report.plots import plot_breakdown, plot_latency_energy
    out = Path(out)
    ok = [r for r in rows if r.get("status") == "ok"]
    files = []
    lead = f"{name}: " if name else ""
    skipped = [r for r in rows if r.get("status") != "ok"]
    if skipped:  # a target that did not run is said, never dropped silently
        import warnings
        from textwrap import shorten  # whole words, an ellipsis where the reason is cut
        warnings.warn("not on the pictures: " + "; ".join(f"{r.get('target')} ({r.get('status')}: "
                      f"{shorten(str(r.get('error', '')), 100, placeholder=' …')})" for r in skipped),
                      stacklevel=2)
    plot_latency_energy(ok, out, title=f"{lead}latency against energy per input")
    files.append(str(out))
    if special_kind(out) is not None:  # --plot /dev/null: no extra picture beside a device
        return files
    bars = out.with_name(out.stem + "_breakdown" + (out.suffix or ".png"))
    if ok:
        plot_breakdown(ok, bars, title=f"{lead}per-target breakdown")
        files.append(str(bars))
    return files
