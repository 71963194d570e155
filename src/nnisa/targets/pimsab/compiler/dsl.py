"""The public DSL of the PIMSAB compiler (spec §4.1): ``from nnisa.targets.pimsab.compiler import dsl as T``.

Declare tensors and loops, write the computation, organise loops, build::

    a = T.tensor((4, 256), T.i8, name="a")
    b = T.tensor((4, 256), T.i8, name="b")
    x, y = T.loop(4, "x"), T.loop(256, "y")
    c = T.compute("c", (x, y), a[x, y] + b[x, y])
    s = T.schedule(c)
    s.bitlines(y)
    prog = T.build(s, config="pimsab_s")
    out = prog.run({"a": A, "b": B})["c"]       # == prog.reference({"a": A, "b": B})["c"]

:func:`build` runs the pipeline of §4.2: analysis, exhaustive distribution search with CRAM
allocation and adaptive precision, then code generation into a :class:`PimsabProgram` plus the
DRAM layout the host uses to place inputs and read outputs.
"""

from __future__ import annotations

import builtins
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import PimsabConfig, load_config
from ..program import PimsabProgram
from ..sim.values import float_max, float_min
from .codegen import Generator
from .lang import (Compute, CompileError, DType, Schedule, bf16, compute, f16, f32, i, loop, max, maximum, min,
                   minimum, red_loop, reductions, schedule, select, sum, tensor, u)
from .layout import Layout
from .model import Candidate, Nest, analyse, evaluate, stage_breakdown
from .residency import residency_variants
from .search import describe, search
from .widths import float_format, round_float, wrap
from .widths import reference as eval_reference

i1, i2, i4, i8, i16, i32, i64 = (i(w) for w in (1, 2, 4, 8, 16, 32, 64))
u1, u2, u4, u8, u16, u32, u64 = (u(w) for w in (1, 2, 4, 8, 16, 32, 64))
OPTIONS = ("adaptive_precision", "bit_lifetime", "reduction_codegen", "search_limit", "tiles", "arrays")


