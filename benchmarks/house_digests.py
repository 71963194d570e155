"""Digests of everything a refactoring must leave unchanged (issue 24: "programs, outputs and
figures are unchanged").

For the source tree on ``PYTHONPATH`` this records SHA-256 digests of:

* the conformance programs of ``../shared/conformance``: canonical text (disassembly), binary, the
  text assembled again and encoded, and Tensil's ``.tasm`` listing (pim JSON → ``.s``/``.nnpi``;
  tensil ``.tmodel`` → ``.s``/``.tprog``/``.tasm``);
* ``nnisa isa -t T`` (the instruction set part of the Markdown: opcode, mnemonic, syntax, fields)
  for every target;
* every file of the bundles ``nnisa compile -t T`` writes for the bundled ``digits_cnn`` and
  ``digits_mlp`` on all five targets (JSON files without wall-clock keys), and the canonical text
  of each compiled program assembled again;
* the JSON of ``nnisa run -t T`` on the same models (without wall-clock keys).

Usage::

    PYTHONPATH=src python benchmarks/house_digests.py -o digests.json       # record
    python benchmarks/house_digests.py --compare a.json b.json               # byte-for-byte diff

Run it once on the base commit and once on the change; ``--compare`` lists every key that differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TARGETS = ("pim", "dais", "tensil", "pimsab", "cherry")
MODELS = ("digits_cnn", "digits_mlp")
#: keys that hold wall-clock times or host paths (removed before hashing JSON)
VOLATILE = ("compile_s", "compile_seconds", "wall_s", "simulate_s", "sim_s", "time_s", "elapsed_s", "seconds",
            "out_dir", "files", "program", "model", "source", "path", "peak_mb", "rss_mb", "timings", "wall")


def sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:24]


def scrub(obj):
    """JSON without volatile (time/path) keys; floats kept exactly."""
    if isinstance(obj, dict):
        return {k: scrub(v) for k, v in obj.items() if k not in VOLATILE and not k.endswith("_s")}
    if isinstance(obj, list):
        return [scrub(v) for v in obj]
    return obj


def json_digest(data: bytes) -> str:
    return sha(json.dumps(scrub(json.loads(data)), sort_keys=True))


def nnisa(*args: str) -> bytes:
    r = subprocess.run([sys.executable, "-m", "nnisa", *args], capture_output=True, env=os.environ)
    if r.returncode != 0:
        return b"FAILED " + r.stderr[-400:]
    return r.stdout


def conformance(shared: Path, out: dict) -> None:
    from nnisa.core.target import get_target
    pim = get_target("pim")
    src = shared / "conformance" / "pim" / "resnet18_batch_8x8.json.gz"
    if src.exists():
        p = pim.read(src)
        text = pim.disassemble(p)
        out["conf/pim/resnet18/text"] = sha(text)
        out["conf/pim/resnet18/nnpi"] = sha(pim.encode(p, extended=True))
        # group ids > 15 only fit the extended encoding: assemble the text declared as extended
        ext = text.replace(".encoding strict", ".encoding extended", 1)
        out["conf/pim/resnet18/asm(text)->nnpi"] = sha(pim.encode(pim.assemble(ext), extended=True))
    tensil = get_target("tensil")
    for tm in sorted((shared / "conformance" / "tensil").rglob("*.tmodel")):
        key = f"conf/tensil/{tm.parent.name}"
        p = tensil.read(tm)
        text = tensil.disassemble(p)
        out[key + "/text"] = sha(text)
        out[key + "/tprog"] = sha(tensil.encode(p))
        out[key + "/asm(text)->tprog"] = sha(tensil.encode(tensil.assemble(text, config=p.arch)))
        with tempfile.TemporaryDirectory() as d:
            tensil.write(p, Path(d) / "x.tasm")
            out[key + "/tasm"] = sha((Path(d) / "x.tasm").read_bytes())


def isa_tables(out: dict) -> None:
    for t in TARGETS:
        md = nnisa("isa", "-t", t).decode()
        out[f"isa/{t}"] = sha(md)
        out[f"isa/{t}/instructions"] = sha("\n".join(_instruction_cells(md)))
        out[f"isa/{t}/syntax"] = sha("\n".join(_instruction_cells(md, ("mnemonic", "syntax"))))


#: the columns of ``nnisa isa`` that define the instruction set (opcodes, names, bit fields; DAIS's
#: operand use, data, versions and result)
SET_COLUMNS = ("opcode", "mnemonic", "fields (bits)", "id0", "id1", "data", "versions", "quantizing", "result")


def _instruction_cells(md: str, columns: tuple[str, ...] = SET_COLUMNS) -> list[str]:
    """The rows of an ISA table reduced to the cells of ``columns`` (a change may add columns or
    document the assembly syntax better; the instruction set must not change)."""
    rows = [line for line in md.splitlines() if line.startswith("|")]
    if not rows:
        return [md]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    keep = [i for i, c in enumerate(head) if c in columns]
    out = []
    for line in rows[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        out.append(" | ".join(cells[i] for i in keep if i < len(cells)))
    return out


def bundles(out: dict) -> None:
    from nnisa.core.target import get_target
    from nnisa.frontend.models import bundled_model_path as model_path
    for t in TARGETS:
        target = get_target(t)
        for m in MODELS:
            path = str(model_path(m))
            with tempfile.TemporaryDirectory() as d:
                res = nnisa("compile", "-t", t, path, "-o", d, "--json")
                if res.startswith(b"FAILED"):
                    out[f"compile/{t}/{m}"] = res.decode(errors="replace")
                    continue
                for f in sorted(Path(d).rglob("*")):
                    if f.is_file():
                        data = f.read_bytes()
                        key = f"compile/{t}/{m}/{f.relative_to(d)}"
                        out[key] = json_digest(data) if f.suffix == ".json" else sha(data)
                for f in sorted(Path(d).iterdir()):
                    if f.suffix in PROGRAM_FILES[t]:
                        _round_trip(target, f, f"compile/{t}/{m}/{f.name}", out)
            res = nnisa("run", "-t", t, path, "--json", "--samples", "2")
            out[f"run/{t}/{m}"] = res.decode(errors="replace") if res.startswith(b"FAILED") else json_digest(res)


#: binary program files of each target's bundles: read, disassembled, assembled again, encoded
PROGRAM_FILES = {"pim": (".nnpi",), "dais": (".dais",), "tensil": (".tmodel",), "pimsab": (".psab",),
                 "cherry": (".casm",)}


def _round_trip(target, f: Path, key: str, out: dict) -> None:
    """Digest of the canonical text of program file ``f`` and whether text → binary gives the file's
    program back."""
    try:
        if f.suffix == ".casm":  # a Cherry bundle: several programs, each after a '; program N' line
            blocks = [b for b in f.read_text().split("; program ") if b.strip()]
            progs = [target.assemble(b.split("\n", 1)[1]) for b in blocks]
            out[key + "/text"] = sha("".join(target.disassemble(p) for p in progs))
            out[key + "/bin"] = sha(b"".join(target.encode(p) for p in progs))
            return
        prog = target.read(f)
        text = target.disassemble(prog)
        out[key + "/text"] = sha(text)
        cfg = getattr(prog, "arch", None)
        again = target.assemble(text, **({"config": cfg} if cfg is not None else {}))
        out[key + "/asm(text)->bin"] = sha(target.encode(again))
        out[key + "/bin"] = sha(target.encode(prog))
    except Exception as exc:  # noqa: BLE001 - recorded, compared like any digest
        out[key + "/text"] = f"ERROR {type(exc).__name__}: {str(exc)[:200]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="write the digests here (JSON)")
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[1].parent / "shared"))
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two digest files")
    ap.add_argument("--only", choices=("conformance", "isa", "bundles"), action="append")
    a = ap.parse_args()
    if a.compare:
        x, y = (json.loads(Path(p).read_text()) for p in a.compare)
        diff = sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))
        for k in diff:
            print(f"DIFF {k}: {x.get(k)} != {y.get(k)}")
        print(f"{len(x)} / {len(y)} digests, {len(diff)} differ")
        sys.exit(1 if diff else 0)
    out: dict = {}
    parts = a.only or ("conformance", "isa", "bundles")
    if "conformance" in parts:
        conformance(Path(a.shared), out)
    if "isa" in parts:
        isa_tables(out)
    if "bundles" in parts:
        bundles(out)
    text = json.dumps(out, indent=1, sort_keys=True)
    if a.output:
        Path(a.output).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
