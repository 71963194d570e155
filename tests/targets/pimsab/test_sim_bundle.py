"""``nnisa sim -t pimsab <compiled folder>`` (issue 28 item 3): the folder's network, float values
in and out as its manifest says, integers under ``--raw``, the stored programs what runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_runner import run_cli
from nnisa.core.errors import FormatError
from nnisa.core.target import get_target
from nnisa.frontend import evaluate_quantized
from nnisa.frontend.models import bundled_model_path, bundled_testset
from nnisa.targets.pimsab.compiler.netbundle import load_qgraph, read_network, save_qgraph


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "dc"
    comp = get_target("pimsab").compile(bundled_model_path("digits_cnn"), out_dir=out)
    return out, comp


def test_sim_of_a_folder_matches_run_float_and_raw(folder, tmp_path, capsys):
    out, comp = folder
    x, _ = bundled_testset("digits_cnn")
    x = x[:3]                                         # (3, 1, 8, 8): three samples of a (1, 1, 8, 8) model
    np.save(tmp_path / "x.npy", x)
    code, stdout, err = run_cli(["sim", "-t", "pimsab", out, "--inputs", tmp_path / "x.npy", "--outputs",
                                 tmp_path / "y.npz", "--json"], capsys)
    assert code == 0, err
    rep = json.loads(stdout.strip().splitlines()[-1])
    got = np.load(tmp_path / "y.npz")["logits"]
    want = get_target("pimsab").run_compiled(comp, {"input": x}).outputs["logits"]
    assert got.shape == (3, 10) and np.array_equal(got, want)
    assert rep["cycles"] > 0 and [r["layer"] for r in rep["layers"]] == [L.node.name for L in comp.layers]
    assert sum(r["cycles"] for r in rep["layers"]) == rep["cycles"]
    # --raw: the integers in and out, equal to the frontend's integer reference
    q = comp.qgraph.quantize_input("input", x)
    np.save(tmp_path / "q.npy", q.astype(np.int64))
    code, _, err = run_cli(["sim", "-t", "pimsab", out, "--raw", "--inputs", tmp_path / "q.npy", "--outputs",
                            tmp_path / "r.npz"], capsys)
    assert code == 0, err
    raw = np.load(tmp_path / "r.npz")["logits"]
    ref = np.concatenate([evaluate_quantized(comp.qgraph, {"input": q[i:i + 1]})["logits"] for i in range(3)])
    assert np.issubdtype(raw.dtype, np.integer) and np.array_equal(raw, ref)


def test_one_sample_in_the_models_own_shape(folder, tmp_path, capsys):
    out, comp = folder
    x, _ = bundled_testset("digits_cnn")
    np.save(tmp_path / "x1.npy", x[:1])                   # exactly the model's input shape (1, 1, 8, 8)
    code, _, err = run_cli(["sim", "-t", "pimsab", out, "--inputs", tmp_path / "x1.npy", "--outputs",
                            tmp_path / "y1.npz"], capsys)
    assert code == 0, err
    assert np.load(tmp_path / "y1.npz")["logits"].shape == (1, 10)
    np.save(tmp_path / "bad.npy", x[:1, 0, :4])
    code, _, err = run_cli(["sim", "-t", "pimsab", out, "--inputs", tmp_path / "bad.npy"], capsys)
    assert code != 0 and "Traceback" not in err and "input" in err


def test_a_changed_program_or_missing_graph_is_refused(folder, tmp_path):
    import shutil
    out, _ = folder
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    prog = sorted(bad.glob("*.psab"))[0]
    data = bytearray(prog.read_bytes())
    from nnisa.targets.pimsab.formats.image import decode_image, encode_image
    p = decode_image(bytes(data))
    p.rows = p.rows[:-1].copy()
    p.tiles = p.tiles[:-1].copy()
    prog.write_bytes(encode_image(p))
    with pytest.raises(FormatError, match="compile the model again"):
        read_network(bad)
    (bad / "qgraph.json").unlink()
    with pytest.raises(FormatError, match="qgraph"):
        read_network(bad)


def test_quantized_graph_round_trip(folder):
    _, comp = folder
    qg = load_qgraph(*save_qgraph(comp.qgraph))
    x, _ = bundled_testset("digits_cnn")
    q = {"input": comp.qgraph.quantize_input("input", x[:2])}
    a, b = evaluate_quantized(comp.qgraph, q), evaluate_quantized(qg, q)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert [n.name for n in qg.nodes] == [n.name for n in comp.qgraph.nodes]


def test_stored_graph_keeps_dicts_with_int_and_tuple_keys():
    """A quantized graph's attributes may be keyed by ints or tuples (an attention mask's positions):
    the folder's graph stores and reads them back unchanged."""
    import numpy as np
    from nnisa.targets.pimsab.compiler.netbundle import load_qgraph, save_qgraph
    value = {"plain": {1: np.arange(3), (2, 3): "x", "s": (1, 2)}}
    doc, npz = save_qgraph(value)
    back = load_qgraph(doc, npz)
    assert set(back["plain"]) == {1, (2, 3), "s"} and back["plain"][(2, 3)] == "x"
    assert np.array_equal(back["plain"][1], np.arange(3)) and back["plain"]["s"] == (1, 2)
