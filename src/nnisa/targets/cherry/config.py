"""Cherry architecture/simulator configuration (spec ``cherry.md`` §1.5) and its presets.

``--config/--arch`` takes a preset name (``sz4``, ``sz16``, ``sz32``), a JSON file with any of the
keys below, ``key=value`` pairs separated by commas (``sz=16,superscalar_width=12``), or a
:class:`CherryConfig`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...core.configs import resolve_config
from ...core.errors import ConfigError
from ...core.options import option

__all__ = ["CherryCompileOptions", "CherryConfig", "PRESETS", "load_config"]


class CherryConfig(BaseModel):
    """One Cherry device plus the simulator's settings.

    Attributes
    ----------
    sz
        Tile size (4, 16 or 32): every register and memory location holds an SZ x SZ tile.
    element_format
        ``cherry18`` (top 18 bits of float32, truncated) or ``fp32``.
    threads, superscalar_width
        Register banks and the maximum copies per superscalar group (SW <= threads).
    cache_tiles, dram_tiles, icache_words, ro_slots
        Memory sizes in tiles / words / header slots.
    lat_ram, lat_ls, lat_ar, lat_end, iq_entries, iq_reserve
        Cycle-model parameters (§4).
    encoding, alt_slot_mode
        Instruction encoding (``canonical`` or ``cherrycore``) and the slot rule of the latter.
    race_check
        Re-run independent loops iteration-major and compare (§3.1).
    host_link, link_latency, link_bytes_per_cycle
        Optional host-link timing (§4.5).
    clock_ghz
        Clock for reported times.
    e_fmul_pj, e_fadd_pj, e_fmul32_pj, e_fadd32_pj, e_special_ops, e_rf_pj_per_bit, e_sram_pj_per_bit, e_dram_pj_per_bit, static_mw_per_mb
        The energy model (:mod:`~nnisa.targets.cherry.sim.energy`): pJ per multiply/add (cherry18
        and fp32), multiply-adds per special function, pJ per bit of register file, L1 and device
        memory, and static mW per MB of on-chip SRAM.
    max_cycles
        Simulated-time limit of a run (``SimTimeExceeded``, exit 4, when reached).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=True)

    sz: Literal[4, 16, 32] = 4
    element_format: Literal["cherry18", "fp32"] = "cherry18"
    # upper bounds: far above any Cherry (and the 18-bit APU addresses' reach), low enough that an
    # absurd value is a range error naming its key, not an out-of-memory at the first allocation
    threads: int = Field(16, le=1024)
    superscalar_width: int = Field(16, le=1024)
    cache_tiles: int = Field(8192, le=1 << 20)
    dram_tiles: int = Field(65536, le=1 << 20)
    icache_words: int = Field(2048, le=1 << 24)
    ro_slots: int = Field(16, le=1 << 16)
    lat_ram: int = Field(4, le=1 << 20)
    lat_ls: int = Field(3, le=1 << 20)
    lat_ar: int = Field(10, le=1 << 20)
    lat_end: int = Field(1, le=1 << 20)
    iq_entries: int = Field(64, le=1 << 20)
    iq_reserve: Literal["sw", "copies"] = "sw"
    encoding: Literal["canonical", "cherrycore"] = "canonical"
    alt_slot_mode: Literal["offset", "ignore"] = "offset"
    race_check: bool = False
    host_link: bool = False
    link_latency: int = Field(0, le=1 << 32)
    link_bytes_per_cycle: int = Field(4, le=1 << 32)
    clock_ghz: float = Field(1.0, le=1e6, allow_inf_nan=False)
    #: simulated-time limit per run, in cycles (exit 4 when reached; 40x the largest built-in workload,
    #: ResNet-18's convolutions at SZ=32, 249,441 cycles); in functional-only runs the
    #: control unit's cycles (3 per instruction group, 4 per loop instruction) are counted
    max_cycles: int = Field(10_000_000, ge=1, le=1 << 62)
    # energy per action (docs/cherry.md §Energy: Horowitz, ISSCC 2014, 45 nm)
    e_fmul_pj: float = Field(1.1, ge=0, le=1e6, allow_inf_nan=False)
    e_fadd_pj: float = Field(0.4, ge=0, le=1e6, allow_inf_nan=False)
    e_fmul32_pj: float = Field(3.7, ge=0, le=1e6, allow_inf_nan=False)
    e_fadd32_pj: float = Field(0.9, ge=0, le=1e6, allow_inf_nan=False)
    e_special_ops: float = Field(4.0, ge=0, le=1e6, allow_inf_nan=False)
    e_rf_pj_per_bit: float = Field(0.16, ge=0, le=1e6, allow_inf_nan=False)
    e_sram_pj_per_bit: float = Field(1.56, ge=0, le=1e6, allow_inf_nan=False)
    e_dram_pj_per_bit: float = Field(20.3, ge=0, le=1e6, allow_inf_nan=False)
    static_mw_per_mb: float = Field(10.0, ge=0, le=1e6, allow_inf_nan=False)

    @model_validator(mode="after")
    def _check(self) -> "CherryConfig":
        positive = ("threads", "superscalar_width", "cache_tiles", "dram_tiles", "icache_words", "ro_slots",
                    "lat_ram", "lat_ls", "lat_ar", "lat_end", "link_bytes_per_cycle")
        for key in positive:
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1")
        if self.superscalar_width > self.threads:
            raise ValueError("superscalar_width must be <= threads")
        if self.cache_tiles % 4:
            raise ValueError("cache_tiles must be divisible by 4 (four cache slots)")
        if self.iq_entries < 4:
            raise ValueError("iq_entries must be >= 4")
        for key in type(self).model_fields:
            if (key.startswith("e_") or key == "static_mw_per_mb") and getattr(self, key) < 0:
                raise ValueError(f"{key} must be >= 0")
        if self.link_latency < 0 or self.clock_ghz <= 0:
            raise ValueError("link_latency must be >= 0 and clock_ghz > 0")
        return self

    @property
    def slot_tiles(self) -> int:
        """Tiles per cache slot (the window a ``mem_*`` slot selects)."""
        return self.cache_tiles // 4

    @property
    def tile_elems(self) -> int:
        return self.sz * self.sz

    def with_(self, **changes: Any) -> "CherryConfig":
        """A copy with some keys changed (validated)."""
        return _build({**self.model_dump(), **changes}, "configuration")


