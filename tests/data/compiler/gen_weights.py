#!/usr/bin/env python3
"""Writes weights.npz for the compiler unit tests (WeightsTest in
tests/unit/compiler/PassesTest.cpp): one float32, one int64 and one float16
array, as numpy saves them."""
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
np.savez(
    os.path.join(here, "weights.npz"),
    w=np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32),
    idx=np.array([0, -1], dtype=np.int64),
    h=np.array([0.5, 1.5], dtype=np.float16),
)
