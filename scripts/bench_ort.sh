#!/usr/bin/env bash
# Times ONNX Runtime (npm onnxruntime-node, CPU) on the real models of
# models/manifest.json with the same deterministic inputs the tests and
# benchmarks/compiler use, to set beside the interpreter's times
# (build/bin/compiler-bench).
#
#   scripts/bench_ort.sh [--repeat N] [--threads N] [MODEL...]   (default: all models)
#
# Prints one JSON line per model (median/min/mean ms per inference, session
# load ms). --threads 0 (default) lets ONNX Runtime pick (all cores).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repeat=20
threads=0
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "bench_ort: unknown option $1" >&2; exit 1 ;;
    *) models+=("$1"); shift ;;
  esac
done

"$ROOT/scripts/fetch_models.sh"
"$ROOT/scripts/setup_node.sh"
cache="${TPU_MODELS_CACHE:-$ROOT/models/cache}"
if [ ${#models[@]} -eq 0 ]; then
  mapfile -t models < <(node -e '
    for (const m of require(process.argv[1]).models) console.log(m.name);' \
    "$ROOT/models/manifest.json")
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for model in "${models[@]}"; do
  file="$(node -e '
    const m = require(process.argv[1]).models.find(m => m.name === process.argv[2]);
    if (!m) process.exit(1);
    console.log(m.file);' "$ROOT/models/manifest.json" "$model")" ||
    { echo "bench_ort: no model $model in the manifest" >&2; exit 1; }
  /usr/bin/python3 "$ROOT/scripts/make_inputs.py" "$model" "$work/in.npz"
  args=(--repeat "$repeat" --warmup 2)
  [ "$threads" -gt 0 ] && args+=(--threads "$threads")
  node "$ROOT/scripts/ort_run.js" "$cache/$file" "$work/in.npz" "$work/out.npz" "${args[@]}" |
    sed "s/^{/{\"name\":\"$model\",/"
done
