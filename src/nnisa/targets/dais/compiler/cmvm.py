"""Constant matrix–vector multiplication by distributed arithmetic (spec §8.3).

``y = x @ W`` with shifts and adds only:

1. scale ``W`` to integers (the common power of two goes to ``out_shifts``);
2. recode every entry in canonical signed digits (non-adjacent form): column ``c`` becomes a set
   of terms ``(signal, shift, sign)``;
3. greedy common-subexpression elimination: the most frequent two-term pattern
   ``p + ρ·q·2^Δ`` (``mc``: count; ``wmc``: (count − 1) × adder width) becomes a new adder and
   replaces its non-overlapping occurrences; pattern counts are maintained incrementally;
4. each column's remaining terms are summed earliest-available-first (balanced by adder depth);
5. every op gets the tightest dtype from its exact value range: each signal is an integer linear
   form of the inputs, so its range is computed exactly (no interval-arithmetic overestimate).

An optional ``max_depth`` bounds the adder depth of every output (occurrences that would make a
column's minimal achievable depth exceed it are left alone).
"""

from __future__ import annotations

import heapq
import math
import time
from fractions import Fraction

import numpy as np

from ..errors import DaisPrecisionError
from ..program import Program, ProgramBuilder


def csd(n: int) -> list[tuple[int, int]]:
    """Non-adjacent form of ``n``: ``[(shift, ±1), ...]`` with no two adjacent non-zero digits."""
    out, b = [], 0
    while n:
        if n & 1:
            d = 2 - (n & 3)  # +1 if n ≡ 1 (mod 4), −1 if n ≡ 3
            out.append((b, d))
            n -= d
        n >>= 1
        b += 1
    return out


MAX_FRAC_BITS = 32  # weights needing finer resolution are almost surely unquantized floats


def _to_int_matrix(W: np.ndarray) -> tuple[list[list[int]], int]:
    """Integer matrix ``M`` and ``F`` with ``W = M · 2^-F`` (exact; rejects non-dyadic entries)."""
    W = np.asarray(W, dtype=np.float64)
    if not np.all(np.isfinite(W)):
        j, c = np.argwhere(~np.isfinite(W))[0]
        raise ValueError(f"W[{j},{c}] is not finite")
    if W.ndim == 2 and W.size:
        # every float is dyadic: v = m·2^(e−53) with the 53-bit integer m; its fractional bits are
        # 53 − e − (trailing zeros of m)  (vectorised form of the Fraction path below)
        mant, ex = np.frexp(W)
        m = np.abs(np.ldexp(mant, 53).astype(np.int64))
        low = m & -m
        tz = np.zeros(m.shape, np.int64)
        nz = m != 0
        tz[nz] = np.log2(low[nz].astype(np.float64)).astype(np.int64)
        need = np.where(nz, 53 - ex.astype(np.int64) - tz, 0)
        F = max(0, int(need.max()))
        if F > MAX_FRAC_BITS:
            j, c = np.argwhere(need > MAX_FRAC_BITS)[0]
            raise DaisPrecisionError(f"W[{j},{c}] = {W[j, c]} needs {int(need[j, c])} fractional bits "
                             f"(> {MAX_FRAC_BITS}); quantize the weights first")
        S = np.ldexp(W, F)                       # exact: a power-of-two scaling
        if float(np.abs(S).max()) < 2.0 ** 62:
            return S.astype(np.int64).tolist(), F
    F = 0
    for (j, c), v in np.ndenumerate(W):
        fr = Fraction(float(v))
        den = fr.denominator
        if den & (den - 1):
            raise ValueError(f"W[{j},{c}] = {v} is not dyadic")
        if den.bit_length() - 1 > MAX_FRAC_BITS:
            raise DaisPrecisionError(f"W[{j},{c}] = {v} needs {den.bit_length() - 1} fractional bits "
                             f"(> {MAX_FRAC_BITS}); quantize the weights first")
        F = max(F, den.bit_length() - 1)
    M = [[int(Fraction(float(v)) * (1 << F)) for v in row] for row in W]
    return M, F


