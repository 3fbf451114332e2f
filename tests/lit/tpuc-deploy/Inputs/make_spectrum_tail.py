"""The tail of openWakeWord's mel spectrogram, in small, on frames x
[1, 160, 8]: a 1-D convolution (rank 3, kernel 4), the square (Pow by 2),
seen as (1, 1, 33, 5): the maximum of everything (ReduceMax over every
axis, a scalar), that less 8 (a scalar of a scalar), and the clip of the
spectrum at it (Max of a tensor and a computed scalar); beside it, seen as
(1, 33, 5, 1), a mean over H and W kept as (1, 33, 1, 1) that scales it
(Mul). A test input and a 4-sample
dataset, seeded.

    make_spectrum_tail.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)
inits = [
    numpy_helper.from_array(
        (rng.standard_normal((33, 160, 4)) * 0.1).astype(np.float32), "w"),
    numpy_helper.from_array(np.array(2.0, np.float32), "two"),
    numpy_helper.from_array(np.array(8.0, np.float32), "eight"),
    numpy_helper.from_array(np.array([1, 1, 33, 5], np.int64), "plane"),
    numpy_helper.from_array(np.array([1, 33, 5, 1], np.int64), "columns"),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 160, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 33, 5])
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 33, 5, 1])
nodes = [
    helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[4]),
    helper.make_node("Pow", ["c", "two"], ["p"]),
    helper.make_node("Reshape", ["p", "plane"], ["pp"]),
    helper.make_node("ReduceMax", ["pp"], ["m"], keepdims=0),
    helper.make_node("Sub", ["m", "eight"], ["t"]),
    helper.make_node("Max", ["pp", "t"], ["y"]),
    helper.make_node("Reshape", ["p", "columns"], ["p4"]),
    helper.make_node("ReduceMean", ["p4"], ["g"], axes=[2, 3], keepdims=1),
    helper.make_node("Mul", ["p4", "g"], ["z"]),
]
graph = helper.make_graph(nodes, "spectrum_tail", [x], [y, z], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "tail.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 160, 8)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 160, 8)).astype(np.float32))
