"""Fixed-point precision policies of the Tensil lowering: how averages and layers with small weights
keep their fraction bits in the architecture's data type (spec §6: every MAC step rounds to the
type's ulp and saturates at its range; there is no wide accumulator).

* :func:`average_factors`: a k-value average as pre-scaled (group) sums and post factors (neither
  saturating the sum nor rounding the values away).
* :func:`weight_shift`: a per-layer power-of-two scale ``2^p`` of the weights and bias, undone by one
  exact SIMD multiply by ``2^-p`` of the accumulators, when the weights are too small for the type
  (a 5408-input Linear's weights of ±0.0136 are 0–3 ulps of FP16BP8), bounded so that the scaled
  outputs of unit-RMS inputs stay well inside the range; and the warning naming the layer when
  even that leaves the weights coarse.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

#: a layer whose weights have fewer ulps of RMS than this is scaled up to it, as far as the range
#: allows: the weights' rounding and every MAC's (both one ulp) are then ≈ 1.8 % RMS of the output
#: (EfficientNet-B0's classifier at 10–16 ulps: zoo top-1 10/16 unscaled, 14/16 scaled)
WEIGHT_ULPS = 16
#: a layer still under this many ulps after the shift is coarse (over 3.6 %): a warning names it
COARSE_ULPS = 8
#: the scaled output bound, 6 standard deviations of unit-RMS inputs plus the bias, as a fraction
#: of the range (headroom for the partial sums and for inputs larger than unit RMS)
RANGE_FRACTION = 0.25


#: pre-scaling of an average's elements keeps at least 8 - this many fraction bits (FP16BP8)
MAX_PRE_SHIFT = 4


def average_factors(k: int, value_max: float) -> tuple[int, float, float, tuple[float, ...]]:
    """An average of ``k`` values in a fixed-point type of range ``±value_max``, with a rounding at
    every step, as ``(g, pre, group, post)``: the values times ``pre`` are summed in groups of at
    most ``g``, each group's sum times ``group`` is added to the total (``group = 1``: one group,
    summed in place), and the total is multiplied by the ``post`` factors.

    Summing first saturates a large window (256 values of 0.6 exceed FP16BP8's 128) and scaling each
    value by ``1/k`` first rounds it away (0.4/256 is below half an ulp: a 16×16 mean of values
    under 0.5 comes out 0).  The total scale ``2^-a`` is the least with ``k/2^a ≤ value_max/16`` (the
    partial sums stay in range while the values' mean is below 16 on FP16BP8).  Up to
    :data:`MAX_PRE_SHIFT` of it is applied to each value (which keeps ``8 - a`` fraction bits), the
    rest to the group sums (``g = value_max`` values, e.g. 128: a 112×112 global average is 98
    groups), so no value is shifted past its bits; each rounding is divided by ``k/2^a`` again at
    the end.  ``2^a/k`` is applied as ``2^s/k ∈ (0.5, 1]`` (8 fraction bits hold it within 0.2 %) and
    the exact power of two ``2^(a-s)``, ``s = ⌊log2 k⌋``; factors equal to 1 are left out."""
    a = 0
    while k * 16.0 / 2.0 ** a > value_max:
        a += 1
    s = k.bit_length() - 1
    post = tuple(f for f in (2.0 ** s / k, 2.0 ** (a - s)) if f != 1.0)
    if a <= MAX_PRE_SHIFT:
        return k, 2.0 ** -a, 1.0, post
    g = int(value_max * 2 ** MAX_PRE_SHIFT / 16)
    return g, 2.0 ** -MAX_PRE_SHIFT, 2.0 ** (MAX_PRE_SHIFT - a), post


def weight_shift(columns: np.ndarray, bias: np.ndarray | None, ulp: float | None,
                 value_max: float) -> tuple[int, float]:
    """``(p, ulps)``: the power-of-two shift of a layer whose output ``j`` is ``x · columns[:, j] + b_j``,
    and the weights' RMS in ulps after it (``inf`` for FLOAT32, whose ulp is relative).

    Weights of :data:`WEIGHT_ULPS` ulps of RMS or more are left alone; else ``p`` is the least shift
    giving them :data:`WEIGHT_ULPS` ulps (one SIMD multiply per output vector undoes it), capped where ``2^p · (|b|max + 6·max_j ‖columns[:, j]‖₂)`` would pass
    :data:`RANGE_FRACTION` of the range, and at the type's fraction bits (``2^-p`` is a constant of it)."""
    w = np.asarray(columns, np.float64)
    nz = w[w != 0]
    if ulp is None or not nz.size:
        return 0, float("inf")
    rms = float(np.sqrt(np.mean(nz ** 2)))
    if rms >= WEIGHT_ULPS * ulp:
        return 0, rms / ulp
    want = max(0, int(np.ceil(np.log2(WEIGHT_ULPS * ulp / rms))))
    bound = 6.0 * float(np.sqrt((w ** 2).sum(axis=0)).max()) + (float(np.abs(bias).max()) if bias is not None and
                                                                 np.size(bias) else 0.0)
    p = 0
    top = int(round(-np.log2(ulp)))  # 2^-p must itself be a value of the type (one ulp at most)
    while p < min(want, top) and 2.0 ** (p + 1) * bound <= RANGE_FRACTION * value_max:
        p += 1
    return p, rms * 2.0 ** p / ulp


class PrecisionWarning(UserWarning):
    """A layer's weights are too small for the architecture's data type."""


def warn_coarse_weights(records: list[dict[str, Any]], arch: Any) -> None:
    """One warning per layer whose weights stay under :data:`COARSE_ULPS` ulps of RMS after the
    shift: its name, its weights' range in the data type, and the data types that would hold them."""
    for r in records:
        if r["weights_rms_ulps"] >= COARSE_ULPS:
            continue
        finer = [t for t, bp in (("FP18BP10", 10), ("FP32BP16", 16)) if arch.bp is not None and bp > arch.bp]
        warnings.warn(f"layer {r['node']} ({r['op']}): weights |w| in [{r['weights_abs_min']:.3g}, "
                      f"{r['weights_abs_max']:.3g}] are {r['weights_rms_ulps']:.1f} ulps RMS of {arch.data_type} "
                      f"(ulp {2.0 ** -arch.bp:g}) after a 2^{r['shift']} scale its range allows: expect coarse "
                      f"results" + (f"; an architecture with data_type {' or '.join(finer)} holds them"
                                    if finer else ""), PrecisionWarning, stacklevel=3)
