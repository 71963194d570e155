"""Reading and writing Cherry program files by extension.

| extension | content |
| --- | --- |
| ``.cisa``, ``.bin`` | program image: 186-byte header + big-endian 16-bit words (§2.6) |
| ``.casm``, ``.s``, ``.txt`` | assembly text (§2.5) |
| ``.pkt`` | the host → device packet stream that loads and starts the program (§5.1): ro_data upload (type 0), program upload (type 1, ≤ 63 words per packet), enqueue (type 2) |

The tile size and the encoding of binary files come from the configuration (``--arch``).
:data:`FORMATS` is the table (compiled bundle folders included, :mod:`.bundle`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ....core.errors import DecodeError, FormatError
from ....core.fileio import read_bytes, read_text
from ....core.formats import FileFormat, FormatTable
from ..config import load_config
from ..program import HEADER_BYTES, MAX_PROGRAM, Header, Program, program_stats
from .binary import decode_image, decode_words, encode_image, encode_words
from .bundle import CompiledModel, read_bundle
from .text import assemble, disassemble

__all__ = ["FORMATS", "assemble_for", "decode", "decode_packets", "encode_packets", "read_program", "stats_of", "text_of",
           "write_program"]

MAX_PACKET_WORDS = 63
#: the largest file of each kind read: an image is a header and at most MAX_PROGRAM words; text and
#: packet streams (which may re-upload) get a generous bound, checked before the file is read
MAX_FILE_BYTES = {"binary": HEADER_BYTES + 2 * MAX_PROGRAM, "text": 16 << 20, "packets": 16 << 20}


def encode_packets(prog: Program, slot: int = 0) -> bytes:
    """Packet stream: ro_data → slot, program words → icache[org..], enqueue (slot, org, org+n)."""
    if not 0 <= slot < 64:
        raise FormatError(f"ro_data slot {slot} does not fit the 6-bit length field")
    words = encode_words(prog)
    out = bytearray([slot << 2 | 0])
    out += prog.header.pack()
    for start in range(0, len(words), MAX_PACKET_WORDS):
        chunk = words[start:start + MAX_PACKET_WORDS]
        out.append(len(chunk) << 2 | 1)
        out += int(prog.org + start).to_bytes(2, "big")
        out += chunk.astype(">u2").tobytes()
    out.append(2)
    out.append(slot)
    out += int(prog.org).to_bytes(2, "big") + int(prog.org + len(words)).to_bytes(2, "big")
    return bytes(out)


def decode_packets(data: bytes, sz: int = 4, encoding: str = "canonical") -> Program:
    """Parse a packet stream holding exactly one enqueued program."""
    icache: dict[int, int] = {}
    slots: dict[int, bytes] = {}
    enq: list[tuple[int, int, int]] = []
    pos = 0

    def need(n: int, what: str) -> bytes:
        nonlocal pos
        if pos + n > len(data):
            raise DecodeError(f"packet stream ends inside {what} at byte {pos}")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    while pos < len(data):
        at = pos
        head = data[pos]
        pos += 1
        typ, length = head & 3, head >> 2
        if typ == 0:
            slots[length] = need(HEADER_BYTES, "an ro_data packet")
        elif typ == 1:
            if length == 0:
                raise DecodeError(f"byte {at}: program upload of 0 instructions")
            base = int.from_bytes(need(2, "a program upload"), "big")
            words = np.frombuffer(need(2 * length, "a program upload"), dtype=">u2")
            for k, w in enumerate(words.tolist()):
                icache[base + k] = w
        elif typ == 2:
            if length:
                raise DecodeError(f"byte {at}: enqueue packet with a non-zero length field")
            body = need(5, "an enqueue packet")
            enq.append((body[0], int.from_bytes(body[1:3], "big"), int.from_bytes(body[3:5], "big")))
        else:
            raise DecodeError(f"byte {at}: packet type 3 (read response) is not part of a program stream")
    if len(enq) != 1:
        raise DecodeError(f"a program packet stream enqueues exactly one program; this one enqueues {len(enq)}")
    slot, start, end = enq[0]
    if slot not in slots:
        raise DecodeError(f"enqueued ro_data slot {slot} was never uploaded")
    missing = [pc for pc in range(start, end) if pc not in icache]
    if missing or end < start:
        raise DecodeError(f"enqueued icache range {start}..{end} was not uploaded (first missing word {missing[:1]})")
    words = np.array([icache[pc] for pc in range(start, end)], dtype=np.uint16)
    return Program(decode_words(words, sz, encoding), Header.unpack(slots[slot]), sz=sz, org=start,
                   encoding=encoding)


def assemble_for(text: str, *, file: str | None = None, config: Any = None, encoding: str | None = None) -> Program:
    """Assemble with the tile size and encoding of ``config`` when one is given (else the text's
    own ``.sz``/defaults); ``encoding`` overrides the configuration's."""
    cfg = load_config(config) if config is not None else None
    enc = encoding or (cfg.encoding if cfg is not None and cfg.encoding != "canonical" else None)
    return assemble(text, file=file, sz=cfg.sz if cfg is not None else None, encoding=enc)


