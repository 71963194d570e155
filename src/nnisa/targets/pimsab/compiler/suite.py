"""The paper's benchmarks as DSL programs (spec §5.6, Table 5), with their documented loop organisation.

Each function returns a schedule; :func:`nnisa.targets.pimsab.compiler.dsl.build` maps it.  The
defaults are the Table 5 sizes; tests use smaller ones.  Loop organisations (what the user writes
before the compiler's search):

- ``vecadd``: c[x, y] = a[x, y] + b[x, y] (int8, wraps); y (256) on the bitlines.
- ``fir``: y[i] = Σ_k x[i + k]·h[k] (int16, int16 accumulation); i split by 256, i.i on the bitlines;
  the taps are tile scalars (RF, ``mul_const``).
- ``gemv``: y[i] = Σ_k A[k, i]·x[k] (int8, int32); i split by 256 on the bitlines; A is a constant.
- ``gemm``: C[n, i] = Σ_k A[k, i]·B[n, k] (int4, int16); i split by 256 on the bitlines.
- ``conv2d``: O[b, e, f, m] = Σ_{c,r,s} I[b, c, e·st + r, f·st + s]·W[c, r, s, m] (int8, int32); the
  output channels m (≤ 256 per piece) run on the bitlines, the input pixels are per-CRAM scalars.
- ``conv2d_windows`` (the Table 5 conv2d program): the same convolution with the pixels of the batch
  on the bitlines, windows by shifts, input channels across CRAMs (:mod:`.convwin`).
"""

from __future__ import annotations

from . import lang as T


def _t(bits: int, signed: bool = True) -> T.DType:
    return T.i(bits) if signed else T.u(bits)


