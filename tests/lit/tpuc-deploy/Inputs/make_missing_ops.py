"""Small ONNX models for the deploy tests of compare, reflect / edge pad,
gather with computed indices, casts to integer types and 3-D pools.

    make_missing_ops.py NAME OUT_DIR

writes OUT_DIR/NAME.onnx and OUT_DIR/in.npz (one array per graph input).
Except for the pools, inputs are drawn from values that F16 and BF16 hold
exactly (small multiples of 1/4 or 1/8), so that comparisons, truncations
and computed indices do not depend on the mode: the F16 / BF16 results then
differ from the F32 top reference only by the rounding of the ops' outputs.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
rng = np.random.default_rng(5)


def model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="tpuc-lit")
    m.ir_version = 8
    # Outputs declared without a shape take the one ONNX infers.
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    types = {v.name: v.type
             for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for o in m.graph.output:
        if not o.type.tensor_type.HasField("shape"):
            o.type.CopyFrom(types[o.name])
    onnx.checker.check_model(m, full_check=True)
    return m


def vi(name, shape, elem=F):
    """A float value; shape None: inferred (see model())."""
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def grid(shape, lo, hi, step):
    """Random multiples of `step` in [lo, hi]."""
    k = rng.integers(int(round(lo / step)), int(round(hi / step)) + 1, shape)
    return (k * step).astype(np.float32)


def compare():
    """Every comparison: tensor against tensor (broadcast rhs), against a
    constant on either side; each result made float by Cast and by Where."""
    x, y = [1, 4, 6, 10], [1, 4, 1, 10]
    nodes = [
        helper.make_node("Equal", ["x", "y"], ["eq"]),
        helper.make_node("Greater", ["x", "y"], ["gt"]),
        helper.make_node("GreaterOrEqual", ["x", "y"], ["ge"]),
        helper.make_node("Less", ["x", "c"], ["lt_c"]),
        helper.make_node("LessOrEqual", ["c", "x"], ["c_le"]),
        helper.make_node("Greater", ["y", "x"], ["y_gt"]),
    ]
    outs = []
    for b in ["eq", "gt", "ge", "lt_c", "c_le", "y_gt"]:
        nodes.append(helper.make_node("Cast", [b], [b + "_f"], to=F))
        outs.append(vi(b + "_f", None))
    nodes.append(helper.make_node("Where", ["gt", "x", "y"], ["sel"]))
    nodes.append(helper.make_node("Where", ["c_le", "x", "half"], ["sel_c"]))
    outs += [vi("sel", x), vi("sel_c", x)]
    inits = [const("c", np.array(0.25, np.float32)),
             const("half", np.array([0.5], np.float32))]
    data = {"x": grid(x, -1.0, 1.0, 0.25), "y": grid(y, -1.0, 1.0, 0.25)}
    return model(nodes, [vi("x", x), vi("y", y)], outs, inits), data


def pad():
    """Reflect and edge pads on every axis of a 4-D and a 3-D tensor, each
    followed by an Add so that the pads feed another op."""
    x, s = [1, 3, 5, 6], [2, 7, 9]
    nodes = [
        helper.make_node("Pad", ["x", "p_reflect"], ["reflect"], mode="reflect"),
        helper.make_node("Pad", ["x", "p_edge"], ["edge"], mode="edge"),
        helper.make_node("Pad", ["s", "p_reflect3"], ["reflect3"], mode="reflect"),
        helper.make_node("Pad", ["s", "p_edge3"], ["edge3"], mode="edge"),
        helper.make_node("Add", ["reflect", "one"], ["reflect_add"]),
        helper.make_node("Add", ["edge3", "one"], ["edge3_add"]),
    ]
    inits = [const("p_reflect", np.array([0, 1, 2, 1, 0, 1, 4, 5], np.int64)),
             const("p_edge", np.array([0, 2, 3, 0, 0, 0, 1, 7], np.int64)),
             const("p_reflect3", np.array([1, 3, 8, 0, 6, 2], np.int64)),
             const("p_edge3", np.array([0, 0, 2, 1, 4, 0], np.int64)),
             const("one", np.array(1.0, np.float32))]
    outs = [vi("reflect_add", None), vi("edge", None), vi("reflect3", None),
            vi("edge3_add", None)]
    data = {"x": grid(x, -2.0, 2.0, 0.125), "s": grid(s, -2.0, 2.0, 0.125)}
    return model(nodes, [vi("x", x), vi("s", s)], outs, inits), data


def gather():
    """Gather whose indices are computed: u * 4 (u = (i + 1/2) / 4, so the
    products are i + 1/2 exactly in every mode) cast to int64 (toward zero:
    i), and the same minus 8 (negative indices count from the end); and
    indices that are a model input."""
    t, u = [8, 6], [2, 5]
    nodes = [
        helper.make_node("Mul", ["u", "four"], ["u4"]),
        helper.make_node("Cast", ["u4"], ["idx"], to=TensorProto.INT64),
        helper.make_node("Sub", ["idx", "eight"], ["idx_neg"]),
        helper.make_node("Gather", ["t", "idx"], ["rows"], axis=0),
        helper.make_node("Gather", ["t", "idx_neg"], ["rows_neg"], axis=0),
        helper.make_node("Relu", ["t"], ["t_relu"]),
        helper.make_node("Gather", ["t_relu", "idx"], ["cols"], axis=1),
        helper.make_node("Gather", ["table", "idx"], ["emb"], axis=0),
        # Model-input indices beyond bf16's integers (> 256): read as f32.
        helper.make_node("Gather", ["big_table", "k"], ["big_rows"], axis=0),
    ]
    inits = [const("four", np.array(4.0, np.float32)),
             const("eight", np.array(8, np.int64)),
             const("table", grid([8, 3, 4], -2.0, 2.0, 0.125)),
             const("big_table", grid([300, 4], -2.0, 2.0, 0.125))]
    u_data = ((rng.integers(0, 6, u) + 0.5) / 4).astype(np.float32)
    data = {"t": grid(t, -2.0, 2.0, 0.125), "u": u_data,
            "k": np.array([257, 299, 263, -37], np.int64)}
    outs = [vi("rows", None), vi("rows_neg", None), vi("cols", None),
            vi("emb", None), vi("big_rows", None)]
    return model(nodes, [vi("t", t), vi("u", u),
                         vi("k", [4], TensorProto.INT64)], outs, inits), data


def cast():
    """Casts to every integer type and back to float: toward zero, then
    saturation (int8 / uint8 / int16 / uint16 ranges are reached)."""
    x = [4, 64]
    targets = [("i8", TensorProto.INT8), ("u8", TensorProto.UINT8),
               ("i16", TensorProto.INT16), ("u16", TensorProto.UINT16),
               ("i32", TensorProto.INT32), ("u32", TensorProto.UINT32),
               ("i64", TensorProto.INT64)]
    nodes, outs = [], []
    for name, to in targets:
        nodes.append(helper.make_node("Cast", ["x"], [name], to=to))
        nodes.append(helper.make_node("Cast", [name], [name + "_f"], to=F))
        outs.append(vi(name + "_f", x))
    # The integer value in float arithmetic: int32 -> float feeds a Mul.
    nodes.append(helper.make_node("Cast", ["i32"], ["i32_float"], to=F))
    nodes.append(helper.make_node("Mul", ["i32_float", "half"], ["half_i32"]))
    outs.append(vi("half_i32", x))
    # Fractions of both signs, the int8 / uint8 / int16 boundaries and
    # beyond, all exact in BF16 (at most 8 significant bits) and F16.
    edges = np.array([0.75, -0.75, 1.5, -1.5, 126.5, 127.5, -128.5, -129.0,
                      254.5, 255.5, -255.5, 256.0, 300.0, -300.0, 32640.0,
                      33280.0, -33280.0, 40960.0, -49152.0, 65280.0],
                     np.float32)
    rest = grid([x[0] * x[1] - edges.size], -40.0, 40.0, 0.125)
    mixed = np.concatenate([edges, rest])
    data = {"x": rng.permutation(mixed).reshape(x).astype(np.float32)}
    return model(nodes, [vi("x", x)], outs,
                 [const("half", np.array(0.5, np.float32))]), data


def pool3d():
    """3-D MaxPool and AveragePool: pads on every axis (count_include_pad
    both ways), depth-only pads, ceil mode, a global-depth window, and 80
    channels (two channel slots of the 64 lanes)."""
    x, w = [1, 5, 6, 7, 8], [1, 80, 4, 5, 6]
    nodes = [
        helper.make_node("MaxPool", ["x"], ["max"], kernel_shape=[2, 3, 3],
                         strides=[2, 2, 2], pads=[1, 1, 0, 1, 1, 1]),
        helper.make_node("MaxPool", ["x"], ["max_ceil"], kernel_shape=[3, 2, 2],
                         strides=[2, 2, 3], ceil_mode=1),
        helper.make_node("AveragePool", ["x"], ["avg_excl"],
                         kernel_shape=[3, 3, 2], strides=[1, 2, 2],
                         pads=[1, 1, 0, 1, 0, 1], count_include_pad=0),
        helper.make_node("AveragePool", ["x"], ["avg_incl"],
                         kernel_shape=[3, 3, 2], strides=[1, 2, 2],
                         pads=[1, 1, 0, 1, 0, 1], count_include_pad=1),
        helper.make_node("AveragePool", ["x"], ["avg_depth_pad"],
                         kernel_shape=[2, 3, 3], strides=[2, 1, 1],
                         pads=[1, 0, 0, 0, 0, 0]),
        helper.make_node("AveragePool", ["w"], ["avg_wide"],
                         kernel_shape=[4, 2, 2], strides=[1, 2, 2]),
        helper.make_node("MaxPool", ["w"], ["max_wide"], kernel_shape=[2, 2, 3],
                         strides=[2, 1, 3], pads=[0, 1, 1, 0, 0, 1]),
        # Activations the top optimiser fuses into the pool (do_relu,
        # relu_limit).
        helper.make_node("AveragePool", ["x"], ["avg_r"], kernel_shape=[2, 2, 2],
                         strides=[2, 2, 2], pads=[0, 1, 1, 0, 0, 0]),
        helper.make_node("Relu", ["avg_r"], ["avg_relu"]),
        helper.make_node("MaxPool", ["x"], ["max_c"], kernel_shape=[2, 2, 2],
                         strides=[2, 2, 2]),
        helper.make_node("Clip", ["max_c", "zero", "limit"], ["max_clip"]),
    ]
    outs = [vi(n, None) for n in ["max", "max_ceil", "avg_excl", "avg_incl",
                                  "avg_depth_pad", "avg_wide", "max_wide",
                                  "avg_relu", "max_clip"]]
    # Full-precision values (no grid): the fp32 window sums then depend on
    # their order, which the tpu interpreter must reproduce bit for bit.
    data = {"x": rng.standard_normal(x).astype(np.float32),
            "w": rng.standard_normal(w).astype(np.float32)}
    inits = [const("zero", np.array(0.0, np.float32)),
             const("limit", np.array(0.75, np.float32))]
    return model(nodes, [vi("x", x), vi("w", w)], outs, inits), data


MODELS = {"compare": compare, "pad": pad, "gather": gather, "cast": cast,
          "pool3d": pool3d}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in MODELS:
        sys.exit("usage: make_missing_ops.py {%s} OUT_DIR" % ",".join(MODELS))
    name, out = sys.argv[1], sys.argv[2]
    m, data = MODELS[name]()
    onnx.save(m, os.path.join(out, name + ".onnx"))
    np.savez(os.path.join(out, "in.npz"), **data)


if __name__ == "__main__":
    main()
