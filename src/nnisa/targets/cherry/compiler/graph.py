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
from pathlib import Path
from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from ....core.lowering import refusal
from ....core.target import CompileResult
from ....frontend import load_model
from ....frontend.ir import Graph, Node
from ....frontend.prepare import check_graph
from ....frontend.kernels import conv_weight_matrix
from ..config import CherryConfig
from .builder import Builder
from ..formats.bundle import CompiledModel, write_bundle
from ..layout import conv_out_hw, mat_shape, nhwc, plain, pool_windows, to_matrix

class _Lowering:
    def __init__(self, g: Graph, cfg: CherryConfig):
        self.g = g
        self.cfg = cfg
        self.b = Builder(cfg)
        self.env: dict[str, tuple[int, dict]] = {}

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
        """A constant ``value`` in every valid element of ``view`` (0 in the padding)."""
        return self.b.const(np.full(mat_shape(view), value, np.float32))

    # ops ---------------------------------------------------------------------------------
    def lower(self, n: Node) -> None:
        fn = LOWERINGS.get(n.op)
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
        if (kh, kw) == (1, 1) and tuple(a["strides"]) == (1, 1) and not any(a["pads"]) and cur["kind"] == "nhwc":
            x = tid  # strategy 1: channels-last activations are already the patch matrix
        else:
            x = self.b.host("im2col", tid, (1, nb * e * f, c * kh * kw), src_view=cur, **p)
        bias = self.g.initializers.get(n.inputs[2]) if len(n.inputs) > 2 else None
        init = None
        if bias is not None and np.any(bias):
            init = self.b.const(np.broadcast_to(bias.astype(np.float32), (1, nb * e * f, m)))
        out = self.b.matmul(x, self.b.const(wfull[None]), init=init)
        return out, nhwc((nb, m, e, f))

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
            return self.b.elementwise(op, x, y), view
        bc = self._device_broadcast(n, a, c, ys, op)
        if bc is not None:
            return bc
        ta, va = self.value(a)
        if self.shape(a) != ys:
            ta, va = self.b.host("broadcast", ta, mat_shape(plain(ys)), src_view=va, dst_view=plain(ys)), plain(ys)
        tc = self.as_view(c, va) if self.shape(c) == ys else \
            self.b.host("broadcast", self.value(c)[0], mat_shape(va), src_view=self.value(c)[1], dst_view=va)
        return self.b.elementwise(op, ta, tc), va

    def _device_broadcast(self, n, a, c, ys, op):
        """x op y with one activation of shape (..., R, 1) or (..., 1, C): in-tile broadcast on the
        device (§6.4) when the other operand already has the output shape."""
        sa, sc = self.shape(a), self.shape(c)
        if len(ys) < 2 or (sa != ys and sc != ys):
            return None
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
        return self.b.elementwise(op, x, y), plain(ys)

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

    def op_Clip(self, n):
        lo, hi = n.attrs["min"], n.attrs["max"]
        if lo != 0 or not np.isfinite(hi):
            raise self.err(n, "only Clip(0, max) (ReLU6-style) is supported")
        tid, view = self.value(n.inputs[0])
        m = self.masked(float(hi), view)
        y = self.b.elementwise("relu", tid)
        return self.b.elementwise("sub", m, self.b.elementwise("relu", self.b.elementwise("sub", m, y))), view

    def op_Softmax(self, n):
        s = self.shape(n.inputs[0])
        if n.attrs["axis"] != len(s) - 1:
            raise self.err(n, "Softmax is supported over the last axis only")
        x = self._matrix(n.inputs[0])
        cols = s[-1]
        mx = self.b.broadcast(self.b.reduce(x, 1, "max"), 1, cols)
        e = self.b.elementwise("exp", self.b.elementwise("sub", x, mx))
        total = self.b.broadcast(self.b.reduce(e, 1, "sum"), 1, cols)
        return self.b.elementwise("div", e, total), plain(s)

    def _pool_windows(self, n, kind):
        xs = self.shape(n.inputs[0])
        tid, cur = self.value(n.inputs[0])
        p = {"kernel": list(n.attrs["kernel"]), "strides": list(n.attrs["strides"]), "pads": list(n.attrs["pads"]),
             "dilations": list(n.attrs.get("dilations", (1, 1))), "ceil_mode": bool(n.attrs.get("ceil_mode", False))}
        probe = pool_windows(np.zeros((1, 1) + tuple(xs[2:]), np.float32), p)
        kk, pix = probe.shape[0], probe.shape[1]
        win = self.b.host("windows", tid, (kk, xs[0] * pix, xs[1]), src_view=cur, **p)
        ys = self.shape(n.outputs[0])
        return win, kk, nhwc(ys)

    def op_MaxPool(self, n):
        win, _, view = self._pool_windows(n, "max")
        return self.b.max_leading(win), view

    def op_AveragePool(self, n):
        if any(n.attrs["pads"]):
            raise self.err(n, "AveragePool with padding is not supported")
        win, kk, view = self._pool_windows(n, "avg")
        s = self.b.sum_leading(win)
        return self.b.elementwise("mul", s, self.masked(1.0 / kk, view)), view

    def op_GlobalAveragePool(self, n):
        nb, c, h, w = self.shape(n.inputs[0])
        x = self.as_view(n.inputs[0], plain((nb, c, h, w), (1, nb * c, h * w)))
        s = self.b.reduce(x, 1, "sum")
        view = plain((nb, c, 1, 1), (1, nb * c, 1))
        return self.b.elementwise("mul", s, self.masked(1.0 / (h * w), view)), view


#: the Cherry lowering table: IR op → ``fn(lowering, node)`` (the ``op_*`` methods); the node
#: check, ``nnisa targets --ops`` and the docs come from it
LOWERINGS = {name[3:]: fn for name, fn in vars(_Lowering).items() if name.startswith("op_")}


def lower_graph(g: Graph, cfg: CherryConfig) -> Builder:
    """Lower a float graph; returns the builder holding the plan.  Every node the table lacks is
    refused at once, before any lowering."""
    check_graph(g, "cherry", lambda n, _: refusal(LOWERINGS, "Cherry", n.op), quantized=False)
    lw = _Lowering(g, cfg)
    for t in g.inputs:
        view = plain(t.shape)
        lw.env[t.name] = (lw.b.input(t.name, view), view)
    for n in g.nodes:
        lw.lower(n)
    for t in g.outputs:
        tid, view = lw.env[t.name]
        lw.b.output(t.name, tid, view)
    return lw.b


def compile_network(model: str | Path, cfg: CherryConfig, out_dir: str | Path | None = None) -> CompileResult:
    """ONNX → a compiled Cherry model (bundle folder when ``out_dir`` is given)."""
    t0 = time.perf_counter()
    g = load_model(model)
    b = lower_graph(g, cfg)
    cm = CompiledModel(b.plan, cfg)
    report: dict[str, Any] = {"sz": cfg.sz, "element_format": cfg.element_format, **cm.stats(),
                              "compile_s": time.perf_counter() - t0}
    report.pop("instruction_mix", None)
    report.pop("units", None)
    cm.report = report
    files = write_bundle(cm, out_dir) if out_dir is not None else {}
    # the runtime takes and gives tensors with their batch axis of one sample
    return CompileResult(program=cm, files=files, report=report, sim_options={"config": cfg}, config=cfg,
                         encode_inputs=lambda x: {k: np.asarray(v)[None] for k, v in x.items()},
                         decode_outputs=lambda y: {k: v[0] if v.shape[:1] == (1,) else v for k, v in y.items()})
