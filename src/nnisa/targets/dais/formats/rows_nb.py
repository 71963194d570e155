"""numba kernel that writes rows of ASCII text from pieces: decimal int64s and entries of a string
table (the fast path of the DAIS text and da4ml JSON writers, :mod:`.fastrender`).

Each row is a fixed number of pieces; piece ``(r, j)`` has a kind (0 nothing, 1 the decimal text
of ``vals[r, j]``, 2 the string-table entry ``vals[r, j]``).  The readable references are the
per-op Python renderers in :mod:`.text` and :mod:`.jsonio`; tests check the two agree byte for byte.
"""

from __future__ import annotations

import numba as nb
import numpy as np

SKIP, INT, STR = 0, 1, 2

_TEN = np.uint64(10)
_ONE = np.uint64(1)


@nb.njit(cache=True)
def _magnitude(v):
    """``|v|`` as uint64 (exact for int64 min)."""
    if v < 0:
        return np.uint64(-(v + 1)) + _ONE
    return np.uint64(v)


@nb.njit(cache=True)
def _int_len(v):
    n = 2 if v < 0 else 1
    u = _magnitude(v)
    while u >= _TEN:
        u //= _TEN
        n += 1
    return n


@nb.njit(cache=True)
def fill_rows(kinds, vals, strbuf, stroff):
    """The concatenated bytes of all rows (``kinds``, ``vals``: ``(rows, pieces)``; string ``s`` is
    ``strbuf[stroff[s]:stroff[s + 1]]``)."""
    n, m = kinds.shape
    total = 0
    for r in range(n):
        for j in range(m):
            k = kinds[r, j]
            if k == 1:
                total += _int_len(vals[r, j])
            elif k == 2:
                s = vals[r, j]
                total += stroff[s + 1] - stroff[s]
    out = np.empty(total, np.uint8)
    pos = 0
    for r in range(n):
        for j in range(m):
            k = kinds[r, j]
            if k == 1:
                v = vals[r, j]
                w = _int_len(v)
                if v < 0:
                    out[pos] = 45  # '-'
                u = _magnitude(v)
                q = pos + w - 1
                while True:
                    out[q] = np.uint8(48 + (u % _TEN))
                    u //= _TEN
                    q -= 1
                    if u == 0:
                        break
                pos += w
            elif k == 2:
                s = vals[r, j]
                for b in range(stroff[s], stroff[s + 1]):
                    out[pos] = strbuf[b]
                    pos += 1
    return out


class StringTable:
    """Distinct strings numbered in order of first use (the ``2`` pieces of :func:`fill_rows`)."""

    def __init__(self):
        self.ids: dict[str, int] = {}
        self._enc: list[bytes] = []
        self._arrays = (np.zeros(0, np.uint8), np.zeros(1, np.int64))

    def id(self, s: str) -> int:
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.ids)
            self._enc.append(s.encode())
        return i

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(bytes, offsets)`` of the table (rebuilt only after new strings)."""
        if len(self._arrays[1]) != len(self._enc) + 1:
            off = np.zeros(len(self._enc) + 1, np.int64)
            off[1:] = np.cumsum([len(b) for b in self._enc], dtype=np.int64)
            self._arrays = (np.frombuffer(b"".join(self._enc), np.uint8), off)
        return self._arrays


def render_rows(columns: list, n: int, table: StringTable) -> str:
    """Text of ``n`` rows; ``columns`` are pieces: a ``str`` (a literal in every row), ``("int",
    values)`` or ``("str", ids)`` (per-row arrays or scalars), or ``("mix", kinds, values)``."""
    return render_rows_bytes(columns, n, table).decode()


def render_rows_bytes(columns: list, n: int, table: StringTable) -> bytes:
    """:func:`render_rows` as UTF-8 bytes (what a file gets: no decode and re-encode)."""
    kinds = np.zeros((n, len(columns)), np.int8)
    vals = np.zeros((n, len(columns)), np.int64)
    for j, col in enumerate(columns):
        if isinstance(col, str):
            kinds[:, j], vals[:, j] = STR, table.id(col)
        elif col[0] == "int":
            kinds[:, j], vals[:, j] = INT, col[1]
        elif col[0] == "str":
            kinds[:, j], vals[:, j] = STR, col[1]
        else:
            kinds[:, j], vals[:, j] = col[1], col[2]
    buf, off = table.arrays()
    return fill_rows(kinds, vals, buf, off).tobytes()
