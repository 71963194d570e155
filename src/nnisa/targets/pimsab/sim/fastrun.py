"""A batched functional run through the compiled interpreter: :func:`run_batched`.

The program is lowered once (:func:`.plan.build_plan`, cached by content and configuration), the
DRAM laid out from the ranges it touches (:class:`.batch.FlatDram`), the state allocated as the
columns of every tile's extent, and :func:`.interp_nb.run` executes the whole order for all
samples.  The rows the plan leaves to Python (floats; anything the reference rejects) run on a
:class:`.machine.Machine` whose tiles and DRAM are views of the same state, so an error carries
the reference's message and the instruction's place, as in :func:`.machine.run_functional`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

from ....core.errors import NnisaError
from ..config import PimsabConfig
from ..program import PimsabProgram
from . import interp_nb
from .batch import ColumnTileState, FlatDram, stack_samples, words_per_bitline
from .machine import Machine, _where
from .liveness import Lanes, lanes_for
from .plan import COL, OPC, PY, FunctionalPlan, build_plan

_PLANS: OrderedDict = OrderedDict()
_PLAN_CACHE_SIZE = 256     # plans and their lanes: a ResNet-18 has 53 programs


def _cached(key, make):
    hit = _PLANS.get(key)
    if hit is None:
        hit = _PLANS[key] = make()
        while len(_PLANS) > _PLAN_CACHE_SIZE:
            _PLANS.popitem(last=False)
    return hit


def _program_key(prog: PimsabProgram, cfg: PimsabConfig) -> tuple:
    h = hashlib.blake2b(digest_size=16)
    for part in (np.ascontiguousarray(prog.rows).view(np.uint8), np.ascontiguousarray(prog.tiles).view(np.uint8)):
        h.update(part.tobytes())
    return cfg.sha256, h.digest()


def plan_for(prog: PimsabProgram, cfg: PimsabConfig) -> FunctionalPlan:
    """:func:`.plan.build_plan`, cached by the program's rows, tiles and the configuration."""
    return _cached(_program_key(prog, cfg), lambda: build_plan(prog, cfg))


def lanes_of(prog: PimsabProgram, cfg: PimsabConfig, observed: np.ndarray | None) -> Lanes:
    """The bitlines each compute row evaluates (:mod:`.liveness`): all of them without
    ``observed``, else those that reach the observed DRAM bytes (cached like the plan)."""
    plan = plan_for(prog, cfg)
    if observed is None:
        return Lanes.full(len(plan.code))
    obs = np.ascontiguousarray(observed, bool)
    key = _program_key(prog, cfg) + (hashlib.blake2b(np.packbits(obs).tobytes(), digest_size=16).digest(), len(obs))
    return _cached(key, lambda: lanes_for(plan, prog, cfg, obs))


