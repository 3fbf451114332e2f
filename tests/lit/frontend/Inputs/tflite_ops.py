#!/usr/bin/python3
"""Small TFLite models, one or a few operators each, through the TFLite
frontend, against scripts/tflite_ref.py (TFLite's operators in numpy, NHWC,
float64).

    tflite_ops.py --work DIR [--tpuc tpuc] [CASE...]

For each case: writes DIR/CASE.tflite (JSON -> flatc), random float inputs
and the reference outputs, runs `tpuc transform` + `tpuc run` and prints
"CASE: PASS cosine=... maxrel=..." or "CASE: FAIL ...". Pass: cosine >=
0.99999 and max |tpuc - ref| <= 1e-4 * max |ref| (tpuc computes in float32,
the reference in float64). Exit status 1 if any case fails.
Also prints "CASE: permutes=N" (top.Permute ops left after transform), for
the layout checks, and for a re-batched case (REBATCH) "CASE: batch N
against batch 1: max |diff| D", each sample run alone through the batch-1
import against its row of the re-batched run.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "scripts"))
import tflite_ref  # noqa: E402
from tflite_ref import ModelBuilder  # noqa: E402

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def rnd(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def conv_opts(padding="SAME", s=(1, 1), d=(1, 1), act="NONE"):
    return {"padding": padding, "stride_h": s[0], "stride_w": s[1],
            "dilation_h_factor": d[0], "dilation_w_factor": d[1],
            "fused_activation_function": act}


def simple(rng, in_shape, build):
    """One input x; build(b, x) returns the output tensor index."""
    b = ModelBuilder()
    x = b.tensor("x", in_shape)
    y = build(b, x)
    return b, [x], [y], {"x": rnd(rng, *in_shape)}


@case
def conv_same_relu(rng):
    def build(b, x):
        y = b.tensor("y", [1, 8, 8, 4])
        b.op("CONV_2D", [x, b.const("w", rnd(rng, 4, 3, 3, 3)), b.const("b", rnd(rng, 4))], [y],
             "Conv2DOptions", conv_opts(act="RELU"))
        return y
    return simple(rng, [1, 8, 8, 3], build)


@case
def conv_valid_stride2(rng):
    def build(b, x):
        y = b.tensor("y", [1, 4, 3, 5])
        b.op("CONV_2D", [x, b.const("w", rnd(rng, 5, 3, 2, 3)), -1], [y],
             "Conv2DOptions", conv_opts("VALID", (2, 3)))
        return y
    return simple(rng, [1, 9, 9, 3], build)


@case
def conv_dilated_grouped(rng):
    def build(b, x):
        y = b.tensor("y", [1, 7, 7, 6])
        b.op("CONV_2D", [x, b.const("w", rnd(rng, 6, 3, 3, 2)), b.const("b", rnd(rng, 6))], [y],
             "Conv2DOptions", conv_opts("SAME", (1, 1), (2, 2), "RELU6"))
        return y
    return simple(rng, [1, 7, 7, 4], build)


@case
def depthwise_mult2(rng):
    def build(b, x):
        y = b.tensor("y", [1, 4, 4, 6])
        b.op("DEPTHWISE_CONV_2D", [x, b.const("w", rnd(rng, 1, 3, 3, 6)), b.const("b", rnd(rng, 6))],
             [y], "DepthwiseConv2DOptions",
             dict(conv_opts("SAME", (2, 2), act="RELU6"), depth_multiplier=2))
        return y
    return simple(rng, [1, 7, 7, 3], build)


@case
def transpose_conv_same(rng):
    def build(b, x):
        y = b.tensor("y", [1, 8, 8, 5])
        b.op("TRANSPOSE_CONV", [b.const("shape", np.array([1, 8, 8, 5]), "INT32"),
                                b.const("w", rnd(rng, 5, 3, 3, 3)), x, b.const("b", rnd(rng, 5))],
             [y], "TransposeConvOptions", {"padding": "SAME", "stride_h": 2, "stride_w": 2})
        return y
    return simple(rng, [1, 4, 4, 3], build)


@case
def transpose_conv_valid(rng):
    def build(b, x):
        y = b.tensor("y", [1, 9, 11, 2])
        b.op("TRANSPOSE_CONV", [b.const("shape", np.array([1, 9, 11, 2]), "INT32"),
                                b.const("w", rnd(rng, 2, 3, 3, 3)), x],
             [y], "TransposeConvOptions", {"padding": "VALID", "stride_h": 2, "stride_w": 3})
        return y
    return simple(rng, [1, 4, 4, 3], build)


@case
def fully_connected(rng):
    def build(b, x):
        y = b.tensor("y", [2, 5])
        b.op("FULLY_CONNECTED", [x, b.const("w", rnd(rng, 5, 10)), b.const("b", rnd(rng, 5))], [y],
             "FullyConnectedOptions", {"fused_activation_function": "RELU"})
        return y
    return simple(rng, [2, 10], build)


@case
def fully_connected_keep_dims(rng):
    def build(b, x):
        y = b.tensor("y", [1, 3, 5])
        b.op("FULLY_CONNECTED", [x, b.const("w", rnd(rng, 5, 10)), -1], [y],
             "FullyConnectedOptions", {"keep_num_dims": True})
        return y
    return simple(rng, [1, 3, 10], build)


@case
def batch_matmul_adj(rng):
    b = ModelBuilder()
    x = b.tensor("x", [2, 4, 3])
    z = b.tensor("z", [2, 5, 4])
    y = b.tensor("y", [2, 3, 5])
    b.op("BATCH_MATMUL", [x, z], [y], "BatchMatMulOptions", {"adj_x": True, "adj_y": True})
    return b, [x, z], [y], {"x": rnd(rng, 2, 4, 3), "z": rnd(rng, 2, 5, 4)}


@case
def pools(rng):
    def build(b, x):
        a = b.tensor("avg", [1, 4, 4, 3])
        b.op("AVERAGE_POOL_2D", [x], [a], "Pool2DOptions",
             {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 3,
              "filter_width": 3})
        y = b.tensor("y", [1, 3, 2, 3])
        b.op("MAX_POOL_2D", [a], [y], "Pool2DOptions",
             {"padding": "VALID", "stride_h": 1, "stride_w": 2, "filter_height": 2,
              "filter_width": 2, "fused_activation_function": "RELU"})
        return y
    return simple(rng, [1, 7, 7, 3], build)


@case
def conv_chain_layout(rng):
    """conv -> elementwise ops with NHWC-broadcast constants -> pool -> conv:
    all in NCHW; only the input and output conversions remain."""
    def build(b, x):
        c1 = b.tensor("c1", [1, 8, 8, 4])
        b.op("CONV_2D", [x, b.const("w1", rnd(rng, 4, 3, 3, 3)), b.const("b1", rnd(rng, 4))], [c1],
             "Conv2DOptions", conv_opts())
        t = c1
        chain = [("ADD", rnd(rng, 4), "AddOptions"), ("MUL", np.float32(0.7), "MulOptions"),
                 ("MAXIMUM", rnd(rng, 1, 1, 4), None), ("MINIMUM", np.float32(2.0), None),
                 ("SUB", rnd(rng, 8, 1, 4), "SubOptions"),
                 ("DIV", (np.abs(rnd(rng, 4)) + 1).astype(np.float32), "DivOptions"),
                 ("PRELU", rnd(rng, 1, 1, 4, scale=0.3), None)]
        for k, (code, const, opts) in enumerate(chain):
            out = b.tensor(f"e{k}", [1, 8, 8, 4])
            b.op(code, [t, b.const(f"k{k}", const)], [out], opts, {} if opts else None)
            t = out
        for k, (code, opts, o) in enumerate([("LEAKY_RELU", "LeakyReluOptions", {"alpha": 0.1}),
                                             ("HARD_SWISH", None, None), ("TANH", None, None)]):
            out = b.tensor(f"u{k}", [1, 8, 8, 4])
            b.op(code, [t], [out], opts, o)
            t = out
        p = b.tensor("p", [1, 4, 4, 4])
        b.op("MAX_POOL_2D", [t], [p], "Pool2DOptions",
             {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2,
              "filter_width": 2})
        y = b.tensor("y", [1, 4, 4, 2])
        b.op("CONV_2D", [p, b.const("w2", rnd(rng, 2, 1, 1, 4)), b.const("b2", rnd(rng, 2))], [y],
             "Conv2DOptions", conv_opts(act="TANH"))
        return y
    return simple(rng, [1, 8, 8, 3], build)


@case
def concat_layouts(rng):
    b = ModelBuilder()
    x = b.tensor("x", [1, 5, 5, 2])
    c1 = b.tensor("c1", [1, 5, 5, 3])
    c2 = b.tensor("c2", [1, 5, 5, 4])
    b.op("CONV_2D", [x, b.const("w1", rnd(rng, 3, 1, 1, 2)), -1], [c1], "Conv2DOptions", conv_opts())
    b.op("CONV_2D", [x, b.const("w2", rnd(rng, 4, 3, 3, 2)), -1], [c2], "Conv2DOptions", conv_opts())
    cat = b.tensor("cat", [1, 5, 5, 7])
    b.op("CONCATENATION", [c1, c2], [cat], "ConcatenationOptions",
         {"axis": -1, "fused_activation_function": "RELU"})
    cat2 = b.tensor("cat2", [1, 10, 5, 7])
    b.op("CONCATENATION", [cat, cat], [cat2], "ConcatenationOptions", {"axis": 1})
    return b, [x], [cat2], {"x": rnd(rng, 1, 5, 5, 2)}


@case
def reductions(rng):
    b = ModelBuilder()
    x = b.tensor("x", [2, 3, 4, 5])
    outs = []
    for k, (code, axes, keep) in enumerate([("MEAN", [1, 2], True), ("SUM", [3], False),
                                            ("REDUCE_MAX", [0, 2], False),
                                            ("REDUCE_MIN", [-1], True)]):
        shape = [d if i not in [a % 4 for a in axes] else 1 for i, d in enumerate([2, 3, 4, 5])]
        if not keep:
            shape = [d for i, d in enumerate([2, 3, 4, 5]) if i not in [a % 4 for a in axes]]
        y = b.tensor(f"r{k}", shape)
        b.op(code, [x, b.const(f"axes{k}", np.array(axes), "INT32")], [y], "ReducerOptions",
             {"keep_dims": keep})
        outs.append(y)
    return b, [x], outs, {"x": rnd(rng, 2, 3, 4, 5)}


@case
def shapes(rng):
    b = ModelBuilder()
    x = b.tensor("x", [1, 6, 4])
    r = b.tensor("r", [1, 4, 6])
    b.op("RESHAPE", [x, b.const("shape", np.array([1, 4, -1]), "INT32")], [r])
    t = b.tensor("t", [1, 6, 4])
    b.op("TRANSPOSE", [r, b.const("perm", np.array([0, 2, 1]), "INT32")], [t])
    e = b.tensor("e", [1, 6, 1, 4])
    b.op("EXPAND_DIMS", [t, b.const("axis", np.array(-2), "INT32")], [e], "ExpandDimsOptions")
    s = b.tensor("s", [6, 1, 4])
    b.op("SQUEEZE", [e], [s], "SqueezeOptions", {"squeeze_dims": [0]})
    y = b.tensor("y", [6, 4])
    b.op("SQUEEZE", [s], [y], "SqueezeOptions", {})
    return b, [x], [y], {"x": rnd(rng, 1, 6, 4)}


@case
def pads(rng):
    b = ModelBuilder()
    x = b.tensor("x", [1, 3, 4, 2])
    p = b.tensor("p", [1, 5, 5, 2])
    b.op("PAD", [x, b.const("pads", np.array([[0, 0], [1, 1], [0, 1], [0, 0]]), "INT32")], [p],
         "PadOptions")
    y = b.tensor("y", [1, 6, 7, 3])
    b.op("PADV2", [p, b.const("pads2", np.array([[0, 0], [1, 0], [1, 1], [0, 1]]), "INT32"),
                   b.const("value", np.array([0.5]))], [y], "PadV2Options")
    return b, [x], [y], {"x": rnd(rng, 1, 3, 4, 2)}


@case
def slices(rng):
    b = ModelBuilder()
    x = b.tensor("x", [4, 6, 5])
    s = b.tensor("s", [2, 2, 5])
    b.op("STRIDED_SLICE", [x, b.const("begin", np.array([1, 5, 0]), "INT32"),
                           b.const("end", np.array([4, 1, 0]), "INT32"),
                           b.const("strides", np.array([2, -2, 1]), "INT32")], [s],
         "StridedSliceOptions", {"end_mask": 4})
    k = b.tensor("k", [2, 5])
    b.op("STRIDED_SLICE", [s, b.const("begin2", np.array([0, 1]), "INT32"),
                           b.const("end2", np.array([0, 2]), "INT32"),
                           b.const("strides2", np.array([1, 1]), "INT32")], [k],
         "StridedSliceOptions", {"begin_mask": 1, "end_mask": 1, "shrink_axis_mask": 2})
    y = b.tensor("y", [1, 4])
    b.op("SLICE", [k, b.const("b3", np.array([1, 1]), "INT32"),
                   b.const("size", np.array([-1, 4]), "INT32")], [y], "SliceOptions")
    return b, [x], [y], {"x": rnd(rng, 4, 6, 5)}


@case
def gather(rng):
    b = ModelBuilder()
    x = b.tensor("x", [3, 5, 2])
    y = b.tensor("y", [3, 4, 2])
    b.op("GATHER", [x, b.const("idx", np.array([4, 0, 0, 2]), "INT32")], [y], "GatherOptions",
         {"axis": 1})
    return b, [x], [y], {"x": rnd(rng, 3, 5, 2)}


@case
def softmax_beta(rng):
    def build(b, x):
        y = b.tensor("y", [2, 7])
        b.op("SOFTMAX", [x], [y], "SoftmaxOptions", {"beta": 0.5})
        return y
    return simple(rng, [2, 7], build)


@case
def resizes(rng):
    b = ModelBuilder()
    x = b.tensor("x", [1, 4, 5, 2])
    outs = []
    for k, (code, opts, size) in enumerate([
            ("RESIZE_BILINEAR", {}, [8, 9]),
            ("RESIZE_BILINEAR", {"half_pixel_centers": True}, [7, 10]),
            ("RESIZE_BILINEAR", {"align_corners": True}, [7, 9]),
            ("RESIZE_NEAREST_NEIGHBOR", {}, [8, 10]),
            ("RESIZE_NEAREST_NEIGHBOR", {"half_pixel_centers": True}, [6, 7]),
            ("RESIZE_NEAREST_NEIGHBOR", {"align_corners": True}, [7, 9])]):
        y = b.tensor(f"y{k}", [1] + size + [2])
        opt_type = ("ResizeBilinearOptions" if code == "RESIZE_BILINEAR"
                    else "ResizeNearestNeighborOptions")
        b.op(code, [x, b.const(f"size{k}", np.array(size), "INT32")], [y], opt_type, opts)
        outs.append(y)
    return b, [x], outs, {"x": rnd(rng, 1, 4, 5, 2)}


@case
def unary(rng):
    b = ModelBuilder()
    x = b.tensor("x", [3, 8])
    outs = []
    for k, code in enumerate(["RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "EXP", "ABS",
                              "NEG", "SQUARE", "HARD_SWISH"]):
        y = b.tensor(f"y{k}", [3, 8])
        b.op(code, [x], [y])
        outs.append(y)
    a = b.tensor("a", [3, 8])
    b.op("ABS", [x], [a])
    a1 = b.tensor("a1", [3, 8])
    b.op("ADD", [a, b.const("one", np.float32(1.0))], [a1], "AddOptions", {})
    for k, code in enumerate(["LOG", "SQRT", "RSQRT"]):
        y = b.tensor(f"v{k}", [3, 8])
        b.op(code, [a1], [y])
        outs.append(y)
    sd = b.tensor("sd", [3, 8])
    b.op("SQUARED_DIFFERENCE", [x, b.const("c", rnd(rng, 8))], [sd])
    pw = b.tensor("pw", [3, 8])
    b.op("POW", [a1, b.const("e", np.float32(1.5))], [pw])
    return b, [x], outs + [sd, pw], {"x": rnd(rng, 3, 8, scale=3.0)}


@case
def dequantized_weights(rng):
    """Conv weights stored int8 per output channel and a float16 bias behind
    DEQUANTIZE, as post-training weight quantisation writes them."""
    b = ModelBuilder()
    x = b.tensor("x", [1, 6, 6, 3])
    q = rng.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.int8)
    scales = [0.01, 0.02, 0.005, 0.03]
    wq = b.tensor("wq", [4, 3, 3, 3], q, "INT8",
                  {"scale": scales, "zero_point": [0, 0, 0, 0], "quantized_dimension": 0})
    w = b.tensor("w", [4, 3, 3, 3])
    b.op("DEQUANTIZE", [wq], [w])
    bh = b.tensor("bh", [4], rnd(rng, 4).astype(np.float16), "FLOAT16")
    bias = b.tensor("bias", [4])
    b.op("DEQUANTIZE", [bh], [bias])
    uq = b.tensor("uq", [4], np.array([10, 200, 0, 128], np.uint8), "UINT8",
                  {"scale": [0.05], "zero_point": [128]})
    u = b.tensor("u", [4])
    b.op("DEQUANTIZE", [uq], [u])
    c = b.tensor("c", [1, 6, 6, 4])
    b.op("CONV_2D", [x, w, bias], [c], "Conv2DOptions", conv_opts())
    y = b.tensor("y", [1, 6, 6, 4])
    b.op("MUL", [c, u], [y], "MulOptions", {})
    return b, [x], [y], {"x": rnd(rng, 1, 6, 6, 3)}


def layer_norm_head(b, x, rng, width, rsqrt):
    """A wake-word head's hidden layer as onnx-tf writes it (hey_rhasspy,
    hey_jarvis): fully connected, then the layer norm spelled out (mean,
    deviations, their mean square, + eps, then the deviations divided by
    its SQRT or times its RSQRT), scale, shift, RELU; x is [N, width]. The import fuses the
    normalisation into one top.LayerNorm (printed as "layernorms=N")."""
    n = b.tensors[x]["shape"][0]

    def t(name, shape=(n, width)):
        return b.tensor(name, list(shape))
    h = t("h")
    # Weights scaled up so that the deviations are large (~1e3), as on
    # hey_rhasspy's loud inputs: fp16 would overflow on their squares.
    b.op("FULLY_CONNECTED", [x, b.const("w", rnd(rng, width, width, scale=100.0)),
                             b.const("bias", rnd(rng, width))], [h],
         "FullyConnectedOptions", {})
    axes = b.const("axes", np.array([1]), "INT32")
    m = t("m", (n, 1))
    b.op("MEAN", [h, axes], [m], "ReducerOptions", {"keep_dims": True})
    d = t("d")
    b.op("SUB", [h, m], [d], "SubOptions", {})
    sq = t("sq")
    b.op("MUL", [d, d], [sq], "MulOptions", {})
    v = t("v", (n, 1))
    b.op("MEAN", [sq, axes], [v], "ReducerOptions", {"keep_dims": True})
    ve = t("ve", (n, 1))
    b.op("ADD", [v, b.const("eps", np.float32(1e-5))], [ve], "AddOptions", {})
    y = t("y")
    if rsqrt:
        r = t("r", (n, 1))
        b.op("RSQRT", [ve], [r])
        b.op("MUL", [d, r], [y], "MulOptions", {})
    else:
        sd = t("sd", (n, 1))
        b.op("SQRT", [ve], [sd])
        b.op("DIV", [d, sd], [y], "DivOptions", {})
    g = t("g")
    b.op("MUL", [y, b.const("gamma", rnd(rng, width))], [g], "MulOptions", {})
    o = t("o")
    b.op("ADD", [g, b.const("beta", rnd(rng, width))], [o], "AddOptions",
         {"fused_activation_function": "RELU"})
    return o


@case
def layer_norm_div(rng):
    b = ModelBuilder()
    x = b.tensor("x", [2, 16])
    return b, [x], [layer_norm_head(b, x, rng, 16, rsqrt=False)], {"x": rnd(rng, 2, 16)}


@case
def layer_norm_rsqrt(rng):
    b = ModelBuilder()
    x = b.tensor("x", [3, 16])
    return b, [x], [layer_norm_head(b, x, rng, 16, rsqrt=True)], {"x": rnd(rng, 3, 16)}


@case
def layer_norm_axes_differ(rng):
    """The spelled-out form with the variance over more axes than the mean:
    not a layer norm, left as it is (layernorms=0)."""
    b = ModelBuilder()
    x = b.tensor("x", [2, 4, 8])
    m = b.tensor("m", [2, 4, 1])
    b.op("MEAN", [x, b.const("axes", np.array([2]), "INT32")], [m], "ReducerOptions",
         {"keep_dims": True})
    d = b.tensor("d", [2, 4, 8])
    b.op("SUB", [x, m], [d], "SubOptions", {})
    sq = b.tensor("sq", [2, 4, 8])
    b.op("MUL", [d, d], [sq], "MulOptions", {})
    v = b.tensor("v", [2, 1, 1])
    b.op("MEAN", [sq, b.const("axes2", np.array([1, 2]), "INT32")], [v], "ReducerOptions",
         {"keep_dims": True})
    ve = b.tensor("ve", [2, 1, 1])
    b.op("ADD", [v, b.const("eps", np.float32(1e-5))], [ve], "AddOptions", {})
    r = b.tensor("r", [2, 1, 1])
    b.op("RSQRT", [ve], [r])
    y = b.tensor("y", [2, 4, 8])
    b.op("MUL", [d, r], [y], "MulOptions", {})
    return b, [x], [y], {"x": rnd(rng, 2, 4, 8, scale=2.0)}


# Cases imported for a batch of 1 and re-batched by tpuc transform --batch N
# (name -> N): the reference runs the batch-1 model on each sample.
REBATCH = {}


@case
def rebatch_head(rng):
    """A wake-word head as the .tflite files declare it: [1, 4, 8] features,
    RESHAPE to the literal [1, 32], a layer-normalised hidden layer, a
    score, and the score reshaped to a scalar and back (hey_jarvis' IF
    condition is such a scalar)."""
    b = ModelBuilder()
    x = b.tensor("x", [1, 4, 8])
    f = b.tensor("f", [1, 32])
    b.op("RESHAPE", [x, b.const("shape", np.array([1, 32]), "INT32")], [f])
    o = layer_norm_head(b, f, rng, 32, rsqrt=True)
    s = b.tensor("s", [1, 1])
    b.op("FULLY_CONNECTED", [o, b.const("w2", rnd(rng, 1, 32, scale=0.01)), -1], [s],
         "FullyConnectedOptions", {"fused_activation_function": "NONE"})
    sc = b.tensor("sc", [])
    b.op("RESHAPE", [s, b.const("scalar", np.zeros([0]), "INT32")], [sc])
    y = b.tensor("y", [1, 1])
    b.op("LOGISTIC", [s], [y])
    z = b.tensor("z", [1, 1])
    b.op("MUL", [y, sc], [z], "MulOptions", {})
    return b, [x], [z], {"x": rnd(rng, 5, 4, 8)}


REBATCH["rebatch_head"] = 5


@case
def rebatch_clip(rng):
    """The melspectrogram's clip: max(x, max(x) - 80) with the maximum over
    every axis of the [1, 4, 8] sample (REDUCE_MAX to a scalar, keep_dims
    false), re-batched: the maximum must stay per sample. The samples are
    dB-like levels 100 dB apart, so a maximum over the batch would clip the
    quiet ones whole."""
    b = ModelBuilder()
    x = b.tensor("x", [1, 4, 8])
    m = b.tensor("m", [])
    b.op("REDUCE_MAX", [x, b.const("axes", np.array([0, 1, 2]), "INT32")], [m],
         "ReducerOptions", {"keep_dims": False})
    floor = b.tensor("floor", [])
    b.op("SUB", [m, b.const("range", np.float32(80.0))], [floor], "SubOptions", {})
    y = b.tensor("y", [1, 4, 8])
    b.op("MAXIMUM", [x, floor], [y])
    levels = np.array([0.0, -100.0, 50.0], np.float32).reshape(3, 1, 1)
    return b, [x], [y], {"x": rnd(rng, 3, 4, 8, scale=30.0) + levels}


REBATCH["rebatch_clip"] = 3


@case
def rebatch_batch_mean(rng):
    """MEAN over the batch axis alone (keep_dims) of the [1, 4, 8] sample:
    the identity per sample, re-batched as a Reshape of the same name; then
    the maximum over axes 0 and 2 (keep_dims), per sample over axis 2."""
    b = ModelBuilder()
    x = b.tensor("x", [1, 4, 8])
    m = b.tensor("m", [1, 4, 8])
    b.op("MEAN", [x, b.const("axes", np.array([0]), "INT32")], [m], "ReducerOptions",
         {"keep_dims": True})
    y = b.tensor("y", [1, 4, 1])
    b.op("REDUCE_MAX", [m, b.const("axes2", np.array([0, 2]), "INT32")], [y],
         "ReducerOptions", {"keep_dims": True})
    return b, [x], [y], {"x": rnd(rng, 3, 4, 8)}


REBATCH["rebatch_batch_mean"] = 3


def if_model(rng, shift):
    """IF on mean(x) > 0: then x * 2 + 1 (subgraph 1), else -x (subgraph
    2); both branches are inlined and Where picks one."""
    b = ModelBuilder()
    x = b.tensor("x", [2, 3])
    mean = b.tensor("mean", [])
    b.op("MEAN", [x, b.const("axes", np.array([0, 1]), "INT32")], [mean], "ReducerOptions",
         {"keep_dims": False})
    cond = b.tensor("cond", [], dtype="BOOL")
    b.op("GREATER", [mean, b.const("zero", np.float32(0.0))], [cond])
    y = b.tensor("y", [2, 3])
    b.op("IF", [cond, x], [y], "IfOptions", {"then_subgraph_index": 1, "else_subgraph_index": 2})
    m = b.json([x], [y])
    # The branches reuse the builder's tensor list layout: one input, one
    # output each (the codes they use are added to the model's list).
    for codes, consts in ((("MUL", "ADD"), (2.0, 1.0)), (("NEG",), ())):
        sb = ModelBuilder()
        sb.codes = list(b.codes)
        sb.buffers = m["buffers"]
        bx = sb.tensor("bx", [2, 3])
        t = bx
        for k, code in enumerate(codes):
            out = sb.tensor(f"{code.lower()}_out", [2, 3])
            ins = [t] + ([sb.const(f"k{k}", np.float32(consts[k]))] if consts else [])
            sb.op(code, ins, [out], {"MUL": "MulOptions", "ADD": "AddOptions"}.get(code),
                  {} if code in ("MUL", "ADD") else None)
            t = out
        sub = sb.json([bx], [t])
        m["operator_codes"] = sub["operator_codes"]
        b.codes = sb.codes
        m["subgraphs"].append(dict(sub["subgraphs"][0], name=f"branch_{codes[0].lower()}"))
    m["operator_codes"] = ModelBuilder.json(b, [x], [y])["operator_codes"]
    data = rnd(rng, 2, 3) * 0.1 + shift

    class Built:
        def json(self, ins, outs):
            return m

        def write(self, path, ins, outs):
            tflite_ref.write_json(m, path)
    return Built(), [x], [y], {"x": data.astype(np.float32)}


@case
def if_then(rng):
    return if_model(rng, 1.0)


@case
def if_else(rng):
    return if_model(rng, -1.0)


def run_case(name, args):
    rng = np.random.default_rng(sum(map(ord, name)))  # stable per case
    b, ins, outs, inputs = CASES[name](rng)
    work = args.work
    path = os.path.join(work, name + ".tflite")
    b.write(path, ins, outs)
    model = b.json(ins, outs)
    batch = REBATCH.get(name)
    if batch:
        # The batch-1 model on each sample, stacked.
        per = [tflite_ref.reference(model, {k: v[i:i + 1] for k, v in inputs.items()})
               for i in range(batch)]
        ref = {k: np.concatenate([p[k].reshape(1, -1) for p in per]) for k in per[0]}
        shapes = "[" + ",".join("[" + ",".join(map(str, (1,) + v.shape[1:])) + "]"
                                for v in inputs.values()) + "]"
        extra = ["--batch", str(batch)]
    else:
        ref = tflite_ref.reference(model, inputs)
        shapes = "[" + ",".join("[" + ",".join(map(str, v.shape)) + "]"
                                for v in inputs.values()) + "]"
        extra = []
    np.savez(os.path.join(work, name + "_in.npz"), **inputs)
    mlir = os.path.join(work, name + ".mlir")
    res = os.path.join(work, name + "_out.npz")
    for cmd in ([args.tpuc, "transform", path, "-o", mlir, "--input-shapes", shapes] + extra,
                [args.tpuc, "run", mlir, "-i", os.path.join(work, name + "_in.npz"), "-o", res]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{name}: FAIL {' '.join(cmd[:2])}: {p.stderr.strip()}")
            return False
    if batch:
        # The same samples one by one through the batch-1 import: the
        # re-batched module must give each one's result bit for bit.
        one = os.path.join(work, name + "_b1.mlir")
        cmds = [[args.tpuc, "transform", path, "-o", one, "--input-shapes", shapes]]
        for i in range(batch):
            np.savez(os.path.join(work, f"{name}_in{i}.npz"),
                     **{k: v[i:i + 1] for k, v in inputs.items()})
            cmds.append([args.tpuc, "run", one, "-i", os.path.join(work, f"{name}_in{i}.npz"),
                         "-o", os.path.join(work, f"{name}_out{i}.npz")])
        for cmd in cmds:
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{name}: FAIL {' '.join(cmd[:2])}: {p.stderr.strip()}")
                return False
        got = np.load(res)
        diff = max(float(np.abs(np.load(os.path.join(work, f"{name}_out{i}.npz"))[k][0]
                                .astype(np.float64) - got[k][i]).max())
                   for i in range(batch) for k in ref)
        print(f"{name}: batch {batch} against batch 1: max |diff| {diff:.3g}")
    text = open(mlir).read()
    permutes = text.count('"top.Permute"')
    layernorms = text.count('"top.LayerNorm"')
    got = np.load(res)
    worst_cos, worst_rel = 1.0, 0.0
    for k, v in ref.items():
        g = got[k].astype(np.float64).reshape(-1)
        r = v.reshape(-1)
        if g.size != r.size:
            print(f"{name}: FAIL {k}: {got[k].shape} elements, reference {v.shape}")
            return False
        denom = np.linalg.norm(g) * np.linalg.norm(r)
        cos = float(g @ r / denom) if denom > 0 else float(np.allclose(g, r))
        rel = float(np.max(np.abs(g - r)) / max(np.max(np.abs(r)), 1e-30))
        worst_cos, worst_rel = min(worst_cos, cos), max(worst_rel, rel)
    ok = worst_cos >= 0.99999 and worst_rel <= 1e-4
    print(f"{name}: {'PASS' if ok else 'FAIL'} cosine={worst_cos:.8f} maxrel={worst_rel:.2e}")
    print(f"{name}: permutes={permutes}")
    print(f"{name}: layernorms={layernorms}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--tpuc", default="tpuc")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    ok = True
    for name in args.cases or list(CASES):
        ok = run_case(name, args) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
