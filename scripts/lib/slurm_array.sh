# Sourced by scripts/slurm_explore.sh and scripts/slurm_regress.sh: runs
# `tpuc SUBCOMMAND FILE` as a Slurm job array and merges the shards.
#
#   slurm_array SUBCOMMAND MERGE_FLAG DEPENDENCY FILE N OUTDIR [sbatch options...]
#
# Checks FILE (`tpuc SUBCOMMAND FILE --check`, errors name the line) before
# anything is queued, submits `sbatch --array=0-(N-1)`, task I running
# `tpuc SUBCOMMAND FILE --shard I/N -o OUTDIR/shard-I` plus the words of
# TASK_ARGS, and a merge job (`tpuc SUBCOMMAND merge OUTDIR/shard-* -o
# OUTDIR MERGE_FLAG FILE` plus MERGE_ARGS) that starts after the array
# under DEPENDENCY (afterok: every task succeeded; afterany: every task
# ended, the merge then names missing results). Prints "array JOBID" and
# "merge JOBID". TPUC (default: tpuc on PATH, else build/bin/tpuc of this
# tree) names the compiler; JOBS sets --jobs per task (default: the task's
# CPUs, SLURM_CPUS_PER_TASK). Paths must be on a file system the compute
# nodes share.
slurm_array() {
  local sub="$1" mergeFlag="$2" dep="$3" name="$0"
  shift 3
  if [ $# -lt 3 ]; then
    echo "usage: $name FILE.toml N OUTDIR [sbatch options...]" >&2
    exit 2
  fi
  local file out n
  file="$(realpath "$1")" n="$2" out="$(realpath -m "$3")"
  shift 3
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "$name: N '$n' is not a positive integer" >&2; exit 2; }
  [ -f "$file" ] || { echo "$name: $file: no such file" >&2; exit 2; }
  local root tpuc
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  tpuc="${TPUC:-$(command -v tpuc || echo "$root/build/bin/tpuc")}"
  tpuc="$(realpath "$tpuc")"
  # Checked before anything is made: a bad file leaves no OUTDIR behind.
  "$tpuc" "$sub" "$file" --check
  mkdir -p "$out/slurm"
  local jobsArg=""
  [ -n "${JOBS:-}" ] && jobsArg="--jobs $JOBS"
  local array merge dirs="" i
  array=$(sbatch --parsable --array=0-$((n - 1)) --job-name="tpuc-$sub" \
    --output="$out/slurm/shard-%a.log" "$@" --wrap \
    "exec '$tpuc' $sub '$file' --shard \$SLURM_ARRAY_TASK_ID/$n -o '$out'/shard-\$SLURM_ARRAY_TASK_ID \${SLURM_CPUS_PER_TASK:+--jobs \$SLURM_CPUS_PER_TASK} $jobsArg ${TASK_ARGS:-}")
  array="${array%%;*}"
  for ((i = 0; i < n; i++)); do dirs+=" '$out/shard-$i'"; done
  merge=$(sbatch --parsable --dependency="$dep:$array" \
    --job-name="tpuc-$sub-merge" --output="$out/slurm/merge.log" "$@" --wrap \
    "exec '$tpuc' $sub merge $dirs -o '$out' $mergeFlag '$file' ${MERGE_ARGS:-}")
  merge="${merge%%;*}"
  echo "array $array"
  echo "merge $merge"
}
