#!/usr/bin/python3
"""Copies an ONNX model with every node output also made a graph output.

    /usr/bin/python3 scripts/onnx_expose_outputs.py model.onnx all.onnx [--shapes x=1,3,48,192]

ONNX Runtime then returns every intermediate tensor (scripts/ort_run.js
writes them all to its .npz), to set beside `tpuc run --dump-all` with
`tpuc compare`: the first failing row in program order is where a wrong
number is born. Outputs of Constant nodes are left out. --shapes fixes the
input shapes first, so that shape inference can type the new outputs.
"""

import argparse
import sys

import onnx
from onnx import shape_inference


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--shapes", action="append", default=[],
                    help="NAME=D0,D1,... fixes an input's shape (repeatable)")
    args = ap.parse_args()

    model = onnx.load(args.model)
    graph = model.graph
    fixed = {}
    for spec in args.shapes:
        name, _, dims = spec.partition("=")
        fixed[name] = [int(d) for d in dims.split(",") if d]
    for inp in graph.input:
        if inp.name in fixed:
            shape = inp.type.tensor_type.shape
            del shape.dim[:]
            for d in fixed.pop(inp.name):
                shape.dim.add().dim_value = d
    if fixed:
        sys.exit(f"onnx_expose_outputs: error: no inputs named {', '.join(fixed)}")

    inferred = shape_inference.infer_shapes(model)
    types = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    existing = {o.name for o in graph.output}
    for node in graph.node:
        if node.op_type == "Constant":
            continue
        for name in node.output:
            if not name or name in existing:
                continue
            existing.add(name)
            if name in types:
                graph.output.append(types[name])
            else:
                graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
