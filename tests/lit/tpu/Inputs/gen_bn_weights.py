#!/usr/bin/env python3
"""Writes OUT_DIR/bn_weights.npz (argv[1]), the weights of
lower-batchnorm-scale.mlir. The statistics are chosen so that the lowered
scale and shift are easy to derive by hand (see the CHECK comments there)."""
import os
import sys

import numpy as np

f32 = np.float32
np.savez(
    os.path.join(sys.argv[1], "bn_weights.npz"),
    # a = gamma / sqrt(var + 0) = [2 / 2, 3 / 1, 1 / 4] = [1, 3, 0.25];
    # shift = beta - mean * a = [1 - 0, 0 - 1 * 3, 0.5 - 2 * 0.25]
    #       = [1, -3, 0].
    mean=np.array([0, 1, 2], dtype=f32),
    var=np.array([4, 1, 16], dtype=f32),
    gamma=np.array([2, 3, 1], dtype=f32),
    beta=np.array([1, 0, 0.5], dtype=f32),
)
