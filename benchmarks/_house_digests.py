"""Digests of everything a refactor must leave unchanged (issue #24: "programs, outputs and figures
unchanged").

For every target and every bundled model it records, through the CLI (in-process):

* ``nnisa compile``: a digest of every file of the bundle and the compile report;
* ``nnisa run --json`` and ``nnisa sim --json`` (on the bundle): the figures;
* ``nnisa disasm`` of the bundle and ``nnisa asm`` of that text: digests;

plus disassembly/conversion of the conformance programs in ``../shared/conformance`` and the quick
built-in workloads of ``nnisa bench``.  Wall-clock figures (keys ending in ``_s``) and the scratch
folder's path are masked, so two runs of the same code give the same file::

    python benchmarks/_house_digests.py -o before.json            # on the old code
    python benchmarks/_house_digests.py --check before.json       # on the new code: prints differences

Not a benchmark (``run_all.py`` skips files starting with ``_``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "conformance"
TARGETS = ("pim", "dais", "tensil", "pimsab", "cherry")
MODELS = ("digits_cnn", "digits_mlp")
#: quick built-in workloads (seconds each)
WORKLOADS = {"dais": ("cmvm-256",), "pimsab": ("vadd", "gemv"), "cherry": ("fast_relu",)}
#: program extension the text assembles to, per target
ASM_EXT = {"pim": ".json", "dais": ".bin", "tensil": ".tprog", "pimsab": ".psab", "cherry": ".bin"}
_VOLATILE = re.compile(r"(_s|_seconds|wall|elapsed|^summary|per_s)$")


def _bundled(model: str) -> Path:
    from nnisa.frontend.models import bundled_model_path
    return bundled_model_path(model)


def cli(*args: object) -> tuple[int, str, str]:
    """``nnisa ARGS`` in this process → (exit code, stdout, stderr)."""
    from nnisa.cli import main
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = int(e.code or 0)
        except Exception as e:  # noqa: BLE001 - a traceback is a finding to record, not a stop
            code, err = -1, io.StringIO(f"traceback: {type(e).__name__}: {e}")
    return code, out.getvalue(), err.getvalue()


def mask(obj, scratch: str):
    """Wall times dropped, the scratch folder's path replaced."""
    if isinstance(obj, dict):
        return {k: mask(v, scratch) for k, v in obj.items() if not _VOLATILE.search(str(k))}
    if isinstance(obj, list):
        return [mask(v, scratch) for v in obj]
    if isinstance(obj, str):
        return obj.replace(scratch, "<scratch>")
    return obj


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def digest_file(p: Path, scratch: str) -> str:
    data = p.read_bytes()
    if p.suffix == ".json":
        try:
            data = json.dumps(mask(json.loads(data), scratch), sort_keys=True).encode()
        except ValueError:
            pass
    return digest_bytes(data)


def digest_dir(d: Path, scratch: str) -> dict[str, str]:
    return {str(p.relative_to(d)): digest_file(p, scratch) for p in sorted(d.rglob("*")) if p.is_file()}


def digest_arrays(path: Path) -> dict[str, str] | None:
    """name → digest of dtype, shape and bytes of every array of an ``.npz`` file."""
    import numpy as np
    if not path.exists():
        return None
    with np.load(path) as z:
        return {k: digest_bytes(f"{z[k].dtype}{z[k].shape}".encode() + np.ascontiguousarray(z[k]).tobytes())
                for k in sorted(z.files)}


def json_result(args, scratch: str, outputs: Path | None = None) -> dict:
    if outputs is not None:
        args = (*args, "--outputs", outputs)
    code, out, err = cli(*args, "--json")
    try:
        body = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except ValueError:
        body = out
    return {"exit": code, "out": mask(body, scratch), "err": mask(err.strip().splitlines()[-1:], scratch) if code else [],
            **({"outputs": digest_arrays(outputs)} if outputs is not None else {})}


def text_result(args, path: Path, scratch: str) -> dict:
    code, _, err = cli(*args)
    got = digest_file(path, scratch) if code == 0 and path.exists() else None
    return {"exit": code, "digest": got, "err": mask(err.strip().splitlines()[-1:], scratch) if code else []}


