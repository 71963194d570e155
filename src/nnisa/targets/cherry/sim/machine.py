"""The Cherry machine: registers, cache and device memory, and the control unit that walks a
program's loops and address formulas (spec ``cherry.md`` §2.4, §3).

:meth:`Machine.run` executes one program: loop instructions are handled by the control unit,
every other instruction is issued once per superscalar group with ``copies`` copies (bank t for
copy t, loop variable v + t).  ``engine="fast"`` applies each instruction to all copies with one
numpy operation; ``engine="reference"`` executes copy by copy on 2-D tiles.  A
:class:`~nnisa.targets.cherry.sim.timing.QueueModel` passed as ``timing`` receives every push;
``functional=False`` skips the values (timing only).

A machine runs ``batch`` samples in one pass (issue 30): the control unit, the addresses and the
cycle model do not depend on the data, so every register and cache tile carries a sample axis
(``regs[code, bank, sample]``, ``cache[tile, sample]``) and device memory holds constants once
(:class:`~nnisa.targets.cherry.sim.memory.DeviceMemory`).  The fast engine applies each
instruction to all copies and samples with one numpy operation; the reference engine goes copy by
copy and sample by sample on 2-D tiles.
"""

from __future__ import annotations

import numpy as np

from ....core.errors import SimError, SimTimeExceeded
from ..config import CherryConfig
from ..isa import LOOP_VARS, OP, REG_NAMES, UNIT, code_length
from ..program import Program
from .element import quantize
from .memory import DeviceMemory
from .semantics import exec_copy, exec_group, flops_per_copy
from .timing import UNIT_INDEX, QueueModel

_START = (OP["start_loop"], OP["start_independent_loop"])
_END = OP["end_loop"]
_MEM = (OP["load"], OP["store"], OP["mem_read"], OP["mem_write"])


