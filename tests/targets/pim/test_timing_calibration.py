"""C8: the calibration vectors of spec §8.10 (pimsim mode, every non-† row exactly).

Conformance hardware parameters (§7.4) with a NoC of 10 ns / 1 pJ per flit between every pair.
"""

from __future__ import annotations

import pytest

from nnisa.targets.pim.config import default_config
from nnisa.targets.pim.sim.timing import simulate_timing

from .pim_loader import make_program

SETBW = ("setbw", {"ibiw": 8, "obiw": 8})
SLDI = ("sldi", {"rd": 0, "imm": 5})


def sb(i, o):
    return ("setbw", {"ibiw": i, "obiw": o})


def v(op, n):
    return (op, {"rd": 0, "rs1": 1, "rs2": 2, "len": n})


def mv(group=0, mbiw=8):
    return ("mvmul", {"rd": 0, "rs1": 1, "mbiw": mbiw, "group": group})


def t(op, n, **kw):
    return (op, {"len": n, **kw})


def run(cores, agm=None, setbw=False, **kw):
    if setbw:  # the multi-core rows start every core with setbw 8, 8 (free: the first setbw costs 0)
        cores = {c: [SETBW] + list(v) for c, v in cores.items()}
    prog = make_program(cores, agm=agm)
    cfg = default_config(max(cores) + 1, preset="conformance")
    return simulate_timing(prog, cfg, mode="pimsim", **kw)


def lat1(insts, agm=None):
    r = run({0: insts}, agm=agm)
    return r.latency_ps / 1000


SINGLE = [
    ([SETBW, v("vvadd", 64)], 83),
    ([SETBW, v("vvadd", 64), v("vvadd", 64)], 163),
    ([SETBW] + [v("vvadd", 64)] * 3, 243),
    ([SETBW] + [SLDI] * 10 + [v("vvadd", 64)], 93),
    ([SETBW, v("vvadd", 64)] + [SLDI] * 10 + [v("vvadd", 64)], 173),
    ([v("vvadd", 64)], 13),
    ([SETBW, SETBW, v("vvadd", 64)], 84),
    ([sb(8, 8), v("vvadd", 64), sb(16, 16), v("vvadd", 64)], 234),
    ([SETBW, v("vvadd", 1)], 79),
    ([SETBW, v("vvadd", 33)], 83),
    ([SETBW, v("vvadd", 65)], 157),
    ([SETBW, v("vvadd", 129)], 235),
    ([SETBW, v("vvadd", 1000)], 1253),
    ([SETBW, v("vrelu", 64)], 63),
    ([SETBW, mv()], 1661),
    ([SETBW, mv(), mv()], 3319),
    ([SETBW, mv(), mv(), mv()], 4977),
    ([sb(16, 16), mv()], 3277),
    ([sb(4, 8), mv()], 1013),
    ([SETBW, mv(mbiw=2)], 1691),
    ([SETBW, mv(mbiw=16)], 1661),
    ([SETBW, t("lmv", 64)], 55),
    ([SETBW, t("lmv", 65)], 105),
    ([SETBW, t("lmv", 1000)], 805),
    ([SETBW, t("lldi", 64)], 35),
    ([SETBW, t("lldi", 65)], 65),
    ([SETBW, t("ld", 32)], 85),
    ([SETBW, t("ld", 33)], 125),
    ([SETBW, t("ld", 65)], 195),
    ([SETBW, t("ld", 1000)], 1775),
    ([SETBW, t("st", 32)], 86),
    ([SETBW, t("st", 33)], 146),
    ([SETBW, t("st", 65)], 226),
    ([SETBW, t("st", 1000)], 2246),
    ([SETBW, t("st", 32), t("st", 32)], 169),
]


@pytest.mark.parametrize("insts, expected", SINGLE, ids=[f"row{i}" for i in range(len(SINGLE))])
def test_single_core_rows(insts, expected):
    assert lat1(insts) == expected


