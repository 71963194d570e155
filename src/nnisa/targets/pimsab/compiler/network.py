"""ONNX models on PIMSAB (spec §4.11): the frontend's quantized graph, lowered layer by layer to DSL programs.

The model is quantized by the frontend (:func:`nnisa.frontend.quantize`, power-of-two scales,
per-tensor weights: spec Decision 13); :func:`nnisa.frontend.evaluate_quantized` is the reference.
Every device layer is one or two DSL programs that run back to back through DRAM, each from an
idle machine (as the artifact sums per-layer runs):

- Conv (group 1): the padded input is laid out on the host; O[e, f, m] = Σ x·w with the output
  channels on the bitlines (i32 accumulation, adaptive precision), or, when the model estimates it
  faster, the pixels on the bitlines with shifted windows (:mod:`.convwin`; strides by input
  phases, large images in chunks); then a requantization program
  y = clamp((acc + bias + 2^(s−1)) >> s) (``add`` with the bias vector, ``add_const`` for the
  rounding, a free right shift, ``min``/``max`` against constant rows).
- Gemm: y[n] = Σ_k x[k]·W[k, n] with the outputs on the bitlines, then the same requantization.
- MaxPool: a ``max`` reduction over the window loops (host padding with the smallest integer).
- GlobalAveragePool: a sum over the pixels, then the division rounding half away from zero by a
  reciprocal multiply (``mul_const``), a free right shift and the sign by predication (``select``).
- Relu / Clip (standalone), Add / Sub (residuals with the frontend's input rescaling): elementwise.
- Host (0 device cycles): layout ops (Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Pad, Concat,
  Identity) and the documented fallbacks (AveragePool, Softmax, lookup-table
  activations, Mul, MatMul of two activations, grouped or per-channel requantized layers), all
  evaluated with the frontend's integer semantics (:func:`nnisa.frontend.qeval.run_qnode`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ....core.lowering import OnHost
from ....frontend.prepare import QUANTIZABLE
from ....frontend.qeval import run_qnode
from ....frontend.quant import QGraph, QNode
from ..config import PimsabConfig
from . import convwin, lang
from . import dsl as T
from .model import analyse
from .search import search

HOST_LAYOUT = ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Pad", "Concat", "Identity")


@dataclass
class Program:
    """One compiled DSL program of a layer and how it gets its inputs."""

    compiled: T.Compiled
    feed: Callable[[dict], dict]  # layer env → tensor values
    role: str


@dataclass
class Layer:
    node: QNode
    programs: list[Program] = field(default_factory=list)
    finish: Callable[[dict], np.ndarray] | None = None  # program outputs → the node's output (NCHW)
    host_reason: str = ""

    @property
    def on_device(self) -> bool:
        return bool(self.programs)


def _t(bits: int) -> lang.DType:
    return lang.i(bits)


def _requant_program(name: str, shape: tuple[int, ...], bits_acc: int, bias: np.ndarray | None, shift: int,
                     clamp: tuple[int, int], cfg: PimsabConfig, bias_axis_last: bool = True) -> T.Compiled:
    """y = clamp(rshift_round(acc + bias, shift)) on a (rows, groups, cols ≤ 256) layout; the bias is
    indexed by (group, col)."""
    rows, groups, cols = shape
    acc = T.tensor(shape, _t(bits_acc), name + "_acc")
    x, z, y = T.loop(rows, "x"), T.loop(groups, "z"), T.loop(cols, "y")
    e: Any = acc[x, z, y]
    if bias is not None and np.any(bias):
        bt = T.tensor((groups, cols), _t(bits_acc), name + "_bias", const=True)
        e = e + bt[z, y]
    if shift > 0:
        e = (e + (1 << (shift - 1))) >> shift
    elif shift < 0:
        e = e << -shift
    lo, hi = clamp
    e = T.maximum(T.minimum(e, hi), lo)
    bits = max(int(hi).bit_length(), int(-lo - 1).bit_length()) + 1
    s = T.schedule(T.compute(name, (x, z, y), e, dtype=_t(max(bits, 2))))
    s.bitlines(y)
    return T.build(s, cfg)


def _pad(x: np.ndarray, pads, value: int) -> np.ndarray:
    t, l, b, r = pads[0], pads[1], pads[2], pads[3]
    return np.pad(x, ((0, 0), (t, b), (l, r)), constant_values=value)


class Lowering:
    """Compiles the device layers of a quantized graph; see the module docstring."""

    def __init__(self, qg: QGraph, cfg: PimsabConfig) -> None:
        self.qg, self.cfg = qg, cfg
        self.layers: list[Layer] = []

    def lower(self) -> list[Layer]:
        for n in self.qg.nodes:
            entry = LOWERINGS.get(n.op) or _fallback(n.op)
            layer = Layer(n)
            reason = self._host_reason(n)
            if isinstance(entry, OnHost) or reason:
                layer.host_reason = reason or entry.why
            else:
                entry(self, n, layer)
            self.layers.append(layer)
        return self.layers

    def _host_reason(self, n: QNode) -> str:
        if n.out_bits == 0:
            return "float tail after Softmax (host)"
        if n.op in ("Conv", "Gemm") and (n.requant is None or np.ndim(n.requant.shift) and
                                          len(set(np.asarray(n.requant.shift).ravel().tolist())) > 1):
            return "per-channel requantization: host fallback"
        if n.op in ("Conv", "Gemm") and not n.requant.is_pow2:
            return "multiplier requantization: host fallback"
        if n.op == "Conv" and n.attrs.get("group", 1) != 1:
            return "grouped convolution: host fallback"
        if n.op == "Conv" and tuple(n.attrs.get("dilations", (1, 1))) != (1, 1):
            return "dilated convolution: host fallback"
        return ""

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.qg.tensors[name].shape)

    # ------------------------------------------------------------------ layers
    def _conv(self, n: QNode, layer: Layer) -> None:
        _, C, H, W = self.shape(n.inputs[0])
        w = np.asarray(n.weight, np.int64)  # (M, C, kh, kw)
        M, _, kh, kw = w.shape
        sh, sw = n.attrs["strides"]
        pads = n.attrs["pads"]
        Hp, Wp = H + pads[0] + pads[2], W + pads[1] + pads[3]
        E, F = (Hp - kh) // sh + 1, (Wp - kw) // sw + 1
        cfg = self.cfg
        if M > cfg.cram_cols and M % cfg.cram_cols:
            layer.host_reason = f"{M} output channels (not a multiple of {cfg.cram_cols}): host fallback"
            return
        xt = T.tensor((C, Hp, Wp), _t(n.in_bits[0]), n.name + "_x")
        wt = T.tensor((C, kh, kw, M), _t(n.w_bits), n.name + "_w", const=True)
        e, f, m = T.loop(E, "e"), T.loop(F, "f"), T.loop(M, "m")
        c, r, s_ = T.red_loop(C, "c"), T.red_loop(kh, "r"), T.red_loop(kw, "s")
        body = T.i32(xt[c, e * sh + r, f * sw + s_]) * T.i32(wt[c, r, s_, m])
        sch = T.schedule(T.compute(n.name + "_acc", (e, f, m), T.sum(body, c, r, s_)))
        sch.bitlines(m, cfg.cram_cols)
        w_dev = w.transpose(1, 2, 3, 0)
        if self._conv_windows(n, layer, sch, (C, Hp, Wp, M, kh, kw, max(sh, sw)), pads, w_dev):
            return
        conv = T.build(sch, cfg)
        x_name = n.inputs[0]
        layer.programs.append(Program(conv, lambda env: {xt.name: _pad(env[x_name][0], pads, 0), wt.name: w_dev},
                                      "conv"))
        self._requant(n, layer, E * F, M, conv, lambda out: out.reshape(E, F, M).transpose(2, 0, 1)[None])

    def _estimate(self, sch: lang.Schedule) -> float:
        """Estimated cycles of the best distribution of a schedule (search only, no code generation)."""
        try:
            return search(analyse(sch, self.cfg), self.cfg)[0].cycles
        except lang.CompileError:
            return float("inf")

    def _conv_windows(self, n: QNode, layer: Layer, direct: lang.Schedule, shape: tuple, pads, w_dev) -> bool:
        """The pixels-on-bitlines program (:mod:`.convwin`) when it applies and the model estimates it
        faster than ``direct`` (output channels on the bitlines); True if it was chosen."""
        C, Hp, Wp, M, kh, kw, stride = shape
        cw = convwin.plan(1, C, Hp, Wp, M, kh, kw, stride, self.cfg.cram_cols)
        if cw is None:
            return False
        acc = n.name + "_acc"
        sch = convwin.schedule(cw, _t(n.in_bits[0]), _t(n.w_bits), 32, acc, n.name + "_", self.cfg.crams_per_tile)
        if self._estimate(sch) >= self._estimate(direct):
            return False
        win = T.build(sch, self.cfg)
        x_name = n.inputs[0]
        layer.programs.append(Program(win, lambda env: {n.name + "_I": cw.pack(_pad(env[x_name][0], pads, 0)[None]),
                                                        n.name + "_W": cw.pack_weights(w_dev)}, "conv"))
        E, F = cw.out_hw
        self._requant(n, layer, E * F, M, win, lambda out: out.reshape(E, F, M).transpose(2, 0, 1)[None],
                      lambda env: cw.unpack(env[acc])[0].transpose(1, 2, 0))
        return True

    def _gemm(self, n: QNode, layer: Layer) -> None:
        w = np.asarray(n.weight, np.int64)
        K, N0 = w.shape
        cfg = self.cfg
        N = N0 if N0 <= cfg.cram_cols else -(-N0 // cfg.cram_cols) * cfg.cram_cols  # zero-padded outputs
        w = np.pad(w, ((0, 0), (0, N - N0)))
        xt = T.tensor((K,), _t(n.in_bits[0]), n.name + "_x")
        wt = T.tensor((K, N), _t(n.w_bits), n.name + "_w", const=True)
        j, k = T.loop(N, "n"), T.red_loop(K, "k")
        sch = T.schedule(T.compute(n.name + "_acc", (j,), T.sum(T.i32(xt[k]) * T.i32(wt[k, j]), k)))
        sch.bitlines(j, cfg.cram_cols)
        g = T.build(sch, cfg)
        x_name = n.inputs[0]
        layer.programs.append(Program(g, lambda env: {xt.name: env[x_name].reshape(-1), wt.name: w}, "gemm"))
        self._requant(n, layer, 1, N, g, lambda out: out.reshape(1, N)[:, :N0])

    def _requant(self, n: QNode, layer: Layer, rows: int, channels: int, acc_prog: T.Compiled, finish,
                 acc_view: Callable[[dict], np.ndarray] | None = None) -> None:
        """The requantization program of a Conv/Gemm accumulator laid out as (rows, channels)
        (``acc_view``: env → that layout, when the accumulator program's output is laid out otherwise)."""
        shift = int(np.asarray(n.requant.shift).ravel()[0])
        bias = None if n.bias is None else np.asarray(n.bias, np.int64)
        if bias is not None and len(bias) < channels:
            bias = np.pad(bias, (0, channels - len(bias)))
        cols = min(channels, self.cfg.cram_cols)
        shape = (rows, channels // cols, cols)
        rq = _requant_program(n.name + "_y", shape, 32, bias, shift, n.clamp, self.cfg)
        acc_name = acc_prog.schedule.op.name
        inputs = {n.name + "_y_bias": bias.reshape(shape[1:])} if bias is not None and np.any(bias) else {}
        acc_view = acc_view or (lambda env: env[acc_name])
        layer.programs.append(Program(rq, lambda env: {n.name + "_y_acc": acc_view(env).reshape(shape), **inputs},
                                      "requant"))
        layer.finish = lambda env: finish(env[n.name + "_y"])

    def _maxpool(self, n: QNode, layer: Layer) -> None:
        _, C, H, W = self.shape(n.inputs[0])
        a = n.attrs
        if a.get("ceil_mode") or tuple(a.get("dilations", (1, 1))) != (1, 1) or C > self.cfg.cram_cols:
            layer.host_reason = "MaxPool with ceil_mode/dilation or > 256 channels: host fallback"
            return
        kh, kw = a["kernel"]
        sh, sw = a["strides"]
        pads = a["pads"]
        Hp, Wp = H + pads[0] + pads[2], W + pads[1] + pads[3]
        E, F = (Hp - kh) // sh + 1, (Wp - kw) // sw + 1
        bits = n.in_bits[0]
        xt = T.tensor((C, Hp, Wp), _t(bits), n.name + "_x")
        e, f, c = T.loop(E, "e"), T.loop(F, "f"), T.loop(C, "c")
        r, s_ = T.red_loop(kh, "r"), T.red_loop(kw, "s")
        sch = T.schedule(T.compute(n.name + "_y", (e, f, c), T.max(xt[c, e * sh + r, f * sw + s_], r, s_)))
        sch.bitlines(c)
        prog = T.build(sch, self.cfg)
        lo = -(1 << (bits - 1))
        x_name = n.inputs[0]
        layer.programs.append(Program(prog, lambda env: {xt.name: _pad(env[x_name][0], pads, lo)}, "maxpool"))
        layer.finish = lambda env: env[n.name + "_y"].transpose(2, 0, 1)[None]

    def _globalaveragepool(self, n: QNode, layer: Layer) -> None:
        """Σ over the pixels (channels on the bitlines), then the frontend's division rounding half away
        from zero: sign(S)·floor((|S| + n//2)·m / 2^k) with m = ceil(2^k / n), k large enough for the
        sum's range (exact), the sign by predication on the sum's sign row."""
        _, C, H, W = self.shape(n.inputs[0])
        cols = self.cfg.cram_cols
        if C > cols and C % cols:
            layer.host_reason = f"GlobalAveragePool over {C} channels (not a multiple of {cols}): host fallback"
            return
        cnt, bits = H * W, n.in_bits[0]
        ws = (cnt << (bits - 1)).bit_length() + 1
        xt = T.tensor((C, cnt), _t(bits), n.name + "_x")
        c, p = T.loop(C, "c"), T.red_loop(cnt, "p")
        sch = T.schedule(T.compute(n.name + "_sum", (c,), T.sum(T.i(ws)(xt[c, p]), p), dtype=_t(ws)))
        sch.bitlines(c, cols)
        total = T.build(sch, self.cfg)
        h = cnt // 2
        a_max = (cnt << (bits - 1)) + h
        k = (a_max * cnt).bit_length() + 1
        m = -(-(1 << k) // cnt)
        if (a_max * m).bit_length() >= 63:
            layer.host_reason = "GlobalAveragePool: reciprocal too wide: host fallback"
            return
        st = T.tensor((C,), _t(ws), n.name + "_s")
        c2 = T.loop(C, "c")
        S = st[c2]
        sign = S >> (ws - 1)
        q = (T.i((a_max * m).bit_length() + 1)(T.select(sign, 0 - S, S) + h) * m) >> k
        sch2 = T.schedule(T.compute(n.name + "_y", (c2,), T.select(sign, 0 - q, q), dtype=_t(bits)))
        sch2.bitlines(c2, cols)
        div = T.build(sch2, self.cfg)
        x_name = n.inputs[0]
        layer.programs.append(Program(total, lambda env: {xt.name: env[x_name][0].reshape(C, cnt)}, "sum"))
        layer.programs.append(Program(div, lambda env: {st.name: env[n.name + "_sum"]}, "divide"))
        layer.finish = lambda env: env[n.name + "_y"].reshape(1, C, 1, 1)

    def _elementwise(self, n: QNode, layer: Layer, build_expr, names: list[str]) -> None:
        shape = self.shape(n.outputs[0])
        size = int(np.prod(shape))
        cols = self.cfg.cram_cols
        rows = -(-size // cols)
        tens = [T.tensor((rows, cols), _t(bits), f"{n.name}_in{k}") for k, bits in enumerate(n.in_bits)]
        x, y = T.loop(rows, "x"), T.loop(cols, "y")
        expr = build_expr([t[x, y] for t in tens])
        lo, hi = n.clamp
        expr = T.maximum(T.minimum(expr, hi), lo)
        bits = max(int(hi).bit_length(), int(-lo - 1).bit_length()) + 1
        sch = T.schedule(T.compute(n.name + "_y", (x, y), expr, dtype=_t(bits)))
        sch.bitlines(y)
        prog = T.build(sch, self.cfg)

        def feed(env):
            out = {}
            for t, nm in zip(tens, names):
                v = np.zeros(rows * cols, np.int64)
                v[:size] = np.broadcast_to(env[nm], shape).reshape(-1)
                out[t.name] = v.reshape(rows, cols)
            return out
        layer.programs.append(Program(prog, feed, n.op.lower()))
        layer.finish = lambda env: env[n.name + "_y"].reshape(-1)[:size].reshape(shape)

    def _relu(self, n: QNode, layer: Layer) -> None:
        self._elementwise(n, layer, lambda a: a[0], [n.inputs[0]])


    def _add(self, n: QNode, layer: Layer) -> None:
        if n.const is not None or not n.requant.is_pow2 or any(not r.is_pow2 or np.ndim(r.shift)
                                                                for r in n.input_requants):
            layer.host_reason = f"{n.op} with a constant or non-pow2 rescaling: host fallback"
            return

        def rs(v, r):
            s = int(np.asarray(r.shift).ravel()[0])
            v = T.i32(v)
            return (v + (1 << (s - 1))) >> s if s > 0 else (v << -s if s < 0 else v)
        out_shift = int(np.asarray(n.requant.shift).ravel()[0])

        def expr(a):
            u, v = rs(a[0], n.input_requants[0]), rs(a[1], n.input_requants[1])
            acc = u + v if n.op == "Add" else u - v
            return (acc + (1 << (out_shift - 1))) >> out_shift if out_shift > 0 else \
                (acc << -out_shift if out_shift < 0 else acc)
        self._elementwise(n, layer, expr, list(n.inputs[:2]))



@dataclass
class NetRun:
    outputs: dict[str, np.ndarray]
    layers: list[dict]
    cycles: int = 0
    energy_j: float = 0.0
    instructions: int = 0


def run_network(qg: QGraph, layers: list[Layer], qinputs: dict[str, np.ndarray], *, mode: str = "functional",
                cfg: PimsabConfig | None = None) -> NetRun:
    """Run the lowered graph on integer inputs (batch 1): device layers in the simulator, the rest
    on the host.  ``mode="both"`` also times each program; ``"timing"`` only times (no values).
    Values come from the single-sample reference machine (:func:`run_network_batch`: many at once)."""
    return _run_network(qg, layers, [qinputs], mode, batched=False)[0]


def run_network_batch(qg: QGraph, layers: list[Layer], qinputs: list[dict[str, np.ndarray]], *,
                      mode: str = "functional") -> list[NetRun]:
    """:func:`run_network` for many samples: each device program runs once for all of them (a
    batched functional machine, :mod:`..sim.batch`; with ``mode="both"`` one timing run); host
    layers run per sample.  One :class:`NetRun` per sample (cycles and layer rows shared)."""
    return _run_network(qg, layers, list(qinputs), mode, batched=True)


def _run_network(qg: QGraph, layers: list[Layer], qinputs: list[dict[str, np.ndarray]], mode: str,
                 batched: bool) -> list[NetRun]:
    envs: list[dict[str, np.ndarray]] = [{k: np.asarray(v, np.int64) for k, v in q.items()} for q in qinputs]
    rows, total_c, total_e, total_i = [], 0, 0.0, 0
    for L in layers:
        n = L.node
        row: dict[str, Any] = {"layer": n.name, "op": n.op, "device": L.on_device, "cycles": 0, "energy_j": 0.0}
        if not L.on_device:
            if mode != "timing":
                for env in envs:
                    env[n.outputs[0]] = run_qnode(n, [env[i] for i in n.inputs if i in env], qg)
            row["note"] = L.host_reason
        else:
            for p in L.programs:
                if mode == "timing":
                    from ..sim.simulate import simulate
                    res = simulate(p.compiled.program, config=p.compiled.config.replace(functional=False),
                                          mode="timing")
                    outs = [{} for _ in envs]
                elif batched:
                    outs, res = p.compiled.run_batch([p.feed(env) for env in envs], mode=mode)
                else:
                    out, res = p.compiled.run(p.feed(envs[0]), mode=mode)
                    outs = [out]
                for env, out in zip(envs, outs):
                    env.update(out)
                if mode != "functional":
                    row["cycles"] += int(res.stats.cycles)
                    row["energy_j"] += float(res.stats.extra["energy_j"])
                row.setdefault("programs", []).append({"role": p.role, "distribution":
                                                       p.compiled.report["distribution"],
                                                       "cycles": int(res.stats.cycles or 0)})
                total_i += len(p.compiled.program)
            if mode != "timing":
                for env in envs:
                    env[n.outputs[0]] = L.finish(env)
        total_c += row["cycles"]
        total_e += row["energy_j"]
        rows.append(row)
    return [NetRun({t.name: env[t.name] for t in qg.outputs if t.name in env}, rows, total_c, total_e, total_i)
            for env in envs]


def _fallback(op: str) -> OnHost:
    return OnHost(f"{op}: host fallback (frontend integer semantics)")


#: the PIMSAB lowering table: IR op → ``fn(lowering, node, layer)`` for the layers compiled to device
#: programs; layout ops and every other op with integer semantics run on the host (the frontend's
#: integer reference).  ``nnisa targets --ops`` and the docs come from it.
LOWERINGS = {
    **{op: _fallback(op) for op in sorted(QUANTIZABLE)}, **dict.fromkeys(HOST_LAYOUT, OnHost("layout op (host)")),
    "Conv": Lowering._conv, "Gemm": Lowering._gemm, "MaxPool": Lowering._maxpool,
    "GlobalAveragePool": Lowering._globalaveragepool, "Relu": Lowering._relu, "Clip": Lowering._relu,
    "Add": Lowering._add, "Sub": Lowering._add,
}


def lower_model(qg: QGraph, cfg: PimsabConfig) -> tuple[list[Layer], float]:
    t0 = time.perf_counter()
    layers = Lowering(qg, cfg).lower()
    return layers, time.perf_counter() - t0
