"""Replay generators of the matrix workloads: ``gemm_systolic`` and ``gemm_tiled`` (BERT layers)
(spec §5.2.4, §5.2.6, §5.4).  Timing-faithful replays: wordlines are reused as in the official
handcoded workloads, so they run with ``functional=false``."""

from __future__ import annotations

import math

from .. import precision as P
from ..config import PimsabConfig
from .builder import Builder, Workload
from .vector import _grow


def gemm(cfg: PimsabConfig, m: int = 61440, k: int = 2048, n: int = 32, bits: int = 4, acc_bits: int = 16,
         nap: bool = False) -> Workload:
    """C = A·B (``gemm_systolic``): B columns resident per mesh row (scatter-multicast + systolic
    broadcast), A slices streamed down each mesh column, products accumulated in a growing width
    and reduced over the tile's CRAMs with ``reduce_tile``."""
    W, crams, cols = cfg.tile_bitlines, cfg.crams_per_tile, cfg.cram_cols
    mw, mh = cfg.mesh_width, cfg.mesh_height
    rows_per_col = math.ceil(m / mw)
    b_per_row = math.ceil(n / mh)
    mesh_rows = math.ceil(n / b_per_row)
    iters = math.ceil(rows_per_col / cols)
    kc = math.ceil(k / crams)                      # k values per CRAM (A slices)
    pin, pprod, pacc = P.make("i", bits), P.make("i", 2 * bits), P.make("i", acc_bits)
    slice_rows = bits                              # rows per A slice (official: 4 rows apart)
    b_base = slice_rows * kc
    # B columns resident at once (official: min(4, floor((256 - 32 - 16 - 8) / 32)) = 4)
    resident = min(b_per_row, (cfg.cram_rows - b_base - acc_bits - 2 * bits) // (bits * kc))
    if resident < 1:
        raise ValueError(f"gemm: no B column fits the {cfg.cram_rows} wordlines next to {b_base} rows of A")
    groups = math.ceil(b_per_row / resident)
    prod_row = b_base + bits * kc * resident
    acc_row = prod_row + 2 * bits
    A, B, C = 0, 1 << 36, 1 << 40
    a_bytes = W * P.decode(pin).dram_bits // 8
    levels = int(math.log2(crams))
    b = Builder(cfg)
    for g in range(groups):
        jbs = range(g * resident, min((g + 1) * resident, b_per_row))
        for r in range(mesh_rows):
            s = r * mw
            for jb in jbs:
                for i in range(kc):
                    row = b_base + bits * (kc * (jb - jbs[0]) + i)
                    b(s, "load_shf", row=row, addr=B + 128 * ((r * b_per_row + jb) * kc + i), size=crams, p=pin,
                      tr=1, shf_en=1, shf=0)
                    b.bcast(s, row, crams, pin, set(range(r * mw, r * mw + mw)) - {s}, shf=0)
        for q in range(mw):
            for r in range(mesh_rows):
                t = r * mw + q
                mark = b.mark()
                it = 0  # one iteration, then repeated with advancing addresses
                for i in range(kc):
                    if r == 0:
                        b(t, "load", row=slice_rows * i, addr=A + a_bytes * ((q * iters + it) * kc + i), size=0,
                          p=pin, tr=1)
                    else:
                        b(t, "tile_rx", src_tile=t - mw, src_row=slice_rows * i, dst_tile=t, dst_row=slice_rows * i,
                          size=0, p=pin)
                if r < mesh_rows - 1:
                    for i in range(kc):
                        b(t, "tile_tx", src_tile=t, src_row=slice_rows * i, dst_tile=t + mw, dst_row=slice_rows * i,
                          size=0, p=pin)
                for jb in jbs:
                    a, kk = 2 * bits, 0
                    for i in range(kc):
                        brow = b_base + bits * (kc * (jb - jbs[0]) + i)
                        if nap:
                            b(t, "mult", rd=prod_row, pd=pprod, ra=slice_rows * i, pa=pin, rb=brow, pb=pin)
                            b(t, "add", rd=acc_row, pd=pacc, ra=prod_row, pa=pprod, rb=acc_row, pb=pacc)
                        else:
                            a2 = min(a + 1, acc_bits) if _grow(kk) else a
                            b(t, "mult", rd=prod_row, pd=P.make("i", a), ra=slice_rows * i, pa=pin, rb=brow, pb=pin)
                            b(t, "add", rd=acc_row, pd=P.make("i", a2), ra=prod_row, pa=P.make("i", a), rb=acc_row,
                              pb=P.make("i", a))
                            a, kk = a2, kk + 1
                    src = pacc if nap else P.make("i", a)
                    b(t, "reduce_tile", rd=acc_row, pd=pacc, ra=acc_row, pa=src, levels=levels)
                    b(t, "store", row=acc_row, addr=C + 512 * ((t * iters + it) * b_per_row + jb), size=cols, p=src,
                      tr=1)
                b.repeat_since(mark, iters, {"load": a_bytes * kc, "store": 512 * b_per_row})
    return Workload("gemm_nap" if nap else "gemm", b.program(), functional=False,
                    meta=dict(m=m, k=k, n=n, bits=bits, acc_bits=acc_bits, iterations=iters, b_groups=groups))


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
