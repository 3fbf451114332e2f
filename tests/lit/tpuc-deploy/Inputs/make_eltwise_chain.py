"""Models for the deploy test of element-wise chains as layer groups.

    make_eltwise_chain.py OUT_DIR

writes OUT_DIR/chain.onnx, OUT_DIR/nofuse.onnx and OUT_DIR/in.npz (input x
of both).

chain.onnx, the PP-OCR (LCNet) pattern between two convs:

    c1 = Conv3x3(x)
    h  = c1 * Clip(c1 + 3, 0, 6) / 5          hardswish as exporters write it,
                                              but / 5 (/ 6 is canonicalised to
                                              one HardSwish)
    t  = h * alpha + beta                     learnable scalar affine
    p  = t * gamma                            per-channel (1, C, 1, 1)
    y  = Conv1x1(p)

Add + Clip lower to one tpu.Add with relu6, so the tpu chain is Add, Mul
(reading c1 again), Div, Mul, Add, Mul: one layer group with the convs.

nofuse.onnx, element-wise ops that a fused kernel of one running value
could not take (kept, since groups take them: a value stored for a model
output, one with two uses, a binary of two computed values):

    c2 = Conv3x3(x)
    e  = Sigmoid(c2)                          a model output (F32; in F16 /
                                              BF16 read by its cast too) ...
    u  = e + 1                                ... read by the next op;
                                              two uses (v and w)
    v  = u * 2
    w  = u - 0.5
    z  = v + w                                w is no weight nor chain input
    y  = Conv1x1(z)                           outputs y and e
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
C, H, W, OC = 80, 15, 13, 16
rng = np.random.default_rng(5)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array, np.float32), name)


def save(nodes, inits, outputs, name, path):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", F, [1, C, H, W])],
        [helper.make_tensor_value_info(n, F, s) for n, s in outputs], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="tpuc-lit")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def chain_model(path):
    inits = [
        const("w1", rng.standard_normal((C, C, 3, 3)) * 0.08),
        const("b1", rng.standard_normal(C) * 0.5),
        const("three", 3.0),
        const("zero", 0.0),
        const("six", 6.0),
        const("five", 5.0),
        const("alpha", 0.8125),
        const("beta", -0.1875),
        const("gamma", rng.uniform(0.5, 1.5, (1, C, 1, 1))),
        const("w2", rng.standard_normal((OC, C, 1, 1)) * 0.1),
        const("b2", rng.standard_normal(OC) * 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "three"], ["a"]),
        helper.make_node("Clip", ["a", "zero", "six"], ["r6"]),
        helper.make_node("Mul", ["c1", "r6"], ["m"]),
        helper.make_node("Div", ["m", "five"], ["h"]),
        helper.make_node("Mul", ["h", "alpha"], ["s"]),
        helper.make_node("Add", ["s", "beta"], ["t"]),
        helper.make_node("Mul", ["t", "gamma"], ["p"]),
        helper.make_node("Conv", ["p", "w2", "b2"], ["y"]),
    ]
    save(nodes, inits, [("y", [1, OC, H, W])], "eltwise_chain", path)


def nofuse_model(path):
    inits = [
        const("w1", rng.standard_normal((C, C, 3, 3)) * 0.08),
        const("b1", rng.standard_normal(C) * 0.5),
        const("k1", 1.0),
        const("k2", 2.0),
        const("khalf", 0.5),
        const("w2", rng.standard_normal((OC, C, 1, 1)) * 0.1),
        const("b2", rng.standard_normal(OC) * 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c2"], ["e"]),
        helper.make_node("Add", ["e", "k1"], ["u"]),
        helper.make_node("Mul", ["u", "k2"], ["v"]),
        helper.make_node("Sub", ["u", "khalf"], ["w"]),
        helper.make_node("Add", ["v", "w"], ["z"]),
        helper.make_node("Conv", ["z", "w2", "b2"], ["y"]),
    ]
    save(nodes, inits, [("y", [1, OC, H, W]), ("e", [1, C, H, W])],
         "eltwise_nofuse", path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_eltwise_chain.py OUT_DIR")
    out = sys.argv[1]
    chain_model(os.path.join(out, "chain.onnx"))
    nofuse_model(os.path.join(out, "nofuse.onnx"))
    np.savez(os.path.join(out, "in.npz"),
             x=rng.standard_normal((1, C, H, W)).astype(np.float32))


if __name__ == "__main__":
    main()
