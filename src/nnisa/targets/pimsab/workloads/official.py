"""Figures of the official PIMSAB simulator, measured by building and running it.

Source: aman26kbm/pim-simulator, branch ``new`` (1b56b9c), built with its own CMake files and run
from its ``build`` folder as ``PIM_simulator -c ../configs/<config> -m <workload> [-p
../params/<param>] -l <prefix>``.  Recorded: the last cycle count it prints ("current time: N")
and ``Total_Dynamic_Energy`` of ``<prefix>.energy.csv`` (6 significant digits), on the machine of
benchmarks/RESULTS.md.  Each run names the nnisa workload, parameters and preset that produce the
same instruction stream; tests/targets/pimsab/test_official.py and benchmarks/pimsab_official.py
compare them.  ``cpu_s`` is the official run's user CPU time there (2 shared cores, load 8-15:
indicative only; benchmarks/pimsab_sim.py times both simulators in one run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BASE_CFG = "DMesh12x10_TileSize256_CramSize256x256.cfg"
#: the artifact's configuration file of each preset
CONFIG_FILES = {"base": BASE_CFG, "sens_cram128": "DMesh12x10_TileSize1024_CramSize128x128.cfg",
                "sens_cram512": "DMesh12x10_TileSize64_CramSize512x512.cfg",
                "sens_12x5": "DMesh12x5_TileSize512_CramSize256x256.cfg",
                "sens_12x20": "DMesh12x20_TileSize128_CramSize256x256.cfg",
                "sens_6x20": "DMesh6x20_TileSize256_CramSize256x256.cfg",
                "sens_24x5": "DMesh24x5_TileSize256_CramSize256x256.cfg",
                "abl_shuffle_off": BASE_CFG.replace(".cfg", "_shuffleOff.cfg"),
                "abl_const_off": BASE_CFG.replace(".cfg", "_constOpOff.cfg"),
                "abl_const_off_kickout": BASE_CFG.replace(".cfg", "_constOpOff_kickoutRow.cfg"),
                "abl_bus": BASE_CFG.replace(".cfg", "_bus.cfg"),
                "abl_shift_off": BASE_CFG.replace(".cfg", "_crossCramShiftOff.cfg"),
                "abl_shift_off_bypass": BASE_CFG.replace(".cfg", "_crossCramShiftOff_bypassDram.cfg"),
                "abl_one_to_all": BASE_CFG.replace(".cfg", "_oneToAllBroadcast.cfg"),
                "abl_intracram": BASE_CFG.replace(".cfg", "_intraCRAM.cfg")}


@dataclass(frozen=True)
class OfficialRun:
    """One official run and the nnisa job that replays it."""

    case: str
    workload: str                      # official workload (-m)
    param: str | None                  # official parameter file (params/...), if any
    nnisa: str                         # nnisa workload (nnisa bench -t pimsab NAME)
    params: dict[str, Any] = field(default_factory=dict)
    preset: str = "base"
    cycles: int = 0
    energy_j: float | None = None      # None: not recorded (spec §3.4a gives the cycles only)
    cpu_s: float | None = None

    @property
    def config(self) -> str:
        return CONFIG_FILES[self.preset]


def _tiled(m: int, k: int, n: int, cycles: int, energy: float, cpu: float) -> OfficialRun:
    return OfficialRun(f"gemm_tiled_M{m}_K{k}_N{n}", "gemm_tiled", f"gemm/gemm_tiled_M{m}_K{k}_N{n}.param",
                       "gemm_tiled", dict(m=m, k=k, n=n), "base", cycles, energy, cpu)


def _layer(name: str, template: str, cycles: int, energy: float, cpu: float) -> OfficialRun:
    return OfficialRun(f"resnet_{name}", f"conv2d_lowLatency_{template}", f"resnet18_bs_1/resnet_{name}.param",
                       "resnet18", dict(layer=name), "base", cycles, energy, cpu)


RUNS: list[OfficialRun] = [
    OfficialRun("vadd", "vadd", None, "vadd", {}, "base", 30944, 0.00437348, 47.76),
    OfficialRun("vadd_half", "vadd_half", None, "vadd", dict(n=7864320), "base", 15474, 0.00218674, 28.72),
    OfficialRun("vadd_double", "vadd_double", None, "vadd", dict(n=31457280), "base", 61954),
    OfficialRun("vadd_int4", "vadd_int4", None, "vadd", dict(bits=4), "base", 15584, 0.00218744, 16.23),
    OfficialRun("vadd_int5", "vadd_int5", None, "vadd", dict(bits=5), "base", 30944, 0.00437239, 53.46),
    OfficialRun("gemv_new", "gemv_new", None, "gemv", {}, "base", 116781, 0.0128157, 135.16),
    OfficialRun("gemv_new_half", "gemv_new_half", None, "gemv", dict(m=30720), "base", 58885, 0.00642827, 77.82),
    OfficialRun("gemv_new_6x20", "gemv_new", None, "gemv", {}, "sens_6x20", 195684),
    OfficialRun("gemv_new_24x5", "gemv_new", None, "gemv", {}, "sens_24x5", 62273),
    OfficialRun("gemm_systolic", "gemm_systolic", None, "gemm", {}, "base", 139891, 0.0106309, 62.75),
    OfficialRun("conv2d", "conv2d_lowLatency_inputDup", "conv2d.param", "conv2d", {}, "base", 6996, 0.000346009,
                3.46),
    _tiled(384, 768, 768, 8820, 0.000870116, 3.31),
    _tiled(384, 64, 384, 3734, 0.000219701, 1.79),
    _tiled(384, 384, 64, 2920, 0.000204711, 2.85),
    _tiled(384, 768, 3072, 32954, 0.00346438, 17.38),
    _tiled(384, 3072, 768, 27330, 0.00339038, 11.06),
    _layer("conv1", "weightDup", 7158, 0.000933297, 5.10),
    _layer("conv2_1_1", "weightDup", 5779, 0.000460453, 3.92),
    _layer("conv3_1_1", "weightDup", 6143, 0.000332368, 3.74),
    _layer("conv3_1_2", "weightDup", 10404, 0.000501337, 5.45),
    _layer("conv4_1_1", "weightDup", 14660, 0.000299113, 7.32),
    _layer("conv4_1_2", "inputDup", 14211, 0.000497084, 5.33),
    _layer("conv5_1_1", "inputDup", 11075, 0.000301887, 5.35),
    _layer("conv5_1_2", "inputDup", 10698, 0.000564147, 5.91),
]
OFFICIAL = {r.case: r for r in RUNS}
#: Table 5 benchmark → the official run(s) of its replay: (case, count); resnet18 and bert are the
#: sums the artifact makes of its layer runs (spec §5.3, §5.4; bert also adds its softmax charge)
BENCHMARK_RUNS = {
    "vadd": [("vadd", 1)], "gemv": [("gemv_new", 1)], "gemm": [("gemm_systolic", 1)], "conv2d": [("conv2d", 1)],
    "resnet18": [("resnet_conv1", 1), ("resnet_conv2_1_1", 4), ("resnet_conv3_1_1", 1), ("resnet_conv3_1_2", 3),
                 ("resnet_conv4_1_1", 1), ("resnet_conv4_1_2", 3), ("resnet_conv5_1_1", 1), ("resnet_conv5_1_2", 3)],
    "bert": [("gemm_tiled_M384_K768_N768", 4), ("gemm_tiled_M384_K64_N384", 12), ("gemm_tiled_M384_K384_N64", 12),
             ("gemm_tiled_M384_K768_N3072", 1), ("gemm_tiled_M384_K3072_N768", 1)],
}


def benchmark_cycles(name: str, extra_cycles: int = 0) -> int | None:
    """The official simulator's cycles for a Table 5 benchmark (``None``: not recorded)."""
    parts = BENCHMARK_RUNS.get(name)
    if not parts or any(c not in OFFICIAL for c, _ in parts):
        return None
    return sum(k * OFFICIAL[c].cycles for c, k in parts) + extra_cycles
