"""Per-instruction semantics of the PIM functional simulator (spec §5.2–§5.4), hand-computed.

Every test runs on both interpreters (``path`` fixture).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nnisa.core.errors import SimError
from nnisa.targets.pim.sim.functional import run_functional
from nnisa.targets.pim.isa import build_isa
from nnisa.targets.pim.program import PimProgram

ISA = build_isa(64, True)
SMALL = {"chip_config": {"core_config": {"local_memory_config": {"memory_size": 4096}}}}


def R(mnem, **kw):
    return ISA.row(mnem, **kw)


def prog(rows, agm=None, more=None):
    p = PimProgram(extended=True)
    p.cores[0] = ISA.rows(rows)
    for c, r in (more or {}).items():
        p.cores[c] = ISA.rows(r)
    p.array_group_map = dict(agm or {})
    return p


def regs(**kw):
    """sldi rows setting registers, e.g. regs(r1=16, r2=32)."""
    return [R("sldi", rd=int(k[1:]), imm=v) for k, v in kw.items()]


def le(values, byw):
    return b"".join(int(v).to_bytes(byw, "little", signed=True) for v in values)


@pytest.fixture(params=["fast", "reference"])
def path(request):
    return request.param


def run(rows, path, lmem=None, config=SMALL, **kw):
    return run_functional(prog(rows, kw.pop("agm", None)), config, engine=path,
                          lmem={0: lmem} if lmem else None, **kw)


def out(res, addr, n, bits):
    return res.read_lmem_tensor(0, addr, n, bits).tolist()


# ---------------------------------------------------------------------- scalar
def test_scalar_wrap32(path):
    rows = regs(r1=0x7FFFFFFF, r2=1, r3=65536, r4=0xFFFFFFFF) + [
        R("sadd", rd=5, rs1=1, rs2=2), R("ssub", rd=6, rs1=5, rs2=2), R("smul", rd=7, rs1=3, rs2=3),
        R("saddi", rd=8, rs1=2, imm=-10), R("smuli", rd=9, rs1=3, imm=-3), R("smul", rd=10, rs1=1, rs2=1),
        R("nop")]
    r = run(rows, path).regs[0]
    assert r[1:5] == [2147483647, 1, 65536, -1]
    assert r[5] == -2147483648 and r[6] == 2147483647
    assert r[7] == 0 and r[8] == -9 and r[9] == -196608 and r[10] == 1  # (2^31-1)^2 mod 2^32 = 1


def test_sld_pair_and_single32(path):
    gm = {0x100: le([7, -2147483647], 4)}
    rows = regs(r2=0, r3=0x100) + [R("sld", rd=5, rs1=2, ofs_val=4)]
    assert run(rows, path, gmem=gm).regs[0][5] == -2147483647
    rows = regs(r2=0x100, r3=0x5555) + [R("sld", rd=5, rs1=2)]  # single32 ignores r3
    assert run(rows, path, gmem=gm, global_address_mode="single32").regs[0][5] == 7
    # pair mode: (0x100 << 32) | 0x5555 is beyond the default 2^32 range
    with pytest.raises(SimError, match=r"core 0, pc 2 \(sld \$r5, \$r2\).*0x10000005555"):
        run(rows, path, gmem=gm)


def test_setbw_and_errors(path):
    res = run([R("setbw", ibiw=12, obiw=20)], path)
    assert res.widths[0] == (12, 20)
    with pytest.raises(SimError, match="setbw bit-widths must be 1..31"):
        run([R("setbw", ibiw=0, obiw=8)], path)
    fixed = {"nnisa": {"variable_bitwidth": False, "fixed_bitwidth": 4}}
    with pytest.raises(SimError, match="setbw is invalid"):
        run([R("setbw", ibiw=8, obiw=8)], path, config=fixed)
    assert run([R("nop")], path, config=fixed).widths[0] == (4, 4)


# ---------------------------------------------------------------------- mvmul
W = np.array([[1, -2], [3, 4], [-5, 6]])


def test_mvmul_wrap_relu_widths(path):
    x = [10, -20, 30]  # y = x @ W = [10-60-150, -20-80+180] = [-200, 80]
    base = regs(r1=0, r2=100) + [R("setbw", ibiw=8, obiw=16)]
    res = run(base + [R("mvmul", rd=2, rs1=1, mbiw=8, group=0)], path, lmem={0: le(x, 1)},
              agm={0: [1]}, weights={"c0.g0": W})
    assert out(res, 100, 2, 16) == [-200, 80]
    res = run(base[:2] + [R("setbw", ibiw=8, obiw=8), R("mvmul", rd=2, rs1=1, mbiw=8, relu=1, group=0)],
              path, lmem={0: le(x, 1)}, agm={0: [1]}, weights={(0, 0): W})
    assert out(res, 100, 2, 8) == [56, 80]  # wrap_8(-200) = 56, then ReLU keeps it
    res = run(base[:2] + [R("mvmul", rd=2, rs1=1, mbiw=8, relu=1, group=0)], path,
              lmem={0: le([1, 1, -1], 1)}, agm={0: [1]}, weights={"c0.g0": W})
    assert out(res, 100, 2, 8) == [9, 0]  # [1+3+5, -2+4-6] → relu


def test_mvmul_errors(path):
    rows = regs(r1=0, r2=100) + [R("mvmul", rd=2, rs1=1, mbiw=3, group=0)]
    with pytest.raises(SimError, match=r"core 0, pc 2 .*outside the signed 3-bit range \[-4, 3\]"):
        run(rows, path, agm={0: [1]}, weights={"c0.g0": W})
    with pytest.raises(SimError, match="array group 1 unknown"):
        run(regs(r1=0) + [R("mvmul", rd=1, rs1=1, mbiw=8, group=1)], path, agm={0: [1]}, weights={"c0.g0": W})
    with pytest.raises(SimError, match="array group 1 has no weights"):
        run(regs(r1=0) + [R("mvmul", rd=1, rs1=1, mbiw=8, group=1)], path, agm={0: [1, 1]}, weights={"c0.g0": W})
    with pytest.raises(SimError, match="mbiw 0"):
        run([R("mvmul", mbiw=0)], path, agm={0: [1]}, weights={"c0.g0": W})
    with pytest.raises(SimError, match=r"local address range \[4094, 4097\)"):
        run(regs(r1=4094) + [R("mvmul", rd=0, rs1=1, mbiw=8)], path, agm={0: [1]}, weights={"c0.g0": W})


def test_mvmul_big_widths_exact(path):
    # ibiw 31, mbiw 31: products near 2^60 need the int64-modular path; result wraps to 31 bits
    w = np.array([[2**30 - 1], [-(2**30)]])
    x = [2**30 - 1, 2**30 - 1]
    exact = (2**30 - 1) * (2**30 - 1) - (2**30) * (2**30 - 1)
    res = run(regs(r1=0, r2=64) + [R("setbw", ibiw=31, obiw=31), R("mvmul", rd=2, rs1=1, mbiw=31)], path,
              lmem={0: le(x, 4)}, agm={0: [1]}, weights={"c0.g0": w})
    half = 1 << 30
    assert out(res, 64, 1, 31) == [((exact + half) % (1 << 31)) - half]


# ---------------------------------------------------------------------- element-wise vectors
def vv(mnem, a, b, ibiw, obiw, path, **ofs):
    ibyw, obyw = (ibiw + 7) // 8, (obiw + 7) // 8
    rows = regs(r1=0, r2=256, r3=512) + [R("setbw", ibiw=ibiw, obiw=obiw),
                                        R(mnem, rd=3, rs1=1, rs2=2, len=len(a), **ofs)]
    return run(rows, path, lmem={0: le(a, ibyw), 256: le(b, ibyw)})


def test_vvadd_vvsub_wrap_ibiw(path):
    res = vv("vvadd", [7, -8, 3, 0x17], [1, -1, 2, 0], 4, 16, path)
    # 0x17 has low 4 bits 0111 = 7 (upper bits ignored, D12)
    assert out(res, 512, 4, 4) == [-8, 7, 5, 7]
    assert res.read_lmem(0, 512, 2) == b"\xf8\x07"  # stored sign-extended in ibyw = 1 byte
    res = vv("vvsub", [-8, 7], [1, -1], 4, 16, path)
    assert out(res, 512, 2, 4) == [7, -8]


def test_vvmul_vvdmul_vvmax(path):
    res = vv("vvmul", [100, -3], [100, 5], 8, 16, path)
    assert out(res, 512, 2, 16) == [10000, -15]
    res = vv("vvmul", [100, -3], [100, 5], 8, 8, path)
    assert out(res, 512, 2, 8) == [16, -15]  # 10000 mod 256 = 16
    res = vv("vvdmul", [1, 2, 3], [4, 5, 6], 8, 16, path, ofs_sel=1, ofs_val=5)  # sel0 ignored
    assert out(res, 512, 1, 16) == [32]
    res = vv("vvdmul", [1, 2, 3], [4, 5, 6], 8, 5, path)
    assert out(res, 512, 1, 5) == [0]  # wrap_5(32) = 0
    res = vv("vvmax", [1, -5, 7], [-1, -4, 7], 8, 8, path)
    assert out(res, 512, 3, 8) == [1, -4, 7]


def test_shifts_clamped(path):
    res = vv("vvsll", [3, 100, 5, 1], [2, 1, -3, 70], 8, 8, path)
    assert out(res, 512, 4, 8) == [12, -56, 5, 0]  # 200 wraps; -3 → 0; 70 → 63
    res = vv("vvsll", [3, 100], [2, 1], 8, 16, path)
    assert out(res, 512, 2, 16) == [12, 200]
    res = vv("vvsra", [-7, -7, -7, 64, -128], [1, -3, 100, 3, 7], 8, 8, path)
    assert out(res, 512, 5, 8) == [-4, -7, -1, 8, -1]  # floor division


def test_vrelu_and_offsets(path):
    a = list(range(-4, 12))  # 16 int8 values at 0
    base = regs(r1=0, r2=256, r3=512)
    lm = {0: le(a, 1), 256: le([100] * 16, 1)}
    # ofs value 2 with each select bit
    res = run(base + [R("vrelu", rd=3, rs1=1, len=4, ofs_sel=0, ofs_val=2)], path, lmem=lm)
    assert out(res, 512, 4, 8) == [0, 0, 0, 0]
    res = run(base + [R("vrelu", rd=3, rs1=1, len=4, ofs_sel=2, ofs_val=2)], path, lmem=lm)
    assert out(res, 512, 4, 8) == [0, 0, 0, 1]  # source a[2:6] = -2..1
    res = run(base + [R("vrelu", rd=3, rs1=1, len=2, ofs_sel=1, ofs_val=-1)], path, lmem=lm)
    assert out(res, 511, 3, 8) == [0, 0, 0]  # destination 512 - 1
    res = run(base + [R("vvadd", rd=3, rs1=1, rs2=2, len=2, ofs_sel=4, ofs_val=3)], path, lmem=lm)
    assert out(res, 512, 2, 8) == [96, 97]  # b offset only (b is all 100)
    lm2 = {0: le(a, 1), 256: le(range(16), 1)}
    res = run(base + [R("vvadd", rd=3, rs1=1, rs2=2, len=2, ofs_sel=7, ofs_val=3)], path, lmem=lm2)
    assert out(res, 512, 5, 8) == [0, 0, 0, -1 + 3, 0 + 4]
    # destination offset scales by obyw for obiw outputs: setbw 8,16 → 2 bytes per element
    res = run(base + [R("setbw", ibiw=8, obiw=16), R("vvmul", rd=3, rs1=1, rs2=2, len=1, ofs_sel=7, ofs_val=1)],
              path, lmem=lm2)
    assert res.read_lmem(0, 512, 4) == b"\x00\x00" + le([-3 * 1], 2)


def test_vavg_rounding_and_stride(path):
    def avg(vals, n, stride, ibiw=8, obiw=8, ov=0):
        rows = regs(r1=0, r2=stride, r3=512) + [R("setbw", ibiw=ibiw, obiw=obiw),
                                               R("vavg", rd=3, rs1=1, rs2=2, len=n, ofs_val=ov)]
        return out(run(rows, path, lmem={0: le(vals, (ibiw + 7) // 8)}), 512, 1, obiw)[0]
    assert avg([1, 2], 2, 1) == 2          # 1.5 → 2 (tie away from zero)
    assert avg([-1, -2], 2, 1) == -2       # -1.5 → -2
    assert avg([1, 2, 2], 3, 1) == 2       # 1.67
    assert avg([1, 2, 2, 2], 4, 1) == 2    # 1.75
    assert avg([-1, 1, -2, 1], 2, 2) == -2  # stride 2: -1, -2
    assert avg([120, 120, 120], 3, 1, obiw=4) == -8  # 120 wraps to obiw 4: 120 mod 16 = 8 → -8
    assert avg([0, 0, 10, 20], 2, 1, ov=2) == 15
    with pytest.raises(SimError, match="vavg with len 0"):
        avg([1], 0, 1)


def test_vtanh_vsigm_d9(path):
    xs = [16, 127, -128, 0, 8, -16, 1]
    rows = regs(r1=0, r2=0, r3=512)
    res = run(rows + [R("vtanh", rd=3, rs1=1, len=len(xs))], path, lmem={0: le(xs, 1)})
    expect = [min(127, max(-128, int(math.copysign(math.floor(abs(math.tanh(x / 16) * 128) + 0.5), x))))
              for x in xs]
    assert out(res, 512, len(xs), 8) == expect == [97, 127, -128, 0, 59, -97, 8]
    res = run(rows + [R("vsigm", rd=3, rs1=1, len=len(xs))], path, lmem={0: le(xs, 1)})
    sig = [min(127, math.floor(128 / (1 + math.exp(-x / 16)) + 0.5)) for x in xs]
    assert out(res, 512, len(xs), 8) == sig == [94, 127, 0, 64, 80, 34, 66]
    # explicit act_frac (4, 0): sigm(0) = 0.5 → tie rounds away from zero → 1
    res = run(rows + [R("vsigm", rd=3, rs1=1, len=1)], path, lmem={0: b"\x00"}, act_frac=(4, 0))
    assert out(res, 512, 1, 8) == [1]
    # obiw 16 → default out frac 15, destination 2 bytes per element
    res = run(rows + [R("setbw", ibiw=8, obiw=16), R("vtanh", rd=3, rs1=1, len=1)], path, lmem={0: le([16], 1)})
    assert out(res, 512, 1, 16) == [round(math.tanh(1) * 32768)]


def test_vmv_gather_strides(path):
    src = list(range(10, 20))
    for stride, expect in [(2, [10, 12, 14, 16]), (-1, [19, 18, 17, 16]), (0, [13, 13, 13, 13])]:
        start = {2: 0, -1: 9, 0: 3}[stride]
        rows = regs(r1=start, r2=stride, r3=512) + [R("vmv", rd=3, rs1=1, rs2=2, len=4)]
        res = run(rows, path, lmem={0: le(src, 1)})
        assert out(res, 512, 4, 8) == expect
        assert not any("overlapping" in w for w in res.warnings)
    # 16-bit elements, stride -2 from element 6
    rows = regs(r1=12, r2=-2, r3=512) + [R("setbw", ibiw=16, obiw=8), R("vmv", rd=3, rs1=1, rs2=2, len=3)]
    res = run(rows, path, lmem={0: le([1000 + i for i in range(8)], 2)})
    assert out(res, 512, 3, 16) == [1006, 1004, 1002]
    # overlap: memmove semantics and a warning
    rows = regs(r1=0, r2=1, r3=2) + [R("vmv", rd=3, rs1=1, rs2=2, len=4)]
    res = run(rows, path, lmem={0: bytes([1, 2, 3, 4, 5, 6])})
    assert res.read_lmem(0, 0, 6) == bytes([1, 2, 1, 2, 3, 4])
    assert any("vmv with overlapping" in w for w in res.warnings)
    with pytest.raises(SimError, match=r"local address range \[-2, 1\)"):
        run(regs(r1=0, r2=-1, r3=9) + [R("vmv", rd=3, rs1=1, rs2=2, len=3)], path)


def test_vrsu_vrsl_saturate(path):
    a = [-300, 5, 200, 1000]
    rows = regs(r1=0, r2=150, r3=512) + [R("setbw", ibiw=16, obiw=8), R("vrsu", rd=3, rs1=1, rs2=2, len=4)]
    assert out(run(rows, path, lmem={0: le(a, 2)}), 512, 4, 8) == [-128, 5, 127, 127]
    # compiler pattern (§11.3): setbw 24, 8 + vrsl bound -128
    a = [-1000, 50, 1000, -128]
    rows = regs(r1=0, r2=-128, r3=512) + [R("setbw", ibiw=24, obiw=8), R("vrsl", rd=3, rs1=1, rs2=2, len=4)]
    assert out(run(rows, path, lmem={0: le(a, 3)}), 512, 4, 8) == [-128, 50, 127, -128]
    rows = regs(r1=0, r2=0, r3=512) + [R("setbw", ibiw=24, obiw=8), R("vrsl", rd=3, rs1=1, rs2=2, len=4)]
    assert out(run(rows, path, lmem={0: le(a, 3)}), 512, 4, 8) == [0, 50, 127, 0]  # fused ReLU
    # widening in place → warning; narrowing in place is allowed
    rows = regs(r1=0, r2=-5, r3=0) + [R("setbw", ibiw=8, obiw=16), R("vrsl", rd=3, rs1=1, rs2=2, len=2)]
    res = run(rows, path, lmem={0: le([-9, 9], 1)})
    assert out(res, 0, 2, 16) == [-5, 9] and any("widening" in w for w in res.warnings)
    with pytest.raises(SimError, match="vrsu/vrsl are invalid"):
        run([R("vrsu", len=1)], path, config={"nnisa": {"variable_bitwidth": False}})


def test_element_storage_d12(path):
    # 12-bit elements in 2 bytes, 20-bit elements in 3 bytes, sign-extended
    rows = regs(r1=0, r2=8, r3=64) + [R("setbw", ibiw=12, obiw=20), R("vvmul", rd=3, rs1=1, rs2=2, len=2)]
    res = run(rows, path, lmem={0: le([-1, 0x0FFF | 0x7000], 2), 8: le([-2047, 2], 2)})
    # a = [-1, -1] (0x7FFF → low 12 bits 0xFFF = -1); b = [-2047, 2]
    assert out(res, 64, 2, 20) == [2047, -2]
    assert res.read_lmem(0, 64, 6) == b"\xff\x07\x00\xfe\xff\xff"


# ---------------------------------------------------------------------- transfers
def test_ld_st_offsets(path):
    gm = {0x1000: bytes(range(32))}
    rows = regs(r0=0, r1=0x1000, r2=100) + [
        R("ld", rd=2, rs1=0, len=4, ofs_sel=2, ofs_val=4),       # gmem offset only: bytes 4..7
        R("ld", rd=2, rs1=0, len=2, ofs_sel=3, ofs_val=8),       # both: lmem 108 ← gmem 8..9
        R("st", rd=0, rs1=2, len=4, ofs_sel=1, ofs_val=0x100),   # gmem 0x1100 ← lmem 100..103
        R("st", rd=0, rs1=2, len=2, ofs_sel=2, ofs_val=8)]       # gmem 0x1000 ← lmem 108..109
    res = run(rows, path, gmem=gm)
    assert res.read_lmem(0, 100, 10) == bytes([4, 5, 6, 7, 0, 0, 0, 0, 8, 9])
    assert res.read_gmem(0x1100, 4) == bytes([4, 5, 6, 7])
    assert res.read_gmem(0x1000, 3) == bytes([8, 9, 2])
    assert not any("uninitialised" in w for w in res.warnings)
    res = run(regs(r0=0, r1=0x2000) + [R("ld", rd=0, rs1=0, len=4)], path)
    assert any("uninitialised global memory" in w for w in res.warnings)


def test_lldi_lmv_memmove(path):
    rows = regs(r1=10) + [R("lldi", rd=1, imm=0xAB, len=3, ofs_val=2)]
    assert run(rows, path).read_lmem(0, 10, 6) == b"\x00\x00\xab\xab\xab\x00"
    lm = {0: bytes([1, 2, 3, 4, 5, 6, 7, 8])}
    res = run(regs(r1=2, r2=0) + [R("lmv", rd=1, rs1=2, len=6)], path, lmem=lm)
    assert res.read_lmem(0, 0, 8) == bytes([1, 2, 1, 2, 3, 4, 5, 6])
    assert any("lmv with overlapping" in w and "1 occurrence" in w for w in res.warnings)
    res = run(regs(r1=0, r2=2) + [R("lmv", rd=1, rs1=2, len=6)], path, lmem=lm)
    assert res.read_lmem(0, 0, 8) == bytes([3, 4, 5, 6, 7, 8, 7, 8])
    res = run(regs(r1=16, r2=0) + [R("lmv", rd=1, rs1=2, len=4, ofs_sel=3, ofs_val=2)], path, lmem=lm)
    assert res.read_lmem(0, 18, 4) == bytes([3, 4, 5, 6]) and res.warnings == []


def test_out_of_bounds_errors(path):
    with pytest.raises(SimError) as exc:
        run(regs(r1=4090, r2=0) + [R("lmv", rd=1, rs1=2, len=8)], path)
    e = exc.value
    assert e.details["core"] == 0 and e.details["pc"] == 2 and e.details["address"] == 4090
    assert str(e) == ("core 0, pc 2 (lmv $r1, $r2, 8): local address range [4090, 4098) outside local "
                      "memory [0, 4096)")
    with pytest.raises(SimError, match=r"core 0, pc 1 \(vrelu.*\[-1, 3\)"):
        run(regs(r1=-1) + [R("vrelu", rd=0, rs1=1, len=4)], path)
    bounded = {"chip_config": {"global_memory_config": {"memory_size": 65536}}}
    with pytest.raises(SimError) as exc:
        run(regs(r0=0, r1=65530) + [R("st", rd=0, rs1=2, len=8)], path, config=bounded)
    assert exc.value.details["address"] == 65530 and "[0xfffa, 0x10002) outside [0, 0x10000)" in str(exc.value)
    assert "core 0, pc 2 (st $r0, $r2, 8)" in str(exc.value)
