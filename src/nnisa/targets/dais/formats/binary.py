"""DAIS binary reader/writer: spec_version 1 (da4ml 0.6.0), 0 (0.5.x) and legacy (≤ 0.4.x),
with length-consistency format detection (spec §3).

All files are flat little-endian int32 words.  Parsing is vectorised: a 10^5-op file is a few
NumPy reshapes, no per-op Python loop.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import DaisAmbiguousFormatWarning, DaisFormatError, DaisValidationError, UnsupportedSpecVersion
from ..program import Program
from .. import isa

FORMATS = ("auto", "v1", "v0", "legacy")


def _words(src, file=None) -> np.ndarray:
    if isinstance(src, np.ndarray) and src.dtype.kind in "iu" and src.dtype.itemsize == 4:
        return np.ascontiguousarray(src.reshape(-1)).astype("<i4", copy=False).astype(np.int64)
    raw = src if isinstance(src, (bytes, bytearray, memoryview)) else bytes(src)
    if len(raw) % 4:
        raise DaisFormatError(f"byte length {len(raw)} is not a multiple of 4", file=file)
    return np.frombuffer(raw, dtype="<i4")  # a view: int64 only once the lengths check out (_parse)


def check_head(head: bytes, size: int, file: str | None = None) -> None:
    """Refuse, from its first words, a file of ``size`` bytes that no DAIS binary layout can have:
    the legacy header fixes the length; a v0/v1 header fixes it up to the table sizes.  Used before
    a big file is read whole."""
    if size % 4 or size < 12 or len(head) < 12:
        return  # read_binary says what is wrong
    w = [int(v) for v in np.frombuffer(head[:min(len(head), 24) // 4 * 4], "<i4")]
    legacy = min(w[:3]) >= 0 and (3 + w[0] + 3 * w[1] + 8 * w[2]) * 4 == size
    v = False
    if len(w) >= 6 and w[0] in (0, 1) and min(w[2:6]) >= 0:
        fixed = 6 + w[2] + 3 * w[3] + 8 * w[4]
        v = (fixed + w[5]) * 4 <= size if w[5] else fixed * 4 == size
    if not (legacy or v):
        raise DaisFormatError(f"{size:,} bytes do not fit the counts of a v1/v0 or legacy header "
                              f"(first words {w[:6]})", file=file)


def _v_expected(w: np.ndarray) -> int | None:
    """Total length implied by a v0/v1 header, or None if the header is not consistent."""
    if len(w) < 6 or w[0] not in (0, 1):
        return None
    n_in, n_out, n_ops, n_tab = (int(v) for v in w[2:6])
    if min(n_in, n_out, n_ops, n_tab) < 0:
        return None
    head = 6 + n_in + 3 * n_out + 8 * n_ops
    if head + n_tab > len(w):
        return None
    sizes = w[head:head + n_tab]
    if np.any(sizes < 0):
        return None
    return head + n_tab + int(sizes.sum(dtype=np.int64))


def _legacy_expected(w: np.ndarray) -> int | None:
    if len(w) < 3 or min(int(w[0]), int(w[1]), int(w[2])) < 0:
        return None
    return 3 + int(w[0]) + 3 * int(w[1]) + 8 * int(w[2])


def _ops(rec: np.ndarray, hi_lo: bool = False) -> np.ndarray:
    """8-word records → [n, 7] int64 (opcode, id0, id1, data, k, I, f); data low word first (D5)."""
    rec = rec.reshape(-1, 8)
    lo, hi = (rec[:, 4], rec[:, 3]) if hi_lo else (rec[:, 3], rec[:, 4])
    data = (hi << 32) | (lo & 0xFFFFFFFF)
    return np.stack([rec[:, 0], rec[:, 1], rec[:, 2], data, rec[:, 5], rec[:, 6], rec[:, 7]], axis=1)


def _parse(w: np.ndarray, fmt: str, *, validate=True, file=None, legacy_data_order="lo-hi",
           allow_wide=False) -> Program:
    w = w.astype(np.int64)  # the lengths checked out: now the arithmetic width
    if fmt == "legacy":
        n_in, n_out, n_ops = (int(v) for v in w[:3])
        pos = 3
        version, fw, tables = None, 0, ()
    else:
        version, fw = int(w[0]), int(w[1]) & 0xFFFFFFFF  # the firmware word is unsigned
        n_in, n_out, n_ops, n_tab = (int(v) for v in w[2:6])
        pos = 6
    inp = w[pos:pos + n_in]
    pos += n_in
    outs = w[pos:pos + 3 * n_out].reshape(3, n_out)
    pos += 3 * n_out
    ops = _ops(w[pos:pos + 8 * n_ops], hi_lo=(fmt == "legacy" and legacy_data_order == "hi-lo"))
    pos += 8 * n_ops
    if fmt != "legacy":
        sizes = w[pos:pos + n_tab]
        pos += n_tab
        tables = []
        for s in sizes.tolist():
            tables.append(w[pos:pos + s])
            pos += s
    return Program.from_arrays(spec_version=version, firmware_version=fw, inp_shifts=inp, out_idxs=outs[0],
                               out_shifts=outs[1], out_negs=outs[2], ops=ops, tables=tables,
                               validate=validate, file=file, allow_wide=allow_wide)


def read_binary(src, format: str = "auto", *, validate: bool = True, file=None,
                legacy_data_order: str = "lo-hi", allow_wide: bool = False) -> Program:
    """Parse a DAIS binary (bytes, or an int32 array) into a :class:`Program`.

    Parameters
    ----------
    src
        ``bytes``-like or an int32 word array (as returned by da4ml's ``to_binary``).
    format
        ``"auto"`` (§3.7 detection), ``"v1"``, ``"v0"`` or ``"legacy"``.
    validate
        Run §5.6 validation (errors raise :class:`DaisValidationError`).
    legacy_data_order
        ``"hi-lo"`` reads legacy files that put the high data word first (D5).
    allow_wide
        Accept dtypes wider than 64 bits (computed modulo 2^64 with a warning); by default they
        are a validation error (nnisa decision, see docs/dais.md).
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    w = _words(src, file)
    if len(w) < 3:
        raise DaisFormatError(f"too short: {len(w) * 4} bytes", file=file)
    v_len, l_len = _v_expected(w), _legacy_expected(w)
    v_ok, l_ok = v_len == len(w), l_len == len(w)
    kw = dict(validate=validate, file=file, legacy_data_order=legacy_data_order, allow_wide=allow_wide)
    if format in ("v1", "v0"):
        want = 1 if format == "v1" else 0
        if len(w) < 6 or int(w[0]) != want:
            raise DaisFormatError(f"word 0 is {int(w[0])}, expected spec_version {want}", file=file)
        if not v_ok:
            raise DaisFormatError(_len_msg(v_len, len(w), "v" + str(want)), file=file)
        return _parse(w, "v", **kw)
    if format == "legacy":
        if not l_ok:
            raise DaisFormatError(_len_msg(l_len, len(w), "legacy"), file=file)
        return _parse(w, "legacy", **kw)
    if v_ok and l_ok:
        res = {}
        for fmt in ("v", "legacy"):
            try:
                res[fmt] = _parse(w, fmt, **{**kw, "validate": True})
            except (DaisValidationError, DaisFormatError) as exc:
                res[fmt] = exc
        good = [k for k, v in res.items() if isinstance(v, Program)]
        if len(good) == 1:
            return res[good[0]]
        if not good:
            raise res["v"]
        warnings.warn("binary fits both the v1 and the legacy layout; read as v1", DaisAmbiguousFormatWarning,
                      stacklevel=2)
        return res["v"]
    if v_ok:
        return _parse(w, "v", **kw)
    if l_ok:
        return _parse(w, "legacy", **kw)
    if len(w) >= 6 and int(w[0]) >= 2:
        hdr = w.copy()
        hdr[0] = 1
        if _v_expected(hdr) == len(w):
            raise UnsupportedSpecVersion(f"spec_version {int(w[0])} is not supported (v2 = alkaid, future work)",
                                         file=file)
    exp = []
    if v_len is not None:
        exp.append(f"{v_len * 4} (v1)")
    if l_len is not None:
        exp.append(f"{l_len * 4} (legacy)")
    if len(w) >= 6 and int(w[0]) not in (0, 1) and l_len is None:
        raise DaisFormatError(f"unknown spec_version {int(w[0])} and no legacy layout fits", file=file)
    raise DaisFormatError(f"length mismatch: expected {' or '.join(exp) or 'a consistent header'} bytes, "
                          f"got {len(w) * 4}", file=file)


def _len_msg(expected, actual, fmt) -> str:
    e = "inconsistent header" if expected is None else f"{expected * 4} bytes"
    return f"length mismatch for {fmt}: expected {e}, got {actual * 4}"


def write_binary(p: Program, format: str = "v1", firmware_version: int | None = None) -> np.ndarray:
    """Serialise a program to int32 words (``format`` = ``"v1"``, ``"v0"`` or ``"legacy"``)."""
    if format == "auto":
        format = "legacy" if p.spec_version is None else f"v{p.spec_version}"
    if format not in ("v1", "v0", "legacy"):
        raise ValueError(f"format must be v1, v0 or legacy, not {format!r}")
    allowed = isa.ALLOWED["legacy" if format == "legacy" else int(format[1])]
    bad = np.flatnonzero(~np.isin(p.opcode, list(allowed)))
    if len(bad):
        raise DaisFormatError(f"op {bad[0]}: opcode {int(p.opcode[bad[0]])} cannot be written as {format}")
    if format == "legacy" and p.tables:
        raise DaisFormatError("legacy format cannot hold lookup tables")
    data = p.data.astype(np.int64)
    rec = np.empty((p.n_ops, 8), np.int64)
    rec[:, 0], rec[:, 1], rec[:, 2] = p.opcode, p.id0, p.id1
    rec[:, 3] = (data & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    rec[:, 4] = data >> 32
    rec[:, 5], rec[:, 6], rec[:, 7] = p.k, p.I, p.f
    if format == "legacy":
        head = [p.n_in, p.n_out, p.n_ops]
    else:
        fw = p.firmware_version if firmware_version is None else firmware_version
        head = [int(format[1]), fw, p.n_in, p.n_out, p.n_ops, len(p.tables)]
    parts = [np.asarray(head, np.int64), p.inp_shifts, p.out_idxs, p.out_shifts, p.out_negs, rec.reshape(-1)]
    if format != "legacy":
        parts.append(np.asarray([len(t) for t in p.tables], np.int64))
        parts.extend(p.tables)
    return np.concatenate([np.asarray(a, np.int64).reshape(-1) for a in parts]).astype("<i4")


def to_bytes(p: Program, format: str = "v1", firmware_version: int | None = None) -> bytes:
    return write_binary(p, format, firmware_version).tobytes()