def _binary_setting(config: Any, encoding: str | None) -> tuple[int, str]:
    cfg = load_config(config)
    return cfg.sz, encoding or cfg.encoding


def decode(data: bytes, *, config: Any = None, encoding: str | None = None) -> Program:
    """A program image with the tile size and encoding of ``config`` (``encoding`` overrides it)."""
    return decode_image(data, *_binary_setting(config, encoding))


def _bounded(path: Path, kind: str) -> bytes:
    """The file's bytes, its size checked against :data:`MAX_FILE_BYTES` before it is read."""
    return read_bytes(path, max_size=MAX_FILE_BYTES[kind], what=_what(kind))


def _what(kind: str) -> str:
    return f"Cherry {kind} file ({MAX_PROGRAM} instructions at most)"


def _decoding(read, kind: str):
    """A reader whose decode errors name the file."""
    def reader(path: Path, *, config: Any = None, encoding: str | None = None, **_: Any) -> Program:
        data = _bounded(path, kind)
        try:
            return read(data, *_binary_setting(config, encoding))
        except DecodeError as exc:
            raise exc.with_context(file=str(path))
    return reader


def _read_text(path: Path, *, config: Any = None, encoding: str | None = None, **_: Any) -> Program:
    try:
        text = read_text(path, max_size=MAX_FILE_BYTES["text"], what=_what("text"))
        return assemble_for(text, file=str(path), config=config, encoding=encoding)
    except DecodeError as exc:
        raise exc.with_context(file=str(path))


def _encoded(render):
    """A renderer of the program in the ``encoding`` asked for (default: its own)."""
    def out(prog: Program, path: Path, *, encoding: str | None = None, **_: Any):
        if encoding and encoding != prog.encoding:
            prog = Program(prog.rows, prog.header, prog.sz, prog.org, encoding)
        return render(prog)
    return out


#: Cherry files: extension → reader, writer, description; compiled bundle folders read as models
FORMATS = FormatTable("Cherry", [
    FileFormat((".cisa", ".bin"), "Cherry program image (header + 16-bit words)", _decoding(decode_image, "binary"),
               _encoded(encode_image)),
    FileFormat((".casm", ".s", ".txt"), "Cherry assembly text", _read_text, _encoded(disassemble)),
    FileFormat((".pkt",), "host packet stream (ro_data upload, program upload, enqueue)", _decoding(decode_packets, "packets"),
               _encoded(encode_packets)),
], bundle=lambda path, **_: read_bundle(path))


def read_program(path: str | Path, **options: Any) -> Program | CompiledModel:
    """Read a program file (format from the extension; tile size and encoding from ``config``)
    or a compiled bundle folder."""
    return FORMATS.read(path, **options)


def write_program(prog: Program, path: str | Path, **options: Any) -> None:
    """Write a program atomically (format from the extension; ``encoding`` to re-encode)."""
    FORMATS.write(prog, path, **options)


def text_of(program: Program | CompiledModel) -> str:
    """Canonical text of a program, or of every program of a compiled model (as in its bundle)."""
    return program.text() if isinstance(program, CompiledModel) else disassemble(program)


def stats_of(program: Program | CompiledModel) -> dict[str, Any]:
    """Static statistics of a program or of a compiled model."""
    return program.stats() if isinstance(program, CompiledModel) else program_stats(program)
