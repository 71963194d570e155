"""Numba scanner for PIM assembly text (spec §4): canonical lines straight into IR rows.

:func:`scan` walks the UTF-8 bytes of an assembly text once and writes every instruction into
the rows of one structured array of the IR dtype (little-endian byte stores, like
:mod:`.jsonscan`).  It understands the text the disassembler writes and the usual hand-written
variations of it: the directives ``.mode .encoding .odd_pairs .chip_cores .core .group
.act_frac .config_extra .nocode``, ``#``/``;`` comments, blank lines, LF/CRLF/CR line ends, spaces and tabs anywhere
between tokens, mnemonics and directives in any case, registers ``$rN``/``$RN``/``$N``, decimal
and ``0x`` integers with an optional sign, and ``ofs(rd|rs1|rs2 or 0-7, value)``.

It checks every value against the field ranges of the current encoding mode exactly as
:meth:`.text.PimAssembler.finish` does.  Anything else — labels, other integer forms, non-ASCII
outside comments, unusual line breaks, a directive in the wrong place, a value out of range, a
malformed operand — makes it return :data:`ST_BAIL` and the caller runs the Python assembler on
the whole text, which is the authority for results and for error messages (file:line:column).
``info[I_BAIL_LINE]`` then holds the 1-based line that stopped the scanner.

``.group`` and ``.act_frac`` are only recorded (core, a, b) in ``dirs``, ``.config_extra`` as the
byte span of its JSON argument; the caller replays them (group ids in order, JSON parsing, ...)
and falls back on any inconsistency.
"""

from __future__ import annotations

import numpy as np
from ....core.native import kernel

from ..isa import OPCODES, build_isa
from ..program import DTYPE
from .textplans import kind_code, operand_plans

ST_OK, ST_BAIL, ST_FULL = 0, 1, 2

# info vector
I_ROWS, I_SEGS, I_DIRS, I_WORD, I_EXT, I_ODD, I_CHIP_SET, I_CHIP, I_BAIL_LINE, I_BAIL_POS = range(10)
NINFO = 10

# operand kinds
K_REG, K_INT, K_BYTE, K_OFS = 0, 1, 2, 3
MAXOPS, MAXSLOTS = 5, 6

#: directive names, in the order of the kernel's ``d`` codes
DIRECTIVES = (".mode", ".encoding", ".odd_pairs", ".chip_cores", ".core", ".group", ".act_frac", ".config_extra",
              ".nocode")
D_MODE, D_ENC, D_ODD, D_CHIP, D_CORE, D_GROUP, D_ACT, D_CFG, D_NOCODE = range(9)
DIR_GROUP, DIR_ACT, DIR_CFG, DIR_NOCODE = 0, 1, 2, 3  # record kinds in ``dirs``

assert DTYPE.fields["op"][0] == np.int16 and DTYPE.fields["imm"][0] == np.int64
ROW_SIZE = DTYPE.itemsize


def _pack(name: str) -> int:
    x = 0
    for k, ch in enumerate(name.encode("ascii")):
        x |= ch << (7 * k)
    return x


STRICT = _pack("strict")
EXTENDED = _pack("extended")


def _modulus(keys: list[int]) -> int:
    m = len(keys)
    while len({k % m for k in keys}) != len(keys):
        m += 1
    return m


