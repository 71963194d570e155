"""The pimsim-nn configuration JSON (spec ``pim_isa.md`` §7) as pydantic models.

The file is ``{"chip_config": {...}, "sim_config": {...}}``; every key has pimsim-nn's default,
missing keys keep it and unknown keys are ignored (like pimsim-nn).  nnisa's own settings live
under a top-level ``"nnisa"`` object (:class:`NnisaConfig`).  Attribute names are the JSON keys,
so ``cfg.chip_config.core_config.local_memory_config.memory_size`` reads exactly like the file;
``cfg.chip`` and ``cfg.sim`` are short aliases.

The NoC table (§7.3) named by ``network_config.net_config_file_path`` is resolved relative to
the config file's directory and loaded into :attr:`PimConfig.noc` (node ``-10`` = global
memory).

Use :func:`load_config` for files and :func:`default_config` for programmatic configurations
(tests, calibration micro-programs).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ...core.errors import ConfigError
from ...core.fileio import read_bytes

__all__ = [
    "MemoryConfig", "MatrixConfig", "CoreConfig", "NetworkConfig", "ChipConfig", "SimConfig",
    "NnisaCoreConfig", "NnisaConfig", "NocTable", "PimConfig", "load_config", "default_config",
    "GLOBAL_MEMORY_NODE",
]

#: NoC node id of the global memory (pimsim-nn ``global_memory_switch_id`` default).
GLOBAL_MEMORY_NODE = -10


#: bounds that keep the picosecond timing arithmetic exact in int64 (1 ps .. 1 ms clock periods,
#: latencies up to a million cycles, at most 10^9 ms simulated) and memories addressable
MIN_PERIOD_NS, MAX_PERIOD_NS = 1e-3, 1e6
MAX_CYCLES = 1_000_000
MAX_SIM_TIME_MS = 1e9
MAX_MEMORY_BYTES = 1 << 40


class _Model(BaseModel):
    """Base: unknown keys are ignored (pimsim-nn behaviour); assignments are validated."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True, populate_by_name=True,
                              allow_inf_nan=False)


class MemoryConfig(_Model):
    """``local_memory_config`` / ``global_memory_config`` (pimsim-nn MemoryConfig).

    Attributes
    ----------
    memory_size
        Bytes (pimsim-nn never enforces it; nnisa enforces the local size in functional mode).
    data_width
        Bytes per access beat.
    period
        Memory clock period, ns.
    static_power
        mW (non-zero default 1 mW).
    read_latency_cycle, write_latency_cycle
        Cycles per beat.
    read_dynamic_energy, write_dynamic_energy
        pJ per beat.
    """

    memory_size: int = Field(1_048_576, ge=1, le=MAX_MEMORY_BYTES)
    data_width: int = Field(16, gt=0, le=1 << 20)
    period: float = Field(1.0, ge=MIN_PERIOD_NS, le=MAX_PERIOD_NS)
    static_power: float = 1.0
    read_latency_cycle: int = Field(8, ge=0, le=MAX_CYCLES)
    write_latency_cycle: int = Field(10, ge=0, le=MAX_CYCLES)
    read_dynamic_energy: float = 0.0
    write_dynamic_energy: float = 0.0


