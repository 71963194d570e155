"""The PIM compiler driver: ONNX/QGraph → multi-core PIM program + weights + gmem image.

:func:`compile_model` runs the whole pipeline (``docs/pim_compiler.md``): frontend import and
pow2 quantization, lowering, partition, replication, mapping, code generation with the batch
schedule, and (optionally) writing the bundle and reports.
"""

from __future__ import annotations

import functools
import gc
import struct
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ....core.errors import ConfigError, EncodeError, UnsupportedError
from ..program import PimProgram
from .emit import CoreEmitter, records_to_array
from .c2c import plan_c2c
from .costmodel import CostModel
from .fusion import GapFinishLayer, fuse_layers, size_partials
from .graph import ClampLayer, EltLayer, GapLayer, Lowered, MatLayer, PoolLayer, lower_graph
from .lower_fused import gap_finish_tasks
from .lower_extra import ExtraLayer
from .lowerings import LOWERINGS, prepare_inputs
from .lower_mat import MatCodegen
from .lower_vec import clamp_tasks, elt_tasks, emit_clamp, emit_elt, emit_gap, emit_pool, gap_tasks, pool_tasks
from .mapping import MappingError, map_ags
from .memory_plan import ConstPool, plan_gmem
from .options import MAX_IMAGES, SCHEDULES, ChipShape, PimCompileOptions
from .partition import build_ags, partition, replicate
from .pipeline import Producers, coarsen, run_element
from .throughput import layer_stages, run_throughput
from .schedule import barrier

STRICT_GROUPS = 16
#: default output windows per task of the element schedule
ELEMENT_BATCH = 2
#: default batch of a conv with a fused max-pool in the element schedule: its pool rows appear
#: only when a whole conv row of the tile is done, so finer tasks would not start the consumer
#: earlier (ResNet-18 conv1: 7,784 tasks at 2 → 556 at 32, latency 15.86 → 15.84 ms)
ELEMENT_POOL_BATCH = 32
#: partial-sum scratch area of the global-memory reduction path (no core-to-core links)
SCRATCH_BASE = 0x4000_0000


@dataclass
class Compiled:
    """Everything the compiler produced (in memory)."""

    program: PimProgram
    weights: dict[tuple[int, int], np.ndarray]
    gmem: dict[int, bytes]
    lowered: Lowered
    config: Any
    report: dict[str, Any]
    memory_map: dict[str, Any]
    inputs: list[dict]
    outputs: list[dict]
    files: dict[str, str] = field(default_factory=dict)


def resolve_compile_config(config):
    """``None`` (conformance hardware, 64 cores on an 8x8 mesh), a file path, a dict or a PimConfig →
    :class:`PimConfig`.  A dict carrying ``source``/``explicit_gmem_size`` (a ``model_dump``) keeps them."""
    from ..config import PimConfig, config_from_dict, default_config, load_config
    if config is None:
        return default_config(64, preset="conformance", overrides={"chip_config": {"network_config": {"layout": [8, 8]}}})
    if isinstance(config, PimConfig):
        return config
    if isinstance(config, dict):
        cfg = config_from_dict(config, source=config.get("source"))
        if isinstance(config.get("explicit_gmem_size"), bool):
            cfg.explicit_gmem_size = config["explicit_gmem_size"]
        return cfg
    return load_config(config)



def quantize_model(model, calib=None, *, bits: int = 8, **quant_options):
    """Check and pow2-quantize a model (path/bytes/ModelProto) for PIM; a QGraph passes through.

    Goes through :func:`~nnisa.frontend.prepare.prepare_qgraph`, like ``nnisa run/compile``: the
    up-front check of every node, the default calibration set (disjoint from ``run``'s samples)
    or ``calib``, and the quantization options (``calibration``, ``percentile``, ``per_channel``,
    ``calib_samples``).
    """
    from ....frontend import QGraph
    from ....frontend.prepare import prepare_qgraph
    from .support import pim_check
    if isinstance(model, QGraph):
        return model
    return prepare_qgraph(model, "pim", check=pim_check, calib=calib, bits=bits, scale_mode="pow2", **quant_options)


