"""Energy and latency of a DAIS program as FPGA logic: per-action energies in the configuration.

A DAIS program is combinational logic evaluated once per input.  Dynamic energy per input is the
sum over its ops of a per-action energy: adders/subtractors per result bit, MSB muxes and bit ops
per bit, multipliers per bit product of the operand widths, lookup tables per LUT6-equivalent
(``out_bits · ceil(2^key_bits / 64)``); constants, inputs, quantizers and shifts are wiring.
Static energy per input is the design's static power (per LUT6-equivalent) times the time one
input occupies the logic: the latency of the combinational design (adder depth × adder delay).
The default table (``xc7``) and its sources are in docs/dais.md §Energy; ``--config`` overrides
any entry (``adder_pj_per_bit=0.05``) or loads a JSON file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...core.configs import resolve_config
from ...core.errors import ConfigError


class DaisEnergyConfig(BaseModel):
    """Per-action energies (pJ), static power and delay of the logic a DAIS program becomes."""

    model_config = ConfigDict(extra="forbid")

    name: str = "xc7"
    adder_pj_per_bit: float = Field(0.044, ge=0, description="adder/subtractor, per result bit")
    mux_pj_per_bit: float = Field(0.022, ge=0, description="MSB mux, ReLU and bit ops, per result bit")
    mul_pj_per_bit_product: float = Field(0.044, ge=0, description="LUT multiplier, per bit of wa·wc")
    lut_pj_per_lut6: float = Field(0.044, ge=0, description="lookup table, per LUT6-equivalent read")
    static_uw_per_lut6: float = Field(1.5, ge=0, description="static power per LUT6-equivalent of the design")
    adder_delay_ns: float = Field(1.0, gt=0, description="delay of one adder level (carry chain + routing)")


PRESETS: dict[str, dict[str, Any]] = {"xc7": {}}


def load_energy_config(config: Any) -> DaisEnergyConfig:
    """``None`` (the ``xc7`` table), a preset name, ``key=value`` pairs, a JSON file or a dict."""
    def build(data: dict, where: str) -> DaisEnergyConfig:
        try:
            return DaisEnergyConfig(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    return resolve_config(config, PRESETS, build, DaisEnergyConfig, "DAIS energy", default="xc7")


def _lut6(opc: np.ndarray, w: np.ndarray, wa: np.ndarray, wc: np.ndarray) -> np.ndarray:
    """LUT6-equivalents per op (1 per adder/mux bit, wa·wc/2 per multiplier, the tables' LUT6s)."""
    n = np.zeros(len(opc), np.float64)
    add = np.isin(opc, (0, 1, 4))
    mux = np.isin(np.abs(opc), (2, 6, 9, 10))
    n[add | mux] = w[add | mux]
    n[opc == 7] = wa[opc == 7] * wc[opc == 7] / 2.0
    lut = opc == 8
    n[lut] = w[lut] * np.ceil(2.0 ** wa[lut] / 64.0)
    return n


def op_energy_pj(program, cfg: DaisEnergyConfig) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Dynamic energy of every op for one input (pJ), its LUT6-equivalents, and the masks of the
    breakdown classes (``adders``, ``muxes``, ``multipliers``, ``luts``)."""
    opc = np.asarray(program.opcode, np.int64)
    w = np.asarray(program.width(), np.float64)
    ids = np.arange(len(opc))
    a = np.where(program.id0 >= 0, program.id0, ids).astype(np.int64)
    c = np.where(program.id1 >= 0, program.id1, ids).astype(np.int64)
    wa, wc = (w[a] if len(w) else w), (w[c] if len(w) else w)
    classes = {"adders": np.isin(opc, (0, 1, 4)), "muxes": np.isin(np.abs(opc), (2, 6, 9, 10)),
               "multipliers": opc == 7, "luts": opc == 8}
    lut6 = _lut6(opc, w, wa, wc)
    e = np.zeros(len(opc), np.float64)
    e[classes["adders"]] = w[classes["adders"]] * cfg.adder_pj_per_bit
    e[classes["muxes"]] = w[classes["muxes"]] * cfg.mux_pj_per_bit
    e[classes["multipliers"]] = wa[classes["multipliers"]] * wc[classes["multipliers"]] * cfg.mul_pj_per_bit_product
    e[classes["luts"]] = lut6[classes["luts"]] * cfg.lut_pj_per_lut6
    return e, lut6, classes


def energy_figures(program, config: Any = None, samples: int = 1) -> dict[str, Any]:
    """``energy_pj`` (all ``samples`` inputs) = ``energy_dynamic_pj`` + ``energy_static_pj``,
    ``energy_per_input_pj``, ``inputs``, ``latency_ns`` (one input through the combinational logic), the
    breakdown per action class and the table used."""
    cfg = load_energy_config(config)
    e, lut6, classes = op_energy_pj(program, cfg)
    latency_ns = float(program.stat("adder_depth")) * cfg.adder_delay_ns
    dyn = float(e.sum())
    static = float(lut6.sum()) * cfg.static_uw_per_lut6 * latency_ns * 1e-3  # µW · ns = 1e-3 pJ
    per = dyn + static
    return {"energy_pj": per * samples, "energy_dynamic_pj": dyn * samples, "energy_static_pj": static * samples,
            "energy_per_input_pj": per, "inputs": int(samples), "latency_ns": latency_ns,
            "lut6_equivalents": float(lut6.sum()),
            "energy_breakdown_pj": {k: float(e[m].sum()) * samples for k, m in classes.items()},
            "energy_model": f"DAIS per-action table {cfg.name!r} (docs/dais.md, Energy)"}
