#!/usr/bin/env python3
"""Exports torchvision's ResNet-18 with seeded random weights to ONNX.

No weights are downloaded: torchvision.models.resnet18(weights=None) builds
the network with torchvision's own initialisation, drawn from a fixed
torch.manual_seed, so every run gives the same model. Also writes a
deterministic input (seeded normal(0, 1), like a normalised image).

  /usr/bin/python3 models/resnet18/export_resnet18.py -o resnet18.onnx \
      [--batch N] [--input in.npz]

The ONNX graph has one input "input" [N,3,224,224] float32 and one output
"output" [N,1000]; N is fixed (no dynamic axes). Opset 13, exported by the
TorchScript exporter (the one Debian's python3-torch 1.13 has; the dynamo
exporter needs onnxscript, which Debian does not package).

Idempotent: writes to temporary files in the target directories and renames,
so a failed run never leaves a half-written file.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

MODEL_SEED = 18  # fixed so the random weights are the same on every run
INPUT_SEED = 224  # fixed so the input is the same on every run
OPSET = 13
IMAGE_SHAPE = (3, 224, 224)  # ResNet-18's ImageNet input, channels first


def replace_atomically(path, write):
    """Calls write(tmp_path) on a temporary file beside path, then renames it."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        write(tmp)
        # mkstemp creates the file 0600; give it the mode open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def export_model(path, batch):
    import torch
    import torchvision

    torch.manual_seed(MODEL_SEED)
    model = torchvision.models.resnet18(weights=None).eval()
    example = torch.zeros((batch,) + IMAGE_SHAPE, dtype=torch.float32)

    def write(tmp):
        with torch.no_grad():
            torch.onnx.export(
                model,
                example,
                tmp,
                opset_version=OPSET,
                input_names=["input"],
                output_names=["output"],
                do_constant_folding=True,
            )

    replace_atomically(path, write)


def write_input(path, batch):
    rng = np.random.default_rng(INPUT_SEED)
    data = rng.standard_normal((batch,) + IMAGE_SHAPE).astype(np.float32)

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, input=data)

    replace_atomically(path, write)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="ONNX file to write")
    parser.add_argument("--batch", type=int, default=1, help="fixed batch size (default 1)")
    parser.add_argument("--input", help="also write a deterministic input .npz here")
    args = parser.parse_args()
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    try:
        export_model(args.output, args.batch)
        if args.input:
            write_input(args.input, args.batch)
    except ImportError as e:
        print(f"export_resnet18: error: {e} (scripts/setup.sh installs "
              "python3-torch and python3-torchvision)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
