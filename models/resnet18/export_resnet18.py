#!/usr/bin/env python3
"""Exports a ResNet with seeded random weights to ONNX.

No weights are downloaded: torchvision.models.resnet18(weights=None) builds
the network with torchvision's own initialisation, drawn from a fixed
torch.manual_seed, so every run gives the same model. Also writes a
deterministic input (seeded normal(0, 1), like a normalised image).

  /usr/bin/python3 models/resnet18/export_resnet18.py -o resnet18.onnx \
      [--arch resnet18|resnet18v2|resnet50|mobilenet_v2|regnet_x_400mf|
              lraspp_mobilenet_v3_large]
      [--batch N] [--input in.npz]

--arch (default resnet18):
  resnet18    torchvision's ResNet-18.
  resnet18v2  the pre-activation ResNet-18 of the ONNX model zoo's
              resnet18-v2 (He et al., "Identity Mappings in Deep Residual
              Networks"; the zoo model comes from MXNet Gluon's
              resnet18_v2): a parameter-free BatchNorm on the input; a 7x7
              conv, BatchNorm, ReLU and max-pool; eight blocks of
              BatchNorm -> ReLU -> 3x3 conv -> BatchNorm -> ReLU -> 3x3 conv
              plus the shortcut (a strided 1x1 conv of the pre-activated
              input where the shape changes); a final BatchNorm and ReLU;
              global average pool and a 1000-way linear layer. Only the
              BatchNorm right after a conv can fold into it; the input's,
              each block's first and the final one stay in the graph, as in
              the zoo model the published BM1684X figures were measured on.
              Its BatchNorm statistics are seeded random (mean in
              [-0.1, 0.1], variance in [0.5, 1.5], scale in [0.5, 1.5],
              shift in [-0.1, 0.1]) so that they are not identities.
  resnet50    torchvision's ResNet-50.
  mobilenet_v2  torchvision's MobileNetV2 (depthwise convs, ReLU6,
              linear bottlenecks).
  regnet_x_400mf  torchvision's RegNetX-400MF (grouped 3x3 convs of 16
              channels per group, residual adds).
  lraspp_mobilenet_v3_large  torchvision's LR-ASPP segmentation network on
              a MobileNetV3-Large backbone (hard-swish, squeeze-excite,
              bilinear resizes; its "out" map [N, 21, 224, 224] is the
              output), BatchNorm statistics measured as for mobilenet_v2.

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


ARCHS = ("resnet18", "resnet18v2", "resnet50", "mobilenet_v2", "regnet_x_400mf",
         "lraspp_mobilenet_v3_large")


def preact_resnet18(torch):
    """The pre-activation ResNet-18 (see --arch resnet18v2)."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.bn1 = nn.BatchNorm2d(cin)
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.down = (nn.Conv2d(cin, cout, 1, stride, bias=False)
                         if stride != 1 or cin != cout else None)

        def forward(self, x):
            shortcut = x
            x = torch.relu(self.bn1(x))
            if self.down is not None:
                shortcut = self.down(x)
            x = torch.relu(self.bn2(self.conv1(x)))
            return self.conv2(x) + shortcut

    class PreActResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn_data = nn.BatchNorm2d(3, affine=False)
            self.conv0 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn0 = nn.BatchNorm2d(64)
            self.pool = nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.bn_final = nn.BatchNorm2d(512)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = self.pool(torch.relu(self.bn0(self.conv0(self.bn_data(x)))))
            x = torch.relu(self.bn_final(self.blocks(x)))
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
            return self.fc(x)

    model = PreActResNet18()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.1, 0.1)
    return model


def recalibrate_batchnorm(torch, model):
    """Sets every BatchNorm's running statistics to those of seeded random
    images (cumulative average over 4 batches of 8), then back to eval.

    With weights=None torchvision's MobileNetV2 keeps mean 0 / variance 1
    statistics, and its activations fade layer after layer (the output is
    ~1e-9): a network on which no quantisation figure means anything. With
    statistics measured on data every BatchNorm normalises, as in a trained
    network."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    gen = torch.Generator().manual_seed(MODEL_SEED + 1)
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn((8,) + IMAGE_SHAPE, generator=gen))
    model.eval()


def export_model(path, batch, arch="resnet18"):
    import torch
    import torchvision

    torch.manual_seed(MODEL_SEED)
    if arch == "resnet18v2":
        model = preact_resnet18(torch).eval()
    elif arch == "lraspp_mobilenet_v3_large":
        net = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None)

        class OutMap(torch.nn.Module):
            # The segmentation models return a dict; the map is "out".
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)["out"]

        model = OutMap(net).eval()
    else:
        model = getattr(torchvision.models, arch)(weights=None).eval()
    if arch in ("mobilenet_v2", "lraspp_mobilenet_v3_large"):
        recalibrate_batchnorm(torch, model)
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
    parser.add_argument("--arch", choices=ARCHS, default="resnet18",
                        help="network (default resnet18)")
    parser.add_argument("--batch", type=int, default=1, help="fixed batch size (default 1)")
    parser.add_argument("--input", help="also write a deterministic input .npz here")
    args = parser.parse_args()
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    try:
        export_model(args.output, args.batch, args.arch)
        if args.input:
            write_input(args.input, args.batch)
    except ImportError as e:
        print(f"export_resnet18: error: {e} (scripts/setup.sh installs "
              "python3-torch and python3-torchvision)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
