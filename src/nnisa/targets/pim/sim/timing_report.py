"""Reports of a :class:`~nnisa.targets.pim.sim.timing.TimingResult` (spec §8.9).

* :func:`format_pimsim_report` — the block pimsim-nn prints (same labels and number formats),
* :func:`format_detail_report` — nnisa's additions (per-core ns/cycles, unit busy time,
  global-memory utilisation, NoC traffic, energy breakdown),
* :func:`result_to_dict` — the ``--json`` dictionary.
"""

from __future__ import annotations

from typing import Any

from .energy import COMPONENTS

PS = 1000


def _ms(ps: int) -> str:
    """Exact ms value without trailing zeros (SystemC ``sc_time`` printing)."""
    ns = ps / PS
    if ns == int(ns):
        s = f"{int(ns) / 1e6:.6f}"
    else:
        s = f"{ns / 1e6:.9f}"
    return s.rstrip("0").rstrip(".") if "." in s else s


def format_pimsim_report(result, config_name: str, inst_name: str, verbose: int = 0) -> str:
    """pimsim-nn's "Simulation Report" block.

    Parameters
    ----------
    result
        A :class:`~nnisa.targets.pim.sim.timing.TimingResult`.
    config_name, inst_name
        File names printed under "Basic Information".
    verbose
        ``report_verbose_level``: ≥ 1 adds per-core blocks; ≥ 2 adds an energy breakdown
        (pimsim-nn's own level-2 output is broken; ours is valid).
    """
    core_count = result.chip_core_count or len(result.finish_ps)
    lines = [
        "|*************** Simulation Report ***************|",
        "Basic Information:",
        f"  - config file:        {config_name}",
        f"  - inst file:          {inst_name}",
        f"  - verbose level:      {verbose}",
        f"  - core count:         {core_count}",
        f"  - simulation mode:    {result.sim_mode}",
        "Chip Simulation Result:",
    ]
    if result.sim_mode == 1:
        lines += [
            f"  - latency:            {_ms(result.latency_ps)} ms",
            f"  - average power:      {result.average_power_mw:.10g} mW",
            f"  - average energy:     {result.total_energy_pj:.16g} pJ",
        ]
    else:
        cnt = result.output_count
        lines += [
            f"  - output count:       {cnt:.10g} samples",
            f"  - throughput:         {result.throughput_sps:.10g} samples/s",
            f"  - average latency:    {(result.sim_time_ps / 1e9 / cnt) if cnt else float('inf'):.10g} ms",
            f"  - average power:      {result.average_power_mw:.10g} mW",
            f"  - average energy:     {(result.total_energy_pj / cnt) if cnt else float('inf'):.16g} pJ/it",
            f"  - slowest core:       {result.slowest_rounds} rounds "
            f"({result.slowest_rate_sps:.10g} samples/s)",
        ]
    if verbose >= 1:
        for c in sorted(result.finish_ps):
            lines.append(f"Core {c} Information")
            if result.sim_mode == 1:
                lines.append(f"  - finish time:        {result.finish_ps[c] / 1e9:.5g} ms")
            else:
                t = result.sim_time_ps / PS
                lines.append(f"  - rounds:             {result.rounds.get(c, 0)} samples")
                lines.append(f"  - average power:      {result.core_energy_pj.get(c, 0.0) / t:.10g} mW")
    if verbose >= 2:
        lines.append("Energy Breakdown:")
        for k in COMPONENTS:
            lines.append(f"  - {k + ':':<19} {result.energy_pj.get(k, 0.0):.16g} pJ")
    return "\n".join(lines) + "\n"


