"""Read and write PIMSAB programs by file extension, checked against a configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.errors import DecodeError, FormatError
from ....core.fileio import check_text_head, decode_text, read_bytes
from ....core.formats import FileFormat, FormatTable
from ..config import PimsabConfig, load_config, preset, preset_for_hash
from ..program import PimsabProgram, ZERO_SHA, check_program
from .image import MAGIC, check_head, decode_image, encode_image
from .text import assemble_text, disassemble

IMAGE_EXT = (".psab", ".bin")
TEXT_EXT = (".s", ".asm", ".pimsab", ".txt")

__all__ = ["FORMATS", "check", "decode", "program_config", "read_program", "write_program"]


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


def decode(data: bytes, *, lenient: bool = False, file: str | None = None, config: Any = None) -> PimsabProgram:
    """A program image, checked against ``config`` (default: the preset it names, else base)."""
    prog = decode_image(data, lenient=lenient, file=file)
    return check(prog, program_config(prog, config), file)


def _read_any(path: Path, *, config: Any = None, lenient: bool = False, **_: Any) -> PimsabProgram:
    """A program image (by extension or by its magic number) or assembly text."""
    image = path.name.lower().endswith(IMAGE_EXT)

    def head(h: bytes, size: int) -> None:  # the start is checked before a big file is read whole
        if image or h[:4] == MAGIC:
            check_head(h, size, str(path))
        else:
            try:
                check_text_head(h)
            except FormatError:
                raise DecodeError("neither a PIMSAB program image nor assembly text", file=str(path)) from None
    data = read_bytes(path, head=head)
    if image or data[:4] == MAGIC:
        return decode(data, lenient=lenient, file=str(path), config=config)
    try:
        text = decode_text(data, str(path))
    except FormatError:
        raise DecodeError("neither a PIMSAB program image nor assembly text", file=str(path)) from None
    return assemble_text(text, file=str(path), config=config)


#: PIMSAB files: images and assembly by extension; any other name is told apart by its content
FORMATS = FormatTable("PIMSAB", [
    FileFormat(IMAGE_EXT, "PIMSAB program image", _read_any, lambda prog, p, **_: encode_image(prog)),
    FileFormat(TEXT_EXT, "PIMSAB assembly", _read_any, lambda prog, p, **_: disassemble(prog)),
], fallback=_read_any)


def read_program(path: str | Path, config: Any = None, **options: Any) -> PimsabProgram:
    """A program image or an assembly file (by extension, else by content), checked against
    ``config`` (default: the preset the program names, else the base configuration)."""
    return FORMATS.read(path, config=config, **options)


def write_program(prog: PimsabProgram, path: str | Path, config: Any = None, **options: Any) -> None:
    """Write an image (``.psab``/``.bin``) or canonical assembly (``.s``/``.asm``/...), atomically."""
    FORMATS.write(prog, path, config=config, **options)
