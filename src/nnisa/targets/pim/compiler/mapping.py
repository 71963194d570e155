"""Mapping of array groups onto cores (spec §11.1 step 4).

``first_fit`` (PIMCOMP-NN's baseline, refined): for every layer and replica in order, place the
whole replica on the lowest-numbered core with enough free crossbars (so its partial sums stay
local); a replica that fits no single core is placed AG by AG, each on the lowest core with room.
``locality``: the same, but the search starts at the core where the previous replica went
(next fit), which keeps consecutive layers on neighbouring cores.
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
    if policy not in ("first_fit", "locality"):
        raise ValueError(f"unknown mapping policy {policy!r} (first_fit, locality)")
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


def units(ags: list[AG]) -> list[list[AG]]:
    """Group a replica's AGs by column part (unit)."""
    out: dict[int, list[AG]] = {}
    for a in ags:
        out.setdefault(a.unit, []).append(a)
    return [out[k] for k in sorted(out)]
