"""conv 3x3 64 -> 64 with bias (pads 1) -> relu -> max pool 3x3 (stride
1, pads 1) on rows of 600 columns (x [1, 64, 4, 600]): in F16 one input
row takes 1200 bytes per lane, and the conv's three input rows, twice for
the pipeline, with its output rows and filter exceed a local memory of
8 KiB per lane; a 4-sample dataset and a test input, seeded.

    make_wide_rows.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(13)
w = numpy_helper.from_array(
    (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32), "w")
b = numpy_helper.from_array((rng.standard_normal(64) * 0.1).astype(np.float32),
                            "b")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 4, 600])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 4, 600])
nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"]),
    helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3],
                     strides=[1, 1], pads=[1, 1, 1, 1]),
]
graph = helper.make_graph(nodes, "wide_rows", [x], [y], [w, b])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "wr.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 64, 4, 600)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 64, 4, 600)).astype(np.float32))
