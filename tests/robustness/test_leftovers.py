"""Nothing is left in $TMPDIR (issue 25): interrupted sweeps (nnisa-run*, pymp-*), onnxruntime's
``.ses`` telemetry file, HDL tools stopped mid-build (cc*.s, yowasp_*), and a signal landing in a
numba kernel (the DAIS CSE) is an interrupt (exit 130), not a SystemError."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import MLP  # noqa: E402

CNN = MLP.with_name("digits_cnn.onnx")
SPEC = ("name: t\nmodels: [digits_mlp]\nsamples: 1\ntargets:\n  dais:\n    options:\n"
        "      bits: {from: 3, to: 8}\n      method: [wmc, mc]\n")


def _env(tmp: Path, **extra: str) -> dict:
    return dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=os.pathsep.join(sys.path), **extra)


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_sweep_leaves_no_temporaries(tmp_path, sig):
    # a short private TMPDIR: the sweep's forkserver binds an AF_UNIX socket under it, and
    # pytest-xdist's tmp_path can push that socket's path past the 107-character limit
    tmp = Path(tempfile.mkdtemp(prefix="nnisa-lo-", dir="/tmp" if os.access("/tmp", os.W_OK) else None))
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "nnisa", "sweep", str(spec), "-o", str(out), "-j", "2"],
                            env=_env(tmp), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while _lines(out / "points.jsonl") < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail("the sweep ended before it could be interrupted: " + proc.stderr.read().decode(errors="replace")[-600:])
    proc.send_signal(sig)
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 130, err[-500:]
    assert (out / "results.parquet").is_file()
    time.sleep(0.5)  # the forkserver notices its parent is gone
    left = sorted(os.listdir(tmp))
    shutil.rmtree(tmp, ignore_errors=True)
    assert left == [], "left in TMPDIR"


def test_run_leaves_no_onnxruntime_session_file(tmp_path):
    """onnxruntime >= 1.30 writes a 1DS telemetry ``.ses`` file when loaded; nnisa opts out."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run([sys.executable, "-m", "nnisa", "run", "-t", "dais", str(MLP), "--json"], cwd=tmp_path,
                          env={k: v for k, v in _env(tmp).items() if k != "ORT_DISABLE_TELEMETRY"},
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-500:]
    assert sorted(os.listdir(tmp)) == [] and sorted(os.listdir(tmp_path)) == ["tmp"]


def test_stale_run_folders_of_killed_processes_are_removed(tmp_path, monkeypatch):
    """A ``nnisa run`` killed by SIGKILL leaves its folder; the next run removes it."""
    import tempfile

    from nnisa.core.fileio import private_temp_folder, temp_prefix
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = temp_prefix("x").split("@", 1)[1]
    left = tmp_path / f"nnisa-run.{dead.pid}@{host}abcd.tmp"
    left.mkdir()
    (left / "program.json.gz").write_bytes(b"x")
    beside = tmp_path / f".{left.name}.{dead.pid}@{host}efgh.tmp"  # its bundle's temporary sibling
    beside.mkdir()
    with private_temp_folder("nnisa-run") as mine:
        assert sorted(os.listdir(tmp_path)) == [mine.name]
    assert os.listdir(tmp_path) == []


