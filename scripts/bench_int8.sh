#!/usr/bin/env bash
# INT8 benchmarks (numbers to read, never asserted by a test):
#
#  1. calibrate: `tpuc calibrate` of ResNet-50 (random weights) on N samples
#     (default 100) with kld, CPU seconds and peak RSS (/usr/bin/time -v),
#     against the top interpreter doing the same N inferences. The
#     interpreter's per-inference cost I and its load cost L are isolated
#     with calibrate itself: I = (T(minmax, N) - T(minmax, 1)) / (N - 1),
#     L = T(minmax, 1) - I (minmax statistics are a min / max / histogram
#     update per tensor, the cheapest method); one `tpuc run` (load + one
#     inference) is printed beside them as a check of L + I. The ratio is
#     T(kld, N) / (L + N * I), on CPU seconds (user + sys) and on wall time.
#  2. simulated INT8 latency (tpusim --mode timing --stats): resnet18v2 and
#     resnet50 at batch 1 and 4, default layer groups (dp) and
#     --layer-group none, with MAC and DDR utilisation, beside the
#     published BM1684X figures (isa/docs/bm1684x.md 9: resnet18v2 0.552 ms
#     b1, 1.353 ms b4; ResNet-50 1.07 ms b1, 0.79 ms per image b4).
#  3. tpusim --mode full wall time of ResNet-50 INT8 (b1) against ONNX
#     Runtime's F32 time for the same ONNX file, measured in this run
#     (scripts/ort_run.js, median of --repeat runs after 2 warm-up runs).
#
#   scripts/bench_int8.sh [--bin BUILD/bin] [--work DIR] [--samples N]
#                         [--skip-calibrate] [--skip-latency] [--skip-full]
#
# The calibration table of the latency runs is minmax on 4 samples (the
# latency does not depend on the thresholds' values, only on the types).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/build/bin" WORK="" N=100
DO_CAL=1 DO_LAT=1 DO_FULL=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --samples) N="$2"; shift ;;
    --skip-calibrate) DO_CAL=0 ;;
    --skip-latency) DO_LAT=0 ;;
    --skip-full) DO_FULL=0 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "bench_int8: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
[ -n "$WORK" ] || WORK="$(mktemp -d)"
mkdir -p "$WORK"
cd "$WORK"
echo "bench_int8: work directory $WORK"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core)' | sed 's/^/# /'

# export ARCH BATCH: ARCH_bBATCH/model_top.mlir with input.npz.
export_model() {
  local arch="$1" batch="$2" d="$1_b$2"
  mkdir -p "$d"
  if [ ! -f "$d/model_top.mlir" ]; then
    (cd "$d" &&
      $PY "$ROOT/models/resnet18/export_resnet18.py" -o "$arch.onnx" \
        --arch "$arch" --batch "$batch" --input input.npz > /dev/null &&
      "$BIN/tpuc" transform "$arch.onnx" -o model_top.mlir \
        --input-shapes "[[$batch,3,224,224]]" > /dev/null)
  fi
}

