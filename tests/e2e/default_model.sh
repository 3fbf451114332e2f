#!/usr/bin/env bash
# End-to-end test of the default CNN (models/default/default_cnn.onnx):
#
#   tpuc transform -> top module + float reference outputs (top interpreter)
#   tpuc deploy    -> tpu module (its interpreter checked against the
#                     reference), bmodel
#   tpusim run     -> simulator outputs
#
# and two gates on the simulator outputs (cosine, Euclidean similarity):
#   vs the tpu interpreter:  F32 >= 0.99999;       F16 / BF16 >= 0.9999
#   vs the float reference:  F32 >= 0.9999, F16 >= 0.999, BF16 >= 0.99
# The float reference is the top interpreter, which the transform tests hold
# to ONNX Runtime; the simulator's float kernels accumulate in another order
# than the interpreter, hence cosine rather than bit equality.
#
#   default_model.sh --mode F32|F16|BF16 --bin BUILD/bin --work DIR [--batch N]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MODE=F32 BIN="" WORK="" BATCH=1
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) MODE="$2"; shift ;;
    --bin) BIN="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --batch) BATCH="$2"; shift ;;
    *) echo "default_model.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$BIN" ] && [ -n "$WORK" ] || { echo "need --bin and --work" >&2; exit 2; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
m=$(echo "$MODE" | tr 'A-Z' 'a-z')

case "$MODE" in
  F32) vs_tpu=0.99999,0.999; vs_ref=0.9999,0.99 ;;
  F16) vs_tpu=0.9999,0.99;   vs_ref=0.999,0.95 ;;
  BF16) vs_tpu=0.9999,0.99;  vs_ref=0.99,0.90 ;;
  *) echo "unknown mode $MODE" >&2; exit 2 ;;
esac

/usr/bin/python3 - "$BATCH" <<'PY'
import sys
import numpy as np
batch = int(sys.argv[1])
rng = np.random.default_rng(7)
np.savez("input.npz",
         x=rng.standard_normal((batch, 3, 32, 32)).astype(np.float32))
PY

set -x
"$BIN/tpuc" transform "$ROOT/models/default/default_cnn.onnx" \
  -o model_top.mlir --input-shapes "[[$BATCH,3,32,32]]" \
  --test-input input.npz --test-result reference.npz
"$BIN/tpuc" deploy model_top.mlir --quantize "$MODE" --chip bm1684x \
  -o "model_$m.bmodel" --test-input input.npz --test-reference reference.npz \
  --tolerance "$vs_ref"
"$BIN/tpusim" run "model_$m.bmodel" -i input.npz -o sim.npz \
  --stats stats.json --trace trace.json
"$BIN/tpuc" compare sim.npz "model_${m}_tpu_outputs.npz" --tolerance "$vs_tpu"
"$BIN/tpuc" compare sim.npz reference.npz --tolerance "$vs_ref"
