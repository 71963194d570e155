"""Hypothesis strategies: valid PIMSAB instructions and programs for the base configuration."""

from __future__ import annotations

from hypothesis import strategies as st

from nnisa.targets.pimsab import precision as P
from nnisa.targets.pimsab.config import preset
from nnisa.targets.pimsab.isa import BINARY, build_isa
from nnisa.targets.pimsab.program import PimsabProgram, ISA

CFG = preset("base")
INT_PRECS = [P.make(k, w) for k in ("i", "u") for w in (1, 2, 4, 7, 8, 12, 16, 17, 24, 32)]
FLOAT_PRECS = [P.make("f32"), P.make("f16"), P.make("bf16")]
ROWS = CFG.cram_rows


@st.composite
def operand(draw, precs=None):
    p = draw(st.sampled_from(precs or INT_PRECS))
    row = draw(st.integers(0, ROWS - P.bits(p)))
    return row, p


@st.composite
def instruction(draw, tile=0):
    """(tile, IR row) of one random valid instruction executing in ``tile``."""
    mn = draw(st.sampled_from([s.mnemonic for s in build_isa().instrs]))
    kw = {}
    size = draw(st.sampled_from([0, 1, 256, 4096, 65536]))
    pred = draw(st.integers(0, 3))
    floats = draw(st.booleans())
    pool = FLOAT_PRECS if floats else INT_PRECS
    if mn in BINARY or mn in ("not", "copy", "set", "reset", "shift", "mac", "reduce_cram", "reduce_tile",
                              "cram_local_shf", "mul_const", "add_const", "dot_const"):
        rd, pd = draw(operand(pool))
        ra, pa = draw(operand(pool))
        rb, pb = draw(operand(pool))
        kw = dict(pred=pred, size=size, rd=rd, pd=pd)
        if mn not in ("set", "reset"):
            kw.update(ra=ra, pa=pa)
        if mn in BINARY or mn in ("mac", "dot_const"):
            kw.update(rb=rb, pb=pb)
        if mn in ("mul_const", "add_const"):
            kw.update(rb=draw(st.integers(0, 31)), pb=pb)
        if mn == "dot_const":
            kw.update(xrf=draw(st.integers(0, 31)), px=draw(st.sampled_from(pool)), yrf=draw(st.integers(0, 31)),
                      py=draw(st.sampled_from(pool)))
        if mn == "shift":
            kw.update(dir=draw(st.integers(0, 1)), dist=draw(st.integers(0, 1023)))
        if mn == "reduce_cram":
            kw.update(levels=draw(st.integers(1, 8)))
        if mn == "reduce_tile":
            kw.update(levels=draw(st.integers(1, 8)))
        if mn == "cram_local_shf":
            kw.update(shf=draw(st.integers(0, 3)), shf_en=1)
        if mn == "mac":
            pin = draw(st.sampled_from(pool))
            kw.update(pin=pin, rd=draw(st.integers(0, ROWS - max(P.bits(pd), P.bits(pin)))),
                      scratch=draw(st.integers(0, ROWS - (P.bits(pa) + P.bits(pb) + 1) // 2)))
    elif mn == "set_mask":
        kw = dict(pred=pred, size=size, ra=draw(st.integers(0, ROWS - 1)))
    elif mn == "read_rf":
        kw = dict(ra=draw(st.integers(0, 31)))
    elif mn == "write_rf":
        kw = dict(rd=draw(st.integers(0, 31)), imm=draw(st.integers(0, 2 ** 32 - 1)))
    elif mn in ("add_rf", "sub_rf"):
        kw = dict(rd=draw(st.integers(0, 31)), ra=draw(st.integers(0, 31)), rb=draw(st.integers(0, 31)))
    elif mn == "popcount_rf":
        ra, pa = draw(operand())
        kw = dict(rd=draw(st.integers(0, 31)), ra=ra, pa=pa, size=size)
    elif mn in ("load", "store"):
        row, p = draw(operand())
        cram = draw(st.integers(0, 255)) if size and size <= 256 else 0
        kw = dict(row=row, p=p, size=size, cram=cram, tr=draw(st.integers(0, 1)),
                  addr=draw(st.integers(0, 2 ** 48 - 1)))
    elif mn == "load_shf":
        row, p = draw(operand())
        bcast, shf_en, k = draw(st.sampled_from([(1, 0, 0), (1, 1, 2), (0, 1, 0), (0, 1, 3)]))
        n = 256 if bcast else 256 << k
        kw = dict(row=row, p=p, size=n, bcast=bcast, shf_en=shf_en, shf=k, tr=draw(st.integers(0, 1)),
                  addr=draw(st.integers(0, 2 ** 48 - 1)), cram=draw(st.integers(0, 255)))
    elif mn in ("load_rf", "store_rf"):
        s = draw(st.integers(0, 8))
        kw = dict(row=0 if s == 0 else draw(st.integers(0, 32 - s)), size=s,
                  p=0 if s == 0 else draw(st.sampled_from(INT_PRECS)), addr=draw(st.integers(0, 2 ** 48 - 1)))
    elif mn in ("cram_tx_rx", "cram_bcast"):
        src, p = draw(operand())
        dst = draw(st.integers(0, ROWS - P.bits(p)))
        kw = dict(src_tile=tile, dst_tile=tile, src_row=src, dst_row=dst, p=p)
        if mn == "cram_tx_rx":
            kw.update(src_cram=draw(st.integers(0, 255)), dst_cram=draw(st.integers(0, 255)))
    elif mn in ("tile_tx", "tile_rx"):
        other = draw(st.integers(0, CFG.n_tiles - 1).filter(lambda t: t != tile))
        src_t, dst_t = (tile, other) if mn == "tile_tx" else (other, tile)
        src, p = draw(operand())
        dst = draw(st.integers(0, ROWS - P.bits(p)))
        kw = dict(src_tile=src_t, dst_tile=dst_t, src_row=src, dst_row=dst, p=p, size=size)
        mode = draw(st.sampled_from(["plain", "shf", "bcast"] if mn == "tile_rx" else ["plain", "shf"]))
        if mode == "shf":
            k = draw(st.integers(0, 3))
            kw.update(shf_en=1, shf=k, size=256 << k)
        elif mode == "bcast":
            kw.update(bcast=1, size=256)
    elif mn in ("signal", "wait"):
        other = draw(st.integers(0, CFG.n_tiles - 1))
        src_t, dst_t = (tile, other) if mn == "signal" else (other, tile)
        kw = dict(src_tile=src_t, dst_tile=dst_t, src_cram=draw(st.integers(0, 255)),
                  dst_cram=draw(st.integers(0, 255)), tag=draw(st.integers(0, 2 ** 23 - 1)))
    return tile, ISA.row(mn, **kw)


@st.composite
def program(draw, max_size=25):
    items = draw(st.lists(st.integers(0, CFG.n_tiles - 1).flatmap(lambda t: instruction(t)), min_size=0,
                          max_size=max_size))
    segs = draw(st.lists(st.tuples(st.integers(0, 2 ** 40), st.binary(max_size=40)), max_size=3))
    return PimsabProgram(ISA.rows([r for _, r in items]), [t for t, _ in items], segs, CFG.sha256, "base")
