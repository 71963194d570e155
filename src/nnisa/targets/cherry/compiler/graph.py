"""Lowering the frontend's float graph to a Cherry plan (spec ``cherry.md`` §6).

Every graph tensor lives on the device as a batch of tiled matrices plus a *view* (see
:mod:`.layout`).  Convolutions become an im2col layout step on the host and a matmul on the
device (§6.7 strategy 2; 1x1/stride-1 convolutions on channels-last activations need no host
step, strategy 1; grouped and depthwise convolutions use a block-diagonal weight matrix);
Gemm/MatMul map to the blocked matmul with the bias as the accumulator's initial value; pooling
uses window tensors and the exact select-max; constants of elementwise operations are
materialised in the other operand's layout at compile time.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ....core.errors import ConfigError, UnsupportedError
from ....core.lowering import OnHost, entry_fn, refusal
from ....core.target import CompileResult
from ....frontend import load_model
from ....frontend.ir import Graph, Node
from ....frontend.prepare import check_graph
from ....frontend.kernels import conv_weight_matrix
from ..config import CherryConfig
from ..sim.element import tile_bytes
from .builder import Builder, DeviceMemoryFull
from .functions import FunctionLowerings
from ..formats.bundle import CompiledModel, write_bundle
from ..layout import conv_out_hw, mat_shape, nhwc, plain, pool_windows, to_matrix

#: a bias matrix up to this many tiles is a constant; larger ones are spread on the device
SMALL_CONST_TILES = 4096


class _Lowering(FunctionLowerings):
    def __init__(self, g: Graph, cfg: CherryConfig, split_k: bool = True):
        self.g = g
        self.cfg = cfg
        self.b = Builder(cfg, split_k)
        self.env: dict[str, tuple[int, dict]] = {}
        self._masked: dict[tuple[float, tuple[int, int, int]], int] = {}

    # helpers -------------------------------------------------------------------------
    def err(self, n: Node, msg: str) -> UnsupportedError:
        return UnsupportedError(msg, where=f"node {n.name} ({n.op})", file=self.g.source)

    def value(self, name: str) -> tuple[int, dict]:
        return self.env[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.g.shape(name))

    def is_const(self, name: str) -> bool:
        return name in self.g.initializers

    def as_view(self, name: str, view: dict) -> int:
        """Tensor ``name`` in ``view`` (a host relayout step when it is stored otherwise)."""
        tid, cur = self.value(name)
        if cur == view:
            return tid
        if cur["kind"] == "plain" and view["kind"] == "plain" and cur["mat"] == view["mat"]:
            return tid
        return self.b.relayout(tid, cur, view)

    def const_like(self, arr: np.ndarray, shape: tuple[int, ...], view: dict) -> int:
        full = np.broadcast_to(np.asarray(arr, np.float32), shape)
        return self.b.const(to_matrix(np.ascontiguousarray(full), view))

    def masked(self, value: float, view: dict) -> int:
        """A constant ``value`` in every valid element of ``view`` (0 in the padding), one per
        value and matrix shape; a single :meth:`Builder.scalar` tile when ``view`` has no padding
        (only elementwise operations take it)."""
        if not self.b.has_padding(mat_shape(view)):
            return self.b.scalar(value)  # one tile, no padding to keep at 0
        key = (float(value), mat_shape(view))
        if key not in self._masked:
            self._masked[key] = self.b.const(np.full(mat_shape(view), value, np.float32))
        return self._masked[key]

    # ops ---------------------------------------------------------------------------------
    def lower(self, n: Node) -> None:
        fn = entry_fn(LOWERINGS[n.op]) if n.op in LOWERINGS else None
        if fn is None:
            raise self.err(n, refusal(LOWERINGS, "Cherry", n.op))
        self.env[n.outputs[0]] = fn(self, n)

    def op_Identity(self, n):
        return self.value(n.inputs[0])

    def _reshape(self, n):
        shape = self.shape(n.outputs[0])
        view = plain(shape)
        tid, cur = self.value(n.inputs[0])
        if cur["kind"] == "plain" and cur["mat"] == view["mat"]:
            return tid, view
        return self.b.relayout(tid, cur, view), view

    op_Reshape = op_Flatten = op_Squeeze = op_Unsqueeze = _reshape

    def op_Conv(self, n):
        a = n.attrs
        xs = self.shape(n.inputs[0])
        if len(xs) != 4:
            raise self.err(n, "only 2-D convolutions are supported")
        w = self.g.initializers.get(n.inputs[1])
        if w is None:
            raise self.err(n, "convolution weights must be constant")
        nb, c, h, wd = xs
        m, g = w.shape[0], a["group"]
        kh, kw = a["kernel"]
        e, f = conv_out_hw(h, wd, a)
        wm = conv_weight_matrix(w.astype(np.float32), g)  # g, K/g, M/g
        kg, mg = wm.shape[1], wm.shape[2]
        wfull = np.zeros((c * kh * kw, m), np.float32)
        for gi in range(g):
            wfull[gi * kg:(gi + 1) * kg, gi * mg:(gi + 1) * mg] = wm[gi]
        tid, cur = self.value(n.inputs[0])
        p = {"kernel": list(a["kernel"]), "strides": list(a["strides"]), "pads": list(a["pads"]),
             "dilations": list(a["dilations"])}
        bias = self.g.initializers.get(n.inputs[2]) if len(n.inputs) > 2 else None
        bias = bias if bias is not None and np.any(bias) else None
        if g == c == m and g > 1:
            return self._depthwise(w, bias, tid, cur, p, (nb, c, e, f))
        if (kh, kw) == (1, 1) and tuple(a["strides"]) == (1, 1) and not any(a["pads"]) and cur["kind"] == "nhwc":
            x = tid  # strategy 1: channels-last activations are already the patch matrix
        else:
            x = self.b.host("im2col", tid, (1, nb * e * f, c * kh * kw), src_view=cur, **p)
        init = None if bias is None else self._bias_rows(bias, nb * e * f)
        out = self.b.matmul(x, self.b.const(wfull[None]), init=init)
        return out, nhwc((nb, m, e, f))

    def _bias_rows(self, bias: np.ndarray, rows: int) -> int:
        """The bias over ``rows`` output rows: a constant matrix while it is small (no device work),
        else spread on the device into a temporary (a constant the size of every activation would
        fill device memory on large images)."""
        row = np.asarray(bias, np.float32).reshape(1, 1, -1)
        rt, ct = -(-rows // self.cfg.sz), -(-row.shape[2] // self.cfg.sz)
        if rt * ct <= SMALL_CONST_TILES:
            return self.b.const(np.broadcast_to(row, (1, rows, row.shape[2])))
        return self.b.broadcast(self.b.const(row), 0, rows)

    def _depthwise(self, w, bias, tid, cur, p, shape):
        """Depthwise convolution without a block-diagonal weight matrix: the window tensor
        (kh·kw, pixels, C) times each window position's weight row (spread on the device), summed
        over the positions."""
        nb, c, e, f = shape
        kk = p["kernel"][0] * p["kernel"][1]
        win = self.b.host("windows", tid, (kk, nb * e * f, c), src_view=cur, fill=0.0, ceil_mode=False, **p)
        rows = self.b.const(np.asarray(w, np.float32).reshape(c, kk).T.reshape(kk, 1, c))
        y = self.b.sum_leading(self.b.elementwise("mul", win, self.b.broadcast(rows, 0, nb * e * f)))
        if bias is not None:
            y = self.b.elementwise("add", y, self._bias_rows(bias, nb * e * f))
        return y, nhwc(shape)

    def _matrix(self, name: str) -> int:
        s = self.shape(name)
        return self.as_view(name, plain(s))

    def op_Gemm(self, n):
        xs = self.shape(n.inputs[0])
        w = self.g.initializers.get(n.inputs[1])
        if w is None or len(xs) != 2:
            raise self.err(n, "Gemm needs a 2-D input and constant weights")
        x = self._matrix(n.inputs[0])
        bias = self.g.initializers.get(n.inputs[2]) if len(n.inputs) > 2 else None
        ys = self.shape(n.outputs[0])
        init = None
        if bias is not None and np.any(bias):
            init = self.b.const(np.broadcast_to(bias.astype(np.float32), ys)[None])
        return self.b.matmul(x, self.b.const(w.astype(np.float32)[None]), init=init), plain(ys)

    def op_MatMul(self, n):
        sa, sb = self.shape(n.inputs[0]), self.shape(n.inputs[1])
        ys = self.shape(n.outputs[0])
        if len(sa) < 2 or len(sb) < 2:
            raise self.err(n, "MatMul operands must have at least 2 dimensions")
        ops = []
        for name, s in ((n.inputs[0], sa), (n.inputs[1], sb)):
            if self.is_const(name):
                ops.append(self.b.const(np.asarray(self.g.initializers[name], np.float32).reshape(mat_shape(plain(s)))))
            else:
                ops.append(self._matrix(name))
        ba, bb = mat_shape(plain(sa))[0], mat_shape(plain(sb))[0]
        if sa[:-2] != sb[:-2] and ba != 1 and bb != 1:
            raise self.err(n, f"MatMul batch broadcast {sa} @ {sb} is not supported")
        return self.b.matmul(ops[0], ops[1]), plain(ys)

    def op_Transpose(self, n):
        perm = list(n.attrs["perm"])
        s = self.shape(n.inputs[0])
        ys = self.shape(n.outputs[0])
        r = len(perm)
        if r >= 2 and perm == list(range(r - 2)) + [r - 1, r - 2]:
            return self.b.transpose(self._matrix(n.inputs[0])), plain(ys)
        tid, cur = self.value(n.inputs[0])
        view = plain(ys)
        return self.b.host("permute", tid, mat_shape(view), src_view=cur, dst_view=view, perm=perm), view

    def op_Relu(self, n):
        tid, view = self.value(n.inputs[0])
        return self.b.elementwise("relu", tid), view

    def _binary(self, n, op):
        x, y, view = self._pair(n)
        return self.b.elementwise(op, x, y), view

    def _pair(self, n):
        """The two operands of a binary node as device tensors of one shape and view (constants
        materialised in the activation's layout, broadcasts spread on the device or the host)."""
        a, c = n.inputs[0], n.inputs[1]
        ys = self.shape(n.outputs[0])
        if self.is_const(a) and self.is_const(c):
            raise self.err(n, "both operands are constant (the frontend should have folded this)")
        if self.is_const(c) or self.is_const(a):
            act, cst = (a, c) if self.is_const(c) else (c, a)
            tid, view = self.value(act)
            if self.shape(act) != ys:
                tid, view = self.b.host("broadcast", tid, mat_shape(plain(ys)), src_view=view,
                                        dst_view=plain(ys)), plain(ys)
            k = self.const_like(self.g.initializers[cst], ys, view)
            x, y = (tid, k) if act == a else (k, tid)
            return x, y, view
        bc = self._device_broadcast(n, a, c, ys)
        if bc is not None:
            return bc
        ta, va = self.value(a)
        if self.shape(a) != ys:
            ta, va = self.b.host("broadcast", ta, mat_shape(plain(ys)), src_view=va, dst_view=plain(ys)), plain(ys)
        tc = self.as_view(c, va) if self.shape(c) == ys else \
            self.b.host("broadcast", self.value(c)[0], mat_shape(va), src_view=self.value(c)[1], dst_view=va)
        return ta, tc, va

    def _device_broadcast(self, n, a, c, ys):
        """x op y with one activation of shape (..., R, 1) or (..., 1, C): in-tile broadcast on the
        device (§6.4) when the other operand already has the output shape."""
        sa, sc = self.shape(a), self.shape(c)
        if len(ys) < 2 or (sa != ys and sc != ys) or sa == sc:
            return None  # same shapes (e.g. (N, C, 1, 1) + (N, C, 1, 1)) need no spreading
        full, part = (a, c) if sa == ys else (c, a)
        sp = self.shape(part)
        if len(sp) != len(ys) or sp[:-2] != ys[:-2]:
            return None
        if sp[-1] == 1 and sp[-2] == ys[-2]:
            axis, count = 1, ys[-1]
        elif sp[-2] == 1 and sp[-1] == ys[-1]:
            axis, count = 0, ys[-2]
        else:
            return None
        spread = self.b.broadcast(self._matrix(part), axis, count)
        whole = self._matrix(full)
        x, y = (whole, spread) if full == a else (spread, whole)
        return x, y, plain(ys)

    def op_Add(self, n):
        return self._binary(n, "add")

    def op_Sub(self, n):
        return self._binary(n, "sub")

    def op_Mul(self, n):
        return self._binary(n, "mul")

    def op_Div(self, n):
        return self._binary(n, "div")

    def op_BatchNormalization(self, n):
        tid, view = self.value(n.inputs[0])
        s = self.shape(n.inputs[0])
        scale = np.asarray(self.g.initializers[n.inputs[1]], np.float32)
        shift = np.asarray(self.g.initializers[n.inputs[2]], np.float32)
        bshape = (1, -1) + (1,) * (len(s) - 2)
        y = self.b.elementwise("mul", tid, self.const_like(scale.reshape(bshape), s, view))
        return self.b.elementwise("add", y, self.const_like(shift.reshape(bshape), s, view)), view

    def op_Sigmoid(self, n):
        tid, view = self.value(n.inputs[0])
        zero, one = self.masked(0.0, view), self.masked(1.0, view)
        e = self.b.elementwise("exp", self.b.elementwise("sub", zero, tid))
        return self.b.elementwise("div", one, self.b.elementwise("add", one, e)), view

    def op_LeakyRelu(self, n):
        tid, view = self.value(n.inputs[0])
        neg = self.b.elementwise("relu", self.b.elementwise("sub", self.masked(0.0, view), tid))
        scaled = self.b.elementwise("mul", neg, self.masked(float(n.attrs["alpha"]), view))
        return self.b.elementwise("sub", self.b.elementwise("relu", tid), scaled), view

    def _pool_windows(self, n, fill=None):
        xs = self.shape(n.inputs[0])
        tid, cur = self.value(n.inputs[0])
        p = {"kernel": list(n.attrs["kernel"]), "strides": list(n.attrs["strides"]), "pads": list(n.attrs["pads"]),
             "dilations": list(n.attrs.get("dilations", (1, 1))), "ceil_mode": bool(n.attrs.get("ceil_mode", False))}
        if fill is not None:
            p["fill"] = fill
        probe = pool_windows(np.zeros((1, 1) + tuple(xs[2:]), np.float32), p)
        kk, pix = probe.shape[0], probe.shape[1]
        win = self.b.host("windows", tid, (kk, xs[0] * pix, xs[1]), src_view=cur, **p)
        ys = self.shape(n.outputs[0])
        return win, kk, nhwc(ys)

    def op_MaxPool(self, n):
        win, _, view = self._pool_windows(n)
        return self.b.max_leading(win), view

    def op_GlobalAveragePool(self, n):
        nb, c, h, w = self.shape(n.inputs[0])
        x = self.as_view(n.inputs[0], plain((nb, c, h, w), (1, nb * c, h * w)))
        s = self.b.reduce(x, 1, "sum")
        view = plain((nb, c, 1, 1), (1, nb * c, 1))
        return self.b.elementwise("mul", s, self.masked(1.0 / (h * w), view)), view


#: the Cherry lowering table: IR op → ``fn(lowering, node)`` (the ``op_*`` methods); the node
#: check, ``nnisa targets --ops`` and the docs come from it
#: data movement the runtime does between device tensors (§5.3): host steps, counted as host_bytes
_HOST_STEPS = {op: "a layout step on the host (§5.3)" for op in ("Concat", "Slice", "Pad", "Resize", "Expand")}
LOWERINGS = {name[3:]: (OnHost(_HOST_STEPS[name[3:]], getattr(_Lowering, name)) if name[3:] in _HOST_STEPS
                        else getattr(_Lowering, name))
             for name in sorted(dir(_Lowering)) if name.startswith("op_")}


def lower_graph(g: Graph, cfg: CherryConfig, split_k: bool = True) -> Builder:
    """Lower a float graph; returns the builder holding the plan.  Every node the table lacks is
    refused at once, before any lowering.  A tensor's device memory is reused as soon as its last
    consumer has been emitted (steps run in order), so the plan needs the peak of live tensors
    plus the constants, not their sum."""
    check_graph(g, "cherry", lambda n, _: refusal(LOWERINGS, "Cherry", n.op), quantized=False)
    lw = _Lowering(g, cfg, split_k)
    for t in g.inputs:
        view = plain(t.shape)
        lw.env[t.name] = (lw.b.input(t.name, view), view)
    uses = Counter(i for n in g.nodes for i in n.inputs)
    keep = {t.name for t in g.outputs}
    freed: set[int] = set()
    for n in g.nodes:
        lw.b.new = []
        first = len(lw.b.plan.steps)
        lw.lower(n)
        _tag_layer(lw.b, n, first)
        for i in n.inputs:
            uses[i] -= 1
        live = {tid for name, (tid, _) in lw.env.items() if uses[name] > 0 or name in keep}
        dead = set(lw.b.new) | {lw.env[i][0] for i in n.inputs if i in lw.env}
        for tid in sorted(dead - live - freed):
            lw.b.free(tid)
            freed.add(tid)
    for t in g.outputs:
        tid, view = lw.env[t.name]
        lw.b.output(t.name, tid, view)
    return lw.b


def _tag_layer(b: Builder, n: Node, first: int) -> None:
    """Attribute the steps ``first..`` and the tensors just allocated to node ``n`` (per-layer
    figures: the runtime sums cycles and actions per layer)."""
    steps = b.plan.steps[first:]
    if not steps and not b.new:
        return  # a pure view change (Reshape of a plain tensor, Identity): no work, no memory
    b.plan.layers.append({"layer": n.name, "op": n.op, "tiles": sum(b.plan.tensors[t]["tiles"] for t in b.new)})
    for s in steps:
        s["layer"] = len(b.plan.layers) - 1


def static_layers(plan, cfg: CherryConfig) -> list[dict[str, Any]]:
    """What the compiler knows per layer before simulation: instructions of its programs, host
    steps, device memory it allocates (tiles x bytes per tile); cycles come from the simulator."""
    tb = tile_bytes(cfg.sz, cfg.element_format)
    rows = [{"layer": m["layer"], "op": m["op"], "memory_bytes": m["tiles"] * tb, "instructions": 0,
             "extra": {"tiles": m["tiles"], "programs": 0, "host_steps": 0}} for m in plan.layers]
    for s in plan.steps:
        if s.get("layer") is None:
            continue
        r = rows[s["layer"]]
        if s["kind"] == "device":
            r["instructions"] += sum(len(plan.programs[i]) for i in s["programs"])
            r["extra"]["programs"] += len(s["programs"])
        else:
            r["extra"]["host_steps"] += 1
    return rows


def _fitting(g: Graph, cfg: CherryConfig, fit_sz: bool,
             split_k: bool = True) -> tuple[Builder, CherryConfig, str | None]:
    """Lower at the configured SZ; when device memory is too small and ``fit_sz``, at the smallest
    larger SZ that fits.  A model that fits nowhere is refused naming the limit, the figure needed
    and what would fit."""
    try:
        return lower_graph(g, cfg, split_k), cfg, None
    except DeviceMemoryFull as first:
        tried = [f"SZ={cfg.sz}: {first.needed}"]
        for sz in (16, 32):
            if sz <= cfg.sz:
                continue
            bigger = cfg.with_(sz=sz)
            try:
                b = lower_graph(g, bigger, split_k)
            except DeviceMemoryFull as exc:
                tried.append(f"SZ={sz}: {exc.needed}")
                continue
            if fit_sz:
                return b, bigger, (f"at SZ={cfg.sz} the model needs more than the {first.limit} device-memory tiles "
                                   f"the device has: compiled at SZ={sz} ({b.plan.dram_tiles} tiles)")
            raise ConfigError(f"{first}; at SZ={sz} it needs {b.plan.dram_tiles} (--arch sz{sz}, or leave "
                              "-O fit_sz=true to let the compiler pick it)") from None
        raise ConfigError(f"the model needs more device memory than Cherry has ({first.limit} tiles): more than "
                          f"{', '.join(tried)} tiles; a larger dram_tiles (up to 131071, the reach of the "
                          "18-bit address formulas) or a smaller input would fit") from None


def compile_network(model: str | Path, cfg: CherryConfig, out_dir: str | Path | None = None,
                    fit_sz: bool = True, split_k: bool = True) -> CompileResult:
    """ONNX → a compiled Cherry model (bundle folder when ``out_dir`` is given)."""
    t0 = time.perf_counter()
    g = load_model(model)
    b, cfg, note = _fitting(g, cfg, fit_sz, split_k)
    cm = CompiledModel(b.plan, cfg)
    report: dict[str, Any] = {"sz": cfg.sz, "element_format": cfg.element_format, **cm.stats(),
                              "compile_s": time.perf_counter() - t0}
    if note:
        report["sz_note"] = note
    report.pop("instruction_mix", None)
    report.pop("units", None)
    cm.report = report
    files = write_bundle(cm, out_dir) if out_dir is not None else {}
    layer_table = static_layers(b.plan, cfg)
    # the runtime takes and gives tensors with their batch axis of one sample
    return CompileResult(program=cm, files=files, report=report, sim_options={"config": cfg}, config=cfg,
                         layer_table=layer_table, samples_per_run=None,  # the simulator batches them itself
                         encode_inputs=lambda x: {k: np.asarray(v)[None] for k, v in x.items()},
                         decode_outputs=lambda y: {k: v[0] if v.shape[:1] == (1,) else v for k, v in y.items()})
