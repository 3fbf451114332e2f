#!/usr/bin/python3
"""Writes a deterministic input .npz for a model of models/manifest.json.

    /usr/bin/python3 scripts/make_inputs.py MODEL OUT.npz [--seed N] [--manifest M]
    /usr/bin/python3 scripts/make_inputs.py --tflite MODEL OUT.npz --twin-out TWIN.npz

With --tflite, MODEL is an entry of the manifest's "tflite" list: OUT.npz is
keyed by the TFLite input names and TWIN.npz holds the same arrays under the
names of the .onnx twin's inputs.

The arrays are keyed by the model's input names and have the manifest's
shapes. Each input kind (see the manifest's comment) imitates what the model
sees in use, so that activations are neither all zero nor saturated:
synthetic "document" pictures (light background, dark text-like strokes,
noise), audio tones at int16 amplitude, smooth log-mel-like features. The
same seed gives the same bytes on every machine with the same numpy.
"""

import argparse
import json
import os
import sys
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ImageNet channel statistics used by PaddleOCR's det preprocessing.
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
# openWakeWord's sample rate; its models see raw int16 samples as floats.
SAMPLE_RATE = 16000
INT16_MAX = 32767


def synthetic_page(rng, channels, height, width):
    """A light page with dark text-like strokes, values in [0, 1], CHW."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    page = 0.85 + 0.1 * (xx / max(width - 1, 1)) - 0.05 * (yy / max(height - 1, 1))
    img = np.repeat(page[None], channels, axis=0)
    # Lines of "glyphs": short dark bars separated by gaps.
    line_height = max(4, height // 6)
    for top in range(line_height // 2, height - line_height, line_height * 3 // 2):
        x = int(rng.integers(0, max(1, width // 8)))
        while x < width - 2:
            glyph = int(rng.integers(2, max(3, line_height)))
            ink = rng.uniform(0.05, 0.3, size=(channels, 1, 1))
            h0 = top + int(rng.integers(0, max(1, line_height // 4)))
            h1 = min(height, top + line_height - int(rng.integers(0, max(1, line_height // 4))))
            img[:, h0:h1, x:min(width, x + glyph)] = ink
            x += glyph + int(rng.integers(1, max(2, line_height // 2)))
    img += rng.normal(0.0, 0.02, size=img.shape)
    return np.clip(img, 0.0, 1.0).astype(np.float32)


def make_image(rng, shape, kind):
    n, c, h, w = shape
    batch = np.stack([synthetic_page(rng, c, h, w) for _ in range(n)])
    if kind == "image_imagenet":
        return (batch - IMAGENET_MEAN[None, :c, None, None]) / IMAGENET_STD[None, :c, None, None]
    return (batch - 0.5) / 0.5


def make_audio(rng, shape):
    t = np.arange(shape[-1], dtype=np.float64) / SAMPLE_RATE
    tones = [(310.0, 3000.0), (1250.0, 1500.0), (3100.0, 700.0)]
    rows = []
    for _ in range(int(np.prod(shape[:-1]))):
        phase = rng.uniform(0, 2 * np.pi, size=len(tones))
        x = sum(a * np.sin(2 * np.pi * f * t + p) for (f, a), p in zip(tones, phase))
        x += rng.normal(0.0, 200.0, size=t.shape)
        rows.append(np.clip(np.round(x), -INT16_MAX - 1, INT16_MAX))
    return np.array(rows).reshape(shape)


def make_mel(rng, shape):
    frames, bins = shape[1], shape[2]
    f = np.arange(frames)[:, None]
    b = np.arange(bins)[None, :]
    base = 1.5 + np.sin(f / 7.0) * np.cos(b / 5.0) - 0.03 * b
    out = base[None, :, :, None] + rng.normal(0.0, 0.3, size=shape)
    return out


def make_embedding(rng, shape):
    """Frames of openWakeWord embeddings: 96 features per frame changing
    smoothly from frame to frame, at a level drawn per call between 1/30 of
    and the spread its embedding model gives on our mel features (std ~15):
    the wake-word heads' sigmoids then land anywhere from ~0 to ~1 instead
    of saturating on every input."""
    frames, feats = shape[1], shape[2]
    level = 10.0 ** rng.uniform(-1.5, 0.0)
    base = rng.normal(0.0, 12.0, size=(1, 1, feats))
    drift = np.cumsum(rng.normal(0.0, 3.0, size=(shape[0], frames, feats)), axis=1)
    return level * (base + drift + rng.normal(0.0, 2.0, size=shape))


def make_input(rng, spec):
    shape = spec["shape"]
    kind = spec["kind"]
    if kind in ("image_imagenet", "image_half"):
        data = make_image(rng, shape, kind)
    elif kind == "audio_int16":
        data = make_audio(rng, shape)
    elif kind == "mel_features":
        data = make_mel(rng, shape)
    elif kind == "embedding_features":
        data = make_embedding(rng, shape)
    else:
        raise ValueError(f"unknown input kind '{kind}'")
    return np.ascontiguousarray(data, dtype=np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="model name in the manifest (e.g. ppocr_det)")
    ap.add_argument("out", help="output .npz")
    ap.add_argument("--seed", type=int, default=None,
                    help="random seed (default: derived from the model name)")
    ap.add_argument("--manifest", default=os.path.join(ROOT, "models", "manifest.json"))
    ap.add_argument("--tflite", action="store_true",
                    help="MODEL is in the manifest's tflite list")
    ap.add_argument("--twin-out", help="with --tflite: the arrays under the .onnx twin's names")
    args = ap.parse_args()

    with open(args.manifest) as f:
        manifest = json.load(f)
    models = {m["name"]: m for m in manifest["tflite" if args.tflite else "models"]}
    if args.model not in models:
        sys.exit(f"make_inputs: error: no model '{args.model}' in {args.manifest} "
                 f"(have: {', '.join(models)})")
    seed = args.seed if args.seed is not None else zlib.crc32(args.model.encode())
    rng = np.random.default_rng(seed)
    specs = models[args.model]["inputs"]
    arrays = {spec["name"]: make_input(rng, spec) for spec in specs}
    outs = [(args.out, arrays)]
    if args.twin_out:
        outs.append((args.twin_out, {spec["twin"]: arrays[spec["name"]] for spec in specs}))
    for path, data in outs:
        tmp = path + ".tmp.npz"
        np.savez(tmp, **data)
        os.replace(tmp, path)


if __name__ == "__main__":
    main()
