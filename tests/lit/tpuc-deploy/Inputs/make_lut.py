"""A one-op model y = Sigmoid(x) (x [1, 4, 8, 8]), a test input, a hand-written
calibration table and the 256-entry lookup table numpy expects for it.

    make_lut.py OUTDIR

The table gives x threshold 4 (min -4: int8, scale 4 / 127) and y threshold 1
(min 0: uint8, scale 1 / 255). Entry b of the INT8 lookup table holds the
uint8 code of sigmoid(int8(b) * 4 / 127): round half away from zero of
f * 255, clamped to [0, 255] (compiler/docs/design.md "INT8", lookup tables).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
graph = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"])],
                          "lut", [x], [y])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(model, os.path.join(out, "lut.onnx"))

rng = np.random.default_rng(5)
np.savez(os.path.join(out, "in.npz"),
         x=(rng.standard_normal((1, 4, 8, 8)) * 1.5).astype(np.float32))
with open(os.path.join(out, "lut.table"), "w") as f:
    f.write("# op_name    threshold    min    max\n")
    f.write("x 4.0000000 -4.0000000 4.0000000\n")
    f.write("y 1.0000000 0.0000000 1.0000000\n")

codes = np.arange(256).astype(np.uint8).view(np.int8).astype(np.float64)
v = 1.0 / (1.0 + np.exp(-codes * (4.0 / 127.0))) * 255.0
q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), 0, 255)
np.save(os.path.join(out, "expected_lut.npy"), q.astype(np.float32))
