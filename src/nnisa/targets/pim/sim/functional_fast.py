"""Fast interpreter of the functional simulator.

Each core's hot columns are converted once to Python lists (:func:`prepare`); the loop in
:func:`run_core` handles ``sldi`` and ``lmv`` (≈ 88 % of PIMCOMP-NN code) inline and
dispatches everything else through a list of small functions indexed by opcode.  Vector
instructions and ``mvmul`` work on numpy views of the local memory; ``mvmul`` uses float64 BLAS
when the result is provably exact (< 2^53), int64 otherwise (exact modulo 2^64, which is enough
because the result wraps to obiw ≤ 31 bits), and skips the product for all-zero weights.

Results are identical to :mod:`.functional_ref` (tested with random programs).
"""

from __future__ import annotations

import numpy as np

from .machine import CoreState, Machine, lfault
from ..isa import OPCODE
from .memory import load_elems, store_elems, wrap_np
from .semantics import M32, Fault, activation_np, div_round_away, wrap, wrap32

_SLDI = OPCODE["sldi"]
_LMV = OPCODE["lmv"]
_LMV_WARN = "lmv with overlapping source and destination (memmove semantics)"


#: cold columns of the rarer instructions, kept per pc in ``core.cols[8]``
_AUX = {"mvmul": ("group", "mbiw", "relu"), "setbw": ("ibiw", "obiw"), "send": ("core",), "recv": ("core",),
        "wait": ("ev", "val"), "sync": ("ev", "core")}


def prepare(core: CoreState) -> None:
    """Convert the hot columns of ``core.rows`` to Python lists (``core.cols``)."""
    rows = core.rows
    imm = rows["imm"].astype(np.int64)
    imm32 = ((imm + (1 << 31)) & M32) - (1 << 31)
    op = rows["op"]
    aux: dict[int, tuple] = {}
    for name, cols in _AUX.items():
        idx = np.flatnonzero(op == OPCODE[name])
        if idx.size:
            aux.update(zip(idx.tolist(), zip(*(rows[c][idx].tolist() for c in cols))))
    core.cols = (op.tolist(), rows["rd"].tolist(), rows["rs1"].tolist(), rows["rs2"].tolist(),
                 rows["len"].tolist(), imm32.tolist(), rows["ofs_sel"].tolist(), rows["ofs_val"].tolist(), aux)


def run_core(m: Machine, core: CoreState) -> None:
    """Run ``core`` until it finishes or blocks."""
    ops, rds, rs1s, _rs2s, lens, imms, sels, ovs, _aux = core.cols
    regs = core.regs
    lm = core.lmem
    size = m.lsize
    handlers = HANDLERS
    n = core.n
    pc = core.pc
    try:
        while pc < n:
            op = ops[pc]
            if op == _SLDI:
                regs[rds[pc]] = imms[pc]
            elif op == _LMV:
                k = lens[pc]
                d = regs[rds[pc]]
                s = regs[rs1s[pc]]
                sel = sels[pc]
                if sel:
                    if sel & 1:
                        d += ovs[pc]
                    if sel & 2:
                        s += ovs[pc]
                if s < 0 or k < 0 or s + k > size:
                    lfault(s, k, size)
                if d < 0 or d + k > size:
                    lfault(d, k, size)
                if k and s < d + k and d < s + k:
                    m.warn(_LMV_WARN, core.cid, pc)
                lm[d:d + k] = lm[s:s + k]
            else:
                core.pc = pc
                if not handlers[op](m, core, pc):
                    return  # blocked: the partner advances core.pc
            pc += 1
    except Fault as fault:
        raise m.sim_error(core, pc, fault) from None
    core.pc = pc


# ---------------------------------------------------------------------- helpers
def _vec_in(m: Machine, core: CoreState, addr: int, n: int, biw: int, byw: int) -> np.ndarray:
    if addr < 0 or n < 0 or addr + n * byw > m.lsize:
        lfault(addr, n * byw, m.lsize)
    return load_elems(core.lnp, addr, n, biw, byw)


