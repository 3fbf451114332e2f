"""Writes the input of rounding.mlir (argv[1] = 'input DIR') or checks the
interpreter's outputs against hand-derived values (argv[1] = 'check FILE')."""
import math
import sys

import numpy as np

X = [0.1, 1.0, 1.0004, 65520.0]
INF = math.inf
EXPECTED = {
    # f16 (10-bit mantissa), round to nearest even:
    #   0.1 -> 1638 * 2^-14 = 0.0999755859375 (0.1 * 2^14 = 1638.4)
    #   1.0004 -> 1.0 (1 ulp at 1 is 2^-10 = 0.000977; 0.0004 is below half)
    #   65520 lies halfway between 65504 (max) and 65536 -> even -> inf
    "h32": [0.0999755859375, 1.0, 1.0, INF],
    # h + h in f16 is exact: twice each value.
    "twice32": [0.199951171875, 2.0, 2.0, INF],
    # exp in f32, rounded once to f16: exp(0.0999755859375) = 1.1051439...
    #   = 1131.67 ulps of 2^-10 -> 1132 * 2^-10 = 1.10546875;
    #   e = 2.7182818... = 1391.76 ulps of 2^-9 -> 1392 * 2^-9 = 2.71875
    "e32": [1.10546875, 2.71875, 2.71875, INF],
    # bf16 (7-bit mantissa): 0.1 = 0x3DCCCCCD, low half 0xCCCD > 0x8000
    #   rounds up to 0x3DCD = 0.10009765625; 1.0004 -> 1.0 (ulp 2^-7);
    #   65520 = 0x477FF000 rounds up to 0x4780 = 65536 (bf16 has the f32
    #   exponent range, no overflow)
    "b32": [0.10009765625, 1.0, 1.0, 65536.0],
}

if sys.argv[1] == "input":
    np.savez(sys.argv[2] + "/in.npz", x=np.array(X, dtype=np.float32))
    sys.exit(0)
out = np.load(sys.argv[2])
bad = 0
for name, want in EXPECTED.items():
    got = out[name].astype(np.float64).tolist()
    if got != want:
        print(f"{name}: got {got}, want {want}")
        bad += 1
print("rounding: ok" if not bad else f"rounding: {bad} mismatches")
sys.exit(1 if bad else 0)
