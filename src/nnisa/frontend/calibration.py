"""Calibration of activation ranges: data (disjoint from evaluation), streaming, three methods.

* ``max``: the largest magnitude seen (no clipping).
* ``percentile``: the ``percentile``-th percentile of ``|x|`` (clips rare outliers).
* ``mse``: the range whose quantization grid minimises the mean squared error over the
  observed values (clipping traded against resolution; with pow2 scales it picks among the
  power-of-two scales near max-abs).

Every method streams the calibration set in batches (``batch_size`` samples at a time), so
memory is one batch of activations, never the whole set.  ``percentile`` and ``mse`` make a
second pass that fills a 2048-bin histogram of ``|x|`` per tensor.

Default data (:func:`calibration_inputs`): the *last* 64 samples of a bundled model's test set
(``nnisa run`` evaluates the first ones), else 64 samples uniform in ``[-1, 1)`` drawn with seed 1
(``run``'s default evaluation sample uses seed 0), so calibration and evaluation never share
an input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ConfigError, FormatError
from ..core.quant_options import CALIBRATION_METHODS as METHODS
from .float_eval import bind_inputs, evaluate_float, random_inputs
from .ir import Graph

#: seed of the default random calibration set (``nnisa run`` evaluates seed-0 samples)
CALIB_SEED = 1
CALIB_SAMPLES = 64
_BINS = 2048


def calibration_inputs(graph: Graph, calib: Any = None, *, samples: int = CALIB_SAMPLES) -> dict[str, np.ndarray]:
    """The calibration set of ``graph``: ``calib`` when given (dict, array or a ``.npy/.npz/.csv``
    file), else the default described in the module docstring.

    Raises
    ------
    FormatError
        The file cannot be read or its arrays do not match the model inputs.
    """
    names = [t.name for t in graph.inputs]
    if calib is None:
        found = _bundled_tail(graph, samples)
        if found is not None:
            return found
        return random_inputs(graph, samples, CALIB_SEED)
    where = None
    if isinstance(calib, (str, Path)):
        from ..core.fileio import load_arrays
        where = str(calib)
        calib = load_arrays(calib)
        if len(calib) == 1 and len(names) == 1:
            calib = next(iter(calib.values()))
    try:
        data = bind_inputs(names, calib)
    except FormatError as e:
        raise FormatError(f"calibration data: {e}", file=where) from None
    for t in graph.inputs:
        a = data[t.name]
        if a.ndim != len(t.shape) or tuple(a.shape[1:]) != tuple(t.shape[1:]) or len(a) == 0:
            raise FormatError(f"calibration input {t.name!r} has shape {a.shape}; expected (samples, "
                              f"{', '.join(str(d) for d in t.shape[1:])})", file=where)
        if a.dtype.kind not in "biuf" or not np.isfinite(a.astype(np.float64)).all():
            raise FormatError(f"calibration input {t.name!r} must hold finite numbers", file=where)
    return data


def _bundled_tail(graph: Graph, samples: int):
    if not graph.source:
        return None
    from .models import bundled_inputs_for
    found = bundled_inputs_for(graph.source, samples=1 << 30)
    if found is None:
        return None
    return {k: v[-samples:] for k, v in found.items()}


def _batches(graph: Graph, calib: Any, batch_size: int):
    data = bind_inputs([t.name for t in graph.inputs], calib)
    n = len(next(iter(data.values())))
    for i in range(0, n, batch_size):
        yield {k: v[i:i + batch_size] for k, v in data.items()}


def _float_tensors(graph: Graph, env: dict, raw: set[str]):
    """Calibrated tensors: float activations, not masks/indices computed from integer inputs (``raw``,
    never quantized; a causal mask may hold -inf)."""
    for k, v in env.items():
        if k in graph.initializers or k in raw or not np.issubdtype(np.asarray(v).dtype, np.floating) or not np.size(v):
            continue
        yield k, np.asarray(v)


def _abs_max(v: np.ndarray) -> float:
    """``max |v|`` as float64 without a float64 copy of ``v`` (the same value: negation and the
    float64 conversion of a float are exact; NaN propagates as through ``np.abs(v).max()``)."""
    hi, lo = abs(float(v.max())), abs(float(v.min()))
    return max(hi, lo)  # a NaN makes both NaN


def calibrate(graph: Graph, calib: Any, *, method: str = "max", percentile: float = 99.99, bits: int = 8,
              scale_mode: str = "pow2", batch_size: int = 8) -> dict[str, float]:
    """Range ``m`` of every float tensor (the value the largest integer code represents).

    Parameters
    ----------
    graph : Graph
        The float graph.
    calib : dict, array or list of dicts
        Calibration inputs (a list of dicts is taken batch by batch).
    method : {"max", "percentile", "mse"}
        See the module docstring.
    percentile : float
        Percentile of ``|x|`` for ``method="percentile"`` (0 < p <= 100).
    bits, scale_mode : int, str
        The activation grid (``mse`` needs it).
    batch_size : int
        Samples evaluated at once.

    Returns
    -------
    dict of str to float
    """
    if method not in METHODS:
        raise ConfigError(f"unknown calibration method {method!r}; choose from {METHODS}")
    if not 0 < percentile <= 100:
        raise ConfigError(f"percentile={percentile} out of range (0, 100]")
    from .quant_transformer import raw_tensors
    parts = calib if isinstance(calib, list) and calib and isinstance(calib[0], dict) else [calib]
    amax: dict[str, float] = {}
    raw = raw_tensors(graph)
    for part in parts:
        for b in _batches(graph, part, batch_size):
            for k, v in _float_tensors(graph, evaluate_float(graph, b, return_all=True), raw):
                amax[k] = max(amax.get(k, 0.0), _abs_max(v))
    check_ranges(amax)
    if method == "max":
        return amax
    hist = {k: np.zeros(_BINS, np.float64) for k in amax}
    for part in parts:
        for b in _batches(graph, part, batch_size):
            for k, v in _float_tensors(graph, evaluate_float(graph, b, return_all=True), raw):
                if amax[k] > 0:
                    v = np.abs(np.asarray(v, np.float64))
                    hist[k] += np.bincount(np.minimum((v.ravel() / amax[k] * _BINS).astype(np.int64), _BINS - 1),
                                           minlength=_BINS)
    out = {}
    for k, m in amax.items():
        if m <= 0:
            out[k] = m
        elif method == "percentile":
            c = np.cumsum(hist[k])
            i = int(np.searchsorted(c, c[-1] * percentile / 100.0))
            out[k] = min(m, (i + 1) / _BINS * m)
        else:
            out[k] = mse_range(hist[k], m, bits, scale_mode)
    return out


#: calibration ranges are refused outside [2^-RANGE_EXP, 2^RANGE_EXP] (0 is fine: a tensor that is
#: always zero): a fixed-point scale that far from 1 needs shifts and fractional bits no target has
RANGE_EXP = 60


def check_ranges(amax: dict[str, float]) -> None:
    """Refuse calibration ranges no fixed-point scale represents: infinite or NaN (the float model
    overflowed on the calibration data, e.g. inputs near 3e38) or beyond 2^±60 (e.g. inputs of
    1e-30 or 1e300), naming the first such tensor."""
    for k, m in amax.items():
        if not np.isfinite(m):
            raise FormatError(f"calibration data: tensor {k!r} overflows the float model ({m}); the data is "
                              "not representable in fixed point (check its units)")
        if m != 0 and not 2.0 ** -RANGE_EXP <= m <= 2.0 ** RANGE_EXP:
            raise FormatError(f"calibration data: tensor {k!r} has range {m:.3g}, outside 2^-{RANGE_EXP}..2^{RANGE_EXP}; "
                              "no fixed-point scale of the targets represents it (check the data's units)")


def mse_range(hist: np.ndarray, amax: float, bits: int, scale_mode: str) -> float:
    """The range (``scale · qmax``) minimising the squared quantization error of a histogram of
    ``|x|`` over ``[0, amax]``; pow2 mode searches the power-of-two scales, else 64 fractions."""
    qmax = (1 << (bits - 1)) - 1
    centres = (np.arange(len(hist)) + 0.5) / len(hist) * amax
    if scale_mode == "pow2":
        e_hi = int(np.ceil(np.log2(amax / qmax) - 1e-12))
        scales = np.exp2(np.arange(e_hi - 4, e_hi + 1, dtype=np.float64))
    else:
        scales = amax / qmax * np.linspace(0.25, 1.0, 64)
    errs = [float((hist * (np.minimum(np.round(centres / s), qmax) * s - centres) ** 2).sum()) for s in scales]
    return float(scales[int(np.argmin(errs))] * qmax)
