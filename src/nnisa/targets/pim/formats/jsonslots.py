"""Field mapping and token helpers shared by both pimsim-nn JSON paths (spec §6).

:data:`SLOT_MAP` maps the raw values of one JSON instruction object (one "slot" per known key)
to IR columns; :func:`apply_slots`/:func:`apply_rows` apply it (the orjson path), and the numba
token helpers (:func:`_ws`, :func:`_string_end`, :func:`_number`, :func:`_skip_value`) are the
building blocks of the byte scanner in :mod:`.jsonscan`.
"""

from __future__ import annotations

import json

import numpy as np
from ....core.native import kernel

from ..isa import OPCODES

#: numeric JSON keys of an instruction object, in slot order.  Slots 14/15 are the members of
#: the nested ``offset`` object; slot 16 is a flat ``offset_value`` (used by ``sld``).
SLOT_KEYS = ("rd", "rs1", "rs2", "imm", "len", "size", "mbiw", "group", "relu", "core",
             "event_register", "wait_value", "ibiw", "obiw", "offset_select", "offset_value",
             "offset_value")
NSLOTS = 17
S_RD, S_RS1, S_RS2, S_IMM, S_LEN, S_SIZE = 0, 1, 2, 3, 4, 5
S_OSEL, S_OVAL, S_FLAT_OVAL = 14, 15, 16
#: flat (top-level) key names → slot; ``offset_select`` at top level is ignored like pimsim-nn.
FLAT_KEYS = {k: i for i, k in enumerate(SLOT_KEYS[:14])}
FLAT_KEYS["offset_value"] = S_FLAT_OVAL

#: IR columns written by the kernels: int32 block (imm and op are separate arrays)
ICOLS = ("rd", "rs1", "rs2", "len", "mbiw", "relu", "group", "core", "ev", "val", "ibiw", "obiw",
         "ofs_sel", "ofs_val")
C = {c: i for i, c in enumerate(ICOLS)}
C_IMM = 100  # marker: the slot goes to the int64 imm column

# status codes
ST_OK = 0
ST_UNSUPPORTED = 1  # not understood by the fast path: use the orjson path
ST_UNKNOWN_OP = 2
ST_MISSING_OP = 3
ST_RANGE = 4
ST_LLDI_IMM = 5

# flags per instruction
F_TRUNC = 1  # a non-integral number was truncated
F_SEND_RS1 = 2  # send with a non-zero JSON rs1 (ignored; the source is JSON rd)

_SELECT_OPS = ("vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vrsu", "vrsl",
               "vrelu", "vtanh", "vsigm", "ld", "st", "lmv")
_BARE_OPS = ("vavg", "lldi", "send", "recv")


def _build_map() -> np.ndarray:
    """MAP[op, slot] = target column (index into ICOLS, C_IMM) or -1 (ignored)."""
    m = np.full((len(OPCODES), NSLOTS), -1, dtype=np.int32)

    def put(ops, **pairs):
        for op in ops:
            o = OPCODES.index(op)
            for slot_name, col in pairs.items():
                slot = {"flat_offset_value": S_FLAT_OVAL, "offset_select": S_OSEL,
                        "offset_value": S_OVAL}.get(slot_name, FLAT_KEYS.get(slot_name))
                m[o, slot] = C_IMM if col == "imm" else C[col]

    put(["sldi"], rd="rd", imm="imm")
    put(["sld"], rd="rd", rs1="rs1", flat_offset_value="ofs_val")
    put(["sadd", "ssub", "smul"], rd="rd", rs1="rs1", rs2="rs2")
    put(["saddi", "smuli"], rd="rd", rs1="rs1", imm="imm")
    put(["setbw"], ibiw="ibiw", obiw="obiw")
    put(["mvmul"], rd="rd", rs1="rs1", mbiw="mbiw", group="group", relu="relu")
    put(["vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vrsu", "vrsl", "vavg"],
        rd="rd", rs1="rs1", rs2="rs2", len="len")
    put(["vrelu", "vtanh", "vsigm"], rd="rd", rs1="rs1", len="len")
    put(["vmv"], rd="rd", rs1="rs1", rs2="rs2", len="len")
    put(["ld", "st"], rd="rd", rs1="rs1", size="len")
    put(["lldi"], rd="rd", imm="imm", len="len", size="len")  # size: only when len is absent
    put(["lmv"], rd="rd", rs1="rs1", len="len", size="len")
    put(["send"], rd="rs1", core="core", size="len")
    put(["recv"], rd="rd", core="core", size="len")
    put(["wait"], event_register="ev", wait_value="val")
    put(["sync"], event_register="ev", core="core")
    put(_SELECT_OPS, offset_select="ofs_sel", offset_value="ofs_val")
    put(_BARE_OPS, offset_value="ofs_val")
    return m


