"""Programs and helpers shared by the Cherry tests (spec ``cherry.md`` §7)."""

from __future__ import annotations

import numpy as np

from nnisa.targets.cherry.formats.text import assemble
from nnisa.targets.cherry.workloads import fast_relu_dram

FAST_RELU_WORDS = [0x8800, 0xA020, 0x7800, 0x4800, 0x8080, 0xA840, 0x9800]
FAST_RELU_ALT_WORDS = [0xF000, 0x4080, 0x2000, 0x8000, 0x0180, 0x6120, 0xC000]
FAST_RELU_HEADER = bytes.fromhex(
    "0020060000000000000000000000000000000000000000000000400000000000"
    "0000000000000000000000000000100000000000000000000000000000000000"
    "0000040000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000")
TINY_HEADER = bytes.fromhex(
    "0000c20000000000000000000000000000000000000000000001800000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000080000000000000000000000000000001000000000000000000000000000"
    "0000000000000000000000000000000000020000000000000000000000c00000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000")


def relu_text(n: int = 128, independent: bool = True, encoding: str = "canonical", sz: int = 4) -> str:
    slot = ", slot=1" if encoding == "cherrycore" else ""
    wslot = ", 1" if encoding == "cherrycore" else ""
    return f"""; fast ReLU
.sz {sz}
.encoding {encoding}
.loop 0 iterations={n}
.apu 0 = i
.apu 1 = i
.apu 2 = i
{'start_independent_loop' if independent else 'start_loop'} 0
    mem_read 0, 1
    load 0, INPUT
    relu
    store 0, OUTPUT{slot}
    mem_write 0, 2{wslot}
end_loop 0
"""


def relu_program(n: int = 128, independent: bool = True, encoding: str = "canonical", sz: int = 4):
    return assemble(relu_text(n, independent, encoding, sz))


TINY_TEXT = """.loop 0 iterations=3
.apu 0 = 6*i
.apu 2 = 2*i + p
.apu 4 = 2*l + 3
start_loop 0
    mem_read 2, 4
end_loop 0
"""


def relu_dram(tiles: int = 128, sz: int = 4) -> np.ndarray:
    """§8.2's device memory (:func:`nnisa.targets.cherry.workloads.fast_relu_dram`)."""
    return fast_relu_dram(tiles, sz)
