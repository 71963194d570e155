"""The PIM compile options (one dataclass, from which the ``-O`` table of compile/run comes) and
the chip dimensions the compiler plans with."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ....core.options import option
from ....core.quant_options import QuantOptions

SCHEDULES = ("batch", "element", "throughput")
#: most images a stream program may hold (each image's code is generated separately)
MAX_IMAGES = 256


@dataclass(frozen=True)
class ChipShape:
    """The chip as the compiler sees it: cores, crossbars per core, crossbar rows × columns and
    local memory bytes per core."""

    cores: int
    xbars: int
    rows: int
    cols: int
    lmem: int

    @classmethod
    def of(cls, cfg: Any) -> "ChipShape":
        """The shape of a :class:`~nnisa.targets.pim.config.PimConfig`."""
        mc = cfg.chip_config.core_config.matrix_config
        rows, cols = (int(v) for v in mc.xbar_size)
        return cls(int(cfg.chip_config.core_cnt), int(mc.xbar_array_count), rows, cols,
                   int(cfg.chip_config.core_config.local_memory_config.memory_size))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class PimCompileOptions(QuantOptions):
    """How ``nnisa compile/run -t pim`` maps a network (quantization options inherited).

    ``batch`` defaults to :data:`~nnisa.targets.pim.compiler.driver.ELEMENT_BATCH` in the element
    schedule (finer tasks pipeline better: ResNet-18 16.58 ms at 32, 15.86 ms at 2) except
    :data:`~nnisa.targets.pim.compiler.driver.ELEMENT_POOL_BATCH` for a conv with a fused max-pool
    (whole conv rows), else 32; ``fuse_pool`` defaults to on with the balanced mapping only;
    ``links`` defaults to the configuration's ``nnisa.core_links``.
    """

    schedule: str = option("batch", "batch (layer barriers), element (low-latency row pipeline) or throughput "
                           "(layer pipeline across images)", choices=SCHEDULES)
    replication: str = option("balance", "replicate slow layers onto free crossbars", choices=("balance", "none"))
    fill: float = option(0.9, "fraction of the chip's crossbars replication may use", minimum=0.0, maximum=1.0)
    mapping: str = option("balanced", "array-group to core placement", choices=("balanced", "first_fit", "locality"))
    links: bool | None = option(None, "core-to-core send/recv available (default: the config's core_links)")
    batch: int | None = option(None, "output windows per vector batch (default 32; element schedule 2)",
                               minimum=1, maximum=1 << 20)
    bits: int = option(8, "activation/weight bit width of the quantized model", minimum=2, maximum=16)
    gmem_reuse: bool | None = option(None, "reuse global-memory buffers (default: on for batch)")
    rounds: int = option(1, "element schedule: window chunks per replica", minimum=1, maximum=4096)
    interleave: bool = option(True, "element schedule: interleave the layers' chunks")
    c2c: bool = option(True, "element schedule: activations core to core (global memory for the model's "
                       "input/output and spills)")
    fuse_pool: bool | None = option(None, "fold MaxPool into the producing conv's requantization (default: with "
                                    "the balanced mapping)")
    fuse_add: bool = option(True, "fold a residual Add(+ReLU) into the second conv of a block")
    fuse_gap: bool = option(True, "fold GlobalAveragePool into the last conv")
    multiplex: bool = option(True, "a model needing more crossbars than the chip runs in phases: the crossbars are "
                             "reprogrammed between layer groups (reload time and energy in the figures)")
    images: int = option(1, "images in the stream: compiled into the program (compile/run), or the times an "
                         "unmarked program is repeated (sim); latency = first image, period = time per image",
                         commands=("compile", "run", "sim"), minimum=1, maximum=MAX_IMAGES)
