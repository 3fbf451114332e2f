"""A small self-attention block for the INT8 matmul of two activations:
tokens x [2, 8, 16] (batch 2), Q / K / V projections (weights), two heads
of 8, scores Q K^T (the transpose given to the MatMul), softmax, the
weighted sum P V, heads merged and a last projection; an 8-sample
calibration set and a test input, seeded.

    make_int8_attn.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(31)
B, T, D, H = 2, 8, 16, 2
DH = D // H


def const(name, a, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(a, dtype=dtype), name)


inits = [
    const("wq", rng.standard_normal((D, D)) * 0.3),
    const("wk", rng.standard_normal((D, D)) * 0.3),
    const("wv", rng.standard_normal((D, D)) * 0.3),
    const("wo", rng.standard_normal((D, D)) * 0.3),
    const("heads", [B, T, H, DH], np.int64),
    const("merged", [B, T, D], np.int64),
    const("scale", 1.0 / np.sqrt(DH)),
]
nodes = [
    helper.make_node("MatMul", ["x", "wq"], ["q0"]),
    helper.make_node("MatMul", ["x", "wk"], ["k0"]),
    helper.make_node("MatMul", ["x", "wv"], ["v0"]),
    helper.make_node("Reshape", ["q0", "heads"], ["q1"]),
    helper.make_node("Reshape", ["k0", "heads"], ["k1"]),
    helper.make_node("Reshape", ["v0", "heads"], ["v1"]),
    helper.make_node("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
    helper.make_node("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
    helper.make_node("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3]),
    # [B, H, T, DH] x [B, H, DH, T]: both operands activations
    helper.make_node("MatMul", ["q", "kt"], ["s0"]),
    helper.make_node("Mul", ["s0", "scale"], ["s"]),
    helper.make_node("Softmax", ["s"], ["p"], axis=-1),
    # [B, H, T, T] x [B, H, T, DH]
    helper.make_node("MatMul", ["p", "v"], ["o0"]),
    helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
    helper.make_node("Reshape", ["o1", "merged"], ["o"]),
    helper.make_node("MatMul", ["o", "wo"], ["y"]),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, D])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, T, D])
graph = helper.make_graph(nodes, "attn", [x], [y], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "attn.onnx"))
os.makedirs(os.path.join(out, "calib"), exist_ok=True)
for i in range(8):
    np.savez(os.path.join(out, "calib", "s%d.npz" % i),
             x=rng.standard_normal((B, T, D)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((B, T, D)).astype(np.float32))
