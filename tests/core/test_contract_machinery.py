"""The machinery of the target contract: format tables, options from dataclasses, deprecated
aliases, the typed results and the run loop."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

from cli_runner import run_cli
from nnisa.core.errors import FormatError, OptionError
from nnisa.core.formats import FileFormat, FormatTable
from nnisa.core.options import OptionSpec, OptionTable, option, option_specs, split_options
from nnisa.core.target import CompileResult, SimResult, Stats, check_mode, run_samples, simulate_stacked, take_engine


def _table(tmp_path):
    seen = {}
    table = FormatTable("demo", [
        FileFormat((".txt", ".demo.txt"), "demo text", lambda p, **o: ("text", p.read_text(), o),
                   lambda prog, p, **_: prog),
        FileFormat((".v",), "demo RTL", render=lambda prog, p, **_: "module;"),
        FileFormat((".ro",), "demo read-only", read=lambda p, **_: "ro"),
        FileFormat((".many",), "demo many files", write=lambda prog, p, **_: seen.setdefault("w", ["warned"])),
    ])
    return table, seen


def test_format_table_dispatch_and_errors(tmp_path):
    table, seen = _table(tmp_path)
    assert table.lookup("a.DEMO.TXT").description == "demo text"  # longest, case-insensitive
    assert table.descriptions()[".v"] == "demo RTL (write only)" and table.descriptions()[".ro"].endswith("(read only)")
    assert table.write("hello", tmp_path / "x.txt") == []
    assert table.read(tmp_path / "x.txt", config=1) == ("text", "hello", {"config": 1})
    assert table.write("p", tmp_path / "x.many") == ["warned"]
    assert table.render("p", tmp_path / "x.v") == "module;"
    with pytest.raises(FormatError, match=r"unknown demo file type '\.zip' for writing \(known: .txt"):
        table.write("p", tmp_path / "x.zip")
    with pytest.raises(FormatError, match="written by nnisa, not read"):
        table.read(tmp_path / "x.v")
    with pytest.raises(FormatError, match="read only"):
        table.write("p", tmp_path / "x.ro")
    (tmp_path / "folder").mkdir()
    with pytest.raises(FormatError, match="is a directory"):
        table.read(tmp_path / "folder")
    with pytest.raises(ValueError, match="two file formats"):
        FormatTable("bad", [FileFormat((".a",), "a", read=print), FileFormat((".a",), "b", read=print)])


@dataclass
class _Opts:
    level: int = option(3, "a level", minimum=1, maximum=9)
    name: str | None = option(None, "a name", commands=("sim",))
    kind: str = option("x", "a kind", choices=("x", "y"))
    hidden: object = None


def test_options_come_from_the_dataclass():
    specs = {s.name: s for s in option_specs(_Opts, first=("kind",))}
    assert list(specs) == ["kind", "level", "name"]
    assert specs["level"] == OptionSpec("level", int, 3, None, "a level", ("compile", "run"), 1, 9)
    assert specs["name"].nullable and specs["name"].type is str and specs["name"].commands == ("sim",)
    opts, rest = split_options(_Opts, {"level": 5, "hidden": 1, "other": 2})
    assert opts == _Opts(level=5, hidden=1) and rest == {"other": 2}


def test_deprecated_alias_warns_and_renames():
    table = OptionTable("demo", (OptionSpec("engine", str, "fast", ("fast", "reference"), "e", ("sim",)),
                                 OptionSpec("path", str, "fast", ("fast", "reference"), "old", ("sim",),
                                            alias_of="engine", deprecated=True)))
    with pytest.warns(DeprecationWarning, match="use engine"):
        assert table.validate("sim", {"path": "reference"}) == {"engine": "reference"}
    with pytest.raises(OptionError, match="same setting"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table.validate("sim", {"path": "reference", "engine": "fast"})
    opts = {"path": "reference"}
    with pytest.warns(DeprecationWarning):
        assert take_engine(opts) == "reference" and opts == {}
    assert take_engine({}, "auto") == "auto"
    assert check_mode(None) == "both"
    with pytest.raises(OptionError, match="unknown simulation mode"):
        check_mode("fast")


def test_path_on_the_cli_is_engine_with_a_warning(tmp_path, capsys):
    src = tmp_path / "p.s"
    src.write_text(".chip_cores 1\n.core 0\n  setbw 8, 8\n  sldi $r0, 0\n  lldi $r0, 3, 16\n")
    code, _, err = run_cli(["sim", "-t", "pim", src, "--mode", "functional", "-O", "path=reference"], capsys)
    assert code == 0 and "nnisa: warning: option path is deprecated; use engine" in err


def test_run_loop_batches_and_checks():
    calls = []

    def simulate(program, *, inputs, **_):
        calls.append(len(inputs["x"]))
        return SimResult({"y": inputs["x"] * 2}, Stats(cycles=len(calls)))

    compiled = CompileResult(program=None, encode_inputs=lambda s: {"x": s["x"][None]},
                             decode_outputs=lambda o: {"y": o["y"][0] / 2}, reference=lambda s: {"y": s["x"][None] * 2},
                             samples_per_run=None)
    x = np.arange(6.0).reshape(3, 2)
    done = []
    run = run_samples(lambda c, samples, first: simulate_stacked(simulate, c, samples), compiled, {"x": x},
                      lambda d, n: done.append((d, n)))
    assert calls == [3] and done == [(3, 3)] and run.checks == {"bit_exact": True}
    assert np.array_equal(run.outputs["y"], x) and run.stats.cycles == 1
    compiled.samples_per_run = 2
    outs, stats, checks = run_samples(lambda c, samples, first: simulate_stacked(simulate, c, samples), compiled,
                                      {"x": x})
    assert calls[1:] == [2, 1] and stats.cycles == 3 and checks["bit_exact"]


def test_stats_from_figures():
    st = Stats.from_figures({"cycles": 5, "latency_ns": 2.0, "summary": "s", "energy_j": 1e-9})
    assert st.cycles == 5 and st.extra == {"summary": "s", "energy_j": 1e-9}
    assert st.to_dict()["summary"] == "s" and st.to_dict()["energy_pj"] is None
