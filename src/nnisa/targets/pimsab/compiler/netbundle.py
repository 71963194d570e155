"""A compiled PIMSAB folder as a runnable network: ``nnisa sim -t pimsab <folder>`` (issue 28 item 3).

The folder of :func:`.netcompile.compile_network` holds the device programs (``.psab``), the
manifest and the quantized graph (``qgraph.json`` + ``qgraph.npz``: every node's integer
semantics, written by :func:`save_qgraph`, read back without pickle).  :func:`read_network`
lowers that graph again for the manifest's configuration (lowering is deterministic) to recover
the host glue of every layer (how inputs are fed to a program's DRAM regions, the host layers),
checks that each lowered program is the one stored in the folder, and runs the stored images.
:func:`simulate_network` takes the integer inputs the manifest declares (``nnisa sim`` quantizes
float inputs as the manifest says unless ``--raw``) with a leading sample axis and returns the
integer outputs per sample plus the first sample's timed figures and per-layer rows.
"""

from __future__ import annotations

import dataclasses
import io
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ....core.errors import FormatError
from ....core.target import SimResult, Stats

GRAPH_JSON, GRAPH_NPZ = "qgraph.json", "qgraph.npz"


def _classes() -> dict[str, type]:
    from ....frontend.quant import QGraph, QNode, QTensor, Requant
    return {c.__name__: c for c in (QGraph, QNode, QTensor, Requant)}


def save_qgraph(qg) -> tuple[bytes, bytes]:
    """The quantized graph as JSON (structure) and NPZ (arrays) bytes."""
    arrays: dict[str, np.ndarray] = {}

    def enc(v):
        if dataclasses.is_dataclass(v) and type(v).__name__ in _classes():
            return {"__dc__": type(v).__name__, **{f.name: enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
        if isinstance(v, np.ndarray):
            key = f"a{len(arrays)}"
            arrays[key] = v
            return {"__nd__": key}
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, tuple):
            return {"__tuple__": [enc(x) for x in v]}
        if isinstance(v, list):
            return [enc(x) for x in v]
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):  # int or tuple keys (e.g. a mask's positions)
                return {"__items__": [[enc(k), enc(x)] for k, x in v.items()]}
            return {"__dict__": {k: enc(x) for k, x in v.items()}}
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        raise FormatError(f"internal: cannot store a {type(v).__name__} of the quantized graph")
    doc = orjson.dumps(enc(qg))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return doc, buf.getvalue()