def _build_tables() -> tuple:
    plans = operand_plans()
    nop = len(OPCODES)
    names = [_pack(m) for m in OPCODES]
    mod = _modulus(names)
    ht = np.full(mod, -1, dtype=np.int64)
    for code, key in enumerate(names):
        ht[key % mod] = code
    mn_key = np.array(names, dtype=np.int64)
    nk = np.zeros(nop, dtype=np.int64)
    req = np.zeros(nop, dtype=np.int64)
    kind = np.zeros((nop, MAXOPS), dtype=np.int64)
    slot0 = np.zeros((nop, MAXOPS), dtype=np.int64)
    nslot = np.zeros(nop, dtype=np.int64)
    soff = np.zeros((nop, MAXSLOTS), dtype=np.int64)
    s8 = np.zeros((nop, MAXSLOTS), dtype=np.int64)
    lo = np.zeros((8, nop, MAXSLOTS), dtype=np.int64)
    hi = np.zeros((8, nop, MAXSLOTS), dtype=np.int64)
    mul = np.ones((8, nop, MAXSLOTS), dtype=np.int64)
    kmap = {"r": K_REG, "i": K_INT, "b": K_BYTE, "o": K_OFS}
    isa64 = build_isa(64, True)
    for mnem, (code, kinds, cols, required) in plans.items():
        spec = isa64.spec(code)
        nk[code], req[code], nslot[code] = len(kinds), required, len(cols)
        s = 0
        for i, o in enumerate(spec.operands):
            assert kmap[kind_code(o.kind)] == kmap[kinds[i]]
            kind[code, i] = kmap[kinds[i]]
            slot0[code, i] = s
            s += len(o.columns)
        assert s == len(cols)
        for j, c in enumerate(cols):
            soff[code, j] = DTYPE.fields[c][1]
            s8[code, j] = DTYPE.fields[c][0].itemsize == 8
            assert DTYPE.fields[c][0].itemsize in (4, 8)
    for m in range(8):
        isa = build_isa(64 if m & 4 else 32, bool(m & 2), odd_pairs=bool(m & 1))
        for mnem, (code, kinds, cols, required) in plans.items():
            fields = {f.name: f for f in isa.spec(code).format.fields}
            for j, c in enumerate(cols):
                f = fields.get(c)
                if f is not None:  # no field: the value must be 0 (lo = hi = 0)
                    lo[m, code, j], hi[m, code, j] = f.value_range
                    mul[m, code, j] = f.multiple_of
    dn = np.zeros((len(DIRECTIVES), 16), dtype=np.uint8)
    dl = np.zeros(len(DIRECTIVES), dtype=np.int64)
    for i, d in enumerate(DIRECTIVES):
        dn[i, :len(d)] = np.frombuffer(d.encode(), dtype=np.uint8)
        dl[i] = len(d)
    return (ht, mn_key, nk, req, kind, slot0, nslot, soff, s8, lo, hi, mul, dn, dl)


_TABLES: tuple | None = None


def tables() -> tuple:
    """The constant tables :func:`scan` takes after its output arguments."""
    global _TABLES
    if _TABLES is None:
        _TABLES = _build_tables()
    return _TABLES


@kernel(cache=True, nogil=True, inline="always")
def _ws(buf, p, e):
    while p < e and (buf[p] == 32 or buf[p] == 9):
        p += 1
    return p


@kernel(cache=True, nogil=True)
def _int(buf, p, e):
    """Decimal or 0x integer with optional sign at p: (ok, value, end)."""
    neg = False
    if p < e and (buf[p] == 45 or buf[p] == 43):
        neg = buf[p] == 45
        p += 1
    v = 0
    nd = 0
    if p + 1 < e and buf[p] == 48 and (buf[p + 1] | 32) == 120:
        p += 2
        while p < e:
            c = buf[p]
            if 48 <= c <= 57:
                d = c - 48
            elif 97 <= (c | 32) <= 102:
                d = (c | 32) - 87
            else:
                break
            v = v * 16 + d
            nd += 1
            p += 1
        if nd == 0 or nd > 15:
            return False, 0, p
    else:
        while p < e:
            c = buf[p]
            if not 48 <= c <= 57:
                break
            v = v * 10 + (c - 48)
            nd += 1
            p += 1
        if nd == 0 or nd > 18:
            return False, 0, p
    return True, (-v if neg else v), p


@kernel(cache=True, nogil=True)
def _int_args(buf, p, e, vals, n):
    """Exactly ``n`` comma-separated integers filling [p, e) (``_ints`` of the assembler)."""
    for i in range(n):
        p = _ws(buf, p, e)
        ok, v, p = _int(buf, p, e)
        if not ok:
            return False
        vals[i] = v
        p = _ws(buf, p, e)
        if i < n - 1:
            if p >= e or buf[p] != 44:
                return False
            p += 1
    return p == e


@kernel(cache=True, nogil=True)
def _put(out, at, v, nbytes):
    for k in range(nbytes):
        out[at + k] = (v >> (8 * k)) & 255


@kernel(cache=True, nogil=True)
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@kernel(cache=True, nogil=True)
def _ofs_name(buf, p, e):
    """One mask name at p (optional ``$`` prefixes): (bit or -1, end)."""
    while p < e and buf[p] == 36:
        p += 1
    s = p
    while p < e and (48 <= buf[p] <= 57 or 97 <= (buf[p] | 32) <= 122 or buf[p] == 95):
        p += 1
    ln = p - s
    if ln == 2 and _lower(buf[s]) == 114 and _lower(buf[s + 1]) == 100:
        return 0, p
    if ln == 3 and _lower(buf[s]) == 114 and _lower(buf[s + 1]) == 115:
        if buf[s + 2] == 49:
            return 1, p
        if buf[s + 2] == 50:
            return 2, p
    return -1, p


