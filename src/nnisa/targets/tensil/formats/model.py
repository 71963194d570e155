"""Tensil model files (spec §5): ``.tmodel`` (JSON), ``.tdata`` (raw scalars) and CSV tensors.

The ``.tmodel`` writer emits compact JSON in Tensil's key order with no trailing newline, which
reproduces Tensil's files byte for byte; the reader accepts any whitespace and ``x_nnisa_*`` keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ....core import jsonsafe
from ....core.bundle import member
from ....core.errors import FormatError
from ....core.fileio import read_bytes, read_text, write_atomic
from ..config import TensilArch
from ..numerics import Numeric

MODEL_KEYS = ("name", "prog", "consts", "inputs", "outputs", "arch", "load_consts_to_local")


@dataclass
class Entry:
    """A tensor segment in DRAM0 (``inputs``/``outputs``) or a consts file (``file_name`` set)."""

    name: str
    base: int
    size: int
    file_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.file_name is not None:
            return {"file_name": self.file_name, "base": self.base, "size": self.size}
        return {"name": self.name, "base": self.base, "size": self.size}


@dataclass
class TensilModel:
    """The contents of a ``.tmodel``; ``directory`` resolves the relative file names."""

    name: str
    prog_file: str
    prog_size: int
    consts: list[Entry]
    inputs: list[Entry]
    outputs: list[Entry]
    arch: TensilArch
    load_consts_to_local: bool = False
    extensions: dict[str, Any] = field(default_factory=dict)
    directory: Path | None = None
    path: Path | None = None

    def to_json(self) -> str:
        d = {"name": self.name, "prog": {"file_name": self.prog_file, "size": self.prog_size},
             "consts": [c.to_dict() for c in self.consts], "inputs": [e.to_dict() for e in self.inputs],
             "outputs": [e.to_dict() for e in self.outputs], "arch": self.arch.to_dict(),
             "load_consts_to_local": self.load_consts_to_local}
        d.update(self.extensions)
        return json.dumps(d, separators=(",", ":"), ensure_ascii=False)

    def file(self, name: str) -> Path:
        """``name`` (a consts or program file the model names) in the model's folder: like Tensil's
        own output, a plain name there; ``..``, absolute paths and symlinks out are refused."""
        return member(self.directory or Path("."), name, what="file", source=self.path or "model")

    def tensor_names(self, which: str) -> list[str]:
        seen: list[str] = []
        for e in getattr(self, which):
            if e.name not in seen:
                seen.append(e.name)
        return seen

    def segments(self, which: str, name: str) -> list[Entry]:
        return [e for e in getattr(self, which) if e.name == name]

    def tensor_size(self, which: str, name: str) -> int:
        return sum(e.size for e in self.segments(which, name))

    def load_consts(self, numeric: Numeric) -> list[tuple[int, np.ndarray]]:
        """``(base, raw vectors)`` of every consts file, checked against its declared size."""
        n = self.arch.array_size
        out = []
        for c in self.consts:
            p = self.file(c.file_name)
            data = read_bytes(p)
            want = c.size * n * numeric.nbytes
            if len(data) < want:
                raise FormatError(f"consts file has {len(data)} bytes but the model declares {c.size} vectors "
                                  f"({want} bytes)", file=str(p))
            out.append((c.base, numeric.from_bytes(data[:want]).reshape(c.size, n)))
        return out


def _obj(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise FormatError(f"{where}: missing key {key!r}")
    return d[key]


def _int(v: Any, what: str, where: str, minimum: int = 0) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise FormatError(f"{where}: {what} must be an integer >= {minimum}, got {v!r}")
    return v


def _entries(lst: Any, where: str, consts: bool = False) -> list[Entry]:
    if not isinstance(lst, list):
        raise FormatError(f"{where}: expected a list")
    out = []
    for i, e in enumerate(lst):
        w = f"{where}[{i}]"
        key = "file_name" if consts else "name"
        nm = _obj(e, key, w)
        if not isinstance(nm, str):
            raise FormatError(f"{w}: {key} must be a string")
        base = _int(_obj(e, "base", w), "base", w)
        size = _int(_obj(e, "size", w), "size", w)
        out.append(Entry(nm, base, size, nm if consts else None))
    return out


def parse_tmodel(text: str, *, path: str | Path | None = None) -> TensilModel:
    """Parse ``.tmodel`` JSON."""
    file = None if path is None else str(path)
    d = jsonsafe.loads(text, file)
    if not isinstance(d, dict):
        raise FormatError("a .tmodel must be a JSON object", file=file)
    unknown = [k for k in d if k not in MODEL_KEYS and not k.startswith("x_nnisa_")]
    if unknown:
        raise FormatError(f"unknown key(s) {', '.join(unknown)}", file=file)
    where = file or "model"
    prog = _obj(d, "prog", where)
    arch = TensilArch.from_dict(_obj(d, "arch", where), name=str(d.get("name", "")), where=f"{where}: arch")
    name = _obj(d, "name", where)
    pf = _obj(prog, "file_name", f"{where}: prog")
    if not isinstance(name, str) or not isinstance(pf, str):
        raise FormatError(f"{where}: name and prog.file_name must be strings")
    lcl = d.get("load_consts_to_local", False)
    if not isinstance(lcl, bool):
        raise FormatError(f"{where}: load_consts_to_local must be true or false")
    p = None if path is None else Path(path)
    return TensilModel(name, pf, _int(_obj(prog, "size", f"{where}: prog"), "prog.size", where),
                       _entries(_obj(d, "consts", where), f"{where}: consts", True),
                       _entries(_obj(d, "inputs", where), f"{where}: inputs"),
                       _entries(_obj(d, "outputs", where), f"{where}: outputs"), arch, lcl,
                       {k: v for k, v in d.items() if k.startswith("x_nnisa_")},
                       None if p is None else p.parent, p)


def read_tmodel(path: str | Path) -> TensilModel:
    return parse_tmodel(read_text(path), path=path)


def write_tmodel(model: TensilModel, path: str | Path) -> None:
    write_atomic(path, model.to_json())


# ---------------------------------------------------------------------------- tensors
def read_tdata(path: str | Path, arch: TensilArch) -> np.ndarray:
    """A ``.tdata`` file → raw vectors ``(count, N)``."""
    num = Numeric.of(arch)
    data = read_bytes(path)
    per = arch.array_size * num.nbytes
    if len(data) % per:
        raise FormatError(f"{len(data)} bytes is not a whole number of {per}-byte vectors", file=str(path))
    return num.from_bytes(data).reshape(-1, arch.array_size)


def write_tdata(path: str | Path, raw: np.ndarray, arch: TensilArch) -> None:
    write_atomic(path, Numeric.of(arch).to_bytes(np.asarray(raw).reshape(-1)))


def read_csv_vectors(path: str | Path, n: int) -> np.ndarray:
    """A Tensil CSV (one vector of exactly ``n`` values per line) → float32 ``(lines, n)``.

    Values are parsed straight to float32 (Tensil's ``toFloat``); LF or CRLF."""
    text = read_text(path)
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split(",")
        if len(parts) != n:
            raise FormatError(f"expected {n} comma-separated values, got {len(parts)}", file=str(path), line=lineno)
        try:
            rows.append([np.float32(p.strip()) for p in parts])
        except ValueError:
            raise FormatError("not a number", file=str(path), line=lineno) from None
    return np.array(rows, dtype=np.float32).reshape(-1, n)


def format_csv_vectors(values: np.ndarray) -> str:
    """Float vectors → CSV text (shortest round-trip decimals, CRLF as Tensil writes)."""
    return "".join(",".join(repr(float(v)) for v in row) + "\r\n" for row in np.asarray(values))
