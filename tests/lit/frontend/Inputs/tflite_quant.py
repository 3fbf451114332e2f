#!/usr/bin/python3
"""A small fully quantised (int8) TFLite model and its reference outputs
from TFLite's integer arithmetic, for tflite-quant.test.

    tflite_quant.py OUTDIR
    tflite_quant.py --check OUTDIR DUMP.npz [CODES.npz]
    tflite_quant.py --deconv OUTDIR
    tflite_quant.py --fc OUTDIR

Writes OUTDIR/q.tflite, in.npz (float input "x"), ref_int8.npz (the output
of TFLite's int8 kernels, dequantised) and ref_real.npz (the same network
on real values in float64: what the float import computes), both keyed
"fc" (the tensor the module returns), and ref_codes.npz (every stage's
int8 codes). --check compares a tpusim --dump-all of the INT8 bmodel with
those codes (or CODES.npz) and fails on any difference. --deconv writes a
second model, a TRANSPOSE_CONV (deconv_model), --fc a third, a
FULLY_CONNECTED with per-channel weights (fc_model).

The network: QUANTIZE (x, scale 0.02, zp 3) -> CONV_2D 3x3 (per-channel
weight scales, int32 bias, fused RELU, output zp -128) -> DEPTHWISE_CONV_2D
3x3 (per-channel, fused RELU6 whose bound 6 is code -8 of scale 0.05, zp
-128: inside the code range) -> ADD of the two (different input scales) ->
AVERAGE_POOL_2D 2x2 -> FULLY_CONNECTED (per-tensor) -> DEQUANTIZE.
The integer reference follows TFLite's reference kernels: int32
accumulation, requantisation with QuantizeMultiplier /
MultiplyByQuantizedMultiplier (rounding doubling high multiply, rounding
right shift), ADD with its 20-bit left shift, average pool rounding half
away from zero, clamping to the activation range; every multiplier derived
in double from the float32 scales the model stores, as TFLite does.
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "scripts"))
from tflite_ref import ModelBuilder, conv2d, pool  # noqa: E402

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def quantize_multiplier(m):
    if m == 0:
        return 0, 0
    q, shift = math.frexp(m)
    qf = int(round(q * (1 << 31)))
    if qf == 1 << 31:
        qf //= 2
        shift += 1
    return qf, shift


def srdhm(a, b):
    a = np.asarray(a, np.int64)
    ab = a * np.int64(b)
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    # Division by 2^31 truncating toward zero.
    return np.where(s >= 0, s >> 31, -((-s) >> 31))


def rounding_divide_by_pot(x, e):
    x = np.asarray(x, np.int64)
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def mbqm(x, m, shift):
    left = shift if shift > 0 else 0
    right = -shift if shift <= 0 else 0
    return rounding_divide_by_pot(srdhm(np.asarray(x, np.int64) * (1 << left), m), right)


def requant(acc, real_multipliers, zp_out, lo, hi, axis=-1):
    """acc int64 [..., C]; one multiplier per channel (or one)."""
    out = np.empty_like(acc)
    mults = np.atleast_1d(real_multipliers)
    acc_c = np.moveaxis(acc, axis, -1)
    out_c = np.moveaxis(out, axis, -1)
    for c in range(acc_c.shape[-1]):
        m, s = quantize_multiplier(float(mults[c if len(mults) > 1 else 0]))
        out_c[..., c] = mbqm(acc_c[..., c], m, s)
    return np.clip(out + zp_out, lo, hi)


def q(scale, zp, dim=None):
    """TFLite quantisation parameters as flatc JSON."""
    d = {"scale": list(map(float, np.atleast_1d(scale))),
         "zero_point": [int(zp)] * len(np.atleast_1d(scale))}
    if dim is not None:
        d["quantized_dimension"] = dim
    return d


def sym_weights(rng, shape, axis, std=0.3):
    w = rng.standard_normal(shape) * std
    red = tuple(i for i in range(len(shape)) if i != axis)
    scale = np.abs(w).max(axis=red) / 127 if axis is not None else np.array([np.abs(w).max() / 127])
    bshape = [1] * len(shape)
    if axis is not None:
        bshape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(bshape)), -127, 127).astype(np.int8)
    # float32, as the model stores them; used in double from here on.
    return q, scale.astype(np.float32).astype(np.float64)


def check(outdir, dump, codes="ref_codes.npz"):
    """Compares the int8 codes of tpusim --dump-all's \p dump with the
    reference's, stage by stage (a layer group's inner values are not in
    the dump: each such stage prints "inside a layer group", and the lit
    test names the stages it needs); exits 1 on any difference or when no
    stage is in the dump."""
    ref = np.load(os.path.join(outdir, codes))
    got = np.load(dump)
    # The dump's names: the input's int8 cast and the FC's int8 result.
    # (x_q: of the NCHW form, or of the input itself when QUANTIZE reads it
    # directly.)
    names = {"x_q": ["x_q_nchw_int8", "x_int8"], "fc": ["fc_int8"]}
    bad, seen = 0, 0
    for stage in ref.files:
        found = [n for n in names.get(stage, [stage]) if n in got.files]
        if not found:
            print(f"{stage}: inside a layer group")
            continue
        name = found[0]
        seen += 1
        a = got[name].astype(np.int64).reshape(ref[stage].shape)
        diff = int(np.abs(a - ref[stage]).max())
        print(f"{stage}: max |code difference| {diff}")
        bad += diff != 0
    if not seen:
        sys.exit("tflite_quant: the dump holds none of the reference's stages")
    sys.exit(1 if bad else 0)


def deconv_model(out):
    """OUTDIR/d.tflite: QUANTIZE (scale 0.02, zp 0) -> TRANSPOSE_CONV 3x3
    stride 2 SAME (per-channel weights, int32 bias, output zp 2) ->
    DEQUANTIZE; d_in.npz and d_ref_codes.npz (the codes of TFLite's
    reference: int32 sums, per-channel MultiplyByQuantizedMultiplier)."""
    from tflite_ref import transpose_conv  # noqa: E402
    rng = np.random.default_rng(16)
    f32 = lambda v: float(np.float32(v))
    x = rng.uniform(-1.5, 2.0, size=(1, 4, 4, 3)).astype(np.float32)
    s_in, s_o, zp_o = f32(0.02), f32(0.03), 2
    w_q, w_s = sym_weights(rng, (4, 3, 3, 3), 0)
    bias = rng.standard_normal(4) * 0.2
    b_q = np.round(bias / (s_in * w_s)).astype(np.int32)

    b = ModelBuilder()
    tx = b.tensor("x", [1, 4, 4, 3])
    txq = b.tensor("x_q", [1, 4, 4, 3], dtype="INT8", quant=q(s_in, 0))
    b.op("QUANTIZE", [tx], [txq], "QuantizeOptions", {})
    tshape = b.const("shape", np.array([1, 8, 8, 4]), "INT32")
    tw = b.tensor("w", [4, 3, 3, 3], w_q, "INT8", q(w_s, 0, 0))
    tb = b.tensor("b", [4], b_q, "INT32", q(s_in * w_s, 0, 0))
    ty = b.tensor("tconv", [1, 8, 8, 4], dtype="INT8", quant=q(s_o, zp_o))
    b.op("TRANSPOSE_CONV", [tshape, tw, txq, tb], [ty], "TransposeConvOptions",
         {"padding": "SAME", "stride_h": 2, "stride_w": 2})
    tout = b.tensor("y", [1, 8, 8, 4])
    b.op("DEQUANTIZE", [ty], [tout], "DequantizeOptions", {})
    b.write(os.path.join(out, "d.tflite"), [tx], [tout])

    xq = np.clip(np.round(x / s_in), -128, 127).astype(np.int64)
    acc = transpose_conv(xq.astype(np.float64), w_q.astype(np.float64), None,
                         [1, 8, 8, 4], 2, 2, "SAME").round().astype(np.int64) + b_q
    yq = requant(acc, s_in * w_s / s_o, zp_o, -128, 127)
    nchw = lambda a: np.transpose(a, (0, 3, 1, 2)).astype(np.int64)
    np.savez(os.path.join(out, "d_in.npz"), x=x)
    np.savez(os.path.join(out, "d_ref_codes.npz"), x_q=nchw(xq), tconv=nchw(yq))


def fc_model(out):
    """OUTDIR/f.tflite: QUANTIZE (scale 0.02, zp -3) -> FULLY_CONNECTED of
    two rows with per-channel weights (quantised along the 6 units), int32
    bias, output zp 4 -> DEQUANTIZE; f_in.npz and f_ref_codes.npz."""
    rng = np.random.default_rng(17)
    f32 = lambda v: float(np.float32(v))
    x = rng.uniform(-1.0, 1.2, size=(2, 16)).astype(np.float32)
    s_in, zp_in, s_o, zp_o = f32(0.02), -3, f32(0.05), 4
    w_q, w_s = sym_weights(rng, (6, 16), 0)
    w_s = w_s * np.linspace(0.3, 2.0, 6)  # scales that differ per unit
    w_s = w_s.astype(np.float32).astype(np.float64)
    bias = rng.standard_normal(6) * 0.3
    b_q = np.round(bias / (s_in * w_s)).astype(np.int32)
    b = ModelBuilder()
    tx = b.tensor("x", [2, 16])
    txq = b.tensor("x_q", [2, 16], dtype="INT8", quant=q(s_in, zp_in))
    b.op("QUANTIZE", [tx], [txq], "QuantizeOptions", {})
    tw = b.tensor("w", [6, 16], w_q, "INT8", q(w_s, 0, 0))
    tb = b.tensor("b", [6], b_q, "INT32", q(s_in * w_s, 0, 0))
    ty = b.tensor("fc", [2, 6], dtype="INT8", quant=q(s_o, zp_o))
    b.op("FULLY_CONNECTED", [txq, tw, tb], [ty], "FullyConnectedOptions", {})
    tout = b.tensor("y", [2, 6])
    b.op("DEQUANTIZE", [ty], [tout], "DequantizeOptions", {})
    b.write(os.path.join(out, "f.tflite"), [tx], [tout])

    xq = np.clip(np.round(x / s_in) + zp_in, -128, 127).astype(np.int64)
    acc = (xq - zp_in) @ w_q.astype(np.int64).T + b_q
    yq = requant(acc, s_in * w_s / s_o, zp_o, -128, 127)
    np.savez(os.path.join(out, "f_in.npz"), x=x)
    np.savez(os.path.join(out, "f_ref_codes.npz"), x_q=xq, fc=yq.astype(np.int64))


def main():
    if sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3],
              sys.argv[4] if len(sys.argv) > 4 else "ref_codes.npz")
        return
    if sys.argv[1] == "--deconv":
        deconv_model(sys.argv[2])
        return
    if sys.argv[1] == "--fc":
        fc_model(sys.argv[2])
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(15)
    x = rng.uniform(-2.0, 2.4, size=(1, 8, 8, 3)).astype(np.float32)

    # The model stores float32 scales, and TFLite derives its multipliers
    # from those in double: so does this reference (f32).
    f32 = lambda v: float(np.float32(v))
    s_in, zp_in = f32(0.02), 3
    s_c, zp_c = f32(0.03), -128     # conv output (after RELU: >= 0)
    s_d, zp_d = f32(0.05), -128     # depthwise output (after RELU6: 0..6)
    s_a, zp_a = f32(0.05), -20      # add output
    s_f, zp_f = f32(0.08), 0        # fully connected output

    wc_q, wc_s = sym_weights(rng, (4, 3, 3, 3), 0)
    bc = rng.standard_normal(4) * 0.2
    bc_q = np.round(bc / (s_in * wc_s)).astype(np.int32)
    # Large enough that the RELU6 bound clamps part of the output.
    wd_q, wd_s = sym_weights(rng, (1, 3, 3, 4), 3, std=1.0)
    bd = rng.standard_normal(4) * 0.1
    bd_q = np.round(bd / (s_c * wd_s)).astype(np.int32)
    wf_q, wf_s = sym_weights(rng, (5, 64), None)
    bf = rng.standard_normal(5) * 0.1
    bf_q = np.round(bf / (s_a * wf_s[0])).astype(np.int32)

    b = ModelBuilder()
    tx = b.tensor("x", [1, 8, 8, 3])
    txq = b.tensor("x_q", [1, 8, 8, 3], dtype="INT8", quant=q(s_in, zp_in))
    b.op("QUANTIZE", [tx], [txq], "QuantizeOptions", {})
    twc = b.tensor("wc", [4, 3, 3, 3], wc_q, "INT8", q(wc_s, 0, 0))
    tbc = b.tensor("bc", [4], bc_q, "INT32", q(s_in * wc_s, 0, 0))
    tc = b.tensor("conv", [1, 8, 8, 4], dtype="INT8", quant=q(s_c, zp_c))
    b.op("CONV_2D", [txq, twc, tbc], [tc], "Conv2DOptions",
         {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"})
    twd = b.tensor("wd", [1, 3, 3, 4], wd_q, "INT8", q(wd_s, 0, 3))
    tbd = b.tensor("bd", [4], bd_q, "INT32", q(s_c * wd_s, 0, 0))
    td = b.tensor("dw", [1, 8, 8, 4], dtype="INT8", quant=q(s_d, zp_d))
    b.op("DEPTHWISE_CONV_2D", [tc, twd, tbd], [td], "DepthwiseConv2DOptions",
         {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1,
          "fused_activation_function": "RELU6"})
    ta = b.tensor("add", [1, 8, 8, 4], dtype="INT8", quant=q(s_a, zp_a))
    b.op("ADD", [tc, td], [ta], "AddOptions", {})
    tp = b.tensor("pool", [1, 4, 4, 4], dtype="INT8", quant=q(s_a, zp_a))
    b.op("AVERAGE_POOL_2D", [ta], [tp], "Pool2DOptions",
         {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2})
    twf = b.tensor("wf", [5, 64], wf_q, "INT8", q(wf_s, 0))
    tbf = b.tensor("bf", [5], bf_q, "INT32", q(s_a * wf_s, 0))
    tf_ = b.tensor("fc", [1, 5], dtype="INT8", quant=q(s_f, zp_f))
    b.op("FULLY_CONNECTED", [tp, twf, tbf], [tf_], "FullyConnectedOptions", {})
    ty = b.tensor("y", [1, 5])
    b.op("DEQUANTIZE", [tf_], [ty], "DequantizeOptions", {})
    b.write(os.path.join(out, "q.tflite"), [tx], [ty])

    # --- TFLite int8 reference ---
    xq = np.clip(np.round(x / s_in) + zp_in, -128, 127).astype(np.int64)  # QUANTIZE rounds to nearest
    acc = conv2d((xq - zp_in).astype(np.float64), wc_q.astype(np.float64), None, 1, 1, 1, 1,
                 "SAME").round().astype(np.int64) + bc_q
    cq = requant(acc, s_in * wc_s / s_c, zp_c, max(-128, zp_c), 127)
    acc = conv2d((cq - zp_c).astype(np.float64), wd_q.astype(np.float64), None, 1, 1, 1, 1,
                 "SAME", depthwise_mult=1).round().astype(np.int64) + bd_q
    # RELU6: the activation range [zp, zp + round(6 / s)] = [-128, -8].
    dq = requant(acc, s_c * wd_s / s_d, zp_d, zp_d, zp_d + int(round(6 / s_d)))
    # ADD (TFLite reference, left shift 20).
    twice = 2 * max(s_c, s_d)
    m1, sh1 = quantize_multiplier(s_c / twice)
    m2, sh2 = quantize_multiplier(s_d / twice)
    mo, sho = quantize_multiplier(twice / ((1 << 20) * s_a))
    a1 = mbqm((cq - zp_c) * (1 << 20), m1, sh1)
    a2 = mbqm((dq - zp_d) * (1 << 20), m2, sh2)
    aq = np.clip(mbqm(a1 + a2, mo, sho) + zp_a, -128, 127)
    # AVERAGE_POOL (codes averaged, rounding half away from zero).
    s = aq.reshape(1, 4, 2, 4, 2, 4).sum(axis=(2, 4))
    pq = np.where(s >= 0, (s + 2) // 4, -((-s + 2) // 4))
    pq = np.clip(pq, -128, 127)
    acc = (pq.reshape(1, 64) - zp_a) @ wf_q.astype(np.int64).T + bf_q
    fq = requant(acc, s_a * wf_s[0] / s_f, zp_f, -128, 127)
    y_int8 = (fq - zp_f) * s_f

    # --- the same network on real values (float64) ---
    wc = wc_q * wc_s[:, None, None, None]
    wd = wd_q * wd_s
    wf = wf_q * wf_s[0]
    c = np.maximum(conv2d(x.astype(np.float64), wc, bc_q * s_in * wc_s, 1, 1, 1, 1, "SAME"), 0)
    d = np.clip(conv2d(c, wd, bd_q * s_c * wd_s, 1, 1, 1, 1, "SAME", depthwise_mult=1), 0, 6)
    p = pool(c + d, 2, 2, 2, 2, "VALID", "avg")
    y_real = p.reshape(1, 64) @ wf.T + bf_q * s_a * wf_s[0]

    np.savez(os.path.join(out, "in.npz"), x=x)
    # The int8 codes of every stage (NCHW, as tpusim --dump-all writes the
    # module's values), for the bit-exactness checks.
    nchw = lambda a: np.transpose(a, (0, 3, 1, 2)).astype(np.int64)
    np.savez(os.path.join(out, "ref_codes.npz"), x_q=nchw(xq), conv=nchw(cq), dw=nchw(dq),
             add=nchw(aq), pool=nchw(pq), fc=fq.astype(np.int64))
    # Keyed "fc": the DEQUANTIZE is an identity on real values, so the
    # module returns the FULLY_CONNECTED's value, named after its tensor.
    np.savez(os.path.join(out, "ref_int8.npz"), fc=y_int8.astype(np.float32))
    np.savez(os.path.join(out, "ref_real.npz"), fc=y_real.astype(np.float32))
    print("int8 reference:", np.round(y_int8, 4).tolist())
    print("real reference:", np.round(y_real, 4).tolist())


if __name__ == "__main__":
    main()
