#!/usr/bin/env bash
# scripts/slurm_explore.sh on a single-node Slurm cluster started for the
# test: munged, slurmctld and slurmd on this host (its hostname and CPU
# count, from `slurmd -C`) with a generated slurm.conf in the work
# directory; a 4-shard array over the sweep of explore.sh, a dependent
# merge job; the merged results must equal a one-process sweep; then a
# tpuc regress suite through scripts/slurm_regress.sh. The daemons
# are stopped at the end. Skips (scripts/lib/skip.sh) without slurm-wlm and
# munge (apt-get install slurm-wlm munge) or when the daemons do not start.
#
#   explore_slurm.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
source "$ROOT/scripts/lib/skip.sh"
for c in munged slurmctld slurmd sbatch squeue; do
  command -v "$c" >/dev/null ||
    tpu_skip "no $c (apt-get install slurm-wlm munge)"
done
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
WORK="$(pwd)"
PY=/usr/bin/python3
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# munge with its own key and socket.
mkdir -p munge && chmod 711 munge
dd if=/dev/urandom of=munge/munge.key bs=1024 count=1 status=none
chmod 400 munge/munge.key
munged --foreground --force --key-file="$WORK/munge/munge.key" \
  --socket="$WORK/munge/munge.sock" --pid-file="$WORK/munge/munged.pid" \
  --log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/seed" &
PIDS+=($!)
for _ in $(seq 50); do [ -S munge/munge.sock ] && break; sleep 0.1; done
[ -S munge/munge.sock ] || tpu_skip "munged did not start ($(tail -n1 munge/munged.log 2>/dev/null))"

HOST="$(hostname -s)"
NODE_LINE="$(slurmd -C | head -n1)" # NodeName=... CPUs=... RealMemory=...
CPUS="$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")"
mkdir -p state spool log
cat > slurm.conf <<C
ClusterName=tpuexplore
SlurmctldHost=$HOST
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/munge.sock
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool/slurmd-%n
SlurmctldPidFile=$WORK/state/slurmctld.pid
SlurmdPidFile=$WORK/spool/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$HOST CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
C
export SLURM_CONF="$WORK/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >log/slurmctld.out 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N "$HOST" >log/slurmd.out 2>&1 &
PIDS+=($!)
up=0
for _ in $(seq 60); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then up=1; break; fi
  sleep 0.5
done
if [ $up = 0 ]; then
  cat log/*.out >&2 || true
  tail -n5 log/slurmctld.log log/slurmd.log >&2 2>/dev/null || true
  tpu_skip "the single-node Slurm cluster did not come up (sinfo: $(sinfo -h 2>&1 | head -n1))"
fi
sinfo

"$BIN/tpuc" transform "$ROOT/models/default/default_cnn.onnx" -o cnn_top.mlir \
  --input-shapes '[[1,3,32,32]]' >/dev/null
cat > sweep.toml <<'T'
models = ["cnn_top.mlir"]
quantize = "F16"
layer_group = ["none", "dp"]
[machine]
chip.npu_num = [32, 64]
ddr.bandwidth_gbps = { from = 16, to = 32, step = 16 }
T
# wait_queue: until no job is queued or running (at most 300 s).
wait_queue() {
  for _ in $(seq 300); do
    [ -z "$(squeue -h 2>/dev/null)" ] && break
    sleep 1
  done
  [ -z "$(squeue -h)" ] || { squeue; echo "jobs still queued after 300 s" >&2; exit 1; }
}
"$BIN/tpuc" explore sweep.toml -o one --jobs 2 2>/dev/null
TPUC="$BIN/tpuc" "$ROOT/scripts/slurm_explore.sh" sweep.toml 4 out --cpus-per-task=1 | tee jobs.txt
wait_queue
cat out/slurm/merge.log
test -s out/results.json
$PY - <<'P'
import json
def load(d):
    pts = json.load(open(d + '/results.json'))['points']
    for p in pts:
        p.pop('cpu_seconds', None)
    return sorted(pts, key=lambda p: p['hash'])
a, b = load('one'), load('out')
assert a == b, 'the Slurm results differ from the one-process sweep'
print(f'slurm == one process: {len(a)} records')
P

# tpuc regress through scripts/slurm_regress.sh (the same array): a 3-case
# suite (one case failing its accuracy gate) in 2 shards; the merge (which
# runs after the failing shard too) gives the one-process verdicts.
cp "$ROOT/tests/regress/default_cnn_input.npz" in.npz
cat > suite.toml <<'T'
[case.f16]
model = "cnn_top.mlir"
input = "in.npz"
quantize = ["F16", "BF16"]
reference = "top"
# BF16 measures 43.8 dB: fails
sqnr = 50
[case.none]
model = "cnn_top.mlir"
quantize = "F16"
layer_group = "none"
T
if "$BIN/tpuc" regress suite.toml -o rone --update-baseline > rone.txt; then
  echo "the BF16 case should fail" >&2; exit 1
fi
TPUC="$BIN/tpuc" "$ROOT/scripts/slurm_regress.sh" suite.toml 2 rout --cpus-per-task=1 | tee rjobs.txt
wait_queue
cat rout/slurm/merge.log
grep -q "3 case(s): 2 passed, 1 failed, 0 error(s)" rout/slurm/merge.log
ls rout/cache/bm-* > /dev/null # one cache for all shards
$PY - <<'P'
import json
def load(d):
    return {c['id']: (c['verdict'], c['metrics'], c['reasons'])
            for c in json.load(open(d + '/results.json'))['cases']}
a, b = load('rone'), load('rout')
assert a == b, 'the Slurm regress results differ from the one-process run'
print(f'slurm regress == one process: {len(a)} cases')
P
echo "explore_slurm: OK"
