"""File helpers: atomic writes, compressed reads, array files (npy/npz/csv)."""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import zlib
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from .errors import FormatError, NnisaError, OutputError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike, mode: int = 0o666) -> None:
    """Give a freshly created file/folder the permissions a plain ``open``/``mkdir`` would."""
    os.chmod(path, mode & ~_umask())


# ---------------------------------------------------------------------------- temporary names
#: characters of an output's name kept in its temporary siblings' names (NAME_MAX is 255)
_TEMP_NAME_CHARS = 100


@lru_cache(maxsize=1)
def _host() -> str:
    """This host's name as it appears in temporary names (socket and tempfile load only when a
    file is written: reading a program needs neither)."""
    import socket
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def temp_prefix(name: str, hidden: bool = True) -> str:
    """Start of the name of a temporary sibling of ``name`` made by this process:
    ``.NAME.PID@HOST.`` (then a random part and ``.tmp``; no leading dot unless ``hidden``), so a
    later run can tell the temporaries of a writer that was killed (SIGKILL, power loss) from those
    of one still running."""
    return f"{'.' if hidden else ''}{name[:_TEMP_NAME_CHARS]}.{os.getpid()}@{_host()}."


_TEMP_RE = re.compile(r"\.(\d+)@([A-Za-z0-9-]+)\.[^/.]*\.tmp$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists (another user's)
        return True
    return True


def remove_stale_temps(folder: str | os.PathLike, name: str, hidden: bool = True) -> int:
    """Remove the temporary siblings of ``folder/name`` (files or folders, see :func:`temp_prefix`)
    left by writers of this host that no longer run; returns how many were removed.  Temporaries
    of live processes and of other hosts (a shared file system) are left alone.  A ``name`` ending
    in ``*`` matches every name with that start, hidden or not (``nnisa-*``: all of nnisa's
    temporary folders and the temporary siblings made beside them)."""
    import shutil
    wild = name.endswith("*")
    head = name.rstrip("*") if wild else f"{'.' if hidden else ''}{name[:_TEMP_NAME_CHARS]}"
    removed = 0
    try:
        entries = [e for e in os.scandir(folder) if (e.name.lstrip(".").startswith(head) if wild
                                                     else e.name.startswith(head + ".")) and e.name.endswith(".tmp")]
    except OSError:
        return 0
    for e in entries:
        m = _TEMP_RE.search(e.name) if wild else _TEMP_RE.fullmatch(e.name[len(head):])
        if not m or m.group(2) != _host() or int(m.group(1)) == os.getpid() or _pid_alive(int(m.group(1))):
            continue
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed += 1
        except OSError:
            pass  # another run cleaned it meanwhile, or it is not ours to remove
    return removed


def make_temp(parent: str | os.PathLike, name: str, *, folder: bool = False, hidden: bool = True) -> str:
    """A new temporary file (its descriptor is closed) or folder beside ``parent/name``, after
    removing the stale ones of dead writers (:func:`remove_stale_temps`); returns its path."""
    import tempfile
    remove_stale_temps(parent, name, hidden)
    if folder:
        return tempfile.mkdtemp(prefix=temp_prefix(name, hidden), suffix=".tmp", dir=parent)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(name, hidden), suffix=".tmp", dir=parent)
    os.close(fd)
    return tmp


@contextmanager
def private_temp_folder(name: str) -> Iterator[Path]:
    """A temporary folder ``$TMPDIR/NAME.PID@HOST.XXXX.tmp``, removed when the block ends (also on
    Ctrl-C); folders of the same name left by processes of this host that were killed (SIGKILL, a
    crashed sweep worker) are removed when the next one is made."""
    import shutil
    import tempfile
    parent = tempfile.gettempdir()
    remove_stale_temps(parent, name + "*")  # with what killed owners made beside them
    path = Path(make_temp(parent, name, folder=True, hidden=False))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------- special files
