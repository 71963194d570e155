"""The fast DAIS text / da4ml JSON writers (``formats.fastrender``) against the readable
references (``text.disassemble``, ``jsonio.to_da4ml_json``): the same bytes, and the files they
write read back to the same program."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.targets.dais.formats.binary import to_bytes
from nnisa.targets.dais.formats.fastrender import disassemble_fast, to_da4ml_json_fast
from nnisa.targets.dais.formats.files import program_bytes, read_program, write_program
from nnisa.targets.dais.formats.jsonio import to_da4ml_json
from nnisa.targets.dais.formats.rows_nb import StringTable, render_rows
from nnisa.targets.dais.formats.text import disassemble
from nnisa.targets.dais.program import Program

from .helpers import prog
from .test_text_lossless import programs

FLOATS = st.sampled_from([0.0, -0.0, 1.5, -2.25, 1e-300, 3e300, float("nan"), float("inf"), -float("inf"), 7.0])


def _with_meta(p: Program, draw_meta) -> Program:
    return Program.from_arrays(spec_version=p.spec_version, firmware_version=p.firmware_version,
                               inp_shifts=p.inp_shifts, out_idxs=p.out_idxs, out_shifts=p.out_shifts,
                               out_negs=p.out_negs, ops=p.ops_array(), tables=list(p.tables), meta=draw_meta)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs(), st.booleans(), st.data())
def test_fast_text_and_json_equal_reference(p, intervals, data):
    assert disassemble_fast(p, intervals=intervals) == disassemble(p, intervals=intervals)
    if p.spec_version == 1:  # da4ml JSON is a v1 form
        assert to_da4ml_json_fast(p) == to_da4ml_json(p)
    # stored per-op metadata: qint on some ops, latency and cost (signed zeros, NaN, infinities)
    n = p.n_ops
    meta = {"latency": data.draw(st.lists(FLOATS, min_size=n, max_size=n)),
            "cost": data.draw(st.lists(FLOATS, min_size=n, max_size=n)),
            "qint": [data.draw(st.one_of(st.none(), st.tuples(FLOATS, FLOATS, FLOATS))) for _ in range(n)]}
    q = _with_meta(p, meta)
    assert disassemble_fast(q, intervals=intervals) == disassemble(q, intervals=intervals)
    assert to_da4ml_json_fast(q) == to_da4ml_json(q)
    assert to_da4ml_json_fast(q, encoded=True) == to_da4ml_json(q).encode()
    assert disassemble_fast(q, encoded=True) == disassemble(q).encode()


def test_every_opcode_form_and_extreme_data():
    """mux, mul, bit2, negated forms, int64 extremes in ``raw``/``const``/``addc`` lines (records
    ``(opcode, id0, id1, lo, hi, k, I, f)``, unvalidated: the writers render any record)."""
    ops = [(-1, 0, -1, 0, 0, 1, 6, 0), (-1, 1, -1, 0, 0, 1, 6, 0),
           (6, 0, 1, 1, 3, 1, 9, 0), (-6, 0, 1, 1, 0, 1, 9, 0), (7, 0, 1, 0, 0, 1, 13, 0),
           (10, 0, 1, 2, (1 << 24) | 3, 1, 9, 0), (10, 0, 1, 2, 7 << 24, 1, 9, 0), (-2, 0, -1, 0, 0, 0, 6, 0),
           (-9, 1, -1, 1, 0, 0, 1, 0), (9, 1, -1, 5, 0, 0, 1, 0), (5, -1, -1, 0, -2**31, 1, 62, 0),
           (5, -1, -1, -1, 2**31 - 1, 1, 62, 0), (4, 0, -1, 3, -1, 1, 45, 0), (0, 0, 1, 2**31 - 1, 0, 1, 40, 0),
           (1, 0, 1, -(2**31), -1, 1, 40, 0), (0, 0, 1, 2, 5, 1, 40, 0), (3, 0, 7, 0, 0, 1, 4, 2),
           (8, 0, -1, 0, 4, 1, 4, -9), (42, 1, 2, 3, 4, 0, 0, 0)]
    p = prog(ops, 2, [4, 5, 13], out_negs=[1, 0, 2], validate=False)
    assert disassemble_fast(p) == disassemble(p)
    assert disassemble_fast(p, intervals=False) == disassemble(p, intervals=False)
    assert "raw 0 0 1 2 5" in disassemble_fast(p)  # an adder with junk in the high word


def test_empty_program():
    p = prog([], 0, [-1])
    assert disassemble_fast(p) == disassemble(p)
    assert to_da4ml_json_fast(p) == to_da4ml_json(p)


def test_short_latency_list_keeps_reference_text():
    p = prog([(-1, 0, -1, 0, 0, 1, 6, 0), (3, 0, -1, 0, 0, 1, 6, 0)], 1, [1])
    q = _with_meta(p, {"latency": [1.0]})
    assert to_da4ml_json_fast(q) == to_da4ml_json(q)


def test_row_kernel_ints_and_strings():
    vals = np.array([0, 7, -7, 10, -10, 2**63 - 1, -2**63], np.int64)
    t = StringTable()
    got = render_rows(["<", ("int", vals), ("str", np.zeros(len(vals), np.int64)), ">\n"], len(vals), t)
    assert got == "".join(f"<{v}<>\n" for v in vals.tolist())
    mixed = render_rows([("mix", np.array([1, 0], np.int8), np.array([5, 9])), "|"], 2, StringTable())
    assert mixed == "5||"


@pytest.mark.parametrize("model", ["digits_cnn"])
def test_compiled_model_files_same_bytes_and_round_trip(model, tmp_path):
    import nnisa
    from nnisa.frontend.models import bundled_model_path
    p = nnisa.target("dais").compile(bundled_model_path(model)).program
    assert program_bytes(p, "x.dais.txt") == disassemble(p).encode()
    assert program_bytes(p, "x.json") == to_da4ml_json(p).encode()
    write_program(p, tmp_path / "m.dais.txt")
    assert to_bytes(read_program(tmp_path / "m.dais.txt")) == to_bytes(p)
    write_program(p, tmp_path / "m.json")
    back = read_program(tmp_path / "m.json")
    # da4ml's qint cannot tell zero-width dtypes apart ((0,6,-6) reads back as (0,0,0)): every
    # other op reads back as written
    a, b = p.ops_array(), back.ops_array()
    wide = (p.k + p.I + p.f) != 0
    assert wide.sum() > 0.9 * p.n_ops and (a[wide] == b[wide]).all()
    assert (a[~wide][:, :4] == b[~wide][:, :4]).all()


@pytest.mark.slow
def test_lenet5_files_same_bytes(tmp_path):
    """LeNet-5 (583,544 ops, 9 kernel chunks): the fast writers' text equals the references'."""
    import onnx

    import nnisa
    from nnisa.frontend.zoo import ZOO
    onnx.save(ZOO["lenet"][0](), tmp_path / "lenet.onnx")
    p = nnisa.target("dais").compile(tmp_path / "lenet.onnx").program
    assert program_bytes(p, "x.dais.txt") == disassemble(p).encode()
    assert program_bytes(p, "x.json") == to_da4ml_json(p).encode()