def sim_inputs(t: str, model: str, tmp: Path) -> Path:
    """One test-set sample for ``nnisa sim`` of a bundle: by model input name (floats), or DAIS's
    quantized integers ``x`` (input scale 1/64)."""
    import numpy as np

    from nnisa.api import default_inputs
    from nnisa.frontend.models import bundled_model_path
    data = default_inputs(bundled_model_path(model), 1)
    if t == "dais":
        x = next(iter(data.values()))
        data = {"x": np.clip(np.round(x * 64), -128, 127).reshape(1, -1).astype(np.int64)}
    path = tmp / f"{t}_{model}_inputs.npz"
    np.savez(path, **data)
    return path


def model_records(t: str, model: str, tmp: Path, scratch: str) -> dict:
    from nnisa.frontend.models import bundled_model_path
    path = bundled_model_path(model)
    rec: dict = {}
    out = tmp / f"{t}_{model}"
    rec["compile"] = json_result(("compile", "-t", t, path, "-o", out), scratch)
    rec["bundle"] = digest_dir(out, scratch) if out.is_dir() else None
    rec["run"] = json_result(("run", "-t", t, path, "--samples", "3"), scratch, tmp / f"{t}_{model}_run.npz")
    if out.is_dir():
        rec["sim"] = json_result(("sim", "-t", t, out), scratch)
        rec["sim_inputs"] = json_result(("sim", "-t", t, out, "--inputs", sim_inputs(t, model, tmp)), scratch,
                                        tmp / f"{t}_{model}_sim.npz")
        text = tmp / f"{t}_{model}.s"
        rec["disasm"] = text_result(("disasm", "-t", t, out, "-o", text), text, scratch)
        if text.exists():
            back = tmp / f"{t}_{model}_asm{ASM_EXT[t]}"
            arch = ("--arch", next(out.glob("*.tmodel"))) if t == "tensil" else ()
            rec["asm"] = text_result(("asm", "-t", t, text, "-o", back, *arch), back, scratch)
    return rec


def conformance_records(tmp: Path, scratch: str) -> dict:
    rec: dict = {}
    if not SHARED.is_dir():
        return {"skipped": f"{SHARED} absent"}
    pim = SHARED / "pim" / "resnet18_batch_8x8.json.gz"
    text = tmp / "resnet18.s"
    rec["pim/disasm"] = text_result(("disasm", "-t", "pim", pim, "-o", text), text, scratch)
    nnpi = tmp / "resnet18.nnpi"
    rec["pim/convert.nnpi"] = text_result(("convert", "-t", "pim", pim, nnpi, "-O", "extended=true"), nnpi,
                                          scratch)
    back = tmp / "resnet18_asm.json"
    rec["pim/asm.json"] = text_result(("asm", "-t", "pim", text, "-o", back, "-O", "extended=true"), back, scratch)
    rec["pim/stats"] = json_result(("stats", "-t", "pim", pim), scratch)
    for tm in sorted((SHARED / "tensil").rglob("*.tmodel")):
        key = f"tensil/{tm.parent.name}"
        text = tmp / f"{tm.parent.name}.s"
        rec[key + "/disasm"] = text_result(("disasm", "-t", "tensil", tm, "-o", text), text, scratch)
        tasm = tmp / f"{tm.parent.name}.tasm"
        rec[key + "/convert.tasm"] = text_result(("convert", "-t", "tensil", tm, tasm), tasm, scratch)
        rec[key + "/stats"] = json_result(("stats", "-t", "tensil", tm), scratch)
    xor = SHARED / "tensil" / "xor"
    rec["tensil/xor/sim"] = json_result(("sim", "-t", "tensil", xor / "xor.tmodel", "--inputs",
                                         xor / "xor_in.csv"), scratch, tmp / "xor_out.npz")
    return rec


