"""Per-core instruction emission with register tracking, offsets and chunking.

Register convention (every core):

====== ==============================================================
r0, r2 always 0: the high words of the global-address pairs (D6)
r1     low word of the global *source* address (ld)
r3     low word of the global *destination* address (st)
r4     scalar bound of vrsl / vrsu
r5     element stride of vavg
r6     destination of mvmul (unless the destination is in the address cache)
r7–r31 cache of local addresses (least recently used is replaced)
====== ==============================================================

Addresses already in a register are reused; otherwise the emitter prefers an ``offset`` on a
register that holds a nearby value (ld/st/lmv/lldi and chunks of long vector instructions), so
most instructions need no address set-up at all (spec §11.3 item 4).  Long operations are split
into chunks that fit the 11-bit ``len`` field (2047 elements or bytes).
"""

from __future__ import annotations

import bisect
from bisect import bisect_left
import struct
from collections import OrderedDict
from operator import itemgetter

import numpy as np

from ..isa import OPCODE
from ..program import DTYPE

MAXLEN = 2047          # 11-bit len/size field
_OFS_LIMIT = 1 << 27   # keep offsets well inside the signed 29-bit field
_POOL = tuple(range(7, 32))
_NPOOL = len(_POOL)

_SLDI, _SADDI, _SETBW, _MVMUL = OPCODE["sldi"], OPCODE["saddi"], OPCODE["setbw"], OPCODE["mvmul"]
_LD, _ST, _LLDI, _LMV = OPCODE["ld"], OPCODE["st"], OPCODE["lldi"], OPCODE["lmv"]
_SEND, _RECV, _WAIT, _SYNC = OPCODE["send"], OPCODE["recv"], OPCODE["wait"], OPCODE["sync"]
_VAVG = OPCODE["vavg"]


def lean_packer(*names: str):
    """``pack`` of a record where only the fields ``names`` (in ``COLUMNS`` order) are given
    and every other field is 0 (zero pad bytes): fewer arguments to parse on the hot paths.
    ``lean_packer("op", "rd", "imm")(op, rd, imm) == pack_row(op, rd, 0, 0, 0, imm, 0, ...)``."""
    codes = {1: "b", 2: "h", 4: "i", 8: "q"}
    order = list(DTYPE.names)
    assert [n for n in order if n in names] == list(names), "fields out of COLUMNS order"
    fmt = "=" + "".join(codes[DTYPE.fields[n][0].itemsize] if n in names else f"{DTYPE.fields[n][0].itemsize}x"
                        for n in order)
    st = struct.Struct(fmt)
    # (native order, standard sizes, no padding: byte-identical to a DTYPE record)
    assert st.size == DTYPE.itemsize and all(DTYPE.fields[n][0].kind == "i" for n in DTYPE.names)
    return st.pack


#: one instruction row as its ``DTYPE`` record bytes: ``pack_row(op, rd, ..., ofs_val)`` (the
#: ``COLUMNS`` order).  The emitters keep records, not tuples: half the memory, and the program
#: array is their concatenation (:func:`records_to_array`).  A value out of its field's range
#: raises ``struct.error`` (``compile_model`` reports it as an :class:`EncodeError`).
pack_row = lean_packer(*DTYPE.names)
#: the hot row kinds' packers (the fields not named are 0)
pack_sldi = lean_packer("op", "rd", "imm")
pack_lmv = lean_packer("op", "rd", "rs1", "len", "ofs_sel", "ofs_val")
pack_vec = lean_packer("op", "rd", "rs1", "rs2", "len", "ofs_sel", "ofs_val")
pack_mvmul = lean_packer("op", "rd", "rs1", "mbiw", "group")
pack_setbw = lean_packer("op", "ibiw", "obiw")
pack_msg = lean_packer("op", "rd", "rs1", "len", "core", "ofs_val")      # send / recv

#: byte offsets of the fields the cost model reads from a record
REC_LEN = DTYPE.fields["len"][1]
REC_IBIW, REC_OBIW = DTYPE.fields["ibiw"][1], DTYPE.fields["obiw"][1]


def records_to_array(records: list[bytes]) -> np.ndarray:
    """Instruction records (:func:`pack_row`) → a writable ``DTYPE`` array (one join, no copy)."""
    if not records:
        return np.zeros(0, DTYPE)
    return np.frombuffer(bytearray().join(records), dtype=DTYPE)


