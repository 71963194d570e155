"""Running Tensil programs and models (spec §7.2, §5.5): consts, inputs, runs, outputs.

:class:`Emulator` owns one :class:`~.machine.Machine` and runs a program on it with the fast
kernel (:mod:`.fast`) or the reference interpreter.  :func:`emulate_model` is ``tensil emulate``:
load the consts (into DRAM1 or local), then for each run write the inputs to DRAM0, execute the
whole program and read the outputs back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....core.errors import SimError
from ..formats.model import TensilModel
from ..layout import activation_to_vectors
from ..numerics import TOLERANCE, SatStats
from ..program import TensilProgram
from .fast import STAT_KINDS, run_program
from .machine import LOADLUT, LOOKUP, SIMD, Machine, check_program

PATHS = ("fast", "reference")


class Emulator:
    """A Tensil machine plus the choice of interpreter (``fast`` or ``reference``)."""

    def __init__(self, arch, engine: str = "fast") -> None:
        if engine not in PATHS:
            raise SimError(f"unknown engine {engine!r} (choose {', '.join(PATHS)})")
        self.machine = Machine(arch)
        self.engine = engine
        self.wall_s = 0.0
        self._stats = np.zeros((len(STAT_KINDS), 4))
        self._checked = None

    def _fast_ok(self, prog: TensilProgram) -> bool:
        if self.machine.num.is_float or prog.arch.lut is not None:
            return False
        op = prog.rows["hdr"] >> 4
        return not ((op == LOADLUT).any() or ((op == SIMD) & (prog.rows["sop"] == LOOKUP)).any())

    def run(self, prog: TensilProgram) -> None:
        """Execute ``prog`` once on the current state."""
        m = self.machine
        if prog.arch != m.arch:
            raise SimError("program and machine architectures differ")
        t0 = time.perf_counter()
        if self._checked is not prog.rows:  # static checks and kernel columns, once per program
            self._fast = self.engine == "fast" and self._fast_ok(prog)
            if self._fast:
                check_program(prog, m)
                r = prog.rows
                self._cols = [np.ascontiguousarray(r[c], dtype=np.int64)
                              for c in ("hdr", "a0", "s0", "a1", "s1", "n", "sop", "sl", "sr", "sd")]
                self._config = r[(r["hdr"] >> 4) == 0xF].tolist()
            self._checked = prog.rows
        if self._fast:
            run_program(*self._cols, m.local, m.acc, m.dram0, m.dram1, m.weights, m.regs, m.num.bits, m.num.bp,
                        self._stats, m.num.bits <= 18)
            for row in self._config:
                m.config[row[10]] = row[11]
            m.executed += len(prog)
        else:
            m.run_reference(prog)
        self.wall_s += time.perf_counter() - t0

    def saturation(self) -> dict[str, dict]:
        """Overflow/underflow statistics per instruction kind (and input conversion), in floats."""
        scale = 1.0 if self.machine.num.is_float else 1.0 / (1 << self.machine.num.bp)
        out: dict[str, SatStats] = {}
        for k, s in self.machine.num.stats.items():
            out[k] = s
        for i, kind in enumerate(STAT_KINDS):
            o, u, mx, sm = self._stats[i]
            if o or u:
                s = out.setdefault(kind, SatStats())
                s.overflows += int(o)
                s.underflows += int(u)
                s.max_delta = max(s.max_delta, mx)
                s.sum_delta += sm
        return {k: v.to_dict(scale) for k, v in out.items() if v.count}


@dataclass
class ModelRun:
    """Outputs of :func:`emulate_model`: raw vectors ``(runs, size, N)`` per output name."""

    raw: dict[str, np.ndarray]
    floats: dict[str, np.ndarray]
    runs: int
    wall_s: float
    saturation: dict[str, dict]
    compare: dict[str, Any] | None = None
    emulator: Any = field(default=None, repr=False)


def load_consts(emu: Emulator, model: TensilModel, local_consts: bool | None = None) -> None:
    """Load every consts file into DRAM1 (or local, §5.3) at its base."""
    to_local = model.load_consts_to_local if local_consts is None else local_consts
    for base, raw in model.load_consts(emu.machine.num):
        emu.machine.write_vectors("local" if to_local else "dram1", base, raw)


def _input_arrays(model: TensilModel, inputs: dict[str, np.ndarray] | None) -> tuple[dict[str, np.ndarray], int]:
    """Match user arrays to model inputs; each becomes float32 ``(runs, size, N)``."""
    names = model.tensor_names("inputs")
    n = model.arch.array_size
    inputs = dict(inputs or {})
    if not names:
        return {}, 1
    if len(names) == 1 and len(inputs) == 1 and names[0] not in inputs:
        inputs = {names[0]: next(iter(inputs.values()))}
    missing = [k for k in names if k not in inputs]
    if missing:
        raise SimError(f"missing input(s) {', '.join(missing)} (model inputs: {', '.join(names)}; given: "
                       f"{', '.join(inputs) or 'none'})")
    out, runs = {}, None
    shapes = model.extensions.get("x_nnisa_input_shapes") or {}
    for k in names:
        size = model.tensor_size("inputs", k)
        if size == 0:
            raise SimError(f"input {k}: the model declares it with 0 vectors (size 0 in its inputs)",
                           file=None if model.path is None else str(model.path))
        a = _finite(k, inputs[k])
        shape = shapes.get(k)
        if (shape is not None and a.ndim >= 2 and list(a.shape[1:]) != list(shape[1:]) and a.ndim != len(shape) + 1
                and int(np.prod(a.shape[1:])) == int(np.prod(shape[1:]))):
            a = a.reshape((a.shape[0], *shape[1:]))  # the same values in the model's unflattened layout (NCHW)
        if shape is not None and a.ndim == len(shape) + 1 and list(a.shape[1:]) == list(shape):
            a = a.reshape((-1, *shape[1:]))  # (N, *shape): N samples
        if shape is not None and not (a.ndim == len(shape) and list(a.shape[1:]) == list(shape[1:])) \
                and not (a.ndim == 2 and a.shape[1] == n):  # neither the model's tensors nor Tensil's vectors
            from ....core.bundle import expected_shapes
            raise SimError(f"input {k}: got shape {tuple(a.shape)}; expected {expected_shapes(list(shape))}, "
                           f"or Tensil's vectors (runs·{size}, {n})")
        if shape is not None and a.ndim == len(shape) and list(a.shape[1:]) == list(shape[1:]):
            # a batch of model-shaped tensors (NCHW or 2-D): lay each out in Tensil's vectors
            per = shape[0]
            a = np.concatenate([activation_to_vectors(a[i:i + per], n) for i in range(0, len(a), per)])
        a = a.reshape(-1)
        if a.size == 0 or a.size % (size * n):
            raise SimError(f"input {k}: {a.size} values is not a whole number of runs of {size} vectors × {n}")
        r = a.size // (size * n)
        if runs is not None and r != runs:
            raise SimError(f"inputs give different numbers of runs ({runs} and {r})")
        runs = r
        out[k] = a.reshape(r, size, n)
    return out, runs or 1


def _finite(name: str, values: Any) -> np.ndarray:
    """``values`` as float32 after refusing NaN and ±infinity (Tensil's fixed point has neither: the
    conversion would turn them into an arbitrary bound or 0), naming the first one's position.
    Finite values beyond float32 saturate like any other out-of-range value."""
    a = np.asarray(values)
    if a.dtype.kind not in "biuf":
        raise SimError(f"input {name}: expected numbers, got dtype {a.dtype}")
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            pos = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), a.shape))
            raise SimError(f"input {name}: {a[pos]} at index {list(pos)} is not a finite number "
                           f"({int(bad.sum()):,} non-finite in all); Tensil's fixed point has no NaN or infinity")
    with np.errstate(over="ignore"):
        return a.astype(np.float32)


def emulate_model(model: TensilModel, program: TensilProgram, inputs: dict[str, np.ndarray] | None = None, *,
                  runs: int | None = None, local_consts: bool | None = None, engine: str = "fast",
                  compare: np.ndarray | None = None, conversion: str = "tensil",
                  emulator: Emulator | None = None) -> ModelRun:
    """``tensil emulate``: consts, then per run inputs → program → outputs."""
    emu = emulator or Emulator(model.arch, engine)
    m = emu.machine
    if emulator is None:
        load_consts(emu, model, local_consts)
    arrays, nruns = _input_arrays(model, inputs)
    if runs is not None:
        if arrays and runs != nruns:
            raise SimError(f"--runs {runs} but the inputs hold {nruns} run(s)")
        nruns = runs
    outs = {k: [] for k in model.tensor_names("outputs")}
    for r in range(nruns):
        for name, a in arrays.items():
            raw = m.num.from_float(a[r], "convert", conversion)
            off = 0
            for seg in model.segments("inputs", name):
                m.write_vectors("dram0", seg.base, raw[off:off + seg.size])
                off += seg.size
        emu.run(program)
        for name in outs:
            parts = [m.read_vectors("dram0", seg.base, seg.size) for seg in model.segments("outputs", name)]
            outs[name].append(np.concatenate(parts) if parts else np.zeros((0, m.n), m.dtype))
    raw = {k: np.stack(v) for k, v in outs.items()}
    floats = {k: m.num.to_float(v) for k, v in raw.items()}
    res = ModelRun(raw, floats, nruns, emu.wall_s, emu.saturation(), emulator=emu)
    if compare is not None:
        res.compare = compare_outputs(floats, compare, model.arch.data_type)
    return res


def compare_outputs(floats: dict[str, np.ndarray], expected: np.ndarray, data_type: str) -> dict[str, Any]:
    """``-c compare.csv``: every output vector (runs concatenated) against the expected CSV."""
    got = np.concatenate([v.reshape(-1, v.shape[-1]) for v in floats.values()])
    exp = np.asarray(expected, dtype=np.float64).reshape(-1, got.shape[-1]) if got.size else np.asarray(expected)
    tol = TOLERANCE[data_type]
    if exp.shape != got.shape:
        raise SimError(f"compare file has {exp.shape[0]} vectors, the outputs {got.shape[0]}")
    err = np.abs(got - exp)
    worst = np.unravel_index(int(np.argmax(err)), err.shape) if err.size else (0, 0)
    max_err = float(err.max()) if err.size else 0.0
    res = {"tolerance": tol, "max_error": max_err, "ok": max_err <= tol,
           "worst_vector": int(worst[0]), "worst_lane": int(worst[1])}
    if not res["ok"]:
        raise SimError(f"outputs differ from the compare file: |Δ| {max_err:g} > tolerance {tol:g} "
                       f"at vector {worst[0]} lane {worst[1]}")
    return res