SLOT_MAP = _build_map()
OP_LLDI = OPCODES.index("lldi")
OP_LMV = OPCODES.index("lmv")
OP_SEND = OPCODES.index("send")


# --------------------------------------------------------------------------- shared mapping
@kernel(cache=True, nogil=True)
def apply_slots(op, vals, present, slot_map, i, cols, imm, flags):
    """Write one IR row from the raw slot values of a JSON instruction object.

    Returns ``(status, slot)``: ``ST_OK`` or the error code and the offending slot.  Row ``i``
    of ``cols``/``imm`` must be zero on entry (the callers allocate with ``np.zeros``).
    """
    fl = 0
    for s in range(vals.shape[0]):
        if not (present >> s) & 1:
            continue
        target = slot_map[op, s]
        if target < 0:
            continue
        if s == S_SIZE and (op == OP_LLDI or op == OP_LMV) and (present >> S_LEN) & 1:
            continue
        v = vals[s]
        # NaN fails both comparisons; the C cast truncates toward zero
        if not (v >= -2147483648.0 and v <= 4294967295.0):
            return ST_LLDI_IMM if op == OP_LLDI and target == 100 else ST_RANGE, s
        t = np.int64(v)
        if float(t) != v:
            fl |= 1
        if target == 100:
            if op == OP_LLDI:
                if t < -128 or t > 255:
                    return ST_LLDI_IMM, s
                imm[i] = t & 255
            else:
                imm[i] = t
        else:
            if t > 2147483647:
                return ST_RANGE, s
            cols[i, target] = t
    if op == OP_SEND and (present >> S_RS1) & 1 and vals[S_RS1] != 0.0:
        fl |= 2
    flags[i] = fl
    return ST_OK, -1


@kernel(cache=True, nogil=True)
def apply_rows(ops, vals, present, slot_map, cols, imm, flags):
    """Vectorised :func:`apply_slots` for the orjson path; returns (status, row, slot)."""
    for i in range(ops.shape[0]):
        st, s = apply_slots(ops[i], vals[i], present[i], slot_map, i, cols, imm, flags)
        if st != ST_OK:
            return st, i, s
    return ST_OK, -1, -1


# --------------------------------------------------------------------------- tokenizer helpers
@kernel(cache=True, nogil=True)
def _ws(buf, p, n):
    while p < n:
        c = buf[p]
        if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
            break
        p += 1
    return p


@kernel(cache=True, nogil=True)
def _string_end(buf, p, n):
    """``p`` at the opening quote; returns the index of the closing quote, or -1 if the string
    has escapes, control characters or non-ASCII bytes (left to orjson)."""
    q = p + 1
    while q < n:
        c = buf[q]
        if c == 34:
            return q
        if c == 92 or c < 32 or c >= 128:
            return -1
        q += 1
    return -1


@kernel(cache=True, nogil=True)
def _hexval(c):
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


@kernel(cache=True, nogil=True)
def _string_skip(buf, p, n):
    """``p`` at the opening quote of a string whose content is not needed; returns the index of
    its closing quote, or -1 if it is invalid JSON or incomplete.

    Unlike :func:`_string_end` it accepts escapes and UTF-8, validated like orjson: escapes
    ``\\ \" / b f n r t uXXXX``, strict UTF-8 (no overlong forms, no encoded surrogates,
    nothing above U+10FFFF).  A ``\\u`` escape of a surrogate returns -1: orjson's pairing rules
    decide on its path.
    """
    q = p + 1
    while q < n:
        c = buf[q]
        if c == 34:
            return q
        if c < 32:
            return -1
        if c == 92:
            if q + 1 >= n:
                return -1
            d = buf[q + 1]
            if d == 117:
                if q + 5 >= n:
                    return -1
                h = 0
                for j in range(q + 2, q + 6):
                    x = _hexval(buf[j])
                    if x < 0:
                        return -1
                    h = h * 16 + x
                if 0xD800 <= h <= 0xDFFF:
                    return -1
                q += 6
            elif d == 34 or d == 92 or d == 47 or d == 98 or d == 102 or d == 110 or d == 114 or d == 116:
                q += 2
            else:
                return -1
        elif c < 128:
            q += 1
        else:
            # strict UTF-8: lead byte → length and the allowed range of the second byte
            if 0xC2 <= c <= 0xDF:
                ln, lo2, hi2 = 2, 0x80, 0xBF
            elif c == 0xE0:
                ln, lo2, hi2 = 3, 0xA0, 0xBF
            elif c == 0xED:
                ln, lo2, hi2 = 3, 0x80, 0x9F
            elif 0xE1 <= c <= 0xEF:
                ln, lo2, hi2 = 3, 0x80, 0xBF
            elif c == 0xF0:
                ln, lo2, hi2 = 4, 0x90, 0xBF
            elif c == 0xF4:
                ln, lo2, hi2 = 4, 0x80, 0x8F
            elif 0xF1 <= c <= 0xF3:
                ln, lo2, hi2 = 4, 0x80, 0xBF
            else:
                return -1
            if q + ln > n:
                return -1
            if buf[q + 1] < lo2 or buf[q + 1] > hi2:
                return -1
            for j in range(q + 2, q + ln):
                if buf[j] < 0x80 or buf[j] > 0xBF:
                    return -1
            q += ln
    return -1


