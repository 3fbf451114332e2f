"""The fused table of make_lut_chain.py's chain, derived with numpy from the
calibration table: for each raw byte b of c1's int8 code q, y = 0.8 *
hardswish(q * s_c1) + 0.3 in double, then round_half_away(y / s_lab)
saturated (one rounding; no intermediate hs / scaled codes).

    check_lut_chain.py CALI_TABLE TPU_WEIGHTS.npz [--depthwise]

With --depthwise (make_lut_chain.py --depthwise) the block's output is the
skewed type a depthwise reader gets: [min, th] in the 256 int8 codes,
scale (th - min) / 255, zero point round_half_away(-128 - min / scale),
and the block shifts by 0.1.
"""
import sys

import numpy as np

import int8_table

table = int8_table.load(sys.argv[1])
depthwise = "--depthwise" in sys.argv[3:]


def round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def qtype(name):
    return (*int8_table.symmetric(table, name), 0)


s_in, in_signed, _ = qtype("c1")
assert in_signed, "c1 is expected signed"
if depthwise:
    th, lo, _ = table["lab"]
    assert -th < lo < 0, "lab is expected skewed"
    s_out = (th - lo) / 255.0
    zp = int(np.clip(round_away(-128.0 - lo / s_out), -128, 127))
    out_signed = True
    print(f"check_lut_chain: lab scale {s_out:.9g} zero point {zp}")
else:
    s_out, out_signed, zp = qtype("lab")
codes = np.arange(256).astype(np.uint8).view(np.int8).astype(np.float64)
x = codes * s_in
y = 0.8 * (x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)) + (0.1 if depthwise else 0.3)
q = round_away(y / s_out + zp)
q = np.clip(q, -128, 127) if out_signed else np.clip(q, 0, 255)
got = np.load(sys.argv[2])["lab_lut"].astype(np.float64)
bad = np.nonzero(got != q)[0]
if bad.size:
    sys.exit(f"fused table differs at bytes {bad[:5]}: {got[bad[:5]]} vs {q[bad[:5]]}")
print("check_lut_chain: fused table exact")