#: programs whose --gantt/--trace files are digested: target → (assembly text, sim arguments)
TIMELINES = {
    "pim": (".chip_cores 1\n.core 0\n  setbw 8, 8\n  sldi $r0, 0\n  sldi $r1, 64\n  lldi $r0, 3, 16\n"
            "  vvadd $r1, $r0, $r0, 16\n  vrelu $r0, $r1, 16\n", ("--mode", "timing")),
    "pimsab": (".tile 0\nadd r16, i9, r0, i8, r8, i8\nmult r16, i16, r0, i8, r8, i8\n", ("--mode", "timing")),
    "cherry": (".sz 4\n.loop 0 iterations=8\n.apu 0 = i\n.apu 1 = i\n.apu 2 = i\nstart_independent_loop 0\n"
               "    mem_read 0, 1\n    load 0, INPUT\n    relu\n    store 0, OUTPUT\n    mem_write 0, 2\n"
               "end_loop 0\n", ("--mode", "timing")),
}


def timeline_records(tmp: Path, scratch: str) -> dict:
    """Digests of the Gantt PNG and the Perfetto trace of small programs (and of a compiled PIM
    bundle, and Tensil's XOR model in the detailed cycle model)."""
    rec: dict = {}
    cases = []
    for t, (text, args) in TIMELINES.items():
        src = tmp / f"tl_{t}.s"
        src.write_text(text)
        cases.append((t, src, args))
    if (tmp / "pim_digits_cnn").is_dir():
        cases.append(("pim", tmp / "pim_digits_cnn", ()))
    xor = SHARED / "tensil" / "xor" / "xor.tmodel"
    if xor.exists():
        cases.append(("tensil", xor, ("--inputs", xor.parent / "xor_in.csv", "-O", "timing=detailed")))
    for t, src, args in cases:
        png, trace = tmp / f"{t}_{src.stem}.png", tmp / f"{t}_{src.stem}.json"
        code, out, err = cli("sim", "-t", t, src, *args, "--gantt", png, "--trace", trace)
        rec[f"{t}/{src.name}"] = {"exit": code, "err": mask(err.strip().splitlines()[-1:], scratch) if code else [],
                                  "gantt": digest_bytes(png.read_bytes()) if png.exists() else None,
                                  "trace": digest_bytes(trace.read_bytes()) if trace.exists() else None}
    return rec


def collect(targets=TARGETS, models=MODELS) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="nnisa-digests-") as d:
        tmp = Path(d)
        scratch = str(tmp)
        for t in targets:
            for m in models:
                print(f"{t} {m}", file=sys.stderr, flush=True)
                out[f"{t}/{m}"] = model_records(t, m, tmp, scratch)
            for w in WORKLOADS.get(t, ()):
                out[f"{t}/bench/{w}"] = json_result(("bench", "-t", t, w), scratch)
        print("conformance", file=sys.stderr, flush=True)
        out["conformance"] = conformance_records(tmp, scratch)
        print("timelines", file=sys.stderr, flush=True)
        out["timelines"] = timeline_records(tmp, scratch)
    return out


def differences(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str) for d in differences(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {json.dumps(a)[:200]} -> {json.dumps(b)[:200]}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="write the digests here (JSON)")
    ap.add_argument("--check", help="compare with this earlier output; exit 1 on a difference")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--only-timelines", action="store_true", help="only the --gantt/--trace digests")
    args = ap.parse_args()
    if args.only_timelines:
        with tempfile.TemporaryDirectory(prefix="nnisa-digests-") as d:
            if "pim" in args.targets:
                cli("compile", "-t", "pim", _bundled("digits_cnn"), "-o", Path(d) / "pim_digits_cnn")
            got = {"timelines": timeline_records(Path(d), d)}
    else:
        got = collect(tuple(args.targets.split(",")))
    if args.output:
        Path(args.output).write_text(json.dumps(got, indent=1, sort_keys=True))
    if args.check:
        diffs = differences(json.loads(Path(args.check).read_text()), json.loads(json.dumps(got)))
        for d in diffs:
            print(d)
        print(f"{len(diffs)} differences", file=sys.stderr)
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
