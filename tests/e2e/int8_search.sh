#!/usr/bin/env bash
# tpuc calibrate --search-threshold and tpuc qtable --calibration-table (the
# INT8 mixed-precision search) on the default CNN
# (models/default/default_cnn.onnx, 1x3x32x32, the dataset of calibrate.sh):
#
#   calibrate --search-threshold --search-samples 1: one cosine line per
#       method in the fixed order; the table's "threshold method" is the
#       method with the highest printed cosine (the first on ties); its
#       entries equal `calibrate --method <that method>`'s; the header
#       lists the six cosines. `tpuc deploy --quantize INT8` with that table
#       and --test-input sample 0 prints the same cosine (8 decimals) as the
#       search reported for the method.
#   qtable --expected-cos 0.99999 --input-num 1 (the all-INT8 cosine is
#       ~0.9998, below it): exit 0, the table lists >= 1 layer (F16), every
#       one an INT8 layer of the loss table; the tool's final cosine is what
#       `tpuc deploy --quantize INT8 --quantize-table` prints on the same
#       sample, and it reaches 0.99999.
#   qtable --expected-cos 0.5: exit 0, a table of comments only.
#   qtable --expected-cos 1 --max-float-layers 1: exit 2, both files
#       written, the table marked "NOT reached".
#   Bad input, each exit 1 naming what is wrong, nothing written:
#       --search-samples above the samples; for qtable a table of another
#       model, a missing dataset, --expected-cos 0 and 1.5.
#
#   int8_search.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
rm -rf "$WORK"
mkdir -p "$WORK/dataset"
cd "$WORK"

/usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(11)
for i in range(8):
    scale = 0.5 + 0.25 * i
    np.savez("dataset/sample_%02d.npz" % i,
             x=(rng.standard_normal((1, 3, 32, 32)) * scale).astype(np.float32))
# A table of another model.
open("other.table", "w").write("# op_name threshold min max\n"
                               "foo 1.0 -1.0 1.0\nbar 2.0 0.0 2.0\n")
PY

set -x
"$BIN/tpuc" transform "$ROOT/models/default/default_cnn.onnx" -o model_top.mlir \
  --input-shapes "[[1,3,32,32]]"
"$BIN/tpuc" run model_top.mlir -i dataset/sample_00.npz -o ref.npz

# --search-threshold.
SOURCE_DATE_EPOCH=0 "$BIN/tpuc" calibrate model_top.mlir --dataset dataset \
  --input-num 8 -o searched.table --search-threshold --search-samples 1 \
  | tee search.txt
method=$(sed -n 's/^# threshold method: //p' searched.table)
SOURCE_DATE_EPOCH=0 "$BIN/tpuc" calibrate model_top.mlir --dataset dataset \
  --input-num 8 -o plain.table --method "$method"
"$BIN/tpuc" deploy model_top.mlir --quantize INT8 --calibration-table \
  searched.table --chip bm1684x -o searched.bmodel \
  --test-input dataset/sample_00.npz --test-reference ref.npz --tolerance 0.5 \
  | tee deploy_searched.txt
set +x
/usr/bin/python3 - "$method" <<'PY'
import re, sys
method = sys.argv[1]
order = ["kld", "minmax", "percentile9999", "mse", "aciq_gauss", "aciq_laplace"]
lines = [l for l in open("search.txt") if l.startswith("tpuc calibrate: search: ")
         and "cosine" in l]
got = [(l.split()[3], l.split()[5]) for l in lines]
assert [g[0] for g in got] == order, got
best = max(float(c) for _, c in got)
want = next(m for m, c in got if float(c) == best)
assert method == want, (method, want, got)
entries = lambda p: [l for l in open(p) if not l.startswith("#")]
assert entries("searched.table") == entries("plain.table"), "entries differ"
header = open("searched.table").read()
for m, c in got:
    assert re.search(r"^#\s+%s\s+cosine %s$" % (m, c), header, re.M), (m, c)
# deploy on sample 0: the prob row's cosine.
deploy = [l.split() for l in open("deploy_searched.txt")]
cos = [r[2] for r in deploy if len(r) > 3 and r[0] == "prob" and r[-1] in ("PASS", "FAIL")]
assert cos == [dict(got)[method]], (cos, dict(got)[method])
print("search: %s chosen, cosines %s; deploy %s" % (method, got, cos[0]))
PY

