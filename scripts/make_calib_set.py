#!/usr/bin/env python3
"""Writes a calibration dataset shaped like an input npz.

    make_calib_set.py --like input.npz --num N --out DIR [--seed S]

DIR receives N files sample_000.npz ... with one array per array of the
--like file (same names, shapes and dtypes), drawn from a normal
distribution with each array's own mean and standard deviation (a float
array) so that the calibration sees the value range of the test input
without containing it. Integer arrays are copied unchanged (e.g. indices).
Deterministic for a given seed.
"""
import argparse
import os
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--like", required=True)
    p.add_argument("--num", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1234)
    a = p.parse_args()
    if a.num < 1:
        sys.exit("make_calib_set.py: --num must be >= 1")
    like = np.load(a.like)
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for i in range(a.num):
        arrays = {}
        for name in like.files:
            x = like[name]
            if np.issubdtype(x.dtype, np.floating):
                m, s = float(x.mean()), float(x.std()) or 1.0
                arrays[name] = (rng.standard_normal(x.shape) * s + m).astype(x.dtype)
            else:
                arrays[name] = x.copy()
        np.savez(os.path.join(a.out, "sample_%03d.npz" % i), **arrays)


if __name__ == "__main__":
    main()
