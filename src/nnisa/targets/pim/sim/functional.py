"""Functional (value-computing) multi-core simulator of the PIM ISA (spec ``pim_isa.md`` §5).

:func:`run_functional` executes a :class:`~nnisa.targets.pim.program.PimProgram` with real
data: per-core registers, local memory, event registers and array groups holding integer weight
matrices, plus one sparse global memory.  Two interchangeable interpreters share this module's
machine state, communication and scheduling (:mod:`.machine`):

* ``engine="fast"`` (default, :mod:`.functional_fast`): tight dispatch over per-core column
  lists, numpy for vectors and mvmul;
* ``engine="reference"`` (:mod:`.functional_ref`): one readable function per instruction using
  the exact integer definitions of :mod:`.semantics`.

Scheduling is deterministic: cores are visited in ascending id order and each runs until it
finishes or blocks (send/recv rendezvous, wait); blocked cores are resumed by the partner that
completes their instruction.  Well-formed programs give the same result for every visiting
order, because a transfer copies the sender's memory while the sender is blocked at the send.
When no core can run and some are unfinished, :class:`~nnisa.core.errors.DeadlockError` is
raised with the §5.6 report (:mod:`.functional_report`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ....core.errors import ConfigError
from .memory import GlobalMemory, as_bytes, load_elems
from ..program import PimProgram

from .functional_fast import prepare, run_core as run_core_fast
from .functional_ref import run_core as run_core_ref
from .machine import Machine, _format_warnings, _static_warnings
from .weights import GroupWeights, _check_capacity, load_weights, make_weights

__all__ = ["run_functional", "FunctionalResult", "GroupWeights", "load_weights", "make_weights"]

# ====================================================================== result
@dataclass
class FunctionalResult:
    """Final state of a functional run.

    Attributes
    ----------
    gmem
        The global memory (:class:`~nnisa.targets.pim.sim.memory.GlobalMemory`).
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
    wall_s, engine
        Host run time in seconds (preparation + execution) and the interpreter used.
    shapes
        (core, group) → (K, N) of the array groups' weights (the program lint uses them).
    """

    gmem: GlobalMemory
    lmem: dict[int, np.ndarray]
    regs: dict[int, list[int]]
    events: dict[int, list[int]]
    widths: dict[int, tuple[int, int]]
    instructions: dict[int, int]
    warnings: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    engine: str = "fast"
    shapes: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)

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
    from ..config import PimConfig, config_from_dict, load_config
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
                   global_address_mode: str | None = None, act_frac=None, engine: str = "fast",
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
    engine
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
    if engine == "fast":
        run_core = run_core_fast
        for core in m.cores.values():
            prepare(core)
    elif engine == "reference":
        run_core = run_core_ref
    else:
        raise ConfigError(f"engine must be 'fast' or 'reference', got {engine!r}")
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
        engine=engine,
        shapes={k: (g.K, g.N) for k, g in m.groups.items()},
    )
