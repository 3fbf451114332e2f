"""conv 3x3 128 -> 512 with bias -> relu -> max pool 2x2 (x [1, 128, 10,
10]): a filter of 512 x 128 x 9 weights, 9216 bytes per lane in INT8 and
18432 in F16 (8 channel slots), larger than a local memory of 8 KiB per
lane; a 4-sample dataset and a test input, seeded.

    make_wide_conv.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(11)
w = numpy_helper.from_array(
    (rng.standard_normal((512, 128, 3, 3)) * 0.05).astype(np.float32), "w")
b = numpy_helper.from_array((rng.standard_normal(512) * 0.1).astype(np.float32),
                            "b")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 10, 10])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 5, 5])
nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"]),
    helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2],
                     strides=[2, 2]),
]
graph = helper.make_graph(nodes, "wide_conv", [x], [y], [w, b])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "wc.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 128, 10, 10)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 128, 10, 10)).astype(np.float32))
