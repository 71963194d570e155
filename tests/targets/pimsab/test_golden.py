"""Golden replays of spec §3.10.3-4 and the functional replays of §5.2 (paper-scale runs are slow)."""

from __future__ import annotations

import pytest

from nnisa.targets.pimsab.config import make_config, preset
from nnisa.targets.pimsab.sim.simulate import check_values, simulate
from nnisa.targets.pimsab.workloads import conv, matmul, vector
from nnisa.targets.pimsab.workloads.paper import GOLDEN
from nnisa.targets.pimsab.workloads.registry import run_workload

BASE = preset("base")


def figures(*args, **kw) -> dict:
    """The figures of a workload run (``nnisa bench``'s fields) as a dict."""
    return run_workload(*args, **kw).figures()


@pytest.mark.parametrize("name", ["vadd", "gemv"])
def test_golden_traffic_energy_and_cycles(name):
    """Spec §3.10.3-4: the official simulator's cycles, DRAM traffic and dynamic energy, exactly."""
    res = figures(name, BASE)
    cycles, rd, wr, energy = GOLDEN[name]
    assert res["cycles"] == cycles
    assert res["dram_read_bits"] == rd
    assert res["dram_write_bits"] == wr
    assert res["energy_j"] == pytest.approx(energy, rel=5e-6)


@pytest.mark.parametrize("what,want", [("vadd_double", 61954), ("gemv_half", 58885), ("gemv_sens_6x20", 195684),
                                       ("gemv_sens_24x5", 62273)])
def test_official_figures_of_spec_3_4a(what, want):
    """The four official-simulator figures spec §3.4a gives beyond the goldens (its "gemv M = 30,720,
    K = 1,024" is the artifact's gemv_new_half: 30,720 rows, two of the 2,048 columns per vector)."""
    from nnisa.targets.pimsab.sim.ops import lower
    from nnisa.targets.pimsab.sim.timing import run_timing
    cfg = preset(what.removeprefix("gemv_")) if "sens" in what else BASE
    w = {"vadd_double": lambda: vector.vadd(BASE, n=2 * vector.VADD_N),
         "gemv_half": lambda: vector.gemv(BASE, m=30720)}.get(what, lambda: vector.gemv(cfg))()
    assert run_timing(lower(w.program, cfg), cfg).cycles == want


def test_vadd_values_small():
    w = vector.vadd(BASE, n=3 * 65536 + 1000, seed=1)
    res = simulate(w.program, config=BASE, mode="both")
    assert check_values(res.details, w.expected) == []
    assert res.stats.cycles > 0


def test_gemv_values_small():
    cfg = make_config(dict(mesh_width=4, mesh_height=2, crams_per_tile=16))
    w = vector.gemv(cfg, m=4000, k=40, seed=2)
    res = simulate(w.program, config=cfg, mode="both")
    assert check_values(res.details, w.expected) == []


def test_fir_values_small():
    cfg = make_config(dict(mesh_width=2, mesh_height=2, crams_per_tile=8))
    w = vector.fir(cfg, taps=8, outputs=3 * (cfg.tile_bitlines - cfg.cram_cols) - 100, seed=3)
    res = simulate(w.program, config=cfg, mode="both")
    assert check_values(res.details, w.expected) == []


def test_nap_variants_are_slower_where_the_paper_says():
    for name in ("gemv", "conv2d"):
        assert figures(name + "_nap", BASE)["cycles"] >= figures(name, BASE)["cycles"]


def test_gemm_tiled_shapes_of_the_spec():
    want = {(384, 768, 768): (384, 768, 1, 1, 12, 3), (384, 64, 384): (384, 384, 1, 1, 8, 1),
            (384, 384, 64): (384, 64, 1, 1, 4, 2), (384, 768, 3072): (384, 1536, 1, 2, 24, 3),
            (384, 3072, 768): (240, 256, 2, 3, 2, 12)}
    for (m, k, n), (lm, ln, ga, gn, it, ks) in want.items():
        sh = matmul.gemm_tiled_shape(BASE, m, k, n)
        assert (sh["local_m"], sh["local_n"], sh["ga"], sh["gn"], sh["iterations"], sh["ksteps"]) == \
            (lm, ln, ga, gn, it, ks)


def test_conv_templates_of_the_spec():
    w = conv.conv2d(BASE)
    assert w.meta["template"] == "inputDup"
    assert (w.meta["m_p"], w.meta["t_inv"], w.meta["dup_in"], w.meta["dup_across"], w.meta["input_dup_factor"]) == \
        (3, 86, 85, 1, 3)
    assert [conv.template(BASE, layer) for _, layer, _ in conv.RESNET18] == ["weightDup"] * 5 + ["inputDup"] * 3
    assert sum(k for _, _, k in conv.RESNET18) == 17


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vadd", "gemv", "fir"])
def test_paper_scale_functional_replays(name):
    res = figures(name, BASE, check=True)
    assert res["values_checked"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fir", "gemm", "conv2d", "resnet18", "bert"])
def test_paper_scale_timing_replays(name):
    res = figures(name, BASE)
    assert res["cycles"] > 0 and res["energy_j"] > 0
    if name in ("resnet18", "bert"):
        assert len(res["layers"]) == {"resnet18": 8, "bert": 6}[name]


@pytest.mark.parametrize("cfg_name", ["pimsab_d", "pimsab_s", "artifact_simdram", "sens_cram128", "sens_cram512",
                                      "sens_12x5", "sens_12x20", "sens_6x20", "sens_24x5", "abl_ring"])
def test_small_workloads_run_on_every_preset(cfg_name):
    for name, kw in (("vadd", dict(scale=0.02)), ("gemv", dict(scale=0.02)), ("conv2d", {})):
        res = figures(name, preset(cfg_name), **kw)
        assert res["cycles"] > 0 and res["dram_read_bits"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("cfg_name", ["sens_cram128", "sens_cram512", "sens_12x5", "sens_12x20", "sens_6x20",
                                      "sens_24x5", "abl_all_off"])
def test_paper_workloads_run_on_sensitivity_and_ablation_presets(cfg_name):
    for name in ("fir", "gemm", "resnet18", "bert"):
        assert figures(name, preset(cfg_name))["cycles"] > 0
