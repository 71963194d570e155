"""Outputs never replace what is at their path (issue 25): devices and FIFOs are written in place
(on private ``mknod`` nodes in a temporary folder, never the real /dev), no extra file lands beside
a device, ``compile -o`` replaces only nnisa's own bundles and deletes nothing it did not write,
and temporaries of killed writers are removed by the next run."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import MLP, PIM_SMALL  # noqa: E402
from harness import assert_clean_error, run_cli  # noqa: E402

from nnisa.core.fileio import temp_prefix, write_atomic  # noqa: E402

PIMSAB_SMALL = ".tile 0\nload r0, 0x100, 256, i8\nmult r16, i16, r0, i8, r0, i8\nstore 0x200, r16, 256, i16\n"
DAIS_SMALL = (".dais 1\n.inputs 2 shifts 0 0\n.outputs 1\n%0 = input 0 : (1,7,0)\n%1 = input 1 : (1,7,0)\n"
              "%2 = add %0, %1, 0 : (1,8,0)\nout 0 = %2\n")


def null_node(folder: Path, name: str) -> Path:
    """A private character device behaving like /dev/null (major 1, minor 3) at ``folder/name``."""
    p = folder / name
    try:
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here ({exc.strerror}): needs root or CAP_MKNOD")
    return p


def is_char_device(p: Path) -> bool:
    return stat.S_ISCHR(os.lstat(p).st_mode)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("in")
    files = {"pim": d / "p.s", "pimsab": d / "ps.s", "dais": d / "d.dais.txt", "x2": d / "x2.npy"}
    files["pim"].write_text(PIM_SMALL)
    files["pimsab"].write_text(PIMSAB_SMALL)
    files["dais"].write_text(DAIS_SMALL)
    np.save(files["x2"], np.ones((3, 2), np.float32))
    files["tensil"] = d / "tensil"
    assert run_cli(["compile", "-t", "tensil", str(MLP), "-o", str(files["tensil"])]).code == 0
    np.save(d / "xt.npy", np.random.default_rng(0).random((1, 64), np.float32))
    files["xt"] = d / "xt.npy"
    files["results"] = d / "results"
    files["results"].mkdir()
    (files["results"] / "points.jsonl").write_text(json.dumps(
        {"point_id": "p1", "target": "dais", "status": "ok", "latency_ns": 1.0, "energy_pj": 2.0}) + "\n")
    return files


# (id, node name, argv with NODE standing for the node's path)
DEVICE_CASES = [
    ("disasm -o", "n.s", lambda f: ["disasm", "-t", "pim", f["pim"], "-o", "NODE"]),
    ("asm -o", "n.nnpi", lambda f: ["asm", "-t", "pim", f["pim"], "-o", "NODE"]),
    ("convert", "n.json", lambda f: ["convert", "-t", "pim", f["pim"], "NODE"]),
    ("sim --outputs", "n.npz", lambda f: ["sim", "-t", "dais", f["dais"], "--inputs", f["x2"], "--outputs", "NODE"]),
    ("sim --gantt", "n.png", lambda f: ["sim", "-t", "pim", f["pim"], "--mode", "timing", "--gantt", "NODE"]),
    ("sim --trace", "n.json", lambda f: ["sim", "-t", "pim", f["pim"], "--mode", "timing", "--trace", "NODE"]),
    ("pimsab -O log=", "n.csv", lambda f: ["sim", "-t", "pimsab", f["pimsab"], "-O", "log=NODE"]),
    ("tensil -O csv=", "n.csv", lambda f: ["sim", "-t", "tensil", f["tensil"], "--inputs", f["xt"], "-O", "csv=NODE"]),
    ("run --outputs", "n.npz", lambda f: ["run", "-t", "dais", MLP, "--outputs", "NODE"]),
    ("compare --plot", "n.png", lambda f: ["compare", MLP, "--targets", "dais", "--samples", "2", "--plot", "NODE"]),
]


@pytest.mark.parametrize("case", DEVICE_CASES, ids=[c[0] for c in DEVICE_CASES])
def test_device_output_is_written_in_place(case, inputs, tmp_path):
    _, name, argv = case
    node = null_node(tmp_path, name)
    args = [str(node) if a == "NODE" else a.replace("NODE", str(node)) if isinstance(a, str) else str(a)
            for a in argv(inputs)]
    res = run_cli(args)
    assert res.escaped is None and res.code == 0, res.err
    assert is_char_device(node), "the device node was replaced by a regular file"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name], "a file was written beside the device"


def test_symlink_to_device_stays(inputs, tmp_path):
    node = null_node(tmp_path, "null")
    link = tmp_path / "out.s"
    link.symlink_to(node)
    assert run_cli(["disasm", "-t", "pim", str(inputs["pim"]), "-o", str(link)]).code == 0
    assert link.is_symlink() and is_char_device(node)


def test_fifo_is_written_in_place(inputs, tmp_path):
    fifo = tmp_path / "out.s"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    time.sleep(0.2)  # the reader is blocked in open() until the writer comes
    res = run_cli(["disasm", "-t", "pim", str(inputs["pim"]), "-o", str(fifo)])
    reader.join(10)
    assert res.code == 0, res.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert b"vvadd" in got[0]


def test_fifo_without_reader_is_refused(inputs, tmp_path):
    fifo = tmp_path / "out.s"
    os.mkfifo(fifo)
    res = run_cli(["disasm", "-t", "pim", str(inputs["pim"]), "-o", str(fifo)])
    assert_clean_error(res, says="no process is reading")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_block_device_is_refused(inputs, tmp_path):
    node = tmp_path / "disk.s"
    try:
        os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here ({exc.strerror})")
    res = run_cli(["disasm", "-t", "pim", str(inputs["pim"]), "-o", str(node)])
    assert_clean_error(res, says="block device")
    assert stat.S_ISBLK(os.lstat(node).st_mode)


@pytest.mark.parametrize("argv, says", [
    (lambda f, n: ["convert", "-t", "tensil", f["tensil"], n], "beside it"),
    (lambda f, n: ["compile", "-t", "dais", MLP, "-o", n], "not a folder"),
    (lambda f, n: ["sweep", "report", f["results"], "-o", n], "not a folder"),
])
def test_device_refused_where_a_folder_or_siblings_are_written(argv, says, inputs, tmp_path):
    node = null_node(tmp_path, "n.tmodel")
    res = run_cli([str(a) for a in argv(inputs, node)])
    assert_clean_error(res, says=says)
    assert is_char_device(node) and sorted(p.name for p in tmp_path.iterdir()) == ["n.tmodel"]


# ----------------------------------------------------------------------------- compile -o
def test_foreign_manifest_folder_is_not_replaced(tmp_path):
    web = tmp_path / "webapp"
    web.mkdir()
    (web / "manifest.json").write_text(json.dumps({"name": "app", "icons": []}))
    (web / "index.html").write_text("<html>")
    res = run_cli(["compile", "-t", "dais", str(MLP), "-o", str(web)])
    assert_clean_error(res, says="not an nnisa bundle")
    assert sorted(p.name for p in web.iterdir()) == ["index.html", "manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["webapp"]


@pytest.mark.parametrize("manifest", [
    {"format": "nnisa-bundle"},                    # no version
    {"format": "other-tool", "version": 1},        # another tool's format
    {"format": "nnisa-bundle", "version": "1"},    # version not an integer
    "[1, 2]",
    "not json",
])
def test_manifest_must_be_nnisa_s_own(tmp_path, manifest):
    d = tmp_path / "d"
    d.mkdir()
    (d / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    res = run_cli(["compile", "-t", "dais", str(MLP), "-o", str(d)])
    assert_clean_error(res, says="manifest.json that is not an nnisa bundle")
    assert [p.name for p in d.iterdir()] == ["manifest.json"]


def test_bundle_with_user_files_is_not_replaced(tmp_path):
    b = tmp_path / "b"
    assert run_cli(["compile", "-t", "dais", str(MLP), "-o", str(b)]).code == 0
    assert "contents" in json.loads((b / "manifest.json").read_text())
    (b / "notes.txt").write_text("mine")
    res = run_cli(["compile", "-t", "dais", str(MLP), "-o", str(b)])
    assert_clean_error(res, says="files nnisa did not write (notes.txt)")
    assert (b / "notes.txt").read_text() == "mine"
    (b / "notes.txt").unlink()
    assert run_cli(["compile", "-t", "dais", str(MLP), "-o", str(b)]).code == 0


def test_old_bundle_without_contents_is_replaced(tmp_path):
    """Bundles written before ``contents`` existed: the files their manifest names are nnisa's."""
    b = tmp_path / "b"
    assert run_cli(["compile", "-t", "cherry", str(MLP), "-o", str(b)]).code == 0
    man = json.loads((b / "manifest.json").read_text())
    del man["contents"]
    (b / "manifest.json").write_text(json.dumps(man))
    assert run_cli(["compile", "-t", "cherry", str(MLP), "-o", str(b)]).code == 0