class Machine:
    """State of one Cherry device; programs run on it one after another (state persists).

    Parameters
    ----------
    cfg
        The configuration (tile size, memories, element format, SW, ...).
    batch
        Samples run at once (every register and cache tile holds one value per sample).
    dram_top
        Device-memory tiles the programs write below (a compiled plan's top): reserved per
        sample at once (more are added if a program writes above it).
    """

    def __init__(self, cfg: CherryConfig, batch: int = 1, dram_top: int = 0):
        self.cfg = cfg
        self.batch = batch
        sz = cfg.sz
        self.regs = np.zeros((4, cfg.threads, batch, sz, sz), np.float32)
        self.cache = np.zeros((cfg.cache_tiles, batch, sz, sz), np.float32)  # calloc: untouched pages cost nothing
        self.dram = DeviceMemory(cfg.dram_tiles, batch, sz, dram_top)
        self.counts = {"copies": 0, "groups": 0, "flops": 0, "dram_tiles_read": 0, "dram_tiles_written": 0,
                       "loop_instructions": 0}
        self.op_copies: dict[int, int] = {}
        self.dram_hi = 0

    # ------------------------------------------------------------------ the control unit
    def run(self, prog: Program, *, timing: QueueModel | None = None, functional: bool = True,
            engine: str = "fast") -> None:
        """Execute ``prog`` (icache words [org, org + len)) with its header."""
        cfg = self.cfg
        if prog.sz != cfg.sz:
            raise SimError(f"program is written for SZ={prog.sz} but the configuration has SZ={cfg.sz} "
                           f"(use --arch sz{prog.sz})")
        if prog.org + len(prog) > cfg.icache_words:
            raise SimError(f"program ends at icache word {prog.org + len(prog)}, beyond the icache "
                           f"({cfg.icache_words} words)")
        rows = [tuple(int(v) for v in r) for r in prog.rows.tolist()]
        iters = prog.header.iterations
        jumps = prog.header.jumps
        forms = [[int(v) for v in f] for f in prog.header.formulas.tolist()]
        sw = cfg.superscalar_width
        var = [0] * 8
        stack: list[list] = []  # [address, N, J, independent, v, start pc]
        if timing is not None:
            timing.begin()
        race = cfg.race_check and functional
        n = len(rows)
        pc = 0
        steps = 0
        while pc < n:
            steps += 1
            if not steps & 4095:  # the simulated-time limit, looked at every 4,096 steps
                self._check_time(timing, prog, pc, stack)
            row = rows[pc]
            op = row[0]
            if op in _START:
                a = row[13]
                indep = op == OP["start_independent_loop"]
                err = ("more than 8 nested loops" if len(stack) >= 8 else
                       f"loop {a} has 0 iterations" if iters[a] == 0 else
                       f"loop {a} starts inside an independent loop" if stack and stack[-1][3] else
                       f"loop {a} is already active" if any(s[0] == a for s in stack) else None)
                if err:
                    raise self._error(err, prog, pc, stack)
                stack.append([a, iters[a], jumps[a], indep, 0, pc])
                var[a] = 0
                if race and indep:
                    self._race_snapshot = (self.regs.copy(), self.cache.copy(), self.dram.copy(), pc)
                self.counts["loop_instructions"] += 1
                if timing is not None:
                    timing.loop_instruction()
                pc += 1
                continue
            if op == _END:
                a = row[13]
                if not stack:
                    raise self._error(f"end_loop {a} without an active loop", prog, pc, stack)
                top = stack[-1]
                if top[0] != a:
                    raise self._error(f"end_loop {a} but the innermost active loop is {top[0]}", prog, pc, stack)
                top[4] += min(top[1] - top[4], sw) if top[3] else 1
                self.counts["loop_instructions"] += 1
                if timing is not None:
                    timing.loop_instruction()
                if top[4] < top[1]:
                    target = pc + 1 - top[2]
                    if target != top[5] + 1:
                        raise self._error(f"loop {a}: jump {top[2]} lands on pc {target + prog.org}, not after its "
                                          f"start (pc {top[5] + prog.org})", prog, pc, stack)
                    var[a] = top[4]
                    pc = target
                else:
                    stack.pop()
                    var[a] = 0
                    if race and top[3]:
                        self._race_check(prog, rows, forms, top, pc)
                    pc += 1
                continue
            if stack and stack[-1][3]:
                top = stack[-1]
                copies = min(top[1] - top[4], sw)
                ia = top[0]
            else:
                copies, ia = 1, -1
            if functional:
                if engine == "fast":
                    self._exec_fast(prog, row, pc, copies, ia, var, forms, stack)
                else:
                    for t in range(copies):
                        self._exec_ref(prog, row, pc, t, ia, var, forms, stack)
            self.counts["copies"] += copies
            self.counts["groups"] += 1
            self.counts["flops"] += copies * flops_per_copy(op, cfg.sz)
            self.op_copies[op] = self.op_copies.get(op, 0) + copies
            if op == OP["mem_read"]:
                self.counts["dram_tiles_read"] += copies
            elif op == OP["mem_write"]:
                self.counts["dram_tiles_written"] += copies
            if timing is not None:
                timing.push(UNIT_INDEX[UNIT[op]], copies, pc + prog.org, op)
            pc += 1
        if stack:
            raise self._error(f"program ends inside loop {stack[-1][0]}", prog, n - 1, stack)
        if timing is not None:
            timing.finish()
        self._check_time(timing, prog, n - 1, stack, running=False)

    def elapsed_cycles(self, timing: QueueModel | None, running: bool = True) -> int:
        """Cycles simulated so far: the cycle model's (finished programs, plus the control unit's
        cycle in the running one), or in functional-only runs the control unit's own (3 per
        instruction group, 4 per loop instruction), a lower bound of the real figure."""
        if timing is not None:
            return timing.offset + (timing.c if running else 0)
        return 3 * self.counts["groups"] + 4 * self.counts["loop_instructions"]

    def _check_time(self, timing: QueueModel | None, prog: Program, pc: int, stack: list,
                    running: bool = True) -> None:
        used = self.elapsed_cycles(timing, running)
        if used > self.cfg.max_cycles:
            loops = ", ".join(f"loop {s[0]} at iteration {s[4]:,} of {s[1]:,}" for s in stack)
            raise SimTimeExceeded(f"simulated time limit of {self.cfg.max_cycles:,} cycles reached at pc "
                                  f"{pc + prog.org}" + (f" ({loops})" if loops else "") + " (-O max_cycles=N raises it)")

    # ------------------------------------------------------------------ addresses
    def _address(self, prog, row, pc, f, copies, ia, var, forms, stack, space: str) -> tuple[int, int]:
        """Formula ``f``'s tile address of copy 0 and its step per copy (copy t: base + t * step),
        checked against the memory (and the cache slot window, ``space == "cache"``)."""
        coef = forms[f]
        base = coef[8] + sum(c * v for c, v in zip(coef, var) if c)
        step = coef[ia] if ia >= 0 else 0
        limit = self.cfg.cache_tiles if space == "cache" else self.cfg.dram_tiles
        lo, hi = base, base + step * (copies - 1)
        if min(lo, hi) < 0 or max(lo, hi) >= limit:
            addrs = base + step * np.arange(copies)
            t = int(np.flatnonzero((addrs < 0) | (addrs >= limit))[0])
            raise self._error(f"APU {f} address {int(addrs[t])} outside the {space} (0..{limit - 1})", prog, pc,
                              stack, bank=t)
        if space == "cache":
            off = self._cache_offset(row)
            if off and max(lo, hi) + off >= limit:
                raise self._error(f"slot {row[16]} window address {max(lo, hi) + off} outside the cache "
                                  f"(0..{limit - 1})", prog, pc, stack)
            base += off
        return base, step

    def _cache_offset(self, row) -> int:
        slot = row[16]
        if slot and not (row[0] in (OP["load"], OP["store"]) and self.cfg.alt_slot_mode == "ignore"):
            return slot * self.cfg.slot_tiles
        return 0

    # ------------------------------------------------------------------ fast path
    def _exec_fast(self, prog, row, pc, copies, ia, var, forms, stack) -> None:
        """One instruction for all copies and samples; memory is reached through slices (views:
        copy t's tile is base + t * step), so a load or store moves each tile once."""
        op = row[0]
        cfg = self.cfg
        sz = cfg.sz
        if op not in _MEM:
            exec_group(op, row, self.regs, copies, cfg.element_format, sz)
            return
        if op in (OP["load"], OP["store"]):
            base, step = self._address(prog, row, pc, row[1], copies, ia, var, forms, stack, "cache")
            h, w = code_length(row[3], sz), code_length(row[4], sz)
            R = self.regs[row[2], :copies]
            if op == OP["load"]:
                tiles = self.cache[_span(base, step, copies)]  # one tile broadcast over the copies if step 0
                if row[5]:
                    R[...] = 0
                skip = row[6]
                if skip == 0 and h == sz and w == sz:
                    R[...] = tiles
                else:
                    R[..., skip:h + skip if h + skip <= sz else sz, :w] = tiles[..., :min(h, sz - skip), :w]
                return
            if step == 0 and copies > 1:  # every copy stores to one tile: the last one's value stays
                R = R[copies - 1:]
            dst = self.cache[_span(base, step, len(R))]
            if h == sz and w == sz:
                dst[...] = R
            else:
                dst[..., :h, :w] = R[..., :h, :w]
            return
        cb, cs = self._address(prog, row, pc, row[14], copies, ia, var, forms, stack, "cache")
        mb, ms = self._address(prog, row, pc, row[15], copies, ia, var, forms, stack, "device memory")
        n = copies
        if n > 1 and (cs if op == OP["mem_read"] else ms) == 0:  # one destination tile: the last copy's
            cb, mb, n = cb + cs * (n - 1), mb + ms * (n - 1), 1
        if op == OP["mem_read"]:
            self.cache[_span(cb, cs, n)] = self.dram.read(_span(mb, ms, n))
        else:
            self.dram.write(_span(mb, ms, n), self.cache[_span(cb, cs, n)])
        self.dram_hi = max(self.dram_hi, max(mb, mb + ms * (n - 1)) + 1)

    # ------------------------------------------------------------------ reference path
    def _exec_ref(self, prog, row, pc, t, ia, var, forms, stack) -> None:
        """Copy ``t`` of one instruction, readable: sample by sample on 2-D tiles, element by
        element where it matters."""
        op = row[0]
        cfg = self.cfg
        sz = cfg.sz
        if op not in _MEM:
            for b in range(self.batch):
                exec_copy(op, row, self.regs[:, t, b], cfg.element_format, sz)
            return
        v = list(var)
        if ia >= 0:
            v[ia] += t

        def apu(f, space, limit):
            coef = forms[f]
            addr = coef[8] + sum(c * x for c, x in zip(coef, v))
            if space == "cache":
                addr += self._cache_offset(row)
            if not 0 <= addr < limit:
                raise self._error(f"APU {f} address {addr} outside the {space} (0..{limit - 1})", prog, pc, stack,
                                  bank=t)
            return addr

        if op in (OP["load"], OP["store"]):
            a = apu(row[1], "cache", cfg.cache_tiles)
            h, w = code_length(row[3], sz), code_length(row[4], sz)
            for b in range(self.batch):
                reg = self.regs[row[2], t, b]
                if op == OP["load"]:
                    tile = self.cache[a, b].copy()
                    if row[5]:
                        reg[...] = 0
                    for r in range(h):
                        for c in range(w):
                            if r + row[6] < sz:
                                reg[r + row[6], c] = tile[r, c]
                else:
                    for r in range(h):
                        for c in range(w):
                            self.cache[a, b, r, c] = reg[r, c]
            return
        ca = apu(row[14], "cache", cfg.cache_tiles)
        ma = apu(row[15], "device memory", cfg.dram_tiles)
        for b in range(self.batch):
            if op == OP["mem_read"]:
                self.cache[ca, b] = self.dram.tile(ma, b)
            else:
                self.dram.set_tile(ma, b, self.cache[ca, b])
        self.dram_hi = max(self.dram_hi, ma + 1)

    # ------------------------------------------------------------------ race check
    def _race_check(self, prog, rows, forms, top, end_pc) -> None:
        """Re-run the independent loop that just ended iteration-major from its snapshot."""
        regs, cache, dram, start = self._race_snapshot
        mine = (self.regs.copy(), self.cache.copy(), self.dram.copy())
        self.regs, self.cache, self.dram = regs, cache, dram
        a, N = top[0], top[1]
        sw = self.cfg.superscalar_width
        var = [0] * 8
        v0 = 0
        try:
            while v0 < N:
                copies = min(N - v0, sw)
                var[a] = v0
                for t in range(copies):
                    for pc in range(start + 1, end_pc):
                        self._exec_ref(prog, rows[pc], pc, t, a, var, forms, [top])
                v0 += copies
        finally:
            other = (self.regs, self.cache, self.dram)
            self.regs, self.cache, self.dram = mine
        same = (all(np.array_equal(x, y, equal_nan=True) for x, y in zip(mine[:2], other[:2]))
                and mine[2].equals(other[2]))
        if not same:
            raise self._error(f"independent loop {a} iterations interfere (iteration-major and instruction-major "
                              "orders give different results)", prog, end_pc, [top])

    # ------------------------------------------------------------------ errors
    def _error(self, msg: str, prog: Program, pc: int, stack, bank: int = 0) -> SimError:
        loops = ", ".join(f"{LOOP_VARS[s[0]]}={s[4]}/{s[1]}" for s in stack) or "none"
        return SimError(msg, where=f"{prog.describe(pc)}, loops [{loops}], bank {bank}")

    # ------------------------------------------------------------------ host side
    def write_dram(self, base: int, tiles: np.ndarray, shared: bool = True) -> None:
        """Upload tiles to device memory at ``base`` (rounded to the element format): ``(T, SZ, SZ)``
        the same for every sample (``shared``), or ``(T, batch, SZ, SZ)`` one per sample."""
        t = np.asarray(tiles, np.float32)
        if base < 0 or base + len(t) > self.cfg.dram_tiles:
            raise SimError(f"device-memory upload of {len(t)} tiles at {base} exceeds {self.cfg.dram_tiles} tiles")
        q = quantize(t, self.cfg.element_format)
        if shared:
            self.dram.upload_shared(base, q)
        else:
            self.dram.upload(base, q)
        self.dram_hi = max(self.dram_hi, base + len(t))

    def read_dram(self, base: int, count: int) -> np.ndarray:
        """Device-memory tiles ``base .. base + count`` of every sample: ``(count, batch, SZ, SZ)``."""
        return self.dram.range(base, count)

    def reg_name(self, code: int) -> str:
        return REG_NAMES[code]


def _span(base: int, step: int, n: int) -> slice:
    """Tiles ``base, base + step, ...`` (``n`` of them) as a slice: one tile when ``step`` is 0."""
    if step == 0:
        return slice(base, base + 1)
    end = base + step * n
    return slice(base, end if end >= 0 else None, step)
