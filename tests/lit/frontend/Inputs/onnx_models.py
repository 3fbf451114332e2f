#!/usr/bin/env python3
"""Small ONNX models for the frontend lit tests, built with onnx.helper.

    onnx_models.py NAME OUT.onnx

Weights are fixed (no randomness) so tests can check values.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def model(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="tpuc-lit")
    m.ir_version = 8
    return m


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def arange(shape, scale=0.1):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float32) * scale - n * scale / 2).reshape(shape)


def conv_bn_relu():
    """Conv (SAME_UPPER, stride 2) -> BatchNormalization -> Relu -> GlobalAveragePool."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["conv_out"], name="conv1",
                         kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("BatchNormalization", ["conv_out", "s", "bias", "m", "v"],
                         ["bn_out"], name="bn1", epsilon=1e-3),
        helper.make_node("Relu", ["bn_out"], ["relu_out"], name="relu1"),
        helper.make_node("GlobalAveragePool", ["relu_out"], ["y"], name="gap"),
    ]
    inits = [const("w", arange([4, 3, 3, 3], 0.01)),
             const("b", np.array([0.1, -0.2, 0.3, 0.0], np.float32)),
             const("s", np.ones(4, np.float32)), const("bias", np.zeros(4, np.float32)),
             const("m", np.zeros(4, np.float32)), const("v", np.ones(4, np.float32))]
    return model(nodes, [vi("x", ["N", 3, 9, 9])], [vi("y", ["N", 4, 1, 1])], inits)


def shape_subgraph():
    """Flatten a dynamic-batch input through Shape/Gather/Unsqueeze/Concat/Reshape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Slice", ["shape", "one", "big", "axes0"], ["rest"]),
        helper.make_node("ReduceProd", ["rest"], ["rest_prod"], keepdims=1),
        helper.make_node("Concat", ["batch1", "rest_prod"], ["target"], axis=0),
        helper.make_node("Cast", ["target"], ["target64"], to=I64),
        helper.make_node("Reshape", ["x", "target64"], ["flat"]),
        helper.make_node("Relu", ["flat"], ["y"]),
    ]
    inits = [const("zero", np.array(0, np.int64)), const("axes0", np.array([0], np.int64)),
             const("one", np.array([1], np.int64)),
             const("big", np.array([np.iinfo(np.int64).max], np.int64))]
    return model(nodes, [vi("x", ["N", 3, 4, "W"])], [vi("y", ["N", "K"])], inits)


def gemm():
    """Gemm with alpha, beta and transB on constant B and C."""
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="fc",
                              alpha=0.5, beta=2.0, transB=1)]
    inits = [const("b", np.arange(6, dtype=np.float32).reshape(3, 2)),
             const("c", np.array([1.0, 2.0, 3.0], np.float32))]
    return model(nodes, [vi("a", [4, 2])], [vi("y", [4, 3])], inits)


def clip_variants():
    """Clip with attributes (opset 6 style is separate), constant inputs and run-time min."""
    nodes = [
        helper.make_node("Clip", ["x", "lo", "hi"], ["c1"], name="clip_const"),
        helper.make_node("ReduceMin", ["x"], ["xmin"], keepdims=0),
        helper.make_node("Clip", ["c1", "xmin"], ["y"], name="clip_runtime"),
    ]
    inits = [const("lo", np.array(-1.0, np.float32)), const("hi", np.array(6.0, np.float32))]
    return model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], inits, opset=13)


def clip_opset6():
    nodes = [helper.make_node("Clip", ["x"], ["y"], min=0.0, max=6.0)]
    return model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], opset=6)


def resize_cubic():
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="upsample_cubic",
                              mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1)]
    inits = [const("sizes", np.array([1, 1, 8, 6], np.int64))]
    return model(nodes, [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 8, 6])], inits)


def resize_crop():
    nodes = [helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="crop_resize",
                              mode="linear",
                              coordinate_transformation_mode="tf_crop_and_resize")]
    inits = [const("roi", np.array([0, 0, 0.2, 0.2, 1, 1, 0.8, 0.8], np.float32)),
             const("scales", np.array([1, 1, 2, 2], np.float32))]
    return model(nodes, [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 8, 8])], inits)


def resize_nearest(scale_w="3"):
    """scale_w: the scale of the last axis (default 3, the model's output shape)."""
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up",
                              mode="nearest", coordinate_transformation_mode="asymmetric",
                              nearest_mode="floor")]
    inits = [const("scales", np.array([1, 1, 2, float(scale_w)], np.float32))]
    return model(nodes, [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 8, 12])], inits)


