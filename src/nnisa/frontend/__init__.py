"""The ONNX frontend of nnisa: import, float reference, quantization, integer golden model.

See ``docs/frontend.md`` for the API and the exact integer semantics.
"""

from .float_eval import evaluate_float
from .ir import Graph, Node, TensorInfo
from .onnx_import import load_model, supported_onnx_ops

__all__ = [
    "Graph", "Node", "TensorInfo", "load_model", "supported_onnx_ops", "evaluate_float",
]