def vecadd(n: int = 15728640, bits: int = 8) -> T.Schedule:
    """Table 5 vecadd (n int``bits`` elements; the 8-bit sum wraps as in the replay)."""
    a = T.tensor((n // 256, 256), _t(bits), "a")
    b = T.tensor((n // 256, 256), _t(bits), "b")
    x, y = T.loop(n // 256, "x"), T.loop(256, "y")
    s = T.schedule(T.compute("c", (x, y), a[x, y] + b[x, y], dtype=_t(bits)))
    s.bitlines(y)
    return s


def fir(outputs: int = 7833600, taps: int = 32, bits: int = 16) -> T.Schedule:
    """Table 5 fir: ``outputs`` results of a ``taps``-tap filter, int16 with int16 accumulation."""
    x = T.tensor((outputs + taps - 1,), _t(bits), "x")
    h = T.tensor((taps,), _t(bits), "h", const=True)
    i, k = T.loop(outputs, "i"), T.red_loop(taps, "k")
    s = T.schedule(T.compute("y", (i,), T.sum(x[i + k] * h[k], k)))
    io, ii = s.split(i, 256)
    s.bitlines(ii)
    return s


def gemv(m: int = 61440, k: int = 2048, bits: int = 8, acc: int = 32) -> T.Schedule:
    """Table 5 gemv: y = A·x with A of m x k (stored k-major), int8, int32 accumulation."""
    A = T.tensor((k, m), _t(bits), "A", const=True)
    x = T.tensor((k,), _t(bits), "x")
    i, r = T.loop(m, "i"), T.red_loop(k, "k")
    s = T.schedule(T.compute("y", (i,), T.sum(T.i(acc)(A[r, i]) * T.i(acc)(x[r]), r)))
    io, ii = s.split(i, 256)
    s.bitlines(ii)
    return s


def gemm(m: int = 61440, n: int = 32, k: int = 2048, bits: int = 4, acc: int = 16) -> T.Schedule:
    """Table 5 gemm: C (n x m) = B (n x k) · A (k x m), int4, int16 accumulation."""
    A = T.tensor((k, m), _t(bits), "A")
    B = T.tensor((n, k), _t(bits), "B", const=True)
    i, j, r = T.loop(m, "i"), T.loop(n, "j"), T.red_loop(k, "k")
    s = T.schedule(T.compute("C", (j, i), T.sum(T.i(acc)(A[r, i]) * T.i(acc)(B[j, r]), r)))
    io, ii = s.split(i, 256)
    s.reorder(j, io, ii)
    s.bitlines(ii)
    return s


def conv2d(batch: int = 2, c: int = 256, h: int = 9, w: int = 9, m: int = 256, r: int = 3, s_: int = 3,
           stride: int = 1, bits: int = 8, acc: int = 32, in_signed: bool = True) -> T.Schedule:
    """Table 5 conv2d (valid padding; pad on the host): O = conv(I, W), int8, int32 accumulation."""
    e, f = (h - r) // stride + 1, (w - s_) // stride + 1
    if m > 256 and m % 256:
        raise T.CompileError(f"conv2d: {m} output channels must be <= 256 or a multiple of 256")
    I = T.tensor((batch, c, h, w), _t(bits, in_signed), "I")
    W = T.tensor((c, r, s_, m), _t(bits), "W", const=True)
    b, ee, ff, mm = T.loop(batch, "b"), T.loop(e, "e"), T.loop(f, "f"), T.loop(m, "m")
    cc, rr, ss = T.red_loop(c, "c"), T.red_loop(r, "r"), T.red_loop(s_, "s")
    body = T.i(acc)(I[b, cc, ee * stride + rr, ff * stride + ss]) * T.i(acc)(W[cc, rr, ss, mm])
    sch = T.schedule(T.compute("O", (b, ee, ff, mm), T.sum(body, cc, rr, ss)))
    if m > 256:
        mo, mi = sch.split(mm, 256)
        sch.bitlines(mi)
    else:
        sch.bitlines(mm)
    return sch


def conv2d_windows(batch: int = 2, c: int = 256, h: int = 9, w: int = 9, m: int = 256, r: int = 3, s_: int = 3,
                   bits: int = 8, acc: int = 32) -> T.Schedule:
    """Table 5 conv2d in the pixels-on-bitlines organisation (:mod:`.convwin`; host layout by
    ``convwin.plan(...).pack``/``unpack``)."""
    from . import convwin
    cw = convwin.plan(batch, c, h, w, m, r, s_)
    if cw is None:
        raise T.CompileError(f"conv2d_windows: a {h}x{w} image and its {r}x{s_} window halo exceed a CRAM; "
                             "use conv2d")
    return convwin.schedule(cw, _t(bits), _t(bits), acc)


def hotspot(n: int = 1024, c_cap: float = 0.05, c_pow: float = 0.01) -> T.Schedule:
    """Duality Cache hotspot (one step, fp32): the 5-point stencil on a host-padded (n+2)² grid."""
    t = T.tensor((n + 2, n + 2), T.f32, "t")
    pw = T.tensor((n, n), T.f32, "p")
    i, j = T.loop(n, "i"), T.loop(n, "j")
    c = t[i + 1, j + 1]
    lap = t[i, j + 1] + t[i + 2, j + 1] + t[i + 1, j] + t[i + 1, j + 2] - c * 4.0
    s = T.schedule(T.compute("out", (i, j), c + lap * c_cap + pw[i, j] * c_pow))
    jo, ji = s.split(j, min(n, 256))
    s.bitlines(ji)
    return s


def hotspot3d(n: int = 512, layers: int = 8, c_cap: float = 0.05) -> T.Schedule:
    """Duality Cache hotspot3d (one step, fp32): the 7-point stencil on a host-padded grid."""
    t = T.tensor((layers + 2, n + 2, n + 2), T.f32, "t")
    z, i, j = T.loop(layers, "z"), T.loop(n, "i"), T.loop(n, "j")
    c = t[z + 1, i + 1, j + 1]
    nb = (t[z, i + 1, j + 1] + t[z + 2, i + 1, j + 1] + t[z + 1, i, j + 1] + t[z + 1, i + 2, j + 1]
          + t[z + 1, i + 1, j] + t[z + 1, i + 1, j + 2])
    s = T.schedule(T.compute("out", (z, i, j), c + (nb - c * 6.0) * c_cap))
    jo, ji = s.split(j, min(n, 256))
    s.bitlines(ji)
    return s


def dwt2d(n: int = 1024, part: str = "lo") -> T.Schedule:
    """Duality Cache dwt2d (fp32): one Haar level along the rows, the low or the high half."""
    x = T.tensor((n, n), T.f32, "x")
    i, j = T.loop(n, "i"), T.loop(n // 2, "j")
    a, b = x[i, j * 2], x[i, j * 2 + 1]
    s = T.schedule(T.compute(part, (i, j), ((a + b) if part == "lo" else (a - b)) * 0.5))
    jo, ji = s.split(j, min(n // 2, 256))
    s.bitlines(ji)
    return s


def backprop(n: int = 65536, hidden: int = 16, eta: float = 0.3, momentum: float = 0.3) -> T.Schedule:
    """Duality Cache backprop (fp32): the weight update w + eta·delta[h]·x[i] + momentum·dw of the
    65536 x 16 input layer (the bulk of its work)."""
    w = T.tensor((hidden, n), T.f32, "w")
    dw = T.tensor((hidden, n), T.f32, "dw")
    x = T.tensor((n,), T.f32, "x")
    d = T.tensor((hidden,), T.f32, "delta")
    h, i = T.loop(hidden, "h"), T.loop(n, "i")
    s = T.schedule(T.compute("w_new", (h, i), w[h, i] + d[h] * x[i] * eta + dw[h, i] * momentum))
    io, ii = s.split(i, min(n, 256))
    s.bitlines(ii)
    return s


def gausselim_step(n: int = 256) -> T.Schedule:
    """Duality Cache gausselim (fp32): one elimination step A[i, j] − m[i]·A[k, j] with the pivot
    row k and the multipliers m (one division per row, on the host) given."""
    a = T.tensor((n, n), T.f32, "A")
    r = T.tensor((n,), T.f32, "pivot_row")
    m = T.tensor((n,), T.f32, "m")
    i, j = T.loop(n, "i"), T.loop(n, "j")
    s = T.schedule(T.compute("A_new", (i, j), a[i, j] - m[i] * r[j]))
    jo, ji = s.split(j, min(n, 256))
    s.bitlines(ji)
    return s


#: Duality Cache fp32 kernels (spec §5.5): name → (paper-size builder, test-size builder)
DC_SUITE = {
    "hotspot": (hotspot, lambda: hotspot(32)),
    "hotspot3d": (hotspot3d, lambda: hotspot3d(16, 2)),
    "dwt2d": (dwt2d, lambda: dwt2d(64)),
    "backprop": (backprop, lambda: backprop(512, 4)),
    "gausselim": (gausselim_step, lambda: gausselim_step(64)),
}

#: name → (builder of the Table 5 size, builder of a small functional-test size)
SUITE = {
    "vecadd": (vecadd, lambda: vecadd(256 * 64)),
    "fir": (fir, lambda: fir(256 * 8, 8)),
    "gemv": (gemv, lambda: gemv(512, 64)),
    "gemm": (gemm, lambda: gemm(512, 4, 32)),
    "conv2d": (conv2d_windows, lambda: conv2d_windows(2, 8, 5, 5, 16, 3, 3)),
}

#: Table 5 benchmarks with a compiled program next to the replay in the report (spec §5.6)
COMPILED = ("vadd", "fir", "gemv", "gemm", "conv2d")


def run_compiled_benchmark(name: str, config="base", **options) -> dict:
    """Compile the Table 5 DSL program of a benchmark (report name: ``vadd`` = vecadd) and time it
    (timing only, base configuration unless given): cycles, compile time, distribution.  ``options``
    go to :func:`~nnisa.targets.pimsab.compiler.dsl.build` (e.g. ``adaptive_precision=False``)."""
    import time

    from ..config import load_config
    from ..sim.simulate import simulate
    from .dsl import build
    t0 = time.perf_counter()
    prog = build(SUITE["vecadd" if name == "vadd" else name][0](), config, **options)
    t1 = time.perf_counter()
    cfg = load_config(config).replace(functional=False)
    res = simulate(prog.program, config=cfg, mode="timing")
    return {"cycles": int(res.stats.cycles), "energy_j": float(res.stats.extra["energy_j"]),
            "dram_read_bits": int(res.stats.extra["dram_read_bits"]), "compile_s": round(t1 - t0, 3),
            "sim_s": round(time.perf_counter() - t1, 3), "distribution": prog.report["distribution"],
            "instructions": len(prog.program)}