class _InputRecorder:
    """Stands in for a batched machine while the inputs are written, to learn their ranges first."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.dram = self
        self.writes: list[tuple[int, np.ndarray]] = []

    def write_samples(self, addr: int, arrays: list[np.ndarray]) -> None:
        self.writes.append((addr, stack_samples(arrays)))


def _layout(plan: FunctionalPlan, prog: PimsabProgram, writes, batch: int) -> FlatDram:
    """One interval per run of touched bytes; per-sample where stored to or fed per-sample data."""
    code = plan.code
    dram = (code[:, COL["dbytes"]] > 0) & (code[:, COL["addr"]] >= 0) & \
        (code[:, COL["addr"]] + code[:, COL["dbytes"]] <= 1 << 48)
    stored = np.isin(code[:, COL["op"]], (OPC["store"], OPC["store_rf"])) | (code[:, COL["op"]] == PY)
    starts = [code[dram, COL["addr"]]]
    ends = [starts[0] + code[dram, COL["dbytes"]]]
    own = [stored[dram]]
    extra = [(a, len(d), False) for a, d in prog.segments] + [(a, d.shape[1], d.shape[0] > 1) for a, d in writes]
    if extra:
        starts.append(np.array([a for a, _, _ in extra], np.int64))
        ends.append(starts[-1] + np.array([n for _, n, _ in extra], np.int64))
        own.append(np.array([o for _, _, o in extra], bool))
    s, e, o = np.concatenate(starts), np.concatenate(ends), np.concatenate(own)
    keep = e > s
    s, e, o = s[keep], e[keep], o[keep]
    idx = np.argsort(s, kind="stable")
    s, e, o = s[idx], e[idx], o[idx]
    # merge overlapping or touching ranges: a new interval starts where no earlier range reaches
    reach = np.maximum.accumulate(e) if len(e) else e
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    n_int = int(group[-1]) + 1 if len(group) else 0
    istart = s[new]
    iend = np.zeros(n_int, np.int64)
    np.maximum.at(iend, group, e)
    iown = np.zeros(n_int, bool)
    np.logical_or.at(iown, group, o)
    return FlatDram(batch, istart, iend, iown)


def run_batched(prog: PimsabProgram, cfg: PimsabConfig, inputs: list[dict], write_inputs,
                observed: np.ndarray | None = None) -> Machine:
    """Run ``prog`` for ``len(inputs)`` samples; ``write_inputs(machine, inputs)`` writes them (the
    simulator's input convention).  Returns the machine holding the final state.  ``observed``
    (bool per DRAM byte from address 0): the only bytes the caller reads afterwards; the compute
    instructions then evaluate only the bitlines that reach them (:mod:`.liveness`), and the rest
    of the final state is unspecified."""
    B = len(inputs)
    plan = plan_for(prog, cfg)
    lanes = lanes_of(prog, cfg, observed)
    rec = _InputRecorder(B)
    write_inputs(rec, inputs)
    dram = _layout(plan, prog, rec.writes, B)
    code = plan.code.copy()
    sel = (code[:, COL["dbytes"]] > 0) & (code[:, COL["op"]] != PY)
    if sel.any():
        addr = code[sel, COL["addr"]]
        i = np.searchsorted(dram.starts, addr, side="right") - 1
        code[sel, COL["down"]] = dram.per_sample[i]
        code[sel, COL["doff"]] = dram.offsets[i] + addr - dram.starts[i]
    T, width = len(plan.tiles), plan.columns
    cols = np.zeros((width, words_per_bitline(cfg), B), np.uint64)    # samples innermost
    mask = np.zeros((width, B), bool)
    carry = np.zeros((width, B), bool)
    rf = np.zeros((T, cfg.rf_regs, B), np.uint32)
    tiles = {}
    for t in range(T):
        lo, hi = int(plan.bases[t]), int(plan.bases[t] + plan.extents[t])
        tiles[int(plan.tiles[t])] = ColumnTileState(cfg, int(plan.tiles[t]), B, cols[lo:hi], mask[lo:hi],
                                                    carry[lo:hi], rf[t])
    m = Machine(cfg, prog.segments, batch=B, dram=dram, tiles=tiles)
    for addr, data in rec.writes:
        dram.write(addr, data, record=False)
    movers = np.isin(code[:, COL["op"]], [OPC[x] for x in ("load", "load_shf", "cram_tx_rx", "cram_bcast")])
    tmp_w = max(int(plan.extents.max(initial=8)), int(code[movers, COL["n"]].max(initial=0)), cfg.rf_regs)
    tmp = np.zeros((interp_nb.TMP_ROWS, max(tmp_w, 8) * B), np.uint64)
    msg = np.zeros((max(plan.msg_words, 1), B), np.uint64)
    shared = dram.shared.reshape(-1, 1)
    K, k = len(code), 0
    while True:
        k = interp_nb.run(code, k, cols, mask, carry, rf, plan.bases, plan.extents, dram.own, shared, msg,
                          tmp, cfg.cram_cols, cfg.crams_per_tile, lanes.sel, lanes.spans, lanes.idx)
        if k >= K:
            break
        i = int(plan.order[k])
        t = int(prog.tiles[i])
        try:
            m.step(t, tuple(prog.rows[i].tolist()))
        except NnisaError as exc:
            raise exc.with_context(where=_where(prog, i, t)) from None
        k += 1
    m.executed = K
    dram.written.extend(plan.stores)
    if plan.deadlock is not None:
        raise plan.deadlock
    return m
