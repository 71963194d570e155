"""Numba kernels for the pimsim-nn JSON dialect (spec §6): a direct tokenizer and field mapping.

:func:`scan` walks the (decompressed) bytes of a pimsim-nn program file once and writes every
instruction object straight into the rows of one structured array of the IR dtype, without
building Python objects.  It understands exactly this dialect: a top-level object with a
``config`` value (only its byte range is recorded; the caller parses it with orjson) and
``"core<k>"`` arrays of flat instruction objects with numeric fields, a string ``op`` and a
nested ``offset`` object.  Anything else (unknown top-level keys, escapes in keys or mnemonics,
non-numeric field values, numbers that cannot be converted exactly, malformed JSON, ...) makes
it return :data:`ST_UNSUPPORTED`, and the caller falls back to the orjson path, which is the
authority for error messages.

The scanner is resumable: it can be fed a growing buffer (e.g. while another thread is still
decompressing the file) and returns :data:`ST_MORE` when it needs bytes beyond the ones
available; its position is kept in a small state vector at the start of the incomplete unit
(an instruction object, a top-level key with the start of its value, a separator).

Both paths share one field mapping (:data:`SLOT_MAP`): :func:`apply_slots` turns the raw values
of one JSON object (the "slots", one per known key) into an IR row for the orjson path, and
:func:`_apply_row` is the scanner's equivalent on pre-converted integers (same order of checks,
same truncation, range checks and warning flags).
"""

from __future__ import annotations

import numpy as np
from ....core.native import kernel

from ..isa import COLUMNS, OPCODES
from .jsonslots import (  # noqa: F401  (re-exported: jsonio and tests use them via this module)
    C,
    S_RD, S_RS1, S_RS2, S_IMM, S_LEN, S_SIZE, S_OSEL, S_OVAL, S_FLAT_OVAL,
    C_IMM,
    FLAT_KEYS,
    F_SEND_RS1,
    F_TRUNC,
    ICOLS,
    NSLOTS,
    OP_LLDI,
    OP_LMV,
    OP_SEND,
    SLOT_KEYS,
    SLOT_MAP,
    ST_LLDI_IMM,
    ST_MISSING_OP,
    ST_OK,
    ST_RANGE,
    ST_UNKNOWN_OP,
    ST_UNSUPPORTED,
    _BARE_OPS,
    _POW10,
    _SELECT_OPS,
    _build_map,
    _foreign_key_end,
    _number,
    _skip_value,
    _string_end,
    _ws,
    apply_rows,
    apply_slots,
    apply_spans,
)


ST_MORE = 6  # (scan) needs bytes beyond ``n``: call again with more data (state kept)
ST_FULL = 7  # (scan) the output rows or segment table are full: grow them and call again

#: the IR row layout written by :func:`scan` (byte offsets into a row of ``np.dtype(COLUMNS)``)
ROW_DTYPE = np.dtype(COLUMNS)
ROW_SIZE = ROW_DTYPE.itemsize
OFF_OP = ROW_DTYPE.fields["op"][1]
OFF_IMM = ROW_DTYPE.fields["imm"][1]
assert ROW_DTYPE.fields["op"][0] == np.int16 and ROW_DTYPE.fields["imm"][0] == np.int64
assert all(ROW_DTYPE.fields[c][0] == np.int32 for c in ICOLS)


def _offset_map() -> np.ndarray:
    """OFFMAP[op, slot] = byte offset of the target field in an IR row, or -1 (ignored)."""
    m = np.full(SLOT_MAP.shape, -1, dtype=np.int64)
    for o in range(SLOT_MAP.shape[0]):
        for s in range(SLOT_MAP.shape[1]):
            t = SLOT_MAP[o, s]
            if t == C_IMM:
                m[o, s] = OFF_IMM
            elif t >= 0:
                m[o, s] = ROW_DTYPE.fields[ICOLS[t]][1]
    return m


OFFMAP = _offset_map()

_M64 = (1 << 64) - 1


