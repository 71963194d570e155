"""DAIS interpreter: Appendix C golden vectors on both engines and both semantics."""

import numpy as np
import pytest

from nnisa.targets.dais.formats.binary import read_binary
from nnisa.targets.dais.errors import DaisInputError, DaisLookupError, DaisRangeError
from nnisa.targets.dais.sim.interp import Interpreter, run
from nnisa.targets.dais.target import DaisTarget

from .helpers import EXAMPLE_IO, LEGACY_EXAMPLE, V1_EXAMPLE, prog

ENGINES = ("exact", "compiled")
SEMS = ("default", "da4ml-compat")


def both(p, x, semantics="default", **kw):
    """Run on every engine, assert identical bytes, return the result."""
    ys = [run(p, x, engine=e, semantics=semantics, **kw) for e in ENGINES]
    assert ys[0].tobytes() == ys[1].tobytes()
    return ys[0]


@pytest.mark.parametrize("words", [V1_EXAMPLE, LEGACY_EXAMPLE])
@pytest.mark.parametrize("sem", SEMS)
def test_example_program(words, sem):
    p = read_binary(np.array(words, np.int32))
    x = np.array([i for i, _ in EXAMPLE_IO], float)
    # the last golden vector wraps (200 → -56, -300 → -44), as da4ml does (the engines' default)
    assert both(p, x, sem).tolist() == [list(map(float, o)) for _, o in EXAMPLE_IO]
    with pytest.raises(DaisInputError, match="input 0, sample 4: 200 is outside the input's range -128..127"):
        run(p, x, semantics=sem, input_range="error")


@pytest.mark.parametrize("w", range(1, 7))
def test_q1_unsigned_mux_key(w):
    p = prog([(-1, 0, -1, 0, 0, 0, w, 0), (5, -1, -1, 1, 0, 0, 1, 0), (5, -1, -1, 0, 0, 0, 0, 0),
              (6, 1, 2, 0, 0, 0, 1, 0)], 1, [3])
    x = np.arange(2 ** w, dtype=float)
    compat_first = {1: 1, 2: 2, 3: 3, 4: 5, 5: 9, 6: 17}[w]
    assert both(p, x, "da4ml-compat")[:, 0].tolist() == [float(v >= compat_first) for v in range(2 ** w)]
    assert both(p, x)[:, 0].tolist() == [float(v >= 2 ** (w - 1)) for v in range(2 ** w)]


@pytest.mark.parametrize("I,compat", [(31, -1000), (32, 8589933592), (33, 17179868184), (39, 1099511626776),
                                      (47, -1000)])
def test_q2_wide_signed_wrap(I, compat):
    p = prog([(-1, 0, -1, 0, 0, 1, I, 0)], 1, [0])
    x = np.array([-1000.0, 5, -1, 3])
    assert both(p, x, "da4ml-compat")[:, 0].tolist() == [compat, 5, -1, 3]
    assert both(p, x)[:, 0].tolist() == [-1000, 5, -1, 3]


def test_input_extremes():
    p = prog([(-1, 0, -1, 0, 0, 1, 7, 0)], 1, [0])
    x = np.array([np.nan, np.inf, -np.inf, 2.0 ** 70, -2.0 ** 70, 1e300, 2.0 ** 62])
    assert both(p, x, "da4ml-compat")[:, 0].tolist() == [0, 0, 0, 0, 0, 0, -256]
    assert both(p, np.array([2.0 ** 62, 2.0 ** 70, -2.0 ** 70, 2.0 ** 62 + 2 ** 10 * 3 + 2**11]))[:, 0].tolist() == [0, 0, 0, 0]
    for e in ENGINES:
        with pytest.raises(ValueError, match="input 0, sample 1"):
            run(p, np.array([1.0, np.nan]), engine=e)


def test_input_prescale_and_floor_wrap():
    p = prog([(-1, 0, -1, 0, 0, 1, 7, 0), (-1, 1, -1, 0, 0, 1, 7, 0)], 2, [0, 1], inp_shifts=[1, -1])
    y = both(p, np.array([[1.0, -300.0], [3.7, -2.2], [-64.5, 255.0]]))
    assert y.tolist() == [[2, 106], [7, -2], [127, 127]]