def naf_weight(a: np.ndarray) -> np.ndarray:
    """Number of non-zero non-adjacent-form digits of every entry of the int64 array ``a``
    (``popcount(n XOR 3n)`` for ``n = |a|``; entries must satisfy ``|a| < 2^61``)."""
    n = np.abs(np.asarray(a, dtype=np.int64))
    return np.bitwise_count(n ^ (3 * n)).astype(np.int64)


def column_tree(A, max_tree_depth: int | None = None):
    """Minimum spanning tree over the columns of the integer matrix ``A`` plus the zero vector.

    Edge weights (adder estimates without CSE): zero vector – column ``u``: ``nnz(u) - 1``;
    column ``u`` – column ``v``: ``min(nnz(v - u), nnz(v + u))`` (the difference's adders plus the
    one combining it with the parent), ``nnz`` counting non-adjacent-form digits.  Prim's algorithm
    from the zero vector, ties broken by the lower column index; a column joins a parent column
    only if that is strictly cheaper.  ``max_tree_depth`` bounds the number of column-to-column
    edges on any path from the root.

    Returns
    -------
    tuple or None
        ``(parent, sign, order)``: column ``c = sign[c]·column parent[c] + diff_c`` (``parent -1``:
        the zero vector), ``order`` lists parents before children.  ``None`` when no column has a
        column parent or entries are too large for int64 arithmetic.
    """
    A = np.asarray(A, dtype=object)
    if A.size == 0 or max(abs(int(v)) for v in A.flat) >= (1 << 59):
        return None
    A = A.astype(np.int64)
    n_out = A.shape[1]
    dist = np.maximum(naf_weight(A).sum(axis=0) - 1, 0)
    parent = -np.ones(n_out, np.int64)
    sign = np.ones(n_out, np.int64)
    tdepth = np.zeros(n_out, np.int64)
    done = np.zeros(n_out, bool)
    order = []
    for _ in range(n_out):
        u = int(np.argmin(np.where(done, np.iinfo(np.int64).max, dist)))
        done[u] = True
        order.append(u)
        if max_tree_depth is not None and tdepth[u] >= max_tree_depth:
            continue
        wm = naf_weight(A - A[:, u:u + 1]).sum(axis=0)  # v - u
        wp = naf_weight(A + A[:, u:u + 1]).sum(axis=0)  # v + u
        w = np.minimum(wm, wp)
        upd = ~done & (w < dist)
        dist[upd] = w[upd]
        parent[upd] = u
        sign[upd] = np.where(wm[upd] <= wp[upd], 1, -1)
        tdepth[upd] = tdepth[u] + 1
    if (parent < 0).all():
        return None
    return parent.tolist(), sign.tolist(), order


def _add_term(terms: dict, s: int, b: int, d: int) -> None:
    """Add ``d·sig[s]·2^b`` to a column's term dict, merging with an existing ``(s, b)`` term."""
    while d:
        old = terms.pop((s, b), 0)
        if old == 0:
            terms[(s, b)] = d
            return
        if old != d:
            return  # cancel
        b += 1  # 2·d·2^b


def _alias_step(alias: list, p: int, q: int, d: int, rho: int):
    """Replay template adder ``sig[p] + rho·sig[q]·2^d`` on the aliases of an instance (entries
    ``(signal, shift, sign)`` or ``None`` for zero).  With a zero operand the adder is an alias of
    the other one: appended, returns ``None``.  Otherwise returns its operands ``(a, c)`` ordered by
    shift; the caller emits ``sig[a] + a·c·sig[c]·2^(c_shift - a_shift)`` and appends its alias."""
    a, c = alias[p], alias[q]
    if c is None:
        alias.append(a)
        return None
    c = (c[0], c[1] + d, c[2] * rho)
    if a is None:
        alias.append(c)
        return None
    return (c, a) if a[1] > c[1] else (a, c)


class _Signal:
    __slots__ = ("slot", "coef", "f", "lo", "hi", "depth", "width")