def test_signal_in_a_numba_kernel_is_an_interrupt(tmp_path):
    """Python runs a signal's handler when a numba kernel returns, and the dispatcher then raises
    ``SystemError(... returned a result with an exception set)`` from the KeyboardInterrupt: the
    CLI treats that as the interrupt it is (exit 130, one line)."""
    script = (
        "import sys\n"
        "from nnisa import cli\n"
        "from nnisa.core import target\n"
        "class Boom:\n"
        "    name = 'dais'\n"
        "    def option_table(self):\n"
        "        return target.get_target('dais').option_table()\n"
        "    options = ()\n"
        "    def compile(self, *a, **k):\n"
        "        try:\n"
        "            raise KeyboardInterrupt\n"
        "        except KeyboardInterrupt as e:\n"
        "            raise SystemError('CPUDispatcher(<function _cse_kernel>) returned a result with an "
        "exception set') from e\n"
        "cli.get_target = lambda name: Boom()\n"
        f"cli.main(['compile', '-t', 'dais', {str(MLP)!r}, '-o', {str(tmp_path / 'out')!r}])\n")
    proc = subprocess.run([sys.executable, "-c", script], env=_env(tmp_path), capture_output=True, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 130, err[-800:]
    assert err.strip() == "nnisa: interrupted"


@pytest.mark.slow  # ~1 min: eight compiles of the digits CNN stopped at different moments
def test_signals_during_the_dais_cse_kernel(tmp_path):
    """SIGTERM/SIGINT at eight moments of a DAIS compile (through the CSE kernel): always exit 130,
    one line, no temporary folder left (8/8 were SystemError tracebacks before)."""
    t0 = time.monotonic()  # the start-up (imports) on this machine now: signals go in after it
    subprocess.run([sys.executable, "-c", "import nnisa.cli, numba"], env=_env(tmp_path), check=True)
    startup = time.monotonic() - t0
    for k in range(8):
        out = tmp_path / f"o{k}"
        proc = subprocess.Popen([sys.executable, "-m", "nnisa", "compile", "-t", "dais", str(CNN), "-o", str(out),
                                 "-O", "cse_budget=none"], env=_env(tmp_path), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        time.sleep(1.5 * startup + 0.5 + 0.4 * k)
        proc.send_signal(signal.SIGTERM if k % 2 else signal.SIGINT)
        err = proc.communicate(timeout=120)[1].decode()
        if proc.returncode == 0:
            continue  # finished before the signal (a fast machine)
        assert proc.returncode == 130 and err.strip() == "nnisa: interrupted", (k, proc.returncode, err[-600:])
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".o")], "temporary bundle left"


def _stop_during(tmp_path: Path, args: list[str], marker, what: str) -> None:
    """Run nnisa with a private TMPDIR and cache, SIGTERM it once ``marker(tmp)`` holds, and check
    that it exits 130 and leaves TMPDIR empty."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = _env(tmp, NNISA_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "nnisa", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not marker(tmp) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.skip(f"{what} ended before it could be stopped ({proc.stderr.read().decode()[-300:]})")
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 130, err[-600:]
    time.sleep(0.5)
    left = [str(p.relative_to(tmp)) for p in tmp.rglob("*")]
    assert left == [], f"left in TMPDIR by {what}: {left[:10]}"


def _require(tool: str) -> None:
    """The ``hdl`` extra's tool, or skip (fail under CI, where ``make install`` installs it)."""
    from nnisa.targets.dais.rtl.tools import have
    if not have(tool):
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{tool} is not installed (pip install 'nnisa[hdl]')")


def _tool_folder(tmp: Path) -> bool:
    return any(p.name.startswith("nnisa-tool.") for p in tmp.iterdir())


@pytest.mark.slow  # builds a Verilated model (10-60 s)
def test_sigterm_during_verilator_leaves_nothing(tmp_path):
    _require("verilator")
    from nnisa.core.target import get_target
    t = get_target("dais")
    prog = t.assemble(".dais 1\n.inputs 2 shifts 0 0\n.outputs 1\n%0 = input 0 : (1,7,0)\n%1 = input 1 : (1,7,0)\n"
                      "%2 = add %0, %1, 0 : (1,8,0)\nout 0 = %2\n")
    t.write(prog, tmp_path / "p.dais")
    import numpy as np
    np.save(tmp_path / "x.npy", np.ones((4, 2)))

    def compiling(tmp: Path) -> bool:  # the C++ compiler's cc*.s files, wherever they are
        return any(p.name.startswith("cc") for p in tmp.rglob("*"))

    _stop_during(tmp_path, ["sim", "-t", "dais", str(tmp_path / "p.dais"), "--inputs", str(tmp_path / "x.npy"),
                            "-O", "engine=rtl"], compiling, "Verilator")


@pytest.mark.slow  # runs Yosys on the digits MLP (10-60 s)
def test_sigterm_during_yosys_leaves_nothing(tmp_path):
    _require("yosys")
    _stop_during(tmp_path, ["compile", "-t", "dais", str(MLP), "-o", str(tmp_path / "out"), "-O", "hdl=verilog",
                  "-O", "synth=true"],
                 _tool_folder, "Yosys")
