"""Multi-core functional semantics: send/recv, sync/wait, deadlock reports, weights, a split matmul."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.core.errors import ConfigError, DeadlockError, FormatError, SimError
from nnisa.targets.pim.sim.functional import load_weights, make_weights, run_functional
from nnisa.targets.pim.isa import build_isa
from nnisa.targets.pim.program import PimProgram

ISA = build_isa(64, True)


def R(mnem, **kw):
    return ISA.row(mnem, **kw)


def prog(cores: dict, agm=None, chip=None):
    p = PimProgram(extended=True, chip_cores=chip)
    for c, rows in cores.items():
        p.cores[c] = ISA.rows(rows)
    p.array_group_map = dict(agm or {})
    return p


@pytest.fixture(params=["fast", "reference"])
def path(request):
    return request.param


# ---------------------------------------------------------------------- send / recv
def test_send_recv_fifo_and_data_at_transfer(path):
    # core 1 sends two messages to core 0; core 0 receives them in program order.  The second
    # buffer is rewritten by core 1 only after its first send has completed.
    c1 = [R("sldi", rd=1, imm=0), R("lldi", rd=1, imm=0x11, len=4), R("send", rs1=1, core=0, len=4),
          R("lldi", rd=1, imm=0x22, len=4), R("send", rs1=1, core=0, len=4, ofs_val=0)]
    c0 = [R("sldi", rd=2, imm=100), R("recv", rd=2, core=1, len=4), R("recv", rd=2, core=1, len=4, ofs_val=4)]
    res = run_functional(prog({0: c0, 1: c1}), engine=path)
    assert res.read_lmem(0, 100, 8) == b"\x11" * 4 + b"\x22" * 4
    assert res.instructions == {0: 3, 1: 5}


def test_send_recv_ring_both_orders(path):
    # recv posted first on one side, send first on the other: same result
    c0 = [R("lldi", imm=7, len=2), R("send", rs1=0, core=1, len=2), R("recv", rd=0, core=1, len=2, ofs_val=8)]
    c1 = [R("recv", rd=0, core=0, len=2), R("lldi", imm=9, len=2, ofs_val=2),
          R("send", rs1=0, core=0, len=2, ofs_val=2)]
    res = run_functional(prog({0: c0, 1: c1}), engine=path)
    assert res.read_lmem(0, 8, 2) == b"\x09\x09" and res.read_lmem(1, 0, 2) == b"\x07\x07"


def test_send_recv_errors(path):
    with pytest.raises(SimError, match=r"core 1, pc 0 \(send \$r0, 0, 8\): send size 8 does not match "
                                       r"the size 4 of the matching recv on core 0 pc 0"):
        run_functional(prog({0: [R("recv", core=1, len=4)], 1: [R("send", core=0, len=8)]}), engine=path)
    with pytest.raises(SimError, match="send to the own core 0"):
        run_functional(prog({0: [R("send", core=0, len=4)]}), engine=path)
    with pytest.raises(SimError, match="recv from the own core 0"):
        run_functional(prog({0: [R("recv", core=0, len=4)]}), engine=path)


# ---------------------------------------------------------------------- sync / wait
def test_sync_wait_check_and_reset(path):
    c0 = [R("wait", ev=3, val=2), R("lldi", imm=1, len=1), R("sync", ev=5, core=1)]
    c1 = [R("sync", ev=3, core=0), R("sync", ev=3, core=0), R("wait", ev=5, val=1), R("sync", ev=9, core=1)]
    res = run_functional(prog({0: c0, 1: c1}), engine=path)
    assert res.events[0][3] == 0 and res.events[1][5] == 0 and res.events[1][9] == 1
    assert res.read_lmem(0, 0, 1) == b"\x01"


def test_sync_outside_chip(path):
    with pytest.raises(SimError, match=r"sync to core 4 outside the chip \(cores 0..3\)"):
        run_functional(prog({0: [R("sync", ev=0, core=4)]}, chip=4), engine=path)


# ---------------------------------------------------------------------- deadlock (§5.6)
def deadlock(p, path):
    with pytest.raises(DeadlockError) as exc:
        run_functional(p, engine=path)
    assert exc.value.exit_code == 3
    return exc.value.report


def test_deadlock_recv_without_send(path):
    rep = deadlock(prog({0: [R("nop"), R("recv", rd=0, core=1, len=64)], 1: [R("nop")]}), path)
    assert rep.splitlines() == [
        "DEADLOCK after 2 instructions: 1 of 2 cores unfinished",
        "  core 0 pc 1  recv $r0, 1, 64       waits for: send from core 1 (core 1 has finished)",
        "  wait-for graph: 0 -> 1",
        "  wait-for cycle: none"]


def test_deadlock_wait_passed(path):
    rows = [R("sync", ev=0, core=0), R("sync", ev=0, core=0), R("wait", ev=0, val=1)]
    rep = deadlock(prog({0: rows}), path)
    assert "core 0 pc 2  wait 0, 1" in rep
    assert "waits for: ev0 == 1 (current 2: already passed, can never match)" in rep


def test_deadlock_wait_pending_sync_and_missing_core(path):
    # core 0 waits for a sync that core 1 would do after its send to core 5 (no such core)
    p = prog({0: [R("wait", ev=2, val=1)], 1: [R("send", rs1=0, core=5, len=16), R("sync", ev=2, core=0)]})
    rep = deadlock(p, path)
    assert "core 0 pc 0  wait 2, 1" in rep
    assert "ev2 == 1 (current 0; remaining syncs from core 1 ×1)" in rep
    assert "core 1 pc 0  send $r0, 5, 16" in rep and "recv on core 5 (core 5 has no program)" in rep
    assert "wait-for graph: 0 -> 1, 1 -> 5" in rep and "wait-for cycle: none" in rep


def test_deadlock_two_core_cycle(path):
    c6 = [R("nop")] * 3 + [R("recv", rd=0, core=7, len=64)]
    c7 = [R("recv", rd=0, core=6, len=64)]
    rep = deadlock(prog({6: c6, 7: c7}), path)
    assert rep.splitlines() == [
        "DEADLOCK after 3 instructions: 2 of 2 cores unfinished",
        "  core 6 pc 3  recv $r0, 7, 64       waits for: send from core 7 (core 7 is blocked at pc 0)",
        "  core 7 pc 0  recv $r0, 6, 64       waits for: send from core 6 (core 6 is blocked at pc 3)",
        "  wait-for graph: 6 -> 7, 7 -> 6",
        "  wait-for cycle: 6 -> 7 -> 6"]


def test_deadlock_chain_like_c9(path):
    # spec C9 in miniature: core 2 finishes early, core 3 blocks sending to it, core 4 sending to 3
    p = prog({2: [R("nop")], 3: [R("send", rs1=0, core=2, len=64)],
              4: [R("send", rs1=0, core=3, len=64)]})
    rep = deadlock(p, path)
    assert "core 3 pc 0  send $r0, 2, 64       waits for: recv on core 2 (core 2 has finished)" in rep
    assert "core 4 pc 0  send $r0, 3, 64       waits for: recv on core 3 (core 3 is blocked at pc 0)" in rep


# ---------------------------------------------------------------------- weights
def test_weights_loading_and_capacity(tmp_path):
    f = tmp_path / "w.npz"
    np.savez(f, **{"c0.g1": np.ones((3, 2), dtype=np.int8)})
    assert list(load_weights(f)) == [(0, 1)]
    with pytest.raises(FormatError, match="bad weights key 'layer1'"):
        load_weights({"layer1": np.ones((2, 2), dtype=np.int8)})
    with pytest.raises(FormatError, match="integer dtype"):
        load_weights({"c0.g0": np.ones((2, 2))})
    with pytest.raises(FormatError, match="2-D"):
        load_weights({"c0.g0": np.ones(4, dtype=np.int32)})
    p = prog({0: [R("nop")]}, agm={0: [1, 2]})
    with pytest.raises(ConfigError, match=r"c0.g0: shape 129 x 4 exceeds the group's capacity 128 x 128"):
        run_functional(p, weights={"c0.g0": np.zeros((129, 4), dtype=np.int8)})
    run_functional(p, weights={"c0.g1": np.zeros((128, 256), dtype=np.int8)})  # 2 crossbars: fits
    with pytest.raises(ConfigError, match=r"c0.g1: shape 128 x 257"):
        run_functional(p, weights={"c0.g1": np.zeros((128, 257), dtype=np.int8)})
    with pytest.raises(ConfigError, match="core 0 has 2 array group"):
        run_functional(p, weights={"c0.g2": np.zeros((1, 1), dtype=np.int8)})


def test_make_weights_zeros_random():
    p = prog({0: [R("mvmul", mbiw=4, group=1)]}, agm={0: [1, 2]})
    z = make_weights(p, "zeros")
    assert z[(0, 0)].shape == (128, 128) and z[(0, 1)].shape == (128, 256) and not z[(0, 1)].any()
    r = make_weights(p, "random", seed=3)
    assert r[(0, 1)].min() >= -8 and r[(0, 1)].max() <= 7 and r[(0, 0)].min() < -8
    assert np.array_equal(r[(0, 1)], make_weights(p, "random", seed=3)[(0, 1)])


# ---------------------------------------------------------------------- split matrix program
def test_split_matmul_two_cores_equals_numpy(path):
    """256 × 64 int8 matrix split by rows over core 0 and core 1; 24-bit partial sums; core 1
    sends its partial to core 0, which adds bias, requantizes (vvsra by 8 with rounding) and
    clamps with vrsl as in spec §11.3; result stored to global memory."""
    rng = np.random.default_rng(7)
    W = rng.integers(-128, 128, size=(256, 64))
    x = rng.integers(-128, 128, size=256)
    bias = rng.integers(-5000, 5000, size=64)
    X, B, SH, RND, OUT = 0x0, 0x1000, 0x2000, 0x3000, 0x4000
    gm = {X: x.astype(np.int8).view(np.uint8),
          B: np.frombuffer(b"".join(int(v).to_bytes(3, "little", signed=True) for v in bias), np.uint8),
          SH: np.frombuffer(b"".join(int(8).to_bytes(3, "little") for _ in range(64)), np.uint8),
          RND: np.frombuffer(b"".join(int(128).to_bytes(3, "little") for _ in range(64)), np.uint8)}
    ld = lambda lm, ga, n: [R("sldi", rd=2, imm=lm), R("sldi", rd=4, imm=ga), R("ld", rd=2, rs1=4, len=n)]
    c1 = ld(0, X + 128, 128) + [R("setbw", ibiw=8, obiw=24), R("sldi", rd=1, imm=0), R("sldi", rd=3, imm=512),
                                R("mvmul", rd=3, rs1=1, mbiw=8, group=0), R("send", rs1=3, core=0, len=192)]
    c0 = (ld(0, X, 128) + ld(1024, B, 192) + ld(1536, SH, 192) + ld(2048, RND, 192) +
          [R("setbw", ibiw=8, obiw=24), R("sldi", rd=1, imm=0), R("sldi", rd=3, imm=512),
           R("mvmul", rd=3, rs1=1, mbiw=8, group=0), R("sldi", rd=5, imm=768),
           R("recv", rd=5, core=1, len=192), R("setbw", ibiw=24, obiw=24),
           R("vvadd", rd=3, rs1=3, rs2=5, len=64),                    # partial sums
           R("sldi", rd=6, imm=1024), R("vvadd", rd=3, rs1=3, rs2=6, len=64),  # + bias
           R("sldi", rd=6, imm=2048), R("vvadd", rd=3, rs1=3, rs2=6, len=64),  # + 2^(s-1)
           R("sldi", rd=6, imm=1536), R("vvsra", rd=3, rs1=3, rs2=6, len=64),  # >> s
           R("setbw", ibiw=24, obiw=8), R("sldi", rd=7, imm=-128), R("sldi", rd=8, imm=2560),
           R("vrsl", rd=8, rs1=3, rs2=7, len=64),
           R("sldi", rd=10, imm=OUT), R("st", rd=10, rs1=8, len=64)])
    p = prog({0: c0, 1: c1}, agm={0: [1], 1: [1]})
    res = run_functional(p, weights={"c0.g0": W[:128], "c1.g0": W[128:]}, gmem=gm,
                         global_address_mode="single32", engine=path)
    acc = x @ W + bias
    expect = np.clip((acc + 128) >> 8, -128, 127)
    assert np.abs(acc).max() < 2**23  # exact at 24 bits
    assert res.read_tensor(OUT, 64, 8).tolist() == expect.tolist()
    assert res.read_tensor(OUT, (8, 8), 8).shape == (8, 8)
    assert res.warnings == []


def test_schedule_order_does_not_matter(path):
    # a pipeline 2 → 1 → 0 with sync/wait handshakes; results identical for both visiting orders
    c2 = [R("lldi", imm=3, len=4), R("send", rs1=0, core=1, len=4), R("sync", ev=1, core=0)]
    c1 = [R("recv", rd=0, core=2, len=4), R("sldi", rd=1, imm=0), R("sldi", rd=2, imm=16),
          R("vvadd", rd=2, rs1=1, rs2=1, len=4), R("send", rs1=2, core=0, len=4)]
    c0 = [R("wait", ev=1, val=1), R("sldi", rd=3, imm=32), R("recv", rd=3, core=1, len=4)]
    p = prog({0: c0, 1: c1, 2: c2})
    a = run_functional(p, engine=path, schedule="ascending")
    b = run_functional(p, engine=path, schedule="descending")
    assert a.read_lmem(0, 32, 4) == b.read_lmem(0, 32, 4) == b"\x06" * 4
    assert a.regs == b.regs and a.events == b.events and a.instructions == b.instructions
