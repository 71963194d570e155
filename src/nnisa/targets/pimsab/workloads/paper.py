"""The paper's reference figures (spec §5.1, §6): A100 baselines, claims, Table 6, Table 5 traffic."""

from __future__ import annotations

#: A100 time (ns) and energy (J) behind Fig. 16 (pim-simulator scripts/fig_brkd/gpu.csv)
A100 = {
    "vadd": (78850, 0.012380), "fir": (1831960, 0.227163), "gemv": (138350, 0.029054),
    "gemm": (82110, 0.014697), "conv2d": (46590, 0.001444), "resnet18": (310000, 0.015299),
    "bert": (320000, 0.025),
}
#: speedups over the A100 the paper states in its text (geomean 4.80x, energy 3.76x)
CLAIMED_SPEEDUP = {"conv2d": 13.84, "gemv": 1.78, "resnet18": 2.8, "bert": 2.3}
CLAIMED_GEOMEAN_SPEEDUP = 4.80
CLAIMED_GEOMEAN_ENERGY = 3.76
#: Table 6: speedup from adaptive precision (fraction)
TABLE6 = {"vadd": 0.0, "fir": 0.0, "gemv": 0.0034, "gemm": 0.0277, "conv2d": 0.04, "resnet18": 0.035,
          "bert": 0.15}
#: Table 5 DRAM usage (bytes read, bytes written)
TABLE5_DRAM = {"vadd": (30e6, 15e6), "fir": (15.6e6, 15.6e6), "gemv": (128e6, 262e3), "gemm": (62e6, 3.9e6),
               "conv2d": (815e3, 100e3), "resnet18": (6.1e6, 1.3e6), "bert": (26e6, 9e6)}
#: golden replays of the official simulator (spec §3.10): cycles, DRAM read bits, write bits, energy J
GOLDEN = {"vadd": (30944, 251_658_240, 125_829_120, 0.00437348),
          "gemv": (116781, 1_073_864_704, 2_097_152, 0.0128157)}
BENCHMARKS = ("vadd", "fir", "gemv", "gemm", "conv2d", "resnet18", "bert")
