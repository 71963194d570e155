"""Read and write PIMSAB programs by file extension, checked against a configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.errors import DecodeError, FormatError, UnsupportedError
from ....core.fileio import decode_text, read_bytes, write_atomic
from ..config import PimsabConfig, load_config, preset, preset_for_hash
from ..program import PimsabProgram, ZERO_SHA, check_program
from .image import MAGIC, check_head, decode_image, encode_image
from .text import assemble_text, disassemble

IMAGE_EXT = (".psab", ".bin")
TEXT_EXT = (".s", ".asm", ".pimsab", ".txt")
FORMATS = {".psab": "PIMSAB program image", ".bin": "PIMSAB program image", ".s": "PIMSAB assembly",
           ".asm": "PIMSAB assembly", ".pimsab": "PIMSAB assembly", ".txt": "PIMSAB assembly"}


def program_config(prog: PimsabProgram, config: Any = None) -> PimsabConfig:
    """The configuration to check/run ``prog`` with: the given one, else the preset its hash names,
    else the base configuration."""
    if config is not None:
        return load_config(config)
    name = preset_for_hash(prog.config_sha) if prog.config_sha != ZERO_SHA else None
    return preset(name or "base")


def check(prog: PimsabProgram, cfg: PimsabConfig, file: str | None = None) -> PimsabProgram:
    """Raise a one-line error naming the first instruction that does not fit ``cfg``."""
    bad = check_program(prog, cfg)
    if bad is not None:
        i, msg = bad
        where = f"instruction {i} (tile {int(prog.tiles[i])}, {prog.mnemonics()[i]})"
        raise FormatError(msg, file=file, where=where)
    return prog


def read_program(path: str | Path, config: Any = None, *, lenient: bool = False) -> PimsabProgram:
    """A program image or an assembly file (by extension, else by content)."""
    path = Path(path)
    name = path.name.lower()
    data = read_bytes(path, head=lambda h, size: check_head(h, size, str(path)) if name.endswith(IMAGE_EXT) else None)
    if name.endswith(IMAGE_EXT) or data[:4] == MAGIC:
        prog = decode_image(data, lenient=lenient, file=str(path))
        return check(prog, program_config(prog, config), str(path))
    if name.endswith(TEXT_EXT) or not name.endswith(IMAGE_EXT):
        try:
            text = decode_text(data, str(path))
        except FormatError:
            raise DecodeError("neither a PIMSAB program image nor assembly text", file=str(path)) from None
        return assemble_text(text, file=str(path), config=config)
    raise UnsupportedError(f"{path}: unknown PIMSAB file type")


def write_program(prog: PimsabProgram, path: str | Path, config: Any = None) -> None:
    """Write an image (``.psab``/``.bin``) or canonical assembly (``.s``/``.asm``/...), atomically."""
    name = Path(path).name.lower()
    if name.endswith(IMAGE_EXT):
        write_atomic(path, encode_image(prog))
    elif name.endswith(TEXT_EXT):
        write_atomic(path, disassemble(prog))
    else:
        raise UnsupportedError(f"{path}: unknown PIMSAB file extension (use {', '.join(FORMATS)})")