# timed LABEL CMD...: runs CMD under /usr/bin/time -v, appends
# "LABEL user+sys wall maxrss_kb" to times.txt.
timed() {
  local label="$1"; shift
  /usr/bin/time -v "$@" > "time_$label.out" 2> "time_$label.err" ||
    { cat "time_$label.err" >&2; exit 1; }
  $PY - "$label" "time_$label.err" >> times.txt <<'PY'
import re, sys
t = open(sys.argv[2]).read()
def f(k):
    return re.search(re.escape(k) + r":\s*(\S+)", t).group(1)
user, sys_ = float(f("User time (seconds)")), float(f("System time (seconds)"))
w = f("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w)))
print(sys.argv[1], f"{user + sys_:.2f}", f"{wall:.2f}", f("Maximum resident set size (kbytes)"))
PY
}

if [ "$DO_CAL" = 1 ]; then
  export_model resnet50 1
  [ -d resnet50_b1/calib ] || $PY "$ROOT/scripts/make_calib_set.py" \
    --like resnet50_b1/input.npz --num "$N" --out resnet50_b1/calib > /dev/null
  : > times.txt
  m=resnet50_b1/model_top.mlir
  timed cal_kld_N "$BIN/tpuc" calibrate $m --dataset resnet50_b1/calib --input-num "$N" --method kld -o cal_kld.table
  timed cal_minmax_N "$BIN/tpuc" calibrate $m --dataset resnet50_b1/calib --input-num "$N" --method minmax -o cal_mm.table
  timed cal_minmax_1 "$BIN/tpuc" calibrate $m --dataset resnet50_b1/calib --input-num 1 --method minmax -o cal_mm1.table
  timed run_1 "$BIN/tpuc" run $m -i resnet50_b1/input.npz -o run1.npz
  cat times.txt | sed 's/^/# /'
  $PY - "$N" times.txt <<'PY'
import sys
n = int(sys.argv[1])
t = {l.split()[0]: [float(x) for x in l.split()[1:]] for l in open(sys.argv[2])}
print("\n## tpuc calibrate, ResNet-50 b1, %d samples" % n)
print("| quantity | CPU s | wall s | peak RSS MiB |")
print("|---|---|---|---|")
for k, name in [("cal_kld_N", "calibrate kld, N samples"),
                ("cal_minmax_N", "calibrate minmax, N samples"),
                ("cal_minmax_1", "calibrate minmax, 1 sample"),
                ("run_1", "tpuc run, 1 input (load + 1 inference)")]:
    c, w, r = t[k]
    print(f"| {name} | {c:.2f} | {w:.2f} | {r / 1024:.0f} |")
res = {}
for i, what in [(0, "CPU"), (1, "wall")]:
    I = (t["cal_minmax_N"][i] - t["cal_minmax_1"][i]) / (n - 1)
    L = t["cal_minmax_1"][i] - I
    interp = L + n * I
    res[what] = (I, L, interp, t["cal_kld_N"][i] / interp)
for what, (I, L, interp, ratio) in res.items():
    print(f"| interpreter ({what}): per inference I = {I:.3f} s, load L = {L:.2f} s, "
          f"L + N*I = {interp:.2f} s | | | |")
    print(f"| **calibrate kld / interpreter ({what})** | **{ratio:.2f}x** | | aim <= 1.5x |")
PY
fi

if [ "$DO_LAT" = 1 ]; then
  echo
  echo "## simulated INT8 latency (tpusim --mode timing)"
  echo "| model | batch | layer groups | ms | ms / image | published ms | sim / published | MAC util | DDR util |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for arch in resnet18v2 resnet50; do
    for batch in 1 4; do
      export_model "$arch" "$batch"
      d="${arch}_b$batch"
      if [ ! -f "$d/lat.table" ]; then
        $PY "$ROOT/scripts/make_calib_set.py" --like "$d/input.npz" --num 4 --out "$d/calib4" > /dev/null
        "$BIN/tpuc" calibrate "$d/model_top.mlir" --dataset "$d/calib4" --input-num 4 \
          --method minmax -o "$d/lat.table" > /dev/null 2>&1
      fi
      for lg in dp none; do
        "$BIN/tpuc" deploy "$d/model_top.mlir" --quantize INT8 --chip bm1684x \
          --calibration-table "$d/lat.table" --layer-group "$lg" -o "$d/int8_$lg.bmodel" > "$d/deploy_$lg.log"
        "$BIN/tpusim" run "$d/int8_$lg.bmodel" --mode timing --stats "$d/stats_$lg.json" > /dev/null
        $PY - "$d/stats_$lg.json" "$arch" "$batch" "$lg" <<'PY'
import json, sys
c = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))["counters"]}
arch, batch, lg = sys.argv[2], int(sys.argv[3]), sys.argv[4]
pub = {("resnet18v2", 1): 0.552, ("resnet18v2", 4): 1.353,
       ("resnet50", 1): 1.07, ("resnet50", 4): 0.79 * 4}[(arch, batch)]
ms = c["total_time_us"] / 1000
print(f"| {arch} | {batch} | {lg} | {ms:.3f} | {ms / batch:.3f} | {pub:.3f} | "
      f"{ms / pub:.2f} | {c['tiu.mac_utilisation'] * 100:.1f} % | {c['ddr.utilisation'] * 100:.1f} % |")
PY
      done
    done
  done
fi

if [ "$DO_FULL" = 1 ]; then
  export_model resnet50 1
  d=resnet50_b1
  if [ ! -f "$d/lat.table" ]; then
    $PY "$ROOT/scripts/make_calib_set.py" --like "$d/input.npz" --num 4 --out "$d/calib4" > /dev/null
    "$BIN/tpuc" calibrate "$d/model_top.mlir" --dataset "$d/calib4" --input-num 4 \
      --method minmax -o "$d/lat.table" > /dev/null 2>&1
  fi
  [ -f "$d/int8_dp.bmodel" ] || "$BIN/tpuc" deploy "$d/model_top.mlir" --quantize INT8 \
    --chip bm1684x --calibration-table "$d/lat.table" -o "$d/int8_dp.bmodel" > /dev/null
  "$ROOT/scripts/setup_node.sh" > /dev/null
  : > times_full.txt
  start=$(date +%s.%N)
  "$BIN/tpusim" run "$d/int8_dp.bmodel" --mode full -i "$d/input.npz" -o "$d/sim.npz" > /dev/null
  end=$(date +%s.%N)
  ort="$(node "$ROOT/scripts/ort_run.js" "$d/resnet50.onnx" "$d/input.npz" "$d/ort.npz" --repeat 5 --warmup 2)"
  $PY - "$start" "$end" "$ort" <<'PY'
import json, sys
sim = float(sys.argv[2]) - float(sys.argv[1])
o = json.loads(sys.argv[3])
print("\n## tpusim --mode full (ResNet-50 INT8 b1) vs ONNX Runtime F32 (CPU)")
print("| tpusim full wall s | ORT median ms | ORT threads | ratio sim / ORT |")
print("|---|---|---|---|")
print(f"| {sim:.2f} | {o['median_ms']:.1f} | {o.get('threads')} | {sim * 1000 / o['median_ms']:.0f}x |")
PY
fi
