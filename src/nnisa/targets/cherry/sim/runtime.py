"""The Cherry runtime: replays a :class:`~nnisa.targets.cherry.compiler.builder.Plan` on a
simulated device (spec ``cherry.md`` §5.3).

Inputs are converted to their views' matrices, tiled and uploaded; constants are uploaded once;
``device`` steps run programs (functional values and the cycle model); ``host`` steps download a
tensor, transform its layout and upload the result (counted as host bytes, not device cycles);
outputs are downloaded, unpadded and converted back to the model's shapes.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

import numpy as np

from ....core.errors import FormatError, SimError
from ....core.target import Stats
from ....frontend.float_eval import pad_array, take_axes
from ..config import CherryConfig
from ..formats.bundle import CompiledModel
from ..layout import from_matrix, from_tiles, im2col_matrix, pool_windows, to_matrix, to_tiles
from ..program import Plan
from .element import tile_bytes
from .machine import Machine
from .energy import energy_of
from .run import make_timing, recorded_timeline, run_programs, stats_of


class Device:
    """A simulated device holding a plan's tensors for ``batch`` samples at once (constants once)."""

    def __init__(self, plan: Plan, cfg: CherryConfig, mode: str = "both", engine: str = "fast",
                 record: bool = False, batch: int = 1):
        if cfg.sz != plan.sz:
            raise SimError(f"the compiled model is for SZ={plan.sz}, the configuration has SZ={cfg.sz}")
        self.plan = plan
        self.cfg = cfg
        self.mode = mode
        self.engine = engine
        self.batch = batch
        self.machine = Machine(cfg, batch, plan.dram_tiles)
        self.tm = make_timing(cfg, record) if mode != "functional" else None
        self.host_bytes = 0
        self.meter = LayerMeter(self)
        for tid, mat in plan.consts.items():
            self._check(tid, mat)
            if mode != "timing":
                self.machine.write_dram(plan.tensors[tid]["base"], to_tiles(mat, cfg.sz))

    def _check(self, tid: int, mat: np.ndarray) -> None:
        t = self.plan.tensors[tid]
        if tuple(mat.shape) != (t["batch"], t["rows"], t["cols"]):
            raise FormatError(f"tensor {tid}: expected a {(t['batch'], t['rows'], t['cols'])} matrix, "
                              f"got {tuple(mat.shape)}")

    def upload(self, tid: int, mats: list[np.ndarray]) -> None:
        """Tensor ``tid`` of every sample (one (B, R, C) matrix batch per sample)."""
        for m in mats:
            self._check(tid, m)
        if self.mode == "timing":
            return
        tiles = np.stack([to_tiles(m, self.cfg.sz) for m in mats], axis=1)
        self.machine.write_dram(self.plan.tensors[tid]["base"], tiles, shared=False)

    def download(self, tid: int) -> list[np.ndarray]:
        """Tensor ``tid`` of every sample: one (B, R, C) matrix batch per sample."""
        t = self.plan.tensors[tid]
        tiles = self.machine.read_dram(t["base"], t["tiles"])
        return [from_tiles(tiles[:, s], t["batch"], t["rows"], t["cols"], self.cfg.sz).copy()
                for s in range(self.batch)]

    def run(self, samples: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
        """Upload the samples' inputs (logical tensors by name; ``batch`` samples), run every step
        once for all of them, return each sample's logical outputs."""
        plan = self.plan
        if len(samples) != self.batch:
            raise SimError(f"the device runs {self.batch} samples at once, got {len(samples)}")
        for name, spec in (plan.inputs.items() if self.mode != "timing" else ()):
            view = spec["view"]
            self.upload(spec["tensor"], [to_matrix(_input(s, name, spec, plan), view) for s in samples])
        tb = tile_bytes(self.cfg.sz, self.cfg.element_format)
        for step in plan.steps:
            self.meter.begin(step.get("layer"))
            if step["kind"] == "device":
                run_programs(self.machine, [plan.programs[i] for i in step["programs"]], mode=self.mode,
                             engine=self.engine, timing=self.tm)
                self.meter.end(sum(len(plan.programs[i]) for i in step["programs"]))
                continue
            srcs = step["srcs"] if "srcs" in step else [step["src"]]
            self.host_bytes += (sum(plan.tensors[s]["tiles"] for s in srcs) + plan.tensors[step["dst"]]["tiles"]) * tb
            self.meter.end(0)
            if self.mode == "timing":
                continue
            p = step["params"]
            if "srcs" in step:  # one logical tensor per source and sample
                xs = [[from_matrix(m, v) for m in self.download(s)] for s, v in zip(srcs, p["src_views"])]
                self.upload(step["dst"], [to_matrix(host_function(step["op"], list(one), p), p["dst_view"])
                                          for one in zip(*xs)])
                continue
            self.upload(step["dst"], [host_transform(step["op"], from_matrix(m, p["src_view"]), p)
                                      for m in self.download(step["src"])])
        if self.mode == "timing":
            return [{} for _ in samples]
        outs = {name: self.download(spec["tensor"]) for name, spec in plan.outputs.items()}
        return [{name: from_matrix(mats[s], plan.outputs[name]["view"]).astype(np.float32)
                 for name, mats in outs.items()} for s in range(self.batch)]

    def stats(self, wall_s: float) -> Stats:
        progs = self.plan.programs
        st = stats_of(self.machine, self.tm, progs, wall_s,
                      {"host_bytes": self.host_bytes, "device_tensors": len(self.plan.tensors),
                       "dram_tiles_used": self.plan.dram_tiles})
        st.layers = self.meter.rows() if self.tm is not None else None
        return st


def _input(sample: dict[str, np.ndarray], name: str, spec: dict[str, Any], plan: Plan) -> np.ndarray:
    """Input ``name`` of one sample in its view's logical shape (a lone input may go by any name)."""
    if name not in sample:
        if len(plan.inputs) == 1 and len(sample) == 1:
            value = next(iter(sample.values()))
        else:
            raise FormatError(f"missing input {name!r} (inputs: {', '.join(plan.inputs)})")
    else:
        value = sample[name]
    value = np.asarray(value, np.float32)
    if int(np.prod(value.shape)) != int(np.prod(spec["view"]["shape"])):
        raise FormatError(f"input {name!r}: shape {value.shape} does not match {spec['view']['shape']}")
    return value.reshape(spec["view"]["shape"])


class LayerMeter:
    """Per-layer figures of a run (issue 28 item 5): each plan step's cycles (its programs' cycles
    in the queue model, so the layers partition the run), matmul copies, actions (→ dynamic energy
    by the same energy model as the run, so the rows add up to its dynamic energy), host bytes and
    instructions, summed per layer (``Plan.layers``; steps without a layer go to ``"other"``)."""

    def __init__(self, dev: "Device"):
        self.dev = weakref.proxy(dev)  # no cycle: a pass's memory goes as soon as its Device does
        self.acc: dict[int | None, dict[str, Any]] = {}
        self._start: tuple | None = None

    def begin(self, layer: int | None) -> None:
        d = self.dev
        n = len(d.tm.program_cycles) if d.tm is not None else 0
        self._start = (layer, n, dict(d.machine.op_copies), d.host_bytes)

    def end(self, instructions: int) -> None:
        layer, n0, copies0, host0 = self._start
        d = self.dev
        a = self.acc.setdefault(layer, {"cycles": 0, "copies": {}, "host_bytes": 0, "instructions": 0})
        if d.tm is not None:
            a["cycles"] += int(sum(d.tm.program_cycles[n0:]))
        for op, v in d.machine.op_copies.items():
            if v != copies0.get(op, 0):
                a["copies"][op] = a["copies"].get(op, 0) + v - copies0.get(op, 0)
        a["host_bytes"] += d.host_bytes - host0
        a["instructions"] += instructions

    def rows(self) -> list[dict[str, Any]]:
        """One dict per layer in plan order (then ``other``): the :class:`LayerRow` fields."""
        from ..isa import OP
        d = self.dev
        tb = tile_bytes(d.cfg.sz, d.cfg.element_format)
        out = []
        for key in [*range(len(d.plan.layers)), None]:
            a = self.acc.get(key)
            if a is None:
                continue
            meta = d.plan.layers[key] if key is not None else {"layer": "other", "op": "other", "tiles": 0}
            cyc = a["cycles"]
            mm = a["copies"].get(OP["matmul"], 0)
            out.append({"layer": meta["layer"], "op": meta["op"], "cycles": cyc,
                        "latency_ns": cyc / d.cfg.clock_ghz,
                        "energy_pj": energy_of(d.cfg, a["copies"], None, a["host_bytes"])["dynamic_energy_pj"],
                        "utilization": mm / cyc if cyc else 0.0, "memory_bytes": meta["tiles"] * tb,
                        "instructions": a["instructions"],
                        "extra": {"matmul_copies": mm, "host_bytes": a["host_bytes"], "tiles": meta["tiles"]}})
        return out


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
    if op in _FUNCTIONS:
        return to_matrix(host_function(op, [x], p), p["dst_view"])
    raise SimError(f"unknown host step {op!r}")


def _take(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    return take_axes(xs[0], tuple(None if i is None else tuple(i) for i in p["index"]))


#: host steps on logical tensors (data movement of Concat, Slice/Split/Gather/Resize, Pad)
_FUNCTIONS = {
    "concat": lambda xs, p: np.concatenate(xs, axis=p["axis"]),
    "take": _take,
    "pad": lambda xs, p: pad_array(xs[0], tuple(p["pads"]), p["value"]),
}


def host_function(op: str, xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    """A data-movement host step on logical tensors ``xs`` → the logical result."""
    if op not in _FUNCTIONS:
        raise SimError(f"unknown host step {op!r}")
    return np.asarray(_FUNCTIONS[op](xs, p), np.float32)


def split_samples(plan: Plan, inputs: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Float model inputs → one dict per sample (issue 28 item 3): an array of the model's input
    shape is one sample; ``(N, *shape)``, or ``(N, *shape[1:])`` when the model's batch is 1, are N
    samples; anything else is a one-line error naming the expected shapes."""
    if len(plan.inputs) == 1 and len(inputs) == 1 and next(iter(plan.inputs)) not in inputs:
        inputs = {next(iter(plan.inputs)): next(iter(inputs.values()))}
    missing = [k for k in plan.inputs if k not in inputs]
    if missing:
        raise FormatError(f"missing input(s) {missing} (the model's inputs: {', '.join(plan.inputs)})")
    counts = {}
    for name, spec in plan.inputs.items():
        shape = tuple(spec["view"]["shape"])
        a = np.asarray(inputs[name])
        if a.shape == shape or (len(shape) > 1 and shape[0] == 1 and a.shape == shape[1:]):
            counts[name] = None  # one sample
        elif a.ndim == len(shape) + 1 and a.shape[1:] == shape:
            counts[name] = a.shape[0]
        elif len(shape) > 1 and shape[0] == 1 and a.shape[1:] == shape[1:]:
            counts[name] = a.shape[0]
        else:
            extra = f", (N, {', '.join(map(str, shape[1:]))})" if len(shape) > 1 and shape[0] == 1 else ""
            raise FormatError(f"input {name!r}: shape {tuple(a.shape)}; expected {shape} for one sample, or "
                              f"(N, {', '.join(map(str, shape))}){extra} for N samples")
    ns = {c for c in counts.values() if c is not None}
    if len(ns) > 1:
        raise FormatError(f"the inputs hold different sample counts {sorted(ns)}")
    if not ns:
        return [dict(inputs)]
    n = ns.pop()
    return [{k: (np.asarray(inputs[k])[i] if counts[k] is not None else inputs[k]) for k in plan.inputs}
            for i in range(n)]


#: bytes of per-sample state (cache and device-memory tiles, one copy per sample) a batched pass
#: may take; a run's samples go through the device this many at once
PASS_BYTES = 1 << 30
#: samples per pass at most (larger passes gain nothing once numpy's work dominates)
MAX_PASS = 64


def samples_per_pass(cfg: CherryConfig, dram_top: int = 0) -> int:
    """How many samples one pass of the device takes: each holds its own cache and the device
    memory below ``dram_top`` (a plan's top; the constants in it are held once, so this bounds it):
    ResNet-18 at SZ 16, 55 MB a sample, runs 16 at once; EfficientNet-B0 at 224 px (SZ 32), 3."""
    per = (cfg.cache_tiles + dram_top) * cfg.sz * cfg.sz * 4
    return max(1, min(MAX_PASS, PASS_BYTES // per))


def simulate_samples(plan: Plan, cfg: CherryConfig, samples: list[dict[str, np.ndarray]], *, mode: str = "both",
                     engine: str = "fast", timeline: bool = False, per_pass: int | None = None):
    """Run a plan on a list of samples (float inputs by name, one dict each).

    ``engine="fast"``: one pass of the device for up to :func:`samples_per_pass` samples at once,
    every instruction applied to all copies and samples by one numpy operation; the control
    unit, the addresses and the cycle model do not depend on the data, so the cycle model runs in
    the first pass only.  ``engine="reference"``: each sample alone, copy by copy (the readable
    path the tests hold the fast one to, bit for bit).  ``per_pass`` overrides the samples per
    pass of the fast engine.  Returns (each sample's outputs, Stats of one input — every sample
    runs the same programs; from the first pass —, the last pass's Device, the first pass's
    Timeline or None)."""
    t0 = time.perf_counter()
    per = (per_pass or samples_per_pass(cfg, plan.dram_tiles)) if engine == "fast" else 1
    st = tm = dev = None
    outs: list[dict[str, np.ndarray]] = []
    for start in range(0, max(len(samples), 1), per):
        chunk = samples[start:start + per] or [{}]
        pass_mode = mode if st is None or mode == "timing" else "functional"
        dev = None  # the previous pass's memory goes before the next one takes its own
        dev = Device(plan, cfg, pass_mode, engine, record=timeline and st is None, batch=len(chunk))
        outs.extend(dev.run(chunk))
        if st is None:
            st, tm = dev.stats(0.0), dev.tm
            if mode == "timing":
                break
    st.wall_s = time.perf_counter() - t0
    if len(samples) > 1:
        st.extra["samples"] = len(samples)
    return outs, st, dev, recorded_timeline(tm, timeline, "Cherry model")


def simulate_compiled(model: CompiledModel, cfg: CherryConfig, inputs: dict[str, np.ndarray] | None, *,
                      mode: str = "both", engine: str = "fast", timeline: bool = False):
    """Run a compiled model (bundle) on its float inputs: one sample, or N stacked along a leading
    axis (:func:`split_samples`; outputs then stacked as ``(N, *shape[1:])``).  Returns (outputs,
    Stats per input, the Device of the last pass, the Timeline or None): :func:`simulate_samples`."""
    if not inputs and mode != "timing":
        raise FormatError("a compiled Cherry model needs its inputs (--inputs X.npz with the model's input names)")
    samples = split_samples(model.plan, inputs) if inputs and mode != "timing" else [inputs or {}]
    outs, st, dev, tl = simulate_samples(model.plan, cfg, samples, mode=mode, engine=engine, timeline=timeline)
    if len(samples) > 1:
        result = {k: np.concatenate([o[k].reshape((-1, *o[k].shape[1:])) if o[k].ndim else o[k][None]
                                     for o in outs]) for k in outs[0]}
    else:
        result = outs[0]
    return result, st, dev, tl
