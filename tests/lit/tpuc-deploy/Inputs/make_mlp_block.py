"""A transformer's row-wise block on x [2, 40, 48]: LayerNormalization,
MatMul by a 48 x 96 weight + bias, Relu, MatMul by 96 x 48 + bias, the
residual Add of the normalised input, Softmax along the rows; a test input
and a 4-sample dataset, seeded.

    make_mlp_block.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)


def const(name, shape, scale):
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [const("g", (48,), 0.2), const("beta", (48,), 0.1),
         const("w1", (48, 96), 0.15), const("b1", (96,), 0.1),
         const("w2", (96, 48), 0.15), const("b2", (48,), 0.1)]
inits[0].CopyFrom(numpy_helper.from_array(
    (1 + rng.standard_normal(48) * 0.2).astype(np.float32), "g"))
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 40, 48])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 40, 48])
nodes = [
    helper.make_node("LayerNormalization", ["x", "g", "beta"], ["ln"],
                     axis=-1, epsilon=1e-5),
    helper.make_node("MatMul", ["ln", "w1"], ["m1"]),
    helper.make_node("Add", ["m1", "b1"], ["a1"]),
    helper.make_node("Relu", ["a1"], ["r1"]),
    helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
    helper.make_node("Add", ["m2", "b2"], ["a2"]),
    helper.make_node("Add", ["a2", "ln"], ["res"]),
    helper.make_node("Softmax", ["res"], ["y"], axis=-1),
]
graph = helper.make_graph(nodes, "mlp_block", [x], [y], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "mlp.onnx"))
os.makedirs(os.path.join(out, "ds"), exist_ok=True)
for i in range(4):
    np.savez(os.path.join(out, "ds", "s%d.npz" % i),
             x=rng.standard_normal((2, 40, 48)).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((2, 40, 48)).astype(np.float32))
