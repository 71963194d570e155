"""Reference interpreter of the functional simulator: one readable function per instruction.

Everything is computed element by element with exact Python integers through the definitions
in :mod:`.semantics`; this is the executable form of the tables in spec ``pim_isa.md`` §5.3 and
the oracle for the fast path.  It is slow (microseconds per element) and meant for tests and
small programs.
"""

from __future__ import annotations

from collections import namedtuple

from .machine import CoreState, Machine
from ..isa import COLUMNS, OPCODES
from .semantics import (BINARY, Fault, activation, byte_width, div_round_away, elem_get, elem_put, sat, wrap,
                        wrap32)

Row = namedtuple("Row", [name for name, _ in COLUMNS])


def run_core(m: Machine, core: CoreState) -> None:
    """Run ``core`` until it finishes or blocks."""
    while core.pc < core.n and core.blocked is None:
        pc = core.pc
        r = Row(*(int(v) for v in core.rows[pc].tolist()))
        try:
            completed = EXEC[OPCODES[r.op]](m, core, pc, r)
        except Fault as fault:
            raise m.sim_error(core, pc, fault) from None
        if not completed:
            return  # blocked; the partner advances our pc
        core.pc = pc + 1


# ---------------------------------------------------------------------- helpers
def _offset(r: Row, bit: int, scale: int) -> int:
    """``scale · offset_value`` if select bit ``bit`` is set (bit 0 rd, 1 rs1, 2 rs2)."""
    return r.ofs_val * scale if r.ofs_sel >> bit & 1 else 0


def _read_vec(m: Machine, core: CoreState, addr: int, n: int, biw: int, stride: int | None = None) -> list[int]:
    """Read ``n`` elements; ``stride`` (in elements, may be negative) only for vavg/vmv."""
    byw = byte_width(biw)
    if stride is None:
        stride = 1
        m.lcheck(addr, n * byw)
    elif n:
        first, last = addr, addr + (n - 1) * stride * byw
        m.lcheck(min(first, last), abs(last - first) + byw)
    return [elem_get(core.lmem, addr + i * stride * byw, biw, byw) for i in range(n)]


def _write_vec(m: Machine, core: CoreState, addr: int, values: list[int], biw: int) -> None:
    byw = byte_width(biw)
    m.lcheck(addr, len(values) * byw)
    for i, v in enumerate(values):
        elem_put(core.lmem, addr + i * byw, v, byw)


def _overlap(a: int, an: int, b: int, bn: int) -> bool:
    return an > 0 and bn > 0 and a < b + bn and b < a + an


# ---------------------------------------------------------------------- scalar
def _nop(m, core, pc, r):
    return True


def _sldi(m, core, pc, r):
    core.regs[r.rd] = wrap32(r.imm)
    return True


def _sld(m, core, pc, r):
    addr = m.gaddr(core.regs, r.rs1) + r.ofs_val
    data = m.gread(core, pc, addr, 4)
    core.regs[r.rd] = int.from_bytes(data, "little", signed=True)
    return True


def _scalar(fn):
    def run(m, core, pc, r):
        core.regs[r.rd] = wrap32(fn(core.regs[r.rs1], core.regs[r.rs2], wrap32(r.imm)))
        return True
    return run


# ---------------------------------------------------------------------- matrix
def _setbw(m, core, pc, r):
    m.setbw(core, r.ibiw, r.obiw)
    return True


def _mvmul(m, core, pc, r):
    gw = m.group(core, r.group, r.mbiw)
    x = _read_vec(m, core, core.regs[r.rs1], gw.K, core.ibiw)
    w = gw.w.tolist()
    y = []
    for n in range(gw.N):
        acc = sum(x[k] * w[k][n] for k in range(gw.K))
        acc = wrap(acc, core.obiw)
        y.append(max(acc, 0) if r.relu else acc)
    _write_vec(m, core, core.regs[r.rd], y, core.obiw)
    return True


# ---------------------------------------------------------------------- vector
def _binary(mnem):
    fn, out_is_obiw = BINARY[mnem]

    def run(m, core, pc, r):
        ib, ob = core.ibiw, core.obiw
        ibyw = byte_width(ib)
        dbiw = ob if out_is_obiw else ib
        a = _read_vec(m, core, core.regs[r.rs1] + _offset(r, 1, ibyw), r.len, ib)
        b = _read_vec(m, core, core.regs[r.rs2] + _offset(r, 2, ibyw), r.len, ib)
        d = [fn(x, y, ib, ob) for x, y in zip(a, b)]
        _write_vec(m, core, core.regs[r.rd] + _offset(r, 0, byte_width(dbiw)), d, dbiw)
        return True
    return run


def _vvdmul(m, core, pc, r):
    ibyw = byte_width(core.ibiw)
    a = _read_vec(m, core, core.regs[r.rs1] + _offset(r, 1, ibyw), r.len, core.ibiw)
    b = _read_vec(m, core, core.regs[r.rs2] + _offset(r, 2, ibyw), r.len, core.ibiw)
    _write_vec(m, core, core.regs[r.rd], [wrap(sum(x * y for x, y in zip(a, b)), core.obiw)], core.obiw)
    return True


def _vavg(m, core, pc, r):
    if r.len == 0:
        raise Fault("vavg with len 0")
    base = core.regs[r.rs1] + r.ofs_val * byte_width(core.ibiw)
    a = _read_vec(m, core, base, r.len, core.ibiw, stride=core.regs[r.rs2])
    _write_vec(m, core, core.regs[r.rd], [wrap(div_round_away(sum(a), r.len), core.obiw)], core.obiw)
    return True


