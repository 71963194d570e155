"""Functional (value-computing) multi-core simulator of the PIM ISA (spec ``pim_isa.md`` §5).

:func:`run_functional` executes a :class:`~nnisa.targets.pim.program.PimProgram` with real
data: per-core registers, local memory, event registers and array groups holding integer weight
matrices, plus one sparse global memory.  Two interchangeable interpreters share this module's
machine state, communication and scheduling:

* ``path="fast"`` (default, :mod:`.functional_fast`): tight dispatch over per-core column
  lists, numpy for vectors and mvmul;
* ``path="reference"`` (:mod:`.functional_ref`): one readable function per instruction using
  the exact integer definitions of :mod:`.semantics`.

Scheduling is deterministic: cores are visited in ascending id order and each runs until it
finishes or blocks (send/recv rendezvous, wait); blocked cores are resumed by the partner that
completes their instruction.  Well-formed programs give the same result for every visiting
order, because a transfer copies the sender's memory while the sender is blocked at the send.
When no core can run and some are unfinished, :class:`~nnisa.core.errors.DeadlockError` is
raised with the §5.6 report (:mod:`.functional_report`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ...core.asm import format_row
from ...core.errors import ConfigError, DeadlockError, FormatError, SimError
from .isa import OPCODE
from .memory import GlobalMemory, GmemRangeError, as_bytes, load_elems
from .program import PimProgram
from .semantics import M32, Fault

__all__ = ["run_functional", "FunctionalResult", "GroupWeights", "load_weights", "make_weights"]

_VEC_OPS = set(range(OPCODE["mvmul"], OPCODE["vrsl"] + 1))


# ====================================================================== weights
@dataclass
class GroupWeights:
    """The programmed matrix of one array group (K × N integers) and derived data."""

    w: np.ndarray  # int64 (K, N)
    wmin: int
    wmax: int
    zero: bool
    _plans: dict = field(default_factory=dict, repr=False)
    _zeros: np.ndarray | None = field(default=None, repr=False)

    @property
    def K(self) -> int:
        return self.w.shape[0]

    @property
    def N(self) -> int:
        return self.w.shape[1]

    def zeros(self) -> np.ndarray:
        """An all-zero output vector (shared; never modified)."""
        if self._zeros is None:
            self._zeros = np.zeros(self.N, dtype=np.int64)
        return self._zeros

    def plan(self, ibiw: int) -> tuple[str, np.ndarray]:
        """How to multiply exactly for ``ibiw``-bit inputs: float32 BLAS if every partial sum is
        below 2^24, float64 below 2^53, else int64 (exact modulo 2^64, enough for wrap_obiw)."""
        p = self._plans.get(ibiw)
        if p is None:
            bound = self.K * (1 << (ibiw - 1)) * max(-self.wmin, self.wmax, 0)
            if bound < 1 << 24:
                p = ("f32", self.w.astype(np.float32))
            elif bound < 1 << 53:
                p = ("f64", self.w.astype(np.float64))
            else:
                p = ("i64", self.w)
            self._plans[ibiw] = p
        return p

    @classmethod
    def of(cls, arr: np.ndarray) -> "GroupWeights":
        w = np.ascontiguousarray(arr, dtype=np.int64)
        lo = int(w.min()) if w.size else 0
        hi = int(w.max()) if w.size else 0
        return cls(w, lo, hi, lo == 0 and hi == 0)


def _parse_key(key: Any) -> tuple[int, int]:
    if isinstance(key, tuple) and len(key) == 2:
        return int(key[0]), int(key[1])
    if isinstance(key, str) and key.startswith("c") and ".g" in key:
        c, g = key[1:].split(".g", 1)
        if c.isdigit() and g.isdigit():
            return int(c), int(g)
    raise FormatError(f"bad weights key {key!r}: expected 'c<core>.g<group>' (e.g. 'c7.g12')")


def load_weights(src: str | os.PathLike | Mapping) -> dict[tuple[int, int], np.ndarray]:
    """Read weights from an ``.npz`` file (keys ``c<core>.g<group>``) or a mapping whose keys are
    such strings or ``(core, group)`` tuples.  Values must be 2-D integer arrays."""
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        if not path.exists():
            raise FormatError("weights file not found", file=str(path))
        try:
            with np.load(path, allow_pickle=False) as z:
                src = {k: z[k] for k in z.files}
        except (ValueError, OSError, EOFError) as exc:
            raise FormatError(f"cannot read weights: {exc}", file=str(path)) from None
    out = {}
    for key, arr in src.items():
        cg = _parse_key(key)
        a = np.asarray(arr)
        if a.ndim != 2:
            raise FormatError(f"weights c{cg[0]}.g{cg[1]}: expected a 2-D K x N matrix, got shape {a.shape}")
        if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
            raise FormatError(f"weights c{cg[0]}.g{cg[1]}: expected an integer dtype, got {a.dtype}")
        out[cg] = a
    return out


def _xbar_size(program: PimProgram, config) -> tuple[int, int]:
    xs = program.config_extra.get("xbar_size") if config is None else None
    if config is not None:
        xs = config.chip_config.core_config.matrix_config.xbar_size
    if not xs:
        xs = (128, 128)
    return int(xs[0]), int(xs[1])


def _group_mbiw(program: PimProgram) -> dict[tuple[int, int], int]:
    """Smallest mbiw each (core, group) is used with (for random weights)."""
    out: dict[tuple[int, int], int] = {}
    for c, rows in program.items():
        sel = rows[rows["op"] == OPCODE["mvmul"]]
        for g, mb in zip(sel["group"].tolist(), sel["mbiw"].tolist()):
            if mb > 0:
                out[(c, g)] = min(out.get((c, g), 64), mb)
    return out


def make_weights(program: PimProgram, kind: str, *, config=None, seed: int = 0) -> dict[tuple[int, int], np.ndarray]:
    """Weights for every group of ``program.array_group_map`` at full capacity
    (K = xbar rows, N = crossbars × xbar columns): ``"zeros"`` or ``"random"`` (uniform in the
    signed range of the smallest mbiw the group is used with, default 8 bits; seeded)."""
    rows, cols = _xbar_size(program, config)
    mb = _group_mbiw(program)
    rng = np.random.default_rng(seed)
    out = {}
    for c in sorted(program.array_group_map):
        for g, nx in enumerate(program.array_group_map[c]):
            shape = (rows, int(nx) * cols)
            if kind == "zeros":
                out[(c, g)] = np.zeros(shape, dtype=np.int64)
            elif kind == "random":
                b = mb.get((c, g), 8)
                out[(c, g)] = rng.integers(-(1 << (b - 1)), 1 << (b - 1), size=shape, dtype=np.int64)
            else:
                raise ConfigError(f"unknown weights mode {kind!r}: use a file, a mapping, 'zeros' or 'random'")
    return out


def _check_capacity(program: PimProgram, weights: dict, config) -> None:
    rows, cols = _xbar_size(program, config)
    for (c, g), w in sorted(weights.items()):
        groups = program.array_group_map.get(c)
        if groups is None or g >= len(groups):
            have = 0 if groups is None else len(groups)
            raise ConfigError(f"weights c{c}.g{g}: core {c} has {have} array group(s) in the array_group_map")
        K, N = w.shape
        nx = int(groups[g])
        if K > rows or N > nx * cols:
            raise ConfigError(f"weights c{c}.g{g}: shape {K} x {N} exceeds the group's capacity "
                              f"{rows} x {nx * cols} ({nx} crossbar(s) of {rows} x {cols})")


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
        self.lmem = bytearray(lmem_size)
        self.lnp = np.frombuffer(self.lmem, dtype=np.uint8)
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


# ====================================================================== result
@dataclass
class FunctionalResult:
    """Final state of a functional run.

    Attributes
    ----------
    gmem
        The global memory (:class:`~nnisa.targets.pim.memory.GlobalMemory`).
    lmem
        core id → local memory (uint8 array).
    regs
        core id → the 32 registers (signed 32-bit Python ints).
    events
        core id → the 32 event registers (every core that has a program or received a sync).
    widths
        core id → final (ibiw, obiw).
    instructions
        core id → instructions executed.
    warnings
        Aggregated warnings, one line per kind (count and first occurrence).
    wall_s, path
        Host run time in seconds (preparation + execution) and the interpreter used.
    """

    gmem: GlobalMemory
    lmem: dict[int, np.ndarray]
    regs: dict[int, list[int]]
    events: dict[int, list[int]]
    widths: dict[int, tuple[int, int]]
    instructions: dict[int, int]
    warnings: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    path: str = "fast"

    @property
    def total_instructions(self) -> int:
        return sum(self.instructions.values())

    @property
    def instr_per_s(self) -> float:
        return self.total_instructions / self.wall_s if self.wall_s > 0 else float("inf")

    def read_gmem(self, addr: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of global memory at ``addr`` (never-written bytes are 0)."""
        return self.gmem.read_bytes(addr, nbytes)

    def read_tensor(self, addr: int, shape, bits: int) -> np.ndarray:
        """A tensor of ``bits``-bit elements in global memory, as int64 (D12)."""
        return self.gmem.read_tensor(addr, shape, bits)

    def read_lmem(self, core: int, addr: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of ``core``'s local memory."""
        return self.lmem[core][addr:addr + nbytes].tobytes()

    def read_lmem_tensor(self, core: int, addr: int, count: int, bits: int) -> np.ndarray:
        """``count`` elements of ``bits`` bits from ``core``'s local memory (int64)."""
        return load_elems(self.lmem[core], addr, count, bits, (bits + 7) // 8)


# ====================================================================== entry point
def _resolve_config(config):
    from .config import PimConfig, config_from_dict, load_config
    if config is None:
        return PimConfig()
    if isinstance(config, PimConfig):
        return config
    if isinstance(config, dict):
        return config_from_dict(config)
    return load_config(config)


def _resolve_act_frac(program: PimProgram, cfg, act_frac) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for c in program.cores:
        oc = cfg.nnisa.core(c)
        fin, fout = oc.act_in_frac, oc.act_out_frac
        if c in program.act_frac:
            fin, fout = program.act_frac[c]
        if act_frac is not None:
            pair = act_frac.get(c) if isinstance(act_frac, Mapping) else act_frac
            if pair is not None:
                fin, fout = pair
        out[c] = (fin, fout)
    return out


def run_functional(program: PimProgram, config=None, weights=None, gmem=None, *,
                   global_address_mode: str | None = None, act_frac=None, path: str = "fast",
                   weight_seed: int = 0, lmem: Mapping[int, Mapping[int, Any]] | None = None,
                   schedule: str = "ascending") -> FunctionalResult:
    """Run ``program`` with real values (spec §5).

    Parameters
    ----------
    program
        The program (any file format read into :class:`PimProgram`).
    config
        :class:`~nnisa.targets.pim.config.PimConfig`, a config dict or a config file path;
        ``None`` = pimsim-nn defaults (local memory 1 MiB, unbounded global memory).
    weights
        Array-group matrices: an ``.npz`` path or a mapping with keys ``c<core>.g<group>`` or
        ``(core, group)``; ``"zeros"`` / ``"random"`` fill every group of the array_group_map at
        full capacity (for weightless programs); ``None`` = no weights (mvmul is then an error).
    gmem
        Initial global memory: a :class:`GlobalMemory` (used and modified in place) or a
        mapping ``address → bytes / uint8 array``.
    global_address_mode
        ``"pair"`` (D6) or ``"single32"`` (PIMCOMP-NN); default from the config (``pair``).
    act_frac
        ``(act_in_frac, act_out_frac)`` for every core or ``{core: (in, out)}``; ``None``
        entries keep the D9 defaults.  Overrides ``program.act_frac`` and the config.
    path
        ``"fast"`` or ``"reference"`` interpreter (identical results).
    weight_seed
        Seed for ``weights="random"``.
    schedule
        ``"ascending"`` or ``"descending"`` core visiting order; results of well-formed programs
        do not depend on it (a test and debugging aid).
    lmem
        Initial local-memory contents ``{core: {address: bytes / uint8 array}}`` (default
        all zero, §1.4); handy for tests and debugging.

    Raises
    ------
    SimError
        Run-time error (message names core, pc, instruction and address).
    DeadlockError
        No core can make progress (``err.report`` holds the §5.6 report).
    ConfigError, FormatError
        Bad configuration or weights.
    """
    t0 = time.perf_counter()
    cfg = _resolve_config(config)
    mode = global_address_mode or cfg.nnisa.global_address_mode
    if mode not in ("pair", "single32"):
        raise ConfigError(f"global_address_mode must be 'pair' or 'single32', got {mode!r}")
    if isinstance(weights, str) and weights in ("zeros", "random"):
        wdict = make_weights(program, weights, config=cfg, seed=weight_seed)
    elif weights is None:
        wdict = {}
    else:
        wdict = load_weights(weights)
    _check_capacity(program, wdict, cfg)
    if isinstance(gmem, GlobalMemory):
        gm = gmem
    else:
        limit = int(cfg.chip_config.global_memory_config.memory_size) if cfg.gmem_bounded else 1 << 32
        gm = GlobalMemory(limit, {int(a): as_bytes(s) for a, s in (gmem or {}).items()})
    m = Machine(program, cfg, wdict, gm, mode, _resolve_act_frac(program, cfg, act_frac))
    for c, segs in (lmem or {}).items():
        core = m.cores.get(int(c))
        if core is None:
            raise ConfigError(f"initial local memory for core {c}, which has no program")
        for addr, seg in segs.items():
            data = as_bytes(seg)
            if addr < 0 or addr + len(data) > m.lsize:
                raise ConfigError(f"initial local memory of core {c} at {addr} (+{len(data)} bytes) "
                                  f"exceeds the local memory size {m.lsize}")
            core.lmem[addr:addr + len(data)] = data
    _static_warnings(m)
    if path == "fast":
        from .functional_fast import prepare, run_core
        for core in m.cores.values():
            prepare(core)
    elif path == "reference":
        from .functional_ref import run_core
    else:
        raise ConfigError(f"path must be 'fast' or 'reference', got {path!r}")
    if schedule not in ("ascending", "descending"):
        raise ConfigError(f"schedule must be 'ascending' or 'descending', got {schedule!r}")
    m.run(run_core, schedule)
    return FunctionalResult(
        gmem=gm,
        lmem={c: core.lnp for c, core in m.cores.items()},
        regs={c: list(core.regs) for c, core in m.cores.items()},
        events={c: list(ev) for c, ev in sorted(m.events.items())},
        widths={c: (core.ibiw, core.obiw) for c, core in m.cores.items()},
        instructions={c: core.pc for c, core in m.cores.items()},
        warnings=_format_warnings(m),
        wall_s=time.perf_counter() - t0,
        path=path,
    )
