"""Cherry's energy model: per-action energies (config ``e_*`` keys) times the actions a run issued.

Actions per issued copy (one SZ x SZ tile each; element bits b = 18 for cherry18, 32 for fp32):

| instruction | arithmetic | register file | L1 cache (SRAM) | device memory |
| --- | --- | --- | --- | --- |
| ``matmul`` | SZ³ multiply + SZ³ add | read 3 tiles, write 1 | | |
| ``mulacc`` | SZ² multiply + SZ² add | read 3, write 1 | | |
| ``add``/``sub``/``sum``/``max`` | SZ² add | read 2, write 1 | | |
| ``mul`` | SZ² multiply | read 2, write 1 | | |
| ``div``/``pow``/``exp``/``log`` | SZ² special (``e_special_ops`` multiply-adds) | read 2, write 1 | | |
| ``relu``/``gtz`` | SZ² add (a compare) | read 1, write 1 | | |
| ``copy``/``zero`` | | read 1 (copy), write 1 | | |
| ``load`` | | write 1 | read 1 | |
| ``store`` | | read 1 | write 1 | |
| ``mem_read``/``mem_write`` | | | write/read 1 | read/write 1 |

Host layout steps read and write device memory (``host_bytes``, counted as device-memory bits).
Static energy = ``static_mw_per_mb`` x on-chip SRAM (L1 + register file, in MB) x latency.
Defaults and their sources: ``docs/cherry.md`` §Energy.
"""

from __future__ import annotations

from typing import Any

from ..config import CherryConfig
from ..isa import OP

_ADD = ("add", "sub", "sum", "max", "relu", "gtz")
_SPECIAL = ("div", "pow", "exp", "log")
#: register-file tiles (read, written) per copy
_RF = {"matmul": (3, 1), "mulacc": (3, 1), "add": (2, 1), "sub": (2, 1), "mul": (2, 1), "div": (2, 1),
       "pow": (2, 1), "sum": (2, 1), "max": (2, 1), "exp": (1, 1), "log": (1, 1), "relu": (1, 1), "gtz": (1, 1),
       "copy": (1, 1), "zero": (0, 1), "load": (0, 1), "store": (1, 0)}
_NAMES = {code: name for name, code in OP.items()}


def element_bits(cfg: CherryConfig) -> int:
    return 18 if cfg.element_format == "cherry18" else 32


def onchip_mb(cfg: CherryConfig) -> float:
    """L1 cache plus register file, in MB (2^20 bytes)."""
    tiles = cfg.cache_tiles + cfg.threads * 4
    return tiles * cfg.sz * cfg.sz * element_bits(cfg) / 8 / 2 ** 20


def energy_of(cfg: CherryConfig, op_copies: dict[int, int], latency_ns: float | None,
              host_bytes: int = 0) -> dict[str, Any]:
    """``energy_pj`` (= dynamic + static), its parts and the per-action breakdown of one run."""
    sz2, bits = cfg.sz * cfg.sz, element_bits(cfg)
    fp32 = cfg.element_format == "fp32"
    e_mul = cfg.e_fmul32_pj if fp32 else cfg.e_fmul_pj
    e_add = cfg.e_fadd32_pj if fp32 else cfg.e_fadd_pj
    tile_bits = sz2 * bits
    mult = add = special = rf_tiles = sram_tiles = dram_tiles = 0
    for code, n in op_copies.items():
        name = _NAMES.get(code, "")
        if name == "matmul":
            mult += n * sz2 * cfg.sz
            add += n * sz2 * cfg.sz
        elif name == "mulacc":
            mult += n * sz2
            add += n * sz2
        elif name == "mul":
            mult += n * sz2
        elif name in _ADD:
            add += n * sz2
        elif name in _SPECIAL:
            special += n * sz2
        r, w = _RF.get(name, (0, 0))
        rf_tiles += n * (r + w)
        if name in ("load", "store", "mem_read", "mem_write"):
            sram_tiles += n
        if name in ("mem_read", "mem_write"):
            dram_tiles += n
    parts = {
        "multiply": mult * e_mul,
        "add": add * e_add,
        "special": special * cfg.e_special_ops * (e_mul + e_add),
        "register_file": rf_tiles * tile_bits * cfg.e_rf_pj_per_bit,
        "l1_cache": sram_tiles * tile_bits * cfg.e_sram_pj_per_bit,
        "device_memory": dram_tiles * tile_bits * cfg.e_dram_pj_per_bit,
        "host_steps": host_bytes * 8 * cfg.e_dram_pj_per_bit,
    }
    dynamic = float(sum(parts.values()))
    static_mw = cfg.static_mw_per_mb * onchip_mb(cfg)
    static = static_mw * (latency_ns or 0.0)  # mW x ns = pJ
    return {"energy_pj": dynamic + static, "dynamic_energy_pj": dynamic, "static_energy_pj": static,
            "energy_per_input_pj": dynamic + static, "static_power_mw": static_mw,
            "energy_breakdown_pj": parts}
