"""A small PP-OCR-det-like FPN head for the INT8 concat / resize / deconv
forms: two convs of different output scales, a nearest 2x resize of the
coarse one, their concat, a 2x2 stride-2 ConvTranspose with relu, a second
one to one channel, and a sigmoid; an 8-sample calibration set and a test
input, seeded.

    make_int8_fpn.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(12)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


inits = [
    # The coarse branch's output is about 4x larger than the fine one's, so
    # the two concat inputs have different thresholds.
    const("wa", rng.standard_normal((8, 4, 3, 3)) * 0.6),
    const("ba", rng.standard_normal(8) * 0.1),
    const("wb", rng.standard_normal((8, 4, 3, 3)) * 0.15),
    const("bb", rng.standard_normal(8) * 0.05),
    const("roi", np.zeros(0)),
    const("scales", [1, 1, 2, 2]),
    # ConvTranspose filters are (IC, OC, KH, KW).
    const("wd1", rng.standard_normal((16, 8, 2, 2)) * 0.3),
    const("bd1", rng.standard_normal(8) * 0.1),
    const("wd2", rng.standard_normal((8, 1, 2, 2)) * 0.4),
    const("bd2", [0.2]),
]
nodes = [
    helper.make_node("Conv", ["x", "wa", "ba"], ["a"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Conv", ["x", "wb", "bb"], ["b"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Resize", ["a", "roi", "scales"], ["ua"], mode="nearest",
                     coordinate_transformation_mode="asymmetric",
                     nearest_mode="floor"),
    helper.make_node("Concat", ["ua", "b"], ["cat"], axis=1),
    helper.make_node("ConvTranspose", ["cat", "wd1", "bd1"], ["d1pre"],
                     kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Relu", ["d1pre"], ["d1"]),
    helper.make_node("ConvTranspose", ["d1", "wd2", "bd2"], ["d2"],
                     kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Sigmoid", ["d2"], ["y"]),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 32, 32])
graph = helper.make_graph(nodes, "fpn", [x], [y], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "fpn.onnx"))
os.makedirs(os.path.join(out, "calib"), exist_ok=True)
for i in range(8):
    np.savez(os.path.join(out, "calib", "s%d.npz" % i),
             x=rng.standard_normal((1, 4, 8, 8)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 4, 8, 8)).astype(np.float32))
