#!/usr/bin/env bash
# Runs tests/regress/resnet18.toml: exports ResNet-18 (seeded random
# weights), its input and a 16-sample calibration set (scripts/
# make_calib_set.py) into WORK/data, then `tpuc regress` with the results
# and the cache in WORK. Extra arguments go to tpuc regress (e.g.
# --update-baseline to rewrite tests/regress/resnet18.baseline).
#
#   run_resnet18.sh --bin BUILD/bin --work DIR [tpuc regress options...]
#
# Exit 77 (skipped) without python3-torch / python3-torchvision (scripts/
# setup.sh installs them); 1 instead with TPU_TESTS_NO_SKIP=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/skip.sh"
BIN="" WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ -n "$BIN" ] && [ -n "$WORK" ] || { echo "need --bin and --work" >&2; exit 2; }
BIN="$(realpath "$BIN")"
/usr/bin/python3 -c "import torch, torchvision" 2>/dev/null || {
  tpu_skip "run_resnet18.sh: python3-torch / python3-torchvision missing"; }
# The data is made again each time (the exporter may have changed); the
# results directory, with the compile cache, stays.
rm -rf "$WORK/data"
mkdir -p "$WORK/data"
export TPU_REGRESS_RESNET18="$(realpath "$WORK/data")"
cd "$TPU_REGRESS_RESNET18"
/usr/bin/python3 "$ROOT/models/resnet18/export_resnet18.py" \
  -o resnet18.onnx --arch resnet18 --batch 1 --input input.npz
/usr/bin/python3 "$ROOT/scripts/make_calib_set.py" \
  --like input.npz --num 16 --out calib
exec "$BIN/tpuc" regress "$ROOT/tests/regress/resnet18.toml" \
  -o "$WORK/results" --jobs 2 "$@"