# ----------------------------------------------------------------------------- stale temporaries
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_killed_writers_are_removed(tmp_path):
    out = tmp_path / "out.s"
    mine = temp_prefix("out.s")
    host = mine.split("@", 1)[1]
    dead = f".out.s.{_dead_pid()}@{host}"
    (tmp_path / f"{dead}abcd1234.tmp").write_text("half")
    (tmp_path / f"{dead}old-1234.tmp").mkdir()
    alive = tmp_path / f".out.s.{os.getppid()}@{host}zzzz.tmp"  # a live writer's
    alive.write_text("busy")
    other_host = tmp_path / f".out.s.{_dead_pid()}@elsewhere-host.yyyy.tmp"  # a shared file system
    other_host.write_text("not ours")
    write_atomic(out, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, other_host.name, "out.s"])


def test_sigkilled_compile_leaves_nothing_after_the_next(tmp_path):
    """SIGKILL during a compile leaves a temporary folder; the next compile into the place removes it."""
    out = tmp_path / "b"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "nnisa", "compile", "-t", "pim", str(MLP), "-o", str(out)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".b.*.tmp")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    left = list(tmp_path.glob(".b.*.tmp"))
    proc.kill()
    proc.wait()
    assert left, "the compile finished before it could be killed"
    assert run_cli(["compile", "-t", "pim", str(MLP), "-o", str(out)]).code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_descriptor_link_is_written_in_place(inputs, tmp_path):
    """``-o /dev/stdout`` with stdout redirected to a file: the link (here a private one to
    /proc/self/fd/1, never the real /dev/stdout) is kept and the text reaches the file."""
    link = tmp_path / "stdout.s"
    link.symlink_to("/proc/self/fd/1")
    out = tmp_path / "captured.txt"
    with open(out, "wb") as fh:
        proc = subprocess.run([sys.executable, "-m", "nnisa", "disasm", "-t", "pim", str(inputs["pim"]), "-o",
                               str(link)], stdout=fh, stderr=subprocess.PIPE,
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert b"vvadd" in out.read_bytes()
