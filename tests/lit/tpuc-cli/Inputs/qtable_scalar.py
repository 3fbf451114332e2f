#!/usr/bin/python3
"""For qtable-scalar.test.

    qtable_scalar.py data DIR      writes DIR/s_K.npz: six inputs "x" of
                                   the [1, 4, 8] head at levels 0.3 .. 3
    qtable_scalar.py check DIR N QTABLE_OUT
        DIR/top_K.npz and DIR/int8_K.npz (tpuc run of the top and the INT8
        tpu module on sample K) hold the one-value output "z"; checks that
        the all-INT8 cosine tpuc qtable printed (QTABLE_OUT) is the cosine
        of the N values stacked, not the mean of per-sample cosines of one
        value (their signs).
"""

import os
import re
import sys

import numpy as np

if sys.argv[1] == "data":
    d = sys.argv[2]
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(3)
    for k, level in enumerate(np.geomspace(0.3, 3.0, 6)):
        np.savez(os.path.join(d, f"s_{k}.npz"),
                 x=(rng.standard_normal((1, 4, 8)) * level).astype(np.float32))
    sys.exit(0)
d, n, log = sys.argv[2], int(sys.argv[3]), sys.argv[4]
top = np.array([np.load(os.path.join(d, f"top_{k}.npz"))["z"].reshape(-1)[0] for k in range(n)],
               np.float64)
q = np.array([np.load(os.path.join(d, f"int8_{k}.npz"))["z"].reshape(-1)[0] for k in range(n)],
             np.float64)
stacked = float(top @ q / (np.linalg.norm(top) * np.linalg.norm(q)))
signs = float(np.mean(np.sign(top) * np.sign(q)))
m = re.search(r"all INT8 \(fallback \w+\): cosine ([0-9.]+)", open(log).read())
printed = float(m.group(1))
print(f"printed {printed:.8f} stacked {stacked:.8f} mean of per-sample signs {signs:.8f}")
ok = abs(printed - stacked) <= 1e-7 and abs(stacked - signs) > 1e-6
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
