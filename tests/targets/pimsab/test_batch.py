"""The batched functional machine (one pass for B samples) against B runs of the single-sample
reference machine: random instruction sequences compared state by state, the compiled word kernels
against the NumPy bit/pattern conversions, and a compiled network run both ways."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.core.errors import SimError
from nnisa.targets.pimsab import precision as P
from nnisa.targets.pimsab.isa import build_isa
from nnisa.targets.pimsab.sim import cram_nb
from nnisa.targets.pimsab.sim.cram import TileState, bits_to_patterns, patterns_to_bits
from nnisa.targets.pimsab.sim.machine import Machine

from .sim_helpers import SMALL, rand_patterns

ISA = build_isa()
W, ROWS, COLS, CRAMS = SMALL.tile_bitlines, SMALL.cram_rows, SMALL.cram_cols, SMALL.crams_per_tile
INTS = [P.make(k, w) for k in ("i", "u") for w in (1, 3, 8, 13, 32, 64)]
FLOATS = [P.make("f32"), P.make("f16"), P.make("bf16")]
B = 3


@pytest.mark.parametrize("seed", range(12))
def test_column_kernels_equal_the_numpy_conversions(seed):
    """gather_words / scatter_words on the (bitline, word, sample) columns against the bit matrix."""
    rng = np.random.default_rng(seed)
    E, words, nb_ = int(rng.integers(1, 40)), int(rng.integers(1, 4)), int(rng.integers(1, 5))
    p = int(rng.integers(1, min(64, 64 * words) + 1))
    row = int(rng.integers(0, 64 * words - p + 1))
    start = int(rng.integers(0, E + 3))
    n = int(rng.integers(1, 48))
    cols = rand_patterns(rng, E * words * nb_, 64).reshape(E, words, nb_)

    def bits_of(c):   # (samples, wordlines, bitlines) bits; bitlines >= E are zeros
        out = np.zeros((nb_, 64 * words, start + n + E), np.uint8)
        for w in range(words):
            out[:, 64 * w:64 * w + 64, :E] = ((c[:, w, :].T[:, None, :] >> np.arange(64, dtype=np.uint64)[None, :, None])
                                              & np.uint64(1)).astype(np.uint8)
        return out

    bits = bits_of(cols)
    want = bits_to_patterns(bits[:, row:row + p, start:start + n])
    assert np.array_equal(cram_nb.gather_words(cols, row, p, start, n), want)
    vals = rand_patterns(rng, nb_ * n, 64).reshape(nb_, n)
    en = rng.integers(0, 2, (nb_, n)).astype(bool) if seed % 3 == 0 else None
    got = cols.copy()
    cram_nb.scatter_words(got, row, p, start, vals, cram_nb.NO_ENABLE if en is None else en)
    new = patterns_to_bits(vals, p)                                         # (nb, p, n)
    ref = bits.copy()
    old = ref[:, row:row + p, start:start + n]
    ref[:, row:row + p, start:start + n] = new if en is None else np.where(en[:, None, :], new, old)
    ref[:, :, E:] = 0                                                       # writes beyond E are dropped
    assert np.array_equal(bits_of(got), ref)


def _operand(rng, precs, band):
    """A random operand inside band ``band`` (0-2) of 32 wordlines: operands of different bands
    never overlap (overlaps are an error of both machines alike, tested elsewhere)."""
    p = int(rng.choice([q for q in precs if P.bits(q) <= 32]))
    return 32 * band + int(rng.integers(0, 32 - P.bits(p) + 1)), p


def _random_row(rng) -> tuple[int, tuple]:
    """(tile, IR row) of a random instruction on tiles 0/1 (sends and receives come in pairs)."""
    kinds = ["binary"] * 4 + ["unary", "setr", "set_mask", "shift", "reduce", "local", "const", "dot", "mac",
                              "popcount", "rf", "load", "store", "load_shf", "load_rf", "store_rf", "cram", "msg"]
    kind = kinds[int(rng.integers(len(kinds)))]
    floats = rng.random() < 0.25
    pool = FLOATS if floats else INTS
    size = int(rng.choice([0, 1, 5, 17, 40, W]))
    pred = int(rng.integers(0, 4))
    t = int(rng.integers(0, 2))
    bands = rng.permutation(3)
    rd, pd = _operand(rng, pool, bands[0])
    ra, pa = _operand(rng, pool, bands[1])
    rb, pb = _operand(rng, pool, bands[2])
    if rng.random() < 0.3:     # in place (the destination starts at the source row), 64-bit allowed
        pd = pa = int(rng.choice(pool))
        rd = ra = int(rng.integers(0, ROWS - P.bits(pd) + 1))
        rb, pb = (rb, pb) if rb >= rd + P.bits(pd) or rb + P.bits(pb) <= rd else (rd, pd)
    if kind == "binary":
        mn = str(rng.choice(["add", "sub", "mult", "max", "min", "and", "or", "xor"]))
        if floats and mn in ("and", "or", "xor"):
            pa = pb = pd
        return t, ISA.row(mn, pred=pred, size=size, rd=rd, pd=pd, ra=ra, pa=pa, rb=rb, pb=pb)
    if kind == "unary":
        return t, ISA.row(str(rng.choice(["not", "copy"])) if not floats else "copy", pred=pred, size=size,
                          rd=rd, pd=pd, ra=ra, pa=pa)
    if kind == "setr":
        return t, ISA.row(str(rng.choice(["set", "reset"])), pred=pred, size=size, rd=rd, pd=pd)
    if kind == "set_mask":
        return t, ISA.row("set_mask", pred=pred, size=size, ra=ra)
    if kind == "shift":
        return t, ISA.row("shift", pred=pred, size=size, rd=rd, pd=pd, ra=ra, pa=pa, dist=int(rng.integers(0, 9)),
                          dir=int(rng.integers(0, 2)))
    if kind == "reduce":
        mn = str(rng.choice(["reduce_cram", "reduce_tile"]))
        top = (COLS if mn == "reduce_cram" else CRAMS).bit_length() - 1
        return t, ISA.row(mn, pred=pred, size=size, rd=rd, pd=pd, ra=ra, pa=pa, levels=int(rng.integers(1, top + 1)))
    if kind == "local":
        return t, ISA.row("cram_local_shf", pred=pred, size=size, rd=rd, pd=pd, ra=ra, pa=pa, shf_en=1,
                          shf=int(rng.integers(0, 4)))
    if kind == "const":
        return t, ISA.row(str(rng.choice(["mul_const", "add_const"])), pred=pred, size=size, rd=rd, pd=pd, ra=ra,
                          pa=pa, rb=int(rng.integers(0, 32)), pb=pa)
    if kind == "dot":
        return t, ISA.row("dot_const", pred=pred, size=size, rd=rd, pd=pd, ra=ra, pa=pa, rb=rb, pb=pb,
                          xrf=int(rng.integers(0, 32)), px=pa, yrf=int(rng.integers(0, 32)), py=pb)
    if kind == "mac":
        pa, pb = (min(pa, pb, key=P.bits),) * 2
        ra, rb = 32 * bands[1], 32 * bands[1] + 16
        rd, pd = _operand(rng, [q for q in pool if P.bits(q) <= 16], bands[0])
        return t, ISA.row("mac", pred=pred, size=size, rd=rd, pd=pd, pin=pd, ra=ra, pa=pa, rb=rb, pb=pb,
                          scratch=32 * bands[2] + 8)
    if kind == "popcount":
        return t, ISA.row("popcount_rf", size=size, rd=int(rng.integers(0, 32)), ra=ra, pa=int(rng.choice(INTS)))
    if kind == "rf":
        mn = str(rng.choice(["write_rf", "add_rf", "sub_rf"]))
        f = dict(rd=int(rng.integers(0, 32)))
        f.update(imm=int(rng.integers(0, 1 << 32))) if mn == "write_rf" else \
            f.update(ra=int(rng.integers(0, 32)), rb=int(rng.integers(0, 32)))
        return t, ISA.row(mn, **f)
    prec = int(rng.choice(INTS[:4] + FLOATS[:1]))
    row = int(rng.integers(0, ROWS - P.bits(prec) + 1))
    if kind in ("load", "store"):
        cram = int(rng.integers(0, CRAMS))
        n = int(rng.integers(1, W - cram * COLS + 1))
        return t, ISA.row(kind, row=row, p=prec, addr=0x100 * int(rng.integers(0, 4)), size=n,
                          tr=int(rng.integers(0, 2)), cram=cram)
    if kind == "load_shf":
        bcast, shf_en = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        return t, ISA.row("load_shf", row=row, p=prec, addr=0x100 * int(rng.integers(0, 4)), bcast=bcast,
                          shf_en=shf_en, shf=int(rng.integers(0, 4)) if shf_en else 0,
                          size=0, tr=int(rng.integers(0, 2)))
    if kind in ("load_rf", "store_rf"):
        s = int(rng.integers(0, 8))
        return t, ISA.row(kind, row=int(rng.integers(0, 32 - s)), size=s, p=int(rng.choice(INTS[:4])),
                          addr=0x400 + 0x80 * int(rng.integers(0, 3)))
    if kind == "cram":
        if rng.random() < 0.5:
            return t, ISA.row("cram_tx_rx", src_cram=int(rng.integers(0, CRAMS)), dst_cram=int(rng.integers(0, CRAMS)),
                              src_row=row, dst_row=int(rng.integers(0, ROWS - P.bits(prec) + 1)), p=prec)
        return t, ISA.row("cram_bcast", src_row=row, dst_row=int(rng.integers(0, ROWS - P.bits(prec) + 1)), p=prec)
    return -1, ()   # "msg": built by the caller


def _msg_pair(rng):
    prec = int(rng.choice(INTS[:4]))
    p = P.bits(prec)
    shf_en, bcast = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    shf = int(rng.integers(0, 3)) if shf_en else 0
    size = CRAMS << shf if shf_en else int(rng.choice([1, 16, 40, W]))
    f = dict(src_tile=0, dst_tile=1, src_row=int(rng.integers(0, ROWS - p + 1)),
             dst_row=int(rng.integers(0, ROWS - p + 1)), size=size, p=prec, shf_en=shf_en, shf=shf)
    if bcast and not shf_en:
        f["size"] = COLS
    return [(0, ISA.row("tile_tx", **f)), (1, ISA.row("tile_rx", bcast=bcast, **f))]


def _step_all(refs, batched, tile, row):
    """Step every machine; both must fail alike (e.g. overlapping rows) or succeed."""
    errs = []
    for m in refs + [batched]:
        try:
            m.step(tile, row)
            errs.append(None)
        except SimError as e:
            errs.append(str(e))
    assert len(set(errs)) == 1, errs


def _assert_same(refs, batched, where):
    for t in (0, 1):
        bt = batched.tile(t)
        for b, m in enumerate(refs):
            rt = m.tile(t)
            for r in range(ROWS):
                want = rt.read(r, 1)
                got = bt.read(r, 1)
                assert np.array_equal(got[min(b, len(got) - 1)], want), f"{where}: sample {b} tile {t} row {r}"
            assert np.array_equal(bt.mask[b], rt.mask) and np.array_equal(bt.carry[b], rt.carry), where
            assert np.array_equal(bt.rf[b], rt.rf), where
    for b, m in enumerate(refs):
        assert set(m.dram_outputs()) == set(batched.dram_outputs(b))
        for k, v in m.dram_outputs().items():
            assert np.array_equal(batched.dram_outputs(b)[k], v), f"{where}: sample {b} {k}"


@pytest.mark.parametrize("seed", range(8))
def test_batched_machine_equals_per_sample_reference_runs(seed):
    rng = np.random.default_rng(seed)
    refs = [Machine(SMALL) for _ in range(B)]
    batched = Machine(SMALL, batch=B)
    # DRAM: a region shared by every sample (weights) and one that differs per sample
    shared = rng.integers(0, 256, 0x400, dtype=np.uint8)
    own = [rng.integers(0, 256, 0x400, dtype=np.uint8) for _ in range(B)]
    own[1] = own[0].copy()     # two samples alike: still per-sample storage, same values
    for b, m in enumerate(refs):
        m.dram.write(0x0, shared, record=False)
        m.dram.write(0x400, own[b], record=False)
    batched.dram.write_samples(0x0, [shared] * B)
    batched.dram.write_samples(0x400, own)
    for k in range(60):
        tile, row = _random_row(rng)
        pairs = _msg_pair(rng) if tile < 0 else [(tile, row)]
        for t, r in pairs:
            _step_all(refs, batched, t, r)
        if k % 10 == 9:
            _assert_same(refs, batched, f"seed {seed}, step {k}")
    _assert_same(refs, batched, f"seed {seed}, end")


@pytest.mark.parametrize("bcast", [0, 1])
@pytest.mark.parametrize("shf_en", [0, 1])
@pytest.mark.parametrize("shf", [0, 1, 2, 3, 4])
def test_spread_writes_equal_the_gather(bcast, shf_en, shf):
    """Broadcast/shuffle receives written as repeated groups (packed bytes and tiled rows in the
    batched state) equal the reference gather over every bitline."""
    for batch in (None, 2):
        m = Machine(SMALL, batch=batch)
        ts = m.tile(0)
        shape = (5, W) if batch is None else (batch, 5, W)
        bits = np.random.default_rng(shf).integers(0, 2, shape).astype(np.uint8)
        m._write_spread(ts, 3, bits, bcast, shf_en, shf)
        want = bits[..., m._spread(bcast, shf_en, shf)]
        assert np.array_equal(ts.read_bits(3, 5), want)
        assert np.array_equal(ts.read(3, 5, 7, 30), bits_to_patterns(want)[..., 7:37])


def test_reference_tile_state_groups():
    ts = TileState(SMALL, 0)
    bits = np.arange(10)[None, :] % 2
    ts.write_groups(0, bits.astype(np.uint8), 5, 2)
    assert ts.read_bits(0, 1, 0, 20)[0].tolist() == [0, 1, 0, 1, 0] * 2 + [1, 0, 1, 0, 1] * 2


def _final_stores(addr: int) -> list[tuple[int, tuple]]:
    """Stores of every wordline and the RF of tiles 0 and 1 (the whole state made observable)."""
    rows = []
    for t in (0, 1):
        for r in range(0, ROWS, 32):
            rows.append((t, ISA.row("store", row=r, p=P.make("u", 32), addr=addr, size=0, tr=1, cram=0)))
            addr += 4 * W
        rows.append((t, ISA.row("store_rf", row=0, size=0, p=P.make("u", 32), addr=addr)))
        addr += 4 * 32
    return rows


def random_program(rng, length: int, out: int):
    """A random program of about ``length`` rows the machines accept (errors do not depend on
    data), the whole state stored from ``out`` on at the end."""
    from nnisa.targets.pimsab.program import PimsabProgram
    probe = Machine(SMALL)
    program: list[tuple[int, tuple]] = []
    while len(program) < length:
        tile, row = _random_row(rng)
        pairs = _msg_pair(rng) if tile < 0 else [(tile, row)]
        try:
            for t, r in pairs:
                probe.step(t, r)
        except SimError:
            continue
        program += pairs
    program += _final_stores(out)
    rows = np.array([r for _, r in program], dtype=ISA.dtype)
    return PimsabProgram(rows, np.array([t for t, _ in program]))


@pytest.mark.parametrize("seed", range(10))
def test_compiled_interpreter_equals_per_sample_reference_runs(seed):
    """A random program through the planned, compiled batched run (:mod:`.sim.fastrun`: floats and
    rejected rows fall back to Python) against B runs of the reference machine."""
    from nnisa.targets.pimsab.sim.fastrun import run_batched
    from nnisa.targets.pimsab.sim.machine import run_functional
    from nnisa.targets.pimsab.sim.simulate import _inputs_to_dram
    rng = np.random.default_rng(100 + seed)
    prog = random_program(rng, 80, 0x1000)
    inputs = [{"dram_0x0": rng.integers(0, 256, 0x400, dtype=np.uint8),
               "dram_0x400": rng.integers(0, 256, 0x400, dtype=np.uint8)} for _ in range(B)]
    inputs[1]["dram_0x0"] = inputs[0]["dram_0x0"]       # shared data stays shared
    batched = run_batched(prog, SMALL, inputs, _inputs_to_dram)
    for b in range(B):
        ref = Machine(SMALL)
        _inputs_to_dram(ref, inputs[b])
        run_functional(prog, SMALL, ref)
        want, got = ref.dram_outputs(), batched.dram_outputs(b)
        assert set(want) == set(got)
        for k, v in want.items():
            assert np.array_equal(got[k], v), f"seed {seed}, sample {b}, {k}"


@pytest.mark.slow
def test_compiled_network_batched_equals_per_sample():
    import nnisa
    from nnisa.frontend.models import bundled_model_path
    from nnisa.targets.pimsab.compiler.netcompile import run_compiled
    comp = nnisa.target("pimsab").compile(bundled_model_path("digits_cnn"))
    t_in = comp.qgraph.inputs[0]
    x = np.random.default_rng(0).standard_normal((3,) + tuple(t_in.shape[1:])).astype(np.float32)
    o1, s1, c1 = run_compiled(comp, {t_in.name: x})
    o2, s2, c2 = run_compiled(comp, {t_in.name: x}, batched=False)
    assert c1["bit_exact"] and c2["bit_exact"] and s1.cycles == s2.cycles
    assert all(np.array_equal(o1[k], o2[k]) for k in o1)