class MatrixConfig(_Model):
    """``matrix_config``: the crossbar (PIM matrix) unit, §7.2 and §8.2.

    ``input_buffer_latency_cycle`` cannot be set from JSON in pimsim-nn (missing from its
    parser); it is read here but pimsim-mode timing always uses 0 (§10).
    """

    xbar_array_count: int = Field(1, ge=1, le=1 << 20)
    period: float = Field(1 / 1.28, ge=MIN_PERIOD_NS, le=MAX_PERIOD_NS)
    pipeline_mode: bool = True
    dac_resolution: int = Field(1, gt=0, le=1 << 20)
    dac_latency_cycle: int = Field(1, ge=0, le=MAX_CYCLES)
    dac_count: int = Field(128, gt=0, le=1 << 20)
    xbar_size: tuple[Annotated[int, Field(ge=1, le=1 << 16)], Annotated[int, Field(ge=1, le=1 << 16)]] = (128, 128)
    cell_precision: int = Field(2, gt=0, le=1 << 20)
    xbar_latency: float = Field(30, ge=0, le=MAX_CYCLES)
    xbar_read_power: float = 0.0
    sample_hold_latency_cycle: int = Field(1, ge=0, le=MAX_CYCLES)
    adc_resolution: int = 1
    adc_latency_cycle: int = Field(1, ge=0, le=MAX_CYCLES)
    adc_count: int = Field(1, gt=0, le=1 << 20)
    shift_adder_latency_cycle: int = Field(1, ge=0, le=MAX_CYCLES)
    output_buffer_latency_cycle: int = Field(1, ge=0, le=MAX_CYCLES)
    input_buffer_latency_cycle: int = Field(0, ge=0, le=MAX_CYCLES)
    dac_static_power: float = 0.0
    dac_dynamic_power: float = 0.0
    sample_hold_static_power: float = 0.0
    sample_hold_dynamic_power: float = 0.0
    adc_static_power: float = 0.0
    adc_dynamic_power: float = 0.0
    shift_adder_static_power: float = 0.0
    shift_adder_dynamic_power: float = 0.0
    input_buffer_static_power: float = 0.0
    input_buffer_dynamic_power: float = 0.0
    output_buffer_static_power: float = 0.0
    output_buffer_dynamic_power: float = 0.0


class CoreConfig(_Model):
    """``core_config``: clock, ROB, vector unit, powers (mW) and energies (pJ), §7.2."""

    period: float = Field(1.0, ge=MIN_PERIOD_NS, le=MAX_PERIOD_NS)
    rob_size: int = Field(1, ge=1, le=1 << 16)
    vector_width: int = Field(16, gt=0, le=1 << 20)
    vector_latency_cycle: int = Field(8, ge=0, le=MAX_CYCLES)
    global_memory_switch_id: int = GLOBAL_MEMORY_NODE
    controller_static_power: float = 0.0
    controller_dynamic_power: float = 0.0
    inst_fetch_static_power: float = 0.0
    inst_fetch_dynamic_power: float = 0.0
    inst_decode_static_power: float = 0.0
    inst_decode_dynamic_power: float = 0.0
    inst_decode_offset_static_power: float = 0.0
    inst_decode_offset_dynamic_power: float = 0.0
    reg_file_static_power: float = 0.0
    reg_file_read_dynamic_power: float = 0.0
    reg_file_write_dynamic_power: float = 0.0
    scalar_static_power: float = 0.0
    scalar_dynamic_power: float = 0.0
    vector_alu_static_power: float = 0.0
    vector_reg_static_power: float = 0.0
    vector_alu_dynamic_energy: float = 0.0
    vector_reg_read_dynamic_energy: float = 0.0
    vector_reg_write_dynamic_energy: float = 0.0
    transfer_static_power: float = 0.0
    transfer_dynamic_power: float = 0.0
    local_memory_config: MemoryConfig = Field(default_factory=MemoryConfig)
    matrix_config: MatrixConfig = Field(default_factory=MatrixConfig)

    def static_power(self) -> float:
        """Static power of one core in mW (§9; the matrix unit has none)."""
        return (self.inst_fetch_static_power + self.inst_decode_static_power
                + self.inst_decode_offset_static_power + self.reg_file_static_power
                + self.scalar_static_power + self.vector_reg_static_power
                + self.vector_alu_static_power + self.transfer_static_power
                + self.local_memory_config.static_power)


class NetworkConfig(_Model):
    """``network_config``: bus width (bytes per flit) and the NoC table path (§7.3)."""

    bus_topology: str = "mesh"
    bus_width: int = Field(16, gt=0, le=1 << 20)
    layout: tuple[int, int] = (0, 0)
    net_config_file_path: str = ""


