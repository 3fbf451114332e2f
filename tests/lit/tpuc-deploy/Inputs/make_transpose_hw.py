"""Transposes of H and W: x [1, 8, 40, 15] * 2 -> Transpose [0, 1, 3, 2]
-> Sigmoid (y, the keys' transpose of an attention head, between
element-wise ops), and a transpose alone of a second input z [1, 1, 8,
160] (w, a mel spectrogram's frames); a test input, seeded.

    make_transpose_hw.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(17)
two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 40, 15])
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 1, 8, 160])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 15, 40])
w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1, 160, 8])
nodes = [
    helper.make_node("Mul", ["x", "two"], ["m"]),
    helper.make_node("Transpose", ["m"], ["t"], perm=[0, 1, 3, 2]),
    helper.make_node("Sigmoid", ["t"], ["y"]),
    helper.make_node("Transpose", ["z"], ["w"], perm=[0, 1, 3, 2]),
]
graph = helper.make_graph(nodes, "transpose_hw", [x, z], [y, w], [two])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "thw.onnx"))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 8, 40, 15)).astype(np.float32),
         z=rng.standard_normal((1, 1, 8, 160)).astype(np.float32))
