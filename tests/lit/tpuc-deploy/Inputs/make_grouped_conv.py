"""A grouped (4 groups of 2 channels), strided, padded conv + relu, then a
1x1 conv; a 4-sample dataset and a test input, seeded.

    make_grouped_conv.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(1)
w = numpy_helper.from_array(
    (rng.standard_normal((8, 2, 3, 3)) * 0.3).astype(np.float32), "w")
b = numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32),
                            "b")
w2 = numpy_helper.from_array(
    (rng.standard_normal((8, 8, 1, 1)) * 0.3).astype(np.float32), "w2")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 10])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 5, 5])
nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], group=4,
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["c"], ["r"]),
    helper.make_node("Conv", ["r", "w2"], ["y"], kernel_shape=[1, 1]),
]
graph = helper.make_graph(nodes, "grouped", [x], [y], [w, b, w2])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "g.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 8, 10, 10)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 8, 10, 10)).astype(np.float32))
