"""Per-layer figures on PIM (issue 28 item 5): compiled layer spans, simulation rows, bundles."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nnisa.core.errors import FormatError
from nnisa.frontend.models import resolve_model
from nnisa.targets.pim.compiler.emit import CoreEmitter
from nnisa.targets.pim.formats.bundle import read_bundle
from nnisa.targets.pim.sim.simulate import simulate
from nnisa.targets.pim.target import PimTarget


@pytest.fixture(scope="module")
def model():
    return resolve_model("digits_cnn")


@pytest.mark.parametrize("schedule", ["batch", "element", "throughput"])
def test_rows_cover_the_program_and_add_up(model, schedule, tmp_path):
    c = PimTarget().compile(model, out_dir=tmp_path / "c", schedule=schedule)
    prog = c.program
    names = [d["name"] for d in prog.layers]
    assert names and len(set(names)) == len(names)
    res = simulate(prog, mode="timing", config=c.config)
    rows = res.stats.layers
    assert [r.layer for r in rows if r.layer != "other"] == names
    assert sum(r.instructions for r in rows) == len(prog)
    dyn = res.stats.to_dict()["energy_dynamic_pj"]
    assert sum(r.energy_pj for r in rows) == pytest.approx(dyn, rel=1e-9)
    assert max(r.cycles for r in rows) <= res.stats.cycles
    for r in rows:
        assert r.cycles >= 0 and 0 <= r.utilization <= 1 and r.latency_ns == pytest.approx(r.cycles * 1.0)
    mats = [r for r in rows if r.op.startswith(("Conv", "Gemm"))]
    assert all(r.extra["crossbars"] > 0 and r.energy_pj > 0 for r in mats)
    # the compiler's table: the same layers, instructions and memory, no simulated figures
    table = c.layer_table
    assert [r.layer for r in table] == names
    assert [r.instructions for r in table] == [r.instructions for r in rows if r.layer != "other"]
    assert all(r.cycles is None and r.memory_bytes > 0 for r in table)


def test_bundle_keeps_layers_and_checks_them(model, tmp_path):
    c = PimTarget().compile(model, out_dir=tmp_path / "c")
    b = read_bundle(tmp_path / "c")
    assert b.program.layers == c.program.layers
    assert b.program.layer_starts == c.program.layer_starts
    assert simulate(b, mode="timing").stats.layers is not None
    man = json.loads((tmp_path / "c" / "manifest.json").read_text())
    core = next(iter(man["layer_starts"]))
    man["layer_starts"][core] = [[5, 0], [2, 1]]
    (tmp_path / "c" / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(FormatError, match="layer_starts of core"):
        read_bundle(tmp_path / "c")


def test_stream_programs_have_no_per_input_rows(model, tmp_path):
    c = PimTarget().compile(model, out_dir=tmp_path / "c", images=2)
    assert c.program.layers and simulate(c.program, mode="timing", config=c.config).stats.layers is None


def test_emitter_layer_starts_follow_inserted_rows():
    e = CoreEmitter(0, 1 << 16)
    e.set_layer(0)
    e.lldi(0, 0, 4)
    e.set_layer(1)
    e.set_layer(2)  # nothing emitted for layer 1: its start is replaced
    e.lldi(0, 0, 4)
    e.lldi(0, 0, 4)
    e.set_layer(2)
    e.inserts.append((1, 0, e.rows[0]))  # a token send spliced in before row 1
    e.merge_inserts()
    assert e.layer_starts == [(0, 0), (1, 2)]
    assert len(e.rows) == 4 and np.diff([pc for pc, _ in e.layer_starts]).min() > 0
