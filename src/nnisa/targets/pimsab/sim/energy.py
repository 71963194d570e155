"""PIMSAB energy model (spec §3.8): dynamic energy per instruction and per flit hop, static energy
per cycle, by component (22 nm constants of the official simulator, joules)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..config import PimsabConfig
from ..precision import decode
from .ops import MN_NAMES, TimingOps

E_ARRAY_RD = E_ARRAY_WR = 3.309e-12
E_ARRAY_COMPUTE = 5.926e-12
E_INSTR_CTRL = 7.66e-11
E_RF_RD = E_RF_WR = 4.22e-12
E_NOC = 4.33e-13
E_HTREE = 4.98e-15
E_BUS = 2.88e-14
E_TRANSPOSE = 2.73e-13
E_SHUFFLE = 7.08e-15
E_DRAM = 9.32e-12
E_POPCOUNT = 6.29e-13

SE_NOC = 2.21e-10
SE_HTREE = 3.64e-14
SE_BUS = 3.64e-14
SE_INSTR_CTRL = 5.86e-14
SE_TRANSPOSE = 3.39e-12
SE_POPCOUNT = 2.19e-15
SE_RF = 2.17e-14
SE_ARRAY = 1.5e-12
SE_SHUFFLE = 7.81e-15

COMPONENTS = ("array", "instr_ctrl", "rf", "htree", "bus", "transpose", "shuffle", "dram", "noc", "popcount")
NO_CTRL = ("nop", "signal", "wait", "reset_sync")


def _reduce_tile_interconnect(ps: int, levels: int, crams: int, cols: int) -> tuple[int, int]:
    """(ops, bits) of an inter-CRAM reduction, as the official simulator counts them: its loop over
    levels 1..L-1 runs twice, the second pass carrying on from the halved CRAM count and grown
    precision of the first (so it adds only the last level or two, not a second copy)."""
    ops = bits = 0
    n, p = crams, ps
    for _ in range(2):
        for _i in range(1, levels):
            n //= 2
            bits += n * p * cols
            p += 1
            ops += n * p
    return ops, bits


def instruction_energy(mn: str, ins: dict, cfg: PimsabConfig, cyc: int, shuffled_load: bool = False,
                       load_elems: int | None = None) -> dict[str, float]:
    """Dynamic energy of one instruction by component (without NoC hops)."""
    e: dict[str, float] = defaultdict(float)
    crams, cols, W = cfg.crams_per_tile, cfg.cram_cols, cfg.tile_bitlines
    D = cfg.transfer_depth
    bus = cfg.tile_interconnect == "bus"
    if mn not in NO_CTRL:
        e["instr_ctrl"] += E_INSTR_CTRL
    size = ins.get("size", 0)
    n_c = crams if size == 0 else -(-size // cols)
    ncols = W if size == 0 else size

    def link(p: int, columns: int) -> None:
        if bus:
            e["bus"] += p * columns * E_BUS
        else:
            e["htree"] += D * p * columns * E_HTREE

    if mn in ("set", "reset"):
        e["array"] += E_ARRAY_WR * decode(ins["pd"]).bits * n_c
    elif mn in ("add", "sub", "add_const", "mult", "max", "min", "and", "or", "xor", "not", "copy", "shift",
                "set_mask"):
        e["array"] += E_ARRAY_COMPUTE * cyc * n_c
        if mn == "add_const":
            e["rf"] += E_RF_RD
            if not cfg.const_op:
                e["array"] += decode(ins["pb"]).bits * E_ARRAY_WR * crams
    elif mn == "mac":
        e["array"] += E_ARRAY_COMPUTE * cyc * n_c
        e["instr_ctrl"] += E_INSTR_CTRL
    elif mn in ("mul_const", "dot_const"):
        e["array"] += E_ARRAY_COMPUTE * cyc * n_c
        e["rf"] += E_RF_RD
        if not cfg.const_op:
            extra = decode(ins["pb"]).bits if mn == "mul_const" else decode(ins["px"]).bits + decode(ins["py"]).bits
            e["array"] += extra * E_ARRAY_WR * crams
    elif mn == "reduce_cram" or (mn == "reduce_tile" and cfg.reduction == "intraCRAM"):
        e["array"] += E_ARRAY_COMPUTE * cyc * crams
    elif mn == "reduce_tile":
        ops_, bits = _reduce_tile_interconnect(decode(ins["pa"]).bits, ins["levels"], crams, cols)
        e["array"] += ops_ * E_ARRAY_COMPUTE
        if bus:
            e["bus"] += bits * E_BUS
        else:
            e["htree"] += bits * E_HTREE
    elif mn == "cram_local_shf":
        p = min(decode(ins["pa"]).bits, decode(ins["pd"]).bits)
        e["array"] += p * E_ARRAY_RD * crams + p * E_ARRAY_WR * crams
    elif mn == "cram_tx_rx":
        p = decode(ins["p"]).bits
        e["array"] += p * (E_ARRAY_RD + E_ARRAY_WR)
        if bus:
            e["bus"] += p * cols * E_BUS
        else:
            e["htree"] += p * crams * E_HTREE
    elif mn == "cram_bcast":
        p = decode(ins["p"]).bits
        e["array"] += p * E_ARRAY_RD + p * E_ARRAY_WR * (crams - 1)
        if bus:
            e["bus"] += p * cols * E_BUS
        else:
            e["htree"] += p * cols * cfg.htree_switches * E_HTREE
    elif mn == "tile_tx":
        p = 1 if ins["rf"] else decode(ins["p"]).bits
        e["array"] += p * E_ARRAY_RD * n_c
        if bus:
            e["bus"] += p * ncols * E_BUS
        else:
            e["htree"] += 2 * D * p * ncols * E_HTREE
    elif mn == "tile_rx":
        p = 1 if ins["rf"] else decode(ins["p"]).bits
        e["array"] += p * E_ARRAY_WR * n_c
        if ins["bcast"] or ins["shf_en"]:
            e["shuffle"] += E_SHUFFLE * cols * crams * p
    elif mn in ("load", "load_shf"):
        prec = decode(ins["p"])
        p = prec.dram_bits
        n = load_elems if load_elems is not None else (size or W)
        bits = p * n
        e["dram"] += E_DRAM * bits
        if ins["tr"]:
            e["transpose"] += E_TRANSPOSE * bits
        if shuffled_load:
            e["shuffle"] += E_SHUFFLE * cols * crams * p
        nc = crams if n >= W else -(-n // cols)
        link(p, n if n < W else W)
        e["array"] += p * E_ARRAY_WR * nc
    elif mn == "store":
        p = decode(ins["p"]).dram_bits
        bits = p * ncols
        e["dram"] += E_DRAM * bits
        if ins["tr"]:
            e["transpose"] += E_TRANSPOSE * bits
        e["array"] += p * E_ARRAY_RD * n_c
        link(p, ncols)
    elif mn in ("load_rf", "store_rf"):
        bits = 32 * cfg.rf_bits if size == 0 else size * decode(ins["p"]).dram_bits
        e["dram"] += E_DRAM * bits
        regs = cfg.rf_regs if size == 0 else size
        e["rf"] += regs * (E_RF_WR if mn == "load_rf" else E_RF_RD)
    elif mn in ("read_rf", "write_rf", "add_rf", "sub_rf"):
        e["rf"] += E_RF_RD if mn == "read_rf" else E_RF_WR
    elif mn == "popcount_rf":
        c = decode(ins["pa"]).bits + cfg.popcount_stages
        e["array"] += c * E_ARRAY_RD
        e["rf"] += E_RF_WR
        e["popcount"] += E_POPCOUNT + (c if cfg.energy_compat_popcount else 0)
    return e


def static_power(cfg: PimsabConfig) -> dict[str, float]:
    """Static energy per clock cycle by component (J/cycle)."""
    T, crams = cfg.tiles_used, cfg.crams_per_tile
    out = {"noc": SE_NOC * T, "instr_ctrl": SE_INSTR_CTRL * T, "popcount": SE_POPCOUNT * T, "rf": SE_RF * T,
           "array": SE_ARRAY * T * crams, "shuffle": SE_SHUFFLE * T * crams,
           "transpose": SE_TRANSPOSE * cfg.mesh_width * (cfg.link_bits / 256)}
    if cfg.tile_interconnect == "bus":
        out["bus"] = SE_BUS * T
    else:
        out["htree"] = SE_HTREE * T * cfg.htree_switches
    return out


#: instruction columns the energy of one instruction depends on
_ENERGY_COLS = ("op", "size", "pd", "pa", "pb", "p", "px", "py", "levels", "tr", "bcast", "shf_en", "shf", "rf")


def program_energy(prog, ops: TimingOps, cfg: PimsabConfig, hops: int, cycles: int) -> dict:
    """Dynamic energy by component (instructions + NoC), static energy by component, totals (J).

    Each distinct (instruction shape, cycle count, op kind) is evaluated once and multiplied by
    its count."""
    from ..isa import build_isa
    from ..program import shuffle_size
    isa = build_isa()
    dyn: dict[str, float] = defaultdict(float)
    W = cfg.tile_bitlines
    real = ops.row >= 0
    # ops inserted by ablation rewrites: full-tile spill/refill transfers
    ins_bits = (ops.dram_rd + ops.dram_wr)[~real]
    if len(ins_bits):
        total = float(ins_bits.sum())
        dyn["instr_ctrl"] += E_INSTR_CTRL * len(ins_bits)
        dyn["dram"] += E_DRAM * total
        dyn["transpose"] += E_TRANSPOSE * total
        if cfg.tile_interconnect == "htree":
            dyn["htree"] += cfg.transfer_depth * total * E_HTREE
        else:
            dyn["bus"] += total * E_BUS
        dyn["array"] += float((ins_bits // W).sum()) * E_ARRAY_WR * cfg.crams_per_tile
    idx = np.flatnonzero(real)
    if len(idx):
        rows = prog.rows[ops.row[idx]]
        shape = np.stack([rows[c].astype(np.int64) for c in _ENERGY_COLS]
                         + [ops.cycles[idx], ops.mnem[idx]], axis=1)
        from .ops import group_rows
        rep, inv = group_rows(shape)
        counts = np.bincount(inv, minlength=len(rep))
        for u, cnt in zip(shape[rep].tolist(), counts.tolist()):
            ins = dict(zip(isa.columns, (0,) * len(isa.columns)))
            ins.update(zip(_ENERGY_COLS, u[:len(_ENERGY_COLS)]))
            cyc, op_mn = u[-2], MN_NAMES[u[-1]]
            mn = isa.by_opcode[ins["op"]].mnemonic
            if mn == "shift" and op_mn == "store":  # cross_cram_shift=off: store + load replace the shift
                fake = dict(ins, size=0, p=ins["pa"], tr=1)
                parts = [instruction_energy(x, fake, cfg, 0) for x in ("store", "load")]
            else:
                elems = None
                if mn == "load_shf":
                    elems = shuffle_size(cfg, ins["bcast"], ins["shf_en"], ins["shf"], ins["size"]) \
                        if cfg.shuffle else W
                parts = [instruction_energy(mn, ins, cfg, cyc, mn == "load_shf" and cfg.shuffle, elems)]
            for part in parts:
                for k, v in part.items():
                    dyn[k] += v * cnt
    dyn["noc"] += hops * cfg.link_bits * E_NOC
    stat = {k: v * cycles for k, v in static_power(cfg).items()}
    total_dyn = float(sum(dyn.values()))
    return {"dynamic_j": total_dyn, "static_j": float(sum(stat.values())),
            "dynamic_by_component_j": {k: float(dyn.get(k, 0.0)) for k in COMPONENTS},
            "static_by_component_j": {k: float(stat.get(k, 0.0)) for k in COMPONENTS}}
