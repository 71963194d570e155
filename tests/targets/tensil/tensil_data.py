"""Paths of the Tensil conformance artifacts (``../shared/conformance/tensil``)."""

from __future__ import annotations

from pathlib import Path

from shared_data import require_shared

BUILDS = {
    "baseline": "baseline/resnet20v2_cifar_onnx_zcu104",
    "ultra_ram": "ultra_ram/resnet20v2_cifar_onnx_zcu104_uram",
    "local_consts": "ultra_ram_local_consts/resnet20v2_cifar_onnx_zcu104_uram",
    "local_vars": "ultra_ram_local_vars/resnet20v2_cifar_onnx_zcu104_uram",
    "local_vars_and_consts": "ultra_ram_local_vars_and_consts/resnet20v2_cifar_onnx_zcu104_uram",
}
GOLDEN_CLASSES = [0, 9, 5, 7, 9, 8, 5, 7, 8, 6]
ESTIMATOR = {"baseline": 293590, "ultra_ram": 291904, "local_consts": 273087, "local_vars": 236080,
             "local_vars_and_consts": 217263}


def tensil_dir() -> Path:
    return require_shared("conformance", "tensil")


def build(name: str, ext: str) -> Path:
    """``build("baseline", ".tmodel")`` → the file path (skips/fails when absent)."""
    return require_shared("conformance", "tensil", BUILDS[name] + ext)


def xor(ext: str) -> Path:
    return require_shared("conformance", "tensil", "xor", "xor" + ext)
