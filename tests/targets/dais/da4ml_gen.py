"""Programs generated with da4ml 0.6.0 at test time (spec §9.3) and oracle inputs (§9.4).

Imported only by oracle test modules after their da4ml guard.  Seeds derive from case names so
a single case reruns identically.
"""

import zlib

import numpy as np
from da4ml.trace import FixedVariableArray, comb_trace
from da4ml.trace.ops import quantize, relu

OPTS = {"search_all_decompose_dc": False}


def seed(name: str, base: int = 1234) -> int:
    return zlib.crc32(name.encode()) ^ base


def rand_weights(rng, n_in, n_out, bits, sparsity=0.0, scale=1.0):
    hi = 2 ** (bits - 1)
    W = rng.integers(-hi, hi, (n_in, n_out)).astype(np.float64)
    W[rng.random(W.shape) < sparsity] = 0
    return (W * scale).astype(np.float32)


def cmvm(name, n_in, n_out, bits, sparsity=0.0, k=1, i=7, f=0, method="wmc", scale=1.0):
    rng = np.random.default_rng(seed(name))
    W = rand_weights(rng, n_in, n_out, bits, sparsity, scale)
    x = FixedVariableArray.from_kif(np.full(n_in, k), np.full(n_in, i), np.full(n_in, f),
                                    solver_options={**OPTS, "method0": method})
    return comb_trace(x, x @ W), W


def mixed_inputs(name):
    rng = np.random.default_rng(seed(name))
    n = 6
    k = rng.integers(0, 2, n)
    i = rng.integers(-1, 6, n)
    f = rng.integers(-2, 4, n)
    i = np.maximum(i, 1 - k - f)  # keep widths ≥ 1
    W = rand_weights(rng, n, 5, 6, 0.3, 1 / 8)
    x = FixedVariableArray.from_kif(k, i, f, solver_options=OPTS)
    return comb_trace(x, x @ W)


def layer(name, kind):
    rng = np.random.default_rng(seed(name))
    W = rand_weights(rng, 8, 6, 5, 0.3)
    b = rng.integers(-20, 20, 6).astype(np.float32) / 4
    x = FixedVariableArray.from_kif(np.ones(8, int), np.full(8, 4), np.full(8, 2), solver_options=OPTS)
    h = x @ W + b
    if kind == "relu":
        y = relu(h, i=np.full(6, 5), f=np.full(6, 1))
    elif kind == "relu_neg":
        y = relu(-h, i=np.full(6, 4), f=np.full(6, 0))
    else:
        ovf, rnd = kind.rsplit("_", 1)
        y = quantize(h, 1, 4, 1, ovf, rnd)
    return comb_trace(x, y)


def mlp(name, sizes=(16, 32, 16, 5), act="relu"):
    rng = np.random.default_rng(seed(name))
    x = FixedVariableArray.from_kif(np.ones(sizes[0], int), np.full(sizes[0], 3), np.full(sizes[0], 2),
                                    solver_options=OPTS)
    h = x
    for li, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        W = rand_weights(rng, a, b, 4, 0.5, 1 / 8)
        h = h @ W
        if li < len(sizes) - 2:
            if act == "relu":
                h = relu(h, i=np.full(b, 3), f=np.full(b, 2))
            elif act == "tanh":
                h = quantize(np.tanh(quantize(h, 1, 3, 2)), 1, 0, 5)
            else:
                h = quantize(h, 1, 3, 2, "SAT", "RND")
    return comb_trace(x, h)


def opmix(name):
    rng = np.random.default_rng(seed(name))
    a = FixedVariableArray.from_kif(np.ones(4, int), np.full(4, 3), np.zeros(4, int), solver_options=OPTS)
    b = FixedVariableArray.from_kif(np.ones(4, int), np.full(4, 3), np.zeros(4, int), solver_options=OPTS)
    outs = {
        "minmax": [np.abs(a), np.maximum(a, b), np.minimum(a, b), np.clip(a, -3, 2)],
        "mul": [a * b, a * a],
        "bits": [a & b, a | b, a ^ b, ~a, a != b, a == b],
        "negbits": [-(~a) + b, (-a) & b, (-a) ^ (-b)],
        "lut": [quantize(np.sin(a), 1, 0, 6), quantize(np.tanh(b), 1, 0, 6), quantize(np.exp(a), 0, 8, 2)],
        "cmp": [a > b, a < b, a >= b],
        "neg": [relu(-(a * 3 + b), i=np.full(4, 5), f=np.full(4, 0)), quantize(-(a + b), 1, 2, 0)],
        "const": [a * 0 + 3, quantize(a * b + 1.5, 1, 3, 0, "SAT", "RND")],
    }[name]
    inp = FixedVariableArray(np.concatenate([a._vars, b._vars]), solver_options=OPTS)
    out = FixedVariableArray(np.concatenate([np.ravel(o._vars) for o in outs]), solver_options=OPTS)
    del rng
    return comb_trace(inp, out)


def sort8(name):
    from da4ml.trace.ops import sorting
    v = FixedVariableArray.from_kif(np.ones(8, int), np.full(8, 3), np.zeros(8, int), solver_options=OPTS)
    return comb_trace(v, sorting.sort(v))


def inputs_for(binary, n, name, raw=False):
    """Grid inputs with corners/extremes (and off-grid, out-of-range values if ``raw``)."""
    from nnisa.targets.dais.formats.binary import read_binary
    p = read_binary(binary)
    rng = np.random.default_rng(seed(name, 99))
    lo = np.zeros(p.n_in)
    hi = np.zeros(p.n_in)
    step = np.ones(p.n_in)
    for i in np.flatnonzero(p.opcode == -1):
        j = int(p.id0[i])
        k, I, f = int(p.k[i]), int(p.I[i]), int(p.f[i])
        s = 2.0 ** (-f - int(p.inp_shifts[j]))
        lo[j], hi[j], step[j] = -k * 2.0 ** I * s * 2.0 ** f, (2.0 ** I - 2.0 ** -f) * s * 2.0 ** f, s
    cnt = np.round((hi - lo) / step)
    X = lo + np.floor(rng.random((n, p.n_in)) * (cnt + 1)) * step
    u = rng.random((n, p.n_in))
    X = np.where(u < 0.05, lo, np.where(u < 0.10, hi, X))
    X = np.where((u >= 0.10) & (u < 0.18), np.round(rng.normal(0, 2, X.shape)) * step, X)
    if p.n_in <= 10:
        corners = np.array([[hi[j] if (c >> j) & 1 else lo[j] for j in range(p.n_in)]
                            for c in range(2 ** p.n_in)])
        X = np.concatenate([corners, X])[:n]
    if raw:
        span = hi - lo + step
        X = X + (rng.random(X.shape) - 0.5) * step * 3 + rng.choice([-4, 0, 0, 0, 4], X.shape) * span
    return X
