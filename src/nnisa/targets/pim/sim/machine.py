"""Machine state shared by both functional interpreters: array-group weights, per-core state,
memory checks, communication, scheduling and warnings (spec ``pim_isa.md`` §5).

:mod:`.functional` builds a :class:`Machine` and runs it with the interpreter of
:mod:`.functional_fast` or :mod:`.functional_ref`; both import the state from here.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ....core.asm import format_row
from ....core.errors import DeadlockError, SimError
from ..isa import OPCODE
from .memory import GlobalMemory, GmemRangeError
from ..program import PimProgram
from .semantics import M32, Fault


from .weights import GroupWeights


# ====================================================================== machine
class CoreState:
    """Architectural state of one core plus its position in the program."""

    __slots__ = ("cid", "rows", "n", "pc", "regs", "lmem", "lnp", "ibiw", "obiw", "ev",
                 "blocked", "frac", "cols")

    def __init__(self, cid: int, rows: np.ndarray, lmem_size: int, widths: tuple[int, int],
                 ev: list[int], frac: tuple[int | None, int | None]):
        self.cid = cid
        self.rows = rows
        self.n = len(rows)
        self.pc = 0
        self.regs = [0] * 32
        # np.zeros is calloc: pages cost memory only once touched, so a large configured local
        # memory costs what the program uses (bytearray(n) would write every byte up front)
        self.lnp = np.zeros(lmem_size, dtype=np.uint8)
        self.lmem = memoryview(self.lnp)
        self.ibiw, self.obiw = widths
        self.ev = ev
        self.blocked: tuple | None = None  # ("send", dst, addr, size) / ("recv", src, addr, size) / ("wait", ev, val)
        self.frac = frac
        self.cols = None  # per-column Python lists (fast path)

    def act_frac(self) -> tuple[int, int]:
        """(act_in_frac, act_out_frac) at the current bit-widths (D9)."""
        fin, fout = self.frac
        return (self.ibiw // 2 if fin is None else fin, self.obiw - 1 if fout is None else fout)


class Machine:
    """Shared state and services of both interpreters (memory checks, communication, warnings)."""

    def __init__(self, program: PimProgram, cfg, weights: dict, gmem: GlobalMemory, mode: str,
                 act_frac: dict[int, tuple]):
        self.program = program
        self.isa = program.isa
        self.cfg = cfg
        self.nn = cfg.nnisa
        self.variable_bw = self.nn.variable_bitwidth
        self.fixed_bw = self.nn.fixed_bitwidth
        self.pair = mode == "pair"
        self.gmem = gmem
        self.lsize = int(cfg.chip_config.core_config.local_memory_config.memory_size)
        self.core_count = max(program.core_count, max(program.cores, default=-1) + 1)
        self.events = {}
        self.cores: dict[int, CoreState] = {}
        for c in sorted(program.cores):
            frac = act_frac.get(c, (None, None))
            self.cores[c] = CoreState(c, program.cores[c], self.lsize, self.nn.init_widths(c),
                                      self.event_regs(c), frac)
        self.groups: dict[tuple[int, int], GroupWeights] = {k: GroupWeights.of(v) for k, v in weights.items()}
        self.warn_counts: dict[str, list] = {}
        self.gcache: dict[tuple[int, int, int], GroupWeights] = {}  # (core, group, mbiw) → checked weights

    # ------------------------------------------------------------------ helpers
    def event_regs(self, c: int) -> list[int]:
        ev = self.events.get(c)
        if ev is None:
            ev = self.events[c] = [0] * 32
        return ev

    def warn(self, kind: str, core: int, pc: int, detail: str = "") -> None:
        """Record one occurrence of an aggregated warning."""
        rec = self.warn_counts.get(kind)
        if rec is None:
            self.warn_counts[kind] = [1, core, pc, detail]
        else:
            rec[0] += 1

    def lcheck(self, addr: int, size: int) -> None:
        """Raise :class:`Fault` unless ``[addr, addr+size)`` lies in local memory."""
        if addr < 0 or size < 0 or addr + size > self.lsize:
            lfault(addr, size, self.lsize)

    def gaddr(self, regs: list[int], r: int) -> int:
        """Global address from register ``r`` (pair D6 or single32, §1.6)."""
        if not self.pair:
            return regs[r] & M32
        if r >= 31:
            raise Fault(f"global address register pair $r{r}/$r{r + 1} does not exist")
        return ((regs[r] & M32) << 32) | (regs[r + 1] & M32)

    def gread(self, core: CoreState, pc: int, addr: int, size: int) -> bytes:
        try:
            data, init = self.gmem.read(addr, size)
        except GmemRangeError as exc:
            raise Fault(str(exc), exc.addr) from None
        if not init:
            self.warn("read of uninitialised global memory (value 0)", core.cid, pc, f"address {addr:#x}")
        return data

    def gwrite(self, addr: int, data) -> None:
        try:
            self.gmem.write(addr, data)
        except GmemRangeError as exc:
            raise Fault(str(exc), exc.addr) from None

    def group(self, core: CoreState, g: int, mbiw: int) -> GroupWeights:
        """The weights of array group ``g`` of ``core``, checked against ``mbiw`` (§5.4)."""
        if mbiw <= 0:
            raise Fault("mvmul with mbiw 0")
        if not self.variable_bw and mbiw != self.fixed_bw:
            raise Fault(f"mvmul mbiw {mbiw} differs from the fixed bit-width {self.fixed_bw}")
        gw = self.groups.get((core.cid, g))
        if gw is None:
            n = len(self.program.array_group_map.get(core.cid, []))
            if g >= n:
                raise Fault(f"array group {g} unknown (core {core.cid} has {n} group(s))")
            raise Fault(f"array group {g} has no weights (weights key c{core.cid}.g{g})")
        lo, hi = -(1 << (mbiw - 1)), (1 << (mbiw - 1)) - 1
        if gw.wmin < lo or gw.wmax > hi:
            raise Fault(f"weights of c{core.cid}.g{g} (min {gw.wmin}, max {gw.wmax}) outside the "
                        f"signed {mbiw}-bit range [{lo}, {hi}]")
        return gw

    def setbw(self, core: CoreState, ibiw: int, obiw: int) -> None:
        if not self.variable_bw:
            raise Fault("setbw is invalid on fixed bit-width hardware (variable_bitwidth = false)")
        if not (1 <= ibiw <= 31 and 1 <= obiw <= 31):
            raise Fault(f"setbw bit-widths must be 1..31, got {ibiw}, {obiw}")
        core.ibiw, core.obiw = ibiw, obiw

    def check_resize(self) -> None:
        if not self.variable_bw:
            raise Fault("vrsu/vrsl are invalid on fixed bit-width hardware (variable_bitwidth = false)")

    # ------------------------------------------------------------------ communication (§5.5)
    def send(self, core: CoreState, pc: int, addr: int, size: int, dst: int) -> bool:
        """Execute ``send``; True if it completed now, False if the core blocks."""
        if dst == core.cid:
            raise Fault(f"send to the own core {dst}")
        self.lcheck(addr, size)
        peer = self.cores.get(dst)
        if peer is not None and peer.blocked is not None and peer.blocked[0] == "recv" \
                and peer.blocked[1] == core.cid:
            _, _, raddr, rsize = peer.blocked
            if rsize != size:
                raise Fault(f"send size {size} does not match the size {rsize} of the matching recv "
                            f"on core {dst} pc {peer.pc} ({self.disasm(peer, peer.pc)})")
            peer.lmem[raddr:raddr + size] = core.lmem[addr:addr + size]
            peer.blocked = None
            peer.pc += 1
            return True
        core.blocked = ("send", dst, addr, size)
        return False

    def recv(self, core: CoreState, pc: int, addr: int, size: int, src: int) -> bool:
        """Execute ``recv``; True if it completed now, False if the core blocks."""
        if src == core.cid:
            raise Fault(f"recv from the own core {src}")
        self.lcheck(addr, size)
        peer = self.cores.get(src)
        if peer is not None and peer.blocked is not None and peer.blocked[0] == "send" \
                and peer.blocked[1] == core.cid:
            _, _, saddr, ssize = peer.blocked
            if ssize != size:
                raise Fault(f"recv size {size} does not match the size {ssize} of the matching send "
                            f"on core {src} pc {peer.pc} ({self.disasm(peer, peer.pc)})")
            core.lmem[addr:addr + size] = peer.lmem[saddr:saddr + size]
            peer.blocked = None
            peer.pc += 1
            return True
        core.blocked = ("recv", src, addr, size)
        return False

    def sync(self, core: CoreState, ev: int, target: int) -> None:
        """``sync ev, target``: increment; complete the target's wait if it now matches."""
        if not 0 <= target < self.core_count:
            raise Fault(f"sync to core {target} outside the chip (cores 0..{self.core_count - 1})")
        regs = self.event_regs(target)
        regs[ev] += 1
        peer = self.cores.get(target)
        if peer is not None and peer is not core and peer.blocked is not None and peer.blocked[0] == "wait" \
                and peer.blocked[1] == ev and regs[ev] == peer.blocked[2]:
            regs[ev] = 0
            peer.blocked = None
            peer.pc += 1

    def wait(self, core: CoreState, ev: int, val: int) -> bool:
        """``wait ev, val``: equality check-and-reset (§5.5); False if the core blocks."""
        if core.ev[ev] == val:
            core.ev[ev] = 0
            return True
        core.blocked = ("wait", ev, val)
        return False

    # ------------------------------------------------------------------ errors
    def disasm(self, core: CoreState, pc: int) -> str:
        return format_row(self.isa, tuple(int(x) for x in core.rows[pc].tolist()))

    def sim_error(self, core: CoreState, pc: int, fault: Fault) -> SimError:
        dis = self.disasm(core, pc)
        return SimError(fault.message, where=f"core {core.cid}, pc {pc} ({dis})", core=core.cid, pc=pc,
                        instruction=dis, address=fault.address)

    # ------------------------------------------------------------------ scheduling
    def run(self, runner: Callable[["Machine", CoreState], None], schedule: str = "ascending") -> None:
        """Visit runnable cores in ascending (or descending) id order until none can run."""
        order = [self.cores[c] for c in sorted(self.cores, reverse=schedule == "descending")]
        while True:
            progressed = False
            for core in order:
                if core.blocked is None and core.pc < core.n:
                    runner(self, core)
                    progressed = True
            if not progressed:
                break
        if any(core.pc < core.n for core in order):
            from .functional_report import deadlock_report
            total = sum(core.pc for core in order)
            report, stuck = deadlock_report(self, f"after {total:,} instructions")
            raise DeadlockError(f"deadlock: {stuck} of {len(order)} cores cannot make progress",
                                report=report)


