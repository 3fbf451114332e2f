"""Writes the weights and an input of qtable_top.mlir into the directory argv[1].

The values are chosen so that the largest |x| of each tensor is known by
hand (qtable.test states them): max |x| = 3000 (x[0, 0, 0, 0]; channel 0),
k = [40, -30, 20, 10], w = 0.02 * identity, k2 = 30, k3 = 1e-4, inf = +inf.
"""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(11)
x = rng.uniform(-2900.0, 2900.0, (1, 4, 4, 4)).astype(np.float32)
x[0, 0, 0, 0] = 3000.0
np.savez(os.path.join(out, "qtable_top_weights.npz"),
         k=np.array([40, -30, 20, 10], np.float32).reshape(1, 4, 1, 1),
         w=(0.02 * np.eye(4, dtype=np.float32)).reshape(4, 4, 1, 1),
         k2=np.full((1, 1, 1, 1), 30.0, np.float32),
         k3=np.full((1, 1, 1, 1), 1e-4, np.float32),
         inf=np.full((1, 1, 1, 1), np.inf, np.float32))
np.savez(os.path.join(out, "in.npz"), x=x)
