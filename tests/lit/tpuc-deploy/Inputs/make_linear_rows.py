"""A classifier head of few rows on x [1, 6, 120]: MatMul by a 120 x 2500
weight + bias, then Sigmoid (the shape of PP-OCR rec's 40 x 120 by
120 x 6625 classifier, smaller); a test input and a 4-sample dataset,
seeded.

    make_linear_rows.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(11)
inits = [
    numpy_helper.from_array(
        (rng.standard_normal((120, 2500)) * 0.1).astype(np.float32), "w"),
    numpy_helper.from_array(
        (rng.standard_normal(2500) * 0.1).astype(np.float32), "b"),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 120])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 2500])
nodes = [
    helper.make_node("MatMul", ["x", "w"], ["m"]),
    helper.make_node("Add", ["m", "b"], ["a"]),
    helper.make_node("Sigmoid", ["a"], ["y"]),
]
graph = helper.make_graph(nodes, "linear_rows", [x], [y], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "lin.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((1, 6, 120)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 6, 120)).astype(np.float32))