def lfault(addr: int, size: int, limit: int):
    """Raise the out-of-bounds :class:`Fault` of a local access."""
    raise Fault(f"local address range [{addr}, {addr + size}) outside local memory [0, {limit})", addr)


# ====================================================================== static checks
def _static_warnings(m: Machine) -> None:
    """Warnings that follow from the program text alone (§5.7)."""
    ld, st, sld, setbw = OPCODE["ld"], OPCODE["st"], OPCODE["sld"], OPCODE["setbw"]
    for c, rows in m.program.items():
        op = rows["op"]
        if m.pair:
            odd = (((op == ld) | (op == sld)) & (rows["rs1"] % 2 == 1)) | ((op == st) & (rows["rd"] % 2 == 1))
            for pc in np.flatnonzero(odd).tolist():
                m.warn("odd register for a global address pair (D6)", c, pc, m.disasm(m.cores[c], pc))
        if m.variable_bw:
            vec = (op >= OPCODE["mvmul"]) & (op <= OPCODE["vrsl"])
            first_bw = np.flatnonzero(op == setbw)
            limit = int(first_bw[0]) if first_bw.size else len(op)
            for pc in np.flatnonzero(vec[:limit]).tolist():
                m.warn("matrix/vector instruction before the first setbw (initial bit-widths used)", c, pc,
                       m.disasm(m.cores[c], pc))


def _format_warnings(m: Machine) -> list[str]:
    out = []
    for kind, (count, core, pc, detail) in m.warn_counts.items():
        where = f"first at core {core} pc {pc}" + (f": {detail}" if detail else "")
        out.append(f"{kind}: {count:,} occurrence(s), {where}")
    return out


