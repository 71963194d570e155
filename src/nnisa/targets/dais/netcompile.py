"""Quantized networks → one DAIS program (spec §8.5/§8.6, restricted to what the frontend emits).

Input: the frontend's pow2-quantized :class:`~nnisa.frontend.quant.QGraph`.  Supported nodes:
Gemm (+ fused ReLU/Clip clamp), Relu, Clip, Sigmoid/Tanh/LeakyRelu (lookup tables), Flatten,
Reshape.  The program reads the **quantized integer inputs** ``q_x`` and returns the integer
outputs ``q_y`` of ``evaluate_quantized`` bit-exactly.

Every activation element is a builder slot whose real value is ``q · 2^e`` (``e`` per element,
so per-channel requant shifts cost nothing: they are folded into the next layer's weights as
``W · 2^-e``).  Per Gemm column: CMVM (shared adders across the layer), opcode 4 adds
``bias + 2^(s-1)`` (round half up), opcode 3 floor-shifts by ``s``, and ``max``/``min`` muxes
(opcode 6 keyed by a subtraction) saturate to the clamp.  Every op's dtype comes from the exact
integer range of its value, so no op can wrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.errors import UnsupportedError
from ...core.target import CompileResult
from .cmvm import CMVMCompiler, _to_int_matrix
from .program import Program, ProgramBuilder, minimal_kif


@dataclass
class _Act:
    slot: int
    e: int    # real value = q · 2^e
    lo: int   # range of q
    hi: int
    f: int    # the slot's dtype f


class _Net:
    def __init__(self, n_in: int, bits: int, method: str, max_depth):
        self.b = ProgramBuilder(n_in)
        self.method, self.max_depth = method, max_depth
        self.layers: list[dict] = []
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        self.acts = [_Act(self.b.add_op(-1, j, -1, 0, (1, bits - 1, 0)), 0, lo, hi, 0) for j in range(n_in)]
        self._consts: dict = {}

    def _dt(self, lo: int, hi: int, f: int):
        """dtype holding integers ``[lo, hi]`` in units of ``2^-f``."""
        if lo == hi == 0:
            return (0, -f if f < 0 else 0, f) if f <= 0 else (0, 1 - f, f)
        k, i, ff = minimal_kif(lo, hi, 1)
        return (k, i - f, f)

    def const(self, v: int, f: int) -> int:
        key = (v, f)
        if key not in self._consts:
            self._consts[key] = self.b.add_op(5, -1, -1, v, self._dt(v, v, f))
        return self._consts[key]

    def clamp(self, a: _Act, lo: int, hi: int) -> _Act:
        """Saturate ``q`` to ``[lo, hi]`` with MSB muxes (opcode 6) keyed by subtractions."""
        F = max(a.f, -a.e)
        u = 1 << (a.e + F)  # q → integer at resolution F
        cur = a
        if cur.lo < lo:
            c = self.const(lo * u, F)
            key = self.b.add_op(1, cur.slot, c, 0, self._dt((cur.lo - lo) * u, (cur.hi - lo) * u, F))
            nlo, nhi = max(cur.lo, lo), max(cur.hi, lo)
            s = self.b.add_op(6, c, cur.slot, key, self._dt(nlo * u, nhi * u, F))
            cur = _Act(s, a.e, nlo, nhi, F)
        if cur.hi > hi:
            c = self.const(hi * u, F)
            key = self.b.add_op(1, c, cur.slot, 0, self._dt((hi - cur.hi) * u, (hi - cur.lo) * u, F))
            nlo, nhi = min(cur.lo, hi), min(cur.hi, hi)
            s = self.b.add_op(6, c, cur.slot, key, self._dt(nlo * u, nhi * u, F))
            cur = _Act(s, a.e, nlo, nhi, F)
        return cur

    def gemm(self, node) -> None:
        W = np.asarray(node.weight, dtype=np.int64)
        K, N = W.shape
        if len(self.acts) != K:
            raise UnsupportedError(f"Gemm expects {K} inputs, got {len(self.acts)}", where=f"node {node.name} (Gemm)")
        req = node.requant
        mult = np.broadcast_to(np.asarray(req.multiplier, np.int64), (N,))
        shift = np.broadcast_to(np.asarray(req.shift, np.int64), (N,))
        if np.any(mult != 1):
            raise UnsupportedError("DAIS needs scale_mode='pow2' (requant multipliers must be 1)",
                                   where=f"node {node.name} (Gemm)")
        bias = np.broadcast_to(np.asarray(node.bias if node.bias is not None else 0, np.int64), (N,))
        # fold each input's 2^e into its weight row, so the CMVM output is the integer accumulator
        Wf = W.astype(np.float64) * np.array([2.0 ** -a.e for a in self.acts])[:, None]
        M, F0 = _to_int_matrix(Wf)
        n_before = len(self.b)
        ins = [(a.slot, *_kif_of(self.b, a.slot)) for a in self.acts]
        # the pure-Python CSE is quadratic in terms per column: big layers fall back to adder trees
        method = self.method if K * N <= 16384 else "dummy"
        comp = CMVMCompiler(self.b, ins, method=method, max_depth=self.max_depth)
        cols = comp.solve(M)
        qlo = np.array([a.lo for a in self.acts], dtype=object)
        qhi = np.array([a.hi for a in self.acts], dtype=object)
        out = []
        for c in range(N):
            wc = W[:, c].astype(object)
            alo = int(np.sum(np.where(wc > 0, wc * qlo, wc * qhi)))
            ahi = int(np.sum(np.where(wc > 0, wc * qhi, wc * qlo)))
            s = int(shift[c])
            add = int(bias[c]) + ((1 << (s - 1)) if s > 0 else 0)
            if cols[c] is None:
                v = self.const(0, 0)
                fv = 0
            else:
                slot, sh, neg = cols[c]
                sh -= F0
                fv = int(self.b._ops[slot][6])
                if sh or neg:  # materialise ±v·2^sh as 0 ± v·2^sh (keeps the value exact)
                    z = self.const(0, max(fv - sh, 0))
                    fz = max(fv - sh, 0)
                    fv = max(fz, fv - sh)
                    lo_, hi_ = (alo, ahi)
                    slot = self.b.add_op(1 if neg else 0, z, slot, sh, self._dt(lo_ << fv, hi_ << fv, fv))
                v = slot
            fb = max(fv, 0)
            blo, bhi = alo + add, ahi + add
            v = self.b.add_op(4, v, -1, add << fb, self._dt(blo << fb, bhi << fb, fb))
            if s > 0:  # floor shift: q = (acc + bias + 2^(s-1)) >> s
                qlo_, qhi_ = blo >> s, bhi >> s
                v = self.b.add_op(3, v, -1, 0, self._dt(qlo_, qhi_, -s))
                act = _Act(v, s, qlo_, qhi_, -s)
            else:  # exact left shift: only the bookkeeping exponent changes
                act = _Act(v, s, blo << -s, bhi << -s, fb)
            out.append(self.clamp(act, *node.clamp))
        self.acts = out
        st_adders = sum(1 for o in self.b._ops[n_before:] if o[0] in (0, 1))
        self.layers.append({"node": node.name, "op": "Gemm", "shape": [K, N], "ops": len(self.b) - n_before,
                            "adders": st_adders})

    def lut(self, node) -> None:
        table_q = np.asarray(node.lut, np.int64)
        qmin = -(1 << (node.in_bits[0] - 1))
        out = []
        n_before = len(self.b)
        for a in self.acts:
            k, i, f = _kif_of(self.b, a.slot)
            w = k + i + f
            lo_a = -(1 << (w - 1)) if k else 0
            n = np.arange(lo_a, lo_a + (1 << w), dtype=np.int64)
            q = np.floor_divide(n, 1 << (a.e + f)) if a.e + f >= 0 else n << -(a.e + f)
            entries = table_q[np.clip(q - qmin, 0, len(table_q) - 1)]
            t = self.b.add_table(entries)
            lo, hi = int(entries.min()), int(entries.max())
            s = self.b.add_op(8, a.slot, -1, t, self._dt(lo, hi, 0))
            out.append(_Act(s, 0, lo, hi, 0))
        self.acts = out
        self.layers.append({"node": node.name, "op": node.op, "ops": len(self.b) - n_before, "adders": 0,
                            "tables": len(self.b.tables)})


def _kif_of(b: ProgramBuilder, slot: int):
    o = b._ops[slot]
    return (o[4], o[5], o[6])


def compile_qgraph(qg, *, method: str = "wmc", max_depth: int | None = None) -> tuple[Program, list[dict]]:
    """Compile a pow2 QGraph with one input and one output; returns the program and per-layer costs."""
    if len(qg.inputs) != 1 or len(qg.outputs) != 1:
        raise UnsupportedError("DAIS compiles single-input, single-output graphs")
    t_in = qg.inputs[0]
    n_in = int(np.prod(t_in.shape[1:]))
    net = _Net(n_in, t_in.bits, method, max_depth)
    for node in qg.nodes:
        if node.op == "Gemm":
            net.gemm(node)
        elif node.op in ("Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity"):
            continue  # C-order element list is unchanged (batch 1)
        elif node.op in ("Relu", "Clip"):
            net.acts = [net.clamp(a, *node.clamp) for a in net.acts]
        elif node.op in ("Sigmoid", "Tanh", "LeakyRelu"):
            net.lut(node)
        else:
            raise UnsupportedError(f"operator {node.op} is not supported by the DAIS compiler yet",
                                   where=f"node {node.name} ({node.op})", file=qg.source)
    net.b.set_outputs([a.slot for a in net.acts], [-a.e for a in net.acts], [0] * len(net.acts))
    prog = net.b.build(adder_size=1, carry_size=-1)
    return prog, net.layers


def compile_model(model, *, out_dir=None, calib=None, method: str = "wmc", max_depth=None, bits: int = 8,
                  **_ignored) -> CompileResult:
    """ONNX model → quantize (pow2, frontend) → one DAIS program; writes ``model.dais`` etc."""
    from ...frontend import load_model, quantize
    from ...frontend.models import bundled_inputs_for
    g = load_model(model)
    if calib is None:
        calib = bundled_inputs_for(model, samples=64) if isinstance(model, (str, Path)) else None
    if calib is None:
        shape = (64,) + tuple(g.inputs[0].shape[1:])
        calib = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    qg = quantize(g, calib, bits=bits, scale_mode="pow2")
    prog, layers = compile_qgraph(qg, method=method, max_depth=max_depth)
    st = prog.stats()
    report = {"n_ops": st["n_ops"], "n_adders": st["n_adders"], "adder_bits": st["adder_bits"],
              "depth": st["depth"], "adder_depth": st["adder_depth"], "layers": layers,
              "input_scale": qg.inputs[0].scale, "output_scale": qg.outputs[0].scale,
              "note": "program inputs are the quantized integers q = QGraph.quantize_input(x)"}
    files = {}
    if out_dir is not None:
        from .target import DaisTarget
        out = Path(out_dir)
        stem = Path(str(model)).stem if isinstance(model, (str, Path)) else "model"
        t = DaisTarget()
        for ext in (".dais", ".dais.txt", ".json"):
            t.write(prog, out / f"{stem}{ext}")
            files[ext.lstrip(".")] = str(out / f"{stem}{ext}")
    res = CompileResult(program=prog, files=files, report=report)
    res.qgraph = qg  # for callers comparing against the frontend reference
    return res
