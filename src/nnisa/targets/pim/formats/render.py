"""Bulk text rendering of PIM instructions with per-opcode templates (numba).

Both the pimsim-nn JSON writer and the disassembler print millions of small records whose
shape depends only on the opcode.  A :class:`RenderPlan` compiles one template per opcode into
segments (literal text followed by one formatted value) and :func:`render_rows` writes all rows
into one byte buffer in a single jitted pass, which is ~50× faster than per-row Python
formatting.

Template items are ``str`` literals or tuples:

``("dec", col)``
    the column as a decimal integer;
``("hex", col)``
    ``0xHH`` (at least two upper-case hex digits; negative values in decimal);
``("optdec", col, prefix)``
    ``prefix`` + decimal, omitted entirely when the value is 0;
``("ofs", sel_col, val_col, prefix)``
    ``prefix`` + ``ofs(<mask names>, <value>)``, omitted when both are 0.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from ....core.native import kernel

K_LIT, K_DEC, K_HEX, K_OPTDEC, K_OFS = 0, 1, 2, 3, 4
_MAX_NUM = 21  # characters of the longest int64 in decimal, with sign

#: names of the offset_select masks 0-7 (spec §4.1)
MASK_NAMES = tuple("|".join(n for i, n in enumerate(("rd", "rs1", "rs2")) if m >> i & 1) or "0"
                   for m in range(8))


@kernel(cache=True, nogil=True)
def _put_dec(out, p, v):
    if v < 0:
        out[p] = 45
        p += 1
        v = -v
    if v == 0:
        out[p] = 48
        return p + 1
    q = p
    while v > 0:
        out[q] = 48 + v % 10
        v //= 10
        q += 1
    # reverse the digits in place
    i, j = p, q - 1
    while i < j:
        t = out[i]
        out[i] = out[j]
        out[j] = t
        i += 1
        j -= 1
    return q


@kernel(cache=True, nogil=True)
def _put_lit(out, p, pool, off, ln):
    for k in range(ln):
        out[p + k] = pool[off + k]
    return p + ln


@kernel(cache=True, nogil=True)
def render_rows(ops, V, seg_lo, seg_hi, lit_off, lit_len, kind, col, col2, pool, mn_off, mn_len, out):
    """Render rows ``i`` (opcode ``ops[i]``, values ``V[i, :]``) into ``out``; returns the length."""
    p = 0
    for i in range(ops.shape[0]):
        o = ops[i]
        for s in range(seg_lo[o], seg_hi[o]):
            k = kind[s]
            if k == 4:
                sel = V[i, col[s]]
                val = V[i, col2[s]]
                if sel == 0 and val == 0:
                    continue
                p = _put_lit(out, p, pool, lit_off[s], lit_len[s])
                m = sel & 7
                p = _put_lit(out, p, pool, mn_off[m], mn_len[m])
                out[p] = 44
                out[p + 1] = 32
                p = _put_dec(out, p + 2, val)
                out[p] = 41
                p += 1
                continue
            if k == 3:
                v = V[i, col[s]]
                if v == 0:
                    continue
                p = _put_lit(out, p, pool, lit_off[s], lit_len[s])
                p = _put_dec(out, p, v)
                continue
            p = _put_lit(out, p, pool, lit_off[s], lit_len[s])
            if k == 1:
                p = _put_dec(out, p, V[i, col[s]])
            elif k == 2:
                v = V[i, col[s]]
                if v < 0:
                    p = _put_dec(out, p, v)
                else:
                    out[p] = 48
                    out[p + 1] = 120
                    p += 2
                    nd = 2
                    while (v >> (4 * nd)) > 0:
                        nd += 1
                    for d in range(nd - 1, -1, -1):
                        h = (v >> (4 * d)) & 15
                        out[p] = 48 + h if h < 10 else 55 + h
                        p += 1
    return p


class RenderPlan:
    """Compiled per-opcode templates.

    Parameters
    ----------
    templates
        opcode → list of template items (see the module docstring).
    columns
        Names of the value columns; items refer to columns by name, rows are passed as a
        2-D int64 matrix in this column order.
    """

    def __init__(self, templates: dict[int, Sequence], columns: Sequence[str]):
        self.columns = tuple(columns)
        cidx = {c: i for i, c in enumerate(self.columns)}
        nops = max(templates) + 1 if templates else 1
        pool = bytearray()
        mn_off, mn_len = [], []
        for name in MASK_NAMES:
            mn_off.append(len(pool))
            mn_len.append(len(name))
            pool += name.encode()
        segs: list[tuple[int, int, int, int, int]] = []
        lo = np.zeros(nops, dtype=np.int64)
        hi = np.zeros(nops, dtype=np.int64)
        self.bound = np.zeros(nops, dtype=np.int64)

        def lit(text: str) -> tuple[int, int]:
            b = text.encode()
            off = len(pool)
            pool.extend(b)
            return off, len(b)

        for op, items in templates.items():
            lo[op] = len(segs)
            pending = ""
            bound = 0
            for it in items:
                if isinstance(it, str):
                    pending += it
                    continue
                kind = it[0]
                if kind in ("dec", "hex"):
                    off, ln = lit(pending)
                    segs.append((off, ln, K_DEC if kind == "dec" else K_HEX, cidx[it[1]], 0))
                    bound += ln + _MAX_NUM
                else:
                    if pending:
                        off, ln = lit(pending)
                        segs.append((off, ln, K_LIT, 0, 0))
                        bound += ln
                    if kind == "optdec":
                        off, ln = lit(it[2])
                        segs.append((off, ln, K_OPTDEC, cidx[it[1]], 0))
                        bound += ln + _MAX_NUM
                    elif kind == "ofs":
                        off, ln = lit(it[3])
                        segs.append((off, ln, K_OFS, cidx[it[1]], cidx[it[2]]))
                        bound += ln + 16 + 3 + _MAX_NUM
                    else:
                        raise ValueError(f"unknown template item {it!r}")
                pending = ""
            if pending:
                off, ln = lit(pending)
                segs.append((off, ln, K_LIT, 0, 0))
                bound += ln
            hi[op] = len(segs)
            self.bound[op] = bound
        arr = np.array(segs, dtype=np.int64).reshape(-1, 5)
        self._args = (lo, hi, arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy(), arr[:, 3].copy(),
                      arr[:, 4].copy(), np.frombuffer(bytes(pool), dtype=np.uint8),
                      np.array(mn_off, dtype=np.int64), np.array(mn_len, dtype=np.int64))

    def render(self, ops: np.ndarray, values: np.ndarray) -> bytes:
        """Render rows (opcodes ``ops``, value matrix ``values``) to bytes."""
        ops = np.ascontiguousarray(ops, dtype=np.int64)
        if len(ops) == 0:
            return b""
        size = int(self.bound[ops].sum())
        out = np.empty(size, dtype=np.uint8)
        n = render_rows(ops, np.ascontiguousarray(values, dtype=np.int64), *self._args[:-2],
                        self._args[-2], self._args[-1], out)
        return out[:n].tobytes()

    def matrix(self, rows: np.ndarray) -> np.ndarray:
        """The value matrix of a structured IR array in this plan's column order."""
        v = np.empty((len(rows), len(self.columns)), dtype=np.int64)
        for j, c in enumerate(self.columns):
            v[:, j] = rows[c]
        return v
