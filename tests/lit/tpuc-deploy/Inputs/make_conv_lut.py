"""conv 3x3 -> sigmoid -> conv 3x3 -> tanh (x [1, 16, 12, 12]): in INT8 the
two functions are lookup tables (tpu.Lut) between the convolutions; a
4-sample dataset and a test input, seeded.

    make_conv_lut.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(3)
w1 = numpy_helper.from_array(
    (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32), "w1")
b1 = numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32),
                             "b1")
w2 = numpy_helper.from_array(
    (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32), "w2")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Sigmoid", ["c1"], ["s"]),
    helper.make_node("Conv", ["s", "w2"], ["c2"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Tanh", ["c2"], ["y"]),
]
graph = helper.make_graph(nodes, "conv_lut", [x], [y], [w1, b1, w2])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "cl.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 16, 12, 12)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 16, 12, 12)).astype(np.float32))
