"""PP-OCRv4's learnable affine block after a conv: HardSwish, then Mul by a
one-element weight, then Add of one (y = 0.8 * hardswish(c) + 0.3), then a
1x1 conv; an 8-sample calibration set, a test input, and (for
int8-lut-chain.test) the helper that derives the fused table.

    make_lut_chain.py OUTDIR [--depthwise]

With --depthwise the block shifts by 0.1 (its minimum is then about -0.2:
a skewed range) and a depthwise 3x3 conv reads it.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
depthwise = "--depthwise" in sys.argv[2:]
rng = np.random.default_rng(7)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


inits = [
    const("w1", rng.standard_normal((8, 4, 3, 3)) * 0.5),
    const("b1", rng.standard_normal(8) * 0.1),
    const("k", [0.8]),
    const("c", [0.1 if depthwise else 0.3]),
    const("w2", rng.standard_normal((8, 1, 3, 3) if depthwise else (4, 8, 1, 1))
          * 0.4),
]
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("HardSwish", ["c1"], ["hs"]),
    helper.make_node("Mul", ["hs", "k"], ["scaled"]),
    helper.make_node("Add", ["scaled", "c"], ["lab"]),
    helper.make_node("Conv", ["lab", "w2"], ["y"], group=8, kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1])
    if depthwise else
    helper.make_node("Conv", ["lab", "w2"], ["y"], kernel_shape=[1, 1]),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                  [1, 8 if depthwise else 4, 8, 8])
graph = helper.make_graph(nodes, "lab", [x], [y], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]),
          os.path.join(out, "lab.onnx"))
os.makedirs(os.path.join(out, "calib"), exist_ok=True)
for i in range(8):
    np.savez(os.path.join(out, "calib", "s%d.npz" % i),
             x=rng.standard_normal((1, 4, 8, 8)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 4, 8, 8)).astype(np.float32))
