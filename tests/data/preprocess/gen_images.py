#!/usr/bin/env python3
"""Writes the images and expected tensors of the preprocessing unit tests
(tests/unit/compiler/PreprocessTest.cpp):

  *.png, *.jpg   small images written by PIL (and one 16-bit RGB PNG by
                 hand: PIL writes none), plus damaged ones (truncated, random
                 bytes, CMYK JPEG);
  cases.json     the preprocessing cases: image, input shape, options;
  expected.npz   decode_<image>: PIL's pixels (uint8, HWC) for every image
                 that decodes; case_<name>: the float32 input tensor of
                 preprocess_ref.preprocess.

Run it again after changing a case; the outputs are checked in.
"""
import json
import os
import struct
import zlib

import numpy as np
from PIL import Image

import preprocess_ref as ref

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(1684)


def path(name):
    return os.path.join(here, name)


def smooth(h, w, c):
    """A random image with some structure (JPEG of pure noise is all
    artefacts): a gradient plus noise."""
    y, x = np.mgrid[0:h, 0:w]
    base = (x * 255.0 / max(w - 1, 1))[:, :, None] * np.linspace(0.3, 1, c)
    base += (y * 128.0 / max(h - 1, 1))[:, :, None]
    return np.clip(base * 0.6 + rng.integers(0, 80, (h, w, c)), 0, 255).astype(
        np.uint8)


def png16_rgb(name, pixels):
    """A 16-bit RGB PNG (colour type 2, depth 16), written chunk by chunk."""
    h, w, _ = pixels.shape

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(
            ">I", zlib.crc32(body) & 0xffffffff)

    raw = b"".join(b"\0" + pixels[y].astype(">u2").tobytes() for y in range(h))
    data = (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    with open(path(name), "wb") as f:
        f.write(data)


def main():
    rgb = smooth(12, 16, 3)
    Image.fromarray(rgb, "RGB").save(path("rgb.png"))
    Image.fromarray(smooth(10, 9, 1)[:, :, 0], "L").save(path("gray.png"))
    rgba = np.concatenate([smooth(7, 5, 3), rng.integers(0, 256, (7, 5, 1),
                                                          dtype=np.uint8)], 2)
    Image.fromarray(rgba, "RGBA").save(path("rgba.png"))
    pal = Image.fromarray(smooth(6, 8, 3), "RGB").quantize(colors=16)
    pal.info["transparency"] = 3  # a tRNS chunk: expands to RGBA, alpha dropped
    pal.save(path("palette.png"), transparency=3)
    Image.fromarray(rng.integers(0, 2, (5, 11)).astype(bool)).save(
        path("bits1.png"))
    gray16 = rng.integers(0, 65536, (6, 7)).astype(np.uint16)
    Image.fromarray(gray16, "I;16").save(path("gray16.png"))
    png16_rgb("rgb16.png", rng.integers(0, 65536, (4, 6, 3)).astype(np.uint16))
    photo = smooth(30, 40, 3)
    Image.fromarray(photo, "RGB").save(path("rgb.jpg"), quality=90)
    Image.fromarray(photo, "RGB").save(path("progressive.jpg"), quality=85,
                                       progressive=True)
    Image.fromarray(smooth(9, 13, 1)[:, :, 0], "L").save(path("gray.jpg"),
                                                         quality=95)
    Image.fromarray(photo, "RGB").convert("CMYK").save(path("cmyk.jpg"))
    for src, dst in (("rgb.png", "truncated.png"), ("rgb.jpg", "truncated.jpg")):
        data = open(path(src), "rb").read()
        open(path(dst), "wb").write(data[:len(data) // 2])
    open(path("random.png"), "wb").write(
        rng.integers(0, 256, 300, dtype=np.uint8).tobytes())

    # The reference resize is the standard half-pixel bilinear: upscaling
    # (where PIL's filter keeps its unit support) PIL agrees within its own
    # fixed-point rounding, 1.
    for h, w in ((20, 24), (31, 45)):
        pil = np.asarray(Image.fromarray(rgb).resize((w, h), Image.BILINEAR))
        assert np.abs(pil.astype(int) - ref.resize(rgb, h, w)).max() <= 1

    expected = {}
    for name in ("rgb.png", "gray.png", "rgba.png", "palette.png", "bits1.png",
                 "gray16.png", "rgb16.png", "rgb.jpg", "progressive.jpg",
                 "gray.jpg"):
        expected["decode_" + name] = ref.decode(path(name))
    cases = {
        # No resize: decode, channel swap, mean/scale exact.
        "bgr_mean_scale": dict(image="rgb.png", shape=[1, 3, 12, 16],
                               mean=[1, 2.5, 3], scale=[0.5, 0.25, 0.0171],
                               pixel_format="bgr"),
        "rgb_one_mean": dict(image="rgb.png", shape=[1, 3, 12, 16],
                             mean=[127.5], scale=[0.0078125]),
        # Downscale (12x16 -> 8x8), upscale with a centre crop.
        "resize_down": dict(image="rgb.png", shape=[1, 3, 8, 8]),
        "resize_up_crop": dict(image="rgb.png", shape=[1, 3, 15, 17],
                               resize_dims=[20, 24], mean=[123.675, 116.28,
                                                           103.53],
                               scale=[0.0171, 0.0175, 0.0174],
                               pixel_format="bgr"),
        # Letterbox, centred, N = 2 (the image replicated).
        "letterbox_center": dict(image="rgb.jpg", shape=[2, 3, 10, 10],
                                 keep_aspect_ratio=True),
        # Letterbox at the top left, NHWC, pad value 114, crop 16x9 -> 14x9.
        "letterbox_normal_nhwc": dict(image="rgb.png", shape=[1, 14, 9, 3],
                                      resize_dims=[16, 9],
                                      keep_aspect_ratio=True,
                                      pad_type="normal", pad_value=114,
                                      channel_format="nhwc"),
        "gray": dict(image="gray.png", shape=[1, 1, 10, 9], mean=[10],
                     scale=[0.1], pixel_format="gray"),
        "rgb_to_gray": dict(image="rgb.png", shape=[1, 1, 6, 6],
                            pixel_format="gray"),
        "gray_to_bgr": dict(image="gray.jpg", shape=[1, 3, 9, 13],
                            pixel_format="bgr", mean=[1, 2, 3]),
        "progressive_resize": dict(image="progressive.jpg",
                                   shape=[1, 3, 17, 23]),
        "palette": dict(image="palette.png", shape=[1, 3, 6, 8]),
        "rgba": dict(image="rgba.png", shape=[1, 3, 7, 5], pixel_format="bgr"),
    }
    for name, case in cases.items():
        opts = {k: v for k, v in case.items() if k not in ("image", "shape")}
        expected["case_" + name] = ref.preprocess(path(case["image"]),
                                                  case["shape"], **opts)
    np.savez_compressed(path("expected.npz"), **expected)
    with open(path("cases.json"), "w") as f:
        json.dump(cases, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
