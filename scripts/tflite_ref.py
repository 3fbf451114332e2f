#!/usr/bin/python3
"""A numpy reference for float TFLite models, and a writer of small models.

    /usr/bin/python3 scripts/tflite_ref.py run MODEL.tflite IN.npz OUT.npz

Runs MODEL (subgraph 0) on the arrays of IN.npz (keyed by the TFLite input
names) and writes the outputs by name. The model is decoded with Debian's
flatc (`flatc --json` with compiler/lib/Frontend/Tflite/tflite.fbs) and
every operator is computed here in TFLite's own NHWC layout from TFLite's
operator definitions, in float64: an implementation independent of tpuc's
importer (which goes through ONNX and NCHW), for the tests of the TFLite
frontend.

As a module: ModelBuilder writes a .tflite from numpy arrays (JSON ->
`flatc -b`), reference(model_json, inputs) runs a decoded model.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "compiler", "lib", "Frontend", "Tflite", "tflite.fbs")

DTYPES = {
    "FLOAT32": np.float32, "FLOAT16": np.float16, "INT32": np.int32,
    "UINT8": np.uint8, "INT64": np.int64, "BOOL": np.bool_, "INT16": np.int16,
    "INT8": np.int8, "FLOAT64": np.float64,
}


def builtin_codes():
    """BuiltinOperator name -> number, from the schema."""
    import re
    text = open(SCHEMA).read()
    body = text[text.index("enum BuiltinOperator"):]
    body = body[body.index("{") + 1:body.index("}")]
    return {n: int(v) for n, v in re.findall(r"(\w+)\s*=\s*(-?\d+)", body)}


def flatc():
    exe = shutil.which("flatc")
    if not exe:
        sys.exit("tflite_ref: flatc (Debian flatbuffers-compiler) is not installed")
    return exe


def decode(path):
    """The model as flatc's JSON (defaults included)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([flatc(), "--json", "--strict-json", "--defaults-json",
                        "--raw-binary", "-o", tmp, SCHEMA, "--", path],
                       check=True)
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(tmp, stem + ".json")) as f:
            return json.load(f)


class ModelBuilder:
    """Builds a one-subgraph TFLite model as flatc JSON."""

    def __init__(self):
        self.tensors, self.ops, self.codes = [], [], []
        self.buffers = [{}]  # buffer 0: the empty buffer, by convention

    def tensor(self, name, shape, data=None, dtype="FLOAT32", quant=None):
        t = {"name": name, "shape": list(shape), "type": dtype, "buffer": 0}
        if data is not None:
            raw = np.ascontiguousarray(np.asarray(data, dtype=DTYPES[dtype]))
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": list(raw.tobytes())})
        if quant:
            t["quantization"] = quant
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, name, array, dtype="FLOAT32"):
        array = np.asarray(array)
        return self.tensor(name, array.shape, array, dtype)

    def op(self, code, inputs, outputs, options_type=None, options=None):
        if code not in self.codes:
            self.codes.append(code)
        o = {"opcode_index": self.codes.index(code), "inputs": list(inputs),
             "outputs": list(outputs)}
        if options_type:
            o["builtin_options_type"] = options_type
            o["builtin_options"] = options or {}
        self.ops.append(o)

    def json(self, inputs, outputs):
        numbers = builtin_codes()
        codes = [{"deprecated_builtin_code": min(numbers[c], 127), "builtin_code": c,
                  "version": 1} for c in self.codes]
        return {"version": 3, "operator_codes": codes,
                "subgraphs": [{"tensors": self.tensors, "inputs": list(inputs),
                               "outputs": list(outputs), "operators": self.ops,
                               "name": "main"}],
                "buffers": self.buffers}

    def write(self, path, inputs, outputs):
        write_json(self.json(inputs, outputs), path)


