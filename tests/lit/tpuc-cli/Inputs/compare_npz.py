"""Writes the .npz pairs of compare.test into the directory argv[1].

a.npz is the "actual" side, b.npz the reference; each entry exercises one
rule of tpuc compare (see the CHECK lines of compare.test).
"""
import os
import sys

import numpy as np

out = sys.argv[1]
ref = np.array([[3.0, -1.0, 0.5, 2.0]], dtype=np.float32)
a = {
    "same": ref,
    "scaled": 2 * ref,                            # cosine 1, euclid 0
    "squeezed": ref,                              # 1x4 vs 4: same layout
    "transposed": np.arange(6, dtype=np.float32).reshape(2, 3),
    "nan": np.array([1.0, np.nan, 2.0], np.float32),
    "zeros": np.zeros((2, 2), np.float32),
    "small_err": ref + np.float32(1e-3),          # max|err| 1e-3, max|ref| 3
    "ints": np.array([1, 2, 3], np.int64),
    "only_a": ref,
}
b = {
    "same": ref,
    "scaled": ref,
    "squeezed": ref.reshape(4),
    "transposed": np.arange(6, dtype=np.float32).reshape(3, 2),
    "nan": np.array([1.0, 5.0, 2.0], np.float32),
    "zeros": np.zeros((2, 2), np.float32),
    "small_err": ref,
    "ints": np.array([1, 2, 3], np.int64),
    "only_b": ref,
}
np.savez(os.path.join(out, "a.npz"), **a)
np.savez_compressed(os.path.join(out, "b.npz"), **b)
np.savez(os.path.join(out, "disjoint.npz"), other=ref)