def _vrelu(m, core, pc, r):
    ibyw = byte_width(core.ibiw)
    a = _read_vec(m, core, core.regs[r.rs1] + _offset(r, 1, ibyw), r.len, core.ibiw)
    _write_vec(m, core, core.regs[r.rd] + _offset(r, 0, ibyw), [max(x, 0) for x in a], core.ibiw)
    return True


def _act(mnem):
    def run(m, core, pc, r):
        ibyw, obyw = byte_width(core.ibiw), byte_width(core.obiw)
        fin, fout = core.act_frac()
        a = _read_vec(m, core, core.regs[r.rs1] + _offset(r, 1, ibyw), r.len, core.ibiw)
        d = [activation(mnem, x, fin, fout, core.obiw) for x in a]
        _write_vec(m, core, core.regs[r.rd] + _offset(r, 0, obyw), d, core.obiw)
        return True
    return run


def _vmv(m, core, pc, r):
    ibyw = byte_width(core.ibiw)
    stride = core.regs[r.rs2]
    src, dst = core.regs[r.rs1], core.regs[r.rd]
    a = _read_vec(m, core, src, r.len, core.ibiw, stride=stride)
    if r.len:
        last = src + (r.len - 1) * stride * ibyw
        lo, hi = min(src, last), max(src, last) + ibyw
        if _overlap(lo, hi - lo, dst, r.len * ibyw):
            m.warn("vmv with overlapping source and destination (memmove semantics)", core.cid, pc)
    _write_vec(m, core, dst, a, core.ibiw)
    return True


def _resize(upper: bool):
    def run(m, core, pc, r):
        m.check_resize()
        ibyw, obyw = byte_width(core.ibiw), byte_width(core.obiw)
        bound = core.regs[r.rs2]
        src = core.regs[r.rs1] + _offset(r, 1, ibyw)
        dst = core.regs[r.rd] + _offset(r, 0, obyw)
        a = _read_vec(m, core, src, r.len, core.ibiw)
        if obyw > ibyw and _overlap(src, r.len * ibyw, dst, r.len * obyw):
            m.warn("vrsu/vrsl widening with overlapping source and destination", core.cid, pc)
        d = [sat(min(x, bound) if upper else max(x, bound), core.obiw) for x in a]
        _write_vec(m, core, dst, d, core.obiw)
        return True
    return run


# ---------------------------------------------------------------------- transfer
def _ld(m, core, pc, r):
    dst = core.regs[r.rd] + _offset(r, 0, 1)
    src = m.gaddr(core.regs, r.rs1) + _offset(r, 1, 1)
    m.lcheck(dst, r.len)
    core.lmem[dst:dst + r.len] = m.gread(core, pc, src, r.len)
    return True


def _st(m, core, pc, r):
    dst = m.gaddr(core.regs, r.rd) + _offset(r, 0, 1)
    src = core.regs[r.rs1] + _offset(r, 1, 1)
    m.lcheck(src, r.len)
    m.gwrite(dst, bytes(core.lmem[src:src + r.len]))
    return True


def _lldi(m, core, pc, r):
    dst = core.regs[r.rd] + r.ofs_val
    m.lcheck(dst, r.len)
    core.lmem[dst:dst + r.len] = bytes([r.imm & 0xFF]) * r.len
    return True


def _lmv(m, core, pc, r):
    dst = core.regs[r.rd] + _offset(r, 0, 1)
    src = core.regs[r.rs1] + _offset(r, 1, 1)
    m.lcheck(src, r.len)
    m.lcheck(dst, r.len)
    if _overlap(src, r.len, dst, r.len):
        m.warn("lmv with overlapping source and destination (memmove semantics)", core.cid, pc)
    core.lmem[dst:dst + r.len] = bytes(core.lmem[src:src + r.len])
    return True


def _send(m, core, pc, r):
    return m.send(core, pc, core.regs[r.rs1] + r.ofs_val, r.len, r.core)


def _recv(m, core, pc, r):
    return m.recv(core, pc, core.regs[r.rd] + r.ofs_val, r.len, r.core)


def _wait(m, core, pc, r):
    return m.wait(core, r.ev, r.val)


def _sync(m, core, pc, r):
    m.sync(core, r.ev, r.core)
    return True


EXEC = {
    "nop": _nop, "sldi": _sldi, "sld": _sld,
    "sadd": _scalar(lambda a, b, i: a + b), "ssub": _scalar(lambda a, b, i: a - b),
    "smul": _scalar(lambda a, b, i: a * b), "saddi": _scalar(lambda a, b, i: a + i),
    "smuli": _scalar(lambda a, b, i: a * i),
    "setbw": _setbw, "mvmul": _mvmul,
    "vvdmul": _vvdmul, "vavg": _vavg, "vrelu": _vrelu, "vtanh": _act("vtanh"), "vsigm": _act("vsigm"),
    "vmv": _vmv, "vrsu": _resize(True), "vrsl": _resize(False),
    "ld": _ld, "st": _st, "lldi": _lldi, "lmv": _lmv, "send": _send, "recv": _recv, "wait": _wait,
    "sync": _sync,
}
EXEC.update({mnem: _binary(mnem) for mnem in BINARY})
