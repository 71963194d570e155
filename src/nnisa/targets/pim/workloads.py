"""Built-in workloads for ``nnisa bench -t pim``.

* ``resnet18-pimcomp``: PIMCOMP-NN's ResNet-18 program (3.1 M instructions, from
  ``../shared/conformance/pim``) in the pimsim-nn-compatible timing model; checked against the
  spec's reference model (C6: 16,295,456 ns exactly, the tie rule D13 fixes) and compared with
  pimsim-nn's own report (16,276,870 ns; C7 allows ±1.5 %: SystemC's event order decides ties).
* ``digits-cnn``: the bundled digits CNN compiled by nnisa and simulated (values + timing).
* ``functional``: the functional simulator's instruction rate on a synthetic 4-core program.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ...core.errors import UnsupportedError
from ...core.target import Stats

#: the spec's reference-model chip latency of the conformance program (C6, exact)
PIMSIM_RESNET18_NS = 16_295_456
#: pimsim-nn's own report of it (spec §12.4, resnet18_batch_pimsim_report.txt)
PIMSIM_NN_REPORT_NS = 16_276_870

WORKLOADS = {
    "resnet18-pimcomp": "PIMCOMP-NN's ResNet-18 (3.1 M instr., ../shared), pimsim timing; spec C6: "
                        f"{PIMSIM_RESNET18_NS:,} ns, pimsim-nn's report {PIMSIM_NN_REPORT_NS:,} ns",
    "digits-cnn": "bundled digits CNN: compile, then values + timing of one image",
    "functional": "functional simulator rate on a synthetic 4-core program (instructions/s)",
}


def _shared() -> Path:
    from ...core.fileio import shared_dir
    d = shared_dir() / "conformance" / "pim"
    if not (d / "resnet18_batch_8x8.json.gz").exists():
        raise UnsupportedError(f"workload needs the conformance data in {d} (the shared/ folder next to the "
                               "checkout, or NNISA_SHARED)")
    return d


def run_workload(name: str, config: Any = None, gantt: str | None = None) -> Stats:
    """Run one workload; its figures (``wall_s`` included); ``gantt``: a PNG of the ResNet-18
    run's per-core timeline."""
    t0 = time.perf_counter()
    if name == "resnet18-pimcomp":
        from .config import load_config
        from .formats.files import read_program
        from .sim.simulate import simulate
        d = _shared()
        prog = read_program(d / "resnet18_batch_8x8.json.gz")
        t1 = time.perf_counter()
        cfg = load_config(config or d / "pimsim_config.json")
        res = simulate(prog, config=cfg, mode="timing", timeline=bool(gantt))
        t2 = time.perf_counter()  # the timing figure without drawing the picture
        if gantt:
            from ...report.timeline import draw_timeline
            draw_timeline(res.timeline, gantt=gantt)
        st = res.stats
        out = {"cycles": st.cycles, "latency_ns": st.latency_ns, "energy_pj": st.energy_pj,
               "instructions": st.instructions, "reference_ns": PIMSIM_RESNET18_NS,
               "pimsim_nn_report_ns": PIMSIM_NN_REPORT_NS,
               "matches_reference": config is None and round(st.latency_ns) == PIMSIM_RESNET18_NS,
               "load_s": t1 - t0, "timing_s": t2 - t1, "timing_model": "pimsim"}
        same = "exact" if out["matches_reference"] else f"{st.latency_ns / PIMSIM_RESNET18_NS - 1:+.3%}"
        out["summary"] = (f"PIMCOMP-NN's ResNet-18 ({st.instructions:,} instr.): latency {st.latency_ns:,.0f} ns, "
                          f"spec C6 {same}, pimsim-nn's report {st.latency_ns / PIMSIM_NN_REPORT_NS - 1:+.2%}; "
                          f"load {t1 - t0:.1f} s + timing {t2 - t1:.1f} s (pimsim-nn ≈23 s in spec §13)")
    elif name == "digits-cnn":
        from ...frontend.models import bundled_model_path, bundled_testset
        from .compiler import compile_model
        from .sim.simulate import simulate
        path = bundled_model_path("digits_cnn")
        x, _ = bundled_testset("digits_cnn")
        c = compile_model(path, config=config)
        t1 = time.perf_counter()
        sample = {"input": x[0]}
        res = simulate(c.program, inputs=c.encode_inputs(sample), **c.sim_options)
        ref = c.reference(sample)
        exact = all((res.outputs[k] == v).all() for k, v in ref.items())
        out = {"cycles": res.stats.cycles, "latency_ns": res.stats.latency_ns, "energy_pj": res.stats.energy_pj,
               "instructions": res.stats.instructions, "bit_exact": bool(exact), "compile_s": t1 - t0,
               "sim_s": time.perf_counter() - t1, "timing_model": "pimsim"}
    elif name == "functional":
        from .sim.functional_bench import bench
        n, secs = bench(200_000, "fast", "random")
        out = {"instructions": n, "instructions_per_s": n / secs, "sim_s": secs}
    else:
        raise UnsupportedError(f"unknown workload {name!r}")
    out["wall_s"] = time.perf_counter() - t0
    return Stats.from_figures(out)
