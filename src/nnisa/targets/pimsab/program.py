"""The PIMSAB program model: per-tile instruction streams plus an initial DRAM image (spec §2.5–§2.6).

A :class:`PimsabProgram` holds IR rows (the ISA's structured dtype) in a global order with the
executing tile of each row; a tile's stream is the subsequence of its rows.  Programs also carry
DRAM segments and the SHA-256 of the configuration they were built for.  :func:`check_program`
validates a program against a configuration (precisions, CRAM geometry, RF indices, tiles,
shuffle sizes) with vectorised checks and names the first offending instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .config import PimsabConfig
from .isa import OPCODES, build_isa
from . import precision as P

ISA = build_isa()
DTYPE = ISA.dtype
ZERO_SHA = bytes(32)


@dataclass
class PimsabProgram:
    """Instruction streams of a PIMSAB chip.

    Attributes
    ----------
    rows
        IR rows (dtype :data:`DTYPE`) in global order.
    tiles
        Executing tile of each row (int32).
    segments
        Initial DRAM image: ``(address, bytes)`` pairs.
    config_sha
        SHA-256 of the canonical configuration the program was built for (zeros = unspecified).
    config_name
        Preset name the text named with ``.config`` (informational).
    lines
        Source line of each row (assembled programs), else ``None``.
    """

    rows: np.ndarray
    tiles: np.ndarray
    segments: list[tuple[int, bytes]] = field(default_factory=list)
    config_sha: bytes = ZERO_SHA
    config_name: str | None = None
    lines: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.tiles = np.asarray(self.tiles, dtype=np.int32)
        if len(self.tiles) != len(self.rows):
            raise ValueError("one tile per row")

    def __len__(self) -> int:
        return len(self.rows)

    def stream_tiles(self) -> list[int]:
        """Tiles that have a stream, ascending."""
        return sorted(set(self.tiles.tolist()))

    def stream(self, tile: int) -> np.ndarray:
        """Row indices of one tile's stream, in order."""
        return np.flatnonzero(self.tiles == tile)

    def tile_major(self) -> "PimsabProgram":
        """The same streams in tile-major order (the order of program images and canonical text)."""
        order = np.argsort(self.tiles, kind="stable")
        return PimsabProgram(self.rows[order], self.tiles[order], list(self.segments), self.config_sha,
                             self.config_name, None if self.lines is None else self.lines[order])

    def equals(self, other: "PimsabProgram") -> bool:
        """Same streams (per tile, in order), segments and configuration hash."""
        a, b = self.tile_major(), other.tile_major()
        return (np.array_equal(a.rows, b.rows) and np.array_equal(a.tiles, b.tiles)
                and [(x, bytes(y)) for x, y in a.segments] == [(x, bytes(y)) for x, y in b.segments]
                and a.config_sha == b.config_sha)

    def mnemonics(self) -> list[str]:
        return [ISA.by_opcode[int(o)].mnemonic for o in self.rows["op"]]


def from_rows(rows: list[tuple], tiles: list[int], **kw) -> PimsabProgram:
    """Program from IR row tuples (as built by :meth:`nnisa.core.isa.ISA.row`)."""
    return PimsabProgram(ISA.rows(rows), np.asarray(tiles, np.int32), **kw)


# ---------------------------------------------------------------------------- validation
_BITS = np.array([P.decode(b).bits if P.valid_byte(b) else 0 for b in range(256)], dtype=np.int64)
_VALID = np.array([P.valid_byte(b) for b in range(256)])
_FLOAT = np.array([P.valid_byte(b) and P.decode(b).is_float for b in range(256)])

_O = OPCODES
_BIN = [_O[m] for m in ("add", "sub", "mult", "max", "min", "and", "or", "xor", "mac")]
_UN = [_O[m] for m in ("not", "copy", "shift", "reduce_cram", "reduce_tile", "cram_local_shf")]
_CONST = [_O["mul_const"], _O["add_const"], _O["dot_const"]]
_COMPUTE = _BIN + _UN + _CONST + [_O["set"], _O["reset"], _O["set_mask"], _O["popcount_rf"]]
_CRAM_XFER = [_O["load"], _O["store"], _O["load_shf"]]
_RF_XFER = [_O["load_rf"], _O["store_rf"]]


def shuffle_size(cfg: PimsabConfig, bcast: int, shf_en: int, shf: int, size: int) -> int:
    """Elements moved by a transfer with these broadcast/shuffle flags (spec §2.7.6)."""
    if bcast:
        return cfg.cram_cols
    if shf_en:
        return cfg.crams_per_tile * (1 << shf)
    return size if size else cfg.tile_bitlines


