"""Tensil architectures (``.tarch``): parameters, data types, presets, reader and writer.

A :class:`TensilArch` holds the eleven keys of Tensil's ``Architecture`` (spec §1.1) plus any
``x_nnisa_*`` extension keys (the LUT extension, §3.10).  The writer reproduces Tensil's own
``.tarch`` bytes (§1.2); the compact form goes inside ``.tmodel`` files (§5.1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...core import jsonsafe
from ...core.errors import ConfigError, UnsupportedError
from ...core.fileio import read_text

#: data type → (bits, binary point, bytes per scalar in files); FLOAT32 has bp None
DATA_TYPES: dict[str, tuple[int, int | None, int]] = {
    "FP8BP4": (8, 4, 1),
    "FP16BP8": (16, 8, 2),
    "FP18BP10": (18, 10, 4),
    "FP32BP16": (32, 16, 4),
    "FLOAT32": (32, None, 4),
}

#: the eleven keys, in Tensil's order
KEYS = ("data_type", "array_size", "dram0_depth", "dram1_depth", "local_depth", "accumulator_depth",
        "simd_registers_depth", "stride0_depth", "stride1_depth", "number_of_threads", "thread_queue_depth")

#: key → (minimum, maximum) accepted by the reader (spec §1.1)
LIMITS = {
    "array_size": (2, 256), "dram0_depth": (2, 1 << 32), "dram1_depth": (2, 1 << 32),
    "local_depth": (2, 1 << 16), "accumulator_depth": (2, 1 << 16), "simd_registers_depth": (0, 16),
    "stride0_depth": (1, 1 << 16), "stride1_depth": (1, 1 << 16), "number_of_threads": (1, 1 << 16),
    "thread_queue_depth": (1, 1 << 16),
}
#: the LUT extension: tables (each result goes to a SIMD register) and entries per table
LUT_LIMITS = {"tables": (1, 16), "depth": (2, 1 << 16)}


@dataclass(frozen=True)
class TensilArch:
    """One Tensil architecture (all depths in vectors of ``array_size`` scalars)."""

    data_type: str = "FP16BP8"
    array_size: int = 8
    dram0_depth: int = 1048576
    dram1_depth: int = 1048576
    local_depth: int = 2048
    accumulator_depth: int = 512
    simd_registers_depth: int = 1
    stride0_depth: int = 1
    stride1_depth: int = 1
    number_of_threads: int = 1
    thread_queue_depth: int = 8
    #: ``x_nnisa_*`` keys (e.g. ``x_nnisa_lut``) in file order; values as (hashable) JSON text
    extensions: tuple[tuple[str, Any], ...] = field(default=(), compare=True)

    def __post_init__(self) -> None:
        frozen = tuple((k, v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))
                       for k, v in self.extensions)
        object.__setattr__(self, "extensions", frozen)

    def extension(self, key: str) -> Any:
        """The parsed value of an ``x_nnisa_*`` key, or ``None``."""
        v = dict(self.extensions).get(key)
        return None if v is None else json.loads(v)
    #: display name (preset or file stem); not part of the file
    name: str = field(default="", compare=False)

    # ------------------------------------------------------------------ derived
    @property
    def bits(self) -> int:
        return DATA_TYPES[self.data_type][0]

    @property
    def bp(self) -> int | None:
        return DATA_TYPES[self.data_type][1]

    @property
    def value_max(self) -> float:
        """The data type's largest magnitude (saturation bound; unbounded for FLOAT32)."""
        return float("inf") if self.bp is None else 2.0 ** (self.bits - 1 - self.bp)

    @property
    def scalar_bytes(self) -> int:
        return DATA_TYPES[self.data_type][2]

    @property
    def is_float(self) -> bool:
        return self.data_type == "FLOAT32"

    @property
    def lut(self) -> tuple[int, int] | None:
        """``(tables, depth)`` of the LUT extension, or ``None`` when it is off."""
        ext = self.extension("x_nnisa_lut")
        return None if ext is None else (int(ext["tables"]), int(ext["depth"]))

    def depth(self, memory: str) -> int:
        """Depth of ``local``, ``acc``, ``dram0`` or ``dram1``."""
        return {"local": self.local_depth, "acc": self.accumulator_depth, "dram0": self.dram0_depth,
                "dram1": self.dram1_depth}[memory]

    # ------------------------------------------------------------------ dict / files
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {k: getattr(self, k) for k in KEYS}
        d.update({k: json.loads(v) for k, v in self.extensions})
        return d

    @classmethod
    def from_dict(cls, d: Any, *, name: str = "", where: str = "architecture") -> "TensilArch":
        """Validate a parsed JSON object (all eleven keys required, only ``x_nnisa_*`` extras)."""
        if not isinstance(d, dict):
            raise ConfigError(f"{where}: expected a JSON object")
        missing = [k for k in KEYS if k not in d]
        if missing:
            raise ConfigError(f"{where}: missing key(s) {', '.join(missing)}")
        extra = [k for k in d if k not in KEYS and not k.startswith("x_nnisa_")]
        if extra:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(extra)} (only x_nnisa_* extensions allowed)")
        if d["data_type"] not in DATA_TYPES:
            raise ConfigError(f"{where}: data_type {d['data_type']!r} is not one of {', '.join(DATA_TYPES)}")
        for k, (lo, hi) in LIMITS.items():
            v = d[k]
            if not isinstance(v, int) or isinstance(v, bool):
                raise ConfigError(f"{where}: {k} must be an integer, got {v!r}")
            if not lo <= v <= hi:
                raise ConfigError(f"{where}: {k} = {v} outside {lo}..{hi}")
        exts = tuple((k, v) for k, v in d.items() if k.startswith("x_nnisa_"))
        for k, v in exts:
            if k != "x_nnisa_lut":
                continue
            ok = isinstance(v, dict) and isinstance(v.get("tables"), int) and isinstance(v.get("depth"), int)
            if not ok or v["tables"] < 1 or v["depth"] < 2:
                raise ConfigError(f"{where}: x_nnisa_lut must be {{\"tables\": T >= 1, \"depth\": D >= 2}}")
            for key, (lo, hi) in LUT_LIMITS.items():  # the tables live in SIMD registers and local memory
                if not lo <= v[key] <= hi:
                    raise ConfigError(f"{where}: x_nnisa_lut.{key} = {v[key]} outside {lo}..{hi}")
        return cls(**{k: d[k] for k in KEYS}, extensions=exts, name=name)

    def to_tarch(self) -> str:
        """Tensil's ``.tarch`` bytes (spec §1.2: 4-space keys, ``,\\n`` joins, ``\\n  }``)."""
        items = [f'    "{k}": {json.dumps(v, separators=(",", ":"))}' for k, v in self.to_dict().items()]
        return "{\n" + ",\n".join(items) + "\n  }"

    def compact(self) -> dict[str, Any]:
        return self.to_dict()

    def check_supported(self) -> None:
        """Reject what nnisa parses but cannot encode or run (spec §1.1)."""
        if self.number_of_threads != 1:
            raise UnsupportedError(f"number_of_threads = {self.number_of_threads}: only one TCU thread is supported")

    def with_(self, **kw: Any) -> "TensilArch":
        return replace(self, **kw)


