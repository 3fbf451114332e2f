# Sourced (not run) by the end-to-end scripts of this folder: the gates per
# mode and the shared steps tpuc transform -> tpuc deploy (tpu interpreter
# checked against the top reference) -> tpusim run -> tpuc compare.
# The caller sets BIN (the build's bin/), MODE (F32|F16|BF16|INT8) and WORK.
# In INT8 the deploys use a calibration table that e2e_deploy_run_compare
# makes first (e2e_int8_table).

# e2e_gates default|real: sets vs_tpu (simulator vs tpu interpreter) and
# vs_ref (simulator and tpu interpreter vs the top reference), each
# "cosine,Euclidean similarity" minimums, for MODE. `default` is the default
# CNN's table (default_model.sh), `real` the real models' (real_model.sh,
# resnet18.sh); the scripts' headers give the reasons for the values.
# The default CNN's measured figures (prob, batch 1 / batch 4; 1 - euclid
# from the SQNR): vs_tpu bit-exact in all three modes (max |err| 0), so the
# same gates as `real`. vs_ref: F32 cosine 1.00000000, 1 - euclid 2.3e-7 /
# 2.3e-7; F16 0.99999973 / 0.99999984, 7.5e-4 / 5.7e-4; BF16 0.99997848 /
# 0.99998160, 6.6e-3 / 6.1e-3. Tightened where that leaves >= 10x on
# 1 - cosine and 1 - euclid; BF16's euclid stays 0.90 (0.95 would leave
# only 7.6x on ten outputs).
e2e_gates() {
  case "$1:$MODE" in
    default:F32)  vs_tpu=0.99999,0.9999; vs_ref=0.99999,0.9999 ;;
    default:F16)  vs_tpu=0.9999,0.999;   vs_ref=0.9999,0.99 ;;
    default:BF16) vs_tpu=0.9999,0.999;   vs_ref=0.999,0.90 ;;
    real:F32)     vs_tpu=0.99999,0.9999; vs_ref=0.9999,0.99 ;;
    real:F16)     vs_tpu=0.9999,0.999;   vs_ref=0.999,0.95 ;;
    real:BF16)    vs_tpu=0.9999,0.999;   vs_ref=0.99,0.85 ;;
    # INT8 (symmetric, kld + --tune-num 5 on 16 samples): tpusim bit-exact
    # against the tpu interpreter (max |err| 0 is checked too); against the
    # float reference the issue's cosine 0.99. The Euclidean gate is set
    # below the measured figures (default CNN 0.98, ResNet-18 0.98,
    # ResNet-50 / MobileNetV2 in resnet18.sh's header) with room for the
    # calibration noise of random-weight networks.
    default:INT8) vs_tpu=0.99999,0.9999; vs_ref=0.99,0.85 ;;
    real:INT8)    vs_tpu=0.99999,0.9999; vs_ref=0.99,0.80 ;;
    *) echo "unknown mode $MODE" >&2; exit 2 ;;
  esac
}

# e2e_bin_work_args "$@": the arguments --bin BUILD/bin --work DIR of a
# script that takes no others; sets BIN (made absolute) and WORK, exits 2 on
# anything else.
e2e_bin_work_args() {
  BIN="" WORK=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --bin) BIN="$2"; shift ;;
      --work) WORK="$2"; shift ;;
      *) echo "$(basename "$0"): unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
  done
  [ -n "$BIN" ] && [ -n "$WORK" ] || { echo "need --bin and --work" >&2; exit 2; }
  BIN="$(realpath "$BIN")"
}

# e2e_enter_work: empties WORK and changes into it; sets m (MODE in lower
# case, for file names).
e2e_enter_work() {
  rm -rf "$WORK"
  mkdir -p "$WORK"
  cd "$WORK"
  m=$(echo "$MODE" | tr 'A-Z' 'a-z')
}

# e2e_transform ONNX SHAPES: model_top.mlir and the top interpreter's
# outputs on input.npz (reference.npz).
e2e_transform() {
  "$BIN/tpuc" transform "$1" -o model_top.mlir --input-shapes "$2" \
    --test-input input.npz --test-result reference.npz
}