def check_program(prog: PimsabProgram, cfg: PimsabConfig) -> tuple[int, str] | None:
    """First problem of ``prog`` under ``cfg`` as ``(row index, message)``, or ``None``."""
    r = prog.rows
    if len(r) == 0:
        return None
    op = r["op"].astype(np.int64)
    problems: list[tuple[int, str]] = []

    def flag(mask: np.ndarray, message: Callable[[int], str]) -> None:
        idx = np.flatnonzero(mask)
        if len(idx):
            problems.append((int(idx[0]), message(int(idx[0]))))

    def isin(codes) -> np.ndarray:
        return np.isin(op, codes)

    tiles = prog.tiles
    flag((tiles < 0) | (tiles >= cfg.n_tiles), lambda i: f"tile {tiles[i]} outside the {cfg.n_tiles}-tile mesh")
    for c in ("pd", "pa", "pb", "px", "py", "pin", "p"):
        v = r[c].astype(np.int64)
        flag(~_VALID[v & 255] | (v > 255), lambda i, c=c: f"invalid precision byte 0x{int(r[c][i]):02X} in {c}")
    if problems:
        return min(problems)
    W, rows_max = cfg.tile_bitlines, cfg.cram_rows

    def rows_fit(mask, row_col, bits, what):
        end = r[row_col].astype(np.int64) + bits
        flag(mask & (end > rows_max),
             lambda i: f"{what} rows {int(r[row_col][i])}..{int(end[i]) - 1} exceed the {rows_max} wordlines of a CRAM")

    bits = {c: _BITS[r[c].astype(np.int64)] for c in ("pd", "pa", "pb", "p", "pin")}
    wl_d = isin(_BIN + _UN + _CONST + [_O["set"], _O["reset"]])
    rows_fit(wl_d, "rd", bits["pd"], "destination")
    rows_fit(isin(_BIN + _UN + _CONST + [_O["popcount_rf"]]), "ra", bits["pa"], "source A")
    rows_fit(isin(_BIN + [_O["dot_const"]]), "rb", bits["pb"], "source B")
    rows_fit(op == _O["set_mask"], "ra", 1, "mask")
    mac = op == _O["mac"]
    rows_fit(mac, "scratch", (bits["pa"] + bits["pb"] + 1) // 2, "mac scratch")
    rows_fit(mac, "rd", bits["pin"], "accumulator")
    rows_fit(isin(_CRAM_XFER), "row", bits["p"], "transfer")
    xfer_rows = isin([_O["cram_tx_rx"], _O["cram_bcast"]]) | (isin([_O["tile_tx"], _O["tile_rx"]]) & (r["rf"] == 0))
    rows_fit(xfer_rows, "src_row", bits["p"], "source")
    rows_fit(xfer_rows, "dst_row", bits["p"], "destination")
    size = r["size"].astype(np.int64)
    flag(isin(_COMPUTE) & (size > W), lambda i: f"size {size[i]} exceeds the {W} bitlines of a tile")
    # DRAM transfers: data on bitlines [cram*cols, cram*cols + n)
    xfer = isin([_O["load"], _O["store"]])
    n = np.where(size == 0, W, size)
    start = r["cram"].astype(np.int64) * cfg.cram_cols
    flag(xfer & (start + n > W), lambda i: f"transfer of {n[i]} elements from CRAM {int(r['cram'][i])} "
                                           f"exceeds the {W} bitlines of a tile")
    # RF indices and ranges
    rf_n = np.where(size == 0, 32, size)
    flag(isin(_RF_XFER) & ((r["row"].astype(np.int64) + np.where(size == 0, 0, rf_n) > cfg.rf_regs)
                           | ((size == 0) & (r["row"] != 0))),
         lambda i: f"RF transfer rf{int(r['row'][i])} size {size[i]} exceeds the {cfg.rf_regs} registers")
    flag(isin(_RF_XFER) & (size == 0) & (r["p"] != 0), lambda i: "a whole-RF transfer takes no precision")
    flag(isin(_RF_XFER) & _FLOAT[r["p"].astype(np.int64)] & (size != 0),
         lambda i: "RF transfers take integer precisions")
    for c, ops_ in (("rd", ["write_rf", "add_rf", "sub_rf", "popcount_rf"]), ("ra", ["read_rf", "add_rf", "sub_rf"]),
                    ("rb", ["add_rf", "sub_rf", "mul_const", "add_const"]), ("xrf", ["dot_const"]),
                    ("yrf", ["dot_const"])):
        flag(isin([_O[m] for m in ops_]) & (r[c] >= cfg.rf_regs),
             lambda i, c=c: f"RF register {int(r[c][i])} ({c}) outside 0..{cfg.rf_regs - 1}")
    # reductions
    lv = r["levels"].astype(np.int64)
    flag((op == _O["reduce_cram"]) & ((lv < 1) | ((1 << np.minimum(lv, 40)) > cfg.cram_cols)),
         lambda i: f"reduce_cram levels={lv[i]} needs 2^levels <= {cfg.cram_cols} bitlines")
    flag((op == _O["reduce_tile"]) & ((lv < 1) | ((1 << np.minimum(lv, 40)) > cfg.crams_per_tile)),
         lambda i: f"reduce_tile levels={lv[i]} needs 2^levels <= {cfg.crams_per_tile} CRAMs")
    # tiles and CRAMs named by X-format instructions
    xop = isin([_O[m] for m in ("cram_tx_rx", "cram_bcast", "tile_tx", "tile_rx", "signal", "wait")])
    for c in ("src_tile", "dst_tile"):
        flag(xop & (r[c] >= cfg.n_tiles), lambda i, c=c: f"{c} {int(r[c][i])} outside the {cfg.n_tiles}-tile mesh")
    for c in ("src_cram", "dst_cram", "cram"):
        flag(r[c] >= cfg.crams_per_tile, lambda i, c=c: f"{c} {int(r[c][i])} outside 0..{cfg.crams_per_tile - 1}")
    local = isin([_O["cram_tx_rx"], _O["cram_bcast"]])
    flag(local & ((r["src_tile"] != tiles) | (r["dst_tile"] != tiles)),
         lambda i: f"CRAM-to-CRAM transfer in tile {tiles[i]} names tiles {int(r['src_tile'][i])}/{int(r['dst_tile'][i])}")
    flag(isin([_O["tile_tx"], _O["signal"]]) & (r["src_tile"] != tiles),
         lambda i: f"sends execute in the source tile's stream (t{int(r['src_tile'][i])}), not t{tiles[i]}")
    flag(isin([_O["tile_rx"], _O["wait"]]) & (r["dst_tile"] != tiles),
         lambda i: f"receives execute in the destination tile's stream (t{int(r['dst_tile'][i])}), not t{tiles[i]}")
    flag(isin([_O["tile_tx"], _O["tile_rx"]]) & (r["src_tile"] == r["dst_tile"]),
         lambda i: "a tile cannot send to itself")
    # shuffles and broadcasts
    shf = op == _O["load_shf"]
    flag(shf & (r["bcast"] == 0) & (r["shf_en"] == 0), lambda i: "load_shf needs bcast=1 or shf=k")
    net = isin([_O["tile_tx"], _O["tile_rx"]])
    want = np.where(r["bcast"] == 1, cfg.cram_cols, np.where(r["shf_en"] == 1,
                                                              cfg.crams_per_tile << r["shf"].astype(np.int64), size))
    flag((shf | (net & ((r["bcast"] == 1) | (r["shf_en"] == 1)))) & (size != want),
         lambda i: f"shuffled transfer size {size[i]} must be {want[i]} (spec 2.7.6)")
    flag(net & (r["rf"] == 0) & (size > W), lambda i: f"size {size[i]} exceeds the {W} bitlines of a tile")
    rf_img = net & (r["rf"] == 1)
    flag(rf_img & ((r["p"] != P.U1) | (size != 32 * cfg.rf_bits) | (r["bcast"] == 1) | (r["shf_en"] == 1)),
         lambda i: f"an RF-image transfer (rf=1) takes u1 and size {32 * cfg.rf_bits} without shuffles")
    # int/float consistency of compute operands
    fl = {c: _FLOAT[r[c].astype(np.int64)] for c in ("pd", "pa", "pb")}
    two = isin(_BIN + [_O["dot_const"]])
    one = isin(_UN)
    mixed = (two & ((fl["pd"] != fl["pa"]) | (fl["pd"] != fl["pb"]))) | (one & (fl["pd"] != fl["pa"]))
    mixed |= isin([_O["mul_const"], _O["add_const"]]) & ((fl["pd"] != fl["pa"]) | (fl["pd"] != fl["pb"]))
    flag(mixed, lambda i: "integer and float operands cannot be mixed")
    return min(problems) if problems else None
