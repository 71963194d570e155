"""Compiled Cherry models and their bundle folders.

A bundle holds ``programs.cisa`` (every program image, concatenated; ``plan.json`` gives their
byte offsets), ``programs.casm`` (the same programs as text, for reading), ``plan.json``
(device tensors, steps, input/output views), ``consts.npz`` (constant tensors) and
``manifest.json`` with the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ....core.bundle import BundleWriter, Manifest, TensorSpec, member, read_manifest
from ....core.errors import FormatError
from ....core.fileio import load_npz, read_bytes
from ..config import CherryConfig, load_config
from ..program import Plan, program_stats
from .binary import decode_image, encode_images
from .text import disassemble

FORMAT = "nnisa-cherry-model"


class CherryManifest(Manifest):
    """``manifest.json`` of a compiled Cherry model."""

    FILE_FIELDS = ("program", "plan", "consts")
    format: str = FORMAT
    plan: str = "plan.json"
    consts: str = "consts.npz"


@dataclass
class CompiledModel:
    """A plan plus the configuration it was compiled for (what ``nnisa sim DIR`` runs)."""

    plan: Plan
    config: CherryConfig
    report: dict[str, Any] | None = None

    def __len__(self) -> int:
        return sum(len(p) for p in self.plan.programs)

    def text(self) -> str:
        """Every program as canonical text, each after a ``; program N`` line (``programs.casm``)."""
        return "\n".join(f"; program {i}\n" + disassemble(p) for i, p in enumerate(self.plan.programs))

    def stats(self) -> dict[str, Any]:
        """Static statistics over all programs."""
        mix: dict[str, int] = {}
        units: dict[str, int] = {}
        for p in self.plan.programs:
            st = program_stats(p)
            for k, v in st["instruction_mix"].items():
                mix[k] = mix.get(k, 0) + v
            for k, v in st["units"].items():
                units[k] = units.get(k, 0) + v
        return {"programs": len(self.plan.programs), "instructions": len(self), "sz": self.plan.sz,
                "image_bytes": sum(186 + 2 * len(p) for p in self.plan.programs),
                "device_tensors": len(self.plan.tensors), "dram_tiles": self.plan.dram_tiles,
                "host_steps": sum(1 for s in self.plan.steps if s["kind"] == "host"),
                "instruction_mix": mix, "units": units}


def write_bundle(model: CompiledModel, out_dir: str | Path) -> dict[str, str]:
    """Write the bundle folder (all or nothing); returns role → path."""
    plan = model.plan
    images = encode_images(plan.programs)
    offsets = np.cumsum([0] + [len(b) for b in images]).tolist()
    text = model.text()
    meta = {"sz": plan.sz, "tensors": plan.tensors, "steps": plan.steps, "inputs": plan.inputs,
            "outputs": plan.outputs, "program_offsets": offsets, "consts": sorted(plan.consts),
            "layers": plan.layers}
    man = CherryManifest(target="cherry", program="programs.cisa", files={"text": "programs.casm"},
                         inputs=[TensorSpec(name=k, shape=v["view"]["shape"], bits=32, layout="float32")
                                 for k, v in plan.inputs.items()],
                         outputs=[TensorSpec(name=k, shape=v["view"]["shape"], bits=32, layout="float32")
                                  for k, v in plan.outputs.items()],
                         config=model.config.model_dump())
    with BundleWriter(out_dir) as bw:
        bw.write("programs.cisa", b"".join(images))
        bw.write("programs.casm", text)
        bw.write("plan.json", orjson.dumps(meta, option=orjson.OPT_INDENT_2))
        bw.write_arrays("consts.npz", {str(k): v for k, v in plan.consts.items()})
        bw.commit(man)
    root = Path(out_dir)
    return {"program": str(root / "programs.cisa"), "text": str(root / "programs.casm"),
            "plan": str(root / "plan.json"), "consts": str(root / "consts.npz"),
            "manifest": str(root / "manifest.json")}


def read_bundle(path: str | Path) -> CompiledModel:
    """Read a compiled model folder written by :func:`write_bundle`."""
    man = read_manifest(path, CherryManifest)
    if man.format != FORMAT:
        raise FormatError(f"not a compiled Cherry model (format {man.format!r})", file=str(path))
    cfg = load_config(man.config or {})
    try:
        meta = orjson.loads(read_bytes(member(path, man.plan, what="plan file")))
        data = read_bytes(member(path, man.program, what="program file"))
        consts = {int(k): v.astype(np.float32)  # checked reading: missing file, pickles, bombs
                  for k, v in load_npz(member(path, man.consts, what="constants file")).items()}
        offs = meta["program_offsets"]
        progs = [decode_image(data[a:b], meta["sz"]) for a, b in zip(offs[:-1], offs[1:])]
        plan = Plan(int(meta["sz"]), meta["tensors"], consts, progs, meta["steps"], meta["inputs"], meta["outputs"],
                    meta.get("layers", []))
    except (KeyError, TypeError, ValueError, orjson.JSONDecodeError) as exc:
        raise FormatError(f"malformed compiled Cherry model: {exc}", file=str(path)) from None
    if sorted(consts) != sorted(meta.get("consts", [])):
        raise FormatError("constants file does not match the plan", file=str(path))
    return CompiledModel(plan, cfg)