@kernel(cache=True, nogil=True)
def _foreign_key_end(buf, p, n):
    """``p`` at the opening quote of an object key that :func:`_string_end` refused: the index
    of its closing quote if it is a valid string holding a raw non-ASCII byte (it then differs
    from every key the scanner knows, which are ASCII), else -1 (invalid, incomplete, or an
    ASCII key written with escapes, which may spell a known key: left to orjson)."""
    e = _string_skip(buf, p, n)
    if e < 0:
        return -1
    for j in range(p + 1, e):
        if buf[j] >= 128:
            return e
    return -1


_POW10 = np.array([10.0 ** k for k in range(23)])

#: a number whose magnitude may reach 10**_MAX_DEC10 could overflow a double: orjson rejects
#: those ("number is infinity"), so the scanner leaves them to the orjson path
_MAX_DEC10 = 308


@kernel(cache=True, nogil=True)
def _number(buf, p, n, pow10):
    """Parse the JSON number at ``p``: ``(value, end, exact)``.

    ``end`` is -1 when the bytes are not a JSON number, or when the magnitude could exceed a
    double (more than 308 decimal digits: orjson rejects such numbers; its path reports them).
    ``exact`` is False when the correctly rounded double cannot be computed cheaply (more than
    2**53 in the mantissa or a decimal exponent beyond ±22; ``value`` is then 0.0): the token
    is valid and its bytes ``[p, end)`` are converted with Python's ``float`` by the caller.
    """
    q = p
    neg = False
    if q < n and buf[q] == 45:
        neg = True
        q += 1
    if q >= n or buf[q] < 48 or buf[q] > 57:
        return 0.0, -1, False
    if buf[q] == 48 and q + 1 < n and 48 <= buf[q + 1] <= 57:
        return 0.0, -1, False  # leading zero
    int_nonzero = buf[q] != 48
    m = np.int64(0)
    k = 0  # value = m * 10**k (when exact)
    int_digits = 0
    exact = True
    while q < n and 48 <= buf[q] <= 57:
        if m > 100000000000000000:
            exact = False  # digits beyond 10**17 are dropped (scale kept in k)
            k += 1
        else:
            m = m * 10 + (buf[q] - 48)
        int_digits += 1
        q += 1
    is_float = False
    if q < n and buf[q] == 46:
        is_float = True
        q += 1
        if q >= n or buf[q] < 48 or buf[q] > 57:
            return 0.0, -1, False
        while q < n and 48 <= buf[q] <= 57:
            if m > 100000000000000000:
                if buf[q] != 48:
                    exact = False
            else:
                m = m * 10 + (buf[q] - 48)
                k -= 1
            q += 1
    ex = 0
    if q < n and (buf[q] == 101 or buf[q] == 69):
        is_float = True
        q += 1
        eneg = False
        if q < n and (buf[q] == 43 or buf[q] == 45):
            eneg = buf[q] == 45
            q += 1
        if q >= n or buf[q] < 48 or buf[q] > 57:
            return 0.0, -1, False
        while q < n and 48 <= buf[q] <= 57:
            if ex < 100000:
                ex = ex * 10 + (buf[q] - 48)
            q += 1
        if eneg:
            ex = -ex
        k += ex
    # |value| < 10 ** ((integer digits if the integer part is not 0) + exponent)
    if (int_digits if int_nonzero else 0) + ex > _MAX_DEC10:
        return 0.0, -1, False
    if not exact:
        return 0.0, q, False
    if not is_float:
        v = float(m)
    elif m == 0:
        v = 0.0
    elif m < 9007199254740992 and -22 <= k <= 22:
        v = float(m) * pow10[k] if k >= 0 else float(m) / pow10[-k]
    else:
        return 0.0, q, False
    return (-v if neg else v), q, True


