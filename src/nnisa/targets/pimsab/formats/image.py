"""PIMSAB program images (spec §2.6): a little-endian container of per-tile 128-bit instruction
streams and initial DRAM segments.

Layout: ``"PSAB"``, version u16 = 1, flags u16 = 0, n_streams u32, the configuration's SHA-256
(32 bytes), n_segments u32, then ``n_streams × {tile u32, n_words u32, offset u64}``,
``n_segments × {dram_addr u64, length u64, offset u64}`` and the payload.  Instruction words are
16 bytes big-endian (byte 0 holds bits 127..120); offsets count from the start of the file.
"""

from __future__ import annotations

import struct

import numpy as np

from ....core.errors import DecodeError
from ..isa import build_isa
from ..program import PimsabProgram

ISA = build_isa()
MAGIC = b"PSAB"
VERSION = 1
_HEAD = struct.Struct("<4sHHI32sI")
_STREAM = struct.Struct("<IIQ")
_SEGMENT = struct.Struct("<QQQ")
WORD_BYTES = 16
#: tiles of the largest mesh a configuration may have (PimsabConfig: at most 4,096)
MAX_TILES = 4096


def rows_to_bytes(rows: np.ndarray) -> bytes:
    """IR rows → 16-byte big-endian words (every offending field reported)."""
    return ISA.encode_array(rows)[:, ::-1].tobytes()


def bytes_to_rows(data: bytes, *, lenient: bool = False, base: int = 0) -> np.ndarray:
    """16-byte big-endian words → IR rows; ``base`` numbers the words in error messages."""
    le = np.frombuffer(data, np.uint8).reshape(-1, WORD_BYTES)[:, ::-1]
    return ISA.decode_array(le, lenient=lenient, where=lambda i: f"word {base + i}")


def encode_image(prog: PimsabProgram) -> bytes:
    """Serialise a program (streams in tile order)."""
    prog = prog.tile_major()
    tiles = prog.stream_tiles()
    head_len = _HEAD.size + _STREAM.size * len(tiles) + _SEGMENT.size * len(prog.segments)
    words = rows_to_bytes(prog.rows)
    parts = [b""]
    table = []
    offset = head_len
    for t in tiles:
        idx = prog.stream(t)
        table.append(_STREAM.pack(t, len(idx), offset))
        offset += WORD_BYTES * len(idx)
    seg_table = []
    for addr, data in prog.segments:
        seg_table.append(_SEGMENT.pack(addr, len(data), offset))
        offset += len(data)
    parts = [_HEAD.pack(MAGIC, VERSION, 0, len(tiles), prog.config_sha, len(prog.segments)), *table, *seg_table,
             words, *(bytes(d) for _, d in prog.segments)]
    return b"".join(parts)


def check_head(head: bytes, size: int, file: str | None = None) -> int:
    """Check the fixed header of an image of ``size`` bytes whose first bytes are ``head`` (magic,
    version, flags, table sizes); returns where the tables end.  Used before a file is read whole."""
    def bad(msg: str) -> DecodeError:
        return DecodeError(msg, file=file)

    if len(head) < _HEAD.size:
        raise bad(f"truncated PIMSAB image ({len(head)} bytes, header needs {_HEAD.size})")
    magic, version, flags, n_streams, _, n_segments = _HEAD.unpack_from(head, 0)
    if magic != MAGIC:
        raise bad(f"not a PIMSAB program image (magic {magic!r}, expected {MAGIC!r})")
    if version != VERSION:
        raise bad(f"unsupported PIMSAB image version {version} (this reader handles {VERSION})")
    if flags:
        raise bad(f"unknown PIMSAB image flags 0x{flags:04x}")
    if n_streams > MAX_TILES:
        raise bad(f"{n_streams:,} streams: at most one per tile ({MAX_TILES} tiles)")
    table_end = _HEAD.size + _STREAM.size * n_streams + _SEGMENT.size * n_segments
    if table_end > size:
        raise bad(f"truncated PIMSAB image: {n_streams} streams and {n_segments} segments need a "
                  f"{table_end}-byte header, file has {size} bytes")
    return table_end


def decode_image(data: bytes, *, lenient: bool = False, file: str | None = None) -> PimsabProgram:
    """Parse a program image; malformed containers and words raise :class:`DecodeError`."""
    def bad(msg: str) -> DecodeError:
        return DecodeError(msg, file=file)

    table_end = check_head(data[:_HEAD.size], len(data), file)
    _, _, _, n_streams, sha, n_segments = _HEAD.unpack_from(data, 0)
    streams = list(_STREAM.iter_unpack(data[_HEAD.size:_HEAD.size + _STREAM.size * n_streams]))
    seg_at = _HEAD.size + _STREAM.size * n_streams
    segs = list(_SEGMENT.iter_unpack(data[seg_at:seg_at + _SEGMENT.size * n_segments]))
    # streams and segments may not share bytes: the work and memory of reading an image are
    # bounded by its payload, however many table entries point at the same bytes
    seen: set[int] = set()
    for tile, n_words, offset in streams:
        if tile >= MAX_TILES:
            raise bad(f"stream table names tile {tile}, outside 0..{MAX_TILES - 1} (the largest mesh)")
        if tile in seen:
            raise bad(f"stream table names tile {tile} twice")
        seen.add(tile)
        end = offset + WORD_BYTES * n_words
        if offset < table_end or end > len(data):
            raise bad(f"stream of tile {tile}: bytes {offset}..{end} outside the payload")
    for k, (addr, length, offset) in enumerate(segs):
        if offset < table_end or offset + length > len(data):
            raise bad(f"DRAM segment {k}: bytes {offset}..{offset + length} outside the payload")
        if addr + length > 1 << 48:
            raise bad(f"DRAM segment {k} at 0x{addr:x} exceeds the 48-bit address space")
    declared = sum(WORD_BYTES * n for _, n, _ in streams) + sum(length for _, length, _ in segs)
    if declared > len(data) - table_end:
        raise bad(f"the stream and segment tables declare {declared:,} bytes but the payload holds "
                  f"{len(data) - table_end:,}: entries overlap")
    rows, tiles = [], []
    base = 0
    for tile, n_words, offset in streams:
        end = offset + WORD_BYTES * n_words
        rows.append(bytes_to_rows(data[offset:end], lenient=lenient, base=base))
        tiles.append(np.full(n_words, tile, np.int32))
        base += n_words
    segments = []
    for addr, length, offset in segs:
        segments.append((addr, bytes(data[offset:offset + length])))
    all_rows = np.concatenate(rows) if rows else ISA.empty()
    all_tiles = np.concatenate(tiles) if tiles else np.zeros(0, np.int32)
    return PimsabProgram(all_rows, all_tiles, segments, bytes(sha))
