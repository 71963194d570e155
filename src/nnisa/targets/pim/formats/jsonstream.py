"""One-pass, bounded-memory input for the pimsim-nn JSON tokenizer (spec §6).

The decompressed document never exists whole: a gzip file is inflated piece by piece in a
background thread (ISA-L when installed, zlib otherwise; both release the GIL, so does the
tokenizer), a plain file is read piece by piece, and :func:`scan_pieces` feeds each piece to
the resumable tokenizer :func:`.jsonscan.scan` in a small reusable window.  When the tokenizer
asks for more bytes, only the unfinished unit at the window's end (part of one instruction
object, or a top-level key with the start of its value) is moved to the window's front; the few
bytes kept for later (the ``config`` value, numbers left to Python, ignored top-level keys) are
copied out as they are found.  The IR rows are written in place, with no Python object per
instruction.

Only a clean scan is finished here.  Any other outcome returns ``None`` and the caller rereads
the whole document with the whole-buffer path (:func:`.jsonio.read_json`), which gives the
error with its line and column, or the orjson fallback: the same results, not a second set of
rules.
"""

from __future__ import annotations

import queue
import threading
from typing import BinaryIO, Callable, Iterable, Iterator, NamedTuple

import numpy as np

from ....core.fileio import inflate_chunks, inflate_limit
from ....core.parallel import thread_pool
from . import jsonscan as js

#: plain-file bytes read per piece
FILE_PIECE = 1 << 21


