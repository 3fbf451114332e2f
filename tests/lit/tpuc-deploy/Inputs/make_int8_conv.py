"""A tiny INT8 model for the weight-layout and bad-input tests.

    make_int8_conv.py OUT_DIR

writes OUT_DIR/int8_conv.onnx, OUT_DIR/in.npz (the test input) and
OUT_DIR/calib/sample_NNN.npz (8 calibration samples), all deterministic.

    x (1, 3, 8, 8), values in [0, 1)
      -> conv   3 -> 8, 3x3, pad 1, bias  -> relu -> dw   (8 -> 8 depthwise,
         3x3, pad 1, bias)                                  -> y
      -> dw0    3 -> 3 depthwise, 3x3, pad 1, bias         -> z
    softmax(y) -> p  (no INT8 form: runs in the fallback float mode)

x is non-negative and read only by convolutions, one of them depthwise, so
the lowering gives it int8 with zero point -128 (scale th / 255); the relu
output likewise. The convs then pad with -128 and fold 128 * sum(w) into
their bias (compiler/docs/design.md "INT8").
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "calib"), exist_ok=True)
    rng = np.random.default_rng(2024)
    w = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(8) * 0.1).astype(np.float32)
    wd = (rng.standard_normal((8, 1, 3, 3)) * 0.4).astype(np.float32)
    bd = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w0 = (rng.standard_normal((3, 1, 3, 3)) * 0.5).astype(np.float32)
    b0 = (rng.standard_normal(3) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w, "w"), (b, "b"), (wd, "wd"), (bd, "bd"), (w0, "w0"),
              (b0, "b0")]]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", **conv),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Conv", ["r", "wd", "bd"], ["y"], name="dw",
                         group=8, **conv),
        helper.make_node("Conv", ["x", "w0", "b0"], ["z"], name="dw0",
                         group=3, **conv),
        helper.make_node("Softmax", ["y"], ["p"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "int8_conv",
        [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("p", F, [1, 8, 8, 8]),
         helper.make_tensor_value_info("z", F, [1, 3, 8, 8])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="tpuc-lit")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(out, "int8_conv.onnx"))
    np.savez(os.path.join(out, "in.npz"),
             x=rng.random((1, 3, 8, 8), dtype=np.float32))
    for i in range(8):
        np.savez(os.path.join(out, "calib", f"sample_{i:03d}.npz"),
                 x=rng.random((1, 3, 8, 8), dtype=np.float32))


if __name__ == "__main__":
    main()
