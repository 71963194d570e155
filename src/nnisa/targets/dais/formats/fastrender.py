"""Fast writers of the DAIS assembly text and da4ml JSON: the same bytes as the readable
references :func:`.text.disassemble` and :func:`.jsonio.to_da4ml_json`, rendered from the op
arrays by the :mod:`.rows_nb` kernel instead of a Python loop per op.

What varies per op is mostly integers (indices, operands, shifts); the rest takes few distinct
values per program (a dtype's ``: (k,I,f) ; [lo, hi] step s`` suffix, its da4ml ``qint``, a
latency), rendered once per distinct value in Python and referenced by number.  The operand text
comes from the table's templates (:class:`.text.Template`) for whole arrays; the rare forms (of
more than 8 pieces, or only ``raw``) and ops with a stored ``qint`` are rendered per op by the
reference helpers.
"""

from __future__ import annotations

import json

import numpy as np

from ..program import Program, qint_floats
from .jsonio import Raw, da4ml_document, lut_key_qints, to_da4ml_json
from .rows_nb import INT, STR, StringTable, render_rows_bytes
from .text import TEMPLATES, header_lines, op_suffix, output_lines, op_text

#: ops rendered per kernel call (bounds the piece arrays: 16 pieces x 8 bytes x this)
CHUNK = 1 << 16


def _dtype_ids(p: Program) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(k, I, f)`` rows and each op's index into them."""
    cols = [np.asarray(x, np.int64) for x in (p.k, p.I, p.f)]
    if not p.n_ops:
        return np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    lo = [int(c.min()) for c in cols]
    span = [int(c.max()) - m + 1 for c, m in zip(cols, lo)]
    if span[0] * span[1] * span[2] < 1 << 62:  # one int64 key per op: a 1-D unique is ~20x faster
        key = ((cols[0] - lo[0]) * span[1] + (cols[1] - lo[1])) * span[2] + (cols[2] - lo[2])
        uk, inv = np.unique(key, return_inverse=True)
        uniq = np.stack([uk // (span[1] * span[2]) + lo[0], uk // span[2] % span[1] + lo[1],
                         uk % span[2] + lo[2]], axis=1)
        return uniq, inv.reshape(-1)
    uniq, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)


