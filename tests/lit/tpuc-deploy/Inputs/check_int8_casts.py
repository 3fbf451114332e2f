"""Checks the float <-> INT8 boundary casts of make_int8_fpn.py's model
deployed with conv b in F16 (design.md "INT8", rq0 / dq0) against numpy:
the quantising cast of the f32 input x by x's threshold, b's f16 output
quantised straight to the concat's type (its consumer's: the concat's
inputs differ), both sat(round_half_away(fl32(x * fl32(1 / s)))), and the
output's dequantising cast fl32(q * fl32(s)) of the sigmoid table's codes.

    check_int8_casts.py CALI_TABLE INPUT.npz TPU_DUMP.npz [--asymmetric]

With --asymmetric the types are deploy --asymmetric's (scale (max - min) /
255 over [min, max] widened to hold 0, zero point round(-128 - min /
scale)), rq0 adds the zero point before rounding (fl32) and dq0 subtracts
it; the deconvs then run in F32 (their input zero point is not 0), so d2's
f32 result is quantised for the sigmoid table by d2's type as well.
"""
import sys

import numpy as np

import int8_table

table_path, input_path, dump_path = sys.argv[1:4]
asym = "--asymmetric" in sys.argv[4:]
table = int8_table.load(table_path)
dump = np.load(dump_path)
failures = []


def round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def qtype(name):
    """(scale, signed, zero point)."""
    th, lo, hi = table[name]
    if asym:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        scale = max(hi - lo, 1e-5) / 255.0
        zp = int(np.clip(round_away(-128.0 - lo / scale), -128, 127))
        return scale, True, zp
    return (*int8_table.symmetric(table, name), 0)


def rq0(x, scale, signed, zp):
    # sat(round_half_away(fl32(fl32(x * fl32(1 / s)) + zp)))
    v = np.float32(x) * np.float32(1.0 / scale)
    v = (v + np.float32(zp)).astype(np.float64)
    q = round_away(v)
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
s_y, y_signed, zp_y = qtype("y")
codes = dump["y_int8" if y_signed else "y_uint8"].astype(np.int64)
check("y", dump["y"], (codes - zp_y).astype(np.float32) * np.float32(s_y))
if asym:
    check("d2_int8", dump["d2_int8"], rq0(dump["d2"], *qtype("d2")))
if failures:
    sys.exit("\n".join(failures))
print("check_int8_casts: x_int8, b_int8 (concat's scale), y%s exact"
      % (", d2_int8 (asymmetric)" if asym else ""))
