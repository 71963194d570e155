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
        rows.append(compare_target(name, prepared, samples=samples, config=(configs or {}).get(name),
                                   options=(options or {}).get(name)))
        if rows[-1].get("status") == "unsupported":
            continue
        for label, _opts in get_target(name).demo_variants if variants else ():
            rows.append(compare_target(name, prepared, samples=samples, variant=label))
    return rows


def compare_target(name: str, prepared: Any, *, samples: int, config: Any = None,
                   options: dict[str, Any] | None = None, variant: str | None = None) -> dict[str, Any]:
    """One row of :func:`compare_model`: ``prepared`` (a :class:`~nnisa.frontend.prepared.PreparedModel`
    with its inputs) on target ``name``, or on its :attr:`Target.demo_variants` entry labelled
    ``variant`` (the row's target is then ``"NAME (LABEL)"``).  A target that cannot compile and
    simulate is a row with status ``unsupported`` and the reason."""
    label = model_label(prepared)
    try:
        tgt = get_target(name)
        caps = tgt.capabilities()
    except NnisaError as exc:
        return {"target": name, "model": label, "status": "unsupported", "error": exc.message}
    if "compile" not in caps or "simulate" not in caps:
        return {"target": name, "model": label, "status": "unsupported",
                "error": f"target {name} cannot compile ONNX models yet"}
    if variant is None:
        return measure(name, label, prepared, samples=samples, config=config, **dict(options or {}))
    opts = dict(tgt.demo_variants)[variant]
    return {**measure(name, label, prepared, samples=samples, **opts), "target": f"{name} ({variant})"}


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
