#!/usr/bin/python3
"""Writes a malformed or unsupported .tflite for the TFLite reader's error
tests (tflite-errors.test).

    tflite_bad.py KIND OUT.tflite

KIND: good (a valid one-op model), no-identifier, truncated, corrupt,
short-buffer, tensor-index, opcode-index, op-cycle, subgraph-cycle, while,
batch-pinned, batch-reduce, batch-scalar-rank, unsupported, quantized-input, empty.
"""

import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "scripts"))
from tflite_ref import ModelBuilder, write_json  # noqa: E402


def good():
    b = ModelBuilder()
    x = b.tensor("x", [1, 4])
    y = b.tensor("y", [1, 4])
    b.op("ADD", [x, b.const("c", np.ones(4, np.float32))], [y], "AddOptions", {})
    return b.json([x], [y])


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    m = good()
    if kind == "good":
        write_json(m, out)
    elif kind in ("no-identifier", "truncated", "corrupt"):
        write_json(m, out)
        data = bytearray(open(out, "rb").read())
        if kind == "no-identifier":
            data[4:8] = b"ONNX"
        elif kind == "truncated":
            data = data[:len(data) // 2]
        else:
            # The root table offset points past the end of the buffer.
            data[0:4] = struct.pack("<I", len(data) + 64)
        write_bytes(out, bytes(data))
    elif kind == "empty":
        write_bytes(out, b"")
    elif kind == "short-buffer":
        # Tensor 'c' is [1, 4] float32 (16 bytes) but its buffer holds 12.
        m["buffers"][1]["data"] = m["buffers"][1]["data"][:12]
        write_json(m, out)
    elif kind == "tensor-index":
        m["subgraphs"][0]["operators"][0]["inputs"][1] = 7
        write_json(m, out)
    elif kind == "opcode-index":
        m["subgraphs"][0]["operators"][0]["opcode_index"] = 3
        write_json(m, out)
    elif kind == "op-cycle":
        # y = x + z; z = y + c: each operator reads what the other writes.
        b = ModelBuilder()
        x = b.tensor("x", [1, 4])
        y = b.tensor("y", [1, 4])
        z = b.tensor("z", [1, 4])
        b.op("ADD", [x, z], [y], "AddOptions", {})
        b.op("ADD", [y, b.const("c", np.ones(4, np.float32))], [z], "AddOptions", {})
        write_json(b.json([x], [y]), out)
    elif kind == "subgraph-cycle":
        # Subgraph 0's IF runs subgraph 1, whose IF runs subgraph 0 again.
        b = ModelBuilder()
        c = b.tensor("cond", [], dtype="BOOL")
        x = b.tensor("x", [1, 4])
        y = b.tensor("y", [1, 4])
        b.op("IF", [c, x], [y], "IfOptions",
             {"then_subgraph_index": 1, "else_subgraph_index": 1})
        m = b.json([c, x], [y])
        sub = dict(m["subgraphs"][0])
        sub["name"] = "branch"
        sub["operators"] = [dict(sub["operators"][0],
                                 builtin_options={"then_subgraph_index": 0,
                                                  "else_subgraph_index": 0})]
        m["subgraphs"].append(sub)
        write_json(m, out)
    elif kind == "while":
        # y = WHILE(x) with a condition and a body subgraph, then CALL_ONCE
        # of an init subgraph: well-formed calls the importer has no
        # translation for.
        b = ModelBuilder()
        x = b.tensor("x", [1, 4])
        y = b.tensor("y", [1, 4])
        b.op("WHILE", [x], [y], "WhileOptions",
             {"cond_subgraph_index": 1, "body_subgraph_index": 2})
        b.op("CALL_ONCE", [], [], "CallOnceOptions", {"init_subgraph_index": 2})
        m = b.json([x], [y])
        for name in ("cond", "body"):
            sb = ModelBuilder()
            sb.codes = list(b.codes)
            sb.buffers = m["buffers"]
            bx = sb.tensor("bx", [1, 4])
            by = sb.tensor("by", [1, 4])
            sb.op("ADD", [bx, bx], [by], "AddOptions", {})
            sub = sb.json([bx], [by])
            m["operator_codes"] = sub["operator_codes"]
            b.codes = sb.codes
            m["subgraphs"].append(dict(sub["subgraphs"][0], name=name))
        write_json(m, out)
    elif kind == "batch-pinned":
        # SLICE of [1, 6] to [1, 4] at [0, 1]: its begin / size spell the
        # batch of 1 out, so tpuc transform --batch cannot follow it.
        b = ModelBuilder()
        x = b.tensor("x", [1, 6])
        y = b.tensor("y", [1, 4])
        b.op("SLICE", [x, b.const("begin", np.array([0, 1]), "INT32"),
                       b.const("size", np.array([1, 4]), "INT32")], [y])
        write_json(b.json([x], [y]), out)
    elif kind == "batch-reduce":
        # MEAN of [1, 4, 8] over axes 0 and 2 without keep_dims: [4], the
        # batch axis reduced away and another kept, then RESHAPE to the
        # literal [1, 4]; no per-sample form.
        b = ModelBuilder()
        x = b.tensor("x", [1, 4, 8])
        m = b.tensor("m", [4])
        b.op("MEAN", [x, b.const("axes", np.array([0, 2]), "INT32")], [m], "ReducerOptions",
             {"keep_dims": False})
        y = b.tensor("y", [1, 4])
        b.op("RESHAPE", [m, b.const("shape", np.array([1, 4]), "INT32")], [y])
        write_json(b.json([x], [y]), out)
    elif kind == "batch-scalar-rank":
        # The maximum of the [1, 8] sample x (REDUCE_MAX to a scalar) added
        # to the [1, 4, 8] sample z: per sample the maximum is [N, 1], which
        # [N, 4, 8] broadcasts along its axis 1, not the batch (for a batch
        # of 4 the shapes even come out right: [4, 4, 8]).
        b = ModelBuilder()
        x = b.tensor("x", [1, 8])
        z = b.tensor("z", [1, 4, 8])
        m = b.tensor("m", [])
        b.op("REDUCE_MAX", [x, b.const("axes", np.array([0, 1]), "INT32")], [m],
             "ReducerOptions", {"keep_dims": False})
        y = b.tensor("y", [1, 4, 8])
        b.op("ADD", [z, m], [y], "AddOptions", {})
        write_json(b.json([x, z], [y]), out)
    elif kind == "unsupported":
        b = ModelBuilder()
        x = b.tensor("x", [4, 4])
        y = b.tensor("y", [4, 4])
        z = b.tensor("z", [4, 4])
        w = b.tensor("w", [4, 4])
        b.op("CUMSUM", [x, b.const("axis", np.array(0), "INT32")], [y])
        b.op("FLOOR", [y], [z])
        b.op("CUMSUM", [z, b.const("axis2", np.array(1), "INT32")], [w])
        write_json(b.json([x], [w]), out)
    elif kind == "quantized-input":
        b = ModelBuilder()
        # int8 activations without scales: not a quantised model either.
        x = b.tensor("x", [1, 4], dtype="INT8")
        y = b.tensor("y", [1, 4], dtype="INT8")
        b.op("RELU", [x], [y])
        write_json(b.json([x], [y]), out)
    else:
        sys.exit(f"tflite_bad.py: unknown kind {kind}")


if __name__ == "__main__":
    main()
