#!/usr/bin/env bash
# End-to-end test of tpuc calibrate on the default CNN
# (models/default/default_cnn.onnx):
#
#   tpuc transform  -> model_top.mlir
#   numpy           -> a dataset of 8 .npz samples (different scales)
#   tpuc calibrate  -> one table per method (and one tuned); each parses,
#                      lists every tensor `tpuc run --dump-all` writes, in the
#                      same order, with min <= max and threshold > 0
#   tpuc run --dump-all on every sample -> numpy's min, max and max |x| per
#                      tensor equal the minmax table's (as printed, %.7f)
#   --threads 1 and --threads 2 (SOURCE_DATE_EPOCH fixes the time line) give
#                      byte-identical tables, with and without --tune-num.
#
#   calibrate.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
rm -rf "$WORK"
mkdir -p "$WORK/dataset" "$WORK/dumps"
cd "$WORK"

/usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(11)
for i in range(8):
    scale = 0.5 + 0.25 * i
    np.savez("dataset/sample_%02d.npz" % i,
             x=(rng.standard_normal((1, 3, 32, 32)) * scale).astype(np.float32))
PY

set -x
"$BIN/tpuc" transform "$ROOT/models/default/default_cnn.onnx" -o model_top.mlir \
  --input-shapes "[[1,3,32,32]]"
for m in kld minmax percentile9999 mse aciq_gauss aciq_laplace; do
  "$BIN/tpuc" calibrate model_top.mlir --dataset dataset --input-num 8 \
    -o "cali_$m.table" --method "$m"
done
"$BIN/tpuc" calibrate model_top.mlir --dataset dataset --input-num 8 \
  -o cali_tuned.table --tune-num 4
# calibrate runs the samples in parallel, each sample's kernels on one
# thread; the interpreter's threaded conv / GEMM split the sums differently
# (last-bit differences, which depend on the machine's core count and cache
# sizes), so the dumps compared with its minmax table use one thread too.
for f in dataset/*.npz; do
  "$BIN/tpuc" run model_top.mlir -i "$f" -o "dumps/$(basename "$f")" --dump-all --threads 1
done

/usr/bin/python3 - <<'PY'
import glob
import numpy as np

def parse(path):
    rows = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, th, mn, mx = line.split()
        rows.append((name, th, mn, mx))
    return rows

dumps = [np.load(f) for f in sorted(glob.glob("dumps/*.npz"))]
names = list(dumps[0].files)  # program order, as tpuc run writes them
# --dump-all lists every tensor, then the outputs again (deduplicated here).
names = list(dict.fromkeys(names))
fmt = lambda v: "%.7f" % float(v)
failures = []
for method in ["kld", "minmax", "percentile9999", "mse", "aciq_gauss",
               "aciq_laplace", "tuned"]:
    rows = parse("cali_%s.table" % method)
    got = [r[0] for r in rows]
    if got != names:
        failures.append("%s: tensors %s, expected %s" % (method, got, names))
        continue
    for name, th, mn, mx in rows:
        if not (float(mn) <= float(mx) and float(th) > 0):
            failures.append("%s: %s: threshold %s min %s max %s"
                            % (method, name, th, mn, mx))
for name, th, mn, mx in parse("cali_minmax.table"):
    values = np.concatenate([d[name].ravel() for d in dumps])
    want = (fmt(np.abs(values).max()), fmt(values.min()), fmt(values.max()))
    if (th, mn, mx) != want:
        failures.append("minmax: %s: table %s, numpy %s"
                        % (name, (th, mn, mx), want))
# Thresholds other than minmax stay within max |x|.
minmax = {r[0]: float(r[1]) for r in parse("cali_minmax.table")}
for method in ["kld", "percentile9999", "mse", "aciq_gauss", "aciq_laplace",
               "tuned"]:
    for name, th, _, _ in parse("cali_%s.table" % method):
        if float(th) > minmax[name] and float(th) > 1e-5:
            failures.append("%s: %s threshold %s > max |x| %s"
                            % (method, name, th, minmax[name]))
if failures:
    raise SystemExit("\n".join(failures))
print("calibrate.sh: %d tensors, 7 tables, minmax = numpy on %d samples"
      % (len(names), len(dumps)))
PY

# The same table whatever the thread count.
for opts in "" "--tune-num 4"; do
  SOURCE_DATE_EPOCH=0 "$BIN/tpuc" calibrate model_top.mlir --dataset dataset \
    --input-num 8 -o t1.table --threads 1 $opts
  SOURCE_DATE_EPOCH=0 "$BIN/tpuc" calibrate model_top.mlir --dataset dataset \
    --input-num 8 -o t2.table --threads 2 $opts
  cmp t1.table t2.table
done
echo "calibrate.sh: PASS"
