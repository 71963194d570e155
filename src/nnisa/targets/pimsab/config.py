"""PIMSAB architecture configuration (spec §1.3–§1.6) and its presets.

Every architecture parameter is a key of :class:`PimsabConfig`; the defaults are Table 2 of the
paper (the official simulator's 12 × 10 base configuration).  Presets cover Table 4 (PIMSAB-D,
PIMSAB-S), the artifact's configurations, the Fig. 19 sensitivity points and every ablation of
§1.5.  ``--config`` takes a preset name, a JSON file (``{"preset": "base", "shuffle": false}``: a
preset plus overrides, or plain keys over the defaults) or a dict.

The canonical JSON (sorted keys, every key) is hashed with SHA-256; program images store the
hash of the configuration they were assembled for (§2.6).
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import cached_property, lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...core.configs import resolve_config
from ...core.errors import ConfigError


class PimsabConfig(BaseModel):
    """The PIMSAB chip and simulator settings (spec §1.4); unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mesh_width: int = Field(12, ge=1, le=64)
    mesh_height: int = Field(10, ge=1, le=256)
    n_tiles_used: int | None = Field(None, ge=1)
    crams_per_tile: int = Field(256, ge=1, le=1024)
    cram_rows: int = Field(256, ge=8, le=1024)
    cram_cols: int = Field(256, ge=8, le=1024)
    htree_depth: int = Field(4, ge=1, le=8)
    tile_interconnect: Literal["htree", "bus"] = "htree"
    bus_hops: int = Field(8, ge=1, le=1 << 20)
    link_bits: int = Field(1024, ge=64, le=1 << 20)
    router_vcs: int = Field(8, ge=1, le=64)
    vc_depth: int = Field(2, ge=1, le=64)
    dram_distributed: bool = True
    dram_tile: int = Field(0, ge=0, le=4095)
    dram_row_open_latency: int = Field(10, ge=0, le=1 << 40)  # time-like keys bounded: cycles stay 64-bit
    dram_banks: int = Field(4, ge=1, le=64)
    dram_finished_queue: int = Field(1, ge=1, le=1)
    rf_regs: int = Field(32, ge=1, le=32)
    rf_bits: int = Field(32, ge=32, le=32)
    popcount_stages: int = Field(5, ge=0, le=1 << 20)
    clock_ghz: float = Field(1.5, gt=0)
    cycle_mode: Literal["simulator", "bitexact"] = "simulator"
    rf_transfer_flits: int = Field(64, ge=1, le=1 << 20)
    transpose_latency: int = Field(0, ge=0, le=1 << 40)
    const_op: bool = True
    const_op_kick_out_1_row: bool = False
    shuffle: bool = True
    cross_cram_shift: bool = True
    bypass_dram: bool = False
    broadcast_type: Literal["systolic", "one_to_all"] = "systolic"
    reduction: Literal["interCRAM", "intraCRAM"] = "interCRAM"
    energy_compat_popcount: bool = False
    functional: bool = True

    @model_validator(mode="after")
    def _check(self) -> "PimsabConfig":
        n = self.mesh_width * self.mesh_height
        if self.n_tiles_used is not None and self.n_tiles_used > n:
            raise ValueError(f"n_tiles_used={self.n_tiles_used} exceeds the {n} tiles of the mesh")
        if not self.dram_distributed and self.dram_tile >= n:
            raise ValueError(f"dram_tile={self.dram_tile} is not a router of the {n}-tile mesh")
        if self.n_tiles > 4096:
            raise ValueError(f"{n} tiles exceed the 12-bit tile fields of the encoding")
        return self

    # ------------------------------------------------------------------ derived figures
    @property
    def n_tiles(self) -> int:
        return self.mesh_width * self.mesh_height

    @property
    def tiles_used(self) -> int:
        """Tiles a workload may use (``n_tiles_used``, default all)."""
        return self.n_tiles if self.n_tiles_used is None else self.n_tiles_used

    @property
    def tile_bitlines(self) -> int:
        """Bitlines of a tile vector: crams_per_tile × cram_cols (65,536 in Table 2)."""
        return self.crams_per_tile * self.cram_cols

    @property
    def htree_switches(self) -> int:
        """Switches of a 4-ary tree of ``htree_depth`` levels: 1 + 4 + 16 + 64 = 85 for depth 4."""
        return (4 ** self.htree_depth - 1) // 3

    @property
    def transfer_depth(self) -> int:
        """D of the controller FSM: H-tree depth, or the bus hops in ``bus`` mode."""
        return self.bus_hops if self.tile_interconnect == "bus" else self.htree_depth

    @property
    def dram_channels(self) -> int:
        return self.mesh_width if self.dram_distributed else 1

    def dram_router(self, tile: int) -> int:
        """Router of the DRAM channel serving ``tile`` (top row of its column, §3.5)."""
        return tile % self.mesh_width if self.dram_distributed else self.dram_tile

    @property
    def pes(self) -> int:
        return self.n_tiles * self.crams_per_tile * self.cram_cols

    @property
    def onchip_mb(self) -> float:
        return self.n_tiles * self.crams_per_tile * self.cram_rows * self.cram_cols / 8 / 1e6

    @property
    def dram_gbs(self) -> float:
        """DRAM bandwidth at the A100-matched 1215 MHz memory clock (GB/s), as in Table 4."""
        return self.dram_channels * self.link_bits * 1.215e9 / 8 / 1e9

    # ------------------------------------------------------------------ identity
    def as_dict(self) -> dict[str, Any]:
        d = self.model_dump()
        d["n_tiles_used"] = self.tiles_used
        return d

    def canonical_json(self) -> str:
        """Sorted-key JSON of every key (``n_tiles_used`` resolved): the hashed identity."""
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))

    @cached_property
    def sha256(self) -> bytes:
        return hashlib.sha256(self.canonical_json().encode()).digest()

    def replace(self, **changes: Any) -> "PimsabConfig":
        """A copy with some keys changed (validated)."""
        data = self.model_dump()
        data.update(changes)
        return make_config(data)


