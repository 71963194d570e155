"""The target contract: what every target must do, checked through the ``Target`` interface only.

Parametrised over every registered target and the toy of ``toy/`` (a sixth target added by one
registry line): declared members and options, capabilities that say the truth, the example
program through text, every file format and the simulator, a bad file as one line on the CLI,
the typed results of simulate / compile / run / bench, and the layering of a target's package.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cli_runner import run_cli
from nnisa.core.errors import FormatError, NnisaError, UnsupportedError
from nnisa.core.formats import FileFormat, FormatTable
from nnisa.core.jsonsafe import to_jsonable
from nnisa.core.options import COMMANDS, OptionSpec
from nnisa.core.target import (CAPABILITIES, CompileResult, Example, RunResult, SimResult, Stats, Target,
                               get_target, target_names)
from nnisa.report.timeline import Timeline

from .conftest import TARGETS

EVERY_TARGET = pytest.mark.parametrize("target", TARGETS, indirect=True)
REAL_TARGETS = pytest.mark.parametrize("target", target_names(), indirect=True)


def _formats(name: str) -> dict[str, str]:
    if name == "toy":
        from .toy.files import FORMATS
        return FORMATS.descriptions()
    return get_target(name).formats


FORMAT_CASES = [(name, ext) for name in TARGETS for ext in _formats(name)]


def _cfg(t: Target) -> dict:
    return {} if t.example.config is None else {"config": t.example.config}


def _example(t: Target):
    return t.assemble(t.example.text, **_cfg(t))


def _one_line(exc: NnisaError) -> None:
    assert str(exc) and "\n" not in str(exc)


@EVERY_TARGET
def test_declared_members(target):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", target.name) and target.description
    assert target.formats and all(ext.startswith(".") and desc for ext, desc in target.formats.items())
    assert isinstance(target.example, Example)
    names = [o.name for o in target.options]
    assert len(names) == len(set(names))
    for spec in target.options:
        assert isinstance(spec, OptionSpec) and spec.help and set(spec.commands) <= set(COMMANDS)
        if spec.default is not None:
            assert spec.convert(spec.default) == spec.default, f"option {spec.name}: default not a valid value"
        if spec.alias_of is not None:
            assert spec.alias_of in names
    caps = target.capabilities()
    assert set(caps) <= set(CAPABILITIES)
    assert {"isa", "asm", "disasm", "read", "simulate", "stats"} <= set(caps)
    assert isinstance(target.isa_markdown(**_cfg(target)), str) and target.isa_markdown(**_cfg(target)).strip()


@EVERY_TARGET
def test_capabilities_say_the_truth(target, tmp_path):
    caps = set(target.capabilities())
    prog = _example(target)
    calls = {"encode": lambda: target.encode(prog, **_cfg(target)),
             "compile": lambda: target.compile(tmp_path / "none.onnx", out_dir=tmp_path / "out"),
             "bench": lambda: target.bench("no-such-workload")}
    for cap, call in calls.items():
        if cap not in caps:
            with pytest.raises(UnsupportedError):
                call()
    if {"encode", "decode"} <= caps:
        back = target.decode(target.encode(prog, **_cfg(target)), **_cfg(target))
        assert target.disassemble(back, **_cfg(target)) == target.disassemble(prog, **_cfg(target))
    with pytest.raises(UnsupportedError, match="no workload"):
        target.check_workload("no-such-workload")


@EVERY_TARGET
def test_text_is_canonical(target):
    """Disassembly is a fixed point: assembling it gives the program back."""
    text = target.disassemble(_example(target), **_cfg(target))
    again = target.disassemble(target.assemble(text, **_cfg(target)), **_cfg(target))
    assert again == text
    st = target.stats(_example(target), **_cfg(target))
    assert isinstance(st, dict) and to_jsonable(st) is not None


@pytest.mark.parametrize("target,ext", FORMAT_CASES, indirect=["target"])
def test_format_round_trip(target, ext, tmp_path):
    """Every writable format written and read back gives the same program — the same binary where the
    target has one (a text or JSON form may annotate more), else the same text; formats that need
    more than a bare program, such as a model file, refuse it in one line."""
    prog = _example(target)
    path = tmp_path / f"prog{ext}"
    fmt = target.file_formats.lookup(path)
    assert fmt is not None and ext in fmt.extensions
    if not fmt.writes:
        pytest.skip(f"{ext} is read only")
    try:
        target.write(prog, path, **_cfg(target))
    except NnisaError as exc:
        _one_line(exc)
        return
    assert path.is_file() and path.stat().st_size > 0
    if fmt.read is not None:
        back = target.read(path, **_cfg(target))
        if "encode" in target.capabilities():
            assert target.encode(back, **_cfg(target)) == target.encode(prog, **_cfg(target))
        else:
            assert target.disassemble(back, **_cfg(target)) == target.disassemble(prog, **_cfg(target))


@EVERY_TARGET
def test_unknown_file_type_is_the_one_error(target, tmp_path):
    path = tmp_path / "prog.nosuchext"
    with pytest.raises(FormatError, match=f"unknown {target.file_formats.target} file type") as ei:
        target.write(_example(target), path)
    _one_line(ei.value)
    if target.file_formats.fallback is None:
        path.write_bytes(b"x")
        with pytest.raises(FormatError, match="unknown .* file type"):
            target.read(path)


@EVERY_TARGET
def test_bad_files_are_one_line_on_the_cli(target, tmp_path, capsys):
    """Garbage in every readable format, and a missing file: exit 2, one line, no traceback."""
    config = ["--config", str(target.example.config)] if target.example.config is not None else []
    cases = [tmp_path / "missing.s"]
    for ext in target.file_formats.readable:
        bad = tmp_path / f"bad{ext}"
        bad.write_bytes(b"\xff\xfe\x00garbage\x00" * 9)
        cases.append(bad)
    for path in cases:
        code, out, err = run_cli(["disasm", "-t", target.name, path, *config], capsys)
        assert code == 2, (path.name, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("nnisa: error:") and "Traceback" not in err, err


@EVERY_TARGET
def test_simulate_returns_the_typed_result(target):
    ex = target.example
    res = target.simulate(_example(target), inputs=ex.sim_inputs(), timeline=target.has_timeline, **_cfg(target),
                          **ex.sim_options)
    assert isinstance(res, SimResult) and isinstance(res.stats, Stats)
    assert all(isinstance(v, np.ndarray) for v in res.outputs.values())
    assert to_jsonable(res.stats.to_dict()) is not None
    assert res.report_text is None or isinstance(res.report_text, str)
    if target.has_timeline:
        assert isinstance(res.timeline, Timeline) and res.timeline.tracks
    else:
        assert res.timeline is None


@REAL_TARGETS
def test_compile_and_run_return_the_typed_results(target, tmp_path):
    if "compile" not in target.capabilities():
        pytest.skip(f"{target.name} compiles no models")
    from nnisa.frontend.models import bundled_inputs_for, bundled_model_path
    model = bundled_model_path("digits_mlp")
    res = target.compile(model, out_dir=tmp_path / "out")
    assert isinstance(res, CompileResult)
    assert res.files and all(Path(f).exists() for f in res.files.values())
    assert to_jsonable(res.report) is not None
    run = target.run_compiled(res, bundled_inputs_for(model, 2))
    assert isinstance(run, RunResult) and isinstance(run.stats, Stats)
    assert all(len(v) == 2 for v in run.outputs.values())
    assert run.checks["bit_exact"] in (True, None)
    try:  # a compiled bundle folder reads as a program, or says in one line why not
        target.disassemble(target.read(tmp_path / "out"))
    except NnisaError as exc:
        _one_line(exc)


@EVERY_TARGET
def test_bench_returns_stats(target):
    if target.example.workload is None:
        pytest.skip(f"{target.name} has no quick workload")
    assert target.example.workload in target.workloads()
    st = target.bench(target.example.workload)
    assert isinstance(st, Stats) and to_jsonable(st.to_dict()) is not None


@REAL_TARGETS
def test_parts_do_not_import_the_face(target):
    """Only the face (``target.py``) binds the parts; no part calls back up to it."""
    root = Path(__import__(f"nnisa.targets.{target.name}", fromlist=["_"]).__file__).parent
    face = re.compile(r"from \.+target import|targets\.\w+\.target\b|get_target\(")
    for path in root.rglob("*.py"):
        if path.name != "target.py":
            assert not face.search(path.read_text()), f"{path.relative_to(root)} imports the face"


def test_a_target_missing_a_member_fails_when_defined_or_constructed():
    with pytest.raises(TypeError, match="file_formats"):
        class NoFormats(Target):  # noqa: F841 - the class statement itself fails
            name = "broken"
            description = "no file formats"
            example = Example("")

    class NoSimulator(Target):
        name = "nosim"
        description = "no simulator"
        file_formats = FormatTable("nosim", [FileFormat((".x",), "x", read=lambda path, **_: None)])
        example = Example("")

        def isa_markdown(self, **options):
            return ""

        def assemble(self, text, *, file=None, **options):
            return text

        def disassemble(self, program, **options):
            return program

        def stats(self, program, **options):
            return {}

    with pytest.raises(TypeError, match="simulate"):
        NoSimulator()


@pytest.mark.parametrize("target", ["toy"], indirect=True)
def test_a_target_registered_by_one_line_is_everywhere(target, capsys):
    """The toy, registered by the fixture's one line, is a target of the CLI like the others."""
    assert "toy" in target_names()
    code, out, _ = run_cli(["targets", "--json"], capsys)
    assert code == 0 and '"target": "toy"' in out
    code, out, _ = run_cli(["isa", "-t", "toy"], capsys)
    assert code == 0 and "`mul`" in out
