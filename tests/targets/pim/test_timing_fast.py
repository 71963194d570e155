"""The compiled paths of the timing model equal their readable references (issue 30).

* event loop: :func:`timing_engine_fast.run_events_fast` vs :func:`timing_engine.run_events`;
* per-instruction plan: ``plan_core(fast=True)`` vs the numpy ``_plan_local_reference``;
* energies: ``per_instruction_dynamic`` / ``frontend_energy`` compiled vs numpy, busy sums.

Random programs with every event kind (ld, st, send, recv, sync, wait, sld, a nop that hangs a
core, sends to cores that do not exist), in pimsim and native mode, latency, throughput and
repeated rounds, on configurations with whole and fractional memory latencies; then
PIMCOMP-NN's ResNet-18.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nnisa.targets.pim.config import default_config, load_config
from nnisa.targets.pim.sim.energy import frontend_energy, per_instruction_dynamic
from nnisa.targets.pim.sim.timing import simulate_timing
from nnisa.targets.pim.sim.timing_engine import run_events
from nnisa.targets.pim.sim.timing_engine_fast import run_events_fast
from nnisa.targets.pim.sim.timing_plan_fast import busy_local
from nnisa.targets.pim.sim.timing_units import OP_LLDI, OP_LMV, OP_MVMUL, CorePlan, Params, plan_core

from shared_data import require_shared
from .pim_loader import make_program

VEC = ["vvadd", "vvsub", "vvmul", "vvmax", "vrelu", "vavg", "vmv", "vrsu", "vtanh"]


def random_program(rng: np.random.Generator, n_cores: int, n: int, nop: bool = False, waits: bool = False) -> dict:
    """Cores of random instructions with matched send/recv pairs and syncs (``waits``: and waits,
    which mostly block a core: the blocked states are compared too)."""
    cores: dict[int, list] = {c: [("setbw", {"ibiw": int(rng.choice([4, 8, 16])), "obiw": 8})]
                              for c in range(n_cores)}
    for c in range(n_cores):
        for _ in range(n):
            k = int(rng.integers(0, 9))
            if k == 0:
                cores[c].append((str(rng.choice(["sldi", "sadd", "saddi", "sld"])),
                                 {"rd": int(rng.integers(0, 3)), "imm": int(rng.integers(0, 4096))}))
            elif k == 1:
                cores[c].append((str(rng.choice(VEC)), {"len": int(rng.integers(1, 300))}))
            elif k == 2:
                cores[c].append(("mvmul", {"mbiw": int(rng.choice([4, 8])), "group": int(rng.integers(0, 2))}))
            elif k in (3, 4):
                cores[c].append((str(rng.choice(["ld", "st", "lmv", "lldi"])), {"len": int(rng.integers(1, 500))}))
            elif k == 5:
                cores[c].append(("setbw", {"ibiw": int(rng.choice([4, 8, 16])), "obiw": int(rng.choice([8, 16]))}))
            elif k == 6:  # a sync to a random core (possibly a missing one) and sometimes a wait
                cores[c].append(("sync", {"ev": int(rng.integers(0, 2)), "core": int(rng.integers(0, n_cores + 1))}))
            elif k == 7 and waits and rng.random() < 0.3:
                cores[c].append(("wait", {"ev": int(rng.integers(0, 2)), "val": int(rng.integers(0, 2))}))
            else:
                cores[c].append(("vvadd", {"len": int(rng.integers(1, 64))}))
    for c in range(1, n_cores):  # FIFO-matched pairs c → c - 1
        sizes = [int(rng.integers(1, 300)) for _ in range(3)]
        spos = sorted(int(p) for p in rng.integers(1, len(cores[c]), size=3))
        rpos = sorted(int(p) for p in rng.integers(1, len(cores[c - 1]), size=3))
        for size, ps, pr in reversed(list(zip(sizes, spos, rpos))):
            cores[c].insert(ps, ("send", {"core": c - 1, "len": size}))
            cores[c - 1].insert(pr, ("recv", {"core": c, "len": size if rng.random() < 0.9 else size + 1}))
    if nop:
        c = int(rng.integers(0, n_cores))
        cores[c].insert(int(rng.integers(1, len(cores[c]))), ("nop", {}))
    if waits and rng.random() < 0.5:  # a send nobody receives: its core blocks
        cores[0].append(("send", {"core": n_cores + 5, "len": 16}))
    return cores


def _config(rng: np.random.Generator, n_cores: int, native: bool, sim_mode: int):
    over = {}
    if rng.random() < 0.5:  # fractional-ns memory latencies: the rounding path of Memory.read/write
        over = {"chip_config": {"core_config": {"local_memory_config": {"period": 0.7}}}}
    if native and rng.random() < 0.3:
        over.setdefault("nnisa", {}).update({"variable_bitwidth": False, "fixed_bitwidth": 12})
    return default_config(n_cores, preset="conformance", sim_mode=sim_mode, sim_time=0.02, overrides=over)


def _same_plan(a: CorePlan, b: CorePlan) -> None:
    for f in dataclasses.fields(CorePlan):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


def _same_engine(a, b) -> None:
    for f in ("T_end", "state", "pos", "rounds", "gm_busy", "t_last", "sw", "blocked_info", "events_done",
              "size_mismatch", "round_ends"):
        assert getattr(a, f) == getattr(b, f), f
    assert a.ev_S.keys() == b.ev_S.keys()
    for c in a.ev_S:
        assert np.array_equal(a.ev_S[c], b.ev_S[c]) and np.array_equal(a.ev_E[c], b.ev_E[c]), c


def _check(prog, cfg, native: bool, throughput: bool, repeat: int, limit: int) -> None:
    prm = Params.from_config(cfg, native)
    plans, ref_plans = {}, {}
    for c in sorted(prog.cores):
        agm = prog.array_group_map[c]
        plans[c] = plan_core(c, prog.cores[c], prm, cfg, agm)
        ref_plans[c] = plan_core(c, prog.cores[c], prm, cfg, agm, fast=False)
        _same_plan(plans[c], ref_plans[c])
        split = plan_core(c, prog.cores[c], prm, cfg, agm, split=True)  # with the rob model's arrays
        _same_plan(split, plan_core(c, prog.cores[c], prm, cfg, agm, fast=False, split=True))
        assert split.lr is not None and (cfg.chip_config.core_config.rob_size > 1 or plans[c].lr is None)
        e_fast = per_instruction_dynamic(plans[c], prog.cores[c], prm, cfg, agm)
        e_ref = per_instruction_dynamic(plans[c], prog.cores[c], prm, cfg, agm, fast=False)
        assert e_fast.keys() == e_ref.keys()
        for k in e_ref:
            assert e_fast[k].tobytes() == e_ref[k].tobytes(), k
        for upto in (None, plans[c].n // 2):
            assert frontend_energy(plans[c], prog.cores[c], cfg, native, upto=upto) == \
                frontend_energy(plans[c], prog.cores[c], cfg, native, upto=upto, fast=False)
        p = plans[c]
        vec = (p.op >= 10) & (p.op <= 23)
        assert busy_local(p) == [int(p.X[p.op == OP_MVMUL].sum()), int(p.X[vec].sum()),
                                 int(p.X[(p.op == OP_LMV) | (p.op == OP_LLDI)].sum()), int(p.lmem_local.sum()),
                                 int(p.inc[(p.op <= 8) & (p.start == 0)].sum())]
    kw = {"throughput": throughput, "limit": limit, "repeat": repeat}
    _same_engine(run_events(plans, prm.P, native, **kw), run_events_fast(plans, prm.P, native, **kw))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("native", [False, True])
def test_fast_timing_paths_equal_reference_on_random_programs(seed, native):
    rng = np.random.default_rng(seed)
    n_cores = int(rng.integers(1, 6))
    prog = make_program(random_program(rng, n_cores, int(rng.integers(5, 60)), nop=seed % 4 == 3, waits=seed % 3 == 0),
                        agm={c: [1, 4] for c in range(n_cores)})
    for throughput, repeat in ((False, 1), (True, 1), (False, 3)):
        cfg = _config(rng, n_cores, native, 0 if throughput else 1)
        _check(prog, cfg, native, throughput, repeat, limit=int(rng.integers(1, 40)) * 1_000_000)


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_simulate_timing_engines_agree(engine):
    rng = np.random.default_rng(7)
    prog = make_program(random_program(rng, 4, 50), agm={c: [1, 4] for c in range(4)})
    cfg = default_config(4, preset="conformance")
    a = simulate_timing(prog, cfg, engine=engine, on_incomplete="report", trace=True)
    b = simulate_timing(prog, cfg, engine="reference", on_incomplete="report", trace=True)
    assert a.latency_ps == b.latency_ps and a.energy_pj == b.energy_pj and a.finish_ps == b.finish_ps
    for c in a.trace:
        assert np.array_equal(a.trace[c], b.trace[c])


def test_unknown_engine_is_refused():
    from nnisa.core.errors import ConfigError
    with pytest.raises(ConfigError, match="timing engine"):
        simulate_timing(make_program({0: ["sldi"]}), default_config(1), engine="turbo")


def test_mvmul_errors_name_the_same_instruction():
    from nnisa.core.errors import SimError
    cfg = default_config(1, preset="conformance")
    prm = Params.from_config(cfg, False)
    for fields, agm, msg in (({"group": 3, "mbiw": 8}, [1, 1], "array group 3"), ({"group": 0, "mbiw": 0}, [1], "mbiw 0")):
        prog = make_program({0: [("setbw", {"ibiw": 8, "obiw": 8}), ("mvmul", {"group": 0, "mbiw": 8}),
                                 ("mvmul", fields)]}, agm={0: agm})
        for fast in (True, False):
            with pytest.raises(SimError, match=msg) as e:
                plan_core(0, prog.cores[0], prm, cfg, agm, fast=fast)
            assert "pc 2" in str(e.value.where)


@pytest.mark.slow
def test_fast_paths_equal_reference_on_pimcomp_resnet18():
    from nnisa.targets.pim.formats.jsonio import read_json
    prog = read_json(require_shared("conformance", "pim", "resnet18_batch_8x8.json.gz"))
    cfg = load_config(require_shared("conformance", "pim", "pimsim_config.json"))
    for native in (False, True):
        _check(prog, cfg, native, throughput=False, repeat=1, limit=0)
    assert simulate_timing(prog, cfg).latency_ps == 16_295_456_000


def test_event_registers_beyond_the_compiled_table_take_the_reference_loop():
    from nnisa.targets.pim.sim.timing_engine_fast import MAX_EVENT_REGS
    e = MAX_EVENT_REGS + 3
    prog = make_program({0: [("setbw", {"ibiw": 8, "obiw": 8}), ("sync", {"ev": e, "core": 1})],
                         1: [("setbw", {"ibiw": 8, "obiw": 8}), ("wait", {"ev": e, "val": 1}),
                             ("vvadd", {"len": 8})]}, agm={0: [1], 1: [1]})
    cfg = default_config(2, preset="conformance")
    a = simulate_timing(prog, cfg)
    b = simulate_timing(prog, cfg, engine="reference")
    assert a.finish_ps == b.finish_ps and a.finish_ps[1] > 0


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the two paths must fail alike
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("seed", range(10))
def test_message_costs_per_peer_equal_event_by_event(seed):
    """plan_core's send/recv/sync costs computed per peer (fast) equal the event-by-event
    reference on a NoC table with fractional per-pair latencies and energies, including the first
    error when a pair is missing or a message goes to the own core."""
    from nnisa.targets.pim.config import NocTable
    rng = np.random.default_rng(100 + seed)
    n_cores = int(rng.integers(2, 6))
    cores = random_program(rng, n_cores, int(rng.integers(5, 60)))
    for c in range(n_cores):  # extra messages to random peers (some to the own core when seed is odd)
        for _ in range(int(rng.integers(0, 12))):
            r = int(rng.integers(0, n_cores))
            if r == c and seed % 2 == 0:
                continue
            kind = str(rng.choice(["send", "recv", "sync"]))
            cores[c].insert(int(rng.integers(1, len(cores[c]))), (kind, {"core": r, "len": int(rng.integers(1, 999)),
                                                                         "ev": 0}))
    prog = make_program(cores, agm={c: [1, 4] for c in range(n_cores)})
    cfg = _config(rng, n_cores, False, 1)
    nodes = list(range(n_cores)) + [cfg.chip_config.core_config.global_memory_switch_id]
    lat = {s: {t: float(rng.integers(1, 400)) / 16 for t in nodes if rng.random() < (0.97 if seed % 3 else 1.0)}
           for s in nodes}
    cfg.noc = NocTable(lat, {s: {t: float(rng.random() * 3) for t in v} for s, v in lat.items()})
    prm = Params.from_config(cfg, False)
    for c in sorted(prog.cores):
        agm = prog.array_group_map[c]
        fast = _outcome(lambda: plan_core(c, prog.cores[c], prm, cfg, agm))
        ref = _outcome(lambda: plan_core(c, prog.cores[c], prm, cfg, agm, fast=False))
        if isinstance(ref, CorePlan):
            _same_plan(fast, ref)
        else:
            assert fast == ref


@pytest.mark.parametrize("seed", range(6))
def test_noc_traffic_per_peer_equals_event_by_event(seed):
    """NoC bytes and flits per ordered pair (summed per peer) equal the sums event by event, in
    the same dictionary order."""
    from nnisa.targets.pim.sim.timing_units import EV_LD, EV_SEND, EV_SLD, EV_ST, EV_SYNC, cdiv
    rng = np.random.default_rng(200 + seed)
    n_cores = int(rng.integers(2, 6))
    cores = random_program(rng, n_cores, int(rng.integers(5, 80)))
    for c in range(n_cores):
        for _ in range(int(rng.integers(0, 12))):
            r = int((c + rng.integers(1, n_cores)) % n_cores)
            cores[c].insert(int(rng.integers(1, len(cores[c]))), ("send", {"core": r, "len": int(rng.integers(1, 999))}))
    prog = make_program(cores, agm={c: [1, 4] for c in range(n_cores)})
    cfg = _config(rng, n_cores, False, 1)
    tr = simulate_timing(prog, cfg, on_incomplete="report")
    prm = Params.from_config(cfg, False)
    gm, bw = cfg.chip_config.core_config.global_memory_switch_id, prm.bw
    nb: dict = {}
    nf: dict = {}

    def add(s, d, nbytes):
        nb[(s, d)] = nb.get((s, d), 0) + nbytes
        nf[(s, d)] = nf.get((s, d), 0) + int(cdiv(nbytes, bw))
    for c in sorted(prog.cores):
        p = plan_core(c, prog.cores[c], prm, cfg, prog.array_group_map[c])
        for kind in (EV_LD, EV_SLD, EV_ST, EV_SEND, EV_SYNC):
            for i in np.flatnonzero(p.ev_kind == kind).tolist():
                r, size = int(p.ev_peer[i]), int(p.ev_size[i])
                if kind in (EV_LD, EV_SLD):
                    add(c, gm, 1)
                elif kind == EV_ST:
                    add(c, gm, size)
                elif kind == EV_SEND:
                    add(c, r, 1), add(r, c, 1), add(c, r, size)
                else:
                    add(c, r, 1)
    assert list(tr.noc_bytes.items()) == list(nb.items()) and list(tr.noc_flits.items()) == list(nf.items())