def _preset(name, n, d0, d1, local, acc, stride=8, **kw) -> TensilArch:
    return TensilArch("FP16BP8", n, d0, d1, local, acc, 1, stride, stride, 1, 8, name=name, **kw)


#: shipped Tensil architectures (§10.3) and the test architectures of Tensil's own tests
PRESETS: dict[str, tuple[TensilArch, str]] = {
    "pynqz1": (_preset("pynqz1", 8, 1 << 20, 1 << 20, 8192, 2048), "PYNQ-Z1, 8x8, 8-byte instructions"),
    "artya7100t": (_preset("artya7100t", 8, 1 << 20, 1 << 20, 8192, 2048), "Arty A7-100T, 8x8 (same as pynqz1)"),
    "cmoda7": (_preset("cmoda7", 4, 4096, 32768, 4096, 4096), "Cmod A7, 4x4"),
    "ultra96v2": (_preset("ultra96v2", 16, 1 << 21, 1 << 21, 20480, 4096), "Ultra96-V2, 16x16, 9-byte instructions"),
    "zcu104": (_preset("zcu104", 32, 1 << 21, 1 << 21, 16384, 4096), "ZCU104, 32x32 (tutorial baseline)"),
    "zcu104_uram": (_preset("zcu104_uram", 32, 1 << 21, 1 << 21, 49152, 20480), "ZCU104 with Ultra RAM, 32x32"),
    "tiny2x2": (_preset("tiny2x2", 2, 256, 256, 256, 256, 1), "test: 2x2, depths 256 (xor.tmodel)"),
    "tiny4x4": (_preset("tiny4x4", 4, 256, 256, 256, 256, 1), "test: 4x4, depths 256"),
    "tiny8x8": (_preset("tiny8x8", 8, 256, 256, 256, 256, 1), "test: 8x8, depths 256"),
    "large2x2": (_preset("large2x2", 2, 65536, 65536, 65536, 65536, 1), "test: 2x2, depths 65536 (7-byte words)"),
    "stride2x2": (_preset("stride2x2", 2, 128, 128, 128, 128, 2), "test: 2x2, depths 128, stride depth 2"),
    "formal": (_preset("formal", 2, 4, 4, 4, 4, 2), "test: Tensil's Architecture.formal (depths 4)"),
}


def parse_tarch(text: str, *, name: str = "", file: str | None = None) -> TensilArch:
    """Parse the JSON text of a ``.tarch`` file."""
    d = jsonsafe.loads(text, file, ConfigError)
    return TensilArch.from_dict(d, name=name, where=file or "architecture")


def load_arch(config: Any) -> TensilArch:
    """Resolve ``--arch``: a :class:`TensilArch`, a preset name, a ``.tarch`` path, a ``.tmodel``
    path (its embedded ``arch``) or a dict of the eleven keys."""
    if isinstance(config, TensilArch):
        return config
    if isinstance(config, dict):
        return TensilArch.from_dict(config)
    if config is None:
        raise ConfigError("a Tensil architecture is needed: --arch NAME|FILE.tarch|MODEL.tmodel "
                          f"(presets: {', '.join(PRESETS)})")
    text = str(config)
    if text in PRESETS:
        return PRESETS[text][0]
    path = Path(text)
    if not path.exists():
        raise ConfigError(f"unknown architecture {text!r}: not a preset ({', '.join(PRESETS)}) nor a file")
    raw = read_text(path, ConfigError)
    if path.suffix.lower() == ".tmodel":
        d = jsonsafe.loads(raw, str(path), ConfigError)
        if not isinstance(d, dict) or "arch" not in d:
            raise ConfigError("model has no 'arch' object", file=str(path))
        return TensilArch.from_dict(d["arch"], name=path.stem, where=f"{path}: arch")
    return parse_tarch(raw, name=path.stem, file=str(path))
