"""DAIS interpreters (spec §5–§7).

Two engines, bit-identical by construction and by test:

* ``exact`` — the reference: follows §5 op by op, vectorised over the batch with NumPy object
  arrays of Python ints; 64-bit wrapping is emulated by explicit masking (D10).  Slow but
  obviously correct; the oracle for the compiled engine.
* ``compiled`` — numba kernel (:mod:`.kernel`) over a lowered program: ops outer, samples inner
  on chunks of ``B`` samples, registers reused on last use, chunks spread over threads.

Semantics: ``"default"`` (true top bit for unsigned mux keys, correct wide wraps, non-finite
inputs rejected) or ``"da4ml-compat"`` (reproduces da4ml 0.6.0's C++ quirks Q1/Q2 and its x86-64
input conversion, §6.2).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from ..errors import DaisInputError, DaisLookupError, DaisRangeError, DaisWidthWarning
from ....core.fixedpoint import pow2
from ..program import Program, int_bounds

SEMANTICS = ("default", "da4ml-compat")
ENGINES = ("auto", "exact", "compiled")
_B63, _M64 = 1 << 63, (1 << 64) - 1
INT64_MIN = -(1 << 63)


# ---------------------------------------------------------------------------------------------
# helpers shared by the engines' lowering
# ---------------------------------------------------------------------------------------------

def _check_semantics(semantics: str) -> bool:
    if semantics in ("da4ml_compat", "compat"):
        semantics = "da4ml-compat"
    if semantics not in SEMANTICS:
        raise DaisInputError(f"semantics must be one of {SEMANTICS}, not {semantics!r}")
    return semantics == "da4ml-compat"


def prepare_inputs(p: Program, x, n_samples: int | None = None) -> np.ndarray:
    """Inputs → C-ordered float64 ``[n_samples, n_in]`` (da4ml's flattening convention, §7.1)."""
    if isinstance(x, (list, tuple)) and x and all(hasattr(a, "shape") for a in x):
        x = np.concatenate([np.asarray(a, np.float64).reshape(len(a), -1) for a in x], axis=1)
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise DaisInputError(f"inputs must be numbers, got dtype {a.dtype}")
    x = np.ascontiguousarray(a.astype(np.float64)).reshape(-1)
    if p.n_in == 0:
        if n_samples is None:
            raise DaisInputError("a program without inputs needs an explicit n_samples=")
        return np.zeros((n_samples, 0))
    if x.size % p.n_in:
        raise DaisInputError(f"input size {x.size} is not divisible by n_in={p.n_in} (one sample is "
                             f"{p.n_in} values)")
    return x.reshape(-1, p.n_in)


def check_finite(p: Program, X: np.ndarray) -> None:
    """Default semantics: NaN/±inf in a live input is a ValueError naming input and sample (D8)."""
    if X.size == 0 or np.isfinite(X).all():  # the common case, without copying the live columns
        return
    live = np.unique(p.id0[p.opcode == -1])
    if len(live) == 0 or X.size == 0:
        return
    bad = ~np.isfinite(X[:, live])
    if bad.any():
        s, j = np.argwhere(bad)[0]
        raise DaisInputError(f"non-finite input {X[s, live[j]]} at input {live[j]}, sample {s} "
                         f"(use semantics='da4ml-compat' to reproduce da4ml)")


#: what happens to an input value outside its input op's dtype
INPUT_RANGES = ("error", "saturate", "wrap")


def default_input_range(compat: bool) -> str:
    """What ``nnisa sim`` (``Target.simulate``) does by default: ``wrap`` under da4ml-compat, which
    reproduces da4ml (its C++ ``predict`` and its Python interpreter wrap such inputs modulo 2^w
    without a word: 300 → 44 on a (1,7,0) input), else ``error``.  The engines' own API
    (:func:`run`, :class:`Interpreter`) keeps da4ml's contract and wraps unless told otherwise."""
    return "wrap" if compat else "error"


def fit_inputs(p: Program, X: np.ndarray, mode: str) -> np.ndarray:
    """Check every live input against the dtype of the input op that reads it: the quantized value
    ``floor(x·2^(s+f))`` must lie in the dtype's integer range.  ``error``: a DaisInputError naming
    input, sample, value and range; ``saturate``: out-of-range values are clipped to the range
    (one warning with the count); ``wrap``: unchanged (the engines wrap modulo 2^w, as da4ml does)."""
    if mode not in INPUT_RANGES:
        raise DaisInputError(f"input_range must be one of {', '.join(INPUT_RANGES)}, not {mode!r}")
    ops = np.flatnonzero(p.opcode == -1)
    if mode == "wrap" or X.size == 0 or not len(ops):
        return X
    out, clipped, first = X, 0, None
    for i in ops.tolist():
        c, k, f = int(p.id0[i]), int(p.k[i]), int(p.f[i])
        w = k + int(p.I[i]) + f
        lo, hi = (float(b) for b in int_bounds(k, w))
        scale = pow2(int(p.inp_shifts[c]) + f)
        with np.errstate(invalid="ignore", over="ignore"):
            z = np.floor(out[:, c] * scale)
            bad = ~((z >= lo) & (z <= hi))
        if not bad.any():
            continue
        s = int(np.argmax(bad))
        if mode == "error":
            raise DaisInputError(
                f"input {c}, sample {s}: {float(X[s, c]):g} is outside the input's range {lo / scale:g}..{hi / scale:g} "
                f"(dtype ({k},{int(p.I[i])},{f}), {int(bad.sum()):,} such value(s)); da4ml wraps such values "
                "modulo 2^w: -O input_range=wrap reproduces that, =saturate clips them")
        if out is X:
            out = X.copy()
        out[:, c] = np.where(bad, np.clip(np.nan_to_num(z, nan=0.0), lo, hi) / scale, out[:, c])
        clipped += int(bad.sum())
        first = first or (c, s, float(X[s, c]), lo / scale, hi / scale)
    if clipped:
        c, s, v, a, b = first
        warnings.warn(f"{clipped:,} input value(s) outside their input's range were saturated (first: input {c}, "
                      f"sample {s}, {v:g} → range {a:g}..{b:g})", stacklevel=3)
    return out


# ---------------------------------------------------------------------------------------------
# exact engine (Python ints, object arrays)
# ---------------------------------------------------------------------------------------------

def _s64(x):
    return ((x + _B63) & _M64) - _B63


def _shl(v, s: int):
    """Left shift with the §5.8 definitions (negative → floor right shift, ≥ 64 → 0)."""
    if s < 0:
        return v >> min(-s, 64)
    if s >= 64:
        return v * 0
    return _s64(v << s)


def _sar(v, s: int):
    """Arithmetic right shift; a negative count is an exact left shift (Q4 definition)."""
    if s < 0:
        return _shl(v, -s)
    return v >> min(s, 64)


def _wrap(z, k: int, w: int):
    if w <= 0:
        return z * 0
    if w > 64:
        return _s64(z)
    lo = -(1 << (w - 1)) if k else 0
    return _s64(((z - lo) % (1 << w)) + lo)


def _cdiv(a: int, b: int) -> int:
    """C truncating division (b > 0)."""
    q = a // b
    return q + 1 if (a < 0 and q * b != a) else q


def _cwrap1(z: int, k: int, w: int) -> int:
    """da4ml 0.6.0's C++ wrap (compat rule 2), in wrapping int64 arithmetic."""
    m = -(1 << ((w - 1) % 32)) if k else 0
    M = 1 << w
    az = z if z == INT64_MIN else abs(z)
    t = _s64(z - m + _s64((_cdiv(az, M) + 1) * M))
    r = t - _cdiv(t, M) * M
    return _s64(r + m)


def _qwrap(z, k: int, w: int, compat: bool):
    if compat and 1 <= w <= 62:
        return np.array([_cwrap1(int(v), k, w) for v in z], dtype=object)
    return _wrap(z, k, w)


def _key_cond(n, kq: int, wq: int, compat: bool):
    if kq:
        return n < 0
    if wq <= 0:
        return n < INT64_MIN  # all False
    if compat:
        return n > ((1 << (wq - 2)) if wq >= 2 else 0)
    if wq >= 65:
        return n < INT64_MIN
    if wq == 64:
        return n < 0
    return n >= (1 << (wq - 1))


def run_exact(p: Program, X: np.ndarray, *, compat: bool = False, check: bool = False,
              record: bool = False):
    """Reference engine.  ``X`` is ``[n, n_in]`` float64; returns ``[n, n_out]`` float64
    (and the integer buffer ``[n_ops][n]`` if ``record``)."""
    n = X.shape[0]
    buf: list = []
    opc, A0, C0, D = p.opcode.tolist(), p.id0.tolist(), p.id1.tolist(), p.data.tolist()
    K, I, F = p.k.tolist(), p.I.tolist(), p.f.tolist()
    LO, HI = p.data_lo().tolist(), p.data_hi().tolist()
    W = [k + i + f for k, i, f in zip(K, I, F)]
    if compat and any(W[i] >= 63 and K[i] == 1 for i in range(p.n_ops)):
        warnings.warn("compat wrap is defined for widths ≤ 62; wider ops use the default wrap",
                      DaisWidthWarning, stacklevel=2)
    for i in range(p.n_ops):
        o, a, c, k, f, w = opc[i], A0[i], C0[i], K[i], F[i], W[i]
        sg = -1 if o < -1 else 1
        A = buf[a] if o not in (-1, 5) else None
        C = buf[c] if o in (0, 1, 6, -6, 7, 10) else None
        fa = F[a] if A is not None else 0
        fc = F[c] if C is not None else 0
        if o == -1:
            xs = np.floor(X[:, a] * pow2(int(p.inp_shifts[a]) + f))
            if compat:
                z = [int(v) if (-2.0**63 <= v < 2.0**63) else INT64_MIN for v in xs]
            else:
                z = [int(v) for v in xs]
            r = _qwrap(np.array(z, dtype=object), k, w, compat)
        elif o in (0, 1):
            d = LO[i]
            e = d + fa - fc
            sgn = 1 if o == 0 else -1
            r = _s64(A + sgn * _shl(C, e)) if e > 0 else _s64(_shl(A, -e) + sgn * C)
            t = max(fa, fc - d)
            if t > f:
                r = _sar(r, t - f)
        elif abs(o) == 2:
            v = _s64(sg * A)
            r = np.where(v < 0, 0, _qwrap(_sar(v, fa - f), k, w, compat))
        elif abs(o) == 3:
            r = _qwrap(_sar(_s64(sg * A), fa - f), k, w, compat)
        elif o == 4:
            r = _s64(_shl(A, f - fa) + D[i])
        elif o == 5:
            r = np.array([D[i]] * n, dtype=object)
        elif abs(o) == 6:
            q = LO[i]
            cond = _key_cond(buf[q], K[q], W[q], compat)
            ra = _qwrap(_shl(A, f - fa), k, w, compat)
            rc = _qwrap(_shl(_s64(sg * C), f - fc + HI[i]), k, w, compat)
            r = np.where(cond, ra, rc)
        elif o == 7:
            r = _s64(A * C)
        elif o == 8:
            tab = p.tables[LO[i]]
            lo_a = int_bounds(K[a], W[a])[0]
            idx = A - lo_a - HI[i]
            bad = [(s, v) for s, v in enumerate(idx) if not 0 <= v < len(tab)]
            if bad:
                s, v = bad[0]
                raise DaisLookupError(f"lookup index {v} out of table {LO[i]} of size {len(tab)} "
                                      f"(key {A[s]}, lo_a {lo_a}, pad_left {HI[i]})", where=f"op {i}, sample {s}")
            r = np.array([int(tab[v]) for v in idx], dtype=object)
        elif abs(o) == 9:
            v = _s64(sg * A)
            m = _s64((1 << W[a]) - 1) if W[a] > 0 else 0
            sub = LO[i]
            if sub == 0:
                r = ~v if k else (~v) & m
            elif sub == 1:
                r = np.where(v != 0, 1, 0)
            else:
                r = np.where((v & m) == m, 1, 0)
        elif o == 10:
            hi = HI[i]
            a2 = _s64(-A) if hi & 1 else A
            c2 = _s64(-C) if hi & 2 else C
            e = LO[i] + fa - fc
            if e > 0:
                c2 = _shl(c2, e)
            else:
                a2 = _shl(a2, -e)
            sub = (hi >> 24) & 0xFF
            r = a2 & c2 if sub == 0 else (a2 | c2 if sub == 1 else a2 ^ c2)
        else:  # unreachable after validation
            raise AssertionError(o)
        r = np.asarray(r, dtype=object).reshape(n)
        if check and o not in (-1, 2, -2, 3, -3, 6, -6):
            lo_i, hi_i = int_bounds(k, w)
            bad = [s for s, v in enumerate(r) if not lo_i <= v <= hi_i]
            if bad:
                raise DaisRangeError(f"value {r[bad[0]]} outside dtype ({k},{I[i]},{f})",
                                     where=f"op {i}, sample {bad[0]}")
        buf.append(r)
    Y = np.zeros((n, p.n_out))
    for j in range(p.n_out):
        q = int(p.out_idxs[j])
        if q < 0:
            continue
        v = _s64(-buf[q]) if p.out_negs[j] else buf[q]
        Y[:, j] = np.array([float(t) for t in v]) * pow2(int(p.out_shifts[j]) - F[q])
    return (Y, buf) if record else Y


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------

class Interpreter:
    """A program lowered once for one semantics and engine; :meth:`run` is reusable."""

    def __init__(self, program: Program, semantics: str = "default", engine: str = "auto",
                 chunk: int | None = None):
        if engine not in ENGINES:
            raise DaisInputError(f"engine must be one of {ENGINES}, not {engine!r}")
        self.program = program
        self.compat = _check_semantics(semantics)
        self.engine = "compiled" if engine == "auto" else engine
        self._lowered = None
        if self.engine == "compiled":
            from .kernel import lower
            self._lowered = lower(program, compat=self.compat, chunk=chunk)

    def run(self, x, n_threads: int = 1, check: bool = False, n_samples: int | None = None,
            input_range: str = "wrap") -> np.ndarray:
        """Outputs ``[n, n_out]`` of the inputs ``x``; ``input_range`` (error, saturate, wrap as
        da4ml does) decides about inputs outside their input op's dtype (:func:`fit_inputs`)."""
        p = self.program
        X = prepare_inputs(p, x, n_samples)
        if not self.compat:
            check_finite(p, X)
        X = fit_inputs(p, X, input_range)
        if X.shape[0] == 0:
            return np.zeros((0, p.n_out))
        if self.engine == "exact" or check:
            return run_exact(p, X, compat=self.compat, check=check)
        if n_threads is None or n_threads <= 0:
            n_threads = int(os.environ.get("NNISA_THREADS", os.cpu_count() or 1))
        return self._lowered.run(X, n_threads)


def interpreter_for(program: Program, semantics: str = "default", engine: str = "auto") -> Interpreter:
    """The :class:`Interpreter` of ``program`` for one semantics and engine, lowered once per program
    (programs are immutable; the cache lives as long as the program does).  ``Target.simulate``
    uses it, so repeated calls on the same program skip the lowering."""
    per_prog = program.__dict__.setdefault("_interpreters", {})  # a cache, not a field (frozen dataclass)
    key = (_check_semantics(semantics), engine)
    it = per_prog.get(key)
    if it is None:
        it = per_prog[key] = Interpreter(program, semantics, engine)
    return it


def run(program: Program, x, *, n_threads: int = 1, semantics: str = "default", engine: str = "auto",
        check: bool = False, n_samples: int | None = None, input_range: str = "wrap") -> np.ndarray:
    """Execute ``program`` on ``x`` (spec §7.1); returns float64 ``[n_samples, n_out]``."""
    return Interpreter(program, semantics, engine).run(x, n_threads=n_threads, check=check,
                                                       n_samples=n_samples, input_range=input_range)


def trace(program: Program, x_row, semantics: str = "default") -> list[tuple[int, int, float]]:
    """Per-op ``(index, integer, real value)`` for one sample (debugging dump)."""
    X = prepare_inputs(program, np.asarray(x_row, np.float64).reshape(1, -1))
    _, buf = run_exact(program, X, compat=_check_semantics(semantics), record=True)
    return [(i, int(b[0]), float(b[0]) * pow2(-int(program.f[i]))) for i, b in enumerate(buf)]