# e2e_deploy_run_compare [DEPLOY_OPTION...]: deploys model_top.mlir in MODE
# (extra options go to tpuc deploy; extra tpusim options come from the array
# E2E_SIM_OPTS), runs the bmodel on tpusim and applies both gates; then the
# same under each other layer-group strategy of E2E_STRATEGIES (default:
# greedy, none and kernels, after the default dp; `none` runs every op
# alone, a group of one where it has a local form, `kernels` is none with
# --lg-kernels, every op its per-op kernel), each
# bmodel's outputs equal to the tpu interpreter's bit for bit
# (--max-abs-rel 0: grouping changes no number). model_$m.bmodel and
# stats.json are the dp run's.
e2e_deploy_run_compare() {
  if [ "$MODE" = INT8 ]; then
    e2e_int8_table
    set -- --calibration-table cali.table "$@"
  fi
  "$BIN/tpuc" deploy model_top.mlir --quantize "$MODE" --chip bm1684x \
    -o "model_$m.bmodel" --test-input input.npz --test-reference reference.npz \
    --tolerance "$vs_ref" "$@"
  "$BIN/tpusim" run "model_$m.bmodel" -i input.npz -o sim.npz \
    --stats stats.json "${E2E_SIM_OPTS[@]}"
  # The per-op profile (from model_${m}_ops.json) adds up to the totals.
  /usr/bin/python3 "$ROOT/scripts/check_op_profile.py" stats.json
  "$BIN/tpuc" compare sim.npz "model_${m}_tpu_outputs.npz" --tolerance "$vs_tpu" \
    --max-abs-rel 0
  "$BIN/tpuc" compare sim.npz reference.npz --tolerance "$vs_ref"
  e2e_simd_paths "model_$m.bmodel" sim.npz stats.json
  local s lg
  for s in ${E2E_STRATEGIES:-greedy none kernels}; do
    lg=(--layer-group "$s")
    [ "$s" = kernels ] && lg=(--layer-group none --lg-kernels)
    "$BIN/tpuc" deploy model_top.mlir --quantize "$MODE" --chip bm1684x \
      -o "model_${m}_$s.bmodel" "${lg[@]}" --test-input input.npz "$@"
    "$BIN/tpusim" run "model_${m}_$s.bmodel" -i input.npz -o "sim_$s.npz" \
      --stats "stats_$s.json"
    /usr/bin/python3 "$ROOT/scripts/check_op_profile.py" "stats_$s.json"
    "$BIN/tpuc" compare "sim_$s.npz" "model_${m}_${s}_tpu_outputs.npz" \
      --tolerance "$vs_tpu" --max-abs-rel 0
    "$BIN/tpuc" compare "sim_$s.npz" sim.npz --tolerance "$vs_tpu" \
      --max-abs-rel 0
  done
  # The default cut is never slower than the per-op kernels (the
  # `kernels` run: every op its kernel) nor than every op alone as a
  # group of one (`none`): measured on every real model and mode.
  local ref
  for ref in kernels none; do
    [ -f "stats_$ref.json" ] || continue
    /usr/bin/python3 - stats.json "stats_$ref.json" "$ref" <<'PY'
import json, sys
def cycles(f):
    return {c["name"]: c["value"] for c in json.load(open(f))["counters"]}["total_cycles"]
dp, other, name = cycles(sys.argv[1]), cycles(sys.argv[2]), sys.argv[3]
if dp > other:
    sys.exit(f"e2e: dp's layer groups simulate slower ({dp} cycles) than "
             f"the {name} strategy ({other})")
print(f"e2e: dp {dp} <= {name} {other} cycles")
PY
  done
  # By the cost model, dp's groups (weight prefetch included) are never
  # slower than greedy's: the search keeps the greedy cut where it is
  # faster with the prefetch (ResNet-18 INT8 was not, 398,567 > 394,083).
  # The ops outside the groups are the same under both.
  if [ -f "model_${m}_greedy_groups.json" ]; then
    /usr/bin/python3 - "model_${m}_groups.json" "model_${m}_greedy_groups.json" <<'PY'
import json, sys
def cost(f):
    return sum(g["cost_cycles"] for g in json.load(open(f))["groups"])
dp, greedy = cost(sys.argv[1]), cost(sys.argv[2])
if dp > greedy:
    sys.exit(f"e2e: dp's groups cost {dp} cycles by the cost model, "
             f"greedy's {greedy}")
print(f"e2e: cost model: dp {dp} <= greedy {greedy} cycles")
PY
  fi
}
E2E_SIM_OPTS=()

# e2e_simd_paths BMODEL OUT.npz STATS.json: the full simulation once more
# on every SIMD path of the functional kernels this machine can run
# (`tpusim config --simd-paths`; TPUSIM_SIMD, simulator/include/tpusim/
# Simd.h) on one kernel thread; outputs and statistics byte-identical to
# the run that wrote OUT.npz and STATS.json (default path and threads).
e2e_simd_paths() {
  local p
  for p in $("$BIN/tpusim" config --simd-paths); do
    TPUSIM_SIMD=$p TPUSIM_THREADS=1 "$BIN/tpusim" run "$1" -i input.npz \
      -o "sim_simd_$p.npz" --stats "stats_simd_$p.json" "${E2E_SIM_OPTS[@]}" \
      > /dev/null
    cmp "$2" "sim_simd_$p.npz"
    cmp "$3" "stats_simd_$p.json"
  done
}

# e2e_int8_table: cali.table from 16 samples shaped like input.npz (drawn
# with its mean and deviation, scripts/make_calib_set.py; the test input
# itself is not among them), kld thresholds tuned with --tune-num 5.
e2e_int8_table() {
  /usr/bin/python3 "$ROOT/scripts/make_calib_set.py" --like input.npz \
    --num 16 --out calib
  "$BIN/tpuc" calibrate model_top.mlir --dataset calib --input-num 16 \
    -o cali.table --tune-num 5
}
