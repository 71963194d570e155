"""Draw the Gantt pictures of the three PIM schedules for ``docs/pim_compiler.md``.

LeNet (generated, random weights) on 16 cores of the conformance hardware, a stream of 6 images
per schedule, pimsim timing mode; one row per core, the image completion times in the title.
Writes ``docs/img/pim_schedule_{batch,element,throughput}.png``.

Usage: ``python benchmarks/pim_schedule_gantt.py``
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

IMAGES = 6
OUT = Path(__file__).resolve().parents[1] / "docs" / "img"


def main() -> None:
    from nnisa.frontend import load_model, quantize
    from nnisa.frontend.models import make_lenet
    from nnisa.report.timeline import plot_gantt
    from nnisa.targets.pim.compiler import compile_program
    from nnisa.targets.pim.config import default_config
    from nnisa.targets.pim.sim.timing import simulate_timing
    from nnisa.targets.pim.sim.trace import timeline

    g = load_model(make_lenet())
    x = np.random.default_rng(0).random((8, 1, 28, 28)).astype(np.float32)
    qg = quantize(g, {g.inputs[0].name: x}, scale_mode="pow2")
    cfg = default_config(16, preset="conformance")
    OUT.mkdir(parents=True, exist_ok=True)
    for mode in ("batch", "element", "throughput"):
        c = compile_program(qg, cfg, schedule=mode, images=IMAGES)
        tr = simulate_timing(c.program, cfg, mode="pimsim", trace=True)
        done = ", ".join(f"{t / 1e6:.0f}" for t in tr.image_done_ps)
        per = "–" if tr.period_ps is None else f"{tr.period_ps / 1e6:.0f} µs"
        title = (f"LeNet, {mode} schedule, {IMAGES} images on 16 cores: latency {tr.stream_latency_ps / 1e6:.0f} µs, "
                 f"period {per}; images done at {done} µs")
        tl = dataclasses.replace(timeline(tr), title=title)
        plot_gantt(tl, OUT / f"pim_schedule_{mode}.png", width_px=1400, skip_units=("scalar",))
        print(title)


if __name__ == "__main__":
    main()