#: preset name → (description, settings)
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "sz4": ("Small Cherry 1 (Arty A7 FPGA): 4x4 tiles", {"sz": 4}),
    "sz16": ("Big Cherry 1 (Alveo U250 FPGA): 16x16 tiles", {"sz": 16}),
    "sz32": ("Cherry 2 (ASIC, tinygrad cherry's size): 32x32 tiles", {"sz": 32}),
}


def _build(data: dict[str, Any], where: str) -> CherryConfig:
    data = {("sz" if k.lower() == "sz" else k): v for k, v in data.items()}
    try:
        return CherryConfig(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        raise ConfigError(f"{where}: {loc}: {err['msg']}") from None


def load_config(config: Any = None) -> CherryConfig:
    """Resolve ``--config/--arch`` to a :class:`CherryConfig`.

    Parameters
    ----------
    config
        ``None`` (SZ = 4 defaults), a preset name, ``key=value[,key=value]`` text, a JSON file
        path, a dict or a :class:`CherryConfig`.
    """
    return resolve_config(config, {k: v[1] for k, v in PRESETS.items()}, _build, CherryConfig, "Cherry")


@dataclass
class CherryCompileOptions:
    """The ``-O`` settings of compile/run/sim: they change the configuration a model is compiled
    and simulated with (``None``: the configuration's own value)."""

    element_format: str | None = option(None, "element format (default: config)", choices=("cherry18", "fp32"),
                                        commands=("sim", "compile", "run"))
    host_link: bool | None = option(None, "model the host link for mem_read/mem_write (§4.5)", commands=("sim", "run"))
    race_check: bool | None = option(None, "re-run independent loops iteration-major and compare", commands=("sim",))
    fit_sz: bool = option(True, "pick a larger SZ when the model does not fit device memory at the configured one",
                          commands=("compile", "run"))
    split_k: bool = option(True, "cherry18: accumulate long matmuls in chunks of about sqrt(k-tiles) summed in the "
                           "cache (fewer truncations of the running sum)", commands=("compile", "run"))
    max_cycles: int | None = option(None, "simulated-time limit (exit 4 when reached; default: config, 10^7)",
                                    commands=("sim", "run"), minimum=1, maximum=1 << 62)

    def apply(self, config: Any) -> CherryConfig:
        """``config`` (anything :func:`load_config` takes) with these settings applied."""
        cfg = load_config(config)
        changes = {k: v for k, v in asdict(self).items() if v is not None and k not in ("fit_sz", "split_k")}
        return cfg.with_(**changes) if changes else cfg
