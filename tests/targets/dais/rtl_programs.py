"""Random DAIS programs that use every opcode (and its corner cases), for RTL co-simulation.

The programs are valid (§5.6) and never index a lookup table out of range, but otherwise go
where the interpreter's definitions matter: non-canonical ``f`` on adders (Q3) and quantizers
(Q4), negative and large shifts, wraps of signed and unsigned dtypes, non-quantizing ops whose
values leave their dtype, unsigned mux keys, negated operands, several readers of one input.
"""

from __future__ import annotations

import warnings

import numpy as np

from nnisa.targets.dais.program import Program, int_bounds


def random_program(seed: int, n_ops: int = 80, n_in: int = 4, big: bool = False) -> Program:
    """A valid random program exercising all 16 opcodes (``big``: values up to ~2^60)."""
    rng = np.random.default_rng(seed)
    ops: list[tuple] = []
    tables: list[np.ndarray] = []
    kif: list[tuple] = []

    def add(o, a=-1, c=-1, lo=0, hi=0, dt=(1, 8, 0)):
        data = lo if o in (4, 5) else (((hi & 0xFFFFFFFF) << 32) | (lo & 0xFFFFFFFF))
        data = data - (1 << 64) if data >= 1 << 63 else data
        ops.append((o, a, c, data, *dt))
        kif.append(dt)
        return len(ops) - 1

    def r(lo, hi):
        return int(rng.integers(lo, hi + 1))

    def dtype(wmax=16, fr=(-3, 6)):
        k = r(0, 1)
        f = r(*fr)
        w = r(1, wmax)
        return (k, w - k - f, f)

    def pick():
        return r(0, len(ops) - 1)

    for j in range(n_in):
        for _ in range(r(1, 2)):
            add(-1, j, dt=dtype(40 if big else 14))
    kinds = ["add", "sub", "relu", "quant", "addc", "const", "mux", "mul", "lut", "bit1", "bit2"]
    while len(ops) < n_ops:
        kind = kinds[len(ops) % len(kinds)] if rng.random() < 0.5 else kinds[r(0, len(kinds) - 1)]
        a, c = pick(), pick()
        ka, ia, fa = kif[a]
        kc, ic, fc = kif[c]
        if kind in ("add", "sub"):
            d = r(-4, 4)
            t = max(fa, fc - d)
            f = t - r(0, 3) if rng.random() < 0.8 else t + r(1, 2)  # floor rescale or Q3
            add(0 if kind == "add" else 1, a, c, d, r(-2, 2) if rng.random() < 0.2 else 0, (1, r(4, 30) + max(0, -f), f))
        elif kind in ("relu", "quant"):
            o = (2 if kind == "relu" else 3) * (-1 if rng.random() < 0.4 else 1)
            dt = dtype(14)
            if rng.random() < 0.8:  # mostly canonical: f <= fa
                dt = (dt[0], dt[1] + dt[2] - min(dt[2], fa), min(dt[2], fa))
            add(o, a, dt=dt)
        elif kind == "addc":
            f = fa + r(-3, 3)
            add(4, a, lo=r(-(1 << 40), 1 << 40) if big else r(-500, 500), dt=(1, 20, f))
        elif kind == "const":
            v = r(-(1 << 62), 1 << 62) if big and rng.random() < 0.3 else r(-1000, 1000)
            add(5, lo=v, dt=(1, 58 if big else 12, r(-2, 4)))
        elif kind == "mux":
            q = pick()
            if rng.random() < 0.5:
                f, hs = fa, r(-3, 3)       # s0 = 0, C shifted by fa - fc + hi
            else:
                f = r(fa - 2, fa + 2)      # A shifted, s1 = f - fc + hi = 0
                hs = fc - f
            k, w = r(0, 1), r(1, 14)
            add(-6 if rng.random() < 0.4 else 6, a, c, q, hs, (k, w - k - f, f))
        elif kind == "mul":
            add(7, a, c, dt=(1, min(40, 63 - fa - fc), fa + fc))  # at most 64 bits (§5.6)
        elif kind == "lut":
            kw = r(1, 6)
            kk = r(0, 1)
            key = add(3, a, dt=(kk, kw - kk - fa, fa))
            pad = r(-2, 0)
            n = (1 << kw) - pad
            vals = rng.integers(-300, 300, n)
            if rng.random() < 0.3:
                vals[r(0, n - 1)] = -(1 << 31)
            tables.append(vals.astype(np.int32))
            add(8, key, lo=len(tables) - 1, hi=pad, dt=(1, 31, 0))
        elif kind == "bit1":
            neg = rng.random() < 0.3
            add(-9 if neg else 9, a, lo=r(0, 2), dt=(r(0, 1), r(1, 16), 0))
        else:
            sh = r(-3, 3)
            hi = r(0, 3) | (r(0, 2) << 24)
            add(10, a, c, sh, hi, (1, 24, max(fa, fc - sh)))
    n_out = max(4, n_ops // 6)
    outs = [int(v) for v in rng.integers(0, len(ops), n_out)]
    outs[-1] = -1
    outs[0] = len(ops) - 1
    rows = np.array(ops, np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Program.from_arrays(inp_shifts=[r(-2, 2) for _ in range(n_in)], out_idxs=outs,
                                   out_shifts=[r(-3, 3) for _ in range(n_out)],
                                   out_negs=[r(0, 1) for _ in range(n_out)], ops=rows, tables=tables)


def edge_inputs(p: Program, n: int, seed: int) -> np.ndarray:
    """Random and edge-case inputs for ``p``: every input's dtype bounds, just past them (wraps),
    zeros, negative zero and fractions that floor, scaled by each reader's resolution."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, p.n_in))
    for j in range(p.n_in):
        readers = np.flatnonzero((p.opcode == -1) & (p.id0 == j))
        if not len(readers):
            continue
        i = int(readers[rng.integers(len(readers))])
        k, w, f = int(p.k[i]), int(p.k[i] + p.I[i] + p.f[i]), int(p.f[i])
        lo, hi = int_bounds(k, w)
        scale = 2.0 ** -(f + int(p.inp_shifts[j]))
        edges = np.array([0.0, -0.0, lo, hi, lo - 1, hi + 1, lo - 0.5, hi + 0.5, 0.25, -0.25, 2 * hi + 3, 2 * lo - 7])
        body = rng.uniform(2 * lo - 2, 2 * hi + 2, n)
        body[: len(edges)] = edges[: min(n, len(edges))]
        X[:, j] = rng.permutation(body) * scale
    return X
