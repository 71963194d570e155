"""The Cherry runtime: replays a :class:`~nnisa.targets.cherry.compiler.builder.Plan` on a
simulated device (spec ``cherry.md`` §5.3).

Inputs are converted to their views' matrices, tiled and uploaded; constants are uploaded once;
``device`` steps run programs (functional values and the cycle model); ``host`` steps download a
tensor, transform its layout and upload the result (counted as host bytes, not device cycles);
outputs are downloaded, unpadded and converted back to the model's shapes.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ....core.errors import FormatError, SimError
from ....core.target import Stats
from ..config import CherryConfig
from ..formats.bundle import CompiledModel
from ..layout import from_matrix, from_tiles, im2col_matrix, pool_windows, to_matrix, to_tiles
from ..program import Plan
from .element import tile_bytes
from .machine import Machine
from .run import make_timing, recorded_timeline, run_programs, stats_of


class Device:
    """A simulated device holding a plan's tensors."""

    def __init__(self, plan: Plan, cfg: CherryConfig, mode: str = "both", engine: str = "fast",
                 record: bool = False):
        if cfg.sz != plan.sz:
            raise SimError(f"the compiled model is for SZ={plan.sz}, the configuration has SZ={cfg.sz}")
        self.plan = plan
        self.cfg = cfg
        self.mode = mode
        self.engine = engine
        self.machine = Machine(cfg)
        self.tm = make_timing(cfg, record) if mode != "functional" else None
        self.host_bytes = 0
        for tid, mat in plan.consts.items():
            self.upload(tid, mat)

    def upload(self, tid: int, mat: np.ndarray) -> None:
        t = self.plan.tensors[tid]
        if tuple(mat.shape) != (t["batch"], t["rows"], t["cols"]):
            raise FormatError(f"tensor {tid}: expected a {(t['batch'], t['rows'], t['cols'])} matrix, "
                              f"got {tuple(mat.shape)}")
        if self.mode == "timing":
            return
        self.machine.write_dram(t["base"], to_tiles(mat, self.cfg.sz))

    def download(self, tid: int) -> np.ndarray:
        t = self.plan.tensors[tid]
        tiles = self.machine.dram[t["base"]:t["base"] + t["tiles"]]
        return from_tiles(tiles, t["batch"], t["rows"], t["cols"], self.cfg.sz).copy()

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Upload ``inputs`` (logical tensors by name), run every step, return logical outputs."""
        plan = self.plan
        for name, spec in (plan.inputs.items() if self.mode != "timing" else ()):
            if name not in inputs:
                if len(plan.inputs) == 1 and len(inputs) == 1:
                    value = next(iter(inputs.values()))
                else:
                    raise FormatError(f"missing input {name!r} (inputs: {', '.join(plan.inputs)})")
            else:
                value = inputs[name]
            value = np.asarray(value, np.float32)
            if int(np.prod(value.shape)) != int(np.prod(spec["view"]["shape"])):
                raise FormatError(f"input {name!r}: shape {value.shape} does not match {spec['view']['shape']}")
            self.upload(spec["tensor"], to_matrix(value.reshape(spec["view"]["shape"]), spec["view"]))
        tb = tile_bytes(self.cfg.sz, self.cfg.element_format)
        for step in plan.steps:
            if step["kind"] == "device":
                run_programs(self.machine, [plan.programs[i] for i in step["programs"]], mode=self.mode,
                             engine=self.engine, timing=self.tm)
                continue
            src, dst = plan.tensors[step["src"]], plan.tensors[step["dst"]]
            self.host_bytes += (src["tiles"] + dst["tiles"]) * tb
            if self.mode == "timing":
                continue
            x = from_matrix(self.download(step["src"]), step["params"]["src_view"])
            self.upload(step["dst"], host_transform(step["op"], x, step["params"]))
        if self.mode == "timing":
            return {}
        return {name: from_matrix(self.download(spec["tensor"]), spec["view"]).astype(np.float32)
                for name, spec in plan.outputs.items()}

    def stats(self, wall_s: float) -> Stats:
        progs = self.plan.programs
        return stats_of(self.machine, self.tm, progs, wall_s,
                        {"host_bytes": self.host_bytes, "device_tensors": len(self.plan.tensors),
                         "dram_tiles_used": self.plan.dram_tiles})


def host_transform(op: str, x: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """The runtime's layout transforms (§5.3, §6.7): logical tensor → the destination matrices."""
    if op == "relayout":
        return to_matrix(x.reshape(p["dst_view"]["shape"]) if p["dst_view"]["kind"] == "plain" else x,
                         p["dst_view"])
    if op == "broadcast":
        return to_matrix(np.ascontiguousarray(np.broadcast_to(x, p["dst_view"]["shape"])), p["dst_view"])
    if op == "permute":
        y = np.transpose(x, p["perm"])
        return to_matrix(y, p["dst_view"])
    if op == "im2col":
        return im2col_matrix(x, p)
    if op == "windows":
        return pool_windows(x, p)
    raise SimError(f"unknown host step {op!r}")


def simulate_compiled(model: CompiledModel, cfg: CherryConfig, inputs: dict[str, np.ndarray] | None, *,
                      mode: str = "both", engine: str = "fast", timeline: bool = False):
    """Run a compiled model (bundle) on one sample; returns (outputs, Stats, Device, Timeline or None)."""
    t0 = time.perf_counter()
    dev = Device(model.plan, cfg, mode, engine, record=timeline)
    if not inputs and mode != "timing":
        raise FormatError("a compiled Cherry model needs its inputs (--inputs X.npz with the model's input names)")
    outs = dev.run(inputs or {})
    st = dev.stats(time.perf_counter() - t0)
    return outs, st, dev, recorded_timeline(dev.tm, timeline, "Cherry model")
