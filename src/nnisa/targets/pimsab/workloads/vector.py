"""Replay generators of the vector workloads: vadd, gemv and fir (spec §5.2.1–§5.2.3).

Each generator emits the same instruction sequence as the official handcoded workload (same
instruction types, precisions, sizes, tiles and order) and, with ``seed``, a DRAM image of
random inputs plus the exact expected outputs, so a functional run checks the values.
"""

from __future__ import annotations

import math

import numpy as np

from .. import precision as P
from ..config import PimsabConfig
from ..sim.dram import pack_elements
from .builder import Builder, Workload

VADD_N = 120 * 256 * 512


def _signed_random(rng, n: int, bits: int, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    lo = -(1 << (bits - 1)) if lo is None else lo
    hi = (1 << (bits - 1)) - 1 if hi is None else hi
    return rng.integers(lo, hi + 1, n, dtype=np.int64)


def _encode(values: np.ndarray, prec: int) -> bytes:
    p = P.decode(prec)
    return pack_elements(values.astype(np.int64).view(np.uint64), p.dram_bits).tobytes()


def vadd(cfg: PimsabConfig, n: int = VADD_N, bits: int = 8, seed: int | None = None) -> Workload:
    """C = A + B on n elements of int``bits`` (results wrap to ``bits``): ceil(n / W) rounds of two
    full-tile loads, an add and a full-tile store (the official ``vadd``: every round moves a whole
    tile vector, also the last; only the first n elements are checked)."""
    W = cfg.tile_bitlines
    prec = P.make("i", bits)
    w = P.decode(prec).dram_bits
    rounds = math.ceil(n / W)
    stride = W * w // 8
    A, B, C = 0, rounds * stride, 2 * rounds * stride
    b = Builder(cfg)
    for r in range(rounds):
        t = (cfg.dram_tile + r) % cfg.tiles_used
        b(t, "load", row=0, addr=A + r * stride, size=0, p=prec, tr=1)
        b(t, "load", row=bits, addr=B + r * stride, size=0, p=prec, tr=1)
        b(t, "add", rd=2 * bits, pd=prec, ra=0, pa=prec, rb=bits, pb=prec)
        b(t, "store", row=2 * bits, addr=C + r * stride, size=0, p=prec, tr=1)
    expected = {}
    if seed is not None:
        rng = np.random.default_rng(seed)
        a, bb = _signed_random(rng, n, bits), _signed_random(rng, n, bits)
        b.data(A, _encode(a, prec))
        b.data(B, _encode(bb, prec))
        s = a + bb
        s = ((s + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
        expected[C] = _encode(s, prec)
    return Workload("vadd", b.program(), expected, meta=dict(n=n, bits=bits, rounds=rounds))


def _grow(k: int) -> bool:
    """The official growing-width schedule adds a bit at accumulation steps 0, 1, 3, 7, 15, ..."""
    return (k + 1) & k == 0


def gemv(cfg: PimsabConfig, m: int = 61440, k: int = 2048, bits: int = 8, acc_bits: int | None = None,
         nap: bool = False, seed: int | None = None) -> Workload:
    """y = A·x (``gemv_new``) for an m x k matrix of int``bits`` with an int``acc_bits`` accumulator
    (default 4 x bits, as the artifact's intN variants): x in the RF, one full-tile vector load,
    ``mul_const`` and growing-width ``add`` per step, then a cross-tile add tree.

    As in the official workload, a vector holds ⌊W / m⌋ columns when m < W (one step covers them
    all) and ⌈m / W⌉ loads make up a column when m > W; step i runs on tile ⌊i / ⌈k / T⌉⌋.  With
    ``nap`` (no adaptive precision, Table 6) every accumulation uses the declared accumulator
    width.  With ``seed`` the inputs are random in [0, 2] (the tree's partial sums are written at
    their growing widths, so the result is exact for non-negative data; see docs/pimsab.md); only
    shapes with one column per vector compute real values.
    nnisa keeps the values exact where the official sequence cannot (it is timing-only there):
    columns longer than a tile vector keep one accumulator per piece and send, add and store each
    piece separately, and tiles with more than ``rf_regs`` columns reload the RF per group.
    """
    W = cfg.tile_bitlines
    T = cfg.tiles_used
    acc_bits = 4 * bits if acc_bits is None else acc_bits
    per_vec = max(1, W // m)                      # columns in one vector (official numColPerCore)
    pieces = math.ceil(m / W)                     # vectors per column (official iterPerCol)
    per = math.ceil(k / T)                        # columns per tile
    regs = cfg.rf_regs
    groups = math.ceil(per / regs)
    if seed is not None and per_vec > 1:
        raise ValueError(f"gemv: m={m} packs {per_vec} columns into one vector (timing-only, as the official "
                         "workload); values can be checked for m > half a tile vector")
    pin, pprod = P.make("i", bits), P.make("i", 2 * bits)
    pacc = P.make("i", acc_bits)
    acc = [24 + 64 * q for q in range(pieces)]
    if acc[-1] + 64 > cfg.cram_rows:
        raise ValueError(f"gemv: {pieces} accumulators of m={m} do not fit {cfg.cram_rows} wordlines")
    size = [min(W, m - q * W) if pieces > 1 else m for q in range(pieces)]
    X, A = 0, 1 << 24
    col_bytes = W * P.decode(pin).dram_bits // 8
    Y = A + k * pieces * col_bytes
    b = Builder(cfg)
    for t in range(T):
        b(t, "load_rf", row=0, addr=X + 128 * groups * t)
    for i in range(0, k, per_vec):
        t, j = divmod(i, per)
        if j // regs and (j - per_vec) // regs != j // regs:
            b(t, "load_rf", row=0, addr=X + 128 * (groups * t + j // regs))
        a, kk = 2 * bits, 0
        for q in range(pieces):
            b(t, "load", row=0, addr=A + col_bytes * (i * pieces + q), size=0, p=pin, tr=1)  # zero-padded column
            b(t, "mul_const", rd=8, pd=pprod, ra=0, pa=pin, rb=j % regs, pb=pin)
            if nap:
                b(t, "add", rd=acc[q], pd=pacc, ra=8, pa=pprod, rb=acc[q], pb=pacc)
            else:
                a2 = min(a + 1, acc_bits) if _grow(kk) else a
                b(t, "add", rd=acc[q], pd=P.make("i", a2), ra=8, pa=pprod, rb=acc[q], pb=P.make("i", a))
                a, kk = a2, kk + 1
    gap = 1
    while gap < T:
        a, kk = 2 * bits, 0
        t = 0
        while t + gap < T:
            for q in range(pieces):
                b(t + gap, "tile_tx", src_tile=t + gap, src_row=acc[q], dst_tile=t, dst_row=acc[q] + 32,
                  size=size[q] % W, p=pacc)
                b(t, "tile_rx", src_tile=t + gap, src_row=acc[q], dst_tile=t, dst_row=acc[q] + 32,
                  size=size[q] % W, p=pacc)
            a2 = min(a + 1, acc_bits) if _grow(kk) else a
            for q in range(pieces):
                if nap:
                    b(t, "add", rd=acc[q], pd=pacc, ra=acc[q], pa=pacc, rb=acc[q] + 32, pb=pacc)
                else:
                    b(t, "add", rd=acc[q], pd=P.make("i", a2), ra=acc[q], pa=P.make("i", a), rb=acc[q] + 32, pb=pacc)
            a, kk = a2, kk + 1
            t += 2 * gap
        gap *= 2
    for q in range(pieces):
        b(0, "store", row=acc[q], addr=Y + 4 * W * q, size=0, p=pacc, tr=1)
    expected = {}
    if seed is not None:
        rng = np.random.default_rng(seed)
        Am = rng.integers(0, 3, (m, k), dtype=np.int64)
        x = rng.integers(0, 3, k, dtype=np.int64)
        for t in range(T):
            for g in range(groups):
                img = np.zeros(32, np.int64)
                cols = x[per * t + regs * g: min(per * (t + 1), per * t + regs * (g + 1))]
                img[:len(cols)] = cols
                b.data(X + 128 * (groups * t + g), img.astype("<i4").tobytes())
        colmat = np.zeros((k, pieces * W), np.int64)
        colmat[:, :m] = Am.T
        b.data(A, _encode(colmat.reshape(-1), pin))
        y = np.zeros(pieces * W, np.int64)
        y[:m] = Am @ x
        expected[Y] = _encode(y, pacc)
    return Workload("gemv_nap" if nap else "gemv", b.program(), expected,
                    meta=dict(m=m, k=k, bits=bits, acc_bits=acc_bits, pieces=pieces, columns_per_vector=per_vec))


FIR_OUTPUTS = 120 * (256 - 1) * 256


def fir(cfg: PimsabConfig, taps: int = 32, bits: int = 16, outputs: int = FIR_OUTPUTS,
        seed: int | None = None) -> Workload:
    """FIR filter (``fir_med_inp_256bit_loads``): per chunk of (crams − 1) × cram_cols outputs, 256
    CRAM-sized loads, then for every tap ``mul_const`` + ``add`` + a one-bitline ``shift`` of the
    input across CRAM boundaries.  Chunk c runs on tile c mod n_tiles_used (Table 5's 7,833,600
    outputs are one chunk per tile on the base configuration)."""
    T = cfg.tiles_used
    cols, crams = cfg.cram_cols, cfg.crams_per_tile
    W = cfg.tile_bitlines
    out_n = W - cols  # the last CRAM is the halo
    chunks = math.ceil(outputs / out_n)
    prec = P.make("i", bits)
    w = P.decode(prec).dram_bits // 8
    H, Xa = 0, 1 << 16
    Y = Xa + w * (out_n * chunks + cols) + (1 << 12)
    b = Builder(cfg)
    if taps > cfg.rf_regs:
        raise ValueError(f"fir: {taps} taps exceed the {cfg.rf_regs} RF registers")
    b(0, "load_rf", row=0, addr=H, size=taps, p=prec)
    _rf_bcast(b, cfg, min(T, chunks))
    for c in range(chunks):
        t = c % T
        for kk in range(crams):
            b(t, "load", row=0, addr=Xa + w * (out_n * c + cols * kk), size=cols, p=prec, tr=1, cram=kk)
        b(t, "reset", rd=32, pd=prec)
        for i in range(taps):
            b(t, "read_rf", ra=i)
            b(t, "mul_const", rd=16, pd=prec, ra=0, pa=prec, rb=i, pb=prec)
            b(t, "add", rd=32, pd=prec, ra=16, pa=prec, rb=32, pb=prec)
            b(t, "shift", rd=0, pd=prec, ra=0, pa=prec, dir=0, dist=0)
        b(t, "store", row=32, addr=Y + w * out_n * c, size=min(out_n, outputs - out_n * c), p=prec, tr=1)
    expected = {}
    if seed is not None:
        rng = np.random.default_rng(seed)
        h = rng.integers(-8, 9, taps)
        x = rng.integers(-8, 9, out_n * chunks + cols)
        b.data(H, _encode(h, prec))
        b.data(Xa, _encode(x, prec))
        y = np.zeros(outputs, np.int64)
        for i in range(taps):
            y += h[i] * x[i:i + outputs]
        expected[Y] = _encode(y, prec)
    return Workload("fir", b.program(), expected, meta=dict(taps=taps, bits=bits, chunks=chunks, outputs=outputs))


def _rf_bcast(b: Builder, cfg: PimsabConfig, T: int) -> None:
    """``tile_bcast`` of tile 0's RF image (rf=1, u1, 1024 bits: one flit per hop) to tiles 0..T-1."""
    from ..formats.broadcast import broadcast_hops
    mode = "systolic" if cfg.broadcast_type == "systolic" else "one_to_many"
    size = 32 * cfg.rf_bits
    for src, dst in broadcast_hops(cfg, 0, set(range(T)), mode):
        common = dict(size=size, src_tile=src, dst_tile=dst, p=P.U1, rf=1)
        b(src, "tile_tx", **common)
        b(dst, "tile_rx", **common)
