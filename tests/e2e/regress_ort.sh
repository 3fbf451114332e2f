#!/usr/bin/env bash
# tpuc regress with reference = "onnxruntime": the default CNN in F32 and
# F16 against ONNX Runtime's outputs (scripts/ort_run.js, made once and
# cached: the rerun runs no node), with the gates of tests/e2e/common.sh's
# table `default` against the float reference; an INT8 case whose SQNR
# gate is above what INT8 reaches (38.8 dB measured) fails naming it.
# Skips (scripts/lib/skip.sh) without node or when npm cannot install
# onnxruntime-node (scripts/setup_node.sh).
#
#   regress_ort.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
source "$ROOT/scripts/lib/skip.sh"
command -v node > /dev/null || tpu_skip "no node (scripts/setup.sh installs nodejs)"
rc=0
"$ROOT/scripts/setup_node.sh" || rc=$?
[ $rc = 77 ] && tpu_skip "npm registry unreachable (onnxruntime-node)"
[ $rc = 0 ] || exit 1
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
cp "$ROOT/models/default/default_cnn.onnx" cnn.onnx
cp "$ROOT/tests/regress/default_cnn_input.npz" in.npz
cp "$ROOT/tests/regress/default_cnn.cali" cnn.cali
cat > ort.toml <<'T'
[case.f32]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = "F32"
reference = "onnxruntime"
cosine = 0.99999
euclid = 0.9999

[case.f16]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = "F16"
reference = "onnxruntime"
cosine = 0.9999
euclid = 0.99

[case.int8]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = "INT8"
calibration_table = "cnn.cali"
reference = "onnxruntime"
sqnr = 45
T
if "$BIN/tpuc" regress ort.toml -o out --update-baseline > first.txt; then
  cat first.txt; echo "the INT8 case should fail its SQNR gate" >&2; exit 1
fi
cat first.txt
grep -q "^f32  *F32  *cos 1.00000" first.txt
grep -q "^int8/INT8: FAIL: output prob: SQNR [0-9.]* dB < 45 dB" first.txt
grep -q "3 case(s): 2 passed, 1 failed" first.txt
ls out/cache/ort-*/reference_0.npz > /dev/null
# The stored ONNX Runtime outputs are ort_run.js's.
node "$ROOT/scripts/ort_run.js" cnn.onnx in.npz ort.npz
"$BIN/tpuc" compare "$(ls out/cache/ort-*/reference_0.npz)" ort.npz --max-abs-rel 0
# A rerun takes them from the cache.
"$BIN/tpuc" regress ort.toml -o out > second.txt || true
cat second.txt
/usr/bin/python3 - <<'P'
import json
cases = json.load(open('out/results.json'))['cases']
for c in cases:
    assert {'onnxruntime': 'cached'} in c['steps'], c['steps']
print('ONNX Runtime references from the cache:', len(cases))
P
# A script that does not run (TPUC_ORT_RUN): the case fails at its
# onnxruntime step, naming node's error rather than its stack's last lines.
printf 'this is not javascript(\n' > broken.js
printf '[case.c]\nmodel = "cnn.onnx"\ninput_shapes = "[[1,3,32,32]]"\ninput = "in2.npz"\nreference = "onnxruntime"\n' > broken.toml
cp in.npz in2.npz
if TPUC_ORT_RUN="$PWD/broken.js" "$BIN/tpuc" regress broken.toml -o bout > broken.txt; then
  cat broken.txt; exit 1
fi
cat broken.txt
grep -q "^c/F16: ERROR: onnxruntime: .*SyntaxError" broken.txt
echo "regress_ort: OK"