class CMVMCompiler:
    """Builds the shift-add program into a :class:`ProgramBuilder` (reusable by the network compiler).

    ``inputs`` are ``(slot, k, i, f)`` of existing builder slots holding the input vector.
    """

    def __init__(self, builder: ProgramBuilder, inputs, *, method: str = "wmc", max_depth: int | None = None,
                 cse_budget: int | None = None, tiebreak: int = 0, engine: str = "numba",
                 block_rows: int | None = None):
        self.tiebreak, self.engine, self.block_rows = tiebreak, engine, block_rows
        if method not in ("wmc", "mc", "dummy"):
            raise ValueError(f"method must be wmc, mc or dummy, not {method!r}")
        self.b = builder
        self.method, self.max_depth, self.budget = method, max_depth, cse_budget
        self.n = len(inputs)
        self.sig: list[_Signal] = []
        self.log: list[tuple[int, int, int, int]] = []  # (p, q, d, rho) of every emitted adder
        self.out_terms: list = []  # per column (signal, shift, negate) or None, after solve()
        self.cse_info: dict | None = None  # what the CSE did (time, steps, whether the budget cut it short)
        self._steps = 0
        fin = max([f for *_, f in inputs] + [0])
        self.fin = fin
        # exact input bounds in units of 2^-fin
        self.L = [(-k << (i + fin)) if k else 0 for _, k, i, f in inputs]
        self.H = [((1 << (i + fin)) - (1 << (fin - f))) if k + i + f > 0 else 0 for _, k, i, f in inputs]
        for j, (slot, k, i, f) in enumerate(inputs):
            s = _Signal()
            s.slot, s.f, s.depth = slot, f, 0
            s.coef = {j: 1}
            s.lo, s.hi = self.L[j], self.H[j]
            s.width = k + i + f
            self.sig.append(s)

    # -- signals -----------------------------------------------------------------------------
    def _new(self, p: int, q: int, d: int, rho: int) -> int:
        """Emit ``sig[p] + rho·sig[q]·2^d`` (d ≥ 0) as an adder; returns the signal index."""
        sp, sq = self.sig[p], self.sig[q]
        coef = dict(sp.coef)
        for j, c in sq.coef.items():
            coef[j] = coef.get(j, 0) + rho * (c << d)
        coef = {j: c for j, c in coef.items() if c}
        lo = sum(c * (self.L[j] if c > 0 else self.H[j]) for j, c in coef.items())
        hi = sum(c * (self.H[j] if c > 0 else self.L[j]) for j, c in coef.items())
        f = max(sp.f, sq.f - d)  # canonical (natural) resolution of the adder
        if lo == 0 and hi == 0:  # identically zero: keep a 1-bit dtype at the natural f
            k, i, ff = 0, 1 - f, f
        else:  # minimal_kif in integers: lo, hi are exact multiples of 2^-f (in units of 2^-fin)
            a, bb = (lo << (f - self.fin), hi << (f - self.fin)) if f >= self.fin else \
                (lo >> (self.fin - f), hi >> (self.fin - f))
            k, i, ff = (1 if lo < 0 else 0), (max(-a, bb + 1) - 1).bit_length() - f, f
        s = _Signal()
        s.coef, s.lo, s.hi, s.f = coef, lo, hi, ff
        s.depth = max(sp.depth, sq.depth) + 1
        s.width = k + i + ff
        s.slot = self.b.add_op(0 if rho > 0 else 1, sp.slot, sq.slot, d, (k, i, ff))
        self.sig.append(s)
        self.log.append((p, q, d, rho))
        return len(self.sig) - 1

    # -- patterns ----------------------------------------------------------------------------
    def _key(self, t1, t2):
        """Canonical pattern of two terms ``(sig, shift, sign)``: lower shift first."""
        (p, b1, s1), (q, b2, s2) = t1, t2
        if b2 < b1 or (b2 == b1 and q < p):
            (p, b1, s1), (q, b2, s2) = (q, b2, s2), (p, b1, s1)
        return (p, q, b2 - b1, s1 * s2)

    def _score(self, key, count):
        p, q, d, _ = key
        sp, sq = self.sig[p], self.sig[q]
        w = max(sp.width, sq.width + d, 1)
        tb = self.tiebreak
        if tb == 0:
            t = 0
        elif tb == 1:
            t = -w
        elif tb == 2:
            t = w
        elif tb == 3:
            t = -d
        elif tb == 4:
            t = -max(sp.depth, sq.depth)
        else:  # 5: score ties go to the secondary key (_sec)
            t = 0
        if self.method == "mc":
            return -(count * 4096 + t)
        return -((count - 1) * w * 4096 + t)

    def _sec(self, key):
        """Secondary heap key (ties of equal score): tie-break 5 prefers the pattern whose larger
        signal index is highest, then whose smaller one is; 0 (plain pattern order) otherwise."""
        if self.tiebreak != 5:
            return 0
        p, q = key[0], key[1]
        return -((max(p, q) << 32) | min(p, q))

    # -- main ----------------------------------------------------------------------------------
    def solve(self, M: list[list[int]], decompose: bool = False,
              decompose_depth: int | None = None) -> list[tuple[int, int, int] | None]:
        """CSE + accumulation for the integer matrix ``M`` (``n_in × n_out``).

        Parameters
        ----------
        M
            Integer matrix, ``M[j][c]`` (rows of zero-width inputs are ignored).
        decompose
            Column decomposition (spec §8.3 step 5): column ``c`` becomes ``±column parent(c) +
            diff_c`` along a minimum spanning tree (:func:`column_tree`); the CSE runs on the
            difference columns, and each column's accumulation adds its parent's finished output as
            one more term.  Ignored when ``max_depth`` is set.
        decompose_depth
            Maximum tree depth of the decomposition (``None``: unlimited); each level adds at most
            one adder to an output's depth.

        Returns
        -------
        list
            Per column ``(slot, shift, negate)`` or ``None`` for an all-zero column.
        """
        n_out = len(M[0]) if M else 0
        live = [self.sig[j].width > 0 for j in range(self.n)]
        parent, sign, order = [-1] * n_out, [1] * n_out, list(range(n_out))
        if decompose and self.max_depth is None and n_out > 1:
            A = [[M[j][c] if live[j] else 0 for c in range(n_out)] for j in range(self.n)]
            tree = column_tree(A, max_tree_depth=decompose_depth)
            if tree is not None:
                parent, sign, order = tree
                M = [[A[j][c] - (sign[c] * A[j][parent[c]] if parent[c] >= 0 else 0) for c in range(n_out)]
                     for j in range(self.n)]
        from .cmvm_emit import solve_fast
        fast = solve_fast(self, M, live, parent, sign, order)  # the numba path (same result)
        if fast is not None:
            return fast
        cols: list[dict] = []
        for c in range(n_out):
            terms = {}
            for j in range(self.n):
                if M[j][c] and live[j]:
                    for b, d in csd(M[j][c]):
                        terms[(j, b)] = d
            cols.append(terms)
        if self.method != "dummy":
            t0 = time.perf_counter()
            if self.block_rows and self.max_depth is None and self.n > self.block_rows:
                complete = self._cse_blocks(cols)
            else:
                complete = self._cse(cols)
            self.cse_info = {"cse_s": round(time.perf_counter() - t0, 3), "complete": complete,
                             "cse_steps": self._steps}
        return self._accumulate_columns(cols, parent, sign, order)

    def _accumulate_columns(self, cols: list[dict], parent, sign, order) -> list[tuple[int, int, int] | None]:
        """Sum every column's terms (in ``order``; a decomposition child also adds ``±`` its
        parent's output); sets ``out_terms``, returns per column ``(slot, shift, negate)``."""
        self.out_terms = [None] * len(cols)
        for c in order:
            if parent[c] >= 0 and self.out_terms[parent[c]] is not None:
                s, b, neg = self.out_terms[parent[c]]
                _add_term(cols[c], s, b, -sign[c] if neg else sign[c])
            self.out_terms[c] = self._accumulate(cols[c])
        return [None if t is None else (self.sig[t[0]].slot, t[1], t[2]) for t in self.out_terms]

    def instantiate(self, template: "CMVMCompiler") -> list[tuple[int, int, int] | None]:
        """Replay the adders of an already solved ``template`` (same input count) on this compiler's inputs.

        Used for convolutions: the kernel matrix is solved once and every output position reuses the
        solution.  Inputs of zero width (padding) are dropped: an adder with a zero operand becomes an
        alias of its other operand, so no op ever reads a missing input.  Dtypes are recomputed from
        this instance's exact input ranges.  Returns per column ``(slot, shift, negate)`` or ``None``.
        """
        if template.n != self.n:
            raise ValueError(f"template has {template.n} inputs, this compiler {self.n}")
        if self.engine != "python" and len(self.sig) == self.n:
            out = self._instantiate_ranges(template)
            if out is not None:
                return out
        alias: list = [(j, 0, 1) if self.sig[j].width > 0 else None for j in range(self.n)]
        for p, q, d, rho in template.log:
            ops = _alias_step(alias, p, q, d, rho)
            if ops is not None:
                a, c = ops
                s = self._new(a[0], c[0], c[1] - a[1], a[2] * c[2])
                alias.append((s, a[1], a[2]))
        return self._out_terms(template, alias)

    def _out_terms(self, template: "CMVMCompiler", alias: list) -> list[tuple[int, int, int] | None]:
        """Per column ``(slot, shift, negate)`` of a replayed template (``None``: all-zero)."""
        out = []
        for t in template.out_terms:
            al = None if t is None else alias[t[0]]
            out.append(None if al is None else (self.sig[al[0]].slot, al[1] + t[1], (al[2] < 0) != bool(t[2])))
        return out

    def _coef_matrix(self) -> np.ndarray | None:
        """Dense int64 ``[signal, input]`` coefficients (cached), or None if one reaches 2^61."""
        C = getattr(self, "_coefs", None)
        if C is None or len(C) != self.n + len(self.log):
            from .cmvm_emit import dense_coefs
            ok, C = dense_coefs(self._log_array(), self.n)
            if not ok:
                return None
            self._coefs = C
        return C

    def _log_array(self) -> np.ndarray:
        """``log`` as an int64 ``[n, 4]`` array (cached: a template is replayed many times)."""
        arr = getattr(self, "_log_arr", None)
        if arr is None or len(arr) != len(self.log):
            arr = self._log_arr = np.array(self.log, np.int64).reshape(-1, 4)
        return arr

    def _instantiate_ranges(self, template: "CMVMCompiler") -> list[tuple[int, int, int] | None] | None:
        """:meth:`instantiate` without per-adder coefficient dicts (same ops, same dtypes).

        Replaying template adder ``t`` gives ``new = a2·template_t / 2^a1`` on the live inputs
        (``(·, a1, a2)`` the alias of its first operand), so its exact range comes from the template's
        coefficient row and this instance's input bounds, all rows in one matrix product; the replay
        itself (aliases, dtypes) is :func:`.cmvm_nb.replay_kernel`.  Returns None (the caller takes
        the reference path) when int64 could overflow.  The replayed adders are not recorded in
        ``sig``/``log``: an instantiated compiler builds nothing further.
        """
        C = template._coef_matrix()
        live = [sg.width > 0 for sg in self.sig]
        Lv = [v if ok else 0 for v, ok in zip(self.L, live)]
        Hv = [v if ok else 0 for v, ok in zip(self.H, live)]
        bound = max([abs(v) for v in Lv + Hv] + [1])
        if C is None or (int(np.abs(C).max(initial=1)) * bound * max(self.n, 1)).bit_length() > 62:
            return None
        Lv, Hv = np.array(Lv, np.int64), np.array(Hv, np.int64)
        Cp, Cn = np.maximum(C, 0), np.minimum(C, 0)
        from .cmvm_nb import replay_kernel
        sig = self.sig
        rows, al_s, al_sh, al_sg = replay_kernel(
            template._log_array(), Cp @ Lv + Cn @ Hv, Cp @ Hv + Cn @ Lv, np.array(live, np.bool_),
            np.array([sg.f for sg in sig], np.int64), np.array([sg.slot for sg in sig], np.int64),
            int(self.fin), len(self.b))
        base, n = len(self.b), self.n
        self.b.extend_ops(rows)
        out = []  # as _out_terms, on the kernel's arrays (instance signal n + r has slot base + r)
        for t in template.out_terms:
            g = 0 if t is None else int(al_sg[t[0]])
            if g == 0:
                out.append(None)
                continue
            s_, h = int(al_s[t[0]]), int(al_sh[t[0]])
            out.append((sig[s_].slot if s_ < n else base + s_ - n, h + t[1], (g < 0) != bool(t[2])))
        return out

    def _cse_blocks(self, cols: list[dict]) -> bool:
        """CSE on row blocks: column ``c`` is split into one sub-column per block of
        ``block_rows`` inputs, the CSE runs on all sub-columns at once (patterns are shared across
        columns, but pair only terms of the same block), then each column gets its sub-columns'
        terms back.  The greedy's set-up counts every pair of terms of a column, so a wide layer
        (LeNet's 400×120 Gemm: ~1,600 terms, 1.3 M pairs per column) costs
        ``block_rows / n`` as much.  No key collides on the merge: an adder made from block ``b``'s
        signals only ever occurs in block ``b``'s sub-columns."""
        sub: list[dict] = []
        owner: list[int] = []
        for c, terms in enumerate(cols):
            parts: dict[int, dict] = {}
            for (j, b), d in terms.items():
                parts.setdefault(j // self.block_rows, {})[(j, b)] = d
            for blk in sorted(parts):
                sub.append(parts[blk])
                owner.append(c)
        complete = self._cse(sub)
        for c in range(len(cols)):
            cols[c] = {}
        for c, terms in zip(owner, sub):
            cols[c].update(terms)
        return complete

    def _cse(self, cols: list[dict]) -> bool:
        """Greedy CSE in place on ``cols``; numba kernel unless ``engine="python"`` or int64 could
        overflow.  Returns False when the step budget (``cse_budget`` heap pops) stopped it early."""
        maxm = max((abs(d) << b for terms in cols for (_, b), d in terms.items()), default=1)
        maxr = max([abs(v) for v in self.L + self.H] + [1])
        fits = (2 * maxm).bit_length() + maxr.bit_length() + max(self.n, 1).bit_length() < 62
        if self.engine == "python" or not fits or self.n >= (1 << 23):
            return self._cse_py(cols)
        from .cmvm_nb import cse_numba
        log, out, complete, self._steps = cse_numba(cols, self.sig, self.L, self.H, self.fin, self.method,
                                                    self.tiebreak, self.max_depth, self.budget)
        for p, q, d, rho in log.tolist():
            self._new(p, q, d, rho)
        cols[:] = out
        return complete

    def _cse_py(self, cols: list[dict]) -> bool:
        """Pure-Python reference of the CSE (the numba kernel reproduces it step for step)."""
        cnt: dict = {}
        heap: list = []
        where: dict[int, set] = {}  # signal -> columns holding it
        for c, terms in enumerate(cols):
            items = [(s, b, d) for (s, b), d in terms.items()]
            for x in range(len(items)):
                where.setdefault(items[x][0], set()).add(c)
                for y in range(x + 1, len(items)):
                    k = self._key(items[x], items[y])
                    cnt[k] = cnt.get(k, 0) + 1
        for k, v in cnt.items():
            if v >= 2:
                heap.append((self._score(k, v), self._sec(k), k))
        heapq.heapify(heap)
        base = [math.ceil(math.log2(len(t))) if len(t) > 1 else 0 for t in cols]
        self._steps = 0

        def change(c, term, delta):
            for (s2, b2), d2 in cols[c].items():
                k = self._key(term, (s2, b2, d2))
                v = cnt.get(k, 0) + delta
                cnt[k] = v
                if delta > 0 and v >= 2:
                    heapq.heappush(heap, (self._score(k, v), self._sec(k), k))

        while heap:
            if self.budget is not None and self._steps >= self.budget:
                return False
            self._steps += 1
            negscore, sec, key = heapq.heappop(heap)
            v = cnt.get(key, 0)
            if v < 2:
                continue  # stale entry
            sc = self._score(key, v)
            if negscore != sc:  # count dropped since the push: requeue at the current score
                heapq.heappush(heap, (sc, sec, key))
                continue
            p, q, d, rho = key
            new = None
            used = 0
            for c in sorted(where.get(p, set()) & where.get(q, set())):
                terms = cols[c]
                for (s, b) in sorted(k for k in terms if k[0] == p):
                    if (p, b) not in terms or (q, b + d) not in terms or (p, b) == (q, b + d):
                        continue
                    sg = terms[(p, b)]
                    if terms[(q, b + d)] != sg * rho:
                        continue
                    if self.max_depth is not None:
                        trial = {k: v for k, v in terms.items() if k not in ((p, b), (q, b + d))}
                        depth = max(self.sig[p].depth, self.sig[q].depth) + 1
                        tot = sum(2.0 ** self.sig[s2].depth for (s2, _) in trial) + 2.0 ** depth
                        if math.ceil(math.log2(tot) - 1e-9) > max(self.max_depth, base[c]):
                            continue
                    if new is None:
                        new = self._new(p, q, d, rho)
                    for t in ((p, b), (q, b + d)):
                        sgt = terms.pop(t)
                        change(c, (t[0], t[1], sgt), -1)
                    change(c, (new, b, sg), +1)
                    terms[(new, b)] = sg
                    where.setdefault(new, set()).add(c)
                    used += 1
                for s in (p, q):
                    if not any(k[0] == s for k in terms):
                        where.get(s, set()).discard(c)
            if used == 0:
                cnt[key] = 0  # every occurrence blocked (overlap or depth): never retry
        return True

    def _accumulate(self, terms: dict):
        if not terms:
            return None
        heap = [(self.sig[s].depth, self.sig[s].width, s, b, d) for (s, b), d in sorted(terms.items())]
        heapq.heapify(heap)
        while len(heap) > 1:
            _, _, s1, b1, d1 = heapq.heappop(heap)
            _, _, s2, b2, d2 = heapq.heappop(heap)
            if b2 < b1:
                s1, b1, d1, s2, b2, d2 = s2, b2, d2, s1, b1, d1
            new = self._new(s1, s2, b2 - b1, d1 * d2)
            sg = self.sig[new]
            heapq.heappush(heap, (sg.depth, sg.width, new, b1, d1))
        _, _, s, b, d = heap[0]
        return (s, b, d < 0)


def compile_matrix(W, inputs, *, method: str = "wmc", max_depth: int | None = None,
                   cse_budget: int | None = None, search: bool = False, tiebreak: int = 0,
                   decompose: bool = False, decompose_depth: int | None = None,
                   block_rows: int | None = None) -> Program:
    """Compile ``y = x @ W`` into a DAIS program (spec §8.3).

    Parameters
    ----------
    W
        ``[n_in, n_out]`` array of dyadic constants.
    inputs
        One ``(k, i, f)`` per input (or a single tuple for all).
    method
        ``"wmc"`` (default), ``"mc"`` or ``"dummy"`` (no CSE; plain adder trees).
    max_depth
        Adder-depth limit per output (``None`` = unlimited; never below ``ceil(log2(terms))``).
    cse_budget
        Maximum greedy CSE steps (heap pops; ``None`` = unlimited).  When it runs out the remaining
        terms go to plain adder trees (exact either way); a budget in steps keeps the program the
        same on every machine and run.
    search
        Try the method/tie-break/decomposition combinations of :data:`SEARCH_SPACE` and keep the
        one with fewest adders (then fewest adder bits); deterministic.
    tiebreak
        Order among equally scored patterns: 0 by operand index, 1 narrow first, 2 wide first,
        3 small shift first, 4 shallow first, 5 highest signal indices first (the most recently
        created adders; the larger of the two indices decides, then the smaller).
    decompose
        Column decomposition before the CSE (spec §8.3 step 5, :func:`column_tree`); not combined
        with ``max_depth``.
    decompose_depth
        Tree-depth limit of the decomposition (``None``: unlimited); each level can add one adder
        to an output's depth.
    block_rows
        Row-block CSE (:meth:`CMVMCompiler._cse_blocks`; ``None``: the whole matrix).
    """
    if search:
        best = None
        for m, tb, dd in SEARCH_SPACE:
            if dd and max_depth is not None:
                continue  # decomposition is not combined with a depth limit
            p = compile_matrix(W, inputs, method=m, max_depth=max_depth, cse_budget=cse_budget, tiebreak=tb,
                               decompose=dd > 0, decompose_depth=dd or None)
            st = p.stats()
            key = (st["n_adders"], st["adder_bits"])
            if best is None or key < best[0]:
                best = (key, p)
        return best[1]
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    n_in, n_out = W.shape
    if len(inputs) == 3 and not isinstance(inputs[0], (tuple, list)):
        inputs = [tuple(inputs)] * n_in
    if len(inputs) != n_in:
        raise ValueError(f"{len(inputs)} input types for {n_in} inputs")
    M, F = _to_int_matrix(W)
    b = ProgramBuilder(n_in)
    slots = {}
    for j in range(n_in):
        if any(M[j]) and sum(inputs[j]) > 0:  # dead rows / zero-width inputs get no op
            slots[j] = b.add_op(-1, j, -1, 0, tuple(inputs[j]))
    ins = [(slots[j], *inputs[j]) if j in slots else (-1, 0, 0, 0) for j in range(n_in)]
    Mlive = [M[j] if j in slots else [0] * n_out for j in range(n_in)]
    comp = CMVMCompiler(b, ins, method=method, max_depth=max_depth, cse_budget=cse_budget,
                        tiebreak=tiebreak, block_rows=block_rows)
    res = comp.solve(Mlive, decompose=decompose, decompose_depth=decompose_depth)
    idx, sh, neg = [], [], []
    for r in res:
        if r is None:
            idx.append(-1), sh.append(0), neg.append(0)
        else:
            idx.append(r[0]), sh.append(r[1] - F), neg.append(int(r[2]))
    b.set_outputs(idx, sh, neg)
    return b.build(adder_size=1, carry_size=-1)


#: ``(method, tiebreak, decomposition tree depth (0: none))`` combinations tried by ``search=True``
SEARCH_SPACE = (("mc", 3, 0), ("mc", 0, 0), ("mc", 2, 0), ("wmc", 0, 0), ("mc", 0, 1), ("mc", 2, 1), ("wmc", 0, 1),
                ("mc", 5, 0), ("mc", 5, 1))


def verify_linear(p: Program, W) -> bool:
    """Propagate exact linear forms through a shift-add program and compare with ``W``."""
    forms: list = []
    for op in p.ops:
        if op.opcode == -1:
            forms.append({op.id0: Fraction(1)})
        elif op.opcode in (0, 1):
            a, c = forms[op.id0], forms[op.id1]
            d = (op.data + 2**31) % 2**32 - 2**31
            sg = 1 if op.opcode == 0 else -1
            f = dict(a)
            for j, v in c.items():
                f[j] = f.get(j, 0) + sg * v * Fraction(2) ** d
            forms.append(f)
        else:
            raise ValueError(f"op {len(forms)}: opcode {op.opcode} is not shift-add")
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    for c in range(p.n_out):
        q = int(p.out_idxs[c])
        got = {} if q < 0 else {j: v * Fraction(2) ** int(p.out_shifts[c]) * (-1 if p.out_negs[c] else 1)
                                 for j, v in forms[q].items()}
        for j in range(W.shape[0]):
            if got.get(j, 0) != Fraction(float(W[j, c])):
                return False
    return True
