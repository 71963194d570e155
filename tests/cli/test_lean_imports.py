"""``nnisa sim`` on a PIM program file imports only what it needs (issue 30, the lean path).

Each case runs the real command in its own process and records, when it exits, which modules
were loaded and which nnisa module first imported numba and pydantic: the ONNX frontend, the
API, the bundle manifests, plotting and rich tables must stay out of it, and the two heavy
libraries the path does load must come only through the modules allowed to bring them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nnisa.core import native
from nnisa.core.target import get_target

SRC = Path(__file__).resolve().parents[2] / "src"

#: never loaded by `nnisa sim` on a program file
FORBIDDEN = ("onnx", "onnxruntime", "nnisa.api", "nnisa.frontend", "matplotlib", "rich", "torch",
             "nnisa.core.bundle", "nnisa.targets.pim.formats.bundle", "nnisa.targets.pim.compiler.driver",
             "nnisa.report.tables", "nnisa.report.timeline")
#: the one nnisa module allowed to import numba: core.native, when a kernel (the JSON and text
#: scanners, the timing planner and engine) has no fresh native module and goes to the JIT
NUMBA_IMPORTERS = ("nnisa.core.native",)
#: the pimsim-nn configuration is a pydantic model; nothing else on the path may load pydantic
PYDANTIC_IMPORTERS = ("nnisa.targets.pim.config",)

# Runs the CLI as `python -m nnisa.cli` would, with a meta-path hook that notes the innermost nnisa
# module on the stack when numba/pydantic is first imported, and writes what it saw at exit.
_RUNNER = r"""
import json, sys, runpy
report, argv = sys.argv[1], sys.argv[2:]
first = {}

class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name in ("numba", "pydantic") and name not in first:
            f = sys._getframe(1)
            while f is not None and not f.f_globals.get("__name__", "").startswith("nnisa"):
                f = f.f_back
            first[name] = f.f_globals["__name__"] if f is not None else None
        return None

sys.meta_path.insert(0, _Watch())
sys.argv = ["nnisa", *argv]

def _report():  # at exit: the CLI ends its own process after running the atexit handlers
    with open(report, "w") as fh:
        json.dump({"modules": sorted(sys.modules), "first": first}, fh)

import atexit
atexit.register(_report)
runpy.run_module("nnisa.cli", run_name="__main__", alter_sys=True)
"""


def _run(tmp_path: Path, args: list[str]) -> tuple[dict, dict]:
    """(the command's JSON result, {"modules": [...], "first": {lib: importer}})."""
    report = tmp_path / "modules.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(report), *args], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), json.loads(report.read_text())


def _check_lean(seen: dict) -> None:
    loaded = set(seen["modules"])
    bad = sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert not bad, f"nnisa sim imported {bad}"
    importer = seen["first"]
    assert importer.get("numba") in (None, *NUMBA_IMPORTERS), f"numba imported by {importer['numba']}"
    if "none fresh" not in native.native_status():  # the kernels run natively: numba never loads
        assert "numba" not in loaded, f"numba imported by {importer.get('numba')}"
    elif os.environ.get("CI"):
        pytest.fail("CI: no fresh native module after make install (nnisa.warmup builds it)")
    assert importer.get("pydantic") in (None, *PYDANTIC_IMPORTERS), f"pydantic imported by {importer['pydantic']}"


@pytest.fixture(scope="module")
def example_program():
    pim = get_target("pim")
    return pim.assemble(pim.example.text)


@pytest.mark.parametrize("suffix", [".json", ".json.gz", ".nnpi", ".s"])
def test_sim_of_a_program_file_stays_lean(tmp_path, example_program, suffix):
    path = tmp_path / f"example{suffix}"
    get_target("pim").write(example_program, path)
    result, seen = _run(tmp_path, ["sim", "-t", "pim", str(path), "--json"])
    assert result["instructions"] == len(example_program) and result["latency_ns"] > 0
    _check_lean(seen)


def test_sim_with_the_conformance_config_stays_lean(tmp_path, example_program, shared_dir):
    config = shared_dir / "conformance" / "pim" / "pimsim_config.json"
    path = tmp_path / "example.json.gz"
    get_target("pim").write(example_program, path)
    result, seen = _run(tmp_path, ["sim", "-t", "pim", "--config", str(config), str(path), "--json"])
    assert result["latency_ns"] > 0
    _check_lean(seen)
    assert seen["first"].get("pydantic") == "nnisa.targets.pim.config"


def test_import_nnisa_loads_no_api():
    """``import nnisa`` is the package alone; the API's names load on first use."""
    code = ("import sys, nnisa; before = sorted(m for m in sys.modules if m.startswith('nnisa')); "
            "nnisa.target_names(); import json; print(json.dumps([before, 'onnx' in sys.modules]))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    before, onnx_loaded = json.loads(out.stdout)
    assert before == ["nnisa"]
    assert not onnx_loaded  # nnisa.target_names() went through nnisa.api, which loads the frontend lazily
