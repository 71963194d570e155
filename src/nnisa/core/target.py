"""The interface every ISA target implements, the typed results, and the target registry.

The CLI, the API and the sweeps speak only this interface.  A target is a :class:`Target`
subclass (its *face*, ``targets/<isa>/target.py``) that binds the parts' entry points:

* required class attributes — ``name``, ``description``, ``file_formats`` (a
  :class:`~nnisa.core.formats.FormatTable`), ``options``, ``example`` (an :class:`Example`
  program) — are checked when the class is defined (:meth:`Target.__init_subclass__`);
* required methods — :meth:`~Target.isa_markdown`, :meth:`~Target.assemble`,
  :meth:`~Target.disassemble`, :meth:`~Target.stats`, :meth:`~Target.simulate` — are abstract:
  a target missing one cannot be constructed;
* optional capabilities (``encode``/``decode``, ``compile``, ``bench``) raise
  :class:`~nnisa.core.errors.UnsupportedError` until overridden; :meth:`Target.capabilities`
  lists what a target implements.

Results are typed: :class:`SimResult` (outputs, :class:`Stats`, timeline, report text),
:class:`CompileResult` (program, files, report, runner glue, the quantized graph and layers a
compiler keeps) and :class:`RunResult`; ``bench`` returns :class:`Stats`.  The per-sample run loop
of a compiled model is :meth:`Target.run_compiled`, with one override point for targets that
simulate several samples at once (:meth:`Target.simulate_batch`).
"""

from __future__ import annotations

import abc
import importlib
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NamedTuple

import numpy as np

from .errors import ConfigError, OptionError, UnsupportedError
from .formats import FormatTable
from .layers import LayerRow, layer_dicts, layer_rows
from .options import OptionSpec, OptionTable

if TYPE_CHECKING:  # the report layer draws timelines; core only carries them
    from ..report.timeline import Timeline

CAPABILITIES = ("isa", "asm", "disasm", "encode", "decode", "read", "write", "compile", "simulate", "stats",
                "bench")
#: simulation modes of every target that separates values from timing (``--mode``)
MODES = ("both", "functional", "timing")
#: the fast/reference switch of a simulator (``-O engine=``; ``path`` is its deprecated old name)
ENGINES = ("fast", "reference")

__all__ = ["CAPABILITIES", "ENGINES", "MODES", "CompileResult", "Example", "RunResult", "SimResult", "Stats", "Target",
           "SCHEMA", "check_mode", "get_target", "schema_figures", "register_target", "run_samples", "simulate_stacked",
           "take_engine", "target_names",
           "unregister_target"]


def check_mode(mode: str | None, default: str = "both") -> str:
    """``mode`` (``None``: ``default``) if it is one of :data:`MODES`, else one OptionError."""
    mode = default if mode is None else mode
    if mode not in MODES:
        raise OptionError(f"unknown simulation mode {mode!r}; choose from {', '.join(MODES)}")
    return mode


def take_engine(options: dict[str, Any], default: str = "fast") -> str:
    """Pop ``engine`` (or its deprecated old name ``path``, with a warning) from ``options``."""
    if "path" in options:
        old = options.pop("path")
        warnings.warn("option path is deprecated; use engine", DeprecationWarning, stacklevel=3)
        if "engine" in options and options["engine"] != old:
            raise OptionError("options path and engine name the same setting; give one")
        options.setdefault("engine", old)
    engine = options.pop("engine", None)
    return default if engine is None else engine


#: the figures every target reports under these names (``None`` where a target does not model one):
#: ``energy_pj`` = ``energy_dynamic_pj`` + ``energy_static_pj`` for the ``inputs`` the run covers,
#: ``energy_per_input_pj`` = ``energy_pj / inputs``; ``period_ns`` only for streams
SCHEMA = ("cycles", "latency_ns", "period_ns", "energy_pj", "energy_dynamic_pj", "energy_static_pj",
          "energy_per_input_pj", "inputs", "instructions")