class ChipConfig(_Model):
    """``chip_config``."""

    core_cnt: int = Field(1, ge=0, le=1 << 20)
    global_memory_switch_id: int = GLOBAL_MEMORY_NODE
    core_config: CoreConfig = Field(default_factory=CoreConfig)
    global_memory_config: MemoryConfig = Field(default_factory=MemoryConfig)
    network_config: NetworkConfig = Field(default_factory=NetworkConfig)


class SimConfig(_Model):
    """``sim_config``.

    Attributes
    ----------
    sim_mode
        0 = throughput (cores loop until sim_time), 1 = latency (one pass).
    sim_time
        Simulated time limit in **ms**.
    report_verbose_level
        0 = chip summary, 1 = per-core lines, ≥ 2 = energy breakdown.
    """

    sim_mode: Literal[0, 1] = 0
    sim_time: float = Field(1.0, gt=0, le=MAX_SIM_TIME_MS)
    report_verbose_level: int = 0


class NnisaCoreConfig(_Model):
    """Per-core nnisa overrides (``"nnisa": {"cores": {"<k>": {...}}}``)."""

    act_in_frac: int | None = None
    act_out_frac: int | None = None
    init_ibiw: int | None = Field(None, ge=1, le=31)
    init_obiw: int | None = Field(None, ge=1, le=31)


class NnisaConfig(_Model):
    """nnisa's additions, under the top-level key ``"nnisa"``.

    Attributes
    ----------
    allow_missing_noc_pairs
        A (src, dst) pair missing from the NoC table gets 0 ns / 0 pJ like pimsim-nn instead of
        raising :class:`~nnisa.core.errors.ConfigError` (§7.3).
    tie_seed
        Seed of the hashed tie-break for simultaneous global-memory requests (D13).
    global_address_mode
        ``"pair"`` (D6, default) or ``"single32"`` (§1.6).
    init_ibiw, init_obiw
        Bit-widths before the first setbw in functional/native modes (§1.4).
    variable_bitwidth, fixed_bitwidth
        Hardware without setbw/vrsu/vrsl uses ``fixed_bitwidth`` everywhere (§2).
    global_memory_bounded
        Enforce ``global_memory_config.memory_size`` on global accesses.  ``None`` = only if
        memory_size was given explicitly in the file (§1.4).
    noc_latency, noc_energy
        Uniform NoC table (ns / pJ per flit for every pair) used when the config names no
        ``net_config_file_path``; handy for micro-programs.
    cores
        Per-core overrides keyed by core id.
    """

    allow_missing_noc_pairs: bool = False
    tie_seed: int = 0
    global_address_mode: Literal["pair", "single32"] = "pair"
    init_ibiw: int = Field(8, ge=1, le=31)
    init_obiw: int = Field(8, ge=1, le=31)
    variable_bitwidth: bool = True
    fixed_bitwidth: int = Field(8, ge=1, le=31)
    global_memory_bounded: bool | None = None
    noc_latency: float | None = None
    noc_energy: float | None = None
    cores: dict[int, NnisaCoreConfig] = Field(default_factory=dict)
    #: core-to-core send/recv available (the PIM compiler routes partial sums through global
    #: memory when false; ISA §4.4 (5))
    core_links: bool = True
    #: crossbar reprogramming between the phases of a time-multiplexed model (the ISA loads
    #: weights by the toolchain, D8): ns to write one crossbar row (all crossbars of the chip
    #: write in parallel) and pJ per written cell; the weights also stream from global memory
    xbar_row_write_ns: float = Field(100.0, ge=0)
    xbar_cell_write_pj: float = Field(1.0, ge=0)

    def core(self, core_id: int) -> NnisaCoreConfig:
        """Overrides of one core (an empty record if none)."""
        return self.cores.get(core_id) or NnisaCoreConfig()

    def act_frac(self, core_id: int, ibiw: int, obiw: int) -> tuple[int, int]:
        """(act_in_frac, act_out_frac) of a core at the given widths (D9 defaults)."""
        c = self.core(core_id)
        fin = c.act_in_frac if c.act_in_frac is not None else ibiw // 2
        fout = c.act_out_frac if c.act_out_frac is not None else obiw - 1
        return fin, fout

    def init_widths(self, core_id: int) -> tuple[int, int]:
        """(ibiw, obiw) before the first setbw in functional/native modes."""
        if not self.variable_bitwidth:
            return self.fixed_bitwidth, self.fixed_bitwidth
        c = self.core(core_id)
        return (c.init_ibiw if c.init_ibiw is not None else self.init_ibiw,
                c.init_obiw if c.init_obiw is not None else self.init_obiw)


