"""Replay generators of the matrix workloads: ``gemm_systolic`` and ``gemm_tiled`` (BERT layers)
(spec §5.2.4, §5.2.6, §5.4).  Timing-faithful replays: wordlines are reused as in the official
handcoded workloads, so they run with ``functional=false``."""

from __future__ import annotations

import math

from .. import precision as P
from ..config import PimsabConfig
from .builder import Builder, Workload
from .vector import _grow


def gemm(cfg: PimsabConfig, m: int = 61440, k: int = 2048, n: int = 32, bits: int = 4, acc_bits: int | None = None,
         nap: bool = False) -> Workload:
    """C = A·B (``gemm_systolic``) for A: m x k, B: k x n of int``bits``, int(2·bits) products and an
    int``acc_bits`` accumulator (default 4 x bits, as the artifact's intN variants).

    Mesh column q streams its ⌈m / mesh_width⌉ rows of A in slices of ``cram_cols`` rows down the
    column (row 0 loads, the others receive from the tile above); mesh row r keeps its
    ⌈n / mesh_height⌉ columns of B resident (scatter-multicast ``load_shf`` + systolic broadcast
    along the row) as far as the wordlines allow, and loads the others per k-slice (the official
    "rest" columns).  Products accumulate in a growing width and are reduced over the tile's CRAMs
    with ``reduce_tile``.  Like the official workload: k / crams_per_tile k-values per CRAM and
    ⌊rows per column / cram_cols⌋ iterations (integer divisions)."""
    crams, cols, rows = cfg.crams_per_tile, cfg.cram_cols, cfg.cram_rows
    mw, mh = cfg.mesh_width, cfg.mesh_height
    acc_bits = 4 * bits if acc_bits is None else acc_bits
    prod = 2 * bits
    sub_a = math.ceil(m / mw)                      # A rows per mesh column
    sub_b = math.ceil(n / mh)                      # B columns per mesh row
    use_h = math.ceil(n / sub_b)                   # mesh rows used
    iters = sub_a // cols                          # A slices per tile
    kc = k // crams                                # k values per CRAM (A slices per iteration)
    if kc < 1 or iters < 1:
        raise ValueError(f"gemm: needs k >= crams_per_tile ({crams}) and m >= mesh_width x cram_cols "
                         f"({mw * cols}), got k={k}, m={m}")
    resident = min(sub_b, (rows - kc * bits - acc_bits - prod) // (kc * bits))
    if resident < 1:
        raise ValueError(f"gemm: no B column fits the {rows} wordlines next to {kc * bits} rows of A")
    pin, pprod, pacc = P.make("i", bits), P.make("i", prod), P.make("i", acc_bits)
    b_base = kc * bits
    prod_row = b_base + kc * resident * bits
    acc_row = prod_row + prod
    A, B, C = 0, 1 << 36, 1 << 40
    a_bytes = cfg.tile_bitlines * P.decode(pin).dram_bits // 8
    levels = int(math.log2(crams))
    b = Builder(cfg)
    for r in range(use_h):
        s = r * mw
        for jb in range(resident):
            for i in range(kc):
                row = b_base + bits * (kc * jb + i)
                b(s, "load_shf", row=row, addr=B + 128 * ((r * sub_b + jb) * kc + i), size=crams, p=pin, tr=1,
                  shf_en=1, shf=0)
                b.bcast(s, row, crams, pin, set(range(s, s + mw)) - {s}, shf=0)

    def accumulate(t: int, brow: int, i: int, a: int, kk: int, mult_pd: int) -> tuple[int, int]:
        b(t, "mult", rd=prod_row, pd=mult_pd, ra=bits * i, pa=pin, rb=brow, pb=pin)
        if nap:
            b(t, "add", rd=acc_row, pd=pacc, ra=prod_row, pa=pprod, rb=acc_row, pb=pacc)
            return a, kk
        a2 = min(a + 1, acc_bits) if _grow(kk) else a
        b(t, "add", rd=acc_row, pd=P.make("i", a2), ra=prod_row, pa=P.make("i", a), rb=acc_row, pb=P.make("i", a))
        return a2, kk + 1

    for q in range(mw):
        for r in range(use_h):
            t = r * mw + q
            mark = b.mark()
            it = 0  # one iteration, then repeated with advancing addresses
            for i in range(kc):
                if r == 0:
                    b(t, "load", row=bits * i, addr=A + a_bytes * ((q * iters + it) * kc + i), size=0, p=pin, tr=1)
                else:
                    b(t, "tile_rx", src_tile=t - mw, src_row=bits * i, dst_tile=t, dst_row=bits * i, size=0, p=pin)
            if r < use_h - 1:
                for i in range(kc):
                    b(t, "tile_tx", src_tile=t, src_row=bits * i, dst_tile=t + mw, dst_row=bits * i, size=0, p=pin)
            for jb in range(resident):
                if r * resident + jb >= n:  # the official guard (it counts resident columns per mesh row)
                    continue
                a, kk = prod, 0
                for i in range(kc):
                    a, kk = accumulate(t, b_base + bits * (kc * jb + i), i, a, kk, pprod if nap else P.make("i", a))
                src = pacc if nap else P.make("i", a)
                b(t, "reduce_tile", rd=acc_row, pd=pacc, ra=acc_row, pa=src, levels=levels)
                b(t, "store", row=acc_row, addr=C + 512 * ((t * iters + it) * sub_b + jb), size=cols, p=src, tr=1)
            for jb in range(sub_b - resident):  # columns that do not fit: loaded per k-slice
                a, kk = prod, 0
                for i in range(kc):
                    brow = b_base + bits * (kc * jb + i)
                    b(t, "load", row=brow, addr=B + 128 * ((r * sub_b + resident + jb) * kc + i), size=256, p=pin,
                      tr=1)
                    a, kk = accumulate(t, brow, i, a, kk, pprod)
                src = pacc if nap else P.make("i", a)
                b(t, "reduce_tile", rd=acc_row, pd=pacc, ra=acc_row, pa=src, levels=levels)
                b(t, "store", row=acc_row, addr=C + 512 * ((t * iters + it) * sub_b + resident + jb), size=cols,
                  p=pacc, tr=1)
            b.repeat_since(mark, iters, {"load": a_bytes * kc, "store": 512 * sub_b})
    return Workload("gemm_nap" if nap else "gemm", b.program(), functional=False,
                    meta=dict(m=m, k=k, n=n, bits=bits, acc_bits=acc_bits, iterations=iters, b_resident=resident))


def gemm_tiled_shape(cfg: PimsabConfig, m: int, k: int, n: int) -> dict[str, int]:
    """The tiling of ``gemm_tiled`` (spec §5.2.6): local M x K x N, grid, iterations, k-steps."""
    T = cfg.tiles_used
    cap = (cfg.cram_rows - 32) * cfg.tile_bitlines
    bsize = 8 * k * n
    local_n = n
    if bsize >= cap:
        scale = math.ceil(bsize / (cap - 120 * 8 * k))
        local_n = max(cfg.cram_cols, math.ceil(n / scale) // 256 * 256)
    # at least one CRAM-wide block of N and one row of M per tile (smaller CRAM presets)
    local_m = min(m, max(T, ((cap - 8 * k * local_n) // (8 * k)) // 120 * 120))
    ga, gn = math.ceil(m / local_m), math.ceil(n / local_n)
    return dict(local_m=local_m, local_k=k, local_n=local_n, ga=ga, gk=1, gn=gn,
                iterations=math.ceil(local_m / T) * math.ceil(local_n / cfg.cram_cols),
                ksteps=math.ceil(k / cfg.crams_per_tile), tiles=T)


def gemm_tiled(cfg: PimsabConfig, m: int, k: int, n: int, nap: bool = False) -> Workload:
    """One BERT GEMM layer (``gemm_tiled``): int8 operands, int16 products, int32 accumulation."""
    sh = gemm_tiled_shape(cfg, m, k, n)
    T, cols = sh["tiles"], cfg.cram_cols
    i8, i16, i32 = P.I8, P.I16, P.I32
    b = Builder(cfg)
    A, B, C = 1 << 30, 0, 1 << 40
    for ct in range(sh["ga"] * sh["gn"]):
        b(0, "load", row=8, addr=B + ct * cfg.tile_bitlines, size=0, p=i8, tr=1)
        b.bcast(0, 0, cols, i8, set(range(1, T)))
        for t in range(T):
            for it in range(sh["iterations"]):
                a, kk = 16, 0
                for ks in range(sh["ksteps"]):
                    b(t, "load_shf", row=0, addr=A + 256 * (((ct * T + t) * sh["iterations"] + it) * sh["ksteps"] + ks),
                      size=cfg.crams_per_tile, p=i8, tr=1, shf_en=1, shf=0)
                    b(t, "mult", rd=16, pd=i16, ra=0, pa=i8, rb=8, pb=i8)
                    if nap:
                        b(t, "add", rd=30, pd=i32, ra=0, pa=i16, rb=10, pb=i32)
                    else:
                        a2 = min(a + 1, 32) if _grow(kk) else a
                        b(t, "add", rd=30, pd=P.make("i", a2), ra=0, pa=P.make("i", a), rb=10, pb=P.make("i", a))
                        a, kk = a2, kk + 1
                b(t, "reduce_tile", rd=24, pd=i32, ra=16, pa=i32 if nap else P.make("i", a),
                  levels=int(math.log2(cfg.crams_per_tile)))
        for t in range(T):
            b(t, "store", row=0, addr=C + 256 * (ct * T + t), size=cols, p=i8, tr=1)
    return Workload(f"gemm_tiled_{m}x{k}x{n}" + ("_nap" if nap else ""), b.program(), functional=False,
                    meta=dict(m=m, k=k, n=n, **sh))


#: BERT-base encoder layer, sequence 384 (spec §5.4): (M, K, N, count, role), artifact order
BERT_LAYERS = [(384, 768, 768, 3, "Q, K, V projections"), (384, 64, 384, 12, "Q·Kᵀ per head"),
               (384, 384, 64, 12, "attention·V per head"), (384, 768, 768, 1, "attention output projection"),
               (384, 768, 3072, 1, "FFN up"), (384, 3072, 768, 1, "FFN down")]
#: softmax cycles the artifact's plotting scripts add to bert (not simulated)
BERT_SOFTMAX_CYCLES = 13136


def bert(cfg: PimsabConfig, nap: bool = False) -> Workload:
    """The 30 GEMMs of one BERT encoder layer: each distinct shape simulated once, counted with its
    multiplicity, plus the fixed softmax charge."""
    parts, weights = [], []
    for m, k, n, count, _role in BERT_LAYERS:
        parts.append(gemm_tiled(cfg, m, k, n, nap))
        weights.append(count)
    return Workload("bert_nap" if nap else "bert", parts[0].program, functional=False, parts=parts,
                    weights=weights, extra_cycles=BERT_SOFTMAX_CYCLES, meta=dict(layers=30))
