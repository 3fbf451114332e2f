#!/usr/bin/python3
"""Writes the demo model models/default/default_cnn.onnx: a small CNN with
the layer kinds of a mobile classifier, random weights from a fixed seed.

    x [N, 3, 32, 32]   (the batch N is symbolic: tpuc transform fixes it,
                        --input-shapes [[1,3,32,32]] or [[4,3,32,32]])
    conv 3x3 3->16, batchnorm, relu                     [N, 16, 32, 32]
    depthwise conv 3x3, batchnorm, relu                 [N, 16, 32, 32]
    maxpool 2x2 / 2                                     [N, 16, 16, 16]  = a
    conv 3x3 16->16, batchnorm, relu, conv 3x3 16->16, batchnorm
    add a (residual), relu                              [N, 16, 16, 16]
    conv 1x1 16->32 stride 2, relu                      [N, 32, 8, 8]
    global average pool, flatten                        [N, 32]
    gemm 32->10 (transB)                                [N, 10]
    softmax                                             [N, 10]  = prob

Usage: make_default_model.py [OUTPUT.onnx]  (default: beside this script)
Needs python3-onnx and python3-numpy (run with /usr/bin/python3).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

SEED = 20240601
OPSET = 13


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "default_cnn.onnx")
    rng = np.random.default_rng(SEED)
    inits = []
    nodes = []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def conv(name, x, ic, oc, k, stride=1, group=1):
        # He-style scale keeps activations of order 1 through the layers.
        fan_in = ic // group * k * k
        w = weight(name + "_w", (oc, ic // group, k, k), np.sqrt(2.0 / fan_in))
        b = weight(name + "_b", (oc,), 0.1)
        nodes.append(helper.make_node(
            "Conv", [x, w, b], [name], name=name, kernel_shape=[k, k],
            strides=[stride, stride], pads=[k // 2] * 4, group=group))
        return name

    def bn(name, x, c):
        scale = name + "_scale"
        inits.append(numpy_helper.from_array(
            rng.uniform(0.5, 1.5, c).astype(np.float32), scale))
        bias = weight(name + "_bias", (c,), 0.1)
        mean = weight(name + "_mean", (c,), 0.1)
        var = name + "_var"
        inits.append(numpy_helper.from_array(
            rng.uniform(0.5, 1.5, c).astype(np.float32), var))
        nodes.append(helper.make_node(
            "BatchNormalization", [x, scale, bias, mean, var], [name],
            name=name, epsilon=1e-5))
        return name

    def relu(name, x):
        nodes.append(helper.make_node("Relu", [x], [name], name=name))
        return name

    h = relu("relu1", bn("bn1", conv("conv1", "x", 3, 16, 3), 16))
    h = relu("relu2", bn("bn2", conv("dwconv", h, 16, 16, 3, group=16), 16))
    nodes.append(helper.make_node("MaxPool", [h], ["pool"], name="pool",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    r = relu("relu3", bn("bn3", conv("conv2", "pool", 16, 16, 3), 16))
    r = bn("bn4", conv("conv3", r, 16, 16, 3), 16)
    nodes.append(helper.make_node("Add", [r, "pool"], ["res"], name="res"))
    h = relu("relu4", "res")
    h = relu("relu5", conv("conv4", h, 16, 32, 1, stride=2))
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["gap"],
                                  name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat",
                                  axis=1))
    fc_w = weight("fc_w", (10, 32), np.sqrt(1.0 / 32))
    fc_b = weight("fc_b", (10,), 0.1)
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["logits"],
                                  name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["prob"],
                                  name="prob", axis=1))

    graph = helper.make_graph(
        nodes, "default_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 10])],
        inits)
    model = helper.make_model(graph, producer_name="tpu-open",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    checker.check_model(model)
    save(model, out)
    print(out)


if __name__ == "__main__":
    main()