def _pack(name: bytes) -> tuple[int, int, int]:
    """A name of at most 16 bytes as (first 8 bytes, next 8 bytes) little-endian, length."""
    return int.from_bytes(name[:8], "little"), int.from_bytes(name[8:16], "little"), len(name)


def _hash(lo: int, hi: int, ln: int, mult: int, bits: int) -> int:
    """Python twin of the kernel's :func:`_lookup` hash."""
    x = (lo ^ ((hi * 31) & _M64) ^ ln) & _M64
    return ((x * mult) & _M64) >> (64 - bits)


def _hash_table(names, bits: int):
    """A collision-free multiplicative hash over packed names: (table, lo, hi, len, mult)."""
    packed = [_pack(n.encode()) for n in names]
    mult = 0x9E3779B97F4A7C15
    for _ in range(100000):
        hs = [_hash(lo, hi, ln, mult, bits) for lo, hi, ln in packed]
        if len(set(hs)) == len(hs):
            break
        mult = (mult * 6364136223846793005 + 1442695040888963407) & _M64 | 1
    else:  # pragma: no cover
        raise RuntimeError("no collision-free hash multiplier")
    tab = np.full(1 << bits, -1, dtype=np.int64)
    for i, h in enumerate(hs):
        tab[h] = i
    lo = np.array([p[0] for p in packed], dtype=np.uint64)
    hi = np.array([p[1] for p in packed], dtype=np.uint64)
    ln = np.array([p[2] for p in packed], dtype=np.int64)
    return tab, lo, hi, ln, mult


#: instruction keys the scanner recognises: the flat numeric keys, then "op", "offset"
#: (0-13 = slots 0-13, 14 offset_select, 15 offset_value, 16 op, 17 offset)
_KEY_NAMES = list(SLOT_KEYS[:14]) + ["offset_select", "offset_value", "op", "offset"]
K_OSEL, K_OVAL, K_OP, K_OFFSET = 14, 15, 16, 17
KEY_HT, KEY_LO, KEY_HI, KEY_LN, _KEY_MULT = _hash_table(_KEY_NAMES, 7)
OP_HT, OP_LO, OP_HI, OP_LN, _OP_MULT = _hash_table(OPCODES, 8)
#: hash parameters: key multiplier, key shift, op multiplier, op shift
HASHP = np.array([_KEY_MULT, 64 - 7, _OP_MULT, 64 - 8], dtype=np.uint64)


def tables() -> tuple:
    """The constant tables :func:`scan` takes after its state arguments."""
    return (KEY_HT, KEY_LO, KEY_HI, KEY_LN, OP_HT, OP_LO, OP_HI, OP_LN, HASHP, OFFMAP, _POW10)


# scanner phases (state[0])
P_START, P_KEY_FIRST, P_KEY, P_ARR_FIRST, P_ELEM, P_NEXT, P_END = 0, 1, 2, 3, 4, 5, 6
#: state vector: phase, position, rows, segments, core id, first row, the open segment's
#: truncation count, first truncated index, send-rs1 count, and the rows of the span table
NSTATE = 10
#: span table (``spans``) columns: row (-1: an ignored top-level key), slot, start, end, and
#: whether the row already counts as truncated by its other numbers
SPAN_COLS = 5