def _gc_paused(fn):
    """Run ``fn`` with the cyclic garbage collector off (restored afterwards).  A compilation
    allocates about a million long-lived objects (instruction rows, tasks, closures) and every
    full collection rescans them all: ResNet-18's element schedule spent ~1.4 of ~6 s of CPU in
    the collector.  Reference counting still frees everything outside reference cycles."""
    @functools.wraps(fn)
    def paused(*args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return paused


@_gc_paused
def compile_program(model, config=None, options: PimCompileOptions | None = None,
                    **overrides: Any) -> Compiled:
    """Compile ``model`` for the PIM configuration ``config`` into an in-memory :class:`Compiled`.

    Parameters
    ----------
    model
        ONNX path / bytes / ``ModelProto``, or an already quantized ``QGraph`` (pow2).
    config
        pimsim-nn config path, dict or :class:`~nnisa.targets.pim.config.PimConfig`;
        ``None`` = the 8×8-core conformance hardware.
    options
        :class:`~nnisa.targets.pim.compiler.options.PimCompileOptions` (default: all defaults);
        ``overrides`` set fields of it by name (``schedule="element"``, ``images=4``).

    The schedules: ``"batch"`` (layer by layer with barriers), ``"element"`` (inter-layer
    pipeline at window/row granularity, token-synchronised, low latency; ``pipeline.py``) or
    ``"throughput"`` (a layer pipeline across the images of a stream: one task per unit, layer
    and image, one token per producer/consumer core pair, layer boundary and image).  With
    ``images`` > 1 each image has its own input, output and activation buffers (``image_stride``
    bytes apart); the simulator reports the latency of the first image and the period
    (steady-state time per image) of the stream.  Replication (``"balance"``/``"none"``) may use
    ``fill`` of the chip's crossbars; mapping ``"balanced"`` (a layer's replicas on different
    cores, least-loaded first), ``"first_fit"`` or ``"locality"``; ``fuse_pool``/``fuse_add``/
    ``fuse_gap`` fold MaxPool / residual Add(+ReLU) / GlobalAveragePool into the producing conv
    (``fusion.py``).
    """
    o = replace(options or PimCompileOptions(), **overrides)
    mode, replication, fill, mapping, links, batch = o.schedule, o.replication, o.fill, o.mapping, o.links, o.batch
    gmem_reuse, rounds, interleave, images = o.gmem_reuse, o.rounds, o.interleave, o.images
    fuse_pool, c2c = o.fuse_pool, o.c2c
    t0 = time.perf_counter()
    if mode not in SCHEDULES:
        raise UnsupportedError(f"schedule mode {mode!r} is not implemented (use {', '.join(map(repr, SCHEDULES))})")
    element = mode in ("element", "throughput")
    pool_batch = batch if batch is not None else ELEMENT_POOL_BATCH
    if batch is None:
        batch = ELEMENT_BATCH if mode == "element" else 32
    if gmem_reuse is None:
        gmem_reuse = not element   # the pipeline would need write-after-read ordering
    elif gmem_reuse and element:
        raise UnsupportedError("gmem_reuse is not supported by the element schedule")
    if not 1 <= int(images) <= MAX_IMAGES:
        raise ConfigError(f"images must be 1..{MAX_IMAGES}, got {images}")
    images = int(images)
    cfg = resolve_compile_config(config)
    hw = ChipShape.of(cfg)
    if links is None:
        links = bool(getattr(cfg.nnisa, "core_links", True))
    qg = quantize_model(model, o.calib, bits=o.bits)
    t_q = time.perf_counter()
    low = lower_graph(qg, LOWERINGS, prepare_inputs)
    mats = [l for l in low.layers if isinstance(l, MatLayer)]
    plans = [partition(l, hw.rows, hw.cols, hw.xbars) for l in mats]
    for l, p in zip(mats, plans):
        l.plan = p
    if fuse_pool is None:
        # a fused conv's replicas own whole pool pixels (fewer replicas); first-fit / locality
        # pile replicas onto few cores, where that cap costs more than the fusion saves (LeNet
        # first-fit 386 -> 1056 µs fused)
        fuse_pool = mapping == "balanced"
    fused = fuse_layers(low, pool=fuse_pool, add=o.fuse_add, gap=o.fuse_gap, cores=hw.cores)
    total = hw.cores * hw.xbars
    base_need = sum(p.xbars_per_replica for p in plans)
    if base_need > total:
        raise MappingError(f"the model needs {base_need} crossbars without replication; the chip has {total}")
    used = None
    graph_in = {id(t.buf) for t in low.inputs}
    # the element schedule with core-to-core activations cuts the convs into column strips
    tall = mode == "element" and c2c and bool(links) and interleave and rounds == 1
    for f in ([fill, fill * 0.75, fill * 0.5, 0.0] if replication != "none" else [0.0]):
        caps = [hw.cores] * len(mats)
        try:
            for _ in range(4 if mapping == "balanced" else 1):
                if mapping == "balanced":
                    # replicas on one core run serially: at most one replica per core is useful
                    replicate(mats, plans, total, mode="balance" if f > 0 else "none", fill=f,
                              max_replicas=caps, work=True, xbars_per_core=hw.xbars)
                else:
                    replicate(mats, plans, total, mode="balance" if f > 0 else "none", fill=f)
                for i, (l, p) in enumerate(zip(mats, plans)):
                    build_ags(i, l, p, hw.rows, hw.cols, tall and _tall(l, graph_in))
                used = map_ags(plans, hw.cores, hw.xbars, policy=mapping)
                if mapping != "balanced":
                    break
                # a layer whose replicas had to share home cores: cap it at the distinct homes
                homes = [len({ags[0].core for ags in p.ags}) for p in plans]
                if all(h >= p.replicas for h, p in zip(homes, plans)):
                    break
                caps = [min(c, h) for c, h in zip(caps, homes)]
            break
        except MappingError:
            if f == 0.0:
                raise
    if element and rounds > 1:
        # element schedule: the windows of a layer are cut into replicas × rounds chunks dealt
        # round-robin, so the layer's output appears top to bottom over time (a consumer can
        # start early) instead of every replica finishing its contiguous range at the end
        for l, p in zip(mats, plans):
            k = min(l.windows, p.replicas * rounds)
            if p.replicas > 1 and k > p.replicas:
                from .lower_vec import split
                p.chunks = [[] for _ in range(p.replicas)]
                for j, rg in enumerate(split(l.windows, k)):
                    p.chunks[j % p.replicas].append(rg)
    t_map = time.perf_counter()
    size_partials(low)
    gmap = plan_gmem(low, reuse=gmem_reuse, images=images)
    consts = ConstPool(gmap["end"] + 4096)
    ag_cores = sorted({a.core for p in plans for ags in p.ags for a in ags})
    workers = ag_cores or [0]
    em = {c: CoreEmitter(c, hw.lmem) for c in workers}
    scratch = {"top": 0}

    def scratch_alloc(n: int) -> int:
        a = SCRATCH_BASE + scratch["top"]
        scratch["top"] += -(-n // 64) * 64
        return a

    pipe_stats = None
    stride = gmap["image_stride"]
    try:
        if element:
            # (the throughput schedule keeps every image's activations in its own global buffers)
            cplan = plan_c2c(low, hw.lmem, enabled=c2c and links and interleave and rounds == 1
                             and mode == "element")
            pipe_stats = _emit_element(low, em, workers, consts, links, batch, scratch_alloc,
                                       interleave=interleave, lmem=hw.lmem, images=images, stride=stride,
                                       throughput=mode == "throughput", c2c=cplan, cost=CostModel(cfg),
                                       pool_batch=pool_batch)
        else:
            _emit_batch(low, em, workers, consts, links, batch, scratch_alloc, images, stride)
    except struct.error as exc:    # (pack_row: a value out of its instruction field's range)
        raise EncodeError(f"an instruction field is out of range of the program format ({exc})",
                          hint="the model or configuration needs addresses beyond the PIM program's fields") from None
    scratch_base = SCRATCH_BASE
    t_gen = time.perf_counter()
    prog = _build_program(em, hw, cfg, images)
    prog.layers = _layer_info(low, hw)
    prog.layer_starts = {c: list(e.layer_starts) for c, e in sorted(em.items()) if e.layer_starts}
    if images > 1 and pipe_stats is not None:
        prog.pipeline_depth = pipe_stats.get("stages", 1)
    weights = _weights(em, mats)
    for e in em.values():
        if e.per_task and (e.arena.peak > e.tarena.base or e.tarena.peak > hw.lmem):
            raise ConfigError(f"core {e.cid}: the interleaved element schedule needs {e.arena.peak} bytes of "
                              f"per-unit state and {e.tarena.peak - e.tarena.base} bytes per task; the config has "
                              f"{hw.lmem} (use interleave=False or lower the batch option)")
        if e.arena.peak > hw.lmem:
            raise ConfigError(f"core {e.cid} needs {e.arena.peak} bytes of local memory; the config has {hw.lmem}"
                              " (lower the batch option)")
    t_end = time.perf_counter()
    inputs = [_tensor_entry(t) for t in low.inputs]
    outputs = [_tensor_entry(t) for t in low.outputs]
    memory_map = {"activations": gmap["buffers"], "activation_bytes": gmap["activation_bytes"],
                  "images": images, "image_stride": stride,
                  "constants": {"base": consts.base, "bytes": consts.nbytes, "segments": len(consts.segments)},
                  "scratch": {"base": scratch_base, "bytes": scratch["top"]},
                  "local_memory_peak": {str(c): e.arena.peak for c, e in sorted(em.items())},
                  "local_memory_size": hw.lmem}
    report = _report(low, mats, plans, used, hw, prog, em, links, mapping, replication)
    report["options"]["schedule"] = mode
    report["options"]["images"] = images
    report["options"]["batch"] = batch
    report["fused"] = fused
    if pipe_stats is not None:
        report["element_schedule"] = pipe_stats
    report["compile_seconds"] = {"quantize": t_q - t0, "map": t_map - t_q, "codegen": t_gen - t_map,
                                 "assemble": t_end - t_gen, "total": t_end - t0}
    return Compiled(prog, weights, dict(consts.segments), low, cfg, report, memory_map, inputs, outputs)


#: column strips pay off from this many output rows (the pipeline depth a strip gives)
TALL_MIN_ROWS = 7


def _tall(layer: MatLayer, graph_in: set[int]) -> bool:
    """Column strips for a conv of the element schedule: its consumers can follow it a few rows
    behind.  Not for a conv reading the model input from global memory (strips would load it
    row piece by row piece; whole-row bands are cheaper) nor for short outputs."""
    oh = layer.fused_pool.out_hw[0] if layer.fused_pool is not None else layer.out_hw[0]
    return id(layer.inputs[0].buf) not in graph_in and oh >= TALL_MIN_ROWS


def _buf_ranges(layer) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(read, written) global byte ranges of a layer's activation buffers (one image)."""
    reads = [t.buf for t in layer.inputs]
    add = getattr(layer, "fused_add", None)
    if add is not None:
        reads.append(add.other.buf)
    return ([(b.addr, b.addr + b.size) for b in reads], [(layer.out.buf.addr, layer.out.buf.addr + layer.out.buf.size)])


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return any(x0 < y1 and y0 < x1 for x0, x1 in a for y0, y1 in b)


def _emit_batch(low, em, workers, consts, links, batch, scratch_alloc, images: int, stride: int) -> None:
    """Batch schedule: layer by layer with a barrier between layers, image after image (the
    images of a stream use disjoint buffers, so image k+1 may start while image k ends).

    A layer that neither reads what the layers since the last barrier write nor writes what
    they read or write (e.g. a residual block's 1×1 downsampling conv beside its first 3×3 conv)
    joins their *phase*: no barrier between them, the cores run both (each core's code stays in
    layer order, and messages keep one global order)."""
    nlayers = len(low.layers)
    for k in range(images):
        ofs = k * stride
        phase_r: list[tuple[int, int]] = []
        phase_w: list[tuple[int, int]] = []
        for li, layer in enumerate(low.layers):
            deferred = False
            for e in em.values():
                e.arena.reset()
                e.set_layer(li)
            if isinstance(layer, MatLayer):
                cg = MatCodegen(layer, em, consts, links=links, batch=batch, scratch_alloc=scratch_alloc)
                cg.emit(k, ofs)
                if cg.deferred:
                    deferred = True
                    barrier(em, workers)
                    cg.finish_deferred()
            elif isinstance(layer, PoolLayer):
                emit_pool(layer, em, workers, ofs)
            elif isinstance(layer, GapLayer):
                emit_gap(layer, em, workers, ofs)
            elif isinstance(layer, EltLayer):
                emit_elt(layer, em, workers, consts, ofs)
            elif isinstance(layer, ClampLayer):
                emit_clamp(layer, em, workers, ofs)
            elif isinstance(layer, GapFinishLayer):
                for t in gap_finish_tasks(layer, em, li, k, ofs):
                    t.run()
            elif isinstance(layer, ExtraLayer):
                for t in layer.tasks(em, workers, consts, li, None, k, ofs):
                    t.run()
            else:  # pragma: no cover - lower_graph only creates the kinds above
                raise UnsupportedError(f"no code generator for {layer.op}", where=f"node {layer.name} ({layer.op})")
            r, w = _buf_ranges(layer)
            phase_r += r
            phase_w += w
            if li + 1 < nlayers:
                nr, nw = _buf_ranges(low.layers[li + 1])
                if deferred or _overlap(nr, phase_w) or _overlap(nw, phase_r + phase_w):
                    barrier(em, workers)
                    phase_r, phase_w = [], []
        for c in workers:
            em[c].mark(k)


def _emit_element(low, em, workers, consts, links, batch, scratch_alloc, locality: bool = True,
                  interleave: bool = True, lmem: int = 1 << 20, images: int = 1, stride: int = 0,
                  throughput: bool = False, c2c=None, cost=None, pool_batch: int | None = None) -> dict:
    """Cut every layer of every image into tasks and emit them with the element schedule
    (``pipeline.py``); ``throughput``: one task per unit (or core) per layer and image, ordered by
    estimated start whatever the image (a layer pipeline across the images of a stream)."""
    for e in em.values():
        e.arena.base = e.arena.top = 4     # local bytes 0..3: the token byte of send/recv
        e.lldi(0, 0, 4)                    # (defined: a token send never reads unwritten memory)
    tasks = []
    prod = Producers()
    pick = prod.pick if locality else None
    gens: dict[int, object] = {}      # per layer: codegen object / per-core states, kept across images

    shared = interleave or throughput     # (the throughput schedule always keeps per-unit state)

    def states(li: int):
        return gens.setdefault(li, {}) if shared else None   # else: per-layer arenas, fresh state
    for k in range(images):
        ofs = k * stride
        for li, layer in enumerate(low.layers):
            if isinstance(layer, MatLayer):
                cg = gens.get(li) if shared else None
                if cg is None:
                    b = pool_batch if pool_batch is not None and layer.fused_pool is not None else batch
                    cg = gens[li] = MatCodegen(layer, em, consts, links=links, batch=b,
                                               scratch_alloc=scratch_alloc)
                    cg.c2c = c2c if c2c is not None and (c2c.main or c2c.res) else None
                new = list(cg.tasks(li, element=True, image=k, ofs=ofs))
            elif isinstance(layer, PoolLayer):
                new = list(pool_tasks(layer, em, workers, li, pick, k, ofs, states(li)))
            elif isinstance(layer, GapLayer):
                new = list(gap_tasks(layer, em, workers, li, k, ofs))
            elif isinstance(layer, EltLayer):
                new = list(elt_tasks(layer, em, workers, consts, li, pick, k, ofs, states(li)))
            elif isinstance(layer, ClampLayer):
                new = list(clamp_tasks(layer, em, workers, li, pick, k, ofs, states(li)))
            elif isinstance(layer, GapFinishLayer):
                new = list(gap_finish_tasks(layer, em, li, k, ofs))
            elif isinstance(layer, ExtraLayer):
                # (fresh per-core state per image: their scratch buffers are not image-safe when shared)
                new = list(layer.tasks(em, workers, consts, li, pick, k, ofs, None))
            else:  # pragma: no cover - lower_graph only creates the kinds above
                raise UnsupportedError(f"no code generator for {layer.op}", where=f"node {layer.name} ({layer.op})")
            for t in new:  # the rows a task emits belong to its layer (per-layer figures)
                t.run = _owned(t.run, [em[c] for c in {*t.cores, *t.loaders, t.store} if c in em], li)
            prod.add(new)
            tasks.extend(new)
    if not throughput:
        stats = run_element(tasks, em, interleave=interleave, lmem=lmem, cost=cost)
    else:
        stats = run_throughput(coarsen(tasks, em), em, layer_stages(low), lmem)
    if c2c is not None:
        stats["c2c_spilled"] = [f"layer {k[0]} replica {k[1]} ({kind})" for k, kind in c2c.spilled]
    return stats


def _owned(run, emitters: list[CoreEmitter], li: int):
    """``run`` that first marks its emitters' next rows as layer ``li``'s."""
    def owned() -> None:
        for e in emitters:
            e.set_layer(li)
        run()
    return owned


def _layer_info(low, hw: ChipShape) -> list[dict]:
    """Per layer: the ONNX node, the op (fused ones joined by ``+``), crossbars holding its
    weights and on-chip bytes (weights in the crossbars + its output buffer in global memory)."""
    out = []
    for layer in low.layers:
        ops = [layer.op] + [kind for key, kind in (("fused_add", "Add"), ("fused_pool", None), ("fused_gap", None))
                            if getattr(layer, key, None) is not None
                            for kind in [kind or getattr(getattr(layer, key), "op", "Pool")]]
        plan = getattr(layer, "plan", None)
        xbars = sum(a.xbars for ags in plan.ags for a in ags) if plan is not None else 0
        weights = int(np.asarray(layer.matrix).size) * (plan.replicas if plan is not None else 1) \
            if getattr(layer, "matrix", None) is not None else 0
        out.append({"name": layer.name, "op": "+".join(ops), "crossbars": int(xbars),
                    "memory_bytes": weights + int(layer.out.buf.size)})
    return out


def _build_program(em: dict[int, CoreEmitter], hw: ChipShape, cfg, images: int = 1) -> PimProgram:
    cores = {}
    agm = {}
    for c, e in sorted(em.items()):
        arr = records_to_array(e.rows)
        e.rows = []         # (the records are in the array now: freed before the next core's join)
        cores[c] = arr
        agm[c] = list(e.group_xbars)
    extended = any(len(v) > STRICT_GROUPS for v in agm.values())
    prog = PimProgram(cores=cores, array_group_map=agm, chip_cores=hw.cores, extended=extended)
    if images > 1:
        prog.image_ends = {c: [e.marks.get(k, 0) for k in range(images)] for c, e in sorted(em.items())}
    prog.config_extra = {"xbar_size": [hw.rows, hw.cols], "xbar_array_count": hw.xbars}
    return prog


def _weights(em: dict[int, CoreEmitter], mats: list[MatLayer]) -> dict[tuple[int, int], np.ndarray]:
    out = {}
    # (layer, replica, unit, row slice) → AG (the first one, as a linear search would find)
    ags = {}
    for li, l in enumerate(mats):
        for r, rags in enumerate(l.plan.ags):
            for a in rags:
                ags.setdefault((li, r, a.unit, a.row_slice), a)
    for c, e in em.items():
        for key, g in e.groups.items():
            l = mats[key[0]]
            ag = ags[key]
            out[(c, g)] = l.matrix[ag.r0:ag.r1, ag.c0:ag.c1].astype(np.int8 if l.w_bits <= 8 else np.int32)
    return out


def _tensor_entry(t) -> dict:
    if len(t.shape) == 4 and t.is_hwc:
        n, c, h, w = t.shape
        shape, layout = [n, h, w, c], "NHWC"
    elif t.perm is None:
        shape, layout = list(t.shape), "NCHW" if len(t.shape) == 4 else "NC"
    else:
        shape, layout = [int(np.prod(t.shape))], "PERM"
    return {"name": t.name, "shape": shape, "bits": t.bits, "scale": float(t.scale), "zero_point": 0,
            "layout": layout, "address": int(t.buf.addr), "logical_shape": list(t.shape)}


def _report(low, mats, plans, used, hw, prog, em, links, mapping, replication) -> dict:
    total = hw.cores * hw.xbars
    xb_used = sum(used) if used else 0
    cells = sum(int(l.K) * int(l.N) * p.replicas for l, p in zip(mats, plans))
    per_layer = []
    for l, p in zip(mats, plans):
        per_layer.append({"name": l.name, "op": l.op, "K": int(l.K), "N": int(l.N), "windows": int(l.windows),
                          "hbar": p.hbar, "agp": p.agp, "xbars_per_replica": p.xbars_per_replica,
                          "replicas": p.replicas, "ags": sum(len(a) for a in p.ags),
                          "cores": sorted({a.core for ags in p.ags for a in ags}), "acc_bits": l.acc_bits,
                          "fused": l.fused})
    per_core = {}
    for c, e in sorted(em.items()):
        per_core[str(c)] = {"instructions": len(prog.cores.get(c, ())), "groups": len(e.group_xbars),
                            "xbars": int(sum(e.group_xbars)), "lmem_peak": e.arena.peak}
    return {
        "hardware": hw.as_dict(),
        "crossbars_used": xb_used, "crossbars_total": total,
        "crossbar_utilization": xb_used / total if total else 0.0,
        "cell_utilization": cells / (xb_used * hw.rows * hw.cols) if xb_used else 0.0,
        "array_groups": sum(len(v) for v in prog.array_group_map.values()),
        "cores_used": len(em), "extended_encoding": prog.extended,
        "instructions": len(prog), "op_counts": prog.op_counts(),
        "layers": per_layer, "per_core": per_core,
        "options": {"mapping": mapping, "replication": replication, "core_links": links},
        "ops": [l.op for l in low.layers],
    }