def write_json(model, path):
    """Compiles flatc JSON \\p model to the .tflite \\p path."""
    with tempfile.TemporaryDirectory() as tmp:
        stem = os.path.splitext(os.path.basename(path))[0]
        src = os.path.join(tmp, stem + ".json")
        with open(src, "w") as f:
            json.dump(model, f)
        subprocess.run([flatc(), "-b", "-o", tmp, SCHEMA, src], check=True)
        shutil.move(os.path.join(tmp, stem + ".tflite"), path)


# ---------------------------------------------------------------------------
# Reference arithmetic (NHWC, float64)
# ---------------------------------------------------------------------------

def _act(x, name):
    if name in (None, "NONE"):
        return x
    if name == "RELU":
        return np.maximum(x, 0)
    if name == "RELU6":
        return np.clip(x, 0, 6)
    if name == "RELU_N1_TO_1":
        return np.clip(x, -1, 1)
    if name == "TANH":
        return np.tanh(x)
    raise ValueError(f"activation {name}")


def _same_pads(size, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return out, total // 2, total - total // 2


def _window(size, k, s, d, padding):
    if padding == "SAME":
        return _same_pads(size, k, s, d)
    eff = (k - 1) * d + 1
    return (size - eff) // s + 1, 0, 0


def conv2d(x, w, b, sh, sw, dh, dw, padding, groups=None, depthwise_mult=None):
    n, h, wd, c = x.shape
    kh, kw = w.shape[1], w.shape[2]
    oh, pt, pb = _window(h, kh, sh, dh, padding)
    ow, pl, pr = _window(wd, kw, sw, dw, padding)
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    if depthwise_mult is not None:
        m = depthwise_mult
        out = np.zeros((n, oh, ow, c * m))
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw, :]
                out += np.repeat(patch, m, axis=3) * w[0, i, j, :]
    else:
        o, cin_g = w.shape[0], w.shape[3]
        g = c // cin_g
        og = o // g
        out = np.zeros((n, oh, ow, o))
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw, :]
                for gi in range(g):
                    out[..., gi * og:(gi + 1) * og] += np.einsum(
                        "nhwc,oc->nhwo", patch[..., gi * cin_g:(gi + 1) * cin_g],
                        w[gi * og:(gi + 1) * og, i, j, :])
    if b is not None:
        out = out + b
    return out


