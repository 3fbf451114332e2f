#!/usr/bin/env bash
# Host speed of tpusim's full simulation (numbers to read, never asserted
# by a test): `tpusim run --mode full` wall time of ResNet-50 (torchvision
# random weights, batch 1) deployed in F16 and INT8, against ONNX Runtime's
# F32 time for the same ONNX file measured in the same run
# (scripts/ort_run.js: median of --repeat inferences after 2 warm-up runs,
# measured before and after the simulator runs and averaged, so a change of
# machine load during the run shows). tpusim's time is the median of
# --repeat whole processes (start-up, bmodel load and coefficient check,
# simulation, output write), with its CPU time (user + sys) beside it; and,
# in-process, the median time of one simulation of a model already read
# (sim-bench BM_ModelRun, when it is built), ORT's own measure.
#
#   scripts/bench_fullsim.sh [--bin BUILD/bin] [--before OLD_TPUSIM] [--work DIR]
#                            [--repeat N] [--arch "resnet50 resnet18"]
#                            [--paths "auto portable avx2 avx512 avx512vnni amx"]
#
# --before adds the rows of another tpusim binary (e.g. one built from the
# commit before a change) on the same bmodels and inputs; --paths runs the
# given SIMD paths (TPUSIM_SIMD, tpusim/Simd.h; paths this CPU lacks are
# left out). Every run's outputs must be byte-identical to the first run's
# of the same model and mode, or the script fails.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/build/bin" BEFORE="" WORK="" REPEAT=5 ARCHS="resnet50" PATHS="auto"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --before) BEFORE="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --repeat) REPEAT="$2"; shift ;;
    --arch) ARCHS="$2"; shift ;;
    --paths) PATHS="$2"; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench_fullsim: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
# Absolute, since the script changes into the work directory.
BIN="$(realpath -m "$BIN")"
[ -z "$BEFORE" ] || BEFORE="$(realpath -m "$BEFORE")"
for t in tpuc tpusim; do
  [ -x "$BIN/$t" ] || { echo "bench_fullsim: $BIN/$t not found (build first)" >&2; exit 2; }
done
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || { echo "bench_fullsim: --before $BEFORE is not executable" >&2; exit 2; }
[ -n "$WORK" ] || WORK="$(mktemp -d)"
mkdir -p "$WORK"
cd "$WORK"
echo "bench_fullsim: work directory $WORK"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Flags)' | sed 's/^/# /' | cut -c1-200
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$ROOT/scripts/setup_node.sh" > /dev/null

# The paths this machine can run, as tpusim sees them (CPU and kernel).
avail=" $("$BIN/tpusim" config --simd-paths | tr '\n' ' ') "
runs=()
for p in $PATHS; do
  [ "$p" = auto ] || [[ "$avail" == *" $p "* ]] || continue
  runs+=("after:$p")
done
[ -z "$BEFORE" ] || runs=("before:auto" "${runs[@]}")