class LmemArena:
    """Bump allocator of one core's local memory; ``reset`` frees everything (reuse per layer)."""

    def __init__(self, size: int):
        self.size = size
        self.base = 0     # bytes below ``base`` are reserved (element mode: the token byte)
        self.top = 0
        self.peak = 0

    def alloc(self, nbytes: int, align: int = 4) -> int:
        a = -(-self.top // align) * align
        self.top = a + nbytes
        self.peak = max(self.peak, self.top)
        return a

    def reset(self) -> None:
        self.top = self.base


class CoreEmitter:
    """Instruction rows of one core (records of :func:`pack_row`, in program order)."""

    def __init__(self, cid: int, lmem_size: int):
        self.cid = cid
        self.rows: list[bytes] = []
        self.reg = [0] * 32            # every register value is known (all start at 0)
        self.cache: OrderedDict[int, int] = OrderedDict()   # value -> register (LRU order)
        self.owner: dict[int, int] = {}                      # register -> cached value
        self._sorted: list[int] = []                         # the cached values, ascending
        self.widths: tuple[int, int] | None = None
        self.arena = LmemArena(lmem_size)
        # transient buffers (a task's patch/partial sums/outputs): the same arena in the
        # layer-major schedules; a separate one, reset before every task, when the element
        # schedule interleaves layers on a core (then ``arena`` holds only per-unit state)
        self.tarena = self.arena
        self.per_task = False
        self.groups: dict[object, int] = {}                  # AG key -> group id (first use order)
        self.group_xbars: list[int] = []
        # element schedule: position (in ``rows``) just after the last send/recv, and token
        # sends inserted at earlier positions: (position, sequence, row)
        self.msg_pos = 0
        self.inserts: list[tuple[int, int, bytes]] = []
        # streams: image → end (exclusive) of the last row of that image's work on this core
        self.marks: dict[int, int] = {}
        # per-layer figures: (first row, layer index) wherever the owning layer changes
        self.layer_starts: list[tuple[int, int]] = []

    def set_layer(self, li: int) -> None:
        """The rows emitted from now on belong to layer ``li`` (-1: to no layer)."""
        starts, pc = self.layer_starts, len(self.rows)
        if starts and starts[-1][1] == li:
            return
        if starts and starts[-1][0] == pc:
            starts.pop()
            if starts and starts[-1][1] == li:
                return
        starts.append((pc, li))

    def mark(self, image: int) -> None:
        """Record that the rows emitted so far include all of ``image``'s work on this core."""
        self.marks[image] = len(self.rows)

    # ------------------------------------------------------------------ scalar / registers
    def _set(self, r: int, value: int) -> None:
        if self.reg[r] != value:
            self.rows.append(pack_sldi(_SLDI, r, value))
            self.reg[r] = value

    def lreg(self, value: int) -> int:
        """A register holding local address ``value`` (cached; sldi on a miss)."""
        cache = self.cache
        r = cache.get(value)
        if r is not None:
            cache.move_to_end(value)
            return r
        owner = self.owner
        if len(owner) < _NPOOL:
            r = _POOL[len(owner)]
        else:
            old, r = cache.popitem(last=False)
            srt = self._sorted
            del srt[bisect.bisect_left(srt, old)]
        owner[r] = value
        cache[value] = r
        bisect.insort(self._sorted, value)
        if self.reg[r] != value:    # _set, inlined (hot)
            self.rows.append(pack_sldi(_SLDI, r, value))
            self.reg[r] = value
        return r

    def near(self, value: int) -> tuple[int, int]:
        """(register, offset) with reg + offset == value, preferring a cached nearby register."""
        cache = self.cache
        r = cache.get(value)
        if r is not None:
            cache.move_to_end(value)
            return r, 0
        return self._near_miss(value)

    def _near_miss(self, value: int) -> tuple[int, int]:
        """:meth:`near` after a cache miss: the nearest cached value within the offset limit (a
        sorted copy of the cache keys: two neighbours to compare; ``value`` is not cached, so the
        lower one is below it and the upper one above it; on a tie the lower one wins), else a new
        register."""
        cache, srt = self.cache, self._sorted
        i = bisect.bisect_left(srt, value)
        best = None
        if i > 0:
            d = value - srt[i - 1]
            if d < _OFS_LIMIT:
                best = srt[i - 1]
                bd = d
        if i < len(srt):
            d = srt[i] - value
            if d < _OFS_LIMIT and (best is None or d < bd):
                best = srt[i]
        if best is not None:
            cache.move_to_end(best)
            return cache[best], value - best
        return self.lreg(value), 0

    def _gbase(self, r: int, addr: int) -> int:
        d = addr - self.reg[r]
        if not -_OFS_LIMIT < d < _OFS_LIMIT:
            self._set(r, addr)
            d = 0
        return d

    def setbw(self, ibiw: int, obiw: int) -> None:
        if self.widths != (ibiw, obiw):
            self.rows.append(pack_setbw(_SETBW, ibiw, obiw))
            self.widths = (ibiw, obiw)

    def bound(self, value: int) -> int:
        self._set(4, value)
        return 4

    # ------------------------------------------------------------------ transfers
    def ld(self, laddr: int, gaddr: int, size: int) -> None:
        """LMem[laddr, +size) ← GMem[gaddr, +size) (chunked)."""
        done = 0
        while done < size:
            n = min(MAXLEN, size - done)
            lr, lo = self.near(laddr + done)
            go = self._gbase(1, gaddr + done)
            if lo == 0:
                self.rows.append(pack_row(_LD, lr, 0, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, go))
            elif lo == go:
                self.rows.append(pack_row(_LD, lr, 0, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, go))
            else:
                lr = self.lreg(laddr + done)
                self.rows.append(pack_row(_LD, lr, 0, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, go))
            done += n

    def ld_rep(self, laddr: int, gaddr: int, unit: int, size: int) -> None:
        """LMem[laddr, +size) ← the ``unit`` bytes at GMem[gaddr] repeated: one ``ld``, then
        local doubling with ``lmv`` (global memory is the shared bottleneck)."""
        self.ld(laddr, gaddr, min(unit, size))
        have = min(unit, size)
        while have < size:
            k = min(have, size - have)
            self.lmv(laddr + have, laddr, k)
            have += k

    def st(self, gaddr: int, laddr: int, size: int) -> None:
        """GMem[gaddr, +size) ← LMem[laddr, +size) (chunked)."""
        done = 0
        while done < size:
            n = min(MAXLEN, size - done)
            lr, lo = self.near(laddr + done)
            go = self._gbase(3, gaddr + done)
            if lo == 0:
                self.rows.append(pack_row(_ST, 2, lr, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, go))
            elif lo == go:
                self.rows.append(pack_row(_ST, 2, lr, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, go))
            else:
                lr = self.lreg(laddr + done)
                self.rows.append(pack_row(_ST, 2, lr, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, go))
            done += n

    def lldi(self, laddr: int, byte: int, size: int) -> None:
        done = 0
        while done < size:
            n = min(MAXLEN, size - done)
            r, o = self.near(laddr + done)
            self.rows.append(pack_row(_LLDI, r, 0, 0, n, byte, 0, 0, 0, 0, 0, 0, 0, 0, 0, o))
            done += n

    def lmv(self, dst: int, src: int, size: int) -> None:
        if size <= MAXLEN:      # one chunk (the common case: a patch segment)
            if size > 0:
                rs, o = self.near(src)
                rd = self.lreg(dst)
                self.rows.append(pack_lmv(_LMV, rd, rs, size, 2 if o else 0, o))
            return
        done = 0
        while done < size:
            n = min(MAXLEN, size - done)
            rs, o = self.near(src + done)
            rd = self.lreg(dst + done)
            self.rows.append(pack_lmv(_LMV, rd, rs, n, 2 if o else 0, o))
            done += n

    def lmv_segments(self, dst: int, src: int, segments) -> None:
        """``lmv(dst + off, src + g, size)`` for each ``(off, g, size)`` of ``segments`` (a
        patch template), with :meth:`near` (hit and miss) and the :meth:`lreg` cache hit inlined
        (hot: a few segments per window).  Same rows and register use as the ``lmv`` calls."""
        cache, rows, srt = self.cache, self.rows, self._sorted   # (srt is only changed in place)
        for off, g, size in segments:
            if not 0 < size <= MAXLEN:
                self.lmv(dst + off, src + g, size)
                continue
            s = src + g
            rs = cache.get(s)
            if rs is not None:
                cache.move_to_end(s)
                o = 0
            else:
                # _near_miss(s), inlined (hot: a patch source is rarely cached exactly)
                i = bisect_left(srt, s)
                best = None
                if i:
                    o = s - srt[i - 1]
                    if o < _OFS_LIMIT:
                        best = srt[i - 1]
                if i < len(srt):
                    d = srt[i] - s
                    if d < _OFS_LIMIT and (best is None or d < o):
                        best = srt[i]
                        o = -d
                if best is not None:
                    cache.move_to_end(best)
                    rs = cache[best]
                else:
                    rs, o = self.lreg(s), 0
            d = dst + off
            rd = cache.get(d)
            if rd is not None:
                cache.move_to_end(d)
            else:
                rd = self.lreg(d)
            rows.append(pack_lmv(_LMV, rd, rs, size, 2 if o else 0, o))

    def send(self, laddr: int, dst: int, size: int) -> None:
        done = 0
        while done < size:
            n = min(MAXLEN, size - done)
            r, o = self.near(laddr + done)
            self.rows.append(pack_msg(_SEND, 0, r, n, dst, o))
            done += n
        self.msg_pos = len(self.rows)

    def recv(self, laddr: int, src: int, size: int) -> None:
        done = 0
        while done < size:
            n = min(MAXLEN, size - done)
            r, o = self.near(laddr + done)
            self.rows.append(pack_msg(_RECV, r, 0, n, src, o))
            done += n
        self.msg_pos = len(self.rows)

    # ------------------------------------------------------------------ element-schedule tokens
    def token_send_at(self, pos: int, dst: int, seq: int) -> None:
        """Insert a 1-byte ``send`` (local address r0 + 0, no register set-up) to ``dst`` after
        ``rows[:pos]``; ``pos`` must be >= ``msg_pos`` (message order is kept)."""
        assert pos >= self.msg_pos
        self.inserts.append((pos, seq, pack_msg(_SEND, 0, 0, 1, dst, 0)))
        self.msg_pos = pos

    def token_send(self, dst: int) -> None:
        """Append a 1-byte ``send`` from local byte 0 (reserved) to ``dst``."""
        self.rows.append(pack_msg(_SEND, 0, 0, 1, dst, 0))
        self.msg_pos = len(self.rows)

    def token_recv(self, src: int) -> None:
        """Append a 1-byte ``recv`` from ``src`` into local byte 0 (reserved)."""
        self.rows.append(pack_msg(_RECV, 0, 0, 1, src, 0))
        self.msg_pos = len(self.rows)

    def merge_inserts(self) -> None:
        """Splice the inserted token sends into ``rows`` (stable by position, then sequence)."""
        if not self.inserts:
            return
        ins = sorted(self.inserts, key=itemgetter(0, 1))
        pos = [t[0] for t in ins]
        # an insert at position p goes before row p: a mark m (exclusive end) moves by the
        # number of inserts before it
        self.marks = {k: m + bisect.bisect_left(pos, m) for k, m in self.marks.items()}
        self.layer_starts = [(m + bisect.bisect_left(pos, m), li) for m, li in self.layer_starts]
        rows, out, prev = self.rows, [], 0
        for p, _, row in ins:
            p = max(prev, min(p, len(rows)))
            out.extend(rows[prev:p])
            out.append(row)
            prev = p
        out.extend(rows[prev:])
        self.rows = out
        self.inserts = []

    def sync(self, ev: int, core: int) -> None:
        self.rows.append(pack_row(_SYNC, 0, 0, 0, 0, 0, 0, 0, 0, core, ev, 0, 0, 0, 0, 0))

    def wait(self, ev: int, val: int) -> None:
        self.rows.append(pack_row(_WAIT, 0, 0, 0, 0, 0, 0, 0, 0, 0, ev, val, 0, 0, 0, 0))

    # ------------------------------------------------------------------ matrix / vector
    def group_id(self, key, xbars: int) -> int:
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = len(self.group_xbars)
            self.group_xbars.append(xbars)
        return g

    def mvmul(self, dst: int, src: int, group: int, mbiw: int) -> None:
        # lreg(src) with its cache hit inlined (hot: once per window and array group)
        rs = self.cache.get(src)
        if rs is None:
            rs = self.lreg(src)
        else:
            self.cache.move_to_end(src)
        rd = self.cache.get(dst)   # a cached destination is used from there, else r6
        if rd is not None:
            self.cache.move_to_end(dst)
        else:
            rd = 6
            if self.reg[6] != dst:     # _set(6, dst), inlined (hot)
                self.rows.append(pack_sldi(_SLDI, 6, dst))
                self.reg[6] = dst
        self.rows.append(pack_mvmul(_MVMUL, rd, rs, mbiw, group))

    def mvmuls(self, mvs, offset: int, mbiw: int) -> None:
        """``mvmul(part + offset, src, group, mbiw)`` for each ``(group, part, src)`` of ``mvs``
        (one window's array groups), with :meth:`mvmul`'s register handling inlined, except that
        a destination already in the address cache is used from there (the first window's partial
        sums are: the reductions and the requantization address them), else through ``r6``."""
        cache, reg, rows = self.cache, self.reg, self.rows
        for group, part, src in mvs:
            rs = cache.get(src)
            if rs is None:
                rs = self.lreg(src)
            else:
                cache.move_to_end(src)
            dst = part + offset
            rd = cache.get(dst)
            if rd is not None:
                cache.move_to_end(dst)
            else:
                rd = 6
                if reg[6] != dst:
                    rows.append(pack_sldi(_SLDI, 6, dst))
                    reg[6] = dst
            rows.append(pack_mvmul(_MVMUL, rd, rs, mbiw, group))

    def vv(self, op: str, d: int, a: int, b: int, n: int) -> None:
        """Binary vector op (vvadd, vvsub, vvmax, vvsll, vvsra, ...) of ``n`` elements."""
        code = OPCODE[op]
        # lreg(d), lreg(a), lreg(b) in that order, cache hits inlined (hot)
        cache = self.cache
        rd = cache.get(d)
        if rd is None:
            rd = self.lreg(d)
        else:
            cache.move_to_end(d)
        ra = cache.get(a)
        if ra is None:
            ra = self.lreg(a)
        else:
            cache.move_to_end(a)
        rb = cache.get(b)
        if rb is None:
            rb = self.lreg(b)
        else:
            cache.move_to_end(b)
        if 0 < n <= MAXLEN:     # one chunk (the common case)
            self.rows.append(pack_vec(code, rd, ra, rb, n, 0, 0))
            return
        done = 0
        while done < n:
            k = min(MAXLEN, n - done)
            self.rows.append(pack_vec(code, rd, ra, rb, k, 7 if done else 0, done))
            done += k

    def vv_ofs(self, op: str, d: int, a: int, b: int, n: int, sel: int, ofs: int) -> None:
        """One vector op with explicit registers for the bases and an element offset."""
        self.rows.append(pack_row(OPCODE[op], d, a, b, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, sel, ofs))

    def vrs(self, op: str, d: int, a: int, bound: int, n: int) -> None:
        """vrsl / vrsu of ``n`` elements with scalar bound ``bound``."""
        code = OPCODE[op]
        # lreg(d), lreg(a) in that order, cache hits inlined (hot: the clamp of every batch)
        cache = self.cache
        rd = cache.get(d)
        if rd is None:
            rd = self.lreg(d)
        else:
            cache.move_to_end(d)
        ra = cache.get(a)
        if ra is None:
            ra = self.lreg(a)
        else:
            cache.move_to_end(a)
        if self.reg[4] != bound:     # bound(), inlined
            self.rows.append(pack_sldi(_SLDI, 4, bound))
            self.reg[4] = bound
        rb = 4
        done = 0
        while done < n:
            k = min(MAXLEN, n - done)
            self.rows.append(pack_vec(code, rd, ra, rb, k, 3 if done else 0, done))
            done += k

    def vavg(self, d: int, a: int, stride: int, n: int, ofs: int) -> None:
        rd = self.lreg(d)
        ra = self.lreg(a)
        self._set(5, stride)
        self.rows.append(pack_row(_VAVG, rd, ra, 5, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ofs))
