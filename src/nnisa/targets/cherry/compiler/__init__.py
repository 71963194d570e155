"""Cherry compiler: tile kernels as looped programs, a plan builder, the ONNX lowering and the runtime."""