def test_q3_and_right_shifting_adder():
    p = prog([(-1, 0, -1, 0, 0, 1, 3, 0), (-1, 1, -1, 0, 0, 1, 3, 0), (0, 0, 1, 0, 0, 1, 5, 2)], 2, [2])
    assert both(p, np.array([[1.0, 2.0]]))[0, 0] == 0.75
    p = prog([(-1, 0, -1, 0, 0, 1, 3, 2), (-1, 1, -1, 0, 0, 1, 3, 0), (0, 0, 1, 0, 0, 1, 5, 0)], 2, [2])
    assert both(p, np.array([[1.75, 2.0], [-1.25, 0.0]]))[:, 0].tolist() == [3, -2]


def test_q5_zero_output():
    p = prog([(-1, 0, -1, 0, 0, 1, 3, 0)], 1, [0, -1], out_shifts=[0, 127], out_negs=[1, 1])
    y = both(p, np.array([0.0]))
    assert y.tobytes() == np.zeros((1, 2)).tobytes()  # +0.0, not -0.0


def test_opcode9_bit_unary():
    p = prog([(-1, 0, -1, 0, 0, 1, 3, 0), (9, 0, -1, 0, 0, 1, 3, 0), (9, 0, -1, 0, 0, 0, 4, 0),
              (9, 0, -1, 1, 0, 0, 1, 0), (9, 0, -1, 2, 0, 0, 1, 0), (-9, 0, -1, 0, 0, 1, 3, 0)], 1, [1, 2, 3, 4, 5])
    y = both(p, np.array([5.0, -1, 0, -8]))
    assert y.tolist() == [[-6, 10, 1, 0, 4], [0, 0, 1, 1, -2], [-1, 15, 0, 0, -1], [7, 7, 1, 0, -9]]


def test_opcode10_bit_binary():
    p = prog([(-1, 0, -1, 0, 0, 1, 3, 0), (-1, 1, -1, 0, 0, 1, 3, 1), (10, 0, 1, 1, 0, 1, 4, 1),
              (10, 0, 1, -1, (2 << 24) | 2, 1, 4, 1)], 2, [2, 3])
    y = both(p, np.array([[5.0, 1.5], [-3.0, -0.5]]))
    assert y[:, 0].tolist() == [0.5, -1.5] and y[0, 1] == -11.5


def test_opcode8_lookup_and_error():
    p = prog([(-1, 0, -1, 0, 0, 0, 3, 0), (8, 0, -1, 0, 2, 1, 5, 0)], 1, [1], tables=[[10, -11, 12, 13]])
    assert both(p, np.array([2.0, 5.0, 3.0]))[:, 0].tolist() == [10, 13, -11]
    for e in ENGINES:
        with pytest.raises(DaisLookupError, match="op 1, sample 1") as ei:
            run(p, np.array([2.0, 6.0]), engine=e)
        assert "\n" not in str(ei.value) and "size 4" in str(ei.value)


def test_mux_with_shift():
    p = prog([(-1, 0, -1, 0, 0, 1, 3, 1), (-1, 1, -1, 0, 0, 1, 3, 1), (-6, 0, 1, 0, 1, 1, 5, 1)], 2, [2])
    y = both(p, np.array([[1.5, 1.5], [-1.5, 1.5], [0.5, -3.5]]))
    assert y[:, 0].tolist() == [-3.0, -1.5, 7.0]


def test_checked_mode_reports_range_violation():
    p = prog([(-1, 0, -1, 0, 0, 1, 3, 0), (0, 0, 0, 0, 0, 1, 3, 0)], 1, [1])  # x + x needs 5 bits
    assert run(p, np.array([7.0]))[0, 0] == 14
    with pytest.raises(DaisRangeError, match="op 1, sample 0"):
        run(p, np.array([7.0]), check=True)


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1000])
def test_batch_and_threads_independent(n):
    rng = np.random.default_rng(n)
    p = read_binary(np.array(V1_EXAMPLE, np.int32))
    x = rng.uniform(-300, 300, (n, 2))
    ref = run(p, x, engine="exact")
    for chunk in (1, 16, 64):
        it = Interpreter(p, chunk=chunk)
        for t in (1, 2):
            assert it.run(x, n_threads=t).tobytes() == ref.tobytes()


def test_target_simulate_compat_switch():
    p = prog([(-1, 0, -1, 0, 0, 1, 32, 0)], 1, [0])
    t = DaisTarget()
    x = {"x": np.array([[-1000.0]])}
    assert t.simulate(p, inputs=x).outputs["y"][0, 0] == -1000
    r = t.simulate(p, inputs=x, da4ml_compat=True)
    assert r.outputs["y"][0, 0] == 8589933592 and r.stats.instructions == 1