def _vec_strided(m: Machine, core: CoreState, addr: int, n: int, biw: int, byw: int, stride: int):
    """Strided read; returns (values, lo, hi) with the byte span that was checked."""
    if n:
        last = addr + (n - 1) * stride * byw
        lo, hi = min(addr, last), max(addr, last) + byw
        if lo < 0 or hi > m.lsize:
            lfault(lo, hi - lo, m.lsize)
    else:
        lo = hi = addr
    return load_elems(core.lnp, addr, n, biw, byw, stride), lo, hi


def _vec_out(m: Machine, core: CoreState, addr: int, values: np.ndarray, byw: int) -> None:
    if addr < 0 or addr + values.size * byw > m.lsize:
        lfault(addr, values.size * byw, m.lsize)
    store_elems(core.lnp, addr, values, byw)


def _operands(core: CoreState, pc: int, ibyw: int, dbyw: int) -> tuple[int, int, int, int]:
    """(dst, a, b, len) addresses of a two-source vector instruction with offsets."""
    _, rds, rs1s, rs2s, lens, _, sels, ovs, _ = core.cols
    regs = core.regs
    sel = sels[pc]
    d, a, b = regs[rds[pc]], regs[rs1s[pc]], regs[rs2s[pc]]
    if sel:
        o = ovs[pc]
        if sel & 1:
            d += o * dbyw
        if sel & 2:
            a += o * ibyw
        if sel & 4:
            b += o * ibyw
    return d, a, b, lens[pc]


# ---------------------------------------------------------------------- scalar
def _nop(m, core, pc):
    return True


def _sld(m, core, pc):
    _, rds, rs1s, _, _, _, _, ovs, _ = core.cols
    addr = m.gaddr(core.regs, rs1s[pc]) + ovs[pc]
    core.regs[rds[pc]] = int.from_bytes(m.gread(core, pc, addr, 4), "little", signed=True)
    return True


def _scalar(fn):
    def run(m, core, pc):
        _, rds, rs1s, rs2s, _, imms, _, _, _ = core.cols
        regs = core.regs
        regs[rds[pc]] = wrap32(fn(regs[rs1s[pc]], regs[rs2s[pc]], imms[pc]))
        return True
    return run


def _sldi(m, core, pc):
    core.regs[core.cols[1][pc]] = core.cols[5][pc]
    return True


# ---------------------------------------------------------------------- matrix
def _setbw(m, core, pc):
    m.setbw(core, *core.cols[8][pc])
    return True


def _mvmul(m, core, pc):
    g, mbiw, relu = core.cols[8][pc]
    gw = m.gcache.get((core.cid, g, mbiw))
    if gw is None:
        gw = m.gcache[(core.cid, g, mbiw)] = m.group(core, g, mbiw)
    regs = core.regs
    ib, ob = core.ibiw, core.obiw
    ibyw, obyw = (ib + 7) >> 3, (ob + 7) >> 3
    xa = regs[core.cols[2][pc]]
    if gw.zero:  # all-zero weights (e.g. weights="zeros"): only the bounds matter
        if xa < 0 or xa + gw.K * ibyw > m.lsize:
            lfault(xa, gw.K * ibyw, m.lsize)
        y = gw.zeros()
    else:
        x = _vec_in(m, core, xa, gw.K, ib, ibyw)
        mode, mat = gw.plan(ib)
        if mode == "f32":
            y = (x.astype(np.float32) @ mat).astype(np.int64)
        elif mode == "f64":
            y = (x.astype(np.float64) @ mat).astype(np.int64)
        else:
            y = x @ mat  # int64, exact modulo 2^64
        if relu:
            y = np.maximum(wrap_np(y, ob), 0)
        elif ob != 8 * obyw:
            y = wrap_np(y, ob)
    _vec_out(m, core, regs[core.cols[1][pc]], y, obyw)  # full-byte widths wrap in the store
    return True


# ---------------------------------------------------------------------- vector
# raw results; the store wraps them to the destination width (see _binary)
def _vvadd(a, b):
    return a + b


def _vvsub(a, b):
    return a - b


def _vvmul(a, b):
    return a * b


def _vvsll(a, b):
    return (a.astype(np.uint64) << np.clip(b, 0, 63).astype(np.uint64)).view(np.int64)


def _vvsra(a, b):
    return a >> np.clip(b, 0, 63)


