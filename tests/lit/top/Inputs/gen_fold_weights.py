#!/usr/bin/env python3
"""Writes fold_weights.npz, the weights of fold.mlir (numbers chosen so the
folded values are easy to derive by hand; see the CHECK comments there)."""
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
f32 = np.float32
np.savez(
    os.path.join(here, "fold_weights.npz"),
    # 1x1 conv with two output channels, weights [2, -1], bias [1, 0].
    conv_w=np.array([2, -1], dtype=f32).reshape(2, 1, 1, 1),
    conv_b=np.array([1, 0], dtype=f32),
    # BatchNorm statistics: mean [1, 0], var [4, 1], scale [3, 2], bias
    # [0.5, 0].
    bn_mean=np.array([1, 0], dtype=f32),
    bn_var=np.array([4, 1], dtype=f32),
    bn_gamma=np.array([3, 2], dtype=f32),
    bn_beta=np.array([0.5, 0], dtype=f32),
    # The same conv weights again, for the Mul / Add fold (no bias).
    conv2_w=np.array([2, -1], dtype=f32).reshape(2, 1, 1, 1),
    # Per-channel multiplier [3, 4] and scalar shift 1.
    mul_s=np.array([3, 4], dtype=f32).reshape(1, 2, 1, 1),
    add_s=np.array([1], dtype=f32),
    # Constants to fold: [1, 2] + [10, 20].
    a=np.array([1, 2], dtype=f32),
    b=np.array([10, 20], dtype=f32),
    # ConvTranspose filter (C=1, OC=2, 1x1): [2, -1].
    deconv_w=np.array([2, -1], dtype=f32).reshape(1, 2, 1, 1),
    # MatMul weight (K = 2, N = 3), its bias [1, 2, 3], a row to add
    # [10, 20, 30] (shape (1, 1, 3)) and a full (2, 3) matrix to add.
    mm_w=np.array([[1, 0, 2], [0, 1, -1]], dtype=f32),
    mm_b=np.array([1, 2, 3], dtype=f32),
    mm_row=np.array([10, 20, 30], dtype=f32).reshape(1, 1, 3),
    mm_full=np.arange(6, dtype=f32).reshape(2, 3),
    # LayerNorm over 3 values: gamma [2, 3, 4], beta [1, -1, 0.5] (shape
    # (1, 1, 3)); a norm's own scale [1, 2, 3] and bias [0.5, 0.5, 0.5].
    ln_w=np.array([2, 3, 4], dtype=f32),
    ln_b=np.array([1, -1, 0.5], dtype=f32).reshape(1, 1, 3),
    ln_s=np.array([1, 2, 3], dtype=f32),
    ln_t=np.array([0.5, 0.5, 0.5], dtype=f32),
)
