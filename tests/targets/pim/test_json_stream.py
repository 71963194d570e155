"""The one-pass JSON reader (formats/jsonstream.py) against the whole-document and orjson paths.

Files (plain and gzip) are read in pieces as small as one byte; the result must be the program
the whole-document reader and the orjson reader give, and an error must be theirs (file, line,
column).  Programs come from the hypothesis strategy written by our writer, from byte-level
mutations, and from the conformance program (slow).
"""

from __future__ import annotations

import gzip
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.core.errors import FormatError
from nnisa.targets.pim.formats import jsonscan as js
from nnisa.targets.pim.formats import jsonstream
from nnisa.targets.pim.formats.jsonio import dump_json, read_json
from shared_data import require_shared

from .pim_strategies import program_strategy
from .test_json_fast import CFG, INSTS, _doc

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _same(a, b):
    assert sorted(a.cores) == sorted(b.cores)
    for c in a.cores:
        assert a.cores[c].tobytes() == b.cores[c].tobytes()
    assert (a.array_group_map, a.chip_cores, a.config_extra, a.warnings, a.odd_pairs) == \
           (b.array_group_map, b.chip_cores, b.config_extra, b.warnings, b.odd_pairs)


def _outcome(fn):
    try:
        return "ok", fn()
    except FormatError as exc:
        return "error", str(exc).replace("<bytes>", "F")