def load_qgraph(doc: bytes, npz: bytes):
    """The inverse of :func:`save_qgraph` (no pickle: only the frontend's graph classes)."""
    classes = _classes()
    with np.load(io.BytesIO(npz), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}

    def dec(v):
        if isinstance(v, list):
            return [dec(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "__nd__" in v:
            return arrays[v["__nd__"]]
        if "__tuple__" in v:
            return tuple(dec(x) for x in v["__tuple__"])
        if "__dict__" in v:
            return {k: dec(x) for k, x in v["__dict__"].items()}
        if "__items__" in v:
            return {dec(k): dec(x) for k, x in v["__items__"]}
        cls = classes.get(v.get("__dc__"))
        if cls is None:
            raise FormatError(f"{GRAPH_JSON}: unknown record {v.get('__dc__')!r}")
        return cls(**{k: dec(x) for k, x in v.items() if k != "__dc__"})
    try:
        return dec(orjson.loads(doc))
    except (TypeError, KeyError, orjson.JSONDecodeError) as exc:
        raise FormatError(f"{GRAPH_JSON}: not a quantized graph ({exc})") from None


@dataclass
class PimsabNetwork:
    """A compiled folder: its quantized graph, lowered layers (running the stored programs) and
    configuration."""

    folder: str
    qgraph: Any
    layers: list
    config: Any

    def __len__(self) -> int:   # instructions, as a program's length
        return sum(len(p.compiled.program) for L in self.layers for p in L.programs)


def read_network(folder: str | Path) -> PimsabNetwork:
    """Read a compiled folder (see the module docstring); a folder written before the graph was
    stored, or whose programs differ from its graph's lowering, is refused with what to do."""
    from ....core.bundle import read_manifest
    from ..config import load_config
    from ..formats.image import decode_image
    from .network import lower_model
    folder = Path(folder)
    man = read_manifest(folder)
    if man.target != "pimsab":
        raise FormatError(f"{folder}: a compiled folder for {man.target!r}, not pimsab")
    if not (folder / GRAPH_JSON).is_file() or not (folder / GRAPH_NPZ).is_file():
        raise FormatError(f"{folder}: no {GRAPH_JSON}/{GRAPH_NPZ} (compiled by an older nnisa): compile the model "
                          "again with `nnisa compile -t pimsab MODEL -o FOLDER`")
    qg = load_qgraph((folder / GRAPH_JSON).read_bytes(), (folder / GRAPH_NPZ).read_bytes())
    cfg = load_config(man.config)
    layers, _ = lower_model(qg, cfg)
    programs = [p for L in layers for p in L.programs]
    stored = sorted(k for k in man.files if k.startswith("program_"))
    if len(stored) != len(programs):
        raise FormatError(f"{folder}: {len(stored)} program files, the graph lowers to {len(programs)}: compile "
                          "the model again")
    for key, p in zip(stored, programs):
        prog = decode_image((folder / man.files[key]).read_bytes(), file=man.files[key])
        if not prog.equals(p.compiled.program):
            raise FormatError(f"{folder}/{man.files[key]}: differs from the program its graph lowers to (edited, or "
                              "compiled by another nnisa version): compile the model again")
        p.compiled.program = prog
    return PimsabNetwork(str(folder), qg, layers, cfg)


def simulate_network(net: PimsabNetwork, inputs: dict[str, np.ndarray] | None, mode: str | None = None,
                     **_: Any) -> SimResult:
    """Run the network on integer inputs ``{name: (N, *shape[1:])}`` (the manifest's names; one
    input may go by any name); outputs ``{name: (N, *shape[1:])}`` integers (float where the
    graph's output is a float tensor).  ``mode``: ``both`` (default: values, and the first sample
    timed), ``functional`` or ``timing`` (no inputs needed)."""
    from ....core.bundle import as_samples
    from .netlayers import layer_table
    from .network import run_network_batch
    t0 = time.perf_counter()
    qg, cfg = net.qgraph, net.config
    mode = mode or ("both" if inputs else "timing")   # no inputs: cycles and energy only
    names = [t.name for t in qg.inputs]
    if mode == "timing":
        samples = [{}]
    else:
        if not inputs:
            raise FormatError(f"{net.folder}: inputs needed ({', '.join(names)}); --mode timing runs without")
        if len(names) == 1 and names[0] not in inputs and len(inputs) == 1:
            inputs = {names[0]: next(iter(inputs.values()))}
        missing = [k for k in names if k not in inputs]
        if missing:
            raise FormatError(f"missing model input(s) {missing}; the model's inputs are {names}")
        arrays = {k: as_samples(k, inputs[k], [int(d) for d in qg.tensors[k].shape]) for k in names}
        n = {len(a) for a in arrays.values()}
        if len(n) != 1:
            raise FormatError(f"inputs with different sample counts {sorted(n)}")
        samples = [{k: a[i][None].astype(np.int64) for k, a in arrays.items()} for i in range(n.pop())]
    runs = run_network_batch(qg, net.layers, samples, mode=mode)
    outputs = {} if mode == "timing" else {t.name: np.concatenate([r.outputs[t.name] for r in runs])
                                           for t in qg.outputs}
    r = runs[0]
    stats = Stats(instructions=r.instructions, wall_s=time.perf_counter() - t0,
                  extra={"mode": mode, "samples": len(samples)})
    if mode != "functional":
        stats.cycles, stats.latency_ns, stats.energy_pj = r.cycles, r.cycles / cfg.clock_ghz, r.energy_j * 1e12
        stats.layers = layer_table(net.layers, cfg, r.layers)
        stats.extra.update({"energy_j": r.energy_j, "timing_model": f"pimsab-{cfg.cycle_mode} (spec 3.2-3.5), "
                            "layers back to back from an idle machine, the first sample; host layers 0 cycles"})
    return SimResult(outputs, stats)