def test_mvmul_group_sizes():
    agm = {0: [1, 4, 8]}
    assert lat1([SETBW, mv(group=1)], agm) == 1691
    assert lat1([SETBW, mv(group=2)], agm) == 1751


TWO_SRC = ["vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra"]
ONE_SRC = ["vavg", "vrelu", "vtanh", "vsigm", "vmv", "vrsu", "vrsl"]


@pytest.mark.parametrize("op", TWO_SRC + ONE_SRC)
def test_len100_vector_rows(op):
    # at setbw 8,8: two-source 161, one-source 121
    base = 161 if op in TWO_SRC else 121
    assert lat1([sb(8, 8), v(op, 100)]) == base
    # at setbw 8,16: vvmul vvsll vvsra 221; vtanh vsigm vrsu vrsl 181; others unchanged
    if op in ("vvmul", "vvsll", "vvsra"):
        want = 221
    elif op in ("vtanh", "vsigm", "vrsu", "vrsl"):
        want = 181
    else:
        want = base
    assert lat1([sb(8, 16), v(op, 100)]) == want
    # at setbw 16,8
    if op in ("vvadd", "vvsub", "vvdmul", "vvmax"):
        want = 301
    elif op in ("vvmul", "vvsll", "vvsra"):
        want = 241
    elif op in ("vavg", "vrelu", "vmv"):
        want = 221
    else:
        want = 161
    assert lat1([sb(16, 8), v(op, 100)]) == want


def send(n, to):
    return ("send", {"rs1": 0, "core": to, "len": n})


def recv(n, frm):
    return ("recv", {"rd": 0, "core": frm, "len": n})


def fin(r):
    return r.finish_ps[0] // 1000, r.finish_ps[1] // 1000


@pytest.mark.parametrize("cores, expected", [
    ({0: [send(32, 1)], 1: [recv(32, 0)]}, (45, 85)),
    ({0: [send(1000, 1)], 1: [recv(1000, 0)]}, (345, 1145)),
    ({0: [SLDI] * 100 + [send(64, 1)], 1: [recv(64, 0)]}, (145, 195)),
    ({0: [send(64, 1)], 1: [SLDI] * 100 + [recv(64, 0)]}, (135, 185)),
], ids=["send32", "send1000", "sender-late", "receiver-late"])
def test_send_recv_rows(cores, expected):
    assert fin(run(cores)) == expected
    assert fin(run(cores, setbw=True)) == expected


def test_send_then_vvadd_row():
    assert fin(run({0: [send(64, 1), v("vvadd", 64)], 1: [recv(64, 0)]}, setbw=True)) == (125, 95)


def sync(e, c):
    return ("sync", {"ev": e, "core": c})


def wait(e, val):
    return ("wait", {"ev": e, "val": val})


def test_sync_wait_rows():
    assert fin(run({0: [sync(0, 1)], 1: [wait(0, 1)]})) == (7, 16)
    assert fin(run({0: [SLDI] * 100 + [sync(0, 1)], 1: [wait(0, 1), v("vvadd", 8)]}, setbw=True)) == (107, 192)


def test_sync_passed_counter_never_finishes():
    cores = {0: [sync(0, 1), sync(0, 1)], 1: [SLDI] * 100 + [wait(0, 1), v("vvadd", 8)]}
    r = run(cores, setbw=True, on_incomplete="report")
    assert r.finish_ps[1] == 0 and not r.finish_recorded[1]
    assert r.finish_ps[0] > 0
    assert "ev0 == 1 (current 2: already passed, can never match)" in r.incomplete_report


def test_energy_of_calibration_run():
    # static only: one local memory + the global memory at 1 mW each, 83 ns
    r = run({0: [SETBW, v("vvadd", 64)]})
    assert r.total_energy_pj == pytest.approx(166.0)
    assert r.energy_pj["static"] == pytest.approx(166.0)
