"""A DenseNet / Inception-style block: three branches of one input (a 3x3
conv + relu of 24 channels, a 3x3 max pooling of the 16 input channels, a
1x1 conv of 40), concatenated along C into 80 channels, then a 3x3 conv of
32; a 4-sample dataset and a test input, seeded.

    make_concat.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)


def weight(name, shape, scale):
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [
    weight("wa", (24, 16, 3, 3), 0.15), weight("ba", (24,), 0.1),
    weight("wc", (40, 16, 1, 1), 0.3), weight("bc", (40,), 0.1),
    weight("wy", (32, 80, 3, 3), 0.05), weight("by", (32,), 0.1),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 12, 12])
nodes = [
    helper.make_node("Conv", ["x", "wa", "ba"], ["a0"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["a0"], ["a"]),
    helper.make_node("MaxPool", ["x"], ["b"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Conv", ["x", "wc", "bc"], ["c"], kernel_shape=[1, 1]),
    helper.make_node("Concat", ["a", "b", "c"], ["cat"], axis=1),
    helper.make_node("Conv", ["cat", "wy", "by"], ["y"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
]
graph = helper.make_graph(nodes, "concat", [x], [y], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "cat.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 16, 12, 12)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 16, 12, 12)).astype(np.float32))
