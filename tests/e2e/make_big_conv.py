#!/usr/bin/env python3
"""Writes big.onnx (16 3x3 convs of 512 channels on 64 x 64, one shared
seeded weight: 155 GMACs, a second or more to compile or simulate) and
big.npz (its input) into the current directory: the slow case of the
timeout tests (tests/e2e/regress.sh, tests/e2e/explore.sh)."""
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

rng = np.random.default_rng(3)
w = numpy_helper.from_array(
    rng.standard_normal((512, 512, 3, 3)).astype(np.float32) * 0.01, 'w')
names = ['x'] + [f'c{i}' for i in range(15)] + ['y']
nodes = [helper.make_node('Conv', [names[i], 'w'], [names[i + 1]], pads=[1, 1, 1, 1])
         for i in range(16)]
g = helper.make_graph(
    nodes, 'big', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 512, 64, 64])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 512, 64, 64])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), 'big.onnx')
np.savez('big.npz', x=rng.standard_normal((1, 512, 64, 64)).astype(np.float32))
