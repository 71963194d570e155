"""Files and folders: nothing half-written or clobbered, modes kept, bundles confined and
self-contained, concurrent compiles never mixed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import MLP_PATH, assert_clean_error, run_cli  # noqa: E402

from nnisa.core.bundle import BundleWriter, Manifest, read_manifest  # noqa: E402
from nnisa.core.errors import FormatError, OutputError  # noqa: E402
from nnisa.core.fileio import write_atomic  # noqa: E402


def test_write_atomic_keeps_mode_and_honours_umask(tmp_path):
    p = tmp_path / "f.txt"
    old = os.umask(0o022)
    try:
        write_atomic(p, "a")
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
        os.chmod(p, 0o640)
        write_atomic(p, "b")
        assert stat.S_IMODE(p.stat().st_mode) == 0o640 and p.read_text() == "b"
    finally:
        os.umask(old)


def test_write_atomic_errors_are_output_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="cannot write"):
        write_atomic(tmp_path / "file" / "sub.txt", "a")
    with pytest.raises(OutputError, match="folder"):
        write_atomic(tmp_path, "a")
    assert not list(tmp_path.glob(".*.tmp"))


def test_bundle_writer_all_or_nothing(tmp_path):
    dest = tmp_path / "out"
    with BundleWriter(dest) as w:
        w.write("a.txt", "one")
        w.commit(Manifest(target="x", program="a.txt"))
    assert (dest / "a.txt").read_text() == "one"
    with pytest.raises(RuntimeError):
        with BundleWriter(dest) as w:
            w.write("a.txt", "two")
            raise RuntimeError("compile failed half-way")
    assert (dest / "a.txt").read_text() == "one"  # the old bundle is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left


def test_bundle_writer_refuses_foreign_folder(tmp_path):
    (tmp_path / "mine.txt").write_text("precious")
    with pytest.raises(OutputError, match="not an nnisa bundle"):
        BundleWriter(tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "precious"


def test_concurrent_bundles_never_mix(tmp_path):
    """Writers racing on one folder: every reader sees one writer's files, complete."""
    dest = tmp_path / "out"
    errors = []

    def writer(tag: int):
        try:
            for _ in range(10):
                with BundleWriter(dest) as w:
                    w.write("program.txt", f"program {tag}")
                    w.write("weights.txt", f"weights {tag}")
                    w.commit(Manifest(target="x", program="program.txt", files={"w": "weights.txt"},
                                      config={"tag": tag}))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    man = read_manifest(dest)
    tag = man.config["tag"]
    assert (dest / "program.txt").read_text() == f"program {tag}"
    assert (dest / "weights.txt").read_text() == f"weights {tag}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "sub/../../escape.txt"])
def test_manifest_names_are_confined(tmp_path, name):
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "nnisa-bundle", "program": name}))
    with pytest.raises(FormatError, match="inside the bundle|outside the bundle"):
        read_manifest(tmp_path)


def test_manifest_symlink_escape(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    b = tmp_path / "b"
    b.mkdir()
    (b / "link.txt").symlink_to(outside)
    (b / "manifest.json").write_text(json.dumps({"format": "nnisa-bundle", "program": "link.txt"}))
    with pytest.raises(FormatError, match="outside the bundle"):
        read_manifest(b)


@pytest.fixture(scope="module")
def pim_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("pim") / "b"
    res = run_cli(["compile", "-t", "pim", str(MLP_PATH), "-o", str(out)])
    assert res.code == 0, res.err
    return out


def _copy(bundle: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "b"
    shutil.copytree(bundle, dest)
    return dest


def _edit_manifest(b: Path, fn) -> None:
    man = json.loads((b / "manifest.json").read_text())
    fn(man)
    (b / "manifest.json").write_text(json.dumps(man))


@pytest.mark.parametrize("what, edit, says", [
    ("negative address", lambda m: m["inputs"][0].update(address=-5), "address"),
    ("address past memory", lambda m: m["outputs"][0].update(address=2 ** 40), "outside global memory"),
    ("huge shape", lambda m: m["outputs"][0].update(shape=[10 ** 6, 10 ** 6]), "larger than"),
    ("negative shape", lambda m: m["inputs"][0].update(shape=[-1, 64]), "negative"),
    ("zero scale", lambda m: m["inputs"][0].update(scale=0), "scale"),
    ("program escapes", lambda m: m.update(program="../../etc/passwd"), "inside the bundle"),
    ("weights escape", lambda m: m.update(weights="/etc/hostname"), "inside the bundle"),
    ("noc escapes", lambda m: m["config"]["chip_config"]["network_config"].update(net_config_file_path="/etc/hosts"),
     "inside the bundle"),
])
def test_bad_manifests(pim_bundle, tmp_path, what, edit, says):
    b = _copy(pim_bundle, tmp_path)
    _edit_manifest(b, edit)
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 8, 8), np.float32))
    assert_clean_error(run_cli(["sim", "-t", "pim", str(b), "--inputs", str(tmp_path / "x.npy")]), says=says)


@pytest.mark.parametrize("name, content, says", [
    ("gmem.npz", b"PK\x03\x04garbage", ".npz"),
    ("weights.npz", b"not a zip", ".npz"),
])
def test_corrupt_bundle_arrays(pim_bundle, tmp_path, name, content, says):
    b = _copy(pim_bundle, tmp_path)
    (b / name).write_bytes(content)
    assert_clean_error(run_cli(["sim", "-t", "pim", str(b)]), says=says)


def test_object_arrays_in_bundle(pim_bundle, tmp_path):
    b = _copy(pim_bundle, tmp_path)
    np.savez(b / "gmem.npz", **{"seg@0x0": np.array([1, "a"], dtype=object)})
    assert_clean_error(run_cli(["sim", "-t", "pim", str(b)]), says="object")


def test_bundle_is_self_contained(tmp_path):
    """A bundle compiled with a config that names a NoC table runs from any folder."""
    from shared_data import require_shared
    cfg = require_shared("conformance", "pim", "pimsim_config.json")
    out = tmp_path / "made" / "b"
    assert run_cli(["compile", "-t", "pim", str(MLP_PATH), "--config", str(cfg), "-o", str(out)]).code == 0
    moved = tmp_path / "elsewhere"
    shutil.move(str(out), moved)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = run_cli(["sim", "-t", "pim", str(moved), "--json"])
    finally:
        os.chdir(cwd)
    assert res.code == 0, res.err
    assert json.loads(res.out)["latency_ns"] > 0


def test_failed_compile_leaves_old_bundle(pim_bundle, tmp_path):
    b = _copy(pim_bundle, tmp_path)
    before = {p.name: p.read_bytes() for p in b.iterdir()}
    res = run_cli(["compile", "-t", "pim", str(MLP_PATH), "-o", str(b), "-O", "bits=1"])
    assert_clean_error(res, says="bits")
    assert {p.name: p.read_bytes() for p in b.iterdir()} == before
