"""The PIM ``simulate()`` entry point: functional values and timing/energy behind the common interface.

One call runs the functional simulator (values, :mod:`.functional`) and/or the timing and energy
model (:mod:`.timing`) on a program or a compiled bundle, places inputs in global memory, reads
the named outputs back and returns a :class:`~nnisa.core.target.SimResult`.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

import os

from ....core.layers import layer_rows
from ....core.errors import ConfigError, FormatError
from ....core.target import SimResult, Stats, check_mode, take_engine
from ..config import PimConfig, load_config
from .memory import GlobalMemory, as_bytes
from ..program import PimProgram

if TYPE_CHECKING:
    from ..formats.bundle import Bundle, TensorSpec
    from .functional import FunctionalResult

# A bundle's manifest models (pydantic) and the functional interpreter are imported when a run
# needs them: a timing run of a program file loads neither.

__all__ = ["simulate", "run_bundle", "write_input", "read_output"]

_SEG = re.compile(r"^seg@(0x[0-9a-fA-F]+|\d+)$")


def _config(config: Any, bundle: Bundle | None) -> PimConfig | None:
    if isinstance(config, PimConfig):
        return config
    if config is not None:
        return load_config(config)
    return bundle.config() if bundle is not None else None


def _specs(items: Any) -> list[TensorSpec]:
    if not items:
        return []
    from ..formats.bundle import TensorSpec
    return [t if isinstance(t, TensorSpec) else TensorSpec(**t) for t in items]


def _bundle_of(program: Any) -> Bundle | None:
    """``program`` if it is a compiled bundle (a program is not one)."""
    if isinstance(program, PimProgram):
        return None
    from ..formats.bundle import Bundle
    return program if isinstance(program, Bundle) else None


#: largest tensor read back from or placed into global memory (a manifest cannot ask for more)
MAX_TENSOR_BYTES = 1 << 30


def _check_range(gm: GlobalMemory, spec: TensorSpec, what: str) -> None:
    if spec.nbytes > MAX_TENSOR_BYTES:
        raise FormatError(f"{what} {spec.name!r}: {spec.nbytes:,} bytes is larger than the {MAX_TENSOR_BYTES >> 20} MB "
                          "a tensor may have")
    if spec.address + spec.nbytes > gm.limit:
        raise FormatError(f"{what} {spec.name!r} at {spec.address:#x} (+{spec.nbytes:,} bytes) lies outside global "
                          f"memory [0, {gm.limit:#x})")


def write_input(gm: GlobalMemory, spec: TensorSpec, value: Any) -> None:
    """Quantize ``value`` per the manifest entry and place it in global memory (checked)."""
    _check_range(gm, spec, "input")
    a = np.asarray(value)
    if a.size != spec.size:
        raise FormatError(f"input {spec.name!r}: {a.size} values, the manifest's shape {spec.shape} has {spec.size}")
    gm.write_tensor(spec.address, spec.quantize(a.reshape(spec.shape)), spec.bits)


def read_output(res: FunctionalResult, gm: GlobalMemory, spec: TensorSpec) -> np.ndarray:
    """The integer tensor a manifest output entry names (checked)."""
    _check_range(gm, spec, "output")
    return res.read_tensor(spec.address, tuple(spec.shape), spec.bits)


def _image_specs(spec: TensorSpec, images: int, stride: int) -> list[TensorSpec]:
    """The per-image copies of a manifest tensor in a stream (image k at ``address + k·stride``)."""
    return [spec if k == 0 else spec.model_copy(update={"address": spec.address + k * stride})
            for k in range(images)]


def _place_inputs(gm: GlobalMemory, inputs: Mapping[Any, Any] | None, in_specs: list[TensorSpec],
                  images: int = 1, stride: int = 0) -> None:
    """Write inputs into global memory.

    Keys may be integer addresses (raw bytes), ``seg@0x<hex>`` names (uint8 arrays, as in
    ``gmem.npz``) or tensor names of the manifest (values quantized per the manifest).  In a
    stream of ``images`` images a named input holds either one image (placed in every image's
    slot) or all of them (``images`` times the manifest's size, image first).
    """
    by_name = {t.name: t for t in in_specs}
    inputs = dict(inputs or {})
    named = [k for k in inputs if not isinstance(k, (int, np.integer)) and not _SEG.match(str(k))]
    if len(by_name) == 1 and len(named) == 1 and named[0] not in by_name:
        # one array for a one-input program (e.g. x.npy, keyed by its file name): that input
        inputs[next(iter(by_name))] = inputs.pop(named[0])
    for key, value in inputs.items():
        if isinstance(key, (int, np.integer)):
            gm.write(int(key), as_bytes(value))
            continue
        m = _SEG.match(str(key))
        if m:
            gm.write(int(m.group(1), 0), as_bytes(np.asarray(value, dtype=np.uint8)))
        elif key in by_name:
            spec = by_name[key]
            a = np.asarray(value)
            per = _image_specs(spec, images, stride)
            if images > 1 and a.size == spec.size * images:
                for k, sp in enumerate(per):
                    write_input(gm, sp, a.reshape((images, -1))[k])
            else:
                for sp in per:
                    write_input(gm, sp, value)
        else:
            known = ", ".join(by_name) or "none (use seg@0x<address> keys for raw bytes)"
            raise FormatError(f"unknown input {key!r}; the program's inputs are: {known}")


def simulate(program: PimProgram | Bundle, *, config: Any = None, inputs: Mapping | None = None,
             weights: Any = None, gmem: Any = None, outputs: Any = None, inputs_layout: Any = None,
             mode: str | None = None, timing: str = "pimsim", timeline: bool = False,
             global_address_mode: str | None = None,
             report: str | None = None, source: str | None = None, images: int | None = None,
             stream: Mapping | None = None, lint: bool = True, **options: Any) -> SimResult:
    """Simulate a PIM program or bundle.

    Parameters
    ----------
    program
        A :class:`PimProgram`, or a :class:`~nnisa.targets.pim.formats.bundle.Bundle` (its weights,
        initial global memory, manifest tensors and configuration are used).
    config
        pimsim-nn configuration (path or :class:`PimConfig`); default: the bundle's, else
        pimsim-nn defaults.
    inputs
        Global-memory inputs: manifest tensor names → arrays, ``seg@0x<hex>`` → uint8 arrays, or
        integer address → bytes.
    weights
        Array-group weights (``.npz`` path or mapping, or ``"zeros"``/``"random"``).
    gmem
        Initial global-memory segments ``{address: bytes}``.
    outputs
        Tensors to read back after the run (manifest-style entries).
    mode
        ``"both"`` (values + timing), ``"timing"`` or ``"functional"``; default ``both`` when
        weights are available or no ``mvmul`` needs them, else ``timing``.
    timing
        ``"pimsim"`` (reproduces pimsim-nn) or ``"native"``.
    timeline
        Record the per-instruction times: ``SimResult.timeline`` (one track per core) for the
        Gantt chart and the trace.
    global_address_mode
        ``"pair"`` or ``"single32"`` (default: the bundle's or the configuration's).
    report
        ``"pimsim"``: also render pimsim-nn's report block (``SimResult.report_text``).
    source
        The program's file name, shown in that report.
    images
        Images of the stream (:mod:`.stream`).  A program compiled for a stream carries image
        marks and its own count (``images`` must then agree); any other program is repeated
        ``images`` times on every core by the timing model (values come from one run).
    stream
        ``{"images": N, "image_stride": S}`` of a compiled stream (default: the bundle's):
        inputs and outputs of image k lie ``k · S`` bytes above image 0's.
    lint
        Check the program (:mod:`~nnisa.targets.pim.lint`; with values also reads of
        never-written local memory): ``stats.extra["lint"]``, each finding also a warning.
    engine
        The functional interpreter: ``"fast"`` (numba) or ``"reference"`` (``path`` is the
        deprecated old name).

    Returns
    -------
    SimResult
        ``stats.latency_ns`` is the latency of one image (the first of a stream), in → out;
        ``stats.period_ns`` the steady-state time per image of a stream (``None`` for one image);
        outputs of a stream have a leading image axis.
    """
    t0 = time.perf_counter()
    engine = take_engine(options)
    bundle = _bundle_of(program)
    if bundle is not None:
        if bundle.program is None:
            raise FormatError("the bundle has no program", file=str(bundle.path) if bundle.path else None)
        prog = bundle.program
        weights = bundle.weights if weights is None else weights
        segs = {int(a): as_bytes(s) for a, s in bundle.gmem_segments.items()}
        outputs = outputs if outputs is not None else bundle.manifest.outputs
        inputs_layout = inputs_layout if inputs_layout is not None else bundle.manifest.inputs
        global_address_mode = global_address_mode or bundle.manifest.global_address_mode
        if stream is None and bundle.manifest.stream is not None:
            stream = bundle.manifest.stream.model_dump()
    else:
        prog = program
        segs = {}
    segs.update({int(a): as_bytes(s) for a, s in (gmem or {}).items()})
    cfg = _config(config, bundle)
    if mode is None:
        needs_weights = any((rows["op"] == 9).any() for _, rows in prog.items())
        mode = "both" if (weights is not None or not needs_weights) else "timing"
    mode = check_mode(mode)
    out_specs = _specs(outputs)
    n_img, stride, repeat = _stream_shape(prog, stream, images)
    tl, report_text = None, None
    stats = Stats(instructions=len(prog))
    outs: dict[str, np.ndarray] = {}
    extra: dict[str, Any] = {"mode": mode, "images": n_img if repeat == 1 else repeat}
    if repeat > 1:
        extra["stream"] = f"program repeated {repeat} times on every core (timing); values from one run"
    if mode in ("both", "functional"):
        if global_address_mode is None and getattr(prog, "odd_pairs", False) and \
                (cfg is None or "global_address_mode" not in cfg.nnisa.model_fields_set):
            # PIMCOMP-NN addresses global memory with one (odd) register: read it as intended
            global_address_mode = "single32"
            extra["global_address_mode"] = "single32 (program uses odd address registers)"
        gm = GlobalMemory(1 << 32)
        if cfg is not None and cfg.gmem_bounded:
            gm = GlobalMemory(int(cfg.chip_config.global_memory_config.memory_size))
        for addr, data in sorted(segs.items()):
            gm.write(addr, data)
        _place_inputs(gm, inputs, _specs(inputs_layout), n_img, stride)
        from .functional import run_functional
        fres = run_functional(prog, cfg, weights=weights, gmem=gm, global_address_mode=global_address_mode,
                              engine=engine, **options)
        if n_img > 1:
            outs = {t.name: np.concatenate([read_output(fres, gm, sp) for sp in _image_specs(t, n_img, stride)])
                    for t in out_specs}
        else:
            outs = {t.name: read_output(fres, gm, t) for t in out_specs}
        extra["functional"] = {"instructions_per_s": fres.instr_per_s, "wall_s": fres.wall_s,
                               "warnings": list(fres.warnings)}
    opcodes = None
    if mode in ("both", "timing"):
        from .timing import simulate_timing
        from .timing_report import result_to_dict
        opcodes = {c: rows["op"].astype(np.int64) for c, rows in prog.items()}  # timing's, then lint's
        tres = simulate_timing(prog, cfg, mode=timing, trace=timeline, repeat=repeat, opcodes=opcodes)
        d = result_to_dict(tres)
        stats.cycles = int(round(d["cycles"]))
        stats.latency_ns = d["latency_ns"]
        stats.period_ns = d["period_ns"]
        stats.energy_pj = d["energy_pj"]
        extra.update({k: v for k, v in d.items()
                      if k not in ("latency_ns", "period_ns", "cycles", "energy_pj", "mode", "images")})
        extra["timing_mode"] = timing
        if tres.layers is not None:  # a compiled one-image program: figures per layer (per input)
            ns = tres.core_period_ps / 1000
            stats.layers = layer_rows([{**r, "latency_ns": r["cycles"] * ns} for r in tres.layers])
        extra["timing_model"] = ("pimsim-nn 3e3442b (reference-compatible)" if timing == "pimsim"
                                 else "nnisa native (pimsim-nn defects fixed)")
        if timeline:
            from .trace import timeline as to_timeline
            tl = to_timeline(tres)
        if report == "pimsim":
            from .timing_report import format_pimsim_report
            verbose = cfg.sim_config.report_verbose_level if cfg is not None else 0
            report_text = format_pimsim_report(tres, str(config or "default"), source or "program", verbose)
        details = tres
    else:
        details = None
    if lint:
        from ..lint import issue_warnings, lint_dicts, lint_program, uninitialised_reads
        issues = lint_program(prog, opcodes)
        if mode in ("both", "functional"):
            lsize = int(cfg.chip_config.core_config.local_memory_config.memory_size) if cfg is not None else 1 << 20
            issues += uninitialised_reads(prog, fres.shapes, lsize)
        issue_warnings(issues)
        extra["lint"] = lint_dicts(issues)
    stats.wall_s = time.perf_counter() - t0
    stats.extra = extra
    return SimResult(outputs=outs, stats=stats, details=details, timeline=tl, report_text=report_text)


def _stream_shape(prog: PimProgram, stream: Mapping | None, images: int | None) -> tuple[int, int, int]:
    """(images of a compiled stream, image stride, timing repeats of an unmarked program)."""
    marked = prog.images if prog.image_ends else 1
    if stream:
        n = int(stream.get("images", marked))
        if n != marked:
            raise FormatError(f"the stream description names {n} images but the program is marked for {marked}")
    else:
        n = marked
    stride = int(stream.get("image_stride", 0)) if stream else 0
    if images is None or int(images) == n:
        return n, stride, 1
    if prog.image_ends:
        raise ConfigError(f"the program was compiled for a stream of {n} images; images={images} needs a "
                          f"recompile with -O images={images}")
    if int(images) < 1:
        raise ConfigError(f"images must be at least 1, got {images}")
    return 1, 0, int(images)


def run_bundle(bundle: Bundle | str | os.PathLike, inputs: Mapping[str, np.ndarray] | None = None,
               **options: Any) -> tuple[FunctionalResult, dict[str, np.ndarray]]:
    """Functional run of a bundle: place ``inputs`` (by manifest name) in global memory, run,
    and read every manifest output as an integer array of its shape.

    ``options`` go to :func:`~nnisa.targets.pim.sim.functional.run_functional` (e.g. ``engine``,
    ``config`` to override the manifest's hardware configuration).
    """
    from ..formats.bundle import read_bundle
    from .functional import run_functional
    b = _bundle_of(bundle)
    if b is None:
        b = read_bundle(bundle)
    if b.program is None:
        raise FormatError("the bundle has no program", file=str(b.path) if b.path else None)
    man = b.manifest
    inputs = dict(inputs or {})
    unknown = sorted(set(inputs) - {t.name for t in man.inputs})
    if unknown:
        raise FormatError(f"unknown input(s) {', '.join(unknown)}; the manifest has "
                          f"{', '.join(t.name for t in man.inputs) or 'none'}")
    config = options.pop("config", None) or b.config()
    gm = GlobalMemory(1 << 32, None)
    if config is not None and config.gmem_bounded:
        gm = GlobalMemory(int(config.chip_config.global_memory_config.memory_size))
    for addr, seg in sorted(b.gmem_segments.items()):
        gm.write(addr, as_bytes(seg))
    for spec in man.inputs:
        if spec.name in inputs:
            write_input(gm, spec, inputs[spec.name])
    options.setdefault("global_address_mode", man.global_address_mode)
    res = run_functional(b.program, config, weights=b.weights, gmem=gm, **options)
    outs = {t.name: read_output(res, gm, t) for t in man.outputs}
    return res, outs
