"""A pre-activation residual block for the deploy test of tpu.Scale:

    x -> Conv 3x3 -> Add(x) -> BatchNormalization -> Relu -> Conv 1x1 -> y

The BatchNorm follows an Add, so no conv absorbs it: it lowers to one
tpu.Scale that applies the Relu. 80 channels (more than the 64 lanes),
a 7 x 9 plane (odd H * W).

    make_bn_relu.py OUT_DIR

writes OUT_DIR/bn_relu.onnx and OUT_DIR/in.npz.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
C, H, W, OC = 80, 7, 9, 16
rng = np.random.default_rng(11)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array, np.float32), name)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_bn_relu.py OUT_DIR")
    out = sys.argv[1]
    inits = [
        const("w1", rng.standard_normal((C, C, 3, 3)) * 0.05),
        const("b1", rng.standard_normal(C) * 0.1),
        const("gamma", rng.uniform(0.5, 1.5, C)),
        const("beta", rng.standard_normal(C) * 0.2),
        const("mean", rng.standard_normal(C) * 0.2),
        const("var", rng.uniform(0.5, 2.0, C)),
        const("w2", rng.standard_normal((OC, C, 1, 1)) * 0.1),
        const("b2", rng.standard_normal(OC) * 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "x"], ["res"]),
        helper.make_node("BatchNormalization",
                         ["res", "gamma", "beta", "mean", "var"], ["bn"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["act"]),
        helper.make_node("Conv", ["act", "w2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "bn_relu",
        [helper.make_tensor_value_info("x", F, [1, C, H, W])],
        [helper.make_tensor_value_info("y", F, [1, OC, H, W])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="tpuc-lit")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(out, "bn_relu.onnx"))
    np.savez(os.path.join(out, "in.npz"),
             x=rng.standard_normal((1, C, H, W)).astype(np.float32))


if __name__ == "__main__":
    main()
