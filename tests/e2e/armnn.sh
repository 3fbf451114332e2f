#!/usr/bin/env bash
# The TFLite frontend against Arm NN's TFLite parser on its reference CPU
# backend (scripts/armnn_run.py; Debian's python3-pyarmnn 20.08 with
# libarmnn-cpuref-backend22), an implementation of TFLite's operators that
# shares nothing with ours or with scripts/tflite_ref.py.
#
#   armnn.sh --bin BUILD/bin --work DIR
#
# Float: the openWakeWord models Arm NN 20.08 parses (embedding, alexa,
# timer, weather; it rejects the melspectrogram's EXPAND_DIMS, hey_mycroft's
# and hey_rhasspy's RSQRT and hey_jarvis' three subgraphs) on the
# manifest's number of inputs of their kind (make_inputs.py, seeds 1..N;
# a head's scores stacked): tpuc transform + tpuc run (the top
# interpreter) against Arm NN at cosine 0.99999, Euclidean 0.9999 (the
# real-model-* gate against ONNX Runtime), tpuc deploy F32 + tpusim at the
# real models' F32 gate against a reference (0.9999, 0.99).
# Quantised: the script-built int8 model of tflite-quant.test
# (tests/lit/frontend/Inputs/tflite_quant.py). Arm NN's CpuRef backend
# computes quantised operators in float between dequantised inputs and a
# requantised output, not with TFLite's fixed-point reference, so it is a
# third opinion rather than the truth: the script prints the largest output
# code difference of our INT8 bmodel and of tflite_quant.py's integer
# reference (TFLite's kernels) each against Arm NN and holds both to 4
# codes (measured: 1 and 1), and holds ours to the integer reference
# exactly (TFLite's arithmetic, tflite-quant.test; measured 0).
# Exit 77 (skipped) when pyarmnn, its CpuRef backend or the models are
# missing; 1 instead with TPU_TESTS_NO_SKIP=1 (scripts/lib/skip.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/models.sh"
source "$ROOT/scripts/lib/skip.sh"
BIN="" WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$(realpath "$2")"; shift ;;
    --work) WORK="$2"; shift ;;
    *) echo "armnn.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$BIN" ] && [ -n "$WORK" ] || {
  echo "usage: armnn.sh --bin BUILD/bin --work DIR" >&2; exit 2; }
PY=/usr/bin/python3
status=0
$PY -c 'import pyarmnn' >/dev/null 2>&1 || tpu_skip "armnn.sh: python3-pyarmnn is not installed"
"$ROOT/scripts/fetch_models.sh" >/dev/null || status=$?
[ "$status" = 77 ] && tpu_skip "armnn.sh: models unavailable"
[ "$status" = 0 ] || exit "$status"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# The CpuRef backend is a separate package: probe it on the first model.
probe=0
for MODEL in oww_embedding oww_alexa oww_timer oww_weather; do
  read -r SRC _ SHAPES SAMPLES _ <<<"$(manifest_tflite_model "$MODEL")"
  mkdir -p "$MODEL"
  (
    cd "$MODEL"
    set -x
    "$BIN/tpuc" transform "$SRC" -o top.mlir --input-shapes "$SHAPES" >/dev/null
    "$BIN/tpuc" deploy top.mlir --quantize F32 --chip bm1684x -o f32.bmodel >/dev/null
    arm=() tops=() sims=()
    for k in $(seq 1 "$SAMPLES"); do
      $PY "$ROOT/scripts/make_inputs.py" --tflite "$MODEL" "s$k.npz" --seed "$k"
      rc=0
      $PY "$ROOT/scripts/armnn_run.py" "$SRC" "s$k.npz" "armnn$k.npz" || rc=$?
      [ "$rc" = 0 ] || exit "$rc"
      "$BIN/tpuc" run top.mlir -i "s$k.npz" -o "top$k.npz" >/dev/null
      "$BIN/tpusim" run f32.bmodel -i "s$k.npz" -o "sim$k.npz" >/dev/null
      arm+=("armnn$k.npz") tops+=("top$k.npz") sims+=("sim$k.npz")
    done
    stack_npz armnn.npz "${arm[@]}"
    stack_npz top.npz "${tops[@]}"
    stack_npz sim.npz "${sims[@]}"
    echo "$MODEL: top interpreter vs Arm NN ($SAMPLES input(s))"
    "$BIN/tpuc" compare top.npz armnn.npz --tolerance 0.99999,0.9999
    echo "$MODEL: tpusim F32 vs Arm NN"
    "$BIN/tpuc" compare sim.npz armnn.npz --tolerance 0.9999,0.99
  ) || {
    rc=$?
    [ "$rc" = 77 ] && [ "$probe" = 0 ] && tpu_skip "armnn.sh: Arm NN's CpuRef backend is missing"
    echo "armnn.sh: $MODEL failed" >&2
    exit 1
  }
  probe=1
done

# The quantised model: INT8 bmodel and the integer reference against Arm NN.
mkdir -p quant
cd quant
set -x
$PY "$ROOT/tests/lit/frontend/Inputs/tflite_quant.py" .
$PY "$ROOT/scripts/armnn_run.py" q.tflite in.npz armnn.npz
"$BIN/tpuc" transform q.tflite -o q_top.mlir >/dev/null
"$BIN/tpuc" deploy q_top.mlir --quantize INT8 --chip bm1684x -o q_int8.bmodel >/dev/null
"$BIN/tpusim" run q_int8.bmodel -i in.npz -o sim.npz >/dev/null
set +x
# Codes of the output grid (fc: scale 0.08, zero point 0, tflite_quant.py).
$PY - <<'PY'
import sys
import numpy as np
scale = 0.08
arm = np.round(np.load("armnn.npz")["y"].reshape(-1) / scale).astype(int)
ours = np.round(np.load("sim.npz")["fc"].reshape(-1) / scale).astype(int)
ref = np.round(np.load("ref_int8.npz")["fc"].reshape(-1) / scale).astype(int)
d_ours = int(np.abs(ours - arm).max())
d_ref = int(np.abs(ref - arm).max())
d_both = int(np.abs(ours - ref).max())
print(f"int8 codes: Arm NN {arm.tolist()}, tpusim INT8 {ours.tolist()}, "
      f"tflite_ref {ref.tolist()}")
print(f"max code difference: tpusim vs Arm NN {d_ours}, tflite_ref vs Arm NN {d_ref}, "
      f"tpusim vs tflite_ref {d_both}")
ok = d_ours <= 4 and d_ref <= 4 and d_both == 0
print("quant:", "PASS" if ok else "FAIL (gates: 4 codes from Arm NN, 0 from tflite_ref)")
sys.exit(0 if ok else 1)
PY
