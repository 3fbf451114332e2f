"""The image preprocessing of tpuc (compiler/include/tpuc/Support/Preprocess.h)
restated in numpy, step for step, for the tests: the unit tests
(tests/unit/compiler/PreprocessTest.cpp, data from gen_images.py) and the
end-to-end test (tests/e2e/preprocess.sh) compare tpuc with it.

Images are decoded with PIL (np.uint8, HWC, gray or RGB), everything after
that is numpy. The resize is the same sequence of float64 operations as
tpuc's resizeBilinear, so both round every pixel the same way; it is not
PIL's resize (whose bilinear filter has a support that widens when it
downscales) and not OpenCV's (11-bit fixed-point weights).
"""
import numpy as np
from PIL import Image


def decode(path):
    """The 8-bit pixels tpuc's decodeImage gives: gray (H, W, 1) or RGB
    (H, W, 3); alpha dropped, palettes expanded, 16 bits to the high byte."""
    im = Image.open(path)
    if im.mode in ("I;16", "I;16B", "I"):
        a = (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
        return a[:, :, None]
    if im.mode in ("1", "L", "LA"):
        return np.asarray(im.convert("L"))[:, :, None]
    return np.asarray(im.convert("RGB"))


def to_channels(img, channels):
    if img.shape[2] == channels:
        return img
    if channels == 1:
        r, g, b = (img[:, :, k].astype(np.uint32) for k in range(3))
        return ((4899 * r + 9617 * g + 1868 * b + 8192) >> 14).astype(
            np.uint8)[:, :, None]
    return np.repeat(img, channels, axis=2)


def _taps(n_in, n_out):
    scale = float(n_in) / float(n_out)
    d = np.arange(n_out, dtype=np.float64)
    s = np.clip((d + 0.5) * scale - 0.5, 0.0, float(n_in - 1))
    i0 = np.floor(s).astype(np.int64)
    return i0, np.minimum(i0 + 1, n_in - 1), s - i0


def resize(img, h, w):
    """Bilinear, half-pixel centres, rounded to the nearest uint8."""
    if img.shape[0] == h and img.shape[1] == w:
        return img
    y0, y1, fy = _taps(img.shape[0], h)
    x0, x1, fx = _taps(img.shape[1], w)
    a = img.astype(np.float64)
    fx = fx[None, :, None]
    fy = fy[:, None, None]
    top = a[y0][:, x0] * (1.0 - fx) + a[y0][:, x1] * fx
    bottom = a[y1][:, x0] * (1.0 - fx) + a[y1][:, x1] * fx
    v = top * (1.0 - fy) + bottom * fy
    return np.clip(np.floor(v + 0.5), 0, 255).astype(np.uint8)


def letterbox(img, h, w, pad_type="center", pad_value=0):
    ih, iw = img.shape[:2]
    s = min(float(w) / iw, float(h) / ih)
    rw = min(max(int(iw * s), 1), w)
    rh = min(max(int(ih * s), 1), h)
    r = resize(img, rh, rw)
    out = np.full((h, w, img.shape[2]), pad_value, np.uint8)
    top, left = ((h - rh) // 2, (w - rw) // 2) if pad_type == "center" else (0, 0)
    out[top:top + rh, left:left + rw] = r
    return out


def preprocess(path, shape, mean=(0,), scale=(1,), pixel_format="rgb",
               channel_format="nchw", resize_dims=None,
               keep_aspect_ratio=False, pad_type="center", pad_value=0):
    """The float32 model input of `shape` for the image at `path`."""
    nchw = channel_format == "nchw"
    n = shape[0]
    c, h, w = (shape[1], shape[2], shape[3]) if nchw else (shape[3], shape[1], shape[2])
    rh, rw = resize_dims if resize_dims else (h, w)
    img = to_channels(decode(path), c)
    if keep_aspect_ratio:
        img = letterbox(img, rh, rw, pad_type, pad_value)
    else:
        img = resize(img, rh, rw)
    top, left = rh // 2 - h // 2, rw // 2 - w // 2
    img = img[top:top + h, left:left + w]
    if pixel_format == "bgr":
        img = img[:, :, ::-1]
    x = img.astype(np.float32)
    mean = np.broadcast_to(np.asarray(mean, np.float64).astype(np.float32), (c,))
    scale = np.broadcast_to(np.asarray(scale, np.float64).astype(np.float32), (c,))
    x = (x - mean) * scale  # float32 throughout
    if nchw:
        x = x.transpose(2, 0, 1)
    return np.ascontiguousarray(np.repeat(x[None], n, axis=0), np.float32)
