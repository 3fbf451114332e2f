"""A PPLCNetV3-like chain for tpuc qtable's layers: three convs, each
followed by hardswish, x * s and + b (one-element weights, as PaddleOCR's
learnable affine blocks export), then a global pool and a 1x1 conv head;
an 8-sample dataset, seeded.

    make_qtable_layers.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(11)
inits, nodes = [], []


def weight(name, shape, scale):
    inits.append(numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name))
    return name


def scalar(name, value):
    inits.append(numpy_helper.from_array(np.array([value], np.float32), name))
    return name


x, c = "x", 8
for i, (oc, k) in enumerate([(16, 3), (16, 1), (32, 3)], start=1):
    nodes.append(helper.make_node(
        "Conv", [x, weight(f"w{i}", (oc, c, k, k), 0.5 / np.sqrt(c * k * k)),
                 weight(f"b{i}", (oc,), 0.1)],
        [f"conv{i}"], kernel_shape=[k, k], pads=[k // 2] * 4))
    nodes.append(helper.make_node("HardSwish", [f"conv{i}"], [f"hs{i}"]))
    nodes.append(helper.make_node("Mul", [f"hs{i}", scalar(f"s{i}", 0.8)],
                                  [f"mul{i}"]))
    nodes.append(helper.make_node("Add", [f"mul{i}", scalar(f"t{i}", 0.05)],
                                  [f"lab{i}"]))
    x, c = f"lab{i}", oc
nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
nodes.append(helper.make_node("Conv", ["gap", weight("wh", (10, c, 1, 1), 0.3),
                                       weight("bh", (10,), 0.1)], ["logits"],
                              kernel_shape=[1, 1]))
graph = helper.make_graph(
    nodes, "qtable_layers",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10, 1, 1])],
    inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]),
          os.path.join(out, "ql.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(8):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 8, 16, 16)).astype(np.float32))