@kernel(cache=True, nogil=True)
def scan(buf, n, final, state, out, segs, spans, info, key_ht, key_lo, key_hi, key_ln, op_ht, op_lo, op_hi, op_ln,
         hashp, offmap, pow10):
    """Tokenise a pimsim-nn program (``buf[:n]``) into packed IR rows, resumably.

    ``out`` is the flat byte view of a zero-filled structured array of :data:`ROW_DTYPE`;
    ``segs`` receives one row per core array: (core id, first row, end row, truncated count,
    first truncated index or -1, send-with-rs1 count).  ``spans`` (:data:`SPAN_COLS` columns)
    receives the byte spans the caller converts itself: numbers of mapped fields whose exact
    double is not cheap to compute (row, slot, start, end, row already truncated; the row's
    field is left 0 and its checks to :func:`.jsonslots.apply_spans`), including a send's
    ``rs1`` (only its non-zero-ness matters), and ignored top-level keys (row -1).
    ``state`` (:data:`NSTATE` int64, zero for a new scan) carries the position between calls:
    with ``final`` false, running out of bytes returns :data:`ST_MORE` and the next call (with
    the same or a grown buffer holding the same bytes) continues.  :data:`ST_FULL` asks for
    larger ``out``/``segs``/``spans`` (copy the filled part; ``spans`` needs
    ``NSLOTS + 1`` free rows) before calling again.  ``info`` receives [error position, rows, segments,
    config start, config end, error core, error index, error slot, error span start, error
    span end]; callers set it to -1 before the first call.

    The instruction-object path is written out in one loop (no helper calls, which cost
    reference counting and calls per token): keys and mnemonics are packed into 64-bit words
    while their closing quote is searched and looked up in collision-free hash tables;
    integers are converted inline (other numbers through :func:`_number`).
    """
    phase = state[0]
    p = state[1]
    row = state[2]
    nseg = state[3]
    core_id = state[4]
    first = state[5]
    ntr = state[6]
    ftr = state[7]
    nsend = state[8]
    nspan = state[9]
    cap = out.shape[0] // ROW_SIZE
    scap = spans.shape[0]
    kmult, kshift, omult, oshift = hashp[0], hashp[1], hashp[2], hashp[3]
    ival = np.zeros(17, dtype=np.int64)
    kind = np.zeros(17, dtype=np.int64)  # 0 exact, 1 truncated, 2 out of range, 3 convert later
    sp0 = np.zeros(17, dtype=np.int64)  # byte span of a kind-3 number
    sp1 = np.zeros(17, dtype=np.int64)
    status = ST_OK
    bad = -1  # a failure position: incomplete at the end of the data or not understood
    while True:
        if phase == P_ELEM:  # ---- one instruction object and its separator
            if row == cap or nspan + NSLOTS + 1 > scap:
                status = ST_FULL
                break
            q = p
            while q < n:
                c = buf[q]
                if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                    break
                q += 1
            if q >= n or buf[q] != 123:
                bad = q
                break
            obj = q
            present = 0
            op = -1
            nz1 = False
            code = 0  # 0 parsed, 1 not understood / incomplete at q
            nested = False  # inside the "offset" object
            ea = eb = 0
            q += 1
            while q < n:
                c = buf[q]
                if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                    break
                q += 1
            if q < n and buf[q] == 125:
                q += 1
            else:
                while True:
                    # -- key: packed while searching the closing quote
                    if q >= n or buf[q] != 34:
                        code = 1
                        break
                    ks = q + 1
                    r = ks
                    lo = np.uint64(0)
                    hi = np.uint64(0)
                    foreign = False  # a non-ASCII key: none of ours
                    while r < n:
                        c = buf[r]
                        if c == 34:
                            break
                        if c == 92 or c < 32 or c >= 128:
                            r = _foreign_key_end(buf, q, n)
                            foreign = True
                            if r < 0:
                                r = n
                            break
                        k = r - ks
                        if k < 8:
                            lo |= np.uint64(c) << np.uint64(8 * k)
                        elif k < 16:
                            hi |= np.uint64(c) << np.uint64(8 * k - 64)
                        r += 1
                    if r >= n:
                        code = 1
                        break
                    ln = r - ks
                    key = -1
                    if ln <= 16 and not foreign:
                        x = lo ^ (hi * np.uint64(31)) ^ np.uint64(ln)
                        key = key_ht[(x * kmult) >> kshift]
                        if key >= 0 and (key_lo[key] != lo or key_hi[key] != hi or key_ln[key] != ln):
                            key = -1
                    q = r + 1
                    while q < n:
                        c = buf[q]
                        if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                            break
                        q += 1
                    if q >= n or buf[q] != 58:
                        code = 1
                        break
                    q += 1
                    while q < n:
                        c = buf[q]
                        if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                            break
                        q += 1
                    # -- value
                    slot = -2  # -2: not a number; -1: a number that is ignored
                    if nested:
                        if key == K_OSEL or key == K_OVAL:
                            slot = key
                    elif key == K_OP:
                        if q >= n or buf[q] != 34:
                            code = 1
                            break
                        ks = q + 1
                        r = ks
                        lo = np.uint64(0)
                        while r < n:
                            c = buf[r]
                            if c == 34:
                                break
                            if c == 92 or c < 32 or c >= 128:
                                r = n
                                break
                            k = r - ks
                            if k < 8:
                                lo |= np.uint64(c) << np.uint64(8 * k)
                            r += 1
                        if r >= n:
                            code = 1
                            break
                        ln = r - ks
                        op = -1
                        if ln <= 8:
                            x = lo ^ np.uint64(ln)
                            op = op_ht[(x * omult) >> oshift]
                            if op >= 0 and (op_lo[op] != lo or op_ln[op] != ln):
                                op = -1
                        if op < 0:  # reported at the end of the object: a later "op" wins
                            op = -2
                            ea = ks
                            eb = r
                        q = r + 1
                    elif key == K_OFFSET:
                        if q >= n or buf[q] != 123:
                            code = 1
                            break
                        present &= ~(3 << 14)  # a repeated "offset" replaces the old one
                        q += 1
                        while q < n:
                            c = buf[q]
                            if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                                break
                            q += 1
                        if q < n and buf[q] == 125:
                            q += 1
                        else:
                            nested = True
                            continue
                    elif key >= 0:
                        slot = -1 if key == K_OSEL else (key if key < 14 else S_FLAT_OVAL)
                    if slot == -2:
                        if (nested or key < 0):
                            e = _skip_value(buf, q, n, pow10)
                            if e < 0:
                                code = 1
                                break
                            q = e
                    else:
                        # -- a number: integers inline, others through _number
                        e = q
                        neg = False
                        if e < n and buf[e] == 45:
                            neg = True
                            e += 1
                        if e >= n:
                            code = 1
                            break
                        c = buf[e]
                        if c < 48 or c > 57:
                            code = 1
                            break
                        m = np.int64(c) - 48
                        e += 1
                        long = False
                        if c == 48:
                            if e < n and buf[e] >= 48 and buf[e] <= 57:
                                code = 1  # leading zero
                                break
                        else:
                            while e < n:
                                c = buf[e]
                                if c < 48 or c > 57:
                                    break
                                if m > 100000000000000000:
                                    long = True
                                    break
                                m = m * 10 + (np.int64(c) - 48)
                                e += 1
                        kd = 0
                        if long or (e < n and (buf[e] == 46 or buf[e] == 101 or buf[e] == 69)):
                            v, e, exact = _number(buf, q, n, pow10)
                            if e < 0:
                                code = 1
                                break
                            if not exact:  # the caller converts the token (apply_spans)
                                kd = 3
                                t = np.int64(0)
                            elif not (v >= -2147483648.0 and v <= 4294967295.0):
                                kd = 2
                                t = np.int64(0)
                            else:
                                t = np.int64(v)
                                if float(t) != v:
                                    kd = 1
                            nz = v != 0.0
                        else:
                            # for integers the float range check of apply_slots is exact on the int
                            t = -m if neg else m
                            nz = m != 0
                            if t < -2147483648 or t > 4294967295:
                                kd = 2
                        if slot >= 0:
                            ival[slot] = t
                            kind[slot] = kd
                            sp0[slot] = q
                            sp1[slot] = e
                            present |= 1 << slot
                            if slot == S_RS1:
                                nz1 = nz
                        q = e
                    # -- separator(s): ',' → next key; '}' → end of the offset or of the object
                    sep = 2
                    while True:
                        while q < n:
                            c = buf[q]
                            if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                                break
                            q += 1
                        if q < n and buf[q] == 44:
                            q += 1
                            while q < n:
                                c = buf[q]
                                if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                                    break
                                q += 1
                            sep = 0
                        elif q < n and buf[q] == 125:
                            q += 1
                            if nested:
                                nested = False
                                continue
                            sep = 1
                        break
                    if sep == 0:
                        continue
                    if sep == 2:
                        code = 1
                    break
            if code == 1:
                bad = q
                break
            if op == -2:
                info[0] = ea - 1
                info[5] = core_id
                info[6] = row - first
                info[8] = ea
                info[9] = eb
                status = ST_UNKNOWN_OP
                break
            if op < 0:
                info[0] = obj
                info[5] = core_id
                info[6] = row - first
                status = ST_MISSING_OP
                break
            # -- the IR row (apply_slots on the converted values; the row is zero on entry and
            #    rewriting it after a retry gives the same bytes)
            base = row * ROW_SIZE
            fl = 0
            st = ST_OK
            es = -1
            s = 0
            pm = present
            ns = nspan
            if op == OP_SEND and (present >> S_RS1) & 1 and kind[S_RS1] == 3:
                spans[ns, 0] = row  # only whether it is 0 matters (a warning)
                spans[ns, 1] = S_RS1
                spans[ns, 2] = sp0[S_RS1]
                spans[ns, 3] = sp1[S_RS1]
                ns += 1
            while pm != 0:
                if pm & 1:
                    off = offmap[op, s]
                    if off >= 0 and not (s == S_SIZE and (op == OP_LLDI or op == OP_LMV) and (present >> S_LEN) & 1):
                        kd = kind[s]
                        if kd == 3:
                            spans[ns, 0] = row
                            spans[ns, 1] = s
                            spans[ns, 2] = sp0[s]
                            spans[ns, 3] = sp1[s]
                            ns += 1
                            kd = -1  # nothing written now
                        if kd == 2:
                            st = ST_LLDI_IMM if op == OP_LLDI and off == OFF_IMM else ST_RANGE
                            es = s
                            break
                        if kd == 1:
                            fl |= 1
                        t = ival[s]
                        b = base + off
                        if kd < 0:
                            pass
                        elif off == OFF_IMM:
                            if op == OP_LLDI:
                                if t < -128 or t > 255:
                                    st = ST_LLDI_IMM
                                    es = s
                                    break
                                t &= 255
                            for j in range(8):
                                out[b + j] = (t >> (8 * j)) & 255
                        else:
                            if t > 2147483647:
                                st = ST_RANGE
                                es = s
                                break
                            out[b] = t & 255
                            out[b + 1] = (t >> 8) & 255
                            out[b + 2] = (t >> 16) & 255
                            out[b + 3] = (t >> 24) & 255
                pm >>= 1
                s += 1
            if st != ST_OK:
                nspan = ns  # the caller sees this row's deferred numbers too
                info[0] = obj
                info[5] = core_id
                info[6] = row - first
                info[7] = es
                status = st
                break
            if op == OP_SEND and (present >> S_RS1) & 1 and nz1:
                fl |= 2
            out[base + OFF_OP] = op & 255
            out[base + OFF_OP + 1] = (op >> 8) & 255
            # -- the array separator, then commit the row
            while q < n:
                c = buf[q]
                if c > 32 or not (c == 32 or c == 10 or c == 13 or c == 9):
                    break
                q += 1
            if q >= n:
                bad = q
                break
            c = buf[q]
            if c != 44 and c != 93:
                bad = q
                break
            if fl & 1:
                if ntr == 0:
                    ftr = row - first
                ntr += 1
            if fl & 2:
                nsend += 1
            for j in range(nspan, ns):
                spans[j, 4] = fl & 1
            nspan = ns
            row += 1
            p = q + 1
            if c == 93:
                phase = P_NEXT
                segs[nseg, 0] = core_id
                segs[nseg, 1] = first
                segs[nseg, 2] = row
                segs[nseg, 3] = ntr
                segs[nseg, 4] = ftr
                segs[nseg, 5] = nsend
                nseg += 1
        elif phase == P_NEXT:  # ---- after a top-level value
            q = _ws(buf, p, n)
            if q < n and buf[q] == 44:
                p = q + 1
                phase = P_KEY
            elif q < n and buf[q] == 125:
                p = q + 1
                phase = P_END
            else:
                bad = q
                break
        elif phase == P_KEY or phase == P_KEY_FIRST:  # ---- a top-level key and its value's start
            q = _ws(buf, p, n)
            if phase == P_KEY_FIRST and q < n and buf[q] == 125:
                p = q + 1
                phase = P_END
                continue
            if q >= n or buf[q] != 34:
                bad = q
                break
            e = _string_end(buf, q, n)
            if e < 0:
                e = _foreign_key_end(buf, q, n)  # an unknown key (or -1: left to orjson)
            if e < 0:
                bad = q
                break
            ks, ke = q + 1, e
            q = _ws(buf, e + 1, n)
            if q >= n or buf[q] != 58:
                bad = q
                break
            q = _ws(buf, q + 1, n)
            is_config = ke - ks == 6 and buf[ks] == 99 and buf[ks + 1] == 111 and buf[ks + 2] == 110 \
                and buf[ks + 3] == 102 and buf[ks + 4] == 105 and buf[ks + 5] == 103
            cid = -1
            if not is_config and 5 <= ke - ks <= 13 and buf[ks] == 99 and buf[ks + 1] == 111 \
                    and buf[ks + 2] == 114 and buf[ks + 3] == 101:
                cid = 0
                for j in range(ks + 4, ke):
                    d = buf[j]
                    if d < 48 or d > 57:
                        cid = -1
                        break
                    cid = cid * 10 + (d - 48)
            if is_config:
                e = _skip_value(buf, q, n, pow10)
                if e < 0 or (e >= n and not final):  # a number may continue in the next bytes
                    bad = q
                    break
                info[3] = q
                info[4] = e
                p = e
                phase = P_NEXT
            elif cid >= 0:
                if q >= n or buf[q] != 91:
                    bad = q
                    break
                if nseg == segs.shape[0]:
                    status = ST_FULL
                    break
                core_id = cid
                first = row
                ntr = 0
                ftr = -1
                nsend = 0
                p = q + 1
                phase = P_ARR_FIRST
            else:  # an unknown top-level key: skipped, listed in a warning
                if nspan == scap:
                    status = ST_FULL
                    break
                e = _skip_value(buf, q, n, pow10)
                if e < 0 or (e >= n and not final):
                    bad = q
                    break
                spans[nspan, 0] = -1
                spans[nspan, 1] = -1
                spans[nspan, 2] = ks
                spans[nspan, 3] = ke
                spans[nspan, 4] = 0
                nspan += 1
                p = e
                phase = P_NEXT
        elif phase == P_ARR_FIRST:  # ---- just after a core's '['
            q = _ws(buf, p, n)
            if q < n and buf[q] == 93:
                p = q + 1
                phase = P_NEXT
                segs[nseg, 0] = core_id
                segs[nseg, 1] = first
                segs[nseg, 2] = row
                segs[nseg, 3] = 0
                segs[nseg, 4] = -1
                segs[nseg, 5] = 0
                nseg += 1
            elif q < n:
                phase = P_ELEM
            else:
                bad = q
                break
        elif phase == P_START:
            q = _ws(buf, p, n)
            if q < n and buf[q] == 123:
                p = q + 1
                phase = P_KEY_FIRST
            else:
                bad = q
                break
        else:  # P_END: only whitespace may follow
            q = _ws(buf, p, n)
            if q == n and final:
                p = q
                status = ST_OK
                break
            bad = q
            break
    if bad >= 0:
        if final:
            info[0] = bad
            status = ST_UNSUPPORTED
        else:
            status = ST_MORE
    state[0] = phase
    state[1] = p
    state[2] = row
    state[3] = nseg
    state[4] = core_id
    state[5] = first
    state[6] = ntr
    state[7] = ftr
    state[8] = nsend
    state[9] = nspan
    info[1] = row
    info[2] = nseg
    return status
