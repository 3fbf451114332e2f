#!/usr/bin/env python3
"""npz helpers for the frontend lit tests.

    npz_util.py inputs DIR        test inputs of onnx_models.py two_inputs
    npz_util.py if_inputs DIR     inputs and numpy results of if_verifier
    npz_util.py check A.npz B.npz every array of B is in A and allclose
    npz_util.py show F.npz        "name dtype shape values" per array
"""
import sys

import numpy as np


def inputs(d):
    x = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5) / 4
    s = np.array([[2.0, -1.0, 0.5]], np.float32)
    t = np.array([1.0, 2.0, 3.0], np.float32)  # the model's initializer
    np.savez(f"{d}/in.npz", x=x, s=s)
    np.savez(f"{d}/expected.npz", y=x * s + t)
    np.savez(f"{d}/in_wrong_name.npz", x=x, s=s, z=s)
    np.savez(f"{d}/in_missing.npz", x=x)
    np.savez(f"{d}/in_wrong_shape.npz", x=x[:2], s=s)


def if_inputs(d):
    """Three inputs of onnx_models.py if_verifier: sum < 0 (else branch),
    sum > 0 with x.w > 0 (then, doubled) and with x.w < 0 (then, kept)."""
    w = np.array([[0.5], [-1.0], [2.0], [0.25]], np.float32)
    sig = lambda v: 1 / (1 + np.exp(-v.astype(np.float64)))
    cases = {"neg": [-1.0, 0.5, -0.25, 0.0], "pos_up": [0.5, 0.25, 1.0, 0.0],
             "pos_down": [0.5, 2.0, 0.25, 0.0]}
    for name, v in cases.items():
        x = np.array([v], np.float32)
        p = sig(x.sum(axis=1, keepdims=True))
        if p[0, 0] >= 0.5:
            t = x.astype(np.float64) @ w
            y = sig(t) * (2 if t[0, 0] > 0 else 1)
        else:
            y = p
        np.savez(f"{d}/{name}.npz", x=x)
        np.savez(f"{d}/{name}_expected.npz", y=y.astype(np.float32))


def check(actual, expected):
    a, e = np.load(actual), np.load(expected)
    for name in e.files:
        if name not in a.files:
            sys.exit(f"{name} missing from {actual} (has {a.files})")
        np.testing.assert_allclose(a[name], e[name], rtol=1e-6, atol=0)
        print("OK", name, a[name].shape)


def show(path):
    d = np.load(path)
    for name in d.files:
        print(name, d[name].dtype, list(d[name].shape), d[name].flatten().tolist())


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "inputs":
        inputs(sys.argv[2])
    elif cmd == "if_inputs":
        if_inputs(sys.argv[2])
    elif cmd == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        show(sys.argv[2])
