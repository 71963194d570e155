"""da4ml 0.6.0's Verilog writer and zero-width values (the digits MLP row of benchmarks/dais_rtl.py).

da4ml declares a zero-width value as ``wire [-1:0]`` and reads it as ``v[-1:0]``, an out-of-range
select that Yosys takes as undefined: the MLP's design synthesized to 0 LUTs.  The benchmark
rewrites zero-width ops as one-bit constants (``Program.zero_width_as_constants``) before giving
the program to both emitters.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

da4ml = pytest.importorskip("da4ml", reason="da4ml 0.6.0 (test-only oracle) not installed")

from nnisa.frontend.models import bundled_model_path  # noqa: E402
from nnisa.targets.dais.compiler import compile_model  # noqa: E402
from nnisa.targets.dais.formats.jsonio import to_da4ml_json  # noqa: E402
from nnisa.targets.dais.program import ProgramBuilder  # noqa: E402
from nnisa.targets.dais.sim.interp import run  # noqa: E402


def _da4ml_verilog(p, tmp_path: Path) -> str:
    from da4ml.codegen import RTLModel
    from da4ml.types import CombLogic
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = tmp_path / "p.json"
    f.write_text(to_da4ml_json(p))
    with contextlib.redirect_stdout(io.StringIO()):
        RTLModel(CombLogic.load(f), "top", tmp_path / "rtl", flavor="verilog", latency_cutoff=-1).write()
    return (tmp_path / "rtl" / "src" / "top.v").read_text()


def test_zero_width_values_become_constants(tmp_path):
    p = compile_model(bundled_model_path("digits_mlp")).program
    width = p.width()
    zero = np.flatnonzero(width == 0)
    assert zero.size, "the digits MLP has zero-width values (the case this rewrite exists for)"
    q = p.zero_width_as_constants()
    assert (q.width() > 0).all()
    assert (q.opcode[zero] == 5).all() and (q.data[zero] == 0).all()
    assert np.array_equal(q.f[zero], p.f[zero])          # steps kept: shifts reading them unchanged
    keep = np.setdiff1d(np.arange(p.n_ops), zero)
    assert np.array_equal(q.ops_array()[keep], p.ops_array()[keep])
    X = np.random.default_rng(3).integers(-128, 128, (256, p.n_in)).astype(np.float64)
    assert np.array_equal(run(q, X), run(p, X))
    # the out-of-range select that made Yosys drop the design is gone
    assert "[-1:0]" in _da4ml_verilog(p, tmp_path / "before")
    assert "[-1:0]" not in _da4ml_verilog(q, tmp_path / "after")


# reading the program back from da4ml's JSON loses a zero-width value's step (its qint is (0, 0, 1)):
# the reader warns about the shift that reads it; not what this test is about
@pytest.mark.filterwarnings("ignore::nnisa.targets.dais.errors.DaisUndefinedWarning")
def test_stored_qint_of_a_rewritten_op_is_dropped(tmp_path):
    from nnisa.targets.dais.formats.jsonio import from_da4ml_json
    p = from_da4ml_json(to_da4ml_json(compile_model(bundled_model_path("digits_mlp")).program))
    assert p.meta.get("qint") is not None          # read back from da4ml's format: qints stored
    q = p.zero_width_as_constants()
    zero = np.flatnonzero(p.width() == 0)
    assert all(q.meta["qint"][i] is None for i in zero)
    assert "[-1:0]" not in _da4ml_verilog(q, tmp_path)


def test_inputs_are_kept_and_programs_without_zero_width_returned_as_is():
    from nnisa.targets.dais.compiler.cmvm import compile_matrix
    p = compile_matrix(np.array([[1.0, 3.0], [2.0, -1.0]]), (1, 7, 0))
    assert p.zero_width_as_constants() is p
    b = ProgramBuilder(2)
    x = b.add_op(-1, 0, dtype=(1, 7, 0))
    pad = b.add_op(-1, 1, dtype=(0, 0, 0))           # a zero-width (padding) input ...
    zero = b.add_op(5, dtype=(0, 0, 0))
    s = b.add_op(0, x, pad, 0, (1, 8, 0))
    b.set_outputs([b.add_op(1, s, zero, 0, (1, 8, 0))])
    p = b.build()
    q = p.zero_width_as_constants()
    assert q.opcode[pad] == -1 and q.width()[pad] == 0   # ... stays an input
    assert q.opcode[zero] == 5 and q.width()[zero] == 1
    X = np.array([[-128.0, 0.0], [5.0, 0.0], [127.0, 0.0]])
    assert np.array_equal(run(q, X), run(p, X))