def unsupported():
    """Several unsupported operators, one of them used twice."""
    nodes = [
        helper.make_node("Sin", ["x"], ["s1"], name="sin_a"),
        helper.make_node("TopK", ["s1", "k"], ["vals", "idx"], name="topk"),
        helper.make_node("Sin", ["vals"], ["s2"], name="sin_b"),
        helper.make_node("Relu", ["s2"], ["y"], name="relu"),
        helper.make_node("Foo", ["y"], ["z"], name="custom", domain="com.example"),
    ]
    inits = [const("k", np.array([2], np.int64))]
    m = model(nodes, [vi("x", [1, 4])], [vi("z", [1, 2])], inits)
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


def two_inputs():
    """y = x * s + t: two inputs, dynamic dims."""
    nodes = [helper.make_node("Mul", ["x", "s"], ["p"]),
             helper.make_node("Add", ["p", "t"], ["y"])]
    inits = [const("t", np.array([1.0, 2.0, 3.0], np.float32))]
    return model(nodes, [vi("x", ["N", 3]), vi("s", [1, 3])], [vi("y", ["N", 3])], inits)


def split_slice():
    """Split into 2 + Slice with negative steps, Transpose, Concat."""
    nodes = [
        helper.make_node("Split", ["x", "split"], ["a", "b"], name="split", axis=1),
        helper.make_node("Slice", ["b", "st", "en", "ax", "sp"], ["rev"], name="reverse"),
        helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1]),
        helper.make_node("Transpose", ["at"], ["a2"], perm=[0, 2, 1]),
        helper.make_node("Concat", ["a2", "rev"], ["y"], axis=1),
    ]
    inits = [const("split", np.array([2, 4], np.int64)),
             const("st", np.array([-1], np.int64)),
             const("en", np.array([np.iinfo(np.int64).min], np.int64)),
             const("ax", np.array([1], np.int64)),
             const("sp", np.array([-1], np.int64))]
    return model(nodes, [vi("x", [1, 6, 5])], [vi("y", [1, 6, 5])], inits)


def split_bad(kind):
    """A Split the importer must refuse: KIND "no-outputs" (a Split node with
    no outputs, found by fuzz_onnx: it divided by zero), "num-outputs"
    (num_outputs = 3 on a node with 2 outputs) or "empty-chunk" (an axis of
    4 in num_outputs = 3 chunks of ceil(4 / 3) = 2: the last one empty)."""
    outs = [] if kind == "no-outputs" else ["a", "b"]
    attrs = {"axis": 1}
    if kind == "num-outputs":
        attrs["num_outputs"] = 3
    if kind == "empty-chunk":
        outs = ["a", "b", "c"]
        attrs["num_outputs"] = 3
    nodes = [helper.make_node("Split", ["x"], outs, name="split", **attrs),
             helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", [1, 4, 5])], [vi("y", [1, 4, 5])])


def external(location="w.bin"):
    """y = x + w, w (4 floats) stored as external data at LOCATION (the
    third argument; main() writes the data to w.bin beside the model)."""
    w = TensorProto(name="w", data_type=F, dims=[4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in [("location", location), ("offset", "0"), ("length", "16")]:
        e = w.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], [w])


def huge_initializer():
    """An initializer whose dims (2^62 x 4) overflow the element count."""
    w = TensorProto(name="w", data_type=F, dims=[2 ** 62, 4],
                    float_data=[1.0, 2.0, 3.0, 4.0])
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], [w])


def duplicate_output():
    """Two nodes write tensor 'h'."""
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="relu_a"),
             helper.make_node("Neg", ["x"], ["h"], name="neg_b"),
             helper.make_node("Abs", ["h"], ["y"], name="abs")]
    return model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])])


def no_outputs():
    """A graph that declares no output."""
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="relu")]
    return model(nodes, [vi("x", [1, 4])], [])


def tiny_values():
    """Values far below F16's smallest subnormal (6e-8): y = (x * 1e-6) *
    1e-6 then + 0 -- the product underflows to 0 in F16 although its inputs
    are normal F16 values."""
    nodes = [helper.make_node("Mul", ["x", "a"], ["p"], name="scale_a"),
             helper.make_node("Mul", ["p", "b"], ["q"], name="scale_b"),
             helper.make_node("Relu", ["q"], ["y"], name="relu")]
    inits = [const("a", np.full([1, 8], 1e-3, np.float32)),
             const("b", np.full([1, 8], 1e-5, np.float32))]
    return model(nodes, [vi("x", [1, 8])], [vi("y", [1, 8])], inits)


