"""The parameters ``nnisa bench -t pimsab WORKLOAD -O key=value`` takes, declared as target options.

Each keeps the meaning it has in the official simulator's workload of the same name (the
generators in :mod:`.vector`, :mod:`.matmul` and :mod:`.conv`); which workload takes which is in
:data:`.registry.WORKLOADS`.  Kept free of the generators so the target's face imports quickly.
"""

from __future__ import annotations

from ....core.options import OptionSpec as O

#: the artifact's 17 ResNet-18 layer names (params/resnet18_bs_1/resnet_<name>.param) → nnisa's
#: distinct shape (:data:`.conv.RESNET18`)
RESNET18_LAYERS = {"conv1": "conv1", **{f"conv2_{a}_{b}": "conv2_x" for a in (1, 2) for b in (1, 2)},
                   "conv3_1_1": "conv3_1_1", **{n: "conv3_x" for n in ("conv3_1_2", "conv3_2_1", "conv3_2_2")},
                   "conv4_1_1": "conv4_1_1", **{n: "conv4_x" for n in ("conv4_1_2", "conv4_2_1", "conv4_2_2")},
                   "conv5_1_1": "conv5_1_1", **{n: "conv5_x" for n in ("conv5_1_2", "conv5_2_1", "conv5_2_2")}}
#: sizes are C ints in the official workloads
_SIZE = dict(minimum=1, maximum=2**31 - 1, nullable=True)

BENCH_OPTIONS = (
    O("n", int, None, None, "vadd: elements; gemm, gemm_tiled: columns of B (N)", ("bench",), **_SIZE),
    O("m", int, None, None, "gemv, gemm, gemm_tiled: rows of A (M)", ("bench",), **_SIZE),
    O("k", int, None, None, "gemv, gemm, gemm_tiled: columns of A, the reduction (K)", ("bench",), **_SIZE),
    O("acc_bits", int, None, None, "gemv, gemm: accumulator precision (default 4 x bits, as the artifact's intN "
      "variants)", ("bench",), minimum=1, maximum=64, nullable=True),
    O("outputs", int, None, None, "fir: output elements", ("bench",), **_SIZE),
    O("batch", int, None, None, "conv2d: images (the param file's N)", ("bench",), minimum=1, maximum=4096,
      nullable=True),
    O("layer", str, None, tuple(RESNET18_LAYERS), "resnet18: run this layer alone (artifact name)", ("bench",),
      nullable=True),
)
