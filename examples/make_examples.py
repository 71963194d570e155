"""Regenerate the input files the README and docs/*.md commands use (deterministic).

    python examples/make_examples.py        # from the repository root; writes examples/<target>/

Every file here is small and committed; this script documents where each derived one comes from
(the ``.s`` programs of pimsab/ are hand-written sources).
The commands themselves run in ``tests/docs/test_doc_commands.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent

def relu_casm() -> str:
    """The fast ReLU of spec cherry.md section 7.1 over 128 tiles of 4x4 (328 cycles at SW = 16)."""
    from nnisa.targets.cherry.workloads import FAST_RELU
    return "; the fast ReLU of spec cherry.md section 7.1 (328 cycles at SW = 16)\n.sz 4\n" + FAST_RELU





def digits(n: int) -> np.ndarray:
    """The first ``n`` images of the bundled test set, ``(n, 1, 8, 8)`` float32 in [0, 1]."""
    from nnisa.frontend.models import bundled_testset
    return bundled_testset("digits_cnn")[0][:n]


def main() -> None:
    from nnisa.api import read, write
    from nnisa.targets.cherry.workloads import fast_relu_dram
    x1 = digits(1)
    # pim / cherry / tensil / pimsab: one digit image in the model's own layout (input (1, 1, 8, 8))
    np.savez(HERE / "pim" / "x.npz", input=x1)
    np.savez(HERE / "cherry" / "x.npz", input=x1)
    np.save(HERE / "tensil" / "x.npy", x1)
    np.savez(HERE / "digits_x16.npz", input=digits(16))
    # dais: a 2-input program (da4ml binary) and 8 input rows
    from nnisa.core.target import get_target
    (HERE / "dais" / "small.s").write_text(get_target("dais").example.text)  # the target's own example
    write("dais", read("dais", HERE / "dais" / "small.s"), HERE / "dais" / "model.dais")
    np.save(HERE / "dais" / "X.npy", (np.arange(16, dtype=np.float64).reshape(8, 2) - 8) / 2)
    # cherry: the fast ReLU and its device memory
    (HERE / "cherry" / "relu.casm").write_text(relu_casm())
    np.savez(HERE / "cherry" / "dram.npz", dram=fast_relu_dram())
    # pimsab: the two input vectors of listing1.s (hand-written, like prog.s) and a config file
    a = (np.arange(65536) % 256 - 128).astype(np.int8)
    np.savez_compressed(HERE / "pimsab" / "in.npz", dram_0x0=a, dram_0x10000=np.full(65536, 3, np.int8))
    (HERE / "pimsab" / "small.json").write_text(json.dumps({"preset": "pimsab_s", "clock_ghz": 1.0}, indent=1) + "\n")
    # tensil: the XOR model's expected outputs for ../shared/conformance/tensil/xor/xor_in.csv (one row per
    # input; the model's output vector is 2 lanes wide, the XOR in lane 0)
    (HERE / "tensil" / "expected.csv").write_text("0,0\n1,0\n1,0\n0,0\n")


if __name__ == "__main__":
    main()