def transpose_conv(x, w, b, out_shape, sh, sw, padding):
    n, h, wd, c = x.shape
    o, kh, kw, _ = w.shape
    full = np.zeros((n, (h - 1) * sh + kh, (wd - 1) * sw + kw, o))
    for i in range(kh):
        for j in range(kw):
            full[:, i:i + sh * (h - 1) + 1:sh, j:j + sw * (wd - 1) + 1:sw, :] += \
                np.einsum("nhwc,oc->nhwo", x, w[:, i, j, :])
    oh, ow = out_shape[1], out_shape[2]
    th = max(full.shape[1] - oh, 0)
    tw = max(full.shape[2] - ow, 0)
    full = np.pad(full, ((0, 0), (0, max(oh - full.shape[1], 0)),
                         (0, max(ow - full.shape[2], 0)), (0, 0)))
    out = full[:, th // 2:th // 2 + oh, tw // 2:tw // 2 + ow, :]
    if b is not None:
        out = out + b
    return out


def pool(x, kh, kw, sh, sw, padding, kind):
    n, h, wd, c = x.shape
    oh, pt, pb = _window(h, kh, sh, 1, padding)
    ow, pl, pr = _window(wd, kw, sw, 1, padding)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    ones = np.pad(np.ones((1, h, wd, 1)), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    out = np.full((n, oh, ow, c), -np.inf) if kind == "max" else np.zeros((n, oh, ow, c))
    cnt = np.zeros((1, oh, ow, 1))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw, :]
            if kind == "max":
                out = np.maximum(out, patch)
            else:
                out += patch
                cnt += ones[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw, :]
    return out if kind == "max" else out / cnt  # padding not counted


def resize(x, size, bilinear, align, half):
    n, h, w, c = x.shape
    oh, ow = size

    def coords(out, inp):
        o = np.arange(out, dtype=np.float64)
        if align and out > 1:
            return o * (inp - 1) / (out - 1)
        scale = inp / out
        if half:
            return (o + 0.5) * scale - (0.5 if bilinear else 0.0)
        return o * scale

    ys, xs = coords(oh, h), coords(ow, w)
    if not bilinear:
        if align:  # TFLite rounds half away from zero here
            yi = np.minimum(np.floor(ys + 0.5).astype(int), h - 1)
            xi = np.minimum(np.floor(xs + 0.5).astype(int), w - 1)
        else:
            yi = np.minimum(np.floor(ys).astype(int), h - 1)
            xi = np.minimum(np.floor(xs).astype(int), w - 1)
        return x[:, yi][:, :, xi]
    ys = np.clip(ys, 0, None)
    xs = np.clip(xs, 0, None)
    y0 = np.minimum(np.floor(ys).astype(int), h - 1)
    x0 = np.minimum(np.floor(xs).astype(int), w - 1)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy = (ys - y0)[None, :, None, None]
    fx = (xs - x0)[None, None, :, None]
    top = x[:, y0][:, :, x0] * (1 - fx) + x[:, y0][:, :, x1] * fx
    bot = x[:, y1][:, :, x0] * (1 - fx) + x[:, y1][:, :, x1] * fx
    return top * (1 - fy) + bot * fy


def strided_slice(x, begin, end, strides, o):
    idx, shrink = [], []
    for d in range(len(begin)):
        b, e, s = int(begin[d]), int(end[d]), int(strides[d])
        if o.get("begin_mask", 0) >> d & 1:
            b = None
        if o.get("end_mask", 0) >> d & 1:
            e = None
        if o.get("shrink_axis_mask", 0) >> d & 1:
            idx.append(b if b is not None else 0)
            shrink.append(d)
            continue
        idx.append(slice(b, e, s))
    return x[tuple(idx)]


def _tensor_value(model, sg, t):
    tt = sg["tensors"][t]
    buf = model["buffers"][tt.get("buffer", 0)]
    data = buf.get("data")
    if not data:
        if int(np.prod(tt.get("shape", []))) == 0:
            return np.zeros(tt.get("shape", []), DTYPES[tt.get("type", "FLOAT32")])
        return None
    arr = np.frombuffer(bytes(data), dtype=DTYPES[tt.get("type", "FLOAT32")])
    return arr.reshape(tt.get("shape", []))


def reference(model, inputs, subgraph=0, bound=None):
    """Runs subgraph \\p subgraph of decoded \\p model; \\p inputs maps the
    input names (or, with \\p bound, input tensor indices) to arrays.
    Returns {output name: float64 array}."""
    sg = model["subgraphs"][subgraph]
    names = {v: k for k, v in builtin_codes().items()}
    numbers = builtin_codes()
    codes = []
    for c in model["operator_codes"]:
        # The real code is the larger of the two fields.
        n = max(int(c.get("deprecated_builtin_code", 0)),
                numbers.get(c.get("builtin_code", "ADD"), 0))
        codes.append(names[n])
    val = {}
    for t in range(len(sg["tensors"])):
        v = _tensor_value(model, sg, t)
        if v is not None:
            val[t] = v
    for k, t in enumerate(sg["inputs"]):
        val[t] = np.asarray(bound[k] if bound is not None else inputs[sg["tensors"][t]["name"]])

    def f(t):
        return np.asarray(val[t], dtype=np.float64)

    for op in sg["operators"]:
        code = codes[op.get("opcode_index", 0)]
        ins, outs = op["inputs"], op["outputs"]
        o = op.get("builtin_options") or {}
        act = o.get("fused_activation_function")
        y = None
        if code == "CONV_2D":
            b = f(ins[2]) if len(ins) > 2 and ins[2] >= 0 else None
            y = _act(conv2d(f(ins[0]), f(ins[1]), b, o["stride_h"], o["stride_w"],
                            o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1),
                            o.get("padding", "SAME")), act)
        elif code == "DEPTHWISE_CONV_2D":
            b = f(ins[2]) if len(ins) > 2 and ins[2] >= 0 else None
            x = f(ins[0])
            y = _act(conv2d(x, f(ins[1]), b, o["stride_h"], o["stride_w"],
                            o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1),
                            o.get("padding", "SAME"),
                            depthwise_mult=f(ins[1]).shape[3] // x.shape[3]), act)
        elif code == "TRANSPOSE_CONV":
            b = f(ins[3]) if len(ins) > 3 and ins[3] >= 0 else None
            y = _act(transpose_conv(f(ins[2]), f(ins[1]), b, val[ins[0]].astype(int),
                                    o["stride_h"], o["stride_w"], o.get("padding", "SAME")), act)
        elif code == "FULLY_CONNECTED":
            x, w = f(ins[0]), f(ins[1])
            flat = x.reshape(-1, w.shape[1])
            y = flat @ w.T
            if len(ins) > 2 and ins[2] >= 0:
                y = y + f(ins[2])
            if o.get("keep_num_dims"):
                y = y.reshape(x.shape[:-1] + (w.shape[0],))
            y = _act(y, act)
        elif code == "BATCH_MATMUL":
            a, b = f(ins[0]), f(ins[1])
            if o.get("adj_x"):
                a = np.swapaxes(a, -1, -2)
            if o.get("adj_y"):
                b = np.swapaxes(b, -1, -2)
            y = a @ b
        elif code in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            y = _act(pool(f(ins[0]), o["filter_height"], o["filter_width"], o["stride_h"],
                          o["stride_w"], o.get("padding", "SAME"),
                          "max" if code == "MAX_POOL_2D" else "avg"), act)
        elif code == "SOFTMAX":
            x = f(ins[0]) * o.get("beta", 1.0)
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            y = e / e.sum(axis=-1, keepdims=True)
        elif code in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
            y = resize(f(ins[0]), val[ins[1]].astype(int), code == "RESIZE_BILINEAR",
                       o.get("align_corners", False), o.get("half_pixel_centers", False))
        elif code in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW",
                      "SQUARED_DIFFERENCE"):
            a, b = f(ins[0]), f(ins[1])
            y = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide,
                 "MAXIMUM": np.maximum, "MINIMUM": np.minimum, "POW": np.power,
                 "SQUARED_DIFFERENCE": lambda p, q: (p - q) ** 2}[code](a, b)
            y = _act(y, act)
        elif code == "PRELU":
            x, a = f(ins[0]), f(ins[1])
            y = np.where(x >= 0, x, x * a)
        elif code in ("GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "EQUAL"):
            y = {"GREATER": np.greater, "GREATER_EQUAL": np.greater_equal, "LESS": np.less,
                 "LESS_EQUAL": np.less_equal, "EQUAL": np.equal}[code](f(ins[0]), f(ins[1]))
        elif code in ("LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU",
                      "HARD_SWISH", "EXP", "LOG", "SQRT", "RSQRT", "ABS", "NEG", "SQUARE"):
            x = f(ins[0])
            y = {"LOGISTIC": lambda v: 1 / (1 + np.exp(-v)), "TANH": np.tanh,
                 "RELU": lambda v: np.maximum(v, 0), "RELU6": lambda v: np.clip(v, 0, 6),
                 "RELU_N1_TO_1": lambda v: np.clip(v, -1, 1),
                 "LEAKY_RELU": lambda v: np.where(v >= 0, v, v * o.get("alpha", 0.2)),
                 "HARD_SWISH": lambda v: v * np.clip(v + 3, 0, 6) / 6, "EXP": np.exp,
                 "LOG": np.log, "SQRT": np.sqrt, "RSQRT": lambda v: 1 / np.sqrt(v),
                 "ABS": np.abs, "NEG": np.negative, "SQUARE": np.square}[code](x)
        elif code == "DEQUANTIZE":
            t = sg["tensors"][ins[0]]
            q = val[ins[0]]
            if q.dtype == np.float16:
                y = q.astype(np.float64)
            else:
                qp = t["quantization"]
                scale = np.asarray(qp["scale"])
                zp = np.asarray(qp.get("zero_point") or [0] * len(scale))
                shape = [1] * q.ndim
                if len(scale) > 1:
                    shape[qp.get("quantized_dimension", 0)] = len(scale)
                y = (q.astype(np.float64) - zp.reshape(shape)) * scale.reshape(shape)
        elif code == "QUANTIZE":
            y = f(ins[0])
        elif code == "RESHAPE":
            shape = val[ins[1]] if len(ins) > 1 else o["new_shape"]
            y = f(ins[0]).reshape([int(d) for d in np.asarray(shape).reshape(-1)])
        elif code == "SQUEEZE":
            dims = o.get("squeeze_dims") or None
            y = np.squeeze(f(ins[0]), axis=tuple(dims) if dims else None)
        elif code == "EXPAND_DIMS":
            y = np.expand_dims(f(ins[0]), int(np.asarray(val[ins[1]]).reshape(-1)[0]))
        elif code == "TRANSPOSE":
            y = np.transpose(f(ins[0]), val[ins[1]].astype(int))
        elif code == "CONCATENATION":
            y = _act(np.concatenate([f(t) for t in ins], axis=o.get("axis", 0)), act)
        elif code in ("PAD", "PADV2"):
            cval = float(f(ins[2]).reshape(-1)[0]) if code == "PADV2" and len(ins) > 2 else 0.0
            y = np.pad(f(ins[0]), val[ins[1]].astype(int), constant_values=cval)
        elif code == "STRIDED_SLICE":
            y = strided_slice(f(ins[0]), val[ins[1]], val[ins[2]], val[ins[3]], o)
        elif code == "SLICE":
            b, s = val[ins[1]].astype(int), val[ins[2]].astype(int)
            x = f(ins[0])
            y = x[tuple(slice(bb, None if ss == -1 else bb + ss) for bb, ss in zip(b, s))]
        elif code == "GATHER":
            y = np.take(f(ins[0]), val[ins[1]].astype(int), axis=o.get("axis", 0))
        elif code in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"):
            axes = tuple(int(a) for a in np.asarray(val[ins[1]]).reshape(-1))
            fn = {"MEAN": np.mean, "SUM": np.sum, "REDUCE_MAX": np.max, "REDUCE_MIN": np.min}[code]
            y = fn(f(ins[0]), axis=axes, keepdims=bool(o.get("keep_dims", False)))
        elif code == "IF":
            cond = bool(np.asarray(val[ins[0]]).reshape(-1)[0])
            branch = o["then_subgraph_index"] if cond else o["else_subgraph_index"]
            res = reference(model, None, branch, [val[t] for t in ins[1:]])
            for t, v in zip(outs, res.values()):
                val[t] = v
            continue
        else:
            raise NotImplementedError(f"tflite_ref: operator {code}")
        val[outs[0]] = y
    return {sg["tensors"][t]["name"]: np.asarray(val[t], dtype=np.float64)
            for t in sg["outputs"]}


def main():
    if len(sys.argv) != 5 or sys.argv[1] != "run":
        sys.exit(__doc__)
    model = decode(sys.argv[2])
    inputs = dict(np.load(sys.argv[3]))
    out = {k: v.astype(np.float32) for k, v in reference(model, inputs).items()}
    tmp = sys.argv[4] + ".tmp.npz"
    np.savez(tmp, **out)
    os.replace(tmp, sys.argv[4])


if __name__ == "__main__":
    main()
