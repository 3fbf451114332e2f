#!/usr/bin/env bash
# tpuc regress wall time (numbers to read, never asserted by a test): a
# 20-case suite, cold (empty cache: every transform, calibration, reference
# and compile made) and warm (a rerun: every bmodel from the cache, every
# case simulated again in full mode and checked), --jobs 2 by default.
#
#   scripts/bench_regress.sh [--bin BUILD/bin] [--work DIR] [--jobs N]
#
# The cases: the default CNN in F32 / F16 / BF16 / INT8 under each
# layer-group strategy (none, greedy, dp: 12 cases) and under two machines
# (chip.npu_num 32, ddr.bandwidth_gbps 16: 2 cases); ResNet-18 (seeded
# random weights, models/resnet18/export_resnet18.py) in F32 / F16 / BF16 /
# INT8 with dp and F16 / INT8 with none (6 cases). Every case has an input
# and is checked bit-exact against the tpu interpreter and against the top
# interpreter's outputs. Needs python3-torch / torchvision (ResNet-18).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/build/bin" WORK="" JOBS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --jobs) JOBS="$2"; shift ;;
    *) echo "bench_regress.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
BIN="$(realpath "$BIN")"
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK" && cd "$WORK"
PY=/usr/bin/python3
[ -f r18.onnx ] || $PY "$ROOT/models/resnet18/export_resnet18.py" -o r18.onnx \
  --arch resnet18 --input r18_in.npz > /dev/null
cp "$ROOT/models/default/default_cnn.onnx" cnn.onnx
cp "$ROOT/tests/regress/default_cnn_input.npz" cnn_in.npz
cp "$ROOT/tests/regress/default_cnn.cali" cnn.cali
[ -d r18_calib ] || $PY "$ROOT/scripts/make_calib_set.py" --like r18_in.npz \
  --num 16 --out r18_calib > /dev/null
{
  echo '[suite]'
  echo 'name = "bench20"'
  for lg in none greedy dp; do
    cat <<T
[case.cnn_$lg]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "cnn_in.npz"
quantize = ["F32", "F16", "BF16", "INT8"]
calibration_table = "cnn.cali"
layer_group = "$lg"
reference = "top"
cosine = 0.99
euclid = 0.85
bit_exact = true
T
  done
  for m in "npu32:chip.npu_num = 32" "ddr16:ddr.bandwidth_gbps = 16"; do
    cat <<T
[case.cnn_${m%%:*}]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "cnn_in.npz"
quantize = "F16"
${m#*:}
reference = "top"
bit_exact = true
T
  done
  for lg in dp none; do
    q='["F32", "F16", "BF16", "INT8"]'
    [ $lg = none ] && q='["F16", "INT8"]'
    cat <<T
[case.r18_$lg]
model = "r18.onnx"
input_shapes = "[[1,3,224,224]]"
input = "r18_in.npz"
quantize = $q
calibration_dataset = "r18_calib"
calibration_tune_num = 5
layer_group = "$lg"
reference = "top"
cosine = 0.99
euclid = 0.80
bit_exact = true
T
  done
} > bench20.toml
"$BIN/tpuc" regress bench20.toml --check
rm -rf cold
t() { $PY -c "import time; print(f'{time.time():.3f}')"; }
s=$(t)
"$BIN/tpuc" regress bench20.toml -o cold --jobs "$JOBS" --update-baseline > cold.txt || true
cold=$($PY -c "print(f'{$(t) - $s:.1f}')")
cp cold/results.json cold.json
s=$(t)
"$BIN/tpuc" regress bench20.toml -o cold --jobs "$JOBS" > warm.txt || { cat warm.txt; exit 1; }
warm=$($PY -c "print(f'{$(t) - $s:.1f}')")
cat warm.txt
grep "case(s):" cold.txt warm.txt
# CPU seconds summed over the cases' workers (the wall time depends on the
# load of the machine, printed beside it).
$PY - <<'P'
import json
for run, path in (("cold", "cold.json"), ("warm", "cold/results.json")):
    cases = json.load(open(path))["cases"]
    tot = {}
    for c in cases:
        for k, v in c["cpu_seconds"].items():
            tot[k] = tot.get(k, 0) + v
    print(run, "CPU s over the cases:", ", ".join(f"{k} {v:.1f}" for k, v in tot.items()))
P
echo "bench20 (--jobs $JOBS, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)): cold $cold s, warm $warm s"
