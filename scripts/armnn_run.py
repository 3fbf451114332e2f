#!/usr/bin/python3
"""Runs a .tflite model through Arm NN's TFLite parser on its reference CPU
backend (CpuRef; Debian's python3-pyarmnn and libarmnn-cpuref-backend22),
an implementation of TFLite's operators independent of ours.

    armnn_run.py MODEL.tflite IN.npz OUT.npz

IN.npz holds one float32 array per input of subgraph 0, keyed by the
TFLite input names; OUT.npz gets every output under its TFLite name, as
Arm NN returns it (a quantised model ending in DEQUANTIZE returns floats).

Exit status 77 when pyarmnn or its CpuRef backend is missing (the message
says which), 1 on any other failure (Arm NN's own message).
"""

import argparse
import contextlib
import io
import sys

import numpy as np


def load_armnn():
    # pyarmnn prints a line per parser it was built without (Caffe, ONNX,
    # TF); they say nothing about the TFLite parser used here.
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            import pyarmnn as ann
        except ImportError as e:
            print(f"armnn_run: pyarmnn is not installed ({e}): "
                  "apt-get install python3-pyarmnn libarmnn-cpuref-backend22", file=sys.stderr)
            sys.exit(77)
    return ann


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("output")
    args = ap.parse_args()
    ann = load_armnn()
    parser = ann.ITfLiteParser()
    net = parser.CreateNetworkFromBinaryFile(args.model)
    runtime = ann.IRuntime(ann.CreationOptions())
    try:
        opt, _ = ann.Optimize(net, [ann.BackendId("CpuRef")], runtime.GetDeviceSpec(),
                              ann.OptimizerOptions())
    except RuntimeError as e:
        if "None of the preferred backends" in str(e):
            print(f"armnn_run: Arm NN has no CpuRef backend ({e}): "
                  "apt-get install libarmnn-cpuref-backend22", file=sys.stderr)
            sys.exit(77)
        raise
    net_id, _ = runtime.LoadNetwork(opt)
    data = np.load(args.inputs)
    in_names = parser.GetSubgraphInputTensorNames(0)
    out_names = parser.GetSubgraphOutputTensorNames(0)
    bindings, arrays = [], []
    for name in in_names:
        if name not in data:
            sys.exit(f"armnn_run: {args.inputs} has no array '{name}' "
                     f"(the model's inputs: {', '.join(in_names)})")
        b = parser.GetNetworkInputBindingInfo(0, name)
        info = b[1]
        shape = tuple(info.GetShape()[i] for i in range(info.GetNumDimensions()))
        x = np.ascontiguousarray(data[name], dtype=np.float32)
        if x.size != int(np.prod(shape)):
            sys.exit(f"armnn_run: input '{name}' has shape {list(x.shape)}, "
                     f"the model {list(shape)}")
        bindings.append(b)
        arrays.append(x.reshape(shape))
    out_bindings = [parser.GetNetworkOutputBindingInfo(0, n) for n in out_names]
    outputs = ann.make_output_tensors(out_bindings)
    runtime.EnqueueWorkload(net_id, ann.make_input_tensors(bindings, arrays), outputs)
    results = ann.workload_tensors_to_ndarray(outputs)
    np.savez(args.output, **dict(zip(out_names, results)))


if __name__ == "__main__":
    main()
