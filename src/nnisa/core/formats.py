"""File formats as a table: extension → (reader, writer, description), one per target.

Every target declares its files once, in ``formats/files.py``, as a :class:`FormatTable`.  From it
come ``Target.formats`` (what ``nnisa targets`` lists), ``Target.read``/``Target.write`` (the
dispatch by extension behind every CLI command), and the one error for a file type a target does
not know (or only writes, or only reads)::

    FORMATS = FormatTable("cherry", [
        FileFormat((".cisa", ".bin"), "Cherry program image", read=read_image, write=write_image),
        FileFormat((".casm", ".s", ".txt"), "Cherry assembly text", read=read_text, write=write_text),
    ], bundle=read_bundle)

A reader is ``read(path: Path, **options) -> program``; a writer either renders the file's
content, ``render(program, path: Path, **options) -> bytes | str`` (the table writes it
atomically), or writes it itself, ``write(program, path: Path, **options) -> list of warnings or
None`` (several files, warnings).  All receive every option the caller passed (the CLI's
``--config`` as ``config=`` and the declared ``-O`` values) and ignore those they do not use.
Extensions match the end of the file name, case-insensitively, longest first (``.dais.txt``
before ``.txt``, ``.json.gz`` before ``.gz``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import FormatError
from .fileio import write_atomic

#: ``read(path, **options) -> program``
Reader = Callable[..., Any]
#: ``write(program, path, **options) -> list[str] | None`` (warnings)
Writer = Callable[..., Any]
#: ``render(program, path, **options) -> bytes | str`` (the file's content)
Renderer = Callable[..., Any]

__all__ = ["FileFormat", "FormatTable", "MANIFEST", "Reader", "Renderer", "Writer", "is_bundle_dir"]

#: the file that makes a folder a compiled bundle (:mod:`nnisa.core.bundle`)
MANIFEST = "manifest.json"


def is_bundle_dir(path: str | os.PathLike) -> bool:
    """A directory that holds a ``manifest.json`` (told here, without :mod:`nnisa.core.bundle`'s
    pydantic models, so that reading a program file never imports them)."""
    p = Path(path)
    return p.is_dir() and (p / MANIFEST).is_file()


@dataclass(frozen=True)
class FileFormat:
    """One kind of file a target reads and/or writes.

    Parameters
    ----------
    extensions
        File name endings (with the dot), e.g. ``(".json", ".json.gz")``.
    description
        One line: what the file holds (``nnisa targets`` shows it).
    read
        The reader; ``None`` when the target only writes this format.
    render, write
        The writer: the file's content (written atomically by the table), or a function that
        writes the file itself; both ``None`` when the target only reads this format.
    """

    extensions: tuple[str, ...]
    description: str
    read: Reader | None = None
    render: Renderer | None = None
    write: Writer | None = None

    def __post_init__(self) -> None:
        if not self.extensions or any(not e.startswith(".") or e != e.lower() for e in self.extensions):
            raise ValueError(f"file format {self.description!r}: extensions must be lower-case and start "
                             f"with a dot, got {self.extensions!r}")
        if self.read is None and self.render is None and self.write is None:
            raise ValueError(f"file format {self.description!r} has neither a reader nor a writer")
        if self.render is not None and self.write is not None:
            raise ValueError(f"file format {self.description!r}: give render or write, not both")

    @property
    def writes(self) -> bool:
        return self.render is not None or self.write is not None


class FormatTable:
    """The file formats of one target and the dispatch by extension.

    Parameters
    ----------
    target
        Target name (messages).
    formats
        The :class:`FileFormat` rows; an extension may appear in one row only.
    bundle
        ``read(path, **options)`` of a compiled bundle folder (``manifest.json`` inside), if the
        target reads its bundles.
    folder
        ``read(path, **options)`` of any other folder the target reads (e.g. a PIMB folder).
    fallback
        ``read(path, **options)`` of a file whose name matches no extension (content sniffing);
        without one such a file is the unknown-file-type error.
    """

    def __init__(self, target: str, formats: Iterable[FileFormat], *, bundle: Reader | None = None,
                 folder: Reader | None = None, fallback: Reader | None = None):
        self.target = target
        self.formats = tuple(formats)
        self.bundle = bundle
        self.folder = folder
        self.fallback = fallback
        self._by_ext: dict[str, FileFormat] = {}
        for f in self.formats:
            for ext in f.extensions:
                if ext in self._by_ext:
                    raise ValueError(f"target {target}: extension {ext} appears in two file formats")
                self._by_ext[ext] = f
        # longest first, so that ".dais.txt" wins over ".txt"
        self._order = sorted(self._by_ext, key=len, reverse=True)

    # --- what the table declares -------------------------------------------------------------
    def descriptions(self) -> dict[str, str]:
        """Extension → description (+ `` (read only)`` / `` (write only)``), in table order."""
        out = {}
        for f in self.formats:
            tag = "" if f.read and f.writes else (" (read only)" if f.read else " (write only)")
            for ext in f.extensions:
                out[ext] = f.description + tag
        return out

    @property
    def readable(self) -> tuple[str, ...]:
        return tuple(e for e, f in self._by_ext.items() if f.read is not None)

    @property
    def writable(self) -> tuple[str, ...]:
        return tuple(e for e, f in self._by_ext.items() if f.writes)

    def lookup(self, path: str | os.PathLike) -> FileFormat | None:
        """The format whose extension ends ``path``'s name (``None`` if none does)."""
        name = Path(path).name.lower()
        return next((self._by_ext[e] for e in self._order if name.endswith(e)), None)

    def _unknown(self, path: str | os.PathLike, known: tuple[str, ...], what: str) -> FormatError:
        suffix = "".join(Path(path).suffixes[-2:]) or "(none)"
        return FormatError(f"unknown {self.target} file type {suffix!r} for {what} (known: {', '.join(known)})",
                           file=str(path))

    # --- the dispatch ----------------------------------------------------------------------------
    def read(self, path: str | os.PathLike, **options: Any) -> Any:
        """Read ``path`` with the reader its extension names (bundle and other folders first)."""
        p = Path(path)
        if self.bundle is not None and is_bundle_dir(p):
            return self.bundle(p, **options)
        if self.folder is not None and p.is_dir():
            return self.folder(p, **options)
        fmt = self.lookup(p)
        if fmt is None:
            if self.fallback is not None:
                return self.fallback(p, **options)
            if p.is_dir():
                raise FormatError(f"is a directory; {self.target} reads "
                                  + ("compiled bundle folders and " if self.bundle else "") + "files", file=str(p))
            raise self._unknown(p, self.readable, "reading")
        if fmt.read is None:
            raise FormatError(f"{fmt.description} files are written by nnisa, not read", file=str(p))
        return fmt.read(p, **options)

    def _writer(self, path: Path) -> FileFormat:
        fmt = self.lookup(path)
        if fmt is None:
            raise self._unknown(path, self.writable, "writing")
        if not fmt.writes:
            raise FormatError(f"cannot write {fmt.description} files (read only)", file=str(path))
        return fmt

    def write(self, program: Any, path: str | os.PathLike, **options: Any) -> list[str]:
        """Write ``program`` in the format ``path``'s extension names (atomically); returns warnings."""
        p = Path(path)
        fmt = self._writer(p)
        if fmt.render is not None:
            write_atomic(p, fmt.render(program, p, **options))
            return []
        return list(fmt.write(program, p, **options) or [])

    def render(self, program: Any, path: str | os.PathLike, **options: Any) -> bytes | str:
        """The content ``write`` would give ``path`` (formats that render one file)."""
        p = Path(path)
        fmt = self._writer(p)
        if fmt.render is None:
            raise FormatError(f"{fmt.description} files are written as several files", file=str(p))
        return fmt.render(program, p, **options)