def format_detail_report(result, *, max_pairs: int = 50) -> str:
    """nnisa's additional report: per-core times and busy units, GMem utilisation, NoC, energy."""
    P = result.core_period_ps
    lines = [f"nnisa timing ({result.mode} mode, {'latency' if result.sim_mode == 1 else 'throughput'}):",
             f"  chip latency: {result.latency_ps / PS:,.3f} ns = {result.cycles:,.1f} cycles",
             *([f"  stream of {result.images} images: latency (first image in -> out) "
                f"{result.stream_latency_ps / PS:,.3f} ns, period (steady-state time per image) "
                f"{result.period_ps / PS:,.3f} ns"] if result.images > 1 else []),
             f"  global memory busy: {result.gm_busy_ps / PS:,.0f} ns ({100 * result.gm_utilisation:.2f} %)",
             "  core  instructions        finish ns      cycles   matrix %  vector %  transfer %  lmem %"]
    run = result.running_time_ps or 1
    for c in sorted(result.finish_ps):
        b = result.busy_ps[c]
        fin = result.finish_ps[c]
        mark = "" if result.finish_recorded.get(c) or result.sim_mode == 0 else "  (no finish recorded)"
        lines.append(f"  {c:>4}  {result.instructions[c]:>12,}  {fin / PS:>15,.0f}  {fin / P:>10,.0f}  "
                     f"{100 * b['matrix'] / run:>8.2f}  {100 * b['vector'] / run:>8.2f}  "
                     f"{100 * b['transfer'] / run:>10.2f}  {100 * b['local_memory'] / run:>6.2f}{mark}")
    lines.append("  NoC traffic (src -> dst: bytes, flits; -10 = global memory):")
    pairs = sorted(result.noc_bytes.items(), key=lambda kv: (-kv[1], kv[0]))
    for (s, d), nb in pairs[:max_pairs]:
        lines.append(f"    {s:>4} -> {d:>4}: {nb:>12,} B  {result.noc_flits[(s, d)]:>10,} flits")
    if len(pairs) > max_pairs:
        lines.append(f"    ... and {len(pairs) - max_pairs} more pairs")
    lines.append("  energy (pJ):")
    for k in COMPONENTS:
        lines.append(f"    {k:<14} {result.energy_pj.get(k, 0.0):>22,.3f}")
    lines.append(f"    {'total':<14} {result.total_energy_pj:>22,.3f}   average power {result.average_power_mw:.4f} mW")
    for w in result.warnings:
        lines.append(f"  warning: {w}")
    return "\n".join(lines) + "\n"


def result_to_dict(result) -> dict[str, Any]:
    """The ``--json`` dictionary of a timing result."""
    P = result.core_period_ps
    lat = result.stream_latency_ps
    period = result.period_ps
    d: dict[str, Any] = {
        "mode": result.mode,
        "sim_mode": result.sim_mode,
        "latency_ns": lat / PS,
        "period_ns": None if period is None else period / PS,
        "images": result.images,
        "cycles": lat / P,
        "core_period_ns": P / PS,
        "energy_pj": result.total_energy_pj,
        "dynamic_energy_pj": result.dynamic_energy_pj,
        "average_power_mw": result.average_power_mw,
        "energy_breakdown_pj": dict(result.energy_pj),
        "static_power_mw": result.static_power_mw,
        "global_memory": {"busy_ns": result.gm_busy_ps / PS, "utilisation": result.gm_utilisation},
        "per_core": [
            {"core": c, "finish_ns": result.finish_ps[c] / PS, "finish_recorded": result.finish_recorded[c],
             "cycles": result.finish_ps[c] / P, "instructions": result.instructions[c],
             "rounds": result.rounds.get(c, 0), "energy_pj": result.core_energy_pj.get(c, 0.0),
             "busy_ns": {k: v / PS for k, v in result.busy_ps[c].items()}}
            for c in sorted(result.finish_ps)],
        "noc": [{"src": s, "dst": t, "bytes": b, "flits": result.noc_flits[(s, t)]}
                for (s, t), b in sorted(result.noc_bytes.items())],
        "warnings": list(result.warnings),
    }
    if result.image_done_ps and result.images > 1:
        d["makespan_ns"] = result.latency_ps / PS
        d["image_done_ns"] = [t / PS for t in result.image_done_ps]
        d["energy_per_image_pj"] = result.total_energy_pj / result.images
        d["pipeline_depth"] = result.pipeline_depth
        if period is None:
            d["period_note"] = (f"no period: the stream has {result.images} images, the pipeline "
                                f"{result.pipeline_depth} stages (compile with more images)")
    if result.sim_mode == 0:
        d["throughput"] = {"sim_time_ms": result.sim_time_ps / 1e9, "output_count": result.output_count,
                           "samples_per_s": result.throughput_sps,
                           "slowest_core_rounds": result.slowest_rounds,
                           "slowest_core_samples_per_s": result.slowest_rate_sps}
    if result.incomplete_report:
        d["incomplete_report"] = result.incomplete_report
    return d
