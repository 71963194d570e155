"""The fast interpreter equals the reference interpreter on random programs (hypothesis).

Programs mix every opcode with random fields, bit-widths 1..31, offsets, negative strides,
overlaps, out-of-range addresses, matched and unmatched send/recv, sync/wait — so results,
errors and deadlock reports are all compared.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.core.errors import NnisaError
from nnisa.targets.pim.sim.functional import run_functional
from nnisa.targets.pim.isa import OPCODES, build_isa
from nnisa.targets.pim.program import PimProgram

ISA = build_isa(64, True)
LMEM = 512
CONFIG = {"chip_config": {"core_config": {"local_memory_config": {"memory_size": LMEM}},
                          "global_memory_config": {"memory_size": 4096}}}
# mostly in-bounds addresses; sometimes negative / beyond the end / huge (errors must agree too)
REG_VALUES = st.one_of(*[st.integers(16, 300)] * 24, st.integers(-2, 2),
                       st.sampled_from([-3, 400, 510, 600, 0xFFFFFFFF]))
#: opcode mnemonics with the vector/matrix/transfer work weighted up, communication down
OPS = [m for m in OPCODES if m not in ("send", "recv", "wait", "sync")] * 3 + ["send", "recv", "wait", "sync"]


@st.composite
def instruction(draw, ncores: int, me: int):
    op = draw(st.sampled_from(OPS))
    small = st.integers(0, 7)
    kw = dict(rd=draw(small), rs1=draw(small), rs2=draw(small))
    if op == "sldi":
        return [ISA.row("sldi", rd=kw["rd"], imm=draw(REG_VALUES))]
    if op == "setbw":
        return [ISA.row("setbw", ibiw=draw(st.integers(1, 31)), obiw=draw(st.integers(1, 31)))]
    kw.update(len=draw(st.integers(0, 20)), ofs_sel=draw(st.integers(0, 7)), ofs_val=draw(st.integers(-4, 8)))
    if op in ("saddi", "smuli"):
        kw["imm"] = draw(st.integers(-(2**31), 2**31 - 1))
    elif op == "lldi":
        kw["imm"] = draw(st.integers(0, 255))
    if op == "mvmul":
        kw.update(mbiw=draw(st.sampled_from([8, 9, 24, 31, 31, 4, 0])), relu=draw(st.integers(0, 1)),
                  group=draw(st.sampled_from([0, 1, 0, 1, 2])))
    if op in ("send", "recv", "sync"):
        kw["core"] = draw(st.sampled_from([1 - me] * 4 + [me, 2]))
    if op in ("wait", "sync"):
        kw["ev"] = draw(st.integers(0, 2))
    if op == "wait":
        kw["val"] = draw(st.integers(0, 2))
    if op in ("sld", "vavg", "lldi", "send", "recv"):
        kw["ofs_sel"] = 0
    if op in ("vmv", "mvmul", "nop", "wait", "sync") or op.startswith("s") and op not in ("send",):
        kw["ofs_sel"] = kw["ofs_val"] = 0
    return [ISA.row(op, **kw)]


@st.composite
def program(draw):
    ncores = draw(st.integers(1, 2))
    p = PimProgram(extended=True)
    weights = {}
    for c in range(ncores):
        rows = [ISA.row("sldi", rd=r, imm=draw(REG_VALUES)) for r in range(8)]
        for ins in draw(st.lists(instruction(ncores, c), min_size=1, max_size=25)):
            rows += ins
        p.cores[c] = ISA.rows(rows)
        p.array_group_map[c] = [1, 1]
        for g in range(2):
            k, n = draw(st.integers(1, 8)), draw(st.integers(1, 8))
            seed = draw(st.integers(0, 2**16))
            lim = draw(st.sampled_from([1, 8, 128, 128, 2**20]))
            weights[(c, g)] = np.random.default_rng(seed).integers(-lim, lim, size=(k, n))
    gseed = draw(st.integers(0, 2**16))
    gmem = {0: np.random.default_rng(gseed).integers(0, 256, size=300, dtype=np.uint8)}
    lm = {c: {0: np.random.default_rng(gseed + c).integers(0, 256, size=LMEM, dtype=np.uint8)} for c in p.cores}
    mode = draw(st.sampled_from(["single32", "pair"]))
    frac = draw(st.sampled_from([None, (3, 5), (0, 0)]))
    return p, weights, gmem, lm, mode, frac


def outcome(p, weights, gmem, lm, mode, frac, path):
    try:
        r = run_functional(p, CONFIG, weights=weights, gmem=gmem, lmem=lm, global_address_mode=mode,
                           act_frac=frac, engine=path)
    except NnisaError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "report", ""))
    return ("ok", {c: bytes(v) for c, v in r.lmem.items()}, r.regs, r.gmem.merged_segments(), r.events,
            r.widths, r.instructions, sorted(r.warnings))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program())
def test_fast_equals_reference(case):
    fast = outcome(*case, path="fast")
    ref = outcome(*case, path="reference")
    assert fast == ref


def test_fast_equals_reference_pimcomp_shape():
    """A larger synthetic PIMCOMP-NN-shaped program (random weights)."""
    from nnisa.targets.pim.sim.functional_bench import synthetic_program
    p = synthetic_program(3000, cores=2, seed=5, groups=2)
    img = {0: np.random.default_rng(1).integers(0, 256, size=500_000, dtype=np.uint8)}
    res = [run_functional(p, weights="random", gmem=img, global_address_mode="single32", engine=path)
           for path in ("fast", "reference")]
    assert res[0].total_instructions == res[1].total_instructions > 2900
    for c in p.cores:
        assert np.array_equal(res[0].lmem[c], res[1].lmem[c])
        assert res[0].lmem[c].any()
    assert res[0].gmem.merged_segments() == res[1].gmem.merged_segments()
    assert sorted(res[0].warnings) == sorted(res[1].warnings)