class ScanOutputs:
    """The tokenizer's output tables, grown whenever it reports :data:`~.jsonscan.ST_FULL`."""

    def __init__(self, size_hint: int):
        # zero-filled pages are mapped lazily, so only the rows written cost memory
        self.rows = np.zeros(size_hint // 24 + 1024, dtype=js.ROW_DTYPE)
        self.segs = np.zeros((64, 6), dtype=np.int64)
        self.spans = np.zeros((64, js.SPAN_COLS), dtype=np.int64)
        self.state = np.zeros(js.NSTATE, dtype=np.int64)
        self.info = np.full(10, -1, dtype=np.int64)
        self._tabs = js.tables()

    def scan(self, buf: np.ndarray, n: int, final: bool) -> int:
        """One resumable call of the tokenizer over ``buf[:n]``; never returns ST_FULL."""
        state = self.state
        while True:
            st = js.scan(buf, n, final, state, self.rows.view(np.uint8), self.segs, self.spans, self.info,
                         *self._tabs)
            if st != js.ST_FULL:
                return st
            used = int(state[2])
            if used == len(self.rows):
                grown = np.zeros(2 * len(self.rows), dtype=js.ROW_DTYPE)
                grown[:used] = self.rows[:used]
                self.rows = grown
            if int(state[3]) == len(self.segs):
                self.segs = np.concatenate([self.segs, np.zeros_like(self.segs)])
            if int(state[9]) + js.NSLOTS + 1 > len(self.spans):
                self.spans = np.concatenate([self.spans, np.zeros_like(self.spans)])


class GzipPieces:
    """Inflated pieces of gzip bytes, produced by a background thread through a bounded queue.

    Iterating yields the pieces in order and raises the inflater's error (a FormatError: corrupt,
    truncated or a decompression bomb) where it occurs.  :meth:`close` stops the thread early.
    """

    CHUNK = 1 << 16  # compressed bytes per piece (≈ 2 MB of pimsim-nn JSON)
    DEPTH = 4  # pieces waiting at most: memory stays bounded when the tokenizer is slower
    _END = object()

    def __init__(self, raw: bytes, name: str):
        self._raw, self._name = raw, name
        isize = int.from_bytes(raw[-4:], "little")  # of the last member, mod 2**32: a hint
        self.size_hint = max(4096, min(isize if isize else 4 * len(raw), inflate_limit(len(raw))))
        self._queue: queue.Queue = queue.Queue(maxsize=self.DEPTH)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="nnisa-gunzip", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for piece in inflate_chunks(self._raw, self._name, self.CHUNK):
                if self._stop:
                    return
                self._queue.put(piece)
            self._queue.put(self._END)
        except BaseException as exc:  # FormatError, MemoryError, ...: re-raised by the reader
            self._queue.put(exc)

    def __iter__(self) -> Iterator[bytes]:
        while True:
            item = self._queue.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop inflating (the queue is drained so that the thread is not left blocked)."""
        self._stop = True
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()


def file_pieces(fh: BinaryIO, first: bytes) -> Iterator[bytes]:
    """``first``, then the rest of an open file in :data:`FILE_PIECE` reads."""
    if first:
        yield first
    while piece := fh.read(FILE_PIECE):
        yield piece


class Scanned(NamedTuple):
    """A clean scan: the filled tables, the bytes the spans refer to and the ``config`` value."""

    rows: np.ndarray
    segs: np.ndarray
    spans: np.ndarray
    info: np.ndarray
    kept: bytearray
    config: bytes | None


class _Window:
    """A reusable byte window: the unfinished tail of the last piece, then the next piece."""

    def __init__(self):
        self._buf = np.empty(4 * FILE_PIECE, dtype=np.uint8)
        self.n = 0

    def refill(self, start: int, piece: bytes) -> np.ndarray:
        """Keep ``[start, n)`` without its leading whitespace (every tokenizer phase starts by
        skipping it), append ``piece``; a read-only view (the tokenizer's one signature)."""
        tail = self._buf[start:self.n]
        if len(tail) and tail[0] in _WS:
            solid = np.flatnonzero((tail != 32) & (tail != 10) & (tail != 9) & (tail != 13))
            start += int(solid[0]) if len(solid) else len(tail)
        keep = self.n - start
        need = keep + len(piece)
        if need > len(self._buf):
            grown = np.empty(max(need, 2 * len(self._buf)), dtype=np.uint8)
            grown[:keep] = self._buf[start:self.n]
            self._buf = grown
        elif keep and start:
            self._buf[:keep] = self._buf[start:self.n].copy()
        self._buf[keep:need] = np.frombuffer(piece, dtype=np.uint8)
        self.n = need
        view = self._buf[:need]
        view.flags.writeable = False
        return view


_WS = (32, 10, 9, 13)


def scan_pieces(pieces: Iterable[bytes], size_hint: int, *, tail: bool = False,
                head: Callable[[], bool] = lambda: False) -> Scanned | None:
    """Tokenize a document given as consecutive pieces; ``None`` unless the scan is clean.

    A unit longer than the window (a large ``config`` or ignored value) is not rescanned for
    every piece: after a call without progress the next one waits until the window doubled.

    For a document scanned in two parts (:func:`scan_split`): ``tail``, the pieces start at a
    top-level ``"core<k>"`` key; ``head()`` (asked after the last piece), the pieces end just
    after the comma before such a key, so the scan must stop there waiting for that key.
    """
    out = ScanOutputs(size_hint)
    state, info = out.state, out.info
    if tail:
        state[0] = js.P_KEY
    window = _Window()
    kept = bytearray()
    config: bytes | None = None
    saved = 0  # span rows whose bytes are in ``kept`` already
    start = wait_for = 0
    for final, piece in _with_last(pieces):
        view = window.refill(start, piece)
        start = 0
        if not final and len(view) < wait_for:
            continue
        state[1] = 0  # the tokenizer's position is the unfinished unit, now at the front
        open_end = final and head()
        st = out.scan(view, len(view), final and not open_end)
        if st != (js.ST_OK if final and not open_end else js.ST_MORE):
            return None
        start = int(state[1])
        if open_end and (state[0] != js.P_KEY or not np.isin(view[start:], _WS).all()):
            return None  # the split was not between two top-level members
        wait_for = 2 * len(view) if start == 0 else 0
        # copy out what is needed after this window is reused (positions become kept's)
        if info[3] >= 0:  # a (later, repeated) config value
            config = bytes(view[int(info[3]):int(info[4])])
            info[3] = info[4] = -1
        spans = out.spans
        for i in range(saved, int(state[9])):
            a, b = int(spans[i, 2]), int(spans[i, 3])
            at = len(kept) + 1
            kept += view[a - 1:b + 1].tobytes()  # keys are read with their quotes
            spans[i, 2], spans[i, 3] = at, at + (b - a)
        saved = int(state[9])
    return Scanned(out.rows, out.segs, out.spans[:saved], info, kept, config)


# --------------------------------------------------------------------------- two threads
#: documents at least this large are scanned in two parts by two threads
SPLIT_MIN = 32 << 20
_END = object()


def find_split(data: bytes, start: int = 0) -> int | None:
    """The offset in ``data`` just after the comma before the first ``"core`` key at or after
    ``start`` (only whitespace between them), None if there is none.  A candidate: the head
    scan confirms that it lies between two top-level members."""
    i = data.find(b'"core', start)
    while i >= 0:
        j = i - 1
        while j >= 0 and data[j] in _WS:
            j -= 1
        if j >= 0 and data[j] == 44:
            return j + 1
        i = data.find(b'"core', i + 1)
    return None


def _queued(q: queue.Queue) -> Iterator[bytes]:
    while (item := q.get()) is not _END:
        yield item


def _put(q: queue.Queue, item, reader) -> bool:
    """Put ``item`` on the bounded queue ``q`` unless its reader (a future) has stopped."""
    while not reader.done():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            pass
    return False


def scan_split(pieces: Iterable[bytes], size_hint: int) -> list[Scanned] | None:
    """:func:`scan_pieces` in two threads: the pieces up to a top-level ``"core<k>"`` key past
    the middle go to one tokenizer, the rest to another, each with its own tables (the caller
    combines them; ``None`` unless both scans are clean and the split is confirmed).  A
    document without such a key is scanned whole by the first thread.  The pieces come from one
    stream (a gzip inflater): those not yet scanned wait in memory, at most a quarter of the
    document per tokenizer."""
    mid = size_hint // 2
    depth = max(8, size_hint // (4 * FILE_PIECE))  # pieces waiting per tokenizer (≈ 2 MB each)
    qa: queue.Queue = queue.Queue(depth)
    qb: queue.Queue | None = None
    split = [False]
    pos = 0
    with thread_pool("scan") as pool:
        a = pool.submit(scan_pieces, _queued(qa), mid + FILE_PIECE, head=lambda: split[0])
        b = None
        try:
            for piece in pieces:
                if b is not None:
                    if not _put(qb, piece, b):
                        break  # the tail scan stopped early (not clean): the caller rereads
                    continue
                cut = find_split(piece, max(0, mid - pos)) if pos + len(piece) > mid else None
                if not _put(qa, piece if cut is None else piece[:cut], a):
                    break  # the head scan stopped early
                if cut is None:
                    pos += len(piece)
                    continue
                split[0] = True
                _put(qa, _END, a)
                qb = queue.Queue(depth)
                qb.put(piece[cut:])
                b = pool.submit(scan_pieces, _queued(qb), max(size_hint - pos - cut, FILE_PIECE), tail=True)
        finally:
            if b is None:
                _put(qa, _END, a)
            else:
                _put(qb, _END, b)
        parts = [a.result()] + ([b.result()] if b is not None else [])
    return None if any(p is None for p in parts) else parts


def scan_file_split(path, size: int) -> list[Scanned] | None:
    """:func:`scan_split` for a plain file: each thread reads its own byte range (nothing waits
    in memory); the split is the first candidate after the middle (None: there is none, or the
    scans were not clean)."""
    split = None
    with open(path, "rb") as fh:
        at = size // 2
        fh.seek(at)
        while split is None and (probe := fh.read(1 << 20)):
            cut = find_split(probe)
            split = None if cut is None else at + cut
            if len(probe) < 1 << 20:
                break
            at += len(probe) - 16  # a key cut by the probe's end is seen whole in the next one
            fh.seek(at)
    if split is None:
        return None
    with thread_pool("scan") as pool:
        a = pool.submit(scan_pieces, _file_range(path, 0, split), split, head=lambda: True)
        b = pool.submit(scan_pieces, _file_range(path, split, size), size - split, tail=True)
        parts = [a.result(), b.result()]
    return None if any(p is None for p in parts) else parts


def _file_range(path, start: int, end: int) -> Iterator[bytes]:
    """The bytes ``[start, end)`` of a file in :data:`FILE_PIECE` reads."""
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0 and (piece := fh.read(min(FILE_PIECE, left))):
            left -= len(piece)
            yield piece


def _with_last(pieces: Iterable[bytes]) -> Iterator[tuple[bool, bytes]]:
    """(is the last one, piece) for every piece; one empty last piece if there are none."""
    it = iter(pieces)
    prev = next(it, None)
    if prev is None:
        yield True, b""
        return
    for piece in it:
        if piece:
            yield False, prev
            prev = piece
    yield True, prev
