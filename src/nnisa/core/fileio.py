"""File helpers: atomic writes, compressed reads, array files (npy/npz/csv)."""

from __future__ import annotations

import gzip
import io
import os
import tempfile
import zlib
from pathlib import Path

import numpy as np

from .errors import FormatError, NnisaError, OutputError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike, mode: int = 0o666) -> None:
    """Give a freshly created file/folder the permissions a plain ``open``/``mkdir`` would."""
    os.chmod(path, mode & ~_umask())


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` to ``path`` via a temporary file and rename, so a failure never
    leaves a half-written file behind.

    The file gets the mode of the file it replaces, or the umask's default for a new file.
    Any OS error becomes an :class:`~nnisa.core.errors.OutputError` naming the path.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if path.is_dir():
        raise OutputError("is a folder, expected a file name", file=str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            mode = path.stat().st_mode & 0o7777
            os.chmod(tmp, mode)
        except FileNotFoundError:
            apply_umask(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
        raise


def read_bytes(path: str | os.PathLike, error: type[NnisaError] = FormatError) -> bytes:
    """Read a whole file; a missing/unreadable file raises ``error`` naming it (one line)."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise error("file not found", file=str(path)) from None
    except IsADirectoryError:
        raise error("is a directory, expected a file", file=str(path)) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror}", file=str(path)) from None


def decode_text(data: bytes, file: str | None = None) -> str:
    """UTF-8 text of ``data``; invalid bytes raise :class:`FormatError` with their offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=file) from None


def read_maybe_compressed(path: str | os.PathLike) -> bytes:
    """Read a file, transparently gunzipping (gzip or zlib streams, detected by magic)."""
    path = Path(path)
    raw = read_bytes(path)
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise FormatError(f"corrupt gzip data: {exc}", file=str(path)) from None
    if raw[:1] == b"\x78" and len(raw) > 2 and (raw[0] * 256 + raw[1]) % 31 == 0:
        try:
            return zlib.decompress(raw)
        except zlib.error:
            pass  # not zlib after all: treat as plain
    return raw


def save_arrays(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    """Write arrays atomically as ``.npz`` (all), ``.npy`` (exactly one) or ``.csv`` (one, ≤ 2-D)."""
    path = Path(path)
    buf = io.BytesIO()
    suffix = path.suffix.lower()
    if suffix == ".npz":
        np.savez(buf, **arrays)
    elif suffix == ".npy":
        if len(arrays) != 1:
            raise FormatError(f"{len(arrays)} arrays cannot be stored in one .npy file; use .npz", file=str(path))
        np.save(buf, next(iter(arrays.values())))
    elif suffix == ".csv":
        if len(arrays) != 1:
            raise FormatError(f"{len(arrays)} arrays cannot be stored in one .csv file; use .npz", file=str(path))
        a = np.asarray(next(iter(arrays.values())))
        a2 = a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(-1, 1)
        fmt = "%d" if np.issubdtype(a.dtype, np.integer) else "%.9g"
        np.savetxt(buf, a2, delimiter=",", fmt=fmt)
    else:
        raise FormatError("unsupported array file type (use .npz, .npy or .csv)", file=str(path))
    write_atomic(path, buf.getvalue())


def load_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read ``.npz`` (all arrays), ``.npy`` (key = file stem) or ``.csv`` (key = file stem)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.exists():
        raise FormatError("file not found", file=str(path))
    try:
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        if suffix == ".npy":
            return {path.stem: np.load(path, allow_pickle=False)}
        if suffix == ".csv":
            return {path.stem: np.loadtxt(path, delimiter=",", ndmin=2)}
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(f"cannot read arrays: {exc}", file=str(path)) from None
    raise FormatError("unsupported array file type (use .npz, .npy or .csv)", file=str(path))
