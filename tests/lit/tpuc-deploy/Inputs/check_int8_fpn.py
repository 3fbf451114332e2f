"""Checks the INT8 resize, concat and deconv of make_int8_fpn.py's model
against numpy derivations from the calibration table and the ONNX weights
(compiler/docs/design.md "INT8"): the tpu interpreter's codes
(tpuc run --dump-all of model_tpu.mlir), its int8 filters and (OC, 4)
requantisation records must be what the formulas give, exactly.

    check_int8_fpn.py ONNX CALI_TABLE TPU_WEIGHTS.npz TPU_DUMP.npz
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import int8_table

onnx_path, table_path, weights_path, dump_path = sys.argv[1:5]
model = onnx.load(onnx_path)
init = {t.name: numpy_helper.to_array(t).astype(np.float64)
        for t in model.graph.initializer}
table = int8_table.load(table_path)
weights = np.load(weights_path)
dump = np.load(dump_path)
failures = []


def check(what, got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        failures.append(f"{what}: shape {got.shape} != {want.shape}")
        return
    bad = np.nonzero(got.astype(np.int64) != want.astype(np.int64))
    if bad[0].size:
        i = tuple(b[0] for b in bad)
        failures.append(f"{what}: {bad[0].size} of {got.size} differ, first at "
                        f"{i}: {got[i]} vs {want[i]}")


def qtype(name):
    return int8_table.symmetric(table, name)


def round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def saturate(x, signed):
    return np.clip(x, -128, 127) if signed else np.clip(x, 0, 255)


def shift_half_up(x, r):
    """x / 2^r rounded half up (toward +inf), integers (RQ1's HalfUp)."""
    if r <= 0:
        return x << -r
    return (x + (1 << (r - 1))) >> r


# Nearest 2x resize (asymmetric, floor): code copies in the input's type.
a = dump["a"]
check("resize ua", dump["ua"], np.repeat(np.repeat(a, 2, axis=2), 2, axis=3))
if dump["ua"].dtype != a.dtype:
    failures.append(f"resize ua: dtype {dump['ua'].dtype}, input {a.dtype}")

# Concat of inputs of different scales: each requantised to the concat's
# calibrated scale, round half away from zero, saturated.
s_cat, cat_signed = qtype("cat")
parts = []
for name, src in (("ua", "a"), ("b", "b")):
    s_in, _ = qtype(src)
    parts.append(saturate(round_away(dump[name].astype(np.float64) * s_in / s_cat),
                          cat_signed))
check("concat cat", dump["cat"], np.concatenate(parts, axis=1))


def deconv(name, x_name, w, bias, out_name, out_signed_expected):
    """A (IC, OC, k, k) stride-k transposed conv: per output channel int8
    weights max|w| / 127, int32 bias b / (s_w s_in), records [bias, m,
    -rshift, 0] with m 2^-rshift ~ s_w s_in / s_out; int32 sum, + bias,
    RQ1 half up, saturated."""
    s_in, _ = qtype(x_name)
    s_out, out_signed = qtype(out_name)
    assert out_signed == out_signed_expected, (out_name, out_signed)
    ic, oc, kh, kw = w.shape
    sw = np.abs(w).max(axis=(0, 2, 3)) / 127.0
    wq = np.clip(round_away(w / sw[None, :, None, None]), -127, 127)
    check(name + " filter", weights[name + "_filter_int8"], wq)
    rec = weights[name + "_requant"].astype(np.int64)
    check(name + " bias", rec[:, 0], round_away(bias / (sw * s_in)))
    check(name + " zero point", rec[:, 3], np.zeros(oc))
    # The multiplier is s_w s_in / s_out at the record's shift, rounded to
    # the nearest integer (the shift is bounded, so small scales keep fewer
    # bits).
    exact = sw * s_in / s_out * np.exp2(-rec[:, 2].astype(np.float64))
    err = np.abs(rec[:, 1] - exact).max()
    if err > 0.5 + 1e-6:
        failures.append(f"{name} multiplier: {err} from the scale")
    x = dump[x_name].astype(np.int64)
    n, _, ih, iw = x.shape
    acc = np.zeros((n, oc, (ih - 1) * kh + kh, (iw - 1) * kw + kw), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            acc[:, :, ky::kh, kx::kw] += np.einsum(
                "nihw,io->nohw", x, wq[:, :, ky, kx].astype(np.int64))
    acc += rec[None, :, 0, None, None]
    y = np.zeros_like(acc)
    for c in range(oc):
        y[:, c] = shift_half_up(acc[:, c] * rec[c, 1], int(-rec[c, 2]))
    check(name + " output", dump[out_name], saturate(y, out_signed))


deconv("d1", "cat", init["wd1"], init["bd1"], "d1", False)
deconv("d2", "d1", init["wd2"], init["bd2"], "d2", True)

if failures:
    sys.exit("\n".join(failures))
print("check_int8_fpn: resize, concat, 2 deconvs exact")
