"""PIM files: the target's format table and its ``read_program``/``write_program`` entry points.

Program files by extension (:mod:`.program_files`: pimsim-nn JSON, NNPI binary, assembly text),
compiled bundle folders (:mod:`.bundle`) and HEAPLab PIMB folders (import only).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....core.errors import FormatError
from ....core.formats import FormatTable
from .program_files import PROGRAM_FILES, encode

if TYPE_CHECKING:
    from ..program import PimProgram
    from .bundle import Bundle

__all__ = ["FORMATS", "encode", "program_of", "read_program", "write_program"]


def _read_bundle(path: Path, **_: Any) -> Bundle:
    from .bundle import read_bundle  # pydantic manifests: imported for a bundle folder only
    return read_bundle(path)


def _read_pimb_dir(path: Path, **_: Any) -> PimProgram:
    from .nnpi import read_pimb_dir
    return read_pimb_dir(path)


FORMATS = FormatTable("PIM", PROGRAM_FILES.formats, bundle=_read_bundle, folder=_read_pimb_dir)


def read_program(path: str | Path, **options: Any) -> Any:
    """A program file (by extension), a PIMB folder (a :class:`PimProgram`), or a compiled bundle
    folder (a :class:`~nnisa.targets.pim.formats.bundle.Bundle`).  Options: ``legacy_groups``,
    ``lenient``."""
    return FORMATS.read(path, **options)


def write_program(program: Any, path: str | Path, **options: Any) -> list[str]:
    """Write by extension, atomically; returns warnings (e.g. nops dropped from JSON).  Options:
    ``keep_nop`` (JSON), ``word_bits``/``extended`` (NNPI)."""
    return FORMATS.write(program, path, **options)


def program_of(read: PimProgram | Bundle) -> PimProgram:
    """The program of what :func:`read_program` returned (a bundle's program)."""
    from ..program import PimProgram
    if isinstance(read, PimProgram):
        return read
    from .bundle import Bundle
    if isinstance(read, Bundle):
        if read.program is None:
            raise FormatError("the bundle has no program", file=str(read.path) if read.path else None)
        return read.program
    return read
