"""SIMDRAM binarized networks as DSL programs (spec §5.5, PIMSAB-S): LeNet, VGG-13, VGG-16.

Binarized values are bits: 1 stands for +1 and 0 for −1.  A binarized dot product of n terms is
``n − 2·popcount(x XOR w)``: the device computes the popcounts of mismatches with ``xor`` and a
bit-serial add tree (the growing accumulator over serial steps, then ``reduce_tile`` across
CRAMs); an activation is 1 iff its dot product is ≥ 0, i.e. iff ``popcount ≤ n // 2``
(**Decision**: sign(0) = +1, and XOR alone gives the mismatch count, so no ``not`` is needed).

Every layer is one or two DSL programs, run back to back through DRAM as the ONNX lowering does
(layers start from an idle machine):

- ``conv``: ``O[m, p] = Σ_{c,r,s} u16(I[c, st·p + r·W + s] XOR K[m, c, r, s])``.  The output
  pixels run on the bitlines in the input's row-major order: p = e·W + f over the full input width
  W (columns f ≥ F are computed and discarded; the index is affine for any stride because
  st·(e·W + f) = st·e·W + st·f).  The host pads the flattened input with zeros.
- ``threshold`` (+ max pool): ``Y[m, i, j] = max_{di,dj} u1((i16(O[m, (ps·i + di)·W + ps·j + dj])
  − (n//2 + 1)) >> 15)`` (the sign bit of ``popcount − n//2 − 1``; max of bits = OR), j on the
  bitlines.  Pooling before or after the sign is the same (sign is monotone).
- ``mv``: ``y[o] = Σ_k u16(x[k] XOR K[k, o])``, the outputs on the bitlines.
- the last layer's popcounts become scores ``n − 2·popcount`` on the host.

Layer sizes: LeNet follows the spec (32 x 32 input, 5 x 5 valid convolutions, 2 x 2 pools, MVs 120,
84, 10).  For VGG-13/16 the spec lists only the layers (conv 3→96, 3x3 pool, conv 96→256, 256→384,
384→384, 384→256, MVs 4096, 4096, 4096); **Decision**: 3 x 3 convolutions, stride 1, 'same'
padding with 0 bits, on the 224 x 224 input; the 3 x 3 pool has stride 3 (224 → 74); the first MV
flattens 256 x 74 x 74.  (Padding with 0 bits means −1 values; cycles do not depend on it.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import lang as T

U1, U16, I16 = T.u(1), T.u(16), T.i(16)


@dataclass
class BinLayer:
    """One binarized layer: ``kind`` conv / pool (threshold + max pool) / mv / threshold."""

    kind: str
    name: str
    channels: int = 1  # conv/mv: inputs (channels, vector length); pool: channels (= conv outputs)
    out: int = 1  # conv: output channels; mv/threshold: outputs
    h: int = 1  # conv: input height (after padding)
    w: int = 1  # conv: input width (after padding) = the row pitch W of its popcount vector
    k: int = 1  # conv kernel / pool window (1: threshold only)
    stride: int = 1
    terms: int = 1  # dot-product length n of the popcounts a threshold reads
    pad: int = 0  # conv: zero bits around the input (host side)

    @property
    def e(self) -> int:
        return (self.h - self.k) // self.stride + 1

    @property
    def f(self) -> int:
        return (self.w - self.k) // self.stride + 1


def _piece(n: int) -> int:
    """Bitline piece of a flattened length: n itself when ≤ 256, else 256 (n rounded up)."""
    return n if n <= 256 else 256


def _padded(n: int) -> int:
    """``n`` rounded up to whole bitline pieces."""
    return -(-n // _piece(n)) * _piece(n)


def _bitlines(sch: T.Schedule, lp: T.Loop) -> T.Schedule:
    """Put ``lp`` on the bitlines (split by 256 when longer)."""
    sch.bitlines(lp, 256)
    return sch


def conv_program(L: BinLayer) -> T.Schedule:
    """Binarized convolution popcounts (see the module docstring); returns the schedule."""
    P = _padded(L.e * L.w)
    length = L.stride * (P - 1) + (L.k - 1) * L.w + L.k
    x = T.tensor((L.channels, length), U1, f"{L.name}_in")
    kw = T.tensor((L.out, L.channels, L.k, L.k), U1, f"{L.name}_w", const=True)
    m, p = T.loop(L.out, "m"), T.loop(P, "p")
    c, r, s = T.red_loop(L.channels, "c"), T.red_loop(L.k, "r"), T.red_loop(L.k, "s")
    body = U16(x[c, L.stride * p + r * L.w + s] ^ kw[m, c, r, s])
    return _bitlines(T.schedule(T.compute(L.name, (m, p), T.sum(body, c, r, s))), p)


def _sign_bit(v: T.Expr, terms: int) -> T.Expr:
    """1 iff the popcount ``v`` ≤ terms // 2 (dot product ≥ 0): the sign of v − terms//2 − 1."""
    return U1((I16(v) - (terms // 2 + 1)) >> 15)


def pool_program(L: BinLayer, conv: BinLayer) -> T.Schedule:
    """Threshold + ``L.k`` x ``L.k`` max pool (stride ``L.stride``) of the popcounts of ``conv``
    (``conv.e`` x ``conv.f`` valid pixels per channel at row pitch ``conv.w``); ``L.k = 1`` is the
    threshold alone."""
    src = T.tensor((L.channels, _padded(conv.e * conv.w)), U16, f"{L.name}_in")
    m = T.loop(L.channels, "m")
    i = T.loop((conv.e - L.k) // L.stride + 1, "i")
    j = T.loop((conv.f - L.k) // L.stride + 1, "j")
    if L.k == 1:
        body = _sign_bit(src[m, i * conv.w + j], L.terms)
        sch = T.schedule(T.compute(L.name, (m, i, j), body, dtype=U1))
    else:
        di, dj = T.red_loop(L.k, "di"), T.red_loop(L.k, "dj")
        v = src[m, (L.stride * i + di) * conv.w + L.stride * j + dj]
        sch = T.schedule(T.compute(L.name, (m, i, j), T.max(_sign_bit(v, L.terms), di, dj), dtype=U1))
    sch.bitlines(j)
    return sch


def mv_program(L: BinLayer) -> T.Schedule:
    """Binarized matrix-vector popcounts ``y[o] = Σ_k u16(x[k] XOR K[k, o])``."""
    n = _padded(L.out)
    x = T.tensor((L.channels,), U1, f"{L.name}_in")
    kw = T.tensor((L.channels, n), U1, f"{L.name}_w", const=True)
    o, k = T.loop(n, "o"), T.red_loop(L.channels, "k")
    return _bitlines(T.schedule(T.compute(L.name, (o,), T.sum(U16(x[k] ^ kw[k, o]), k))), o)


def threshold_program(L: BinLayer) -> T.Schedule:
    """Elementwise threshold of MV popcounts (``L.out`` values, ``L.terms`` terms each)."""
    n = _padded(L.out)
    src = T.tensor((n,), U16, f"{L.name}_in")
    o = T.loop(n, "o")
    return _bitlines(T.schedule(T.compute(L.name, (o,), _sign_bit(src[o], L.terms), dtype=U1)), o)


def lenet() -> list[BinLayer]:
    """LeNet of spec §5.5: conv 1→6 (5 x 5), 2 x 2 pool, conv 6→16, 2 x 2 pool, MVs 120, 84, 10."""
    return [BinLayer("conv", "conv1", 1, 6, 32, 32, 5), BinLayer("pool", "pool1", 6, k=2, stride=2, terms=25),
            BinLayer("conv", "conv2", 6, 16, 14, 14, 5), BinLayer("pool", "pool2", 16, k=2, stride=2, terms=150),
            BinLayer("mv", "fc1", 400, 120), BinLayer("threshold", "act1", out=120, terms=400),
            BinLayer("mv", "fc2", 120, 84), BinLayer("threshold", "act2", out=84, terms=120),
            BinLayer("mv", "fc3", 84, 10)]


def vgg(depth: int = 13) -> list[BinLayer]:
    """VGG-13 / VGG-16 layer lists of spec §5.5 with the sizes of the module docstring's Decision."""
    if depth not in (13, 16):
        raise T.CompileError(f"binarized VGG depth must be 13 or 16, got {depth}")
    body = [(96, 256), (256, 384), (384, 384), (384, 256)]
    if depth == 16:
        body += [(256, 384), (384, 384), (384, 256)]
    out: list[BinLayer] = [BinLayer("conv", "conv1", 3, 96, 226, 226, 3, pad=1),
                           BinLayer("pool", "pool1", 96, k=3, stride=3, terms=27)]
    for n, (ci, co) in enumerate(body, start=2):
        out.append(BinLayer("conv", f"conv{n}", ci, co, 76, 76, 3, pad=1))
        out.append(BinLayer("pool", f"act{n}", co, k=1, terms=ci * 9))
    flat = 256 * 74 * 74
    out += [BinLayer("mv", "fc1", flat, 4096), BinLayer("threshold", "act_fc1", out=4096, terms=flat),
            BinLayer("mv", "fc2", 4096, 4096), BinLayer("threshold", "act_fc2", out=4096, terms=4096),
            BinLayer("mv", "fc3", 4096, 4096)]
    return out


NETWORKS = {"lenet": lenet, "vgg13": lambda: vgg(13), "vgg16": lambda: vgg(16)}


@dataclass
class BinProgram:
    """A compiled layer program and how its input is formed from the previous layer's output."""

    layer: BinLayer
    compiled: Any
    input_name: str
    input_shape: tuple[int, ...]
    weight_name: str | None = None
    weight_shape: tuple[int, ...] | None = None
    report: dict = field(default_factory=dict)


def schedules(layers: list[BinLayer]) -> list[tuple[BinLayer, T.Schedule]]:
    """The DSL schedule of every layer (pools read the previous conv's popcount layout)."""
    out, prev = [], None
    for L in layers:
        if L.kind == "conv":
            s = conv_program(L)
        elif L.kind == "pool":
            s = pool_program(L, prev)
        elif L.kind == "mv":
            s = mv_program(L)
        else:
            s = threshold_program(L)
        out.append((L, s))
        prev = L
    return out


def compile_network(name: str, config: Any = "pimsab_s") -> list[BinProgram]:
    """Compile every layer program of a binarized network.

    Parameters
    ----------
    name
        ``lenet``, ``vgg13`` or ``vgg16``.
    config
        PIMSAB configuration (preset name or config); PIMSAB-S (``pimsab_s``) by default.

    Returns
    -------
    list of BinProgram
        One compiled program per layer program, in execution order.
    """
    from .dsl import build
    if name not in NETWORKS:
        raise T.CompileError(f"unknown binarized network {name!r} (choose {', '.join(NETWORKS)})")
    progs = []
    for L, s in schedules(NETWORKS[name]()):
        t0 = time.perf_counter()
        c = build(s, config)
        ins = {n: shape for n, (shape, _) in c.layout.inputs.items()}
        inp = f"{L.name}_in"
        w = f"{L.name}_w" if f"{L.name}_w" in ins else None
        progs.append(BinProgram(L, c, inp, ins[inp], w, ins.get(w) if w else None,
                                {**c.report, "compile_s_total": time.perf_counter() - t0}))
    return progs


def _feed(p: BinProgram, prev_out: np.ndarray, prev: BinLayer | None) -> np.ndarray:
    """The previous layer's output → this program's input tensor (host layout transform)."""
    L, shape = p.layer, p.input_shape
    if L.kind == "conv":
        chans = prev_out.reshape(L.channels, L.h - 2 * L.pad, L.w - 2 * L.pad)
        chans = np.pad(chans, ((0, 0), (L.pad, L.pad), (L.pad, L.pad)))
        flat = chans.reshape(L.channels, -1)
        return np.pad(flat, ((0, 0), (0, shape[1] - flat.shape[1])))
    if L.kind == "mv":
        v = prev_out.reshape(-1)[:L.channels]
        return v
    if L.kind == "threshold":
        return np.pad(prev_out.reshape(-1), (0, shape[0] - prev_out.size))
    return prev_out  # pool: the conv's popcounts as they are


def run_network(progs: list[BinProgram], image: np.ndarray, weights: dict[str, np.ndarray]) -> dict[str, Any]:
    """Run compiled layer programs in the functional simulator.

    Parameters
    ----------
    progs
        From :func:`compile_network`.
    image
        Bits (0/1) of shape ``channels x h x w`` (before padding).
    weights
        Bits by layer name: conv ``out x in x k x k``, mv ``in x out``.

    Returns
    -------
    dict
        Every layer's output by layer name (popcounts of conv/mv layers, bits of pools and
        thresholds) and ``scores``: n − 2·popcount of the last layer (its dot products).
    """
    outs: dict[str, Any] = {}
    cur, prev = np.asarray(image, np.int64), None
    for p in progs:
        L = p.layer
        vals = {p.input_name: _feed(p, cur, prev)}
        if p.weight_name:
            w = np.asarray(weights[L.name], np.int64)
            vals[p.weight_name] = np.pad(w, [(0, a - b) for a, b in zip(p.weight_shape, w.shape)])
        res, _ = p.compiled.run(vals)
        cur = res[L.name]
        if L.kind == "mv":
            cur = cur[:L.out]
        outs[L.name] = cur
        prev = L
    last = progs[-1].layer
    outs["scores"] = last.channels - 2 * outs[last.name].astype(np.int64)
    return outs


def time_network(progs: list[BinProgram]) -> dict[str, Any]:
    """Time every layer program (timing only, each from an idle machine; `simulator` cycle mode).

    Parameters
    ----------
    progs
        From :func:`compile_network`.

    Returns
    -------
    dict
        ``layers`` (per program: cycles, dynamic energy, instructions, distribution, CPU seconds of
        the simulation), the latency ``cycles`` (sum: layers back to back), ``energy_j`` and
        ``time_us`` at 1.5 GHz.
    """
    from ..sim.simulate import simulate
    rows, total, energy = [], 0, 0.0
    for p in progs:
        t0 = time.process_time()
        r = simulate(p.compiled.program, config=p.compiled.config.replace(functional=False),
                            mode="timing").stats
        rows.append({"layer": p.layer.name, "kind": p.layer.kind, "cycles": int(r.cycles),
                     "energy_j": float(r.extra["energy_j"]), "instructions": len(p.compiled.program),
                     "distribution": p.compiled.report["distribution"], "sim_cpu_s": time.process_time() - t0})
        total += int(r.cycles)
        energy += float(r.extra["energy_j"])
    return {"layers": rows, "cycles": total, "energy_j": energy, "time_us": total / 1.5e3}


__all__ = ["BinLayer", "BinProgram", "NETWORKS", "lenet", "vgg", "schedules", "compile_network", "run_network",
           "time_network", "conv_program", "pool_program", "mv_program", "threshold_program"]
