#!/usr/bin/env bash
# The end-to-end demo: the default CNN (models/default/default_cnn.onnx)
# through the whole toolchain, in F32 and F16.
#
#   scripts/demo.sh [--no-build] [--modes "F32 F16 BF16"] [--work DIR]
#
#   1. scripts/setup.sh && scripts/build.sh      (skipped with --no-build)
#   2. tpuc transform   ONNX -> default_cnn_top.mlir, float reference outputs
#   3. tpuc deploy      per mode: tpu dialect, addresses, commands, .bmodel
#                       (checked against the reference by the tpu interpreter)
#   4. tpusim run       the bmodel on the simulated BM1684X, with stats and
#                       a Chrome/Perfetto trace
#   5. tpuc compare     simulator outputs vs the float reference
#
# Prints the similarity, cycles, latency, engine utilisation, DDR traffic
# and where the traces are. Exits non-zero if any step or comparison fails.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
WORK="$BUILD/demo"
MODES="F32 F16"
BUILD_FIRST=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD_FIRST=0 ;;
    --modes) MODES="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "demo: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

if [ "$BUILD_FIRST" = 1 ]; then
  "$ROOT/scripts/setup.sh"
  "$ROOT/scripts/build.sh"
fi
TPUC="$BUILD/bin/tpuc"
TPUSIM="$BUILD/bin/tpusim"
for tool in "$TPUC" "$TPUSIM"; do
  [ -x "$tool" ] || { echo "demo: $tool is missing (build first)" >&2; exit 1; }
done

MODEL="$ROOT/models/default/default_cnn.onnx"
[ -f "$MODEL" ] || /usr/bin/python3 "$ROOT/models/default/make_default_model.py" "$MODEL"
mkdir -p "$WORK"
cd "$WORK"

step() { printf '\n== %s\n' "$*"; }

step "input: a fixed random image (numpy seed 0)"
/usr/bin/python3 - <<'EOF'
import numpy as np
rng = np.random.default_rng(0)
np.savez("input.npz", x=rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
EOF

step "tpuc transform: ONNX -> top dialect (+ float reference outputs)"
"$TPUC" transform "$MODEL" -o default_cnn_top.mlir --input-shapes "[[1,3,32,32]]" \
  --test-input input.npz --test-result reference.npz
echo "wrote default_cnn_top.mlir, reference.npz"

for mode in $MODES; do
  m=$(echo "$mode" | tr 'A-Z' 'a-z')
  step "tpuc deploy --quantize $mode"
  "$TPUC" deploy default_cnn_top.mlir --quantize "$mode" --chip bm1684x \
    -o "default_cnn_$m.bmodel" --test-input input.npz \
    --test-reference reference.npz

  step "tpusim run default_cnn_$m.bmodel"
  "$TPUSIM" run "default_cnn_$m.bmodel" -i input.npz -o "sim_$m.npz" \
    --stats "stats_$m.json" --trace "trace_$m.json" --report "report_$m.html"

  step "tpuc compare: simulator ($mode) vs float reference"
  tol=0.9999,0.99
  [ "$mode" = F16 ] && tol=0.999,0.95
  [ "$mode" = BF16 ] && tol=0.99,0.90
  "$TPUC" compare "sim_$m.npz" reference.npz --tolerance "$tol"
  echo "stats: $WORK/stats_$m.json"
  echo "trace: $WORK/trace_$m.json (open in https://ui.perfetto.dev or chrome://tracing)"
  echo "report: $WORK/report_$m.html (a self-contained page: per-op table, timeline, roofline)"
done

step "demo: all steps passed; files in $WORK"
