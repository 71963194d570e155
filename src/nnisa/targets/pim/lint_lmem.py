"""Replay of one core's local-memory traffic for the lint's ``uninitialised_read`` check.

Local memory is written only by the core's own instructions (``ld``, ``lldi``, ``lmv``,
``recv``, vector and matrix results), in program order, so a sequential replay of the core with
its address registers (``sldi``/``sadd``/``ssub``/``smul``/``saddi``/``smuli``; ``sld`` loads
global-memory data and makes its register unknown) and a bitmap of written bytes finds every
read of a byte that was never written.  Operand addresses, offsets and element widths follow
spec §5.3; reads whose register is unknown are not checked.
"""

from __future__ import annotations

import numpy as np

from .isa import OPCODE, OPCODES

_M32 = (1 << 32) - 1
_O = OPCODE
_TWO = {_O[m] for m in ("vvadd", "vvsub", "vvmul", "vvmax", "vvsll", "vvsra")}
_DST_OBYW = {_O[m] for m in ("vvmul", "vvsll", "vvsra", "vtanh", "vsigm", "vrsu", "vrsl")}
_ONE_SRC = {_O[m] for m in ("vrelu", "vtanh", "vsigm", "vrsu", "vrsl")}
_SCALAR = {_O[m] for m in ("sldi", "sadd", "ssub", "smul", "saddi", "smuli", "sld")}


def _bw(bits: int) -> int:
    return (bits + 7) // 8


def replay_core(core: int, rows: np.ndarray, shapes: dict[tuple[int, int], tuple[int, int]],
                lmem_size: int) -> tuple[tuple[int, int, str] | None, int]:
    """(first offending (pc, address, mnemonic) or None, number of offending instructions)."""
    written = np.zeros(lmem_size, dtype=bool)
    regs: list[int | None] = [0] * 32
    ib, ob = 8, 8
    first = None
    count = 0
    cols = [rows[k].tolist() for k in ("op", "rd", "rs1", "rs2", "len", "imm", "ofs_sel", "ofs_val", "ibiw", "obiw",
                                       "group")]
    for pc, (op, rd, rs1, rs2, n, imm, sel, ov, bi, bo, grp) in enumerate(zip(*cols)):
        if op in _SCALAR:
            if op == _O["sldi"]:
                regs[rd] = imm
            elif op == _O["sld"]:
                regs[rd] = None
            else:
                a = regs[rs1]
                b = imm if op in (_O["saddi"], _O["smuli"]) else regs[rs2]
                if a is None or b is None:
                    regs[rd] = None
                else:
                    v = a + b if op in (_O["sadd"], _O["saddi"]) else a - b if op == _O["ssub"] else a * b
                    v &= _M32
                    regs[rd] = v - (1 << 32) if v >> 31 else v
            continue
        if op == _O["setbw"]:
            ib, ob = bi, bo
            continue
        reads: list[tuple[int | None, int]] = []
        writes: list[tuple[int | None, int]] = []

        def reg(r: int, extra: int = 0):
            v = regs[r]
            return None if v is None else v + extra

        iby, oby = _bw(ib), _bw(ob)
        if op == _O["mvmul"]:
            k, m = shapes.get((core, grp), (0, 0))
            reads.append((reg(rs1), k * iby))
            writes.append((reg(rd), m * oby))
        elif op in _TWO:
            reads += [(reg(rs1, iby * ov if sel & 2 else 0), n * iby), (reg(rs2, iby * ov if sel & 4 else 0), n * iby)]
            dw = oby if op in _DST_OBYW else iby
            writes.append((reg(rd, dw * ov if sel & 1 else 0), n * dw))
        elif op == _O["vvdmul"]:
            reads += [(reg(rs1, iby * ov if sel & 2 else 0), n * iby), (reg(rs2, iby * ov if sel & 4 else 0), n * iby)]
            writes.append((reg(rd), oby))
        elif op in _ONE_SRC:
            reads.append((reg(rs1, iby * ov if sel & 2 else 0), n * iby))
            dw = oby if op in _DST_OBYW else iby
            writes.append((reg(rd, dw * ov if sel & 1 else 0), n * dw))
        elif op in (_O["vavg"], _O["vmv"]):
            base = reg(rs1, iby * ov if op == _O["vavg"] else 0)
            stride = regs[rs2]
            if base is not None and stride is not None and n:
                idx = base + np.arange(n) * stride * iby
                bad = not all(written[max(0, i):i + iby].all() for i in idx.tolist()[:4096])
                if bad:
                    count += 1
                    first = first or (pc, int(idx[0]), OPCODES[op])
            writes.append((reg(rd), oby if op == _O["vavg"] else n * iby))
        elif op == _O["ld"]:
            writes.append((reg(rd, ov if sel & 1 else 0), n))
        elif op == _O["st"]:
            reads.append((reg(rs1, ov if sel & 2 else 0), n))
        elif op == _O["lldi"]:
            writes.append((reg(rd, ov), n))
        elif op == _O["lmv"]:
            reads.append((reg(rs1, ov if sel & 2 else 0), n))
            writes.append((reg(rd, ov if sel & 1 else 0), n))
        elif op == _O["send"]:
            reads.append((reg(rs1, ov), n))
        elif op == _O["recv"]:
            writes.append((reg(rd, ov), n))
        for a, size in reads:
            if a is not None and size > 0 and 0 <= a and not written[a:a + size].all():
                count += 1
                if first is None:
                    first = (pc, a + int(np.argmin(written[a:a + size])), OPCODES[op])
                break
        for a, size in writes:
            if a is not None and size > 0 and a >= 0:
                written[a:a + size] = True
    return first, count