: > results.txt
for arch in $ARCHS; do
  d="${arch}_b1"
  mkdir -p "$d"
  if [ ! -f "$d/model_top.mlir" ]; then
    (cd "$d" &&
      $PY "$ROOT/models/resnet18/export_resnet18.py" -o "$arch.onnx" \
        --arch "$arch" --batch 1 --input input.npz > /dev/null &&
      "$BIN/tpuc" transform "$arch.onnx" -o model_top.mlir \
        --input-shapes "[[1,3,224,224]]" > /dev/null)
  fi
  [ -f "$d/f16.bmodel" ] || "$BIN/tpuc" deploy "$d/model_top.mlir" --quantize F16 \
    --chip bm1684x -o "$d/f16.bmodel" > /dev/null
  if [ ! -f "$d/int8.bmodel" ]; then
    $PY "$ROOT/scripts/make_calib_set.py" --like "$d/input.npz" --num 4 --out "$d/calib4" > /dev/null
    "$BIN/tpuc" calibrate "$d/model_top.mlir" --dataset "$d/calib4" --input-num 4 \
      --method minmax -o "$d/cali.table" > /dev/null 2>&1
    "$BIN/tpuc" deploy "$d/model_top.mlir" --quantize INT8 --chip bm1684x \
      --calibration-table "$d/cali.table" -o "$d/int8.bmodel" > /dev/null
  fi
  ort() {
    node "$ROOT/scripts/ort_run.js" "$d/$arch.onnx" "$d/input.npz" "$d/ort.npz" \
      --repeat "$REPEAT" --warmup 2
  }
  ort1="$(ort)"
  for mode in f16 int8; do
    # The binaries and paths alternate run by run, so that a drift of the
    # machine's speed during the series weighs on each of them alike.
    for i in $(seq "$REPEAT"); do
      for r in "${runs[@]}"; do
        which="${r%%:*}" path="${r#*:}"
        exe="$BIN/tpusim"
        [ "$which" = before ] && exe="$BEFORE"
        out="$d/sim_${mode}_${which}_$path.npz"
        # Wall time from the nanosecond clock (time's %e has 10 ms steps),
        # CPU time from time.
        t0=$(date +%s%N)
        TPUSIM_SIMD="$path" /usr/bin/time -f "%U %S" -o time.txt \
          "$exe" run "$d/$mode.bmodel" --mode full -i "$d/input.npz" -o "$out" > /dev/null
        t1=$(date +%s%N)
        echo "$arch $mode $which $path $(( (t1 - t0) / 1000 )) $(cat time.txt)" >> results.txt
      done
    done
    first=""
    for r in "${runs[@]}"; do
      out="$d/sim_${mode}_${r%%:*}_${r#*:}.npz"
      if [ -z "$first" ]; then
        first="$out"
      elif ! cmp -s "$first" "$out"; then
        echo "bench_fullsim: $out differs from $first" >&2
        exit 1
      fi
    done
    # In-process: the bmodel read and its check code verified once, then
    # per run a new machine state, the inputs, the simulation and the
    # outputs (sim-bench BM_ModelRun, as tpuc regress simulates each sample
    # of a case) -- what ORT's median after warm-up measures.
    if [ -x "$BIN/sim-bench" ]; then
      for r in "${runs[@]}"; do
        [ "${r%%:*}" = after ] || continue
        path="${r#*:}"
        ms=$(SIM_BENCH_BMODEL="$d/$mode.bmodel" SIM_BENCH_INPUT="$d/input.npz" \
          TPUSIM_SIMD="$path" "$BIN/sim-bench" --benchmark_filter='^BM_ModelRun/' \
          --benchmark_repetitions="$REPEAT" --benchmark_min_time=0.3 \
          --benchmark_report_aggregates_only=true --benchmark_format=json 2> /dev/null |
          $PY -c 'import json, sys
print([b["real_time"] for b in json.load(sys.stdin)["benchmarks"]
       if b.get("aggregate_name") == "median"][0])')
        echo "warm $arch $mode $path $ms" >> results.txt
      done
    fi
  done
  ort2="$(ort)"
  echo "ort $arch $($PY -c 'import json,sys; print(json.loads(sys.argv[1])["median_ms"], json.loads(sys.argv[2])["median_ms"], json.loads(sys.argv[1])["threads"])' "$ort1" "$ort2")" >> results.txt
done

$PY - results.txt <<'PY'
import statistics, sys
rows, ort, warm = {}, {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "ort":
        ort[f[1]] = (float(f[2]), float(f[3]), f[4])
        continue
    if f[0] == "warm":
        warm[tuple(f[1:4])] = float(f[4])
        continue
    arch, mode, which, path = f[:4]
    wall = float(f[4]) / 1e6  # microseconds
    user, sys_ = map(float, f[5:7])
    rows.setdefault((arch, mode, which, path), []).append((wall, user + sys_))
print("\n## tpusim --mode full vs ONNX Runtime F32 (same run)")
print("| model | mode | tpusim | SIMD path | median wall ms | median CPU s | ORT F32 ms (before / after sims) | wall / ORT |")
print("|---|---|---|---|---|---|---|---|")
for (arch, mode, which, path), v in rows.items():
    wall = statistics.median(x[0] for x in v)
    cpu = statistics.median(x[1] for x in v)
    o1, o2, threads = ort[arch]
    o = (o1 + o2) / 2
    print(f"| {arch} | {mode.upper()} | {which} | {path} | {wall * 1000:.1f} | {cpu:.2f} | "
          f"{o1:.1f} / {o2:.1f} (threads {threads}) | **{wall * 1000 / o:.2f}x** |")
if warm:
    print("\n## In-process (sim-bench BM_ModelRun: the bmodel read once; per run a new machine state,"
          " inputs, simulation, outputs) vs ONNX Runtime F32")
    print("| model | mode | SIMD path | median ms per run | ORT F32 ms | run / ORT |")
    print("|---|---|---|---|---|---|")
    for (arch, mode, path), ms in warm.items():
        o1, o2, threads = ort[arch]
        o = (o1 + o2) / 2
        print(f"| {arch} | {mode.upper()} | {path} | {ms:.1f} | {o:.1f} | **{ms / o:.2f}x** |")
PY
