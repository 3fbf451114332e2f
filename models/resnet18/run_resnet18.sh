#!/usr/bin/env bash
# ResNet-18 test: torchvision's ResNet-18 with seeded random weights
# (export_resnet18.py, from Debian's python3-torchvision) through
# `tpuc transform` + `tpuc run` (the top interpreter), checked against ONNX
# Runtime (npm onnxruntime-node) on the same deterministic input.
#
#   models/resnet18/run_resnet18.sh --tpuc PATH --work DIR [--batch N]
#
# Pass: cosine >= 0.99999, Euclidean similarity >= 0.999 and
# max |tpuc - ort| <= 1e-4 * max |ort| on the logits. Both sides compute in
# float32; they differ only in summation order, so the errors are rounding.
# Exit status: 0 pass, 1 fail, 77 (ctest SKIP_RETURN_CODE) only when
# onnxruntime-node cannot be installed because npm is unreachable (1 with
# TPU_TESTS_NO_SKIP=1, scripts/lib/skip.sh).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SKIP=77
source "$ROOT/scripts/lib/skip.sh"
COSINE_MIN=0.99999
EUCLID_MIN=0.999
MAX_ABS_REL=1e-4
IMAGE_SHAPE="3,224,224"

tpuc=""
work=""
batch=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tpuc) tpuc="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    *) echo "run_resnet18: unknown argument $1" >&2; exit 1 ;;
  esac
done
if [ -z "$tpuc" ] || [ -z "$work" ]; then
  echo "usage: $0 --tpuc PATH --work DIR [--batch N]" >&2
  exit 1
fi
case "$batch" in
  '' | *[!0-9]* | 0) echo "run_resnet18: --batch must be a positive integer" >&2; exit 1 ;;
esac

node_status=0
"$ROOT/scripts/setup_node.sh" || node_status=$?
if [ $node_status -eq $SKIP ]; then
  tpu_skip "npm registry unreachable (onnxruntime-node)"
fi
[ $node_status -eq 0 ] || { echo "FAIL: scripts/setup_node.sh exited $node_status"; exit 1; }

rm -rf "$work"
mkdir -p "$work"
cd "$work"
step() {
  local name="$1"
  shift
  local start=$SECONDS
  echo "+ $*"
  if ! "$@"; then
    echo "FAIL: $name"
    exit 1
  fi
  echo "  ($name: $((SECONDS - start)) s)"
}
step export /usr/bin/python3 "$HERE/export_resnet18.py" -o resnet18.onnx \
  --batch "$batch" --input in.npz
step transform "$tpuc" transform resnet18.onnx -o resnet18_top.mlir \
  --input-shapes "[[$batch,$IMAGE_SHAPE]]"
step run "$tpuc" run resnet18_top.mlir -i in.npz -o tpuc_out.npz
step ort node "$ROOT/scripts/ort_run.js" resnet18.onnx in.npz ort_out.npz
step compare "$tpuc" compare tpuc_out.npz ort_out.npz \
  --tolerance "$COSINE_MIN,$EUCLID_MIN" --max-abs-rel "$MAX_ABS_REL"
echo "PASS: resnet18 batch $batch"
