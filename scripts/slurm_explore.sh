#!/usr/bin/env bash
# Runs a tpuc explore sweep as a Slurm job array and merges the shards.
#
#   scripts/slurm_explore.sh SWEEP.toml N OUTDIR [sbatch options...]
#
# Submits `sbatch --array=0-(N-1)`, task I running
# `tpuc explore SWEEP.toml --shard I/N -o OUTDIR/shard-I`, and a merge job
# that starts when every task succeeded (afterok) and writes OUTDIR/results.json,
# results.csv and report.html (`tpuc explore merge ... --sweep SWEEP.toml`,
# which fails on a missing or duplicated point). Prints the two job ids
# ("array JOBID", "merge JOBID"). TPUC (default: tpuc on PATH, else
# build/bin/tpuc beside this script) names the compiler; JOBS sets --jobs per
# task (default: the task's CPUs, SLURM_CPUS_PER_TASK). Paths must be on a
# file system the compute nodes share.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 SWEEP.toml N OUTDIR [sbatch options...]" >&2
  exit 2
fi
SWEEP="$(realpath "$1")" N="$2" OUT="$(realpath -m "$3")"
shift 3
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "$0: N '$N' is not a positive integer" >&2; exit 2; }
[ -f "$SWEEP" ] || { echo "$0: $SWEEP: no such sweep file" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TPUC="${TPUC:-$(command -v tpuc || echo "$ROOT/build/bin/tpuc")}"
TPUC="$(realpath "$TPUC")"
mkdir -p "$OUT/slurm"
# Check the sweep here, before anything is queued (an error names the line).
"$TPUC" explore "$SWEEP" --check
JOBS_ARG=""
[ -n "${JOBS:-}" ] && JOBS_ARG="--jobs $JOBS"
array=$(sbatch --parsable --array=0-$((N - 1)) --job-name=tpuc-explore \
  --output="$OUT/slurm/shard-%a.log" "$@" --wrap \
  "exec '$TPUC' explore '$SWEEP' --shard \$SLURM_ARRAY_TASK_ID/$N -o '$OUT'/shard-\$SLURM_ARRAY_TASK_ID \${SLURM_CPUS_PER_TASK:+--jobs \$SLURM_CPUS_PER_TASK} $JOBS_ARG")
array="${array%%;*}"
dirs=""
for ((i = 0; i < N; i++)); do dirs+=" '$OUT/shard-$i'"; done
merge=$(sbatch --parsable --dependency=afterok:"$array" --job-name=tpuc-explore-merge \
  --output="$OUT/slurm/merge.log" "$@" --wrap \
  "exec '$TPUC' explore merge $dirs -o '$OUT' --sweep '$SWEEP'")
merge="${merge%%;*}"
echo "array $array"
echo "merge $merge"