@dataclass
class Compiled:
    """A compiled DSL program: instruction streams, DRAM layout, the chosen distribution, a report."""

    program: PimsabProgram
    layout: Layout
    config: PimsabConfig
    schedule: Schedule
    candidate: Candidate
    report: dict[str, Any] = field(default_factory=dict)

    def inputs(self, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Tensor values → the ``inputs`` of :func:`simulate` (the packed DRAM image)."""
        return self.layout.pack(values)

    def run(self, values: dict[str, np.ndarray], *, mode: str = "functional", **options: Any):
        """Simulate with these input tensors; returns ``(outputs by name, SimResult)``."""
        from ..sim.simulate import simulate
        res = simulate(self.program, config=self.config, inputs=self.inputs(values), mode=mode, **options)
        outs = self.layout.unpack(res.details.machine.dram.read) if res.details.machine is not None else {}
        t = self.schedule.op.dtype
        return {k: host_float(wrap(v, t), t) for k, v in outs.items()}, res

    def run_batch(self, values: list[dict[str, np.ndarray]], *, mode: str = "functional", **options: Any):
        """:meth:`run` for many samples in one batched simulation; returns ``(outputs by name per
        sample, SimResult of the first sample)``."""
        from ..sim.simulate import simulate_many
        images = self.layout.pack_batch(values)   # rows of one array: the machine takes them without a copy
        options.setdefault("observed", self.layout.observed_bytes())
        res = simulate_many(self.program, config=self.config, inputs=[{"dram_0x0": im} for im in images],
                            mode=mode, **options)
        m, t = res[0].details.machine, self.schedule.op.dtype
        if m is None:
            return [{} for _ in values], res[0]
        if m.batch is None:   # micro-op mode ran the samples one by one
            outs = [self.layout.unpack(r.details.machine.dram.read) for r in res]
        else:
            outs = self.layout.unpack_batch(m.dram.read, len(values))
        return [{k: host_float(wrap(v, t), t) for k, v in o.items()} for o in outs], res[0]

    def reference(self, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The exact NumPy result of the computation (declared wrap-around)."""
        return {self.schedule.op.name: reference(self.schedule.op, values)}


def reference(op: Compute, values: dict[str, np.ndarray]) -> np.ndarray:
    """Evaluate a compute exactly in int64 (reductions loop over the reduction space)."""
    grids = np.indices(op.shape, dtype=np.int64)
    env = {lp: g + lp.lo for lp, g in zip(op.axes, grids)}
    reds = reductions(op.expr)
    red = reds[0] if reds else None
    fmt = float_format(op.expr)

    def value(acc):
        arr = np.asarray(values[acc.tensor.name]).astype(np.float32 if acc.tensor.dtype.is_float else np.int64)
        idx = []
        for a in acc.index:
            v = np.int64(a.const)
            for lp, c in a.terms.items():
                v = v + c * (env[lp] - lp.lo)
            idx.append(np.broadcast_to(v, op.shape))
        for d, (ix, n) in enumerate(zip(idx, arr.shape)):
            if ix.min() < 0 or ix.max() >= n:
                raise CompileError(f"tensor {acc.tensor.name}: index out of range in dimension {d}")
        return arr[tuple(idx)]
    if red is None:
        return host_float(np.broadcast_to(eval_reference(op.expr, value), op.shape).copy(), op.dtype)
    acc = None
    for combo in itertools.product(*[range(lp.extent) for lp in red.loops]):
        for lp, v in zip(red.loops, combo):
            env[lp] = np.int64(v + lp.lo)
        v = np.broadcast_to(eval_reference(red.expr, value), op.shape)
        if acc is None:
            acc = v.copy()
        elif red.kind == "sum":
            acc = acc + v if not fmt else round_float(np.add(acc, v, dtype=np.float32), fmt)
        else:
            f = (float_max if red.kind == "max" else float_min) if fmt else \
                (np.maximum if red.kind == "max" else np.minimum)
            acc = f(acc, v)
    from .lang import declared_type
    return host_float(wrap(wrap(acc, declared_type(op.expr)), op.dtype), op.dtype)


def host_float(v: np.ndarray, t: DType) -> np.ndarray:
    """Float results as the host sees them: float16 arrays for f16, float32 for f32 and bf16
    (every bf16 value is a float32 value)."""
    return v.astype(np.float16) if t.token == "f16" else v


def build(s: Schedule, config: Any = "base", *, adaptive_precision: bool = True, bit_lifetime: bool = True,
          reduction_codegen: str = "reduce_tile", search_limit: int = 20000, tiles: dict | None = None,
          arrays: dict | None = None) -> Compiled:
    """Compile a schedule (spec §4.2).  ``tiles``/``arrays`` (loop → factor) fix the distribution
    instead of searching; ``adaptive_precision=False`` keeps the declared widths (Table 6)."""
    t0 = time.perf_counter()
    cfg = load_config(config)
    if reduction_codegen not in ("reduce_tile", "explicit"):
        raise CompileError(f"reduction_codegen must be 'reduce_tile' or 'explicit', got {reduction_codegen!r}")
    explicit = reduction_codegen == "explicit"
    nest = analyse(s, cfg)
    if tiles is not None or arrays is not None:
        cand = evaluate(nest, cfg, {k: v for k, v in (tiles or {}).items() if v > 1},
                        {k: v for k, v in (arrays or {}).items() if v > 1}, adaptive=adaptive_precision,
                        bit_lifetime=bit_lifetime, explicit=explicit)
        for lp in nest.leaves:
            if lp is not nest.bitline and lp.extent % ((tiles or {}).get(lp, 1) * (arrays or {}).get(lp, 1)):
                raise CompileError(f"loop {lp.name}: factors do not divide its extent {lp.extent}")
        moved = residency_variants(nest, cfg, cand.tiles, cand.arrays, cand, adaptive=adaptive_precision,
                                   bit_lifetime=bit_lifetime, explicit=explicit) \
            if builtins.max(cand.rows, cand.real_rows) > cfg.cram_rows else []
        if moved:  # spec §4.5 fallback: residency levels moved inward
            cand = builtins.min(moved, key=lambda v: v.key(nest.leaves))
        if builtins.max(cand.rows, cand.real_rows) > cfg.cram_rows:
            raise CompileError(f"compute {s.op.name}: infeasible organisation: {cand.breakdown()} > "
                               f"{cfg.cram_rows} ({describe(cand)}); use a more conservative loop organisation")
        stats = {"candidates_evaluated": 1, "residency_variants": len(moved)}
    else:
        cand, stats = search(nest, cfg, adaptive=adaptive_precision, bit_lifetime=bit_lifetime,
                             search_limit=search_limit, explicit=explicit)
    t1 = time.perf_counter()
    layout = Layout()
    for acc in {id(o.access.tensor): o.access.tensor for o in nest.operands}.values():
        layout.inputs[acc.name] = (acc.shape, acc.dtype.token)
    layout.outputs[s.op.name] = (s.op.shape, s.op.dtype.token)
    gen = Generator(cand.nest, cand, cfg, layout, adaptive=adaptive_precision, bit_lifetime=bit_lifetime,
                    mode=s.broadcast_mode, explicit=explicit)
    prog = gen.generate()
    report = {"distribution": describe(cand), "occupancy": cand.occupancy, "wordlines": cand.rows,
              "wordlines_codegen": gen.rows_used, "buffers": {b.name: b.rows for b in cand.buffers},
              "reloads": {b.name: b.reload for b in cand.buffers if b.reload > 1},
              "estimated_dram_bits": cand.traffic_bits, "estimated_cycles": cand.cycles,
              "instructions": len(prog), "search_s": t1 - t0, "codegen_s": time.perf_counter() - t1,
              **stats, **layout.summary()}
    return Compiled(prog, layout, cfg, s, cand, report)


__all__ = ["Compiled", "CompileError", "DType", "build", "compute", "reference", "schedule", "tensor", "loop",
           "red_loop", "sum", "max", "min", "maximum", "minimum", "select", "i", "u", "f32", "f16", "bf16",
           "stage_breakdown", "analyse", "Nest", "OPTIONS"] + [f"{k}{w}" for k in "iu" for w in (1, 2, 4, 8, 16, 32, 64)]