@kernel(cache=True, nogil=True)
def scan(buf, out, segs, dirs, info, ht, mn_key, nk, req, kind, slot0, nslot, soff, s8, lo, hi, mul, dn, dl):
    """Assemble ``buf`` into ``out`` (uint8 view of IR rows); returns ST_OK/ST_BAIL/ST_FULL."""
    n = buf.shape[0]
    rowsize = ROW_SIZE
    cap = out.shape[0] // rowsize
    nrows = 0
    nsegs = 0
    ndirs = 0
    word64 = 1
    ext = 0
    odd = 0
    core = -1
    mod = ht.shape[0]
    vals = np.zeros(MAXSLOTS, dtype=np.int64)
    iv = np.zeros(2, dtype=np.int64)
    info[I_CHIP_SET] = 0
    pos = 0
    line = 0
    st = ST_OK
    while pos < n:
        line += 1
        # -- the line's extent and the start of its comment; reject bytes the scanner can't judge
        q = pos
        be = -1
        bad = False
        while q < n:
            c = buf[q]
            if c == 10 or c == 13:
                break
            if be < 0:
                if c == 35 or c == 59:
                    be = q
                elif c != 9 and not 32 <= c <= 126:
                    bad = True
                    break
            else:  # in a comment: only the other line breaks of str.splitlines() matter
                if c == 11 or c == 12 or 28 <= c <= 30:
                    bad = True
                    break
                if c == 0xC2 and q + 1 < n and buf[q + 1] == 0x85:
                    bad = True
                    break
                if c == 0xE2 and q + 2 < n and buf[q + 1] == 0x80 and (buf[q + 2] == 0xA8 or buf[q + 2] == 0xA9):
                    bad = True
                    break
            q += 1
        if bad:
            st = ST_BAIL
            break
        if be < 0:
            be = q
        if q < n:
            q += 2 if (buf[q] == 13 and q + 1 < n and buf[q + 1] == 10) else 1
        nxt = q
        p = _ws(buf, pos, be)
        pos = nxt
        if p == be:
            continue
        hs = p
        while p < be and buf[p] != 32 and buf[p] != 9:
            p += 1
        he = p
        p = _ws(buf, p, be)
        if buf[hs] == 46:  # -- directive
            d = -1
            for i in range(dl.shape[0]):
                if dl[i] == he - hs:
                    same = True
                    for k in range(he - hs):
                        if _lower(buf[hs + k]) != dn[i, k]:
                            same = False
                            break
                    if same:
                        d = i
                        break
            if d == D_MODE or d == D_ENC or d == D_ODD:
                if nrows:
                    st = ST_BAIL
                    break
                if d == D_ODD:
                    if p != be:
                        st = ST_BAIL
                        break
                    odd = 1
                    continue
                a = p
                while p < be and buf[p] != 32 and buf[p] != 9:
                    p += 1
                ln = p - a
                if _ws(buf, p, be) != be:
                    st = ST_BAIL
                    break
                if d == D_MODE:
                    if ln == 2 and buf[a] == 54 and buf[a + 1] == 52:
                        word64 = 1
                    elif ln == 2 and buf[a] == 51 and buf[a + 1] == 50:
                        word64 = 0
                    else:
                        st = ST_BAIL
                        break
                else:
                    w = 0
                    for k in range(min(ln, 8)):
                        w |= _lower(buf[a + k]) << (7 * k)
                    if ln == 6 and w == STRICT:
                        ext = 0
                    elif ln == 8 and w == EXTENDED:
                        ext = 1
                    else:
                        st = ST_BAIL
                        break
            elif d == D_CORE or d == D_CHIP:
                if not _int_args(buf, p, be, iv, 1):
                    st = ST_BAIL
                    break
                v = iv[0]
                if d == D_CHIP:
                    if v < 0:
                        st = ST_BAIL
                        break
                    info[I_CHIP_SET] = 1
                    info[I_CHIP] = v
                else:
                    if not 0 <= v < 2147483648:
                        st = ST_BAIL
                        break
                    if nsegs >= segs.shape[0]:
                        st = ST_FULL
                        break
                    core = v
                    segs[nsegs, 0] = v
                    segs[nsegs, 1] = nrows
                    nsegs += 1
            elif d == D_GROUP or d == D_ACT:
                if not _int_args(buf, p, be, iv, 2) or core < 0:
                    st = ST_BAIL
                    break
                if ndirs >= dirs.shape[0]:
                    st = ST_FULL
                    break
                dirs[ndirs, 0] = DIR_GROUP if d == D_GROUP else DIR_ACT
                dirs[ndirs, 1] = core
                dirs[ndirs, 2] = iv[0]
                dirs[ndirs, 3] = iv[1]
                ndirs += 1
            elif d == D_NOCODE:  # recorded; the caller checks the core got no instruction
                if p != be or core < 0:
                    st = ST_BAIL
                    break
                if ndirs >= dirs.shape[0]:
                    st = ST_FULL
                    break
                dirs[ndirs, 0] = DIR_NOCODE
                dirs[ndirs, 1] = core
                ndirs += 1
            elif d == D_CFG:  # the JSON argument's span; the caller parses it
                if ndirs >= dirs.shape[0]:
                    st = ST_FULL
                    break
                e = be
                while e > p and (buf[e - 1] == 32 or buf[e - 1] == 9):
                    e -= 1
                dirs[ndirs, 0] = DIR_CFG
                dirs[ndirs, 1] = core
                dirs[ndirs, 2] = p
                dirs[ndirs, 3] = e
                ndirs += 1
            else:
                st = ST_BAIL
                break
            continue
        # -- instruction
        if core < 0 or he - hs > 8 or nrows >= cap:
            st = ST_BAIL if nrows < cap else ST_FULL
            break
        key = 0
        for k in range(he - hs):
            key |= _lower(buf[hs + k]) << (7 * k)
        op = ht[key % mod]
        if op < 0 or mn_key[op] != key:
            st = ST_BAIL
            break
        nops = nk[op]
        for j in range(MAXSLOTS):
            vals[j] = 0
        ntok = 0
        ok = True
        if p < be:
            while True:
                if ntok >= nops:
                    ok = False
                    break
                kd = kind[op, ntok]
                s = slot0[op, ntok]
                if kd == K_REG:
                    if p >= be or buf[p] != 36:
                        ok = False
                        break
                    p += 1
                    if p < be and (buf[p] | 32) == 114:
                        p += 1
                    v = 0
                    nd = 0
                    while p < be and 48 <= buf[p] <= 57:
                        v = v * 10 + (buf[p] - 48)
                        nd += 1
                        p += 1
                    if nd == 0 or nd > 9 or v > 31:
                        ok = False
                        break
                    vals[s] = v
                elif kd == K_OFS:
                    if p + 4 > be or (buf[p] | 32) != 111 or (buf[p + 1] | 32) != 102 or \
                            (buf[p + 2] | 32) != 115 or buf[p + 3] != 40:
                        ok = False
                        break
                    p = _ws(buf, p + 4, be)
                    if p < be and (48 <= buf[p] <= 57 or buf[p] == 45 or buf[p] == 43):
                        good, mask, p = _int(buf, p, be)
                        if not good or not 0 <= mask <= 7:
                            ok = False
                            break
                        p = _ws(buf, p, be)
                    else:
                        mask = 0
                        while True:
                            bit, p = _ofs_name(buf, p, be)
                            if bit < 0:
                                break
                            mask |= 1 << bit
                            p = _ws(buf, p, be)
                            if p < be and buf[p] == 124:
                                p = _ws(buf, p + 1, be)
                                continue
                            break
                        if bit < 0:
                            ok = False
                            break
                    if p >= be or buf[p] != 44:
                        ok = False
                        break
                    p = _ws(buf, p + 1, be)
                    good, v, p = _int(buf, p, be)
                    if not good:
                        ok = False
                        break
                    p = _ws(buf, p, be)
                    if p >= be or buf[p] != 41:
                        ok = False
                        break
                    p += 1
                    vals[s] = mask
                    vals[s + 1] = v
                else:
                    good, v, p = _int(buf, p, be)
                    if not good:
                        ok = False
                        break
                    if kd == K_BYTE:
                        if not -128 <= v <= 255:
                            ok = False
                            break
                        v &= 255
                    vals[s] = v
                ntok += 1
                p = _ws(buf, p, be)
                if p == be:
                    break
                if buf[p] != 44:
                    ok = False
                    break
                p = _ws(buf, p + 1, be)
        if not ok or ntok < req[op]:
            st = ST_BAIL
            break
        # -- ranges of the current mode (as PimAssembler.finish), then the row
        m = word64 * 4 + ext * 2 + odd
        base = nrows * rowsize
        for j in range(nslot[op]):
            v = vals[j]
            if v < lo[m, op, j] or v > hi[m, op, j] or v % mul[m, op, j] != 0:
                ok = False
                break
            _put(out, base + soff[op, j], v, 8 if s8[op, j] else 4)
        if not ok:
            st = ST_BAIL
            break
        out[base] = op & 255
        out[base + 1] = (op >> 8) & 255
        nrows += 1
    info[I_ROWS] = nrows
    info[I_SEGS] = nsegs
    info[I_DIRS] = ndirs
    info[I_WORD] = 64 if word64 else 32
    info[I_EXT] = ext
    info[I_ODD] = odd
    info[I_BAIL_LINE] = line if st != ST_OK else 0
    info[I_BAIL_POS] = pos
    return st
