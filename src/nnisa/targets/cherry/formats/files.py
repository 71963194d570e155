"""Reading and writing Cherry program files by extension.

| extension | content |
| --- | --- |
| ``.cisa``, ``.bin`` | program image: 186-byte header + big-endian 16-bit words (§2.6) |
| ``.casm``, ``.s``, ``.txt`` | assembly text (§2.5) |
| ``.pkt`` | the host → device packet stream that loads and starts the program (§5.1): ro_data upload (type 0), program upload (type 1, ≤ 63 words per packet), enqueue (type 2) |

The tile size and the encoding of binary files come from the configuration (``--arch``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ....core.errors import DecodeError, FormatError, UnsupportedError
from ....core.fileio import decode_text, read_bytes, write_atomic
from ..program import HEADER_BYTES, MAX_PROGRAM, Header, Program
from .binary import decode_image, decode_words, encode_image, encode_words
from .text import assemble, disassemble

BINARY = (".cisa", ".bin")
TEXT = (".casm", ".s", ".txt")
PACKETS = (".pkt",)
FORMATS = {".cisa": "Cherry program image (header + 16-bit words)", ".casm": "Cherry assembly text",
           ".pkt": "host packet stream (ro_data upload, program upload, enqueue)"}
MAX_PACKET_WORDS = 63
#: the largest file of each kind read: an image is a header and at most MAX_PROGRAM words; text and
#: packet streams (which may re-upload) get a generous bound, checked before the file is read
MAX_FILE_BYTES = {"binary": HEADER_BYTES + 2 * MAX_PROGRAM, "text": 16 << 20, "packets": 16 << 20}


def _kind(path: Path) -> str:
    ext = path.suffix.lower()
    for kind, exts in (("binary", BINARY), ("text", TEXT), ("packets", PACKETS)):
        if ext in exts:
            return kind
    raise UnsupportedError(f"unknown Cherry file type {ext or '(none)'!r} for {path} "
                           f"(known: {', '.join(BINARY + TEXT + PACKETS)})")


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


def read_program(path: str | Path, *, sz: int = 4, encoding: str = "canonical", sz_given: bool = False) -> Program:
    """Read a program file (format from the extension)."""
    p = Path(path)
    kind = _kind(p)
    data = read_bytes(p, max_size=MAX_FILE_BYTES[kind], what=f"Cherry {kind} file ({MAX_PROGRAM} instructions at most)")
    try:
        if kind == "text":
            return assemble(decode_text(data, str(p)), file=str(p), sz=sz if sz_given else None,
                            encoding=encoding if encoding != "canonical" else None)
        if kind == "binary":
            return decode_image(data, sz, encoding)
        return decode_packets(data, sz, encoding)
    except DecodeError as exc:
        raise exc.with_context(file=str(p))


def write_program(prog: Program, path: str | Path, *, encoding: str | None = None) -> None:
    """Write a program atomically (format from the extension)."""
    p = Path(path)
    kind = _kind(p)
    if encoding and encoding != prog.encoding:
        prog = Program(prog.rows, prog.header, prog.sz, prog.org, encoding)
    if kind == "text":
        write_atomic(p, disassemble(prog))
    elif kind == "binary":
        write_atomic(p, encode_image(prog))
    else:
        write_atomic(p, encode_packets(prog))