class NocTable:
    """The per-flit NoC latency (ns) and energy (pJ) table of §7.3.

    Parameters
    ----------
    latency, energy
        ``{src: {dst: value}}`` with integer node ids (``-10`` = global memory).
    uniform
        ``(latency, energy)`` used for every pair not in the tables (``None`` = missing).
    source
        File the table came from (for messages).
    """

    def __init__(self, latency: dict[int, dict[int, float]] | None = None,
                 energy: dict[int, dict[int, float]] | None = None,
                 uniform: tuple[float, float] | None = None, source: str | None = None):
        self.latency = latency or {}
        self.energy = energy or {}
        self.uniform = uniform
        self.source = source

    def get(self, src: int, dst: int) -> tuple[float, float] | None:
        """(ns per flit, pJ per flit) of the ordered pair, or ``None`` if the pair is missing."""
        lat = self.latency.get(src, {}).get(dst)
        en = self.energy.get(src, {}).get(dst)
        if lat is None and en is None:
            return self.uniform
        if self.uniform is not None:
            lat = self.uniform[0] if lat is None else lat
            en = self.uniform[1] if en is None else en
        return (0.0 if lat is None else lat, 0.0 if en is None else en)

    def __repr__(self) -> str:
        n = sum(len(v) for v in self.latency.values())
        return f"NocTable({n} pairs, uniform={self.uniform}, source={self.source!r})"


class PimConfig(_Model):
    """A whole pimsim-nn configuration plus nnisa's additions.

    Attributes
    ----------
    chip_config, sim_config, nnisa
        The three top-level objects (``chip`` and ``sim`` are read-only aliases).
    source
        Path of the file it was loaded from (``None`` for programmatic configs).
    explicit_gmem_size
        Whether ``global_memory_config.memory_size`` was given in the file.
    noc
        The loaded NoC table (:class:`NocTable`).
    """

    chip_config: ChipConfig = Field(default_factory=ChipConfig)
    sim_config: SimConfig = Field(default_factory=SimConfig)
    nnisa: NnisaConfig = Field(default_factory=NnisaConfig)
    source: str | None = None
    explicit_gmem_size: bool = False
    _noc: NocTable | None = PrivateAttr(default=None)

    @property
    def chip(self) -> ChipConfig:
        """Alias of ``chip_config``."""
        return self.chip_config

    @property
    def sim(self) -> SimConfig:
        """Alias of ``sim_config``."""
        return self.sim_config

    @property
    def core(self) -> CoreConfig:
        """Alias of ``chip_config.core_config``."""
        return self.chip_config.core_config

    @property
    def noc(self) -> NocTable:
        """The NoC table: loaded from ``net_config_file_path`` on first use."""
        if self._noc is None:
            self._noc = self._load_noc()
        return self._noc

    @noc.setter
    def noc(self, table: NocTable) -> None:
        self._noc = table

    @property
    def gmem_bounded(self) -> bool:
        """Whether global accesses beyond ``memory_size`` are errors (§1.4)."""
        b = self.nnisa.global_memory_bounded
        return self.explicit_gmem_size if b is None else b

    def noc_path(self) -> Path | None:
        """Resolved NoC table path (relative to the config file's directory), or ``None``."""
        p = self.chip_config.network_config.net_config_file_path
        if not p:
            return None
        path = Path(p)
        if not path.is_absolute() and self.source:
            path = Path(self.source).parent / path
        return path

    def _load_noc(self) -> NocTable:
        uniform = None
        if self.nnisa.noc_latency is not None or self.nnisa.noc_energy is not None:
            uniform = (self.nnisa.noc_latency or 0.0, self.nnisa.noc_energy or 0.0)
        path = self.noc_path()
        if path is None:
            return NocTable(uniform=uniform)
        return load_noc_table(path, uniform=uniform, config_file=self.source)

    def noc_pair(self, src: int, dst: int) -> tuple[float, float]:
        """(ns per flit, pJ per flit) for a message src → dst.

        Raises
        ------
        ConfigError
            The pair is missing and ``nnisa.allow_missing_noc_pairs`` is false.
        """
        got = self.noc.get(src, dst)
        if got is None:
            if self.nnisa.allow_missing_noc_pairs:
                return 0.0, 0.0
            name = lambda n: "global memory (-10)" if n == self.chip_config.global_memory_switch_id \
                else f"core {n}"
            raise ConfigError(
                f"NoC table has no entry for {name(src)} -> {name(dst)}",
                file=str(self.noc.source or self.source or "<config>"),
                hint='pimsim-nn would use 0 ns / 0 pJ; set "nnisa": {"allow_missing_noc_pairs": true} to accept')
        return got

    def to_json_dict(self) -> dict[str, Any]:
        """The configuration as a pimsim-nn style JSON object (with the ``nnisa`` section).

        ``memory_size`` is always written, so ``nnisa.global_memory_bounded`` records whether it
        bounds global memory (a default size does not): the object loads back as the same machine."""
        d = self.model_dump(mode="json", exclude={"source", "explicit_gmem_size"})
        d["nnisa"]["global_memory_bounded"] = self.gmem_bounded
        return d


