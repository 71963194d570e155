"""Code generation (spec §4.8–§4.9): per-tile straight-line streams for a chosen distribution.

Serial loops are unrolled in nest order.  Each operand lives in its CRAM buffer at its residency
level and is (re)loaded when the serial indices it depends on change: vectors with a plain
``load`` (or ``load_shf bcast=1`` when every CRAM needs the same vector), per-CRAM scalars with a
scatter ``load_shf``, tile scalars with ``load_shf`` replication or into the RF for
``mul_const``/``add_const``.  Operands shared by tiles are loaded by one tile of the group and
forwarded with a systolic ``tile_bcast``.  Accumulations grow their width step by step (§4.6),
fuse into ``mac`` when the product's operands are in CRAM (bit-level lifetime), and reductions over
CRAMs end with ``reduce_tile``; results are stored at their declared width.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .. import precision as P
from ..config import PimsabConfig
from ..workloads.builder import Builder
from .lang import Access, Bin, Cast, CompileError, Const, Expr, Loop, Select, Shift
from .layout import Layout
from .model import Candidate, Nest, dtype_prec, is_mac, log2_exact, mesh_aligned, strip, temp_layout
from .widths import Width, const_formats, converts, round_float, width
from .window import column_trees, find_window, halo_pattern


@dataclass(frozen=True)
class View:
    row: int
    bits: int
    signed: bool
    fmt: str = ""  # "f32"/"f16"/"bf16" for floats

    @property
    def prec(self) -> int:
        return dtype_prec(self)


def _p(w: Width) -> int:
    return dtype_prec(w)


class Generator:
    """Emits the program of one candidate; see the module docstring."""

    def __init__(self, nest: Nest, cand: Candidate, cfg: PimsabConfig, layout: Layout, *, adaptive: bool,
                 bit_lifetime: bool, mode: str, explicit: bool = False) -> None:
        self.nest, self.cand, self.cfg, self.layout = nest, cand, cfg, layout
        self.adaptive, self.bit_lifetime, self.mode, self.explicit = adaptive, bit_lifetime, mode, explicit
        self.b = Builder(cfg)
        lv = nest.leaves
        self.serial_loops = [lp for lp in lv if cand.serial.get(lp, 1) > 1]
        rf_leaves = nest.rf_factor.leaves if nest.rf_factor else frozenset()
        arr = [lp for lp in lv if cand.arrays.get(lp, 1) > 1]
        self.arr_order = ([lp for lp in arr if lp in rf_leaves and not lp.reduce]
                          + [lp for lp in arr if lp not in rf_leaves and not lp.reduce] + [lp for lp in arr if lp.reduce])
        if any(lp.reduce for lp in arr if lp in rf_leaves):
            raise CompileError("internal: an RF multiplier cannot vary along a reduction mapped to CRAMs")
        self.n_arr = math.prod(cand.arrays.get(lp, 1) for lp in arr)
        self.used = self.n_arr * cfg.cram_cols
        self.size = 0 if self.used == cfg.tile_bitlines else self.used
        radices = [cand.arrays[lp] for lp in self.arr_order]
        idx = np.unravel_index(np.arange(self.n_arr), radices) if radices else ()
        self.arr_val = {lp: np.asarray(v, np.int64) for lp, v in zip(self.arr_order, idx)}
        self.groups = math.prod(cand.arrays.get(lp, 1) for lp in self.arr_order if lp in rf_leaves)
        self.tile_loops = [lp for lp in nest.dp if cand.tiles.get(lp, 1) > 1]
        self.tiles = self._placement()
        self._pat_cache: dict = {}
        self.prev_off: dict = {}
        self._linear: dict = {}
        self.out_index = tuple(nest.sched.op.axes)  # kept alive: caches are keyed by id()
        self._dims_cache: dict = {}
        self.windows = {o.name: w for o in nest.operands
                        if (w := find_window(nest, o, cand.tiles, cand.arrays, cfg.cram_cols)) is not None}
        self.win_state: dict = {}

    # ------------------------------------------------------------------ placement and indices
    def _placement(self) -> list[tuple[int, dict[Loop, int]]]:
        tl, cfg = self.tile_loops, self.cfg
        f = [self.cand.tiles[lp] for lp in tl]
        out = []
        for combo in itertools.product(*[range(k) for k in f]):
            vals = dict(zip(tl, combo))
            if len(tl) == 2 and sorted(f) == sorted((cfg.mesh_width, cfg.mesh_height)) and f[0] != f[1]:
                col_lp = tl[0] if f[0] == cfg.mesh_width else tl[1]
                row_lp = tl[1] if col_lp is tl[0] else tl[0]
                tile = vals[row_lp] * cfg.mesh_width + vals[col_lp]
            else:
                tile = int(np.ravel_multi_index(combo, f)) if f else 0
            out.append((tile, vals))
        return out

    def leaf_scalar(self, lp: Loop, tvals: dict, svals: dict) -> int:
        """Tile and serial part of a leaf loop's value (the array part varies over CRAMs)."""
        t, a = self.cand.tiles.get(lp, 1), self.cand.arrays.get(lp, 1)
        return tvals.get(lp, 0) * (lp.extent // t) + svals.get(lp, 0) * a

    def dims(self, acc_index, shape) -> list[tuple[int, dict[Loop, int]]]:
        """Per dimension: (constant, {leaf: coefficient})."""
        hit = self._dims_cache.get(id(acc_index))
        if hit is not None:
            return hit
        out = self._dims_cache[id(acc_index)] = []
        for a in acc_index:
            const, co = a.const, {}
            for lp, c in a.terms.items():
                for leaf, k in self.nest.sched.value[lp].items():
                    co[leaf] = co.get(leaf, 0) + c * k
            out.append((const, co))
        return out

    def flat(self, name: str, index, shape, tvals, svals, *, crams: bool, bitlines: bool, n_crams: int | None = None):
        """(offset, pattern id) of the elements a transfer moves: CRAM-major, bitline-minor.

        The pattern (array and bitline parts of the affine index) is computed once per operand and
        transfer kind; the offset (tile and serial parts) per transfer, with a bounds check."""
        key = (id(index), crams, bitlines, n_crams)
        hit = self._pat_cache.get(key)
        dims = self.dims(index, shape)
        if hit is None:
            cols = self.cfg.cram_cols
            nc = self.n_arr if n_crams is None or n_crams < -1 else (1 if n_crams == -1 else n_crams)
            c_idx = np.arange(nc) if crams else np.zeros(1, np.int64)
            b_idx = np.arange(cols) if bitlines else np.zeros(1, np.int64)
            valid = np.ones((len(c_idx), len(b_idx)), bool)
            if crams:
                valid &= (c_idx < self.n_arr)[:, None]
            if bitlines:
                valid &= (b_idx < self.nest.bitline.extent)[None, :]
            cc = np.minimum(c_idx, max(self.n_arr - 1, 0))
            strides = np.cumprod((1,) + tuple(reversed(shape[1:])))[::-1]
            pat = np.zeros(valid.shape, np.int64)
            ranges = []
            for (const, co), st in zip(dims, strides):
                v_part = np.zeros(valid.shape, np.int64)
                for leaf, k in co.items():
                    if leaf is self.nest.bitline:
                        v_part = v_part + k * b_idx[None, :]
                    elif leaf in self.arr_val:
                        v_part = v_part + k * self.arr_val[leaf][cc][:, None]
                ranges.append((v_part[valid].min(), v_part[valid].max()) if valid.any() else (0, 0))
                pat = pat + int(st) * v_part
            final = np.where(valid, pat, -1).reshape(-1)
            if n_crams == -1:  # a tile scalar replicated from element 0 of a cram_cols vector
                final = np.concatenate([final, -np.ones(cols - 1, np.int64)])
            elif n_crams == -2:  # results of a reduction over CRAMs are in CRAMs c = 0 (mod factor)
                keep = np.ones(self.n_arr, bool)
                for lp in self.arr_order:
                    if lp.reduce:
                        keep &= self.arr_val[lp] == 0
                final = np.where(np.repeat(keep, cols), final, -1)
            elif n_crams == -3:  # one RF value per group of CRAMs (the first CRAM of each group)
                final = final[:: max(1, self.n_arr // self.groups)][: self.groups]
            hit = self._pat_cache[key] = ([int(x) for x in strides], ranges, self.layout.pattern(final))
        strides, ranges, pid = hit
        off = 0
        for (const, co), st, (lo, hi), n in zip(dims, strides, ranges, shape):
            s_part = const
            for leaf, k in co.items():
                if leaf is not self.nest.bitline:
                    s_part += k * self.leaf_scalar(leaf, tvals, svals)
            if s_part + lo < 0 or s_part + hi >= n:
                raise CompileError(f"tensor {name}: index {s_part + (lo if s_part + lo < 0 else hi)} out of range "
                                   f"0..{n - 1} in a dimension (pad the tensor on the host)")
            off += st * s_part
        return off, pid

    # ------------------------------------------------------------------ emission helpers
    def emit_all(self, rows: list[tuple]) -> None:
        for tile, _ in self.tiles:
            for r in rows:
                self.b.rows.append(list(r))
                self.b.tiles.append(tile)

    def _emit_step(self, rows: list, sv: dict) -> None:
        """Append a step's rows to every tile's stream; ``("LOAD", operand, row)`` entries are the
        just-in-time loads of lazy operands (per tile or group, at that point of every stream)."""
        bufs = {bf.name: bf for bf in self.cand.buffers}
        for r in rows:
            if r and r[0] == "LOAD":
                _, o, row = r
                self._load(o, bufs[o.name], 0, sv, row=row)
            else:
                for tile, _ in self.tiles:
                    self.b.rows.append(list(r))
                    self.b.tiles.append(tile)

    def generate(self):
        from ..isa import build_isa
        self.ISA = build_isa()
        nest, cfg, cand = self.nest, self.cfg, self.cand
        S = self.serial_loops
        row = 0
        self.buf_row = {}
        for bf in cand.buffers:
            self.buf_row[bf.name] = row
            row += bf.rows if bf.role != "temp" else 0
        offsets, peak = temp_layout(nest, self.adaptive, self.bit_lifetime, real=True)
        self.temp_row = {k: row + v for k, v in offsets.items()}
        row += peak
        self.rows_used = row
        if row > cfg.cram_rows:
            raise CompileError(f"compute {nest.sched.op.name}: code generation needs {row} wordlines > "
                               f"{cfg.cram_rows}; use a more conservative loop organisation")
        self.const_regs: dict = {}
        self.is_float = bool(width(nest.body, self.adaptive).fmt) if not isinstance(strip(nest.body), Access) \
            else nest.sched.op.dtype.is_float
        self.cfmt = const_formats(nest.body, nest.sched.op.dtype.token if self.is_float else "")
        keys: list = []
        for e in _walk(nest.body):
            vals = [(e.value, e)] if isinstance(e, Const) else []
            if isinstance(e, Bin) and e.op == "sub" and isinstance(strip(e.b), Const):
                vals = [(-strip(e.b).value, strip(e.b))]
            keys += [self._ckey(v, c) for v, c in vals if self._ckey(v, c) not in keys]
        # RF operand: the values of consecutive steps are loaded together (one load_rf per batch)
        self.rf_seq, self.rf_step = self._rf_sequence(S)
        free = cfg.rf_regs - len(keys)
        self.rf_per = max(1, min(len(self.rf_seq), free // self.groups)) if nest.rf_factor else 0
        self.rf_base = self.groups * self.rf_per if nest.rf_factor else 0
        for k in keys:
            self.const_regs[k] = self.rf_base + len(self.const_regs)
        if self.rf_base + len(self.const_regs) > cfg.rf_regs:
            raise CompileError(f"compute {nest.sched.op.name}: {self.rf_base + len(self.const_regs)} RF registers "
                               f"needed > {cfg.rf_regs}")
        self.emit_all([self.ISA.row("write_rf", rd=r, imm=self._imm(k)) for k, r in self.const_regs.items()])
        done: set[int] = set()
        for e in _walk(nest.body):
            if isinstance(e, Const) and id(e) in self.temp_row and id(e) not in done:
                done.add(id(e))
                r0, w = self.temp_row[id(e)], self._const_width(e)
                self.emit_all([self.ISA.row("reset", rd=r0, pd=_p(w), size=self.size),
                               self.ISA.row("add_const", rd=r0, pd=_p(w), ra=r0, pa=_p(w),
                                            rb=self.const_regs[self._ckey(e.value, e)], pb=self._const_prec(),
                                            size=self.size)])
        resident: dict = {}
        count: dict[int, int] = {}
        red_serial = math.prod(cand.serial.get(lp, 1) for lp in nest.red)
        bufs = {bf.name: bf for bf in cand.buffers}
        out_buf = cand.buffers[0]
        rf_batch = None
        stacked = {o.name: self._rf_sequence(S, o) for o in nest.operands if o.name in cand.stack}
        # window operands last: their large loads then queue on the DRAM channels behind the small ones
        load_order = sorted(nest.operands, key=lambda o: o.name in self.windows)
        self.stack_slot: dict[str, int] = {}
        for step, combo in enumerate(itertools.product(*[range(cand.serial[lp]) for lp in S])):
            sv = dict(zip(S, combo))
            for o in load_order:
                if o.name in nest.lazy:
                    continue
                bf = bufs[o.name]
                if o.kind == "rf":  # a batch of the RF values of consecutive steps
                    idx = self.rf_step[step]
                    self.rf_slot = idx % self.rf_per
                    if idx // self.rf_per != rf_batch:
                        rf_batch = idx // self.rf_per
                        self._load_rf(o, self.rf_seq[rf_batch * self.rf_per:(rf_batch + 1) * self.rf_per])
                    continue
                if o.name in cand.stack:  # stacked scalars: one load for k consecutive steps
                    seq, at = stacked[o.name]
                    k = cand.stack[o.name]
                    self.stack_slot[o.name] = at[step] % k
                    if at[step] % k == 0 and resident.get(o.name) != at[step]:
                        resident[o.name] = at[step]
                        self._load_stacked(o, bf, seq[at[step]:at[step] + k])
                    continue
                slot, key = self._slot(bf, o.leaves, sv)
                if resident.get((bf.name, slot)) != key:
                    resident[(bf.name, slot)] = key
                    self._load(o, bf, slot, sv)
            oslot, _ = self._slot(out_buf, nest.out_leaves, sv)
            views = [None if o.name in nest.lazy else self._view(o, bufs[o.name], sv) for o in nest.operands]
            self.cur = {k: views[i] for k, i in nest.alias.items()}
            self._memo: dict = {}
            t = count.get(oslot, 0)
            acc_row = self.buf_row[out_buf.name] + oslot * out_buf.bits
            rows = self._step(acc_row, t)
            self._emit_step(rows, sv)
            count[oslot] = t + 1
            if t + 1 == red_serial:
                count[oslot] = 0
                self._finish(acc_row, t + 1, sv)
        return self.b.program()

    def _slot(self, bf, leaves, sv) -> tuple[int, tuple]:
        S = self.serial_loops
        inner = [lp for j, lp in enumerate(S) if j + 1 >= bf.level and lp in leaves]
        slot = 0
        for lp in inner:
            slot = slot * self.cand.serial[lp] + sv[lp]
        key = tuple(sv[lp] for j, lp in enumerate(S) if lp in leaves or j + 1 < bf.level)
        return slot, key

    def _view(self, o, bf, sv):
        if o.kind == "rf":
            return None
        slot = self.stack_slot[o.name] if o.name in self.cand.stack else self._slot(bf, o.leaves, sv)[0]
        t = o.access.tensor.dtype
        return View(self.buf_row[bf.name] + slot * bf.bits, t.bits, t.signed, t.token if t.is_float else "")

    # ------------------------------------------------------------------ loads
    def _groups(self, leaves) -> list[list[int]]:
        """Tiles sharing an operand: equal values of the tile loops it depends on."""
        if not mesh_aligned(self.cand.tiles, self.cfg) and any(lp in leaves for lp in self.tile_loops):
            return [[tile] for tile, _ in self.tiles]
        g: dict[tuple, list[int]] = {}
        for tile, tv in self.tiles:
            g.setdefault(tuple(tv[lp] for lp in self.tile_loops if lp in leaves), []).append(tile)
        return list(g.values())

    def _load(self, o, bf, slot, sv, row: int | None = None) -> None:
        cfg, acc = self.cfg, o.access
        t = acc.tensor
        prec = dtype_prec(t.dtype)
        tr = 0 if t.const else 1
        in_arr = any(lp in self.arr_val for lp in o.leaves)
        lazy = row is not None
        row = self.buf_row[bf.name] + slot * bf.bits if row is None else row
        tv_of = dict(self.tiles)
        window = o.name in self.windows and not lazy and o.kind == "vector" and in_arr
        for group in self._window_groups(o) if window else self._groups(o.leaves):
            sender = min(group)
            tv = tv_of[sender]
            if window:
                self.flat(t.name, acc.index, t.shape, tv, sv, crams=True, bitlines=True)  # bounds check
                self._window(o, bf, slot, group, tv, sv, row, prec, tr)
                continue
            if o.kind == "vector" and in_arr:
                off, pid = self.flat(t.name, acc.index, t.shape, tv, sv, crams=True, bitlines=True)
                if len(group) == 1 and not lazy and self._slide(o, bf, slot, sender, row, prec, off, pid, tr):
                    continue
                kw, fl = dict(size=self.size), {}
                mn = "load"
            elif o.kind == "vector":
                off, pid = self.flat(t.name, acc.index, t.shape, tv, sv, crams=False, bitlines=True)
                kw, fl, mn = dict(size=cfg.cram_cols, bcast=1), dict(bcast=1), "load_shf"
            elif in_arr:
                off, pid = self.flat(t.name, acc.index, t.shape, tv, sv, crams=True, bitlines=False,
                                     n_crams=cfg.crams_per_tile)
                kw, fl, mn = dict(size=cfg.crams_per_tile, shf_en=1, shf=0), dict(shf=0), "load_shf"
            else:
                off, pid = self.flat(t.name, acc.index, t.shape, tv, sv, crams=False, bitlines=False, n_crams=-1)
                kw, fl, mn = dict(size=cfg.cram_cols, bcast=1, shf_en=1, shf=0), dict(bcast=1, shf=0), "load_shf"
            addr = self.layout.load_region(t.name, pid, off, o.dram_bits, t.dtype.bits, t.dtype.signed,
                                           tr if mn == "load" else 1)
            self.b(sender, mn, row=row, addr=addr, p=prec, tr=tr if mn == "load" else 1, **kw)
            others = [x for x in group if x != sender]
            if others:
                size = kw["size"] if mn == "load" else 0
                self.b.bcast(sender, row, size, prec, others, mode=self.mode, **fl)

    def _rf_sequence(self, S, o=None) -> tuple[list[dict], list[int]]:
        """Serial values at each change of the RF operand's values (or of ``o``'s), and per step its
        index there."""
        o = o or self.nest.rf_factor
        if o is None:
            return [], []
        seq, at, prev = [], [], None
        for combo in itertools.product(*[range(self.cand.serial[lp]) for lp in S]):
            sv = dict(zip(S, combo))
            key = tuple(sv[lp] for lp in S if lp in o.leaves)
            if key != prev:
                seq.append(sv)
                prev = key
            at.append(len(seq) - 1)
        return seq, at

    def _load_stacked(self, o, bf, batch: list[dict]) -> None:
        """One scatter ``load_shf`` of the per-CRAM scalars of consecutive steps: step j's values are
        bits [j·b, (j+1)·b) of one k·b-bit unsigned DRAM element per CRAM, i.e. slot j of the buffer."""
        cfg, t, acc = self.cfg, o.access.tensor, o.access
        prec = P.make("u", len(batch) * o.bits)
        row = self.buf_row[bf.name]
        tv_of = dict(self.tiles)
        for group in self._groups(o.leaves):
            sender, tv = min(group), tv_of[min(group)]
            got = [self.flat(t.name, acc.index, t.shape, tv, sv, crams=True, bitlines=False,
                             n_crams=cfg.crams_per_tile) for sv in batch]
            off0 = min(off for off, _ in got)
            parts = [np.where(self.layout.patterns[pid] >= 0, self.layout.patterns[pid] + (off - off0), -1)
                     for off, pid in got]
            pid = self.layout.pattern(np.concatenate(parts))
            addr = self.layout.load_region(t.name, pid, off0, P.decode(prec).dram_bits, len(batch) * o.bits, False,
                                           1, stack=len(batch))
            self.b(sender, "load_shf", row=row, addr=addr, p=prec, tr=1, size=cfg.crams_per_tile, shf_en=1, shf=0)
            others = [x for x in group if x != sender]
            if others:
                self.b.bcast(sender, row, 0, prec, others, mode=self.mode, shf=0)

    def _load_rf(self, o, batch: list[dict]) -> None:
        """One ``load_rf`` per tile of the RF values of several steps: step j's value for CRAM group g
        goes to register j·groups + g (every tile loads its own RF; the image is small)."""
        t, acc = o.access.tensor, o.access
        tv_of = dict(self.tiles)
        for group in self._groups(o.leaves):
            tv = tv_of[min(group)]
            parts, off0 = [], None
            for sv in batch:
                off, pid = self.flat(t.name, acc.index, t.shape, tv, sv, crams=True, bitlines=False, n_crams=-3)
                off0 = off if off0 is None else off0
                pat = self.layout.patterns[pid]
                parts.append(np.where(pat >= 0, pat + (off - off0), -1))
            pid = self.layout.pattern(np.concatenate(parts))
            addr = self.layout.load_region(t.name, pid, off0, o.dram_bits, t.dtype.bits, t.dtype.signed, 1)
            for tile in group:
                self.b(tile, "load_rf", row=0, addr=addr, size=self.groups * len(batch), p=dtype_prec(t.dtype))

    def _slide(self, o, bf, slot, tile, row, prec, off, pid, tr) -> bool:
        """Sliding window (fir): when the new vector is the resident one moved by d < cram_cols
        positions, ``shift`` it across the CRAM ring and reload only the last CRAM."""
        key = (bf.name, slot, tile)
        prev, self.prev_off[key] = self.prev_off.get(key), off
        sigma = self._linear.get(pid)
        if sigma is None:
            pat = self.layout.patterns[pid]
            d = np.diff(pat)
            sigma = self._linear[pid] = int(d[0]) if len(d) and (pat >= 0).all() and (d == d[0]).all() and d[0] else 0
        cols = self.cfg.cram_cols
        if prev is None or not sigma or (off - prev) % sigma or not 0 < (off - prev) // sigma < cols:
            return False
        dist = (off - prev) // sigma
        self.b(tile, "shift", rd=row, pd=prec, ra=row, pa=prec, dir=0, dist=dist - 1, size=self.size)  # field = d - 1
        last = self.n_arr - 1
        piece = self.layout.pattern(self.layout.patterns[pid][last * cols:(last + 1) * cols])
        addr = self.layout.load_region(o.access.tensor.name, piece, off, o.dram_bits, o.bits, o.access.tensor.dtype.signed, tr)
        self.b(tile, "load", row=row, addr=addr, size=cols, cram=last, p=prec, tr=tr)
        return True

    def _window_groups(self, o) -> list[list[int]]:
        """Tiles sharing a window operand: equal values of the tile loops it depends on, in any
        mapping (its trees are point-to-point hops, not systolic chains along mesh rows/columns)."""
        g: dict[tuple, list[int]] = {}
        for tile, tv in self.tiles:
            g.setdefault(tuple(tv[lp] for lp in self.tile_loops if lp in o.leaves), []).append(tile)
        return list(g.values())

    def _window(self, o, bf, slot, group, tv, sv, row, prec, tr) -> None:
        """Sliding window with a halo (:mod:`.window`): ``shift`` every tile's resident copy left when
        only the window loops moved it forward; otherwise load it with its halo and send it down each
        mesh column (:func:`.window.column_trees`; every tile loads it when no halo pattern exists)."""
        win, t = self.windows[o.name], o.access.tensor
        dims = self.dims(o.access.index, t.shape)
        b = self.nest.bitline
        parts = [const + sum(k * self.leaf_scalar(leaf, tv, sv) for leaf, k in co.items() if leaf is not b)
                 for const, co in dims]
        others = tuple(p for i, p in enumerate(parts) if i != win.dim)
        key = (bf.name, slot, min(group))
        st = self.win_state.get(key)
        if st is not None and st[0] == others and (parts[win.dim] - st[1]) % win.cb == 0:
            D = (parts[win.dim] - st[1]) // win.cb
            if st[2] < D <= self.cfg.cram_cols - self.nest.bitline.extent:
                for tile in group:
                    self.b(tile, "shift", rd=row, pd=prec, ra=row, pa=prec, dir=0, dist=D - st[2] - 1, size=self.size)
                self.win_state[key] = (others, st[1], D)
                return
        halo = halo_pattern(dims, t.shape, parts, self.arr_val, self.n_arr, self.cfg.cram_cols, win)
        if halo is None:  # (a valid element before the offset): plain loads, no sliding
            off, pid = self.flat(t.name, o.access.index, t.shape, tv, sv, crams=True, bitlines=True)
            addr = self.layout.load_region(t.name, pid, off, o.dram_bits, t.dtype.bits, t.dtype.signed, tr)
            for tile in group:
                self.b(tile, "load", row=row, addr=addr, p=prec, tr=tr, size=self.size)
            self.win_state.pop(key, None)
            return
        off, pat = halo
        addr = self.layout.load_region(t.name, self.layout.pattern(pat), off, o.dram_bits, t.dtype.bits,
                                       t.dtype.signed, tr)
        for loader, rounds in column_trees(self.cfg.mesh_width, group):
            self.b(loader, "load", row=row, addr=addr, p=prec, tr=tr, size=self.size)
            for hops in rounds:
                for src, dst in hops:
                    f = dict(size=self.size, src_tile=src, dst_tile=dst, src_row=row, dst_row=row, p=prec)
                    self.b(src, "tile_tx", **f)
                    self.b(dst, "tile_rx", **f)
        self.win_state[key] = (others, parts[win.dim], 0)

    def _halving(self, acc_row: int, w: Width, final: Width, levels: int) -> None:
        """``reduction_codegen="explicit"``: at level i every CRAM c = 0 (mod 2^i) receives the partial
        sum of CRAM c + 2^(i−1) (``cram_tx_rx`` into the partner rows), then one SIMD ``add`` (the
        shape of the official compiled code); the reduction loops are innermost in the CRAM order."""
        part = self.buf_row["partner"]
        for i in range(1, levels + 1):
            w_next = Width(min(w.bits + 1, final.bits), w.signed)
            step = 1 << i
            for tile, _ in self.tiles:
                for c in range(0, self.n_arr, step):
                    self.b(tile, "cram_tx_rx", src_tile=tile, dst_tile=tile, src_cram=c + step // 2, dst_cram=c,
                           src_row=acc_row, dst_row=part, p=_p(w))
            self.emit_all([self._row("add", rd=acc_row, pd=_p(w_next), ra=acc_row, pa=_p(w), rb=part, pb=_p(w))])
            w = w_next

    # ------------------------------------------------------------------ compute
    def _ckey(self, v, c: Const) -> tuple:
        """RF key of the value ``v`` of constant ``c``: a float constant is rounded to its format."""
        return ("f", float(round_float(v, self.cfmt[id(c)]))) if self.is_float else ("i", int(v))

    def _const_width(self, c: Const) -> Width:
        """Width of a constant's row: its float format, or its integer width."""
        fmt = self.cfmt.get(id(c)) if self.is_float else None
        return Width(P.decode(P.make(fmt)).bits, True, fmt) if fmt else width(c)

    def _imm(self, key: tuple) -> int:
        kind, v = key
        return int(np.float32(v).view(np.uint32)) if kind == "f" else int(v) & 0xFFFFFFFF

    def _const_prec(self) -> int:
        return P.make("f32") if self.is_float else P.make("i", 32)

    def _row(self, mn: str, **kw) -> tuple:
        kw.setdefault("size", self.size)
        return self.ISA.row(mn, **kw)

    def _eval(self, e: Expr, rows: list, dest: tuple[int, Width] | None = None) -> View:
        """Emit the instructions computing ``e``; returns where the value is (shared subexpressions are
        computed once per step)."""
        if dest is None and id(e) in self._memo:
            return self._memo[id(e)]
        v = self._eval_node(e, rows, dest)
        if dest is None:
            self._memo[id(e)] = v
        return v

    def _eval_node(self, e: Expr, rows: list, dest: tuple[int, Width] | None = None) -> View:
        w = width(e, self.adaptive)
        if isinstance(e, Access):
            o = self.nest.operands[self.nest.alias[id(e)]]
            if o.name in self.nest.lazy:
                t = e.tensor.dtype
                v = View(self.temp_row[id(e)], t.bits, t.signed, t.token if t.is_float else "")
                rows.append(("LOAD", o, v.row))
                return self._place(v, rows, dest)
            return self._place(self.cur[id(e)], rows, dest)
        if isinstance(e, Const):
            w = self._const_width(e)
            return self._place(View(self.temp_row[id(e)], w.bits, w.signed, w.fmt), rows, dest)
        if isinstance(e, Cast) and converts(e):  # float format conversion: a rounding/widening copy
            v = self._eval(e.expr, rows)
            d_row, d_w = dest if dest else (self.temp_row[id(e)], w)
            rows.append(self._row("copy", rd=d_row, pd=_p(d_w), ra=v.row, pa=v.prec))
            return View(d_row, d_w.bits, d_w.signed, d_w.fmt)
        if isinstance(e, Cast):
            if dest is not None:
                return self._eval(e.expr, rows, dest)
            v = self._eval(e.expr, rows)
            if w.bits < v.bits or (w.bits == v.bits and w.signed != v.signed):
                v = View(v.row, w.bits, w.signed)
            return self._place(v, rows, dest)
        if isinstance(e, Shift) and e.amount < 0:
            v = self._eval(e.expr, rows)
            c = -e.amount
            v = View(v.row + min(c, v.bits - 1), max(1, v.bits - c), v.signed) if c < v.bits else \
                View(v.row + v.bits - 1, 1, v.signed)
            return self._place(v, rows, dest)
        d_row, d_w = dest if dest else (self.temp_row[id(e)], w)
        pd = _p(d_w)
        if isinstance(e, Shift):
            v = self._eval(e.expr, rows)
            c = e.amount
            rows.append(self._row("reset", rd=d_row, pd=P.make("u", min(c, d_w.bits))))
            if c < d_w.bits:
                rows.append(self._row("copy", rd=d_row + c, pd=_p(Width(d_w.bits - c, d_w.signed)), ra=v.row,
                                      pa=v.prec))
            return View(d_row, d_w.bits, d_w.signed, d_w.fmt)
        if isinstance(e, Select):
            m, a, b_ = self._eval(e.mask, rows), self._eval(e.a, rows), self._eval(e.b, rows)
            rows.append(self._row("set_mask", ra=m.row))
            rows.append(self._row("copy", rd=d_row, pd=pd, ra=b_.row, pa=b_.prec))
            rows.append(self._row("copy", pred=1, rd=d_row, pd=pd, ra=a.row, pa=a.prec))
            return View(d_row, d_w.bits, d_w.signed, d_w.fmt)
        assert isinstance(e, Bin)
        xs, ys = strip(e.a), strip(e.b)
        rf = self.nest.rf_factor
        scal = None
        if e.op in ("mul", "add") and rf is not None:
            if isinstance(ys, Access) and ys is rf.access:
                scal, other = ys, e.a
            elif isinstance(xs, Access) and xs is rf.access:
                scal, other = xs, e.b
        if scal is not None or (e.op in ("mul", "add", "sub") and isinstance(ys, Const)) or \
                (e.op in ("mul", "add") and isinstance(xs, Const)):
            if scal is None:
                c, other = (ys, e.a) if isinstance(ys, Const) else (xs, e.b)
                val = -c.value if e.op == "sub" else c.value
                regs, pb = [self.const_regs[self._ckey(val, c)]], self._const_prec()
            else:
                regs = [self.rf_slot * self.groups + g for g in range(self.groups)]
                pb = dtype_prec(scal.tensor.dtype)
            v = self._eval(other, rows)
            mn = "mul_const" if e.op == "mul" else "add_const"
            gw = self.used // len(regs)
            for g in reversed(range(len(regs))):
                size = (g + 1) * gw
                rows.append(self._row(mn, rd=d_row, pd=pd, ra=v.row, pa=v.prec, rb=regs[g], pb=pb,
                                      size=0 if size == self.cfg.tile_bitlines else size))
            return View(d_row, d_w.bits, d_w.signed, d_w.fmt)
        a, b_ = self._eval(e.a, rows), self._eval(e.b, rows)
        mn = {"mul": "mult"}.get(e.op, e.op)
        rows.append(self._row(mn, rd=d_row, pd=pd, ra=a.row, pa=a.prec, rb=b_.row, pb=b_.prec))
        return View(d_row, d_w.bits, d_w.signed, d_w.fmt)

    def _place(self, v: View, rows: list, dest) -> View:
        if dest is None:
            return v
        rows.append(self._row("copy", rd=dest[0], pd=_p(dest[1]), ra=v.row, pa=v.prec))
        return View(dest[0], dest[1].bits, dest[1].signed, dest[1].fmt)

    def _acc_width(self, t: int) -> Width:
        """Width of an accumulator holding t terms (growing accumulator, §4.6)."""
        A = self.nest.out_width if self.adaptive else self.nest.out_declared
        if self.nest.reduce is None or self.nest.reduce.kind != "sum" or A.fmt:
            return A
        Pw = width(self.nest.body, self.adaptive)
        bits = min(Pw.bits + (math.ceil(math.log2(t)) if t > 1 else 0), A.bits)
        return Width(bits, A.signed or Pw.signed)

    def _step(self, acc_row: int, t: int) -> list:
        rows: list = []
        nest = self.nest
        red = nest.reduce
        if red is None:
            self._eval(nest.body, rows, dest=(acc_row, self._acc_width(1)))
            return rows
        if t == 0:
            self._eval(nest.body, rows, dest=(acc_row, self._acc_width(1)))
            return rows
        a_t, a_n = self._acc_width(t), self._acc_width(t + 1)
        core = strip(nest.body)
        if self.bit_lifetime and self.adaptive and is_mac(nest) and nest.rf_factor is None:
            x, y = self._eval(core.a, rows), self._eval(core.b, rows)
            rows.append(self._row("mac", rd=acc_row, pd=_p(a_n), ra=x.row, pa=x.prec, rb=y.row, pb=y.prec,
                                  pin=_p(a_t), scratch=self.temp_row[id(nest.body)]))
            return rows
        v = self._eval(nest.body, rows)
        mn = {"sum": "add", "max": "max", "min": "min"}[red.kind]
        rows.append(self._row(mn, rd=acc_row, pd=_p(a_n), ra=acc_row, pa=_p(a_t), rb=v.row, pb=v.prec))
        return rows

    def _finish(self, acc_row: int, terms: int, sv) -> None:
        nest, cfg = self.nest, self.cfg
        w = self._acc_width(terms)
        red_arr = math.prod(self.cand.arrays.get(lp, 1) for lp in nest.red)
        if red_arr > 1:
            final = nest.out_width if self.adaptive else nest.out_declared
            if self.explicit:
                self._halving(acc_row, w, final, log2_exact(red_arr))
            else:
                src, acc_row = acc_row, self.buf_row.get("result", acc_row)  # partial sums → result rows
                self.emit_all([self._row("reduce_tile", rd=acc_row, pd=_p(final), ra=src, pa=_p(w),
                                         levels=log2_exact(red_arr))])
            w = final
        out_t = nest.sched.op.dtype
        st = Width(out_t.bits, out_t.signed) if out_t.bits < w.bits and not w.fmt else w
        prec = _p(st)
        op = nest.sched.op
        axes_idx = self.out_index
        if red_arr > 1:  # results sit in CRAMs c = 0 (mod the reduction factor): store those CRAMs only
            rcrams = np.flatnonzero(np.all([self.arr_val[lp] == 0 for lp in self.arr_order if lp.reduce], axis=0))
        for tile, tv in self.tiles:
            off, pid = self.flat(op.name, axes_idx, op.shape, tv, sv, crams=True, bitlines=True, n_crams=-2)
            if red_arr <= 1:
                addr = self.layout.store_region(op.name, pid, off, P.decode(prec).dram_bits, st.signed, st.fmt)
                self.b(tile, "store", row=acc_row, addr=addr, size=self.size, p=prec, tr=1)
                continue
            full = self.layout.patterns[pid]
            for c in rcrams:
                piece = self.layout.pattern(full[c * cfg.cram_cols:(c + 1) * cfg.cram_cols])
                addr = self.layout.store_region(op.name, piece, off, P.decode(prec).dram_bits, st.signed, st.fmt)
                self.b(tile, "store", row=acc_row, addr=addr, size=cfg.cram_cols, cram=int(c), p=prec, tr=1)


def _walk(e: Expr):
    yield e
    for c in getattr(e, "__dict__", {}).values():
        if isinstance(c, Expr):
            yield from _walk(c)