@kernel(cache=True, nogil=True)
def _skip_value(buf, p, n, pow10):
    """Skip any JSON value starting at p (after whitespace); returns the end or -1."""
    stack = np.zeros(512, dtype=np.uint8)  # 1 = object, 2 = array
    depth = 0
    expect_key = False
    while True:
        p = _ws(buf, p, n)
        if p >= n:
            return -1
        c = buf[p]
        if expect_key:
            if c != 34:
                return -1
            e = _string_skip(buf, p, n)
            if e < 0:
                return -1
            p = _ws(buf, e + 1, n)
            if p >= n or buf[p] != 58:
                return -1
            p = _ws(buf, p + 1, n)
            if p >= n:
                return -1
            c = buf[p]
            expect_key = False
        # a value starts at p
        if c == 123 or c == 91:
            if depth >= 512:
                return -1
            stack[depth] = 1 if c == 123 else 2
            depth += 1
            p = _ws(buf, p + 1, n)
            if p < n and buf[p] == (125 if c == 123 else 93):
                depth -= 1
                p += 1
            else:
                expect_key = c == 123
                continue
        elif c == 34:
            e = _string_skip(buf, p, n)
            if e < 0:
                return -1
            p = e + 1
        elif c == 116 or c == 102 or c == 110:
            lit_len = 4 if c != 102 else 5
            if p + lit_len > n:
                return -1
            w = buf[p:p + lit_len]
            ok = (c == 116 and w[1] == 114 and w[2] == 117 and w[3] == 101) or \
                 (c == 110 and w[1] == 117 and w[2] == 108 and w[3] == 108) or \
                 (c == 102 and w[1] == 97 and w[2] == 108 and w[3] == 115 and w[4] == 101)
            if not ok:
                return -1
            p += lit_len
        else:
            v, e, exact = _number(buf, p, n, pow10)
            if e < 0:
                return -1
            p = e
        # after a value: close containers or continue with the next element
        while True:
            if depth == 0:
                return p
            p = _ws(buf, p, n)
            if p >= n:
                return -1
            c = buf[p]
            close = 125 if stack[depth - 1] == 1 else 93
            if c == 44:
                p += 1
                expect_key = stack[depth - 1] == 1
                break
            if c == close:
                depth -= 1
                p += 1
                continue
            return -1


# --------------------------------------------------------------------------- the scanner


# --------------------------------------------------------------------------- deferred numbers
def apply_spans(rows: np.ndarray, segs: np.ndarray, spans: np.ndarray, buf) -> list[str] | None:
    """Finish the scanner's rows with the tokens it left to Python (see ``jsonscan.scan``).

    Numbers whose exact double is not cheap to compute (a mantissa beyond 2**53, e.g. a
    17-digit ``lldi`` immediate, or a large decimal exponent) are converted with ``float``
    (correctly rounded, like orjson) and go through :func:`apply_slots`'s rules: range
    checks, truncation toward zero, the ``lldi`` byte.  ``segs`` (the scanner's segment
    table) is updated in place with the truncated and send-``rs1`` counts they add.

    Returns the ignored top-level keys (in file order), or ``None`` if a converted number is
    out of range: the orjson path then reports the error.
    """
    is_key = spans[:, 0] < 0
    ignored = list(dict.fromkeys(json.loads(bytes(buf[a - 1:b + 1])) for a, b in spans[is_key, 2:4].tolist()))
    num = spans[~is_key]
    if not len(num):
        return ignored
    r, slot = num[:, 0], num[:, 1]
    vals = np.array([float(bytes(buf[a:b])) for a, b in num[:, 2:4].tolist()], dtype=np.float64)
    ops = rows["op"][r].astype(np.int64)
    target = SLOT_MAP[ops, slot]
    mapped = target >= 0  # the others: a send's rs1 (only tested against 0)
    v, tgt, rm, op_m = vals[mapped], target[mapped], r[mapped], ops[mapped]
    if not ((v >= -2147483648.0) & (v <= 4294967295.0)).all():
        return None
    t = np.trunc(v).astype(np.int64)
    lldi_imm = (tgt == C_IMM) & (op_m == OP_LLDI)
    if (lldi_imm & ((t < -128) | (t > 255))).any() or ((tgt != C_IMM) & (t > 2147483647)).any():
        return None
    newly_trunc = np.unique(rm[(t != v) & (num[mapped, 4] == 0)])
    t = np.where(lldi_imm, t & 255, t)
    for col in np.unique(tgt).tolist():
        sel = tgt == col
        rows["imm" if col == C_IMM else ICOLS[col]][rm[sel]] = t[sel]
    send_rs1 = np.unique(r[~mapped & (vals != 0.0)])
    ends = segs[:, 2]
    for row in newly_trunc.tolist():
        i = int(np.searchsorted(ends, row, side="right"))
        k = row - int(segs[i, 1])
        segs[i, 3] += 1
        segs[i, 4] = k if segs[i, 4] < 0 else min(int(segs[i, 4]), k)
    for row in send_rs1.tolist():
        segs[int(np.searchsorted(ends, row, side="right")), 5] += 1
    return ignored
