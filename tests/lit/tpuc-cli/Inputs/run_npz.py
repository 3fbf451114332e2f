"""Writes the inputs, weights and numpy references of run.test into argv[1].

Model (Inputs/add_relu.mlir): sum = x + w, y = relu(sum).
"""
import os
import sys

import numpy as np

out = sys.argv[1]
x = np.array([[1.5, -2.0, 0.25, -0.5]], np.float32)
w = np.array([[-1.0, 1.0, 0.5, 0.25]], np.float32)
np.savez(os.path.join(out, "add_relu_weights.npz"), w=w)
np.savez(os.path.join(out, "in.npz"), x=x)
np.savez(os.path.join(out, "in_extra.npz"), x=x, unused=w)
np.savez(os.path.join(out, "in_wrong_shape.npz"), x=x.reshape(4))
np.savez(os.path.join(out, "in_missing.npz"), z=x)
total = x + w
np.savez(os.path.join(out, "expected.npz"), y=np.maximum(total, 0))
np.savez(os.path.join(out, "expected_all.npz"), x=x, sum=total, y=np.maximum(total, 0))
