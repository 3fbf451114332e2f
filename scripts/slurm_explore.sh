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
# file system the compute nodes share. (The array itself: scripts/lib/
# slurm_array.sh, which scripts/slurm_regress.sh shares.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/slurm_array.sh"
slurm_array explore --sweep afterok "$@"
