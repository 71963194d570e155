"""The interface every ISA target implements, and the target registry.

The CLI and the reports speak only this interface.  A target that lacks a capability leaves the
method as inherited, which raises :class:`~nnisa.core.errors.UnsupportedError` with a clear
message; ``capabilities()`` lists what is implemented.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError, UnsupportedError
from .options import OptionSpec, OptionTable

CAPABILITIES = ("isa", "asm", "disasm", "encode", "decode", "read", "write", "compile", "simulate", "stats",
                "bench")


@dataclass
class Stats:
    """Timing/energy figures of one simulation; every target fills what it models.

    ``latency_ns`` is the time of one input from in to out; ``period_ns`` the steady-state time per
    input of a stream (pipelined programs); ``cycles`` are the cycles of the model named in
    ``extra["timing_model"]`` (reference-compatible or nnisa's own).  ``extra`` holds target-specific figures (per-core tables, unit busy times, ...); everything
    in it must be JSON-serialisable.
    """

    cycles: int | None = None
    latency_ns: float | None = None
    period_ns: float | None = None
    energy_pj: float | None = None
    instructions: int | None = None
    wall_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "extra"}
        d.update(self.extra)
        return d


@dataclass
class SimResult:
    """Outputs (name → array) and statistics of a simulation.

    ``details`` is the target's own result object (for plots, traces, deeper analysis).
    """

    outputs: dict[str, np.ndarray]
    stats: Stats
    details: Any = None


@dataclass
class CompileResult:
    """What a compiler produced: the program, files written, and a mapping/cost report.

    Attributes
    ----------
    program
        The target's program object.
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
    """

    program: Any
    files: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    encode_inputs: Any = None
    decode_outputs: Any = None
    reference: Any = None
    sim_options: dict[str, Any] = field(default_factory=dict)


class Target:
    """Base class of ISA targets.

    Subclasses set ``name`` and ``description`` and override the methods they support.
    ``program`` objects are target-specific (each target documents its program type).
    """

    name = "?"
    description = ""
    #: file extensions this target reads/writes, mapped to a short description
    formats: dict[str, str] = {}
    #: every ``-O key=value`` option the target accepts, per command (validated by the CLI)
    options: tuple[OptionSpec, ...] = ()
    #: bundled model (``nnisa.frontend.models``) the demo runs on this target, if any
    demo_model: str | None = None
    #: further demo runs: (label, options) — e.g. another schedule, shown as extra columns
    demo_variants: tuple[tuple[str, dict[str, Any]], ...] = ()
    #: quick built-in workloads ``nnisa demo`` runs: ``(workload, config or None)``; a result's
    #: ``summary`` is its one line in the demo
    demo_workloads: tuple[tuple[str, str | None], ...] = ()

    def option_table(self) -> OptionTable:
        """The declared options (:attr:`options`) as a validator."""
        return OptionTable(self.name, self.options)

    def _unsupported(self, what: str):
        raise UnsupportedError(f"target {self.name!r} does not support {what} yet")

    def capabilities(self) -> list[str]:
        """Names of the capabilities this target implements."""
        base = Target
        mapping = {"isa": "isa_markdown", "asm": "assemble", "disasm": "disassemble", "encode": "encode",
                   "decode": "decode", "read": "read", "write": "write", "compile": "compile",
                   "simulate": "simulate", "stats": "stats", "bench": "bench"}
        return [cap for cap, meth in mapping.items()
                if getattr(type(self), meth) is not getattr(base, meth)]

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

    # --- ISA description -----------------------------------------------------------------
    def isa_markdown(self, **options: Any) -> str:
        """The instruction reference table (Markdown)."""
        self._unsupported("ISA tables")

    # --- text ----------------------------------------------------------------------------
    def assemble(self, text: str, *, file: str | None = None, **options: Any) -> Any:
        """Parse assembly text into a program."""
        self._unsupported("assembly")

    def disassemble(self, program: Any, **options: Any) -> str:
        """Render a program as canonical assembly text."""
        self._unsupported("disassembly")

    # --- binary --------------------------------------------------------------------------
    def encode(self, program: Any, **options: Any) -> bytes:
        """Encode a program into the target's binary file format."""
        self._unsupported("binary encoding")

    def decode(self, data: bytes, **options: Any) -> Any:
        """Decode the target's binary file format."""
        self._unsupported("binary decoding")

    # --- files ---------------------------------------------------------------------------
    def read(self, path: str | Path, **options: Any) -> Any:
        """Read a program from any supported file (format from the extension/content)."""
        self._unsupported("reading files")

    def write(self, program: Any, path: str | Path, **options: Any) -> None:
        """Write a program (format from the extension), atomically."""
        self._unsupported("writing files")

    # --- compile / simulate ----------------------------------------------------------------
    def compile(self, model: str | Path, *, config: str | Path | None = None,
                out_dir: str | Path | None = None, **options: Any) -> CompileResult:
        """Compile an ONNX model."""
        self._unsupported("compiling ONNX models")

    def simulate(self, program: Any, *, config: str | Path | None = None,
                 inputs: dict[str, np.ndarray] | None = None, **options: Any) -> SimResult:
        """Run a program: output values and statistics."""
        self._unsupported("simulation")

    def run_compiled(self, compiled: CompileResult, inputs: dict[str, np.ndarray],
                     progress: Any = None) -> tuple[dict[str, np.ndarray], Stats, dict[str, Any]]:
        """Simulate a compiled model on a batch of float inputs (leading axis = samples).

        Returns float outputs (batch first), the statistics of the last sample, and checks
        (``bit_exact``: every sample equals the quantized reference, when one is available).
        The default runs one simulation per sample; targets that batch natively override it.
        ``progress(done, total)`` is called after each sample when given.
        """
        if compiled.encode_inputs is None or compiled.decode_outputs is None:
            self._unsupported("running compiled models")
        n = len(next(iter(inputs.values())))
        outs: dict[str, list[np.ndarray]] = {}
        stats = Stats()
        exact = [] if compiled.reference is not None else None
        for i in range(n):
            sample = {k: v[i] for k, v in inputs.items()}
            res = self.simulate(compiled.program, inputs=compiled.encode_inputs(sample), **compiled.sim_options)
            stats = res.stats
            if exact is not None:
                ref = compiled.reference(sample)
                exact.append(all(np.array_equal(np.asarray(res.outputs[k]), np.asarray(v)) for k, v in ref.items()))
            for k, v in compiled.decode_outputs(res.outputs).items():
                outs.setdefault(k, []).append(np.asarray(v))
            if progress is not None:
                progress(i + 1, n)
        checks = {"bit_exact": None if exact is None else bool(all(exact))}
        return {k: np.stack(v) for k, v in outs.items()}, stats, checks

    def stats(self, program: Any, **options: Any) -> dict[str, Any]:
        """Static statistics of a program (instruction mix, field ranges)."""
        self._unsupported("program statistics")

    # --- built-in workloads ----------------------------------------------------------------
    def workloads(self) -> dict[str, str]:
        """Named built-in workloads for ``nnisa bench`` → one-line description."""
        return {}

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> dict[str, Any]:
        """Run a built-in workload; returns a JSON-safe dict with at least ``wall_s`` and the
        figures the target models (``cycles``, ``latency_ns``/``time_ns``, ``energy_pj``, ...)."""
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

    def _unknown_workload(self, workload: str):
        names = ", ".join(self.workloads()) or "none"
        raise UnsupportedError(f"target {self.name!r} has no workload {workload!r} (workloads: {names})")


#: name → "module:Class" (imported lazily so `nnisa targets` stays fast)
_REGISTRY: dict[str, str] = {
    "pim": "nnisa.targets.pim.target:PimTarget",
    "dais": "nnisa.targets.dais.target:DaisTarget",
    "tensil": "nnisa.targets.tensil.target:TensilTarget",
    "pimsab": "nnisa.targets.pimsab.target:PimsabTarget",
    "cherry": "nnisa.targets.cherry.target:CherryTarget",
}
_INSTANCES: dict[str, Target] = {}


def register_target(name: str, spec: str) -> None:
    """Register a target class by import path ``"package.module:Class"``."""
    _REGISTRY[name] = spec
    _INSTANCES.pop(name, None)


def target_names() -> list[str]:
    return list(_REGISTRY)


def get_target(name: str) -> Target:
    """Return the (cached) target instance called ``name``."""
    key = name.lower()
    if key not in _REGISTRY:
        raise UnsupportedError(f"unknown target {name!r}; available: {', '.join(_REGISTRY)}")
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
