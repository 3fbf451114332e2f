"""Resizes other than nearest by whole factors, as in a segmentation head:
a 1x1 conv, a bilinear (half-pixel) resize from 7 x 9 to 20 x 23 and a
sigmoid (output y); a nearest (round_prefer_floor, half-pixel) resize of
the input to 11 x 13 (output z); a 4-sample dataset and a test input,
seeded.

    make_resize.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(11)
w = numpy_helper.from_array(
    (rng.standard_normal((16, 8, 1, 1)) * 0.3).astype(np.float32), "w")
b = numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32),
                            "b")
roi = numpy_helper.from_array(np.zeros(0, np.float32), "roi")
scales = numpy_helper.from_array(np.zeros(0, np.float32), "scales")
size_y = numpy_helper.from_array(np.array([1, 16, 20, 23], np.int64), "size_y")
size_z = numpy_helper.from_array(np.array([1, 8, 11, 13], np.int64), "size_z")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 7, 9])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 20, 23])
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8, 11, 13])
nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1]),
    helper.make_node("Resize", ["c", "roi", "scales", "size_y"], ["r"],
                     mode="linear",
                     coordinate_transformation_mode="half_pixel"),
    helper.make_node("Sigmoid", ["r"], ["y"]),
    helper.make_node("Resize", ["x", "roi", "scales", "size_z"], ["z"],
                     mode="nearest",
                     coordinate_transformation_mode="half_pixel",
                     nearest_mode="round_prefer_floor"),
]
graph = helper.make_graph(nodes, "resize", [x], [y, z],
                          [w, b, roi, scales, size_y, size_z])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "rs.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 8, 7, 9)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 8, 7, 9)).astype(np.float32))