def _binary(fn, out_is_obiw):
    """Two-source vector op; results are wrapped to the destination width (D7) — by the
    store itself when that width fills its bytes (two's-complement truncation)."""
    def run(m, core, pc):
        ib, ob = core.ibiw, core.obiw
        ibyw = (ib + 7) >> 3
        dbiw = ob if out_is_obiw else ib
        dbyw = (dbiw + 7) >> 3
        d, a0, b0, n = _operands(core, pc, ibyw, dbyw)
        a = _vec_in(m, core, a0, n, ib, ibyw)
        b = _vec_in(m, core, b0, n, ib, ibyw)
        v = fn(a, b)
        if dbiw != 8 * dbyw:
            v = wrap_np(v, dbiw)
        _vec_out(m, core, d, v, dbyw)
        return True
    return run


def _vvdmul(m, core, pc):
    ib, ob = core.ibiw, core.obiw
    ibyw = (ib + 7) >> 3
    _, a0, b0, n = _operands(core, pc, ibyw, 0)
    d = core.regs[core.cols[1][pc]]
    a = _vec_in(m, core, a0, n, ib, ibyw)
    b = _vec_in(m, core, b0, n, ib, ibyw)
    if 2 * (ib - 1) + max(n, 1).bit_length() <= 62:
        acc = int((a * b).sum())
    else:
        acc = sum(int(x) * int(y) for x, y in zip(a.tolist(), b.tolist()))
    _vec_out(m, core, d, np.array([wrap(acc, ob)], dtype=np.int64), (ob + 7) >> 3)
    return True


def _vavg(m, core, pc):
    _, rds, rs1s, rs2s, lens, _, _, ovs, _ = core.cols
    n = lens[pc]
    if n == 0:
        raise Fault("vavg with len 0")
    ib, ob = core.ibiw, core.obiw
    ibyw = (ib + 7) >> 3
    regs = core.regs
    a, _, _ = _vec_strided(m, core, regs[rs1s[pc]] + ovs[pc] * ibyw, n, ib, ibyw, regs[rs2s[pc]])
    v = wrap(div_round_away(int(a.sum()), n), ob)
    _vec_out(m, core, regs[rds[pc]], np.array([v], dtype=np.int64), (ob + 7) >> 3)
    return True


def _vrelu(m, core, pc):
    ib = core.ibiw
    ibyw = (ib + 7) >> 3
    d, a0, _, n = _operands(core, pc, ibyw, ibyw)
    a = _vec_in(m, core, a0, n, ib, ibyw)
    _vec_out(m, core, d, np.maximum(a, 0), ibyw)
    return True


def _act(kind):
    def run(m, core, pc):
        ib, ob = core.ibiw, core.obiw
        ibyw, obyw = (ib + 7) >> 3, (ob + 7) >> 3
        d, a0, _, n = _operands(core, pc, ibyw, obyw)
        a = _vec_in(m, core, a0, n, ib, ibyw)
        fin, fout = core.act_frac()
        _vec_out(m, core, d, activation_np(kind, a, fin, fout, ob), obyw)
        return True
    return run


def _vmv(m, core, pc):
    _, rds, rs1s, rs2s, lens, _, _, _, _ = core.cols
    ib = core.ibiw
    ibyw = (ib + 7) >> 3
    regs = core.regs
    n, dst = lens[pc], regs[rds[pc]]
    a, lo, hi = _vec_strided(m, core, regs[rs1s[pc]], n, ib, ibyw, regs[rs2s[pc]])
    if n and lo < dst + n * ibyw and dst < hi:
        m.warn("vmv with overlapping source and destination (memmove semantics)", core.cid, pc)
    _vec_out(m, core, dst, a, ibyw)
    return True


def _resize(upper):
    def run(m, core, pc):
        m.check_resize()
        ib, ob = core.ibiw, core.obiw
        ibyw, obyw = (ib + 7) >> 3, (ob + 7) >> 3
        d, a0, _, n = _operands(core, pc, ibyw, obyw)
        bound = core.regs[core.cols[3][pc]]
        a = _vec_in(m, core, a0, n, ib, ibyw)
        if obyw > ibyw and n and a0 < d + n * obyw and d < a0 + n * ibyw:
            m.warn("vrsu/vrsl widening with overlapping source and destination", core.cid, pc)
        v = np.minimum(a, bound) if upper else np.maximum(a, bound)
        _vec_out(m, core, d, np.clip(v, -(1 << (ob - 1)), (1 << (ob - 1)) - 1), obyw)
        return True
    return run