def _streamed_vs_whole(tmp_path, data: bytes, piece: int, gz: bool, monkeypatch, split: bool = False):
    """Read ``data`` from a file in pieces of ``piece`` bytes and as a whole: same outcome.
    ``split``: the file is scanned in two parts by two threads however small it is."""
    monkeypatch.setattr(jsonstream, "SPLIT_MIN", 0 if split else 1 << 40)
    monkeypatch.setattr(jsonstream, "FILE_PIECE", piece)
    monkeypatch.setattr(jsonstream.GzipPieces, "CHUNK", max(1, piece // 8))
    path = tmp_path / ("F.json.gz" if gz else "F.json")
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    got = _outcome(lambda: read_json(path))
    assert not [t for t in threading.enumerate() if t.name.startswith(("nnisa-scan", "nnisa-gunzip"))]
    whole = _outcome(lambda: read_json(data, file=str(path)))
    ref = _outcome(lambda: read_json(data, file=str(path), fast=False))
    assert got[0] == whole[0] == ref[0]
    if got[0] == "ok":
        _same(got[1], whole[1])
        _same(got[1], ref[1])
    else:
        assert got[1] == whole[1]
    return got


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("piece", [1, 7, 64, 4096])
@pytest.mark.parametrize("pretty", [False, True])
def test_pieces_of_any_size(tmp_path, monkeypatch, gz, piece, pretty, split):
    data = _doc({"meta": {"x": [1.5, "é\\n", None]}, "config": CFG, "core0": INSTS * 6, "core1": INSTS[::-1],
                 "core2": [], "config ": 1}, pretty=pretty)
    assert _streamed_vs_whole(tmp_path, data, piece, gz, monkeypatch, split)[0] == "ok"


@pytest.mark.parametrize("gz", [False, True])
def test_two_thread_scan_combines_like_one(tmp_path, monkeypatch, gz):
    """Split in two: a repeated core key across the halves (the last wins), the config, ignored
    keys and numbers left to Python in both halves, a '"core' inside a value past the middle."""
    big = {"op": "lldi", "rd": 0, "len": 8, "imm": 100.00000000000001}  # a span: converted by Python
    members = [("config", CFG), ("x", 1), ("core0", INSTS * 5 + [big]), ("core1", INSTS),
               ("meta", ['"core9":[', 2]), ("core0 ", 3), ("core2", INSTS[::-1] * 4 + [big]),
               ("core1", INSTS[:3]), ("y", {"core3": []})]
    doc = b"{\n" + b",\n".join(_doc(k) + b" : " + _doc(v, pretty=True) for k, v in members) + b"\n}"
    data = doc
    monkeypatch.setattr(jsonstream, "SPLIT_MIN", 0)
    calls = []
    real = jsonstream.scan_split if gz else jsonstream.scan_file_split
    monkeypatch.setattr(jsonstream, "scan_split" if gz else "scan_file_split",
                        lambda *a: calls.append(real(*a)) or calls[-1])
    kind, prog = _streamed_vs_whole(tmp_path, data, 64, gz, monkeypatch, True)
    assert kind == "ok" and len(calls[0]) == 2  # two clean parts, combined
    assert len(prog.cores[1]) == 3 and len(prog.cores[2]) == 4 * len(INSTS) + 1
    assert any("ignored" in w and "meta" in w for w in prog.warnings), prog.warnings


def test_two_thread_scan_errors_like_one(tmp_path, monkeypatch):
    """An error in either half: the same message (file, line, column) as the one-thread reader."""
    for bad in ("head", "tail"):
        insts = [INSTS * 40, INSTS * 40]
        insts[bad == "tail"] = INSTS * 20 + [{"op": "vfoo"}] + INSTS * 19
        data = _doc({"config": CFG, "core0": insts[0], "core1": insts[1]}, pretty=True)
        for gz in (False, True):
            kind, msg = _streamed_vs_whole(tmp_path, data, 256, gz, monkeypatch, True)
            assert kind == "error" and "unknown op 'vfoo'" in msg


def test_writer_programs_round_trip_in_pieces(tmp_path, monkeypatch):
    @settings(max_examples=60, **SETTINGS)
    @given(program_strategy(64, True), st.sampled_from([1, 5, 33, 1 << 12]), st.booleans(), st.booleans())
    def run(prog, piece, gz, split):
        data, _ = dump_json(prog)
        got = _streamed_vs_whole(tmp_path, data, piece, gz, monkeypatch, split)
        assert got[0] == "ok" and got[1].equals(prog)
    run()


def test_mutations_in_pieces(tmp_path, monkeypatch):
    """Byte-level mutations: the one-pass reader accepts what the others accept, errors alike."""
    base = _doc({"config": CFG, "core0": INSTS[:6], "core1": INSTS[6:]}, pretty=True)

    @settings(max_examples=120, **SETTINGS)
    @given(st.data())
    def run(draw):
        data = bytearray(base)
        for _ in range(draw.draw(st.integers(1, 3))):
            i = draw.draw(st.integers(0, len(data) - 1))
            data[i] = draw.draw(st.sampled_from(b'{}[]",:0123456789-.eE \n\tabcorx\x00\xff'))
        _streamed_vs_whole(tmp_path, bytes(data), draw.draw(st.sampled_from([3, 50, 4096])),
                           draw.draw(st.booleans()), monkeypatch, draw.draw(st.booleans()))
    run()


@pytest.mark.parametrize("gz", [False, True])
def test_semantic_error_names_file_line_column(tmp_path, monkeypatch, gz):
    data = _doc({"config": CFG, "core0": INSTS * 30 + [{"op": "vfoo"}]}, pretty=True)
    kind, msg = _streamed_vs_whole(tmp_path, data, 100, gz, monkeypatch)
    assert kind == "error" and "unknown op 'vfoo'" in msg and "F.json" in msg
    line = data[:data.index(b'"vfoo"')].count(b"\n") + 1
    assert f":{line}:" in msg


def test_large_unit_is_not_rescanned_per_piece(tmp_path, monkeypatch):
    """A top-level value longer than many pieces (or a run of whitespace) costs O(log) calls."""
    calls = []
    scan = js.scan

    def counting(*a):
        calls.append(a[1])
        return scan(*a)
    monkeypatch.setattr(js, "scan", counting)
    big = b'{"meta": [' + b"1234567, " * 20000 + b'0], "config": ' + _doc(CFG) + b", " + b" " * 300000 + \
        b'"core0": ' + _doc(INSTS) + b"}"
    _streamed_vs_whole(tmp_path, big, 1000, False, monkeypatch)
    streamed = len(calls) - 2  # the whole-document read: one call
    assert streamed < 40, streamed  # 480 pieces


def test_gzip_thread_stops_after_an_early_error(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstream.GzipPieces, "CHUNK", 64)
    data = _doc({"config": CFG, "core0": [{"op": "vfoo"}] + INSTS * 3000}, pretty=True)
    path = tmp_path / "e.json.gz"
    path.write_bytes(gzip.compress(data))
    with pytest.raises(FormatError, match="unknown op"):
        read_json(path)
    assert not [t for t in threading.enumerate() if t.name == "nnisa-gunzip"]


def test_window_keeps_only_the_unfinished_unit():
    w = jsonstream._Window()
    v = w.refill(0, b'{"a": 1}, \n\t {"b"')
    v = w.refill(8, b": 2}")  # ", \n\t " dropped: every phase skips whitespace first
    assert bytes(v) == b', \n\t {"b": 2}'
    v = w.refill(1, b"")
    assert bytes(v) == b'{"b": 2}' and not v.flags.writeable


@pytest.mark.slow
def test_conformance_program_same_on_every_path():
    path = require_shared("conformance", "pim", "resnet18_batch_8x8.json.gz")
    streamed = read_json(path)
    whole = read_json(gzip.decompress(path.read_bytes()), file=str(path))
    _same(streamed, whole)
    assert len(streamed) == 3_119_907
    ref = read_json(path, fast=False)
    _same(streamed, ref)
    assert np.array_equal(streamed.cores[0], ref.cores[0])
