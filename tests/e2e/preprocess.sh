#!/usr/bin/env bash
# Image inputs end to end: a small ONNX CNN (Conv 3x3 -> Relu -> Conv 1x1)
# through `tpuc transform --mean --scale --pixel-format bgr --resize-dims`,
# the top.preprocess attribute checked in the .mlir, then
#   tpuc run -i image.png / image.jpg  ==  tpuc run -i <npz numpy made with
#   the same preprocessing (tests/data/preprocess/preprocess_ref.py)>
# bit for bit (--max-abs-rel 0), and transform --test-input image.png writes
# the same tensor as <stem>_in_f32.npz. Then the bad inputs: a truncated, a
# random-bytes and a CMYK image, wrong counts of --mean and --scale, a
# pixel format the input's channels do not match: each exits 1 with a
# message naming the file or option, and writes nothing.
#
#   preprocess.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
DATA="$ROOT/tests/data/preprocess"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

PYTHONPATH="$DATA" /usr/bin/python3 - <<'PY'
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

import preprocess_ref as ref

rng = np.random.default_rng(5)
F = TensorProto.FLOAT
def const(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)
graph = helper.make_graph(
    [helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
     helper.make_node("Relu", ["c1"], ["r1"]),
     helper.make_node("Conv", ["r1", "w2", "b2"], ["y"])],
    "preprocess_cnn",
    [helper.make_tensor_value_info("image", F, [1, 3, 24, 20])],
    [helper.make_tensor_value_info("y", F, [1, 4, 24, 20])],
    [const("w1", rng.standard_normal((8, 3, 3, 3)) * 0.2),
     const("b1", rng.standard_normal(8) * 0.1),
     const("w2", rng.standard_normal((4, 8, 1, 1)) * 0.3),
     const("b2", rng.standard_normal(4) * 0.1)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(model, "cnn.onnx")
# A gray model for the channel-count error.
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"])], "gray",
    [helper.make_tensor_value_info("x", F, [1, 1, 8, 8])],
    [helper.make_tensor_value_info("y", F, [1, 1, 8, 8])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
          "gray.onnx")

# A 37 x 29 photo-like image, as PNG and JPEG.
y, x = np.mgrid[0:37, 0:29]
img = np.stack([x * 8, y * 6, (x + y) * 4], 2) + rng.integers(0, 60, (37, 29, 3))
img = np.clip(img, 0, 255).astype(np.uint8)
Image.fromarray(img).save("image.png")
Image.fromarray(img).save("image.jpg", quality=90)
opts = dict(mean=[103.94, 116.78, 123.68], scale=[0.017, 0.017, 0.017],
            pixel_format="bgr", resize_dims=[28, 24])
for name in ("png", "jpg"):
    np.savez("image_%s.npz" % name,
             image=ref.preprocess("image." + name, [1, 3, 24, 20], **opts))
# Damaged inputs.
data = open("image.jpg", "rb").read()
open("truncated.jpg", "wb").write(data[:len(data) * 2 // 3])
open("random.png", "wb").write(rng.integers(0, 256, 500, dtype=np.uint8).tobytes())
Image.fromarray(img).convert("CMYK").save("cmyk.jpg")
PY

set -x
"$BIN/tpuc" transform cnn.onnx -o cnn_top.mlir --mean 103.94,116.78,123.68 \
  --scale 0.017 --pixel-format bgr --resize-dims 28,24 \
  --test-input image.png --test-result ref_png.npz
# The attribute, one scale per channel, the defaults filled in.
grep -q 'top.preprocess = {channel_format = "nchw", keep_aspect_ratio = false, mean = \[1.039400e+02, 1.167800e+02, 1.236800e+02\], pad_type = "center", pad_value = 0 : i64, pixel_format = "bgr", resize_dims = \[28, 24\], scale = \[1.700000e-02, 1.700000e-02, 1.700000e-02\]}' cnn_top.mlir
# transform's image test input: the tensor numpy computed, bit for bit.
"$BIN/tpuc" compare cnn_top_in_f32.npz image_png.npz --tolerance 1,1 --max-abs-rel 0

for f in png jpg; do
  "$BIN/tpuc" run cnn_top.mlir -i "image.$f" -o "out_$f.npz"
  "$BIN/tpuc" run cnn_top.mlir -i "image_$f.npz" -o "out_${f}_npz.npz"
  "$BIN/tpuc" compare "out_$f.npz" "out_${f}_npz.npz" --tolerance 1,1 --max-abs-rel 0
done
"$BIN/tpuc" compare out_png.npz ref_png.npz --tolerance 1,1 --max-abs-rel 0
# The image's underscore spellings as TPU-MLIR writes them; --help tells the
# default.
"$BIN/tpuc" transform cnn.onnx -o cnn2_top.mlir --mean 103.94,116.78,123.68 \
  --scale 0.017,0.017,0.017 --pixel_format bgr --resize_dims 28,24
[ "$(grep -o 'top.preprocess = {[^}]*}' cnn_top.mlir)" = \
  "$(grep -o 'top.preprocess = {[^}]*}' cnn2_top.mlir)" ]
"$BIN/tpuc" run --help | grep -q 'without it takes the image as mean 0, scale 1'
set +x

# expect_error MESSAGE CMD...: CMD exits 1 and prints MESSAGE.
expect_error() {
  local message="$1"; shift
  local status=0
  "$@" > err.log 2>&1 || status=$?
  if [ "$status" -ne 1 ] || ! grep -qF -- "$message" err.log; then
    echo "FAIL: $* (exit $status), expected '$message', got:" >&2
    cat err.log >&2
    exit 1
  fi
  echo "ok: $*: $(cat err.log)"
}
rm -f bad*.npz bad*.mlir
expect_error "tpuc run: error: 'truncated.jpg': bad JPEG data: Premature end of JPEG file" \
  "$BIN/tpuc" run cnn_top.mlir -i truncated.jpg -o bad1.npz
expect_error "tpuc run: error: 'random.png': neither a PNG nor a JPEG file" \
  "$BIN/tpuc" run cnn_top.mlir -i random.png -o bad2.npz
expect_error "tpuc run: error: 'cmyk.jpg': bad JPEG data: a CMYK JPEG" \
  "$BIN/tpuc" run cnn_top.mlir -i cmyk.jpg -o bad3.npz
expect_error "tpuc transform: error: 'cmyk.jpg': bad JPEG data: a CMYK JPEG" \
  "$BIN/tpuc" transform cnn.onnx -o bad4.mlir --test-input cmyk.jpg --test-result bad4.npz
expect_error "tpuc transform: error: 'cnn.onnx': --mean has 2 values, input 'image' (1x3x24x20, nchw) with --pixel-format bgr needs 1 or 3" \
  "$BIN/tpuc" transform cnn.onnx -o bad5.mlir --mean 1,2 --pixel-format bgr
expect_error "tpuc transform: error: 'cnn.onnx': --scale has 4 values" \
  "$BIN/tpuc" transform cnn.onnx -o bad6.mlir --scale 1,2,3,4
expect_error "tpuc transform: error: --mean '1,x,3': 'x' is not a number" \
  "$BIN/tpuc" transform cnn.onnx -o bad7.mlir --mean 1,x,3
expect_error "tpuc transform: error: 'gray.onnx': --pixel-format rgb needs 3 channels, input 'x' (1x1x8x8, nchw) has 1" \
  "$BIN/tpuc" transform gray.onnx -o bad8.mlir --mean 1
expect_error "tpuc transform: error: 'cnn.onnx': --resize-dims 20,20 is smaller than input 'image'" \
  "$BIN/tpuc" transform cnn.onnx -o bad9.mlir --resize-dims 20,20
expect_error "tpuc transform: error: --pixel-format 'rgba': expected rgb, bgr or gray" \
  "$BIN/tpuc" transform cnn.onnx -o bad10.mlir --pixel-format rgba
# A module that records no preprocessing takes an image as rgb: a gray
# model's input does not fit, and the message says why.
expect_error "tpuc run: error: 'image.png': --pixel-format rgb needs 3 channels, input 'x' (1x1x8x8, nchw) has 1 (the module records no preprocessing" \
  bash -c "'$BIN/tpuc' transform gray.onnx -o gray_top.mlir >/dev/null && '$BIN/tpuc' run gray_top.mlir -i image.png -o bad11.npz"
left=$(ls bad* 2>/dev/null || true)
if [ -n "$left" ]; then
  echo "FAIL: outputs written by failing commands: $left" >&2
  exit 1
fi
echo "preprocess: PASS"
