"""Writes the weights and datasets of calibrate.test into argv[1].

Model (Inputs/add_relu.mlir): sum = x + w, y = relu(sum), w = [-1, 1, 0.5,
0.25]. Over the three samples of ds/: x in [-4, 2], sum in [-5, 2.5],
y in [0, 2.5] (calibrate.test checks the minmax table against these).
"""
import os
import sys

import numpy as np

out = sys.argv[1]
w = np.array([[-1.0, 1.0, 0.5, 0.25]], np.float32)
np.savez(os.path.join(out, "add_relu_weights.npz"), w=w)


def dataset(name, files):
    d = os.path.join(out, name)
    os.makedirs(d)
    for fname, arrays in files.items():
        path = os.path.join(d, fname)
        if fname.endswith(".npz"):
            np.savez(path, **arrays)
        else:
            open(path, "wb").write(b"not a sample")


x = lambda *v: np.array([v], np.float32)
# s2 holds one array of another name (np.savez(f, a) calls it arr_0): a
# one-input model takes it. notes.txt is not a sample.
dataset("ds", {"s0.npz": {"x": x(1.5, -2.0, 0.25, -0.5)},
               "s1.npz": {"x": x(-4.0, 1.0, 2.0, 0.0)},
               "s2.npz": {"arr_0": x(0.5, 0.5, -1.0, 1.75)},
               "notes.txt": None})
dataset("ds_shape", {"a.npz": {"x": x(1, 2, 3, 4)},
                     "b.npz": {"x": np.zeros(4, np.float32)}})
dataset("ds_missing", {"a.npz": {"z": x(1, 2, 3, 4), "q": x(1, 2, 3, 4)}})
dataset("ds_image", {"a.npz": {"x": x(1, 2, 3, 4)}, "b.jpg": None})
dataset("ds_empty", {"readme.txt": None})
dataset("ds_only_image", {"b.jpg": None})
