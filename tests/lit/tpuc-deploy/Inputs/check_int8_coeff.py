"""Checks the INT8 coefficients of int8_conv.onnx's bmodel byte for byte.

    check_int8_coeff.py MODEL.onnx CALI.table FINAL.mlir DIS.json

Reads each tpu.Weight's address from <stem>_final.mlir, the coefficient
blob from `tpu-dis --json` (the stage's coeff address and hex data), and
compares the bytes at each weight's address with values recomputed here
from the ONNX weights and the calibration table with the formulas of
compiler/docs/design.md "INT8":

  * activation types: x and r are non-negative and read only by convs, one
    of them depthwise: int8, zero point -128, scale th / 255; y and z have
    negative minima: int8, zero point 0, scale th / 127;
  * filter: s_w[oc] = max |w[oc]| / 127, q = round_half_away(w / s_w)
    clamped to [-127, 127]; the normal conv's layout is conv_64ic
    [oc][ic / 64][kh][kw][ic % 64] (zero-padded to 64 input channels), the
    depthwise layout [c][kh][kw];
  * records (OC, 4) int32: [bias, multiplier, -rshift, output zero point]
    stored part by part (layout int8_records): the OC biases, then the OC
    triples [multiplier, -rshift, zp]; with bias = round_half_away(b / (s_w s_in)) - zp_in * sum(q) and
    multiplier / 2^rshift = getScaleAndShift(s_w s_in / s_out) (the
    search of isa/lib/Numerics.cpp: n from -32 to 30, m = round(s 2^n) half
    away, |m| < 2^31 - 1, least |m 2^-n - s|, the first n on ties).

Prints one line per weight ("<name>: <n> bytes at +0x.. match") and exits
1 on the first difference, naming the weight and element.
"""
import json
import math
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def round_away(x):
    x = np.asarray(x, dtype=np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def scale_and_shift(scale, bitwidth=32):
    limit = 2.0 ** (bitwidth - 1) - 1.0
    best, bm, bn = math.inf, 0, 0
    for n in range(-32, 31):
        m = float(round_away(math.ldexp(scale, n)))
        if not abs(m) < limit:
            continue
        err = abs(math.ldexp(m, -n) - scale)
        if err < best:
            best, bm, bn = err, int(m), n
    return bm, bn


def main():
    onnx_path, table_path, final_path, dis_path = sys.argv[1:5]
    w = {i.name: numpy_helper.to_array(i)
         for i in onnx.load(onnx_path).graph.initializer}
    table = {}
    for line in open(table_path):
        if line.startswith("#") or not line.strip():
            continue
        name, th, mn, mx = line.split()
        table[name] = (float(th), float(mn), float(mx))

    def qtype(name):
        th, mn, _ = table[name]
        th = max(th, 1e-5)
        if name in ("x", "r"):
            assert mn >= 0, name
            return th / 255.0, -128
        assert mn < 0, name
        return th / 127.0, 0

    addrs = {}
    for m in re.finditer(r'"tpu.Weight"\(\) \{addr = (\d+) : i64, '
                         r'layout = "(\w+)", name = "(\w+)"\}', open(final_path).read()):
        addrs[m.group(3)] = (int(m.group(1)), m.group(2))
    stage = json.load(open(dis_path))["nets"][0]["stages"][0]
    base = int(stage["coeff"]["address"], 16)
    blob = bytes.fromhex(stage["coeff"]["data"])

    def check(name, expect, layout):
        addr, got_layout = addrs[name]
        if got_layout != layout:
            sys.exit(f"{name}: layout {got_layout}, expected {layout}")
        off = addr - base
        got = blob[off:off + len(expect)]
        if got != expect:
            i = next(i for i in range(len(expect)) if got[i:i + 1] != expect[i:i + 1])
            sys.exit(f"{name}: byte {i} of {len(expect)} at +{off:#x} is "
                     f"{got[i]:#04x}, expected {expect[i]:#04x}")
        print(f"{name}: {len(expect)} bytes at +{off:#x} match")

    # (result name, weight, bias, input name, depthwise)
    for out, wn, bn, inp, dw in [("r", "w", "b", "x", False),
                                 ("y", "wd", "bd", "r", True),
                                 ("z", "w0", "b0", "x", True)]:
        W, B = w[wn].astype(np.float32), w[bn].astype(np.float32)
        oc, icg, kh, kw = W.shape
        s_in, zp_in = qtype(inp)
        s_out, zp_out = qtype(out)
        flat = W.reshape(oc, -1)
        sw = np.abs(flat).max(axis=1).astype(np.float64) / 127.0
        sw[sw == 0] = 1.0
        q = np.clip(round_away(flat.astype(np.float64) / sw[:, None]), -127, 127)
        rec = np.zeros((oc, 4), dtype=np.int64)
        for c in range(oc):
            bias = int(round_away(float(B[c]) / (sw[c] * s_in))) - zp_in * int(q[c].sum())
            m, n = scale_and_shift(sw[c] * s_in / s_out)
            rec[c] = [bias, m, -n, zp_out]
        split = np.concatenate([rec[:, 0], rec[:, 1:].reshape(-1)])
        check(f"{out}_requant", split.astype("<i4").tobytes(), "int8_records")
        if dw:
            check(f"{out}_filter_int8", q.astype(np.int8).tobytes(), "depthwise")
        else:
            blocks = -(-icg // 64)
            lay = np.zeros((oc, blocks, kh * kw, 64), dtype=np.int8)
            qq = q.reshape(oc, icg, kh * kw)
            for i in range(icg):
                lay[:, i // 64, :, i % 64] = qq[:, i, :]
            check(f"{out}_filter_int8", lay.tobytes(), "conv_64ic")
        print(f"{out}: multipliers {list(rec[:, 1])} rshifts {list(-rec[:, 2])}")


if __name__ == "__main__":
    main()
