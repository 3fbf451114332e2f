"""Writes the weights and an input of stft_top.mlir into the directory argv[1]."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(5)
np.savez(os.path.join(out, "stft_top_weights.npz"),
         w=(rng.standard_normal((6, 2, 40)) * 0.2).astype(np.float32),
         b=(rng.standard_normal(6) * 0.1).astype(np.float32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 2, 100)).astype(np.float32))
