"""Writes the weights and an input of tiny_top.mlir into the directory argv[1]."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(3)
np.savez(os.path.join(out, "tiny_top_weights.npz"),
         w=(rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32),
         b=(rng.standard_normal(8) * 0.1).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 4, 8, 8)).astype(np.float32))