# qtable: a target the all-INT8 model misses.
set -x
"$BIN/tpuc" qtable model_top.mlir --calibration-table searched.table \
  --dataset dataset --input-num 1 --expected-cos 0.99999 -o model.qtable \
  | tee qtable.txt
cat model.qtable model_loss.txt
"$BIN/tpuc" deploy model_top.mlir --quantize INT8 --calibration-table \
  searched.table --quantize-table model.qtable --chip bm1684x -o mixed.bmodel \
  --test-input dataset/sample_00.npz --test-reference ref.npz \
  --tolerance 0.99999 | tee deploy_mixed.txt
set +x
/usr/bin/python3 - <<'PY'
rows = [l.split() for l in open("model.qtable") if not l.startswith("#")]
assert rows and all(r[1] == "F16" for r in rows), rows
loss = [l.split() for l in open("model_loss.txt") if not l.startswith("#")]
layers = {r[1] for r in loss}
assert {r[0] for r in rows} <= layers, (rows, layers)
final = [l for l in open("qtable.txt") if "INT8 layer(s) in F16, cosine" in l]
assert len(final) == 1, final
reported = final[0].split("cosine ")[1].split()[0]
assert float(reported) >= 0.99999, reported
deploy = [l.split() for l in open("deploy_mixed.txt")]
cos = [r[2] for r in deploy if len(r) > 3 and r[0] == "prob" and r[-1] in ("PASS", "FAIL")]
assert cos == [reported], (cos, reported)
print("qtable: %d of %d layers in F16 (%s), cosine %s = deploy's"
      % (len(rows), len(loss), " ".join(r[0] for r in rows), reported))
PY

set -x
"$BIN/tpuc" qtable model_top.mlir --calibration-table searched.table \
  --dataset dataset --input-num 2 --expected-cos 0.5 -o easy.qtable | tee easy.txt
grep -q "already reaches --expected-cos 0.5" easy.txt
! grep -v '^#' easy.qtable
status=0
"$BIN/tpuc" qtable model_top.mlir --calibration-table searched.table \
  --dataset dataset --input-num 1 --expected-cos 1 --max-float-layers 1 \
  -o hard.qtable 2>hard.txt || status=$?
set +x
cat hard.txt
[ "$status" -eq 2 ] || { echo "FAIL: unreachable target: exit $status"; exit 1; }
grep -q "is not reached within --max-float-layers 1" hard.txt
grep -q "NOT reached" hard.qtable
[ "$(grep -vc '^#' hard.qtable)" -le 1 ]
[ -s hard_loss.txt ]

# expect_error PATTERN COMMAND...: exit 1, PATTERN in stderr, no err.* file.
expect_error() {
  local pattern="$1" status=0
  shift
  "$@" 2>err.txt || status=$?
  cat err.txt
  [ "$status" -eq 1 ] || { echo "FAIL: exit $status, expected 1: $*"; exit 1; }
  grep -q -- "$pattern" err.txt || { echo "FAIL: no '$pattern': $*"; exit 1; }
  if ls err.* 2>/dev/null | grep -v '^err.txt$'; then
    echo "FAIL: output written: $*"; exit 1
  fi
}
expect_error "--search-samples 9 but 'dataset' gives 8 samples" \
  "$BIN/tpuc" calibrate model_top.mlir --dataset dataset --input-num 8 \
  -o err.table --search-threshold --search-samples 9
expect_error "other.table: 2 of its 2 tensors are not in the model ('foo', 'bar'): a table of another model?" \
  "$BIN/tpuc" qtable model_top.mlir --calibration-table other.table \
  --dataset dataset --expected-cos 0.99 -o err.qtable
expect_error "dataset directory 'nowhere' does not exist" \
  "$BIN/tpuc" qtable model_top.mlir --calibration-table searched.table \
  --dataset nowhere --expected-cos 0.99 -o err.qtable
for c in 0 1.5; do
  expect_error "--expected-cos needs a cosine in (0, 1], got '$c'" \
    "$BIN/tpuc" qtable model_top.mlir --calibration-table searched.table \
    --dataset dataset --expected-cos "$c" -o err.qtable
done
echo "int8_search.sh: PASS"
