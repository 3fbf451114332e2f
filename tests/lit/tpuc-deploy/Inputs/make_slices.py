"""A YOLOv5-style "focus" and a channel split: the four pixel phases of a
2 x 2 grid of the input (Slice with steps 2 along H and W), concatenated
along C, a 3x3 conv of 80 channels, then its channels 0..39 and 40..79
(Slice along C) added; a 4-sample dataset and a test input, seeded.

    make_slices.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


inits = [
    numpy_helper.from_array(
        (rng.standard_normal((80, 12, 3, 3)) * 0.2).astype(np.float32), "w"),
    numpy_helper.from_array(
        (rng.standard_normal(80) * 0.1).astype(np.float32), "b"),
    ints("hw_axes", [2, 3]), ints("steps2", [2, 2]), ints("ends_hw", [16, 16]),
    ints("c_axes", [1]), ints("c0", [0]), ints("c40", [40]), ints("c80", [80]),
]
nodes = []
phases = []
for a in (0, 1):
    for b in (0, 1):
        inits.append(ints("s%d%d" % (a, b), [a, b]))
        name = "p%d%d" % (a, b)
        nodes.append(helper.make_node(
            "Slice", ["x", "s%d%d" % (a, b), "ends_hw", "hw_axes", "steps2"],
            [name]))
        phases.append(name)
nodes += [
    helper.make_node("Concat", phases, ["focus"], axis=1),
    helper.make_node("Conv", ["focus", "w", "b"], ["c"], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Slice", ["c", "c0", "c40", "c_axes"], ["lo"]),
    helper.make_node("Slice", ["c", "c40", "c80", "c_axes"], ["hi"]),
    helper.make_node("Add", ["lo", "hi"], ["y"]),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40, 8, 8])
graph = helper.make_graph(nodes, "slices", [x], [y], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(out, "sl.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 3, 16, 16)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 3, 16, 16)).astype(np.float32))