def _bodies(table: StringTable, o, a, c, d, lo, hi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Operand text of the ops as 8 pieces per op: ``(kinds, vals, covered)``; ops of the rare
    forms (``covered`` False) are left to the reference.

    The forms and their conditions are the table's templates (:class:`.text.Template`), rendered
    here for whole arrays: every form of at most 8 pieces."""
    m = len(o)
    kinds = np.zeros((8, m), np.int8)  # piece-major: each piece's column is contiguous
    vals = np.zeros((8, m), np.int64)
    covered = np.zeros(m, bool)
    sub, na, nc = (hi >> 24) & 0xFF, hi & 1, (hi >> 1) & 1
    view = {"id0": a, "id1": c, "data": d, "lo": lo, "hi": hi, "sub": sub, "na": na, "nc": nc}
    present = set(np.unique(o).tolist())
    for t in TEMPLATES.values():
        if t.opcode not in present:
            continue
        pieces = _pieces(t, view, table)
        if pieces is None:
            continue
        idx = np.flatnonzero((o == t.opcode) & _fits(t, view) & ~covered)
        if not len(idx):
            continue
        for j, x in enumerate(pieces):
            if isinstance(x, str):
                kinds[j, idx], vals[j, idx] = STR, table.id(x)
            else:
                kinds[j, idx], vals[j, idx] = x[0], x[1][idx]
        covered[idx] = True
    return kinds, vals, covered


def _pieces(t, view: dict, table: StringTable) -> list | None:
    """A template as at most 8 pieces: literal text, or (kind, per-op values); None if longer."""
    out: list = []
    for p in t.parts:
        if p[0] == "lit":
            if out and isinstance(out[-1], str):
                out[-1] += p[1]
            else:
                out.append(p[1])
        elif p[0] in ("ref", "int"):
            out.append((INT, view[p[1]]))
        else:
            words = p[2] if p[0] == "enum" else ("", "-")
            ids = np.array([table.id(w) for w in words], np.int64)
            out.append((STR, ids[np.clip(view[p[1]], 0, len(words) - 1)]))
    return out if len(out) <= 8 else None


def _fits(t, v: dict) -> np.ndarray:
    """:meth:`.text.Template.fits` for whole arrays."""
    ok = np.ones(len(v["id0"]), bool)
    if "id1" not in t.used:
        ok &= v["id1"] == -1
    if "id0" not in t.used and t.opcode != -1:
        ok &= v["id0"] == -1
    for p in t.parts:
        if p[0] == "ref":  # "%-1" would not parse: raw
            ok &= v[p[1]] >= 0
    if "data" not in t.used:
        return ok & (v["data"] == 0)
    for p in t.parts:
        if p[0] == "enum":
            ok &= (v[p[1]] >= 0) & (v[p[1]] < len(p[2]))
    cols = t.cols
    if "data" in cols:
        return ok
    if "sub" in cols:
        return ok & ((v["hi"] & 0x00FFFFFC) == 0)
    if "hi" in cols:
        return ok
    return ok & (v["hi"] == np.where(v["lo"] < 0, -1, 0))


def disassemble_fast(p: Program, *, intervals: bool = True, encoded: bool = False) -> str | bytes:
    """:func:`.text.disassemble` (same text), rendered by the row kernel; ``encoded``: as UTF-8
    bytes (for a file)."""
    table = StringTable()
    uniq, inv = _dtype_ids(p)
    suffix_id = np.array([table.id(op_suffix(k, i, f, None, intervals)) for k, i, f in uniq.tolist()],
                         np.int64)[inv]
    qint = p.meta.get("qint")
    lo, hi = p.data_lo().astype(np.int64), p.data_hi().astype(np.int64)
    o = p.opcode.astype(np.int64)
    parts = []
    for s in range(0, p.n_ops, CHUNK):  # chunks: the piece arrays stay small
        e = min(s + CHUNK, p.n_ops)
        cols = (o[s:e], p.id0[s:e].astype(np.int64), p.id1[s:e].astype(np.int64), p.data[s:e], lo[s:e], hi[s:e])
        kinds, vals, covered = _bodies(table, *cols)
        other = np.flatnonzero(~covered)  # the rare forms: the reference's operand text
        for j, oi, a, c, d, lo_i, hi_i in zip(other.tolist(), *(x[other].tolist() for x in cols)):
            body = op_text(oi, a, c, d, lo_i, hi_i)
            kinds[0, j], vals[0, j] = STR, table.id(body if body is not None else f"raw {oi} {a} {c} {lo_i} {hi_i}")
        suf = suffix_id[s:e].copy()
        if qint is not None:
            for j in range(e - s):
                if qint[s + j] is not None:
                    suf[j] = table.id(op_suffix(int(p.k[s + j]), int(p.I[s + j]), int(p.f[s + j]),
                                                qint[s + j], intervals))
        parts.append(render_rows_bytes(["%", ("int", np.arange(s, e)), " = ",
                                  *(("mix", kinds[j], vals[j]) for j in range(8)), ("str", suf), "\n"],
                                 e - s, table))
    head = "".join(line + "\n" for line in header_lines(p)).encode()
    out = head + b"".join(parts) + "".join(line + "\n" for line in output_lines(p)).encode()
    return out if encoded else out.decode()


def _float_ids(values: np.ndarray, table: StringTable) -> np.ndarray:
    """Each float's string-table id of its ``json.dumps`` text (distinct by bit pattern, so
    ``-0.0`` keeps its sign)."""
    bits = np.ascontiguousarray(values, np.float64).view(np.int64)
    uniq, inv = np.unique(bits, return_inverse=True)
    ids = np.array([table.id(json.dumps(float(v))) for v in uniq.view(np.float64).tolist()], np.int64)
    return ids[inv.reshape(-1)] if len(uniq) else np.zeros(0, np.int64)


def to_da4ml_json_fast(p: Program, *, encoded: bool = False) -> str | bytes:
    """:func:`.jsonio.to_da4ml_json` (same text), rendered by the row kernel; ``encoded``: as
    UTF-8 bytes (for a file)."""
    n = p.n_ops
    lat, cost = p.meta.get("latency"), p.meta.get("cost")
    if (lat and len(lat) != n) or (cost and len(cost) != n):
        doc = to_da4ml_json(p)  # the reference's rows stop at the shortest list: keep its text
        return doc.encode() if encoded else doc
    table = StringTable()
    fl = lambda v: _float_ids(np.asarray(v, np.float64) if v else np.zeros(n), table)  # noqa: E731
    lat_id, cost_id = fl(lat), fl(cost)
    qtext = lambda q: "[" + ",".join(json.dumps(float(v)) for v in q) + "]"  # noqa: E731
    uniq, inv = _dtype_ids(p)
    q_id = np.array([table.id(qtext(qint_floats(k, i, f))) for k, i, f in uniq.tolist()], np.int64)[inv]
    stored = p.meta.get("qint")
    if stored is not None:
        for i, q in enumerate(stored[:n]):
            if q is not None:
                q_id[i] = table.id(qtext(q))
    for a, q in lut_key_qints(p).items():
        q_id[a] = table.id(qtext(q))
    o = p.opcode
    dd = np.where(o == 8, p.data_lo().astype(np.int64), p.data)
    sep = np.full(n, table.id(","), np.int64)
    if n:
        sep[-1] = table.id("")
    rows = [render_rows_bytes(["[", ("int", p.id0[s:e]), ",", ("int", p.id1[s:e]), ",", ("int", o[s:e]), ",",
                         ("int", dd[s:e]), ",", ("str", q_id[s:e]), ",", ("str", lat_id[s:e]), ",",
                         ("str", cost_id[s:e]), "]", ("str", sep[s:e])], e - s, table)
            for s, e in ((s, min(s + CHUNK, n)) for s in range(0, n, CHUNK))]
    # the document around a marker json.dumps never writes (it escapes NUL), then the rows' bytes
    head, tail = da4ml_document(p, Raw("\x00")).split("\x00")
    out = head.encode() + b"".join(rows) + tail.encode()
    return out if encoded else out.decode()
