"""Checks the float <-> INT8 boundary casts of make_int8_fpn.py's model
deployed with conv b in F16 (design.md "INT8", rq0 / dq0) against numpy:
the quantising cast of the f32 input x by x's threshold, b's f16 output
quantised straight to the concat's type (its consumer's: the concat's
inputs differ), both sat(round_half_away(fl32(x * fl32(1 / s)))), and the
output's dequantising cast fl32(q * fl32(s)) of the sigmoid table's codes.

    check_int8_casts.py CALI_TABLE INPUT.npz TPU_DUMP.npz
"""
import sys

import numpy as np

table_path, input_path, dump_path = sys.argv[1:4]
table = {}
for line in open(table_path):
    if line.startswith("#") or not line.strip():
        continue
    name, th, lo, hi = line.split()[:4]
    table[name] = (max(float(th), 1e-5), float(lo))
dump = np.load(dump_path)
failures = []


def qtype(name):
    th, lo = table[name]
    return (th / 255.0, False) if lo >= 0 else (th / 127.0, True)


def rq0(x, scale, signed):
    v = np.float32(x) * np.float32(1.0 / scale)  # fl32(x * fl32(1 / s))
    q = np.sign(v) * np.floor(np.abs(v.astype(np.float64)) + 0.5)
    return np.clip(q, -128, 127) if signed else np.clip(q, 0, 255)


def check(what, got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failures.append(f"{what}: shape {got.shape} != {want.shape}")
        return
    bad = np.nonzero(got != want)
    if bad[0].size:
        i = tuple(b[0] for b in bad)
        failures.append(f"{what}: {bad[0].size} of {got.size} differ, first at "
                        f"{i}: {got[i]} vs {want[i]}")


x = np.load(input_path)["x"]
check("x_int8", dump["x_int8"], rq0(x, *qtype("x")))
# b's f16 values (the dump holds them as float32, exactly).
check("b_int8", dump["b_int8"], rq0(dump["b"].astype(np.float32), *qtype("cat")))
s_y, _ = qtype("y")
check("y", dump["y"],
      dump["y_uint8"].astype(np.float32) * np.float32(s_y))
if failures:
    sys.exit("\n".join(failures))
print("check_int8_casts: x_int8, b_int8 (concat's scale), y exact")