#: older per-target names → (schema name, factor): PIMSAB's paper units, PIM's dynamic part
_LEGACY = {"energy_j": ("energy_dynamic_pj", 1e12), "static_energy_j": ("energy_static_pj", 1e12),
           "dynamic_energy_pj": ("energy_dynamic_pj", 1.0), "static_energy_pj": ("energy_static_pj", 1.0)}


def schema_figures(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with every :data:`SCHEMA` key (issue 28 item 4): legacy names (``energy_j``,
    ``static_energy_j``, ``time_ns`` = ``latency_ns``) renamed, the energy parts completed
    (static = total - dynamic when only those are known; total = dynamic + static when the total
    is missing or was the dynamic part alone) and the energy per input from ``inputs``
    (``images`` of a stream, else 1)."""
    out = dict(d)
    for old, (new, factor) in _LEGACY.items():
        if old in out:
            v = out.pop(old)
            if out.get(new) is None and v is not None:
                out[new] = float(v) * factor
    if "time_ns" in out and out.get("latency_ns") is None:
        out["latency_ns"] = out.pop("time_ns")
    else:
        out.pop("time_ns", None)
    total, dyn, stat = out.get("energy_pj"), out.get("energy_dynamic_pj"), out.get("energy_static_pj")
    if dyn is not None and stat is not None and (total is None or abs(total - dyn) <= 1e-9 * max(abs(dyn), 1.0)):
        total = dyn + stat
    elif total is not None and dyn is not None and stat is None and total != dyn:
        stat = total - dyn
    elif total is not None and dyn is None and stat is not None:
        dyn = total - stat
    out["energy_pj"], out["energy_dynamic_pj"], out["energy_static_pj"] = total, dyn, stat
    if out.get("inputs") is None:
        out["inputs"] = int(out.get("images") or 1)
    out["energy_per_input_pj"] = None if total is None else total / out["inputs"]
    for k in SCHEMA:
        out.setdefault(k, None)
    return out


@dataclass
class Stats:
    """Timing/energy figures of one simulation or workload; every target fills what it models.

    ``latency_ns`` is the time of one input from in to out; ``period_ns`` the steady-state time per
    input of a stream (pipelined programs); ``cycles`` are the cycles of the model named in
    ``extra["timing_model"]`` (reference-compatible or nnisa's own).  ``extra`` holds
    target-specific figures (per-core tables, unit busy times, ...); everything in it must be
    JSON-serialisable.  ``layers`` are the per-layer figures per input
    (:class:`~nnisa.core.layers.LayerRow`), where the simulator can attribute its figures to layers.
    """

    cycles: int | None = None
    latency_ns: float | None = None
    period_ns: float | None = None
    energy_pj: float | None = None
    instructions: int | None = None
    wall_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    layers: list[LayerRow] | None = None

    def __post_init__(self) -> None:
        self.layers = layer_rows(self.layers)

    def to_dict(self) -> dict[str, Any]:
        """The figures under the one vocabulary (:func:`schema_figures`), then the extras and
        ``layers`` (flat dicts) when there are per-layer figures."""
        d = {k: v for k, v in self.__dict__.items() if k not in ("extra", "layers")}
        d.update(self.extra)
        d = schema_figures(d)
        if self.layers is not None:
            d["layers"] = layer_dicts(self.layers)
        return d

    @classmethod
    def from_figures(cls, figures: dict[str, Any]) -> "Stats":
        """The typed figures of a flat dict (``cycles``, ``latency_ns``, ``layers``, ...) and the rest as ``extra``."""
        typed = {f.name for f in fields(cls) if f.name != "extra"}
        return cls(**{k: v for k, v in figures.items() if k in typed},
                   extra={k: v for k, v in figures.items() if k not in typed})

    def figures(self) -> dict[str, Any]:
        """The flat figures as the target gave them (the inverse of :meth:`from_figures`, without
        :meth:`to_dict`'s schema names: a workload's paper units such as ``energy_j`` stay)."""
        typed = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("extra", "layers")}
        out = {**{k: v for k, v in typed.items() if v is not None}, **self.extra}
        if self.layers is not None:
            out["layers"] = layer_dicts(self.layers)
        return out


@dataclass
class SimResult:
    """What a simulation produced.

    Attributes
    ----------
    outputs
        Output name → array.
    stats
        The figures (:class:`Stats`).
    details
        The target's own result object (for plots and deeper analysis).
    timeline
        The run as a :class:`~nnisa.report.timeline.Timeline` when one was asked for
        (``simulate(..., timeline=True)``; the CLI's ``--gantt``/``--trace`` draw it).
    report_text
        A text report in the reference tool's style when one was asked for (``nnisa sim
        --report pimsim``), printed instead of the table.
    """

    outputs: dict[str, np.ndarray]
    stats: Stats
    details: Any = None
    timeline: "Timeline | None" = None
    report_text: str | None = None


@dataclass
class CompileResult:
    """What a compiler produced: the program, files written, a report and the runner glue.

    Attributes
    ----------
    program
        The target's program object (what :meth:`Target.simulate` runs).
    files
        Role → path of every file written (``"program"``, ``"weights"``, ...).
    report
        JSON-serialisable mapping/cost report.
    encode_inputs
        Float model inputs (one sample, name → array without batch axis) → the ``inputs``
        argument of :meth:`Target.simulate` (quantization, layout).
    decode_outputs
        :class:`SimResult` outputs → float model outputs (name → array, dequantized).
    reference
        Optional: float inputs of one sample → the integer outputs the frontend's quantized
        reference evaluator gives, in the same form as ``SimResult.outputs`` (bit-exactness
        check).
    sim_options
        Keyword arguments :meth:`Target.simulate` needs for this program (config, weights, ...).
    samples_per_run
        Samples :meth:`Target.simulate_batch` takes at once (a compiled stream's images; ``None``:
        all of them, for simulators that batch natively).
    qgraph
        The quantized graph the program computes, where the compiler keeps one.
    config
        The target configuration the program was compiled for.
    layers
        The compiler's per-layer records, where the runner needs them.
    layer_table
        The per-layer figures the compiler knows before simulation (memory, instructions,
        estimated cycles; :class:`~nnisa.core.layers.LayerRow`): ``nnisa compile --layers``.
    """

    program: Any
    files: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    encode_inputs: Callable[..., Any] | None = None
    decode_outputs: Callable[..., Any] | None = None
    reference: Callable[..., Any] | None = None
    sim_options: dict[str, Any] = field(default_factory=dict)
    samples_per_run: int | None = 1
    qgraph: Any = None
    config: Any = None
    layers: list[Any] | None = None
    layer_table: list[LayerRow] | None = None

    def __post_init__(self) -> None:
        self.layer_table = layer_rows(self.layer_table)


@dataclass(frozen=True)
class Example:
    """A small program every target ships: the contract suite (``tests/contract``) assembles,
    converts, simulates and benches it, and the docs show it.

    Attributes
    ----------
    text
        The program in the target's assembly text.
    config
        The ``--config`` it needs (``None``: the target's default).
    inputs
        Simulation inputs (name → nested lists or arrays), if the program reads any.
    sim_options
        Further options of :meth:`Target.simulate` the example needs (e.g. the cycle model that
        records a timeline).
    workload
        A built-in workload of ``nnisa bench`` that runs in a second or two, if any.
    """

    text: str
    config: Any = None
    inputs: dict[str, Any] | None = None
    sim_options: dict[str, Any] = field(default_factory=dict)
    workload: str | None = None

    def sim_inputs(self) -> dict[str, np.ndarray] | None:
        return None if self.inputs is None else {k: np.asarray(v) for k, v in self.inputs.items()}


class RunResult(NamedTuple):
    """:meth:`Target.run_compiled`: float outputs (batch first), the statistics and the checks."""

    outputs: dict[str, np.ndarray]
    stats: Stats
    checks: dict[str, Any]


def simulate_stacked(simulate: Callable[..., SimResult], compiled: CompileResult,
                     samples: list[dict[str, np.ndarray]]) -> tuple[list[dict[str, np.ndarray]], Stats]:
    """:meth:`Target.simulate_batch` of a simulator that takes a leading sample axis: the encoded
    samples stacked along axis 0, one simulation, its outputs split per sample."""
    encoded = [compiled.encode_inputs(s) for s in samples]
    stacked = {k: np.concatenate([np.asarray(e[k]) for e in encoded]) for k in encoded[0]}
    res = simulate(compiled.program, inputs=stacked, **compiled.sim_options)
    per = [{k: np.asarray(v)[i:i + 1] for k, v in res.outputs.items()} for i in range(len(samples))]
    return per, res.stats


def run_samples(simulate_batch: Callable[..., tuple[list[dict[str, np.ndarray]], Stats | None]],
                compiled: CompileResult, inputs: dict[str, np.ndarray], progress: Any = None) -> RunResult:
    """The run loop of :meth:`Target.run_compiled`: ``simulate_batch(compiled, samples, first)``
    on ``compiled.samples_per_run`` samples at a time, each sample's raw outputs checked against
    ``compiled.reference`` and decoded; ``progress(done, total)`` after each batch."""
    n = len(next(iter(inputs.values())))
    per = compiled.samples_per_run or n
    outs: dict[str, list[np.ndarray]] = {}
    stats = Stats()
    exact: list[bool] | None = [] if compiled.reference is not None else None
    for start in range(0, n, per):
        samples = [{k: v[i] for k, v in inputs.items()} for i in range(start, min(start + per, n))]
        got, st = simulate_batch(compiled, samples, start)
        stats = st if st is not None else stats
        for sample, raw in zip(samples, got):
            if exact is not None:
                ref = compiled.reference(sample)
                exact.append(all(np.array_equal(np.asarray(raw[k]), np.asarray(v)) for k, v in ref.items()))
            for k, v in compiled.decode_outputs(raw).items():
                outs.setdefault(k, []).append(np.asarray(v))
        if progress is not None:
            progress(start + len(samples), n)
    checks = {"bit_exact": None if exact is None else bool(all(exact))}
    return RunResult({k: np.stack(v) for k, v in outs.items()}, stats, checks)


class Target(abc.ABC):
    """Base class of ISA targets (see the module docstring for what a subclass must define).

    ``program`` objects are target-specific (each target documents its program type).
    """

    #: registry name (``-t NAME``)
    name: ClassVar[str]
    #: one line: what the target is
    description: ClassVar[str]
    #: the file formats (extension → reader, writer, description); ``formats`` comes from it
    file_formats: ClassVar[FormatTable]
    #: every ``-O key=value`` option the target accepts, per command (validated by the CLI)
    options: ClassVar[tuple[OptionSpec, ...]] = ()
    #: a small program (text, config, inputs) the contract suite and the docs use
    example: ClassVar[Example]
    #: ``simulate(..., timeline=True)`` returns a :class:`~nnisa.report.timeline.Timeline`
    has_timeline: ClassVar[bool] = False
    #: what a per-layer row's ``utilization`` measures on this target (one phrase, e.g. "MAC-array
    #: busy cycles / layer cycles"); ``None`` until the target reports per-layer figures
    layer_utilization: ClassVar[str | None] = None
    #: ``nnisa sim`` on this target's compiled folder quantizes float inputs and dequantizes integer
    #: outputs as its manifest's tensors say (:func:`nnisa.core.bundle.quantize_inputs`); False: the
    #: target's simulator takes and returns float model values itself
    bundle_quantized_io: ClassVar[bool] = False
    #: bundled model (``nnisa.frontend.models``) the demo runs on this target, if any
    demo_model: ClassVar[str | None] = None
    #: further demo runs: (label, options) — e.g. another schedule, shown as extra columns
    demo_variants: ClassVar[tuple[tuple[str, dict[str, Any]], ...]] = ()
    #: quick built-in workloads ``nnisa demo`` runs: ``(workload, config or None)``; a result's
    #: ``summary`` is its one line in the demo
    demo_workloads: ClassVar[tuple[tuple[str, str | None], ...]] = ()

    _REQUIRED: ClassVar[dict[str, type]] = {"name": str, "description": str, "file_formats": FormatTable,
                                             "options": tuple, "example": Example}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Check the required class attributes when a target class is defined."""
        super().__init_subclass__(**kwargs)
        missing = [k for k, t in cls._REQUIRED.items() if not isinstance(getattr(cls, k, None), t)]
        if missing:
            raise TypeError(f"target class {cls.__name__} must define "
                            + ", ".join(f"{k} ({cls._REQUIRED[k].__name__})" for k in missing))
        if not cls.name or cls.name != cls.name.lower() or not cls.name.isidentifier():
            raise TypeError(f"target class {cls.__name__}: name {cls.name!r} must be a lower-case identifier")
        bad = [o for o in cls.options if not isinstance(o, OptionSpec)]
        names = [o.name for o in cls.options if isinstance(o, OptionSpec)]
        if bad or len(set(names)) != len(names):
            raise TypeError(f"target class {cls.__name__}: options must be OptionSpec records with unique names")
        unknown = [o.name for o in cls.options if o.alias_of is not None and o.alias_of not in names]
        if unknown:
            raise TypeError(f"target class {cls.__name__}: options {unknown} alias no declared option")

    @property
    def formats(self) -> dict[str, str]:
        """File extension → description (from :attr:`file_formats`)."""
        return self.file_formats.descriptions()

    def option_table(self) -> OptionTable:
        """The declared options (:attr:`options`) as a validator."""
        return OptionTable(self.name, self.options)

    def _unsupported(self, what: str):
        raise UnsupportedError(f"target {self.name!r} does not support {what} yet")

    def capabilities(self) -> list[str]:
        """Names of the capabilities this target implements."""
        optional = {"encode": "encode", "decode": "decode", "compile": "compile", "bench": "bench"}
        have = {"isa", "asm", "disasm", "simulate", "stats"}
        have |= {cap for cap, meth in optional.items() if getattr(type(self), meth) is not getattr(Target, meth)}
        if self.file_formats.readable or self.file_formats.bundle or self.file_formats.folder:
            have.add("read")
        if self.file_formats.writable:
            have.add("write")
        return [c for c in CAPABILITIES if c in have]

    # --- architecture / configuration ----------------------------------------------------
    def config_presets(self) -> dict[str, str]:
        """Named architectures/configurations (``--config NAME``) → one-line description."""
        return {}

    def load_config(self, config: Any) -> Any:
        """Resolve ``--config/--arch``: ``None`` (the default), a preset name, a file path or an
        already loaded object → the target's configuration object.  The base class passes the
        value through unchanged."""
        if isinstance(config, str) and config in self.config_presets():
            raise ConfigError(f"target {self.name!r} lists preset {config!r} but does not load it")
        return config

    def configure(self, config: Any, overrides: dict[str, Any]) -> Any:
        """``config`` (as :meth:`load_config` takes it) with dotted keys set (``{"chip_config.core_cnt":
        16}``), validated by :meth:`load_config`; an unknown key is a :class:`ConfigError` naming it.
        Used by sweeps; works for every target whose configuration dumps to a dict and loads back."""
        from .configkeys import config_to_dict, set_keys
        if not overrides:
            return config
        try:
            base = config_to_dict(self.load_config(config))
        except ConfigError as exc:
            raise ConfigError(f"target {self.name!r}: configuration keys need a base configuration "
                              f"({exc.message})") from None
        if base is None:
            raise ConfigError(f"target {self.name!r} has no configuration keys to set "
                              f"({', '.join(sorted(overrides))}); use its -O options instead")
        return self.load_config(set_keys(base, overrides, what=f"{self.name} configuration"))

    def area_proxy(self, config: Any, report: dict[str, Any]) -> tuple[float, str] | None:
        """An area figure of the machine ``config`` (or of what the compile ``report`` used) and its
        unit, for design-space Pareto fronts; ``None`` when the target models none."""
        return None

    # --- ISA description and text (required) ---------------------------------------------
    @abc.abstractmethod
    def isa_markdown(self, **options: Any) -> str:
        """The instruction reference table (Markdown)."""

    @abc.abstractmethod
    def assemble(self, text: str, *, file: str | None = None, **options: Any) -> Any:
        """Parse assembly text into a program."""

    @abc.abstractmethod
    def disassemble(self, program: Any, **options: Any) -> str:
        """Render a program as canonical assembly text."""

    @abc.abstractmethod
    def stats(self, program: Any, **options: Any) -> dict[str, Any]:
        """Static statistics of a program (instruction mix, field ranges)."""

    # --- binary (optional) ------------------------------------------------------------------
    def encode(self, program: Any, **options: Any) -> bytes:
        """Encode a program into the target's binary file format."""
        self._unsupported("binary encoding")

    def decode(self, data: bytes, **options: Any) -> Any:
        """Decode the target's binary file format."""
        self._unsupported("binary decoding")

    # --- files (from the format table) -----------------------------------------------------
    def read(self, path: str | Path, **options: Any) -> Any:
        """Read a program from any supported file or folder (format from the extension)."""
        return self.file_formats.read(path, **options)

    def write(self, program: Any, path: str | Path, **options: Any) -> list[str]:
        """Write a program (format from the extension), atomically; returns warnings."""
        return self.file_formats.write(program, path, **options)

    # --- simulate (required) / compile (optional) -----------------------------------------
    @abc.abstractmethod
    def simulate(self, program: Any, *, config: Any = None, inputs: dict[str, np.ndarray] | None = None,
                 **options: Any) -> SimResult:
        """Run a program: output values and statistics.  Common options: ``mode`` (one of
        :data:`MODES`), ``engine``, ``timeline`` (return a Timeline, see :attr:`has_timeline`)."""

    def compile(self, model: Any, *, config: Any = None, out_dir: str | Path | None = None,
                **options: Any) -> CompileResult:
        """Compile an ONNX model (a path, or a :class:`~nnisa.frontend.prepared.PreparedModel`)."""
        self._unsupported("compiling ONNX models")

    def simulate_batch(self, compiled: CompileResult, samples: list[dict[str, np.ndarray]],
                       first: int) -> tuple[list[dict[str, np.ndarray]], Stats | None]:
        """Simulate ``samples`` (float, one dict per sample; ``first`` is the index of the first in
        the whole run) → their raw outputs (in ``SimResult.outputs`` form) and the statistics of the
        run (``None``: keep the previous batch's).  The default simulates one sample at a time;
        a target whose simulator takes many samples at once overrides this (see
        :func:`simulate_stacked`) and sets ``CompileResult.samples_per_run``."""
        outs, stats = [], None
        for sample in samples:
            res = self.simulate(compiled.program, inputs=compiled.encode_inputs(sample), **compiled.sim_options)
            outs.append(res.outputs)
            stats = res.stats
        return outs, stats

    def run_compiled(self, compiled: CompileResult, inputs: dict[str, np.ndarray],
                     progress: Any = None) -> RunResult:
        """Simulate a compiled model on a batch of float inputs (leading axis = samples).

        Returns float outputs (batch first), the statistics of the last simulation, and checks
        (``bit_exact``: every sample equals the quantized reference, when one is available).
        Samples go to :meth:`simulate_batch` ``compiled.samples_per_run`` at a time;
        ``progress(done, total)`` is called after each batch when given.
        """
        if compiled.encode_inputs is None or compiled.decode_outputs is None:
            self._unsupported("running compiled models")
        return run_samples(self.simulate_batch, compiled, inputs, progress)

    # --- built-in workloads (optional) -------------------------------------------------------
    def workloads(self) -> dict[str, str]:
        """Named built-in workloads for ``nnisa bench`` → one-line description."""
        return {}

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> Stats:
        """Run a built-in workload: its figures (``cycles``, ``latency_ns``, ``energy_pj``, ... and
        the target's own in ``extra``; ``extra["summary"]`` is its one line in ``nnisa demo``)."""
        self._unsupported("built-in workloads")

    # --- operators --------------------------------------------------------------------------
    #: the compiler's lowering table (``"package.module:NAME"``, imported on demand; None: no
    #: compiler): ``nnisa targets --ops`` and ``docs/operators.md`` come from it
    lowerings: str | None = None

    def operators(self) -> dict[str, str]:
        """Operator → ``device`` (lowered to the target's code) or ``host`` (run on the host),
        from the lowering table (:mod:`nnisa.core.lowering`); empty without a compiler."""
        if self.lowerings is None:
            return {}
        from .lowering import coverage
        module, _, name = self.lowerings.partition(":")
        return coverage(getattr(importlib.import_module(module), name))

    # --- JIT kernels ------------------------------------------------------------------------
    def warm_up(self) -> list[str]:
        """Compile this target's JIT (numba) kernels into their on-disk cache by running small
        real jobs with the argument types real runs use, so that the first real run loads them
        instead of compiling (``make install`` runs :func:`nnisa.warmup.main`).  Returns a line
        per job run; the base class has none."""
        return []

    def check_workload(self, workload: str) -> None:
        """One :class:`UnsupportedError` naming the workloads when ``workload`` is not one."""
        if workload not in self.workloads():
            names = ", ".join(self.workloads()) or "none"
            raise UnsupportedError(f"target {self.name!r} has no workload {workload!r} (workloads: {names})")


#: name → "module:Class" (imported lazily so `nnisa targets` stays fast)
_REGISTRY: dict[str, "str | type[Target]"] = {
    "pim": "nnisa.targets.pim.target:PimTarget",
    "dais": "nnisa.targets.dais.target:DaisTarget",
    "tensil": "nnisa.targets.tensil.target:TensilTarget",
    "pimsab": "nnisa.targets.pimsab.target:PimsabTarget",
    "cherry": "nnisa.targets.cherry.target:CherryTarget",
}
_INSTANCES: dict[str, Target] = {}


def register_target(name: str, spec: str | type[Target]) -> None:
    """Register a target: its class, or its import path ``"package.module:Class"`` (imported on
    first use).  One line adds a target, from ``_REGISTRY`` above or from a test fixture."""
    _REGISTRY[name.lower()] = spec
    _INSTANCES.pop(name.lower(), None)


def unregister_target(name: str) -> None:
    """Remove a registered target (a test fixture's teardown)."""
    _REGISTRY.pop(name.lower(), None)
    _INSTANCES.pop(name.lower(), None)


def target_names() -> list[str]:
    """The registered target names, in registration order."""
    return list(_REGISTRY)


def get_target(name: str) -> Target:
    """Return the (cached) target instance called ``name``."""
    key = name.lower()
    if key not in _REGISTRY:
        raise UnsupportedError(f"unknown target {name!r}; available: {', '.join(_REGISTRY)}")
    if key not in _INSTANCES and not isinstance(_REGISTRY[key], str):
        _INSTANCES[key] = _REGISTRY[key]()
    if key not in _INSTANCES:
        mod, cls = _REGISTRY[key].split(":")
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("nnisa.targets"):
                raise UnsupportedError(f"target {name!r} is registered but not implemented yet") from None
            raise
        _INSTANCES[key] = getattr(module, cls)()
    return _INSTANCES[key]
