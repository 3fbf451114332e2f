#!/usr/bin/python3
"""How far the chip's requantisation is from TFLite's reference int8
arithmetic, per requantisation the quantised TFLite operators use (the
numbers of compiler/docs/tflite-support.md, "Rounding").

    tflite_rounding.py [--samples N] [--seed S]

For real multipliers M (those of tests/lit/frontend/Inputs/tflite_quant.py's
model and a sweep over the usual range), int32 accumulators drawn uniformly
in +-2^k (k chosen so the result spans the int8 range), three ways to get
round(acc * M):
  tflite  QuantizeMultiplier (31-bit mantissa) then MultiplyByQuantizedMultiplier:
          SaturatingRoundingDoublingHighMul (round half away from zero at
          2^31) then RoundingDivideByPOT (half away from zero): two roundings;
  chip    our lowering: getScaleAndShift(M, 32 bits) (the best multiplier
          over shifts -32..30), one RightShiftRound of the 64-bit product,
          half up (tpu::kInt8RoundMode);
  one     TFLite's multiplier and shift, one rounding half away from zero
          (what one RQ1 command can do with TFLite's parameters).
Prints per M the share of results that differ from tflite and the largest
difference in codes.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "lit", "frontend", "Inputs"))
from tflite_quant import mbqm, quantize_multiplier  # noqa: E402


def get_scale_and_shift(scale, bitwidth=32):
    """isa::getScaleAndShift."""
    limit = 2.0 ** (bitwidth - 1) - 1
    best, mult, shift = float("inf"), 0, 0
    for n in range(-32, 31):
        m = round(scale * 2.0 ** n)
        if not abs(m) < limit:
            continue
        err = abs(m * 2.0 ** -n - scale)
        if err < best:
            best, mult, shift = err, int(m), n
    return mult, shift


def right_shift_round(x, s, mode):
    """isa::rightShiftRound for s > 0 (arbitrary-precision ints)."""
    q = x >> s
    r = x & ((1 << s) - 1)
    half = 1 << (s - 1)
    if mode == "half_up":
        up = r >= half
    else:  # half away from zero
        up = np.where(x >= 0, r >= half, r > half)
    return q + up.astype(object)


def chip(acc, real):
    m, n = get_scale_and_shift(real)
    return right_shift_round(acc.astype(object) * m, n, "half_up")


def one_rounding(acc, real):
    m, e = quantize_multiplier(real)  # real = m * 2^(e - 31)
    return right_shift_round(acc.astype(object) * m, 31 - e, "away")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    # tflite_quant.py: conv s_in * s_w / s_out with s_w ~ 0.005..0.02, the
    # depthwise, the fully connected; then a sweep.
    mults = [0.02 * 0.0123 / 0.03, 0.03 * 0.0171 / 0.025, 0.05 * 0.0094 / 0.04]
    mults += [float(v) for v in 2.0 ** np.arange(-14, 0, 1.37)]
    print(f"{'multiplier':>12} {'tflite shift':>12} {'chip != tflite':>15} {'max':>4}"
          f" {'one != tflite':>14} {'max':>4}")
    for real in mults:
        span = int(min(2 ** 30, 128 / real))
        acc = rng.integers(-span, span, size=args.samples, dtype=np.int64)
        m, e = quantize_multiplier(real)
        ref = mbqm(acc, m, e).astype(object)
        c = chip(acc, real)
        o = one_rounding(acc, real)
        dc = np.abs((c - ref).astype(np.int64))
        do = np.abs((o - ref).astype(np.int64))
        print(f"{real:12.6g} {-e:12d} {100 * np.mean(dc > 0):14.4f}% {dc.max():4d}"
              f" {100 * np.mean(do > 0):13.4f}% {do.max():4d}")


if __name__ == "__main__":
    main()
