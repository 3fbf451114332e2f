"""Writes the weights and an input of zoo_top.mlir into the directory argv[1]."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(11)
f32 = np.float32
np.savez(os.path.join(out, "zoo_top_weights.npz"),
         ln_scale=rng.uniform(0.5, 1.5, 8).astype(f32),
         ln_bias=(rng.standard_normal(8) * 0.1).astype(f32),
         slope=rng.uniform(0.05, 0.3, (8, 1, 1)).astype(f32),
         idx=np.array([0, 5, -1], dtype=f32),
         k=np.array(2.5, dtype=f32),
         cond=np.array([[[1, 0, 1, 1, 0, 0]]], dtype=f32),
         fc_w=(rng.standard_normal((6, 4)) * 0.5).astype(f32),
         fc_b=(rng.standard_normal(4) * 0.1).astype(f32))
np.savez(os.path.join(out, "in.npz"),
         x=rng.standard_normal((1, 8, 6, 6)).astype(f32))
