#!/usr/bin/env python3
"""Prints each array of an npz file as `name dtype shape [values]`, sorted
by name, for FileCheck."""
import sys

import numpy as np

with np.load(sys.argv[1]) as data:
    for name in sorted(data.files):
        a = data[name]
        values = ", ".join(repr(float(v)) for v in a.ravel())
        print(f"{name} {a.dtype} {list(a.shape)} [{values}]")