_ABLATE_ALL = dict(const_op=False, const_op_kick_out_1_row=True, shuffle=False, cross_cram_shift=False,
                   bypass_dram=True, broadcast_type="one_to_all", tile_interconnect="bus", bus_hops=8,
                   mesh_width=1, mesh_height=120, dram_distributed=False, dram_tile=0)

#: preset name → (one-line description, overrides of the defaults)
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "base": ("Table 2: 12x10 mesh, 120 tiles x 256 CRAMs of 256x256", {}),
    "pimsab_d": ("Table 4 PIMSAB-D: 6x5 mesh, 30 tiles, 933 GB/s", dict(mesh_width=6, mesh_height=5)),
    "pimsab_s": ("Table 4 PIMSAB-S: 1 tile, 155.5 GB/s", dict(mesh_width=1, mesh_height=1)),
    "artifact_dc": ("artifact's Duality Cache runs (= base)", {}),
    "artifact_simdram": ("artifact's SIMDRAM runs: 4x4 mesh", dict(mesh_width=4, mesh_height=4)),
    "sens_cram128": ("Fig 19: 1024 CRAMs of 128x128 per tile", dict(crams_per_tile=1024, cram_rows=128,
                                                                      cram_cols=128, htree_depth=5)),
    "sens_cram512": ("Fig 19: 64 CRAMs of 512x512 per tile", dict(crams_per_tile=64, cram_rows=512,
                                                                    cram_cols=512, htree_depth=3)),
    "sens_12x5": ("Fig 19: 12x5 mesh, 512 CRAMs per tile", dict(mesh_height=5, crams_per_tile=512, htree_depth=5)),
    "sens_12x20": ("Fig 19: 12x20 mesh, 128 CRAMs per tile", dict(mesh_height=20, crams_per_tile=128,
                                                                    htree_depth=3)),
    "sens_6x20": ("Fig 19: 6x20 mesh (half the DRAM bandwidth)", dict(mesh_width=6, mesh_height=20)),
    "sens_24x5": ("Fig 19: 24x5 mesh (double the DRAM bandwidth)", dict(mesh_width=24, mesh_height=5)),
    "abl_shuffle_off": ("Fig 21a: no shuffle unit", dict(shuffle=False)),
    "abl_const_off": ("Fig 21b: no constant operations", dict(const_op=False)),
    "abl_const_off_kickout": ("Fig 21b: no constant operations, one-row spill",
                              dict(const_op=False, const_op_kick_out_1_row=True)),
    "abl_bus": ("Fig 21c: bus instead of H-tree", dict(tile_interconnect="bus")),
    "abl_shift_off": ("Fig 21d: no cross-CRAM shift", dict(cross_cram_shift=False)),
    "abl_shift_off_bypass": ("Fig 21d: no cross-CRAM shift, DRAM bypass",
                             dict(cross_cram_shift=False, bypass_dram=True)),
    "abl_one_to_all": ("Fig 21e: one-to-all broadcast", dict(broadcast_type="one_to_all")),
    "abl_ring": ("Fig 21f: 1x120 ring, single DRAM", dict(mesh_width=1, mesh_height=120, dram_distributed=False)),
    "abl_intracram": ("Fig 21g: intra-CRAM reduction", dict(reduction="intraCRAM")),
    "abl_all_off": ("Fig 21h: every feature off", _ABLATE_ALL),
}


def make_config(data: dict[str, Any], *, source: str = "configuration") -> PimsabConfig:
    """Validate a dict of keys; errors become one-line :class:`ConfigError`."""
    try:
        return PimsabConfig(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ())) or "config"
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise ConfigError(f"{source}: {loc}: {err.get('msg')}{more}") from None
    except TypeError as exc:
        raise ConfigError(f"{source}: {exc}") from None


@lru_cache(maxsize=None)
def preset(name: str) -> PimsabConfig:
    """A named preset (cached: configurations are immutable)."""
    if name not in PRESETS:
        raise ConfigError(f"unknown PIMSAB preset {name!r} (presets: {', '.join(PRESETS)})")
    return make_config(dict(PRESETS[name][1]), source=f"preset {name}")


def load_config(config: Any = None) -> PimsabConfig:
    """``None`` (base), a :class:`PimsabConfig`, a preset name, ``[preset,]key=value,...`` text, a
    dict or a JSON file path (``{"preset": "base", "shuffle": false}``)."""
    if isinstance(config, str) and config in PRESETS:
        return preset(config)
    return resolve_config(config, {k: v[1] for k, v in PRESETS.items()},
                          lambda data, where: make_config(data, source=where), PimsabConfig, "PIMSAB", "base")


@lru_cache(maxsize=256)
def preset_for_hash(digest: bytes) -> str | None:
    """The first preset whose canonical JSON hashes to ``digest`` (``None`` if none does)."""
    for name in PRESETS:
        if preset(name).sha256 == digest:
            return name
    return None


def log2_exact(n: int) -> int | None:
    """log2 of a power of two, else ``None``."""
    return int(math.log2(n)) if n > 0 and n & (n - 1) == 0 else None