def load_noc_table(path: str | os.PathLike, *, uniform: tuple[float, float] | None = None,
                   config_file: str | None = None) -> NocTable:
    """Read a NoC table file ``{"latency": {src: {dst: v}}, "energy": {...}}`` (§7.3)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"NoC table file not found: {path}", file=config_file,
                          where="chip_config.network_config.net_config_file_path")
    try:
        raw = orjson.loads(read_bytes(path, ConfigError))
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc}", file=str(path)) from None
    if not isinstance(raw, dict):
        raise ConfigError("NoC table must be a JSON object with 'latency' and 'energy'", file=str(path))
    tables = {}
    for key in ("latency", "energy"):
        sub = raw.get(key, {})
        if not isinstance(sub, dict):
            raise ConfigError(f"'{key}' must be an object of objects", file=str(path), where=key)
        out: dict[int, dict[int, float]] = {}
        for s, row in sub.items():
            if not isinstance(row, dict):
                raise ConfigError(f"'{key}.{s}' must be an object", file=str(path), where=f"{key}.{s}")
            try:
                src = int(s)
                out[src] = {int(d): float(v) for d, v in row.items()}
            except (TypeError, ValueError):
                raise ConfigError(f"non-numeric node id or value in '{key}.{s}'", file=str(path),
                                  where=f"{key}.{s}") from None
            for d, v in out[src].items():
                if not math.isfinite(v) or v < 0:
                    raise ConfigError(f"'{key}.{s}.{d}' must be a finite value >= 0", file=str(path))
        tables[key] = out
    return NocTable(tables["latency"], tables["energy"], uniform=uniform, source=str(path))


def _loc(err: dict) -> str:
    return ".".join(str(p) for p in err.get("loc", ()))


def config_from_dict(data: dict[str, Any], *, source: str | None = None) -> PimConfig:
    """Build a :class:`PimConfig` from a parsed JSON object (validating every key)."""
    if not isinstance(data, dict):
        raise ConfigError("configuration must be a JSON object", file=source)
    for key in ("chip_config", "sim_config", "nnisa"):
        if key in data and not isinstance(data[key], dict):
            raise ConfigError(f"'{key}' must be an object", file=source, where=key)
    try:
        cfg = PimConfig.model_validate({k: v for k, v in data.items()
                                        if k in ("chip_config", "sim_config", "nnisa")})
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        msg = f"invalid value for '{_loc(first)}': {first['msg']}"
        if more:
            msg += f" (and {more} more)"
        raise ConfigError(msg, file=source) from None
    gm = (data.get("chip_config") or {}).get("global_memory_config") or {}
    cfg.explicit_gmem_size = isinstance(gm, dict) and "memory_size" in gm
    cfg.source = source
    return cfg


def load_config(path: str | os.PathLike) -> PimConfig:
    """Load a pimsim-nn configuration JSON file (§7).

    The NoC table is loaded lazily on first use of :attr:`PimConfig.noc`, relative to the
    config file's directory; call ``cfg.noc`` to validate it eagerly.

    Raises
    ------
    ConfigError
        File missing, not JSON, or a key with an invalid value (the message names file and key).
    """
    path = Path(path)
    raw = read_bytes(path, ConfigError)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc}", file=str(path)) from None
    return config_from_dict(data, source=str(path))


#: Values of the conformance configuration (§7.4) used by ``default_config(preset="conformance")``.
CONFORMANCE = {
    "chip_config": {
        "core_cnt": 64,
        "core_config": {
            "period": 1, "vector_width": 32, "vector_latency_cycle": 4,
            "matrix_config": {
                "xbar_array_count": 64, "period": 1, "pipeline_mode": True, "dac_resolution": 1,
                "dac_count": 128, "xbar_size": [128, 128], "cell_precision": 2, "xbar_latency": 7,
                "xbar_read_power": 22.24, "sample_hold_latency_cycle": 1, "adc_resolution": 8,
                "adc_latency_cycle": 20, "adc_static_power": 0.322, "adc_dynamic_power": 1.135,
                "adc_count": 16, "shift_adder_latency_cycle": 1, "output_buffer_latency_cycle": 1},
            "local_memory_config": {"data_width": 64, "period": 1, "write_latency_cycle": 30,
                                    "read_latency_cycle": 20},
        },
        "global_memory_config": {"data_width": 32, "period": 1, "write_latency_cycle": 50,
                                 "read_latency_cycle": 40},
        "network_config": {"bus_topology": "mesh", "bus_width": 32, "layout": [8, 8]},
    },
    "sim_config": {"sim_mode": 1, "sim_time": 17, "report_verbose_level": 0},
}


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def default_config(cores: int = 1, *, preset: Literal["pimsim", "conformance"] = "pimsim",
                   noc_latency: float | None = 10.0, noc_energy: float | None = 1.0,
                   sim_mode: int = 1, sim_time: float = 1000.0, rob_size: int | None = None,
                   overrides: dict[str, Any] | None = None) -> PimConfig:
    """A configuration without a file.

    Parameters
    ----------
    cores
        ``chip_config.core_cnt``.
    preset
        ``"pimsim"``: pimsim-nn's built-in defaults; ``"conformance"``: the hardware of the
        conformance configuration (§7.4) — the setting of the calibration vectors (§8.10).
    noc_latency, noc_energy
        Uniform NoC cost per flit for every pair (``None`` for both = no table: every pair
        missing, which is an error unless ``allow_missing_noc_pairs``).
    sim_mode, sim_time
        Latency mode (1) by default and a generous 1000 ms limit.
    rob_size
        Overrides ``core_config.rob_size``.
    overrides
        Nested dict merged over the result before validation (same layout as the JSON file).
    """
    data: dict[str, Any] = _merge(CONFORMANCE, {}) if preset == "conformance" else {}
    data = _merge(data, {"chip_config": {"core_cnt": cores},
                         "sim_config": {"sim_mode": sim_mode, "sim_time": sim_time},
                         "nnisa": {"noc_latency": noc_latency, "noc_energy": noc_energy}})
    if rob_size is not None:
        data = _merge(data, {"chip_config": {"core_config": {"rob_size": rob_size}}})
    if overrides:
        data = _merge(data, overrides)
    return config_from_dict(data, source=None)