def special_kind(path: str | os.PathLike) -> str | None:
    """What an existing path that is neither a regular file nor a folder is ("character device",
    "FIFO", ...), following symlinks; ``None`` for regular files, folders and missing paths."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, kind in ((stat.S_ISCHR, "character device"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return kind
    return "special file"


def _through_proc(path: Path) -> bool:
    """``path`` is a symlink chain leading into ``/proc`` (``/dev/stdout`` → ``/proc/self/fd/1``): a
    descriptor of this process, whatever file it is, to be written in place, never renamed over
    (that would replace the ``/dev/stdout`` link itself)."""
    p = str(path)
    for _ in range(40):
        if not os.path.islink(p):
            return False
        p = os.path.join(os.path.dirname(p), os.readlink(p))
        if os.path.abspath(p).startswith("/proc/"):
            return True
    return False


def _write_in_place(path: Path, kind: str, data: bytes) -> None:
    """Write into an existing character device or FIFO (``-o /dev/null``, ``-o /dev/stdout``, a
    named pipe): the node itself is kept, never replaced by a regular file.  Block devices and
    sockets are refused: an output file name is not a way to overwrite a disk."""
    if kind not in ("character device", "FIFO", "file"):
        raise OutputError(f"is a {kind}; refusing to write an output there", file=str(path))
    flags = os.O_WRONLY | os.O_NOCTTY | (os.O_NONBLOCK if kind == "FIFO" else 0) | (os.O_TRUNC if kind == "file" else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        why = "no process is reading the FIFO" if exc.errno == errno.ENXIO else (exc.strerror or str(exc))
        raise OutputError(f"cannot write into the {kind}: {why}", file=str(path)) from None
    try:
        if kind == "FIFO":
            import fcntl
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise OutputError(f"cannot write into the {kind}: the reader went away", file=str(path)) from None
        raise OutputError(f"cannot write into the {kind}: {exc.strerror or exc}", file=str(path)) from None
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` to ``path`` via a temporary file and rename, so a failure never
    leaves a half-written file behind.

    The file gets the mode of the file it replaces, or the umask's default for a new file.  An
    existing character device or FIFO (``/dev/null``, a terminal, a named pipe) and anything
    reached through ``/proc`` (``/dev/stdout`` → ``/proc/self/fd/1``) are written in place, never
    renamed over; block devices and sockets are refused.  Temporaries that killed
    writers left beside ``path`` are removed first.  Any OS error becomes an
    :class:`~nnisa.core.errors.OutputError` naming the path.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if path.is_dir():
        raise OutputError("is a folder, expected a file name", file=str(path))
    kind = special_kind(path)
    if kind is not None or _through_proc(path):
        _write_in_place(path, kind or "file", data)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = make_temp(path.parent, path.name)
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
    try:
        with open(tmp, "wb") as fh:
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


def read_bytes(path: str | os.PathLike, error: type[NnisaError] = FormatError, *, max_size: int | None = None,
               what: str = "file of this type", head: Callable[[bytes, int], None] | None = None,
               head_size: int = 4096) -> bytes:
    """Read a whole regular file; a missing/unreadable/special file raises ``error`` naming it.

    ``max_size``: the largest such file can be (a format whose header or counts bound it); a bigger
    file is refused from its size alone, before a byte is read.  ``head(first_bytes, file_size)``
    checks the first ``head_size`` bytes (magic, version, declared counts) and raises before the
    rest of a file that is not of the format is read."""
    p = Path(path)
    try:
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            raise error("is a directory, expected a file", file=str(path))
        if not stat.S_ISREG(st.st_mode):
            raise error("not a regular file (devices, pipes and sockets are not read)", file=str(path))
        if max_size is not None and st.st_size > max_size:
            raise error(f"{st.st_size:,} bytes; a {what} has at most {max_size:,}", file=str(path))
        if head is not None:
            with open(p, "rb") as fh:
                head(fh.read(head_size), st.st_size)
        return p.read_bytes()
    except FileNotFoundError:
        raise error("file not found", file=str(path)) from None
    except IsADirectoryError:
        raise error("is a directory, expected a file", file=str(path)) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


def check_regular_file(path: str | os.PathLike, error: type[NnisaError] = FormatError) -> Path:
    """``path`` if it is an existing regular file, else ``error`` saying what it is."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise error("file not found", file=str(path)) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if stat.S_ISDIR(st.st_mode):
        raise error("is a directory, expected a file", file=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise error("not a regular file (devices, pipes and sockets are not read)", file=str(path))
    return p


# ---------------------------------------------------------------------------- decompression
#: decompressed data may be at most this many times its compressed size (real pimsim-nn JSON: ~33×)
MAX_INFLATE_RATIO = 64
#: ... or this many bytes, whichever is larger
MIN_INFLATE_LIMIT = 256 << 20


def inflate_limit(n_compressed: int) -> int:
    """Largest accepted decompressed size for ``n_compressed`` input bytes."""
    return max(MIN_INFLATE_LIMIT, MAX_INFLATE_RATIO * n_compressed)


def is_compressed(raw: bytes) -> bool:
    """Starts like a gzip or zlib stream."""
    return raw[:2] == b"\x1f\x8b" or (len(raw) > 2 and raw[0] == 0x78 and (raw[0] * 256 + raw[1]) % 31 == 0)


try:  # ISA-L's inflate (the optional ``fast`` extra): the same streams and API, about 3x faster than zlib
    from isal import isal_zlib as _inflater
    _INFLATE_ERRORS: tuple[type[BaseException], ...] = (zlib.error, _inflater.error)
except ImportError:  # pragma: no cover - depends on the installed extras
    _inflater = zlib
    _INFLATE_ERRORS = (zlib.error,)


def inflate_chunks(raw: bytes, file: str | None = None, chunk: int = 1 << 17) -> Iterator[bytes]:
    """Decompressed pieces of a gzip (any number of members) or zlib stream, never more than
    :func:`inflate_limit` bytes in all (a decompression bomb is a FormatError, not a MemoryError).
    Pieces are what ``chunk`` compressed bytes inflate to (at most the remaining limit)."""
    limit = inflate_limit(len(raw))
    view = memoryview(raw)
    total, pos = 0, 0
    is_gzip = raw[:2] == b"\x1f\x8b"
    while pos < len(view):
        d = _inflater.decompressobj(47 if is_gzip else 15)
        while not d.eof:
            if pos >= len(view) and not d.unconsumed_tail:
                raise FormatError("truncated compressed data", file=file)
            data = d.unconsumed_tail or view[pos:pos + chunk]
            if not d.unconsumed_tail:
                pos += len(data)
            try:
                out = d.decompress(data, max(1, limit - total + 1))
            except _INFLATE_ERRORS as exc:
                raise FormatError(f"corrupt {'gzip' if is_gzip else 'zlib'} data: {exc}", file=file) from None
            total += len(out)
            if total > limit:
                raise FormatError(f"decompresses to more than {limit >> 20} MB ({MAX_INFLATE_RATIO}x its size); "
                                  "refusing it as a likely decompression bomb", file=file)
            if out:
                yield out
        rest = d.unused_data
        pos -= len(rest)
        if not is_gzip or not rest.strip(b"\x00"):
            break  # zlib: one stream; gzip: trailing zero padding is allowed


def inflate(raw: bytes, file: str | None = None) -> bytes:
    """All of :func:`inflate_chunks` as one ``bytes``."""
    return b"".join(inflate_chunks(raw, file))


def decode_text(data: bytes, file: str | None = None) -> str:
    """UTF-8 text of ``data``; invalid bytes and NUL bytes (binary data: no text format nnisa reads
    has them) raise :class:`FormatError` with their offset, before a big string is made."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise FormatError(f"not text: a NUL byte at byte {nul:,} (binary data)", file=file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=file) from None
    return text[1:] if text.startswith("\ufeff") else text  # a byte-order mark is not content


def check_text_head(head: bytes, file: str | None = None) -> None:
    """The start of a text file: no NUL byte, valid UTF-8 (a character cut at the end is fine);
    raises :class:`FormatError` before the rest of a binary file is read."""
    nul = head.find(b"\x00")
    if nul >= 0:
        raise FormatError(f"not text: a NUL byte at byte {nul:,} (binary data)", file=file)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=file) from None


def read_text(path: str | os.PathLike, error: type[NnisaError] = FormatError, *, max_size: int | None = None,
              what: str = "text file") -> str:
    """A UTF-8 text file (:func:`decode_text`); its first bytes are checked (:func:`check_text_head`)
    before a big file is read whole, so a binary file given for text costs nothing.  A file that
    cannot be read raises ``error``; one that is not text, :class:`FormatError`."""
    data = read_bytes(path, error, max_size=max_size, what=what, head=lambda h, size: check_text_head(h, str(path)))
    return decode_text(data, str(path))


def read_maybe_compressed(path: str | os.PathLike, head: Callable[[bytes, int], None] | None = None) -> bytes:
    """Read a file, transparently inflating gzip or zlib streams (detected by magic, bounded by
    :func:`inflate_limit`); ``head`` checks the start of an uncompressed file (see :func:`read_bytes`)."""
    raw = read_bytes(path, head=None if head is None else
                     lambda h, size: None if is_compressed(h) else head(h, size))
    if raw[:2] == b"\x1f\x8b":
        return inflate(raw, str(path))
    if is_compressed(raw):
        try:
            return inflate(raw, str(path))
        except FormatError:
            return raw  # looked like zlib but is not: treat as plain
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


def _npy_header(fp, available: int, name: str, file: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from an ``.npy`` header, checked against the bytes that follow it."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(fp)
        else:
            shape, _, dtype = fmt.read_array_header_2_0(fp) if version == (2, 0) else \
                fmt._read_array_header(fp, version)  # noqa: SLF001 (3.0: utf-8 header)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise FormatError(f"{name}: not a valid .npy array ({str(exc)[:120]})", file=file) from None
    if dtype.hasobject:
        raise FormatError(f"{name}: object arrays are not read (they would need pickle)", file=file)
    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if need > available:
        raise FormatError(f"{name}: header declares {list(shape)} {dtype} ({need:,} bytes) but only "
                          f"{available:,} bytes follow", file=file)
    return tuple(shape), dtype


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, refusing before any allocation: object (pickle) arrays,
    headers that promise more data than the archive holds, and archives that would inflate past
    :func:`inflate_limit`."""
    import zipfile
    p = check_regular_file(path)
    file = str(p)
    try:
        with zipfile.ZipFile(p) as zf:
            infos = [i for i in zf.infolist() if not i.is_dir()]
            total = sum(i.file_size for i in infos)
            if total > inflate_limit(p.stat().st_size):
                raise FormatError(f"archive inflates to {total:,} bytes ({MAX_INFLATE_RATIO}x limit); refusing it as "
                                  "a likely decompression bomb", file=file)
            out: dict[str, np.ndarray] = {}
            for info in infos:
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                with zf.open(info) as fp:
                    _npy_header(fp, info.file_size, key, file)
                with zf.open(info) as fp:
                    out[key] = np.lib.format.read_array(fp, allow_pickle=False)
            return out
    except zipfile.BadZipFile as exc:
        raise FormatError(f"not a valid .npz archive ({exc})", file=file) from None
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(f"cannot read arrays: {str(exc)[:200]}", file=file) from None


def load_npy(path: str | os.PathLike) -> np.ndarray:
    """One ``.npy`` array, with the header checked against the file size first."""
    p = check_regular_file(path)
    try:
        with open(p, "rb") as fp:
            _npy_header(fp, p.stat().st_size, "array", str(p))
            fp.seek(0)
            return np.lib.format.read_array(fp, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(f"cannot read arrays: {str(exc)[:200]}", file=str(p)) from None


def load_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read ``.npz`` (all arrays), ``.npy`` (key = file stem) or ``.csv`` (key = file stem).

    Sizes are checked before anything is allocated (:func:`load_npz`, :func:`load_npy`); arrays
    must hold numbers (bool, integer or float)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        arrays = load_npz(path)
    elif suffix == ".npy":
        arrays = {path.stem: load_npy(path)}
    elif suffix == ".csv":
        check_regular_file(path)
        try:
            arrays = {path.stem: np.loadtxt(path, delimiter=",", ndmin=2)}
        except (ValueError, OSError, EOFError) as exc:
            raise FormatError(f"cannot read arrays: {str(exc)[:200]}", file=str(path)) from None
    else:
        raise FormatError("unsupported array file type (use .npz, .npy or .csv)", file=str(path))
    for k, a in arrays.items():
        if a.dtype.kind not in "biuf":
            raise FormatError(f"array {k[:60]!r} holds {a.dtype} values; expected numbers", file=str(path))
    return arrays


def shared_dir() -> Path:
    """The reference-artifact folder: ``$NNISA_SHARED``, else ``../shared`` next to the checkout
    (found from this installed source tree), else ``../shared`` of the working directory."""
    if os.environ.get("NNISA_SHARED"):
        return Path(os.environ["NNISA_SHARED"])
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent.parent / "shared"
        if (parent / "pyproject.toml").exists() and cand.is_dir():
            return cand
    return Path.cwd().parent / "shared"