IF_W = np.array([[0.5], [-1.0], [2.0], [0.25]], np.float32)


def if_verifier():
    """A data-dependent If as in openWakeWord's hey_jarvis: p = Sigmoid(sum
    x); if p >= 0.5 the then-branch computes a second score from x (with its
    own initializer, a tensor named "t" as the outer graph has one, and a
    nested If doubling the score when h > 0), else the score is p."""
    inner_then = helper.make_graph(
        [helper.make_node("Mul", ["q", "two"], ["r"], name="double")], "inner_then", [],
        [vi("r", [1, 1])], [const("two", np.array([[2.0]], np.float32))])
    inner_else = helper.make_graph(
        [helper.make_node("Identity", ["q"], ["r"], name="keep")], "inner_else", [],
        [vi("r", [1, 1])])
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["t"], name="verify"),
         helper.make_node("Sigmoid", ["t"], ["q"], name="verify_sigmoid"),
         helper.make_node("Greater", ["t", "zero"], ["pos"], name="is_pos"),
         helper.make_node("If", ["pos"], ["r"], name="inner", then_branch=inner_then,
                          else_branch=inner_else)],
        "then", [], [vi("r", [1, 1])],
        [const("w", IF_W), const("zero", np.array([[0.0]], np.float32))])
    else_g = helper.make_graph([helper.make_node("Identity", ["p"], ["s"], name="first")],
                               "else", [], [vi("s", [1, 1])])
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["t"], name="sum", keepdims=1),
             helper.make_node("Sigmoid", ["t"], ["p"], name="score"),
             helper.make_node("GreaterOrEqual", ["p", "half"], ["ge"], name="ge"),
             helper.make_node("Cast", ["ge"], ["cond"], name="cond", to=TensorProto.BOOL),
             helper.make_node("If", ["cond"], ["y"], name="verifier", then_branch=then_g,
                              else_branch=else_g)]
    inits = [const("axes", np.array([1], np.int64)),
             const("half", np.array([[0.5]], np.float32))]
    return model(nodes, [vi("x", [1, 4])], [vi("y", [1, 1])], inits, opset=13)


def if_bad_branch():
    """An If whose then_branch has two outputs but the node one."""
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["a"]),
                                helper.make_node("Identity", ["x"], ["b"])], "then", [],
                               [vi("a", [1, 4]), vi("b", [1, 4])])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["c"])], "else", [],
                               [vi("c", [1, 4])])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="bad_if", then_branch=then_g,
                              else_branch=else_g)]
    return model(nodes, [vi("x", [1, 4]), vi("cond", [1], TensorProto.BOOL)],
                 [vi("y", [1, 4])])


def axes_spelling(kind):
    """A reduction whose axes take the other opsets' spelling: ReduceMean's
    axes as input 1 at opset 13 (an attribute until 18), or ReduceSum's as
    an attribute at opset 13 (input 1 from 13)."""
    if kind == "input":
        nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="m")]
    else:
        nodes = [helper.make_node("ReduceSum", ["x"], ["y"], name="s", axes=[1])]
    return model(nodes, [vi("x", [2, 3])], [vi("y", [2, 1])],
                 [const("axes", np.array([1], np.int64))] if kind == "input" else [])


def big_matmul():
    """y = x W with W (512 x 600 floats, 1.2 MB): coefficients past the 1 MiB
    whose check code tpusim verifies beside the simulation."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return model(nodes, [vi("x", [1, 512])], [vi("y", [1, 600])],
                 [const("w", arange([512, 600], 1e-5))])


MODELS = {f.__name__: f for f in [axes_spelling, big_matmul, conv_bn_relu, shape_subgraph, gemm, clip_variants,
                                  clip_opset6, resize_cubic, resize_crop, resize_nearest, unsupported,
                                  two_inputs, split_slice, split_bad, external, huge_initializer,
                                  duplicate_output, no_outputs, tiny_values, if_verifier,
                                  if_bad_branch]}


def main():
    name, out = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    onnx.save(MODELS[name](*args), out)
    if name == "external":
        import os
        np.array([1, 2, 3, 4], np.float32).tofile(
            os.path.join(os.path.dirname(os.path.abspath(out)), "w.bin"))


if __name__ == "__main__":
    main()
