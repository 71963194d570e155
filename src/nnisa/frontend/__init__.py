"""The ONNX frontend of nnisa: import, float reference, quantization, integer golden model (CNNs, RNNs, transformers).

See ``docs/frontend.md`` for the API and the exact integer semantics.
"""

from .float_eval import evaluate_float
from .ir import Graph, Node, TensorInfo
from .kernels import im2col, patch_order, pool_counts
from .onnx_import import supported_onnx_ops
from .prepared import PreparedModel, load_model
from .qeval import evaluate_quantized
from .quant import QGraph, QNode, QTensor, Requant, calibrate, make_requant, quantize, rshift_round

__all__ = [
    "Graph", "Node", "TensorInfo", "load_model", "PreparedModel", "supported_onnx_ops", "evaluate_float",
    "QGraph", "QNode", "QTensor", "Requant", "quantize", "calibrate", "make_requant", "rshift_round",
    "evaluate_quantized", "im2col", "patch_order", "pool_counts",
]
