#!/usr/bin/env bash
# Runs a tpuc regress suite as a Slurm job array and merges the shards: the
# array of scripts/slurm_explore.sh (scripts/lib/slurm_array.sh) with
# `tpuc regress`.
#
#   scripts/slurm_regress.sh SUITE.toml N OUTDIR [sbatch options...]
#
# Task I runs `tpuc regress SUITE.toml --shard I/N -o OUTDIR/shard-I
# --cache OUTDIR/cache` (one compile cache for all tasks; entries are
# written through a rename, so concurrent tasks do not clash). A shard
# with a failing case exits 1, so the merge job waits for every task to
# end (afterany), not to succeed; `tpuc regress merge OUTDIR/shard-* -o
# OUTDIR --suite SUITE.toml` then fails on a missing or duplicated case,
# writes OUTDIR/results.json and OUTDIR/junit.xml and exits 1 on any
# failed case. MERGE_ARGS adds options to the merge (e.g.
# --update-baseline). TPUC and JOBS as for slurm_explore.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/slurm_array.sh"
out="${3:-}"
TASK_ARGS="${out:+--cache '$(realpath -m "$out")/cache'}"
slurm_array regress --suite afterany "$@"
