"""Mapping of array groups onto cores (spec §11.1 step 4).

``first_fit`` (PIMCOMP-NN's baseline, refined): for every layer and replica in order, place the
whole replica on the lowest-numbered core with enough free crossbars (so its partial sums stay
local); a replica that fits no single core is placed AG by AG, each on the lowest core with room.
``locality``: the same, but the search starts at the core where the previous replica went
(next fit), which keeps consecutive layers on neighbouring cores.
``balanced``: a core runs its ``mvmul`` one after the other, so replicas on the same core give
no parallelism.  Layers are placed largest replica first; every replica (or, when it fits no
core, every AG) goes to the core with room that has the least work *of this layer* (so a
layer's replicas run in parallel on different cores), then the least work in total (work =
windows × AGs, i.e. the number of ``mvmul``).
"""

from __future__ import annotations

from ....core.errors import UnsupportedError
from .partition import AG, MatPlan


class MappingError(UnsupportedError):
    """The AGs do not fit the chip."""


def map_ags(plans: list[MatPlan], cores: int, xbars_per_core: int, *, policy: str = "first_fit") -> list[int]:
    """Assign ``ag.core`` for every AG; returns the used crossbars per core.

    Raises
    ------
    MappingError
        When some AG finds no core with enough free crossbars.
    """
    if policy == "balanced":
        return _map_balanced(plans, cores, xbars_per_core)
    if policy not in ("first_fit", "locality"):
        raise ValueError(f"unknown mapping policy {policy!r} (first_fit, locality, balanced)")
    free = [xbars_per_core] * cores
    start = 0
    for plan in plans:
        for ags in plan.ags:
            need = sum(a.xbars for a in ags)
            order = list(range(cores)) if policy == "first_fit" else [(start + i) % cores for i in range(cores)]
            home = next((c for c in order if free[c] >= need), None)
            if home is not None:
                for a in ags:
                    a.core = home
                free[home] -= need
                start = home
                continue
            for a in ags:
                c = next((c for c in order if free[c] >= a.xbars), None)
                if c is None:
                    raise MappingError(f"array group of {a.xbars} crossbars (layer {a.layer}) does not fit: "
                                       f"{sum(free)} crossbars free in total")
                a.core = c
                free[c] -= a.xbars
                start = c
    return [xbars_per_core - f for f in free]


def _map_balanced(plans: list[MatPlan], cores: int, xbars_per_core: int) -> list[int]:
    free = [xbars_per_core] * cores
    load = [0] * cores
    order = sorted(range(len(plans)), key=lambda i: (-plans[i].xbars_per_replica, i))
    for li in order:
        plan = plans[li]
        mine = [0] * cores
        for r, ags in enumerate(plan.ags):
            w = plan.windows[r][1] - plan.windows[r][0] if plan.windows else 1
            need = sum(a.xbars for a in ags)
            fits = [c for c in range(cores) if free[c] >= need]
            if fits:
                c = min(fits, key=lambda c: (mine[c], load[c], c))
                for a in ags:
                    a.core = c
                free[c] -= need
                mine[c] += w * len(ags)
                load[c] += w * len(ags)
                continue
            # larger than any free core: packed onto as few cores as possible (each extra core
            # costs one partial-sum transfer + add per batch at the home core); the cores are
            # taken least-loaded first among those with the most room
            rest = list(ags)
            while rest:
                fits = [c for c in range(cores) if free[c] >= rest[0].xbars]
                if not fits:
                    raise MappingError(f"array group of {rest[0].xbars} crossbars (layer {rest[0].layer}) does not "
                                       f"fit: {sum(free)} crossbars free in total")
                c = min(fits, key=lambda c: (mine[c], -free[c], load[c], c))
                keep = []
                for a in rest:
                    if free[c] >= a.xbars:
                        a.core = c
                        free[c] -= a.xbars
                        mine[c] += w
                        load[c] += w
                    else:
                        keep.append(a)
                rest = keep
    return [xbars_per_core - f for f in free]


def units(ags: list[AG]) -> list[list[AG]]:
    """Group a replica's AGs by column part (unit)."""
    out: dict[int, list[AG]] = {}
    for a in ags:
        out.setdefault(a.unit, []).append(a)
    return [out[k] for k in sorted(out)]