# ---------------------------------------------------------------------- transfer
def _ld(m, core, pc):
    _, rds, rs1s, _, lens, _, sels, ovs, _ = core.cols
    sel, k = sels[pc], lens[pc]
    dst = core.regs[rds[pc]] + (ovs[pc] if sel & 1 else 0)
    src = m.gaddr(core.regs, rs1s[pc]) + (ovs[pc] if sel & 2 else 0)
    if dst < 0 or k < 0 or dst + k > m.lsize:
        lfault(dst, k, m.lsize)
    core.lmem[dst:dst + k] = m.gread(core, pc, src, k)
    return True


def _st(m, core, pc):
    _, rds, rs1s, _, lens, _, sels, ovs, _ = core.cols
    sel, k = sels[pc], lens[pc]
    dst = m.gaddr(core.regs, rds[pc]) + (ovs[pc] if sel & 1 else 0)
    src = core.regs[rs1s[pc]] + (ovs[pc] if sel & 2 else 0)
    if src < 0 or k < 0 or src + k > m.lsize:
        lfault(src, k, m.lsize)
    m.gwrite(dst, core.lmem[src:src + k])
    return True


def _lldi(m, core, pc):
    _, rds, _, _, lens, imms, _, ovs, _ = core.cols
    k = lens[pc]
    dst = core.regs[rds[pc]] + ovs[pc]
    if dst < 0 or k < 0 or dst + k > m.lsize:
        lfault(dst, k, m.lsize)
    core.lmem[dst:dst + k] = bytes((imms[pc] & 0xFF,)) * k
    return True


def _lmv(m, core, pc):  # only reached through HANDLERS by callers other than run_core
    from .functional_ref import EXEC, Row
    return EXEC["lmv"](m, core, pc, Row(*(int(v) for v in core.rows[pc].tolist())))


def _send(m, core, pc):
    _, _, rs1s, _, lens, _, _, ovs, _ = core.cols
    return m.send(core, pc, core.regs[rs1s[pc]] + ovs[pc], lens[pc], core.cols[8][pc][0])


def _recv(m, core, pc):
    _, rds, _, _, lens, _, _, ovs, _ = core.cols
    return m.recv(core, pc, core.regs[rds[pc]] + ovs[pc], lens[pc], core.cols[8][pc][0])


def _wait(m, core, pc):
    return m.wait(core, *core.cols[8][pc])


def _sync(m, core, pc):
    m.sync(core, *core.cols[8][pc])
    return True


def _reserved(m, core, pc):
    raise Fault(f"reserved opcode {core.cols[0][pc]}")


_BY_NAME = {
    "nop": _nop, "sldi": _sldi, "sld": _sld,
    "sadd": _scalar(lambda a, b, i: a + b), "ssub": _scalar(lambda a, b, i: a - b),
    "smul": _scalar(lambda a, b, i: a * b), "saddi": _scalar(lambda a, b, i: a + i),
    "smuli": _scalar(lambda a, b, i: a * i),
    "setbw": _setbw, "mvmul": _mvmul,
    "vvadd": _binary(_vvadd, False), "vvsub": _binary(_vvsub, False), "vvmul": _binary(_vvmul, True),
    "vvdmul": _vvdmul, "vvmax": _binary(np.maximum, False), "vvsll": _binary(_vvsll, True),
    "vvsra": _binary(_vvsra, True), "vavg": _vavg, "vrelu": _vrelu, "vtanh": _act("vtanh"),
    "vsigm": _act("vsigm"), "vmv": _vmv, "vrsu": _resize(True), "vrsl": _resize(False),
    "ld": _ld, "st": _st, "lldi": _lldi, "lmv": _lmv, "send": _send, "recv": _recv, "wait": _wait,
    "sync": _sync,
}
#: opcode → handler(machine, core, pc) → completed?
HANDLERS = [_reserved] * 64
for _name, _fn in _BY_NAME.items():
    HANDLERS[OPCODE[_name]] = _fn
