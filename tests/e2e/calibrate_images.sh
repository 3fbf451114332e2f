#!/usr/bin/env bash
# tpuc calibrate on a dataset of images: a small ONNX CNN (Conv 3x3 -> Relu
# -> Conv 1x1, input 1x3x24x20) through `tpuc transform --mean --scale
# --pixel-format bgr`, six 20x24 images written with PIL (four PNG, two
# JPEG: already at the input's size, so no resize happens), then
#   tpuc calibrate --dataset images/  ==  tpuc calibrate --dataset npz/
# byte for byte (SOURCE_DATE_EPOCH fixes the time line), npz/ holding the
# same images preprocessed by numpy with the documented formula
# y = (float32(x) - float32(mean[c])) * float32(scale[c]), model channel c
# from RGB channel 2 - c (bgr), NCHW (JPEG pixels as PIL decodes them: the
# same libjpeg-turbo). Both for --method minmax and kld. Then the bad
# datasets, each exit 1 with a message naming the file and no table: an
# image that does not decode, a directory mixing .npz samples and images, a
# .bmp.
#
#   calibrate_images.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
rm -rf "$WORK"
mkdir -p "$WORK/images" "$WORK/npz" "$WORK/bad" "$WORK/mixed" "$WORK/bmp"
cd "$WORK"

/usr/bin/python3 - <<'PY'
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

rng = np.random.default_rng(7)
F = TensorProto.FLOAT
def const(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)
graph = helper.make_graph(
    [helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
     helper.make_node("Relu", ["c1"], ["r1"]),
     helper.make_node("Conv", ["r1", "w2", "b2"], ["y"])],
    "cali_images",
    [helper.make_tensor_value_info("image", F, [1, 3, 24, 20])],
    [helper.make_tensor_value_info("y", F, [1, 4, 24, 20])],
    [const("w1", rng.standard_normal((8, 3, 3, 3)) * 0.2),
     const("b1", rng.standard_normal(8) * 0.1),
     const("w2", rng.standard_normal((4, 8, 1, 1)) * 0.3),
     const("b2", rng.standard_normal(4) * 0.1)])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          "cnn.onnx")

mean = np.array([103.94, 116.78, 123.68], np.float32)
scale = np.array([0.017, 0.018, 0.019], np.float32)
y, x = np.mgrid[0:24, 0:20]
for i in range(6):
    img = np.stack([x * (4 + i), y * (3 + i), (x + y) * 2 + 10 * i], 2)
    img = img + rng.integers(0, 40 + 20 * i, (24, 20, 3))
    img = np.clip(img, 0, 255).astype(np.uint8)
    name = "images/img_%02d.%s" % (i, "jpg" if i % 3 == 2 else "png")
    Image.fromarray(img).save(name, quality=90)
    pixels = np.asarray(Image.open(name).convert("RGB"))  # the decoded bytes
    bgr = pixels[:, :, ::-1].astype(np.float32)
    t = ((bgr - mean) * scale).transpose(2, 0, 1)[None].astype(np.float32)
    np.savez("npz/img_%02d.npz" % i, image=t)

# Bad datasets.
good = open("images/img_00.png", "rb").read()
open("bad/a.png", "wb").write(good)
open("bad/b.png", "wb").write(good[:len(good) // 2])       # truncated
open("mixed/a.npz", "wb").write(open("npz/img_00.npz", "rb").read())
open("mixed/b.png", "wb").write(good)
open("bmp/a.bmp", "wb").write(b"BM" + bytes(60))
PY

set -x
"$BIN/tpuc" transform cnn.onnx -o model_top.mlir --input-shapes "[[1,3,24,20]]" \
  --mean 103.94,116.78,123.68 --scale 0.017,0.018,0.019 --pixel-format bgr
grep -q 'top.preprocess' model_top.mlir
for m in minmax kld; do
  SOURCE_DATE_EPOCH=0 "$BIN/tpuc" calibrate model_top.mlir --dataset images \
    --input-num 6 -o "images_$m.table" --method "$m"
  SOURCE_DATE_EPOCH=0 "$BIN/tpuc" calibrate model_top.mlir --dataset npz \
    --input-num 6 -o "npz_$m.table" --method "$m"
  cmp "images_$m.table" "npz_$m.table"
done
grep -q '^# sample number: 6$' images_minmax.table
set +x

# expect_error DATASET PATTERN: exit 1, PATTERN in stderr, no table.
expect_error() {
  local status=0
  "$BIN/tpuc" calibrate model_top.mlir --dataset "$1" --input-num 4 \
    -o err.table 2>err.txt || status=$?
  cat err.txt
  [ "$status" -eq 1 ] || { echo "FAIL: $1: exit $status, expected 1"; exit 1; }
  grep -q -- "$2" err.txt || { echo "FAIL: $1: no '$2' in the message"; exit 1; }
  [ ! -e err.table ] || { echo "FAIL: $1: err.table written"; exit 1; }
}
expect_error bad "bad/b.png"
expect_error mixed "mixes .npz samples ('a.npz') and images ('b.png')"
expect_error bmp "bmp/a.bmp': BMP images are not supported"
echo "calibrate_images.sh: PASS"
