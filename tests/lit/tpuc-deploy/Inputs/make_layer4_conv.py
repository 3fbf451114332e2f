"""Writes DIR/conv.onnx: ResNet-18's layer4 3x3 conv alone (512 -> 512
channels on 7 x 7, pads 1, seeded weights), whose slicing on 16 lanes
depends on the local memory in a way that is not monotone in the channel
slices (channel-slices.test)."""
import sys

import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(1)
w = numpy_helper.from_array(
    (rng.standard_normal((512, 512, 3, 3)) * 0.02).astype(np.float32), 'w')
node = helper.make_node('Conv', ['x', 'w'], ['y'], pads=[1, 1, 1, 1])
g = helper.make_graph(
    [node], 'layer4_conv',
    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 512, 7, 7])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 512, 7, 7])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]),
          f'{out}/conv.onnx')
