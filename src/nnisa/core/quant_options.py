"""The quantization options every quantizing target's compile options extend.

They live in ``core`` rather than beside the quantizer (:mod:`nnisa.frontend.prepare`, which
re-exports them) because a target's ``-O`` table is built from its options dataclass when the
target's class is defined: keeping them here lets ``nnisa sim`` of a program file load a target
without the ONNX frontend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .options import option

__all__ = ["CALIBRATION_METHODS", "QuantOptions"]

#: the activation-range calibration methods (:mod:`nnisa.frontend.calibration`)
CALIBRATION_METHODS = ("max", "percentile", "mse")


@dataclass
class QuantOptions:
    """The quantization options every quantizing target takes (``-O key=value`` of compile/run,
    and ``--calibration FILE`` as ``calib``); a target's compile options extend this class."""

    calibration: str = option("max", "activation range: max-abs, a percentile of |x|, or min MSE",
                              choices=CALIBRATION_METHODS)
    percentile: float = option(99.99, "percentile of |x| for calibration=percentile", minimum=50.0, maximum=100.0)
    per_channel: bool = option(True, "one weight scale per output channel (else per tensor)")
    calib_samples: int = option(64, "size of the default calibration set", minimum=1, maximum=1 << 16)
    #: calibration data (``--calibration FILE``: arrays or a .npy/.npz/.csv path); not an -O option
    calib: Any = None

    def quant_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~nnisa.frontend.prepare.prepare_qgraph` these options give."""
        return {"calib": self.calib, "calibration": self.calibration, "percentile": self.percentile,
                "per_channel": self.per_channel, "calib_samples": self.calib_samples}
