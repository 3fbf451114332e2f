#!/usr/bin/env bash
# tpuc explore on the default CNN (F16): 2 lane counts x 2 layer-group
# strategies x 2 DDR bandwidths.
#  - three points' cycles equal `tpuc deploy -p ... --layer-group S` +
#    `tpusim run --mode timing -p ...` exactly;
#  - a rerun skips every point;
#  - --shard 0/2 + --shard 1/2 + merge (with --sweep) equals the
#    one-process results (records compared without their CPU times);
#  - merge refuses overlapping shards and, with --sweep, a missing shard;
#  - bad sweep files (unknown key, bad value, empty range, missing model)
#    fail before any point runs, naming the line.
#
#   explore.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
PY=/usr/bin/python3

"$BIN/tpuc" transform "$ROOT/models/default/default_cnn.onnx" -o cnn_top.mlir \
  --input-shapes '[[1,3,32,32]]' >/dev/null
cat > sweep.toml <<'T'
# 2 lane counts x 2 strategies x 2 DDR bandwidths
models = ["cnn_top.mlir"]
quantize = "F16"
layer_group = ["none", "dp"]
[machine]
chip.npu_num = [32, 64]
ddr.bandwidth_gbps = { from = 16, to = 32, step = 16 }
T
"$BIN/tpuc" explore sweep.toml -o all --jobs 2 2> all.log
cat all.log
grep -q "8 point(s) run (0 failed), 0 skipped" all.log
test -s all/results.csv && test -s all/report.html
grep -q "Pareto front" all/report.html
! grep -q "http" all/report.html || ! grep -q "src=\"http" all/report.html

# Three points against deploy + tpusim.
for spec in "none 32 16" "dp 64 32" "dp 32 16"; do
  set -- $spec
  "$BIN/tpuc" deploy cnn_top.mlir --quantize F16 --chip bm1684x -o p.bmodel \
    --layer-group "$1" -p chip.npu_num="$2" -p ddr.bandwidth_gbps="$3" >/dev/null
  want=$("$BIN/tpusim" run p.bmodel --mode timing -p chip.npu_num="$2" \
    -p ddr.bandwidth_gbps="$3" | awk '/^total cycles/ {print $NF}')
  got=$($PY - "$1" "$2" "$3" <<'P'
import json, sys
lg, npu, bw = sys.argv[1:]
for p in json.load(open('all/results.json'))['points']:
    q = p['params']
    if q['layer_group'] == lg and q['chip.npu_num'] == npu and q['ddr.bandwidth_gbps'] == bw:
        print(p['cycles'])
P
)
  echo "point $spec: explore $got cycles, deploy + tpusim $want"
  [ -n "$want" ] && [ "$got" = "$want" ]
done

# A rerun skips every point.
"$BIN/tpuc" explore sweep.toml -o all 2> rerun.log
grep -q "0 point(s) run (0 failed), 8 skipped" rerun.log
# A shard run into those results keeps the other shard's points.
"$BIN/tpuc" explore sweep.toml -o all --shard 0/2 2> rerun.log
grep -q "0 point(s) run (0 failed), 4 skipped" rerun.log
$PY -c "import json; assert len(json.load(open('all/results.json'))['points']) == 8"

# Shards + merge equal the one-process run.
"$BIN/tpuc" explore sweep.toml -o s0 --shard 0/2 2>/dev/null
"$BIN/tpuc" explore sweep.toml -o s1 --shard 1/2 2>/dev/null
"$BIN/tpuc" explore merge s0 s1 -o merged --sweep sweep.toml
cmp_results() {
  $PY - "$1" "$2" <<'P'
import json, sys
def load(d):
    pts = json.load(open(d + '/results.json'))['points']
    for p in pts:
        p.pop('cpu_seconds', None)
    return sorted(pts, key=lambda p: p['hash'])
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a == b, f'{sys.argv[1]} and {sys.argv[2]} differ'
print(f'{sys.argv[1]} == {sys.argv[2]}: {len(a)} records')
P
}
cmp_results all merged
if "$BIN/tpuc" explore merge s0 s0 -o bad 2> m.err; then exit 1; fi
grep -q "is in both" m.err
if "$BIN/tpuc" explore merge s0 -o bad --sweep sweep.toml 2> m.err; then exit 1; fi
grep -q "4 of 8 point(s) of sweep.toml are missing" m.err

# A failing point (neither a group of one, even cut into column slices,
# nor a kernel fits 512 bytes of local memory: the first conv's filter
# alone takes 576 per lane) records its reason; the sweep goes on.
printf 'models = ["cnn_top.mlir"]\nlayer_group = "none"\n[machine]\nchip.lmem_bytes = [512, 256K]\n' > fail.toml
"$BIN/tpuc" explore fail.toml -o failing 2> fail.log
grep -q "2 point(s) run (1 failed)" fail.log
$PY - <<'P'
import json
pts = json.load(open('failing/results.json'))['points']
assert [p['status'] for p in pts] == ['failed', 'ok'], pts
assert pts[0]['reason'], pts[0]
print('failed point:', pts[0]['reason'][:160])
P
# Its log says why, too.
tail -n 1 failing/logs/*.log | grep -q "^failed: "
# A rerun runs the failed point again (its cause may be gone) and keeps
# the one that ran.
"$BIN/tpuc" explore fail.toml -o failing 2> refail.log
grep -q "1 point(s) run (1 failed), 1 skipped" refail.log
# A sweep none of whose points runs fails (exit 1); a shard of one only
# warns (its merge must go ahead).
printf 'models = ["cnn_top.mlir"]\nlayer_group = "none"\n[machine]\nchip.lmem_bytes = [512]\n' > none.toml
if "$BIN/tpuc" explore none.toml -o nonerun 2> none.err; then exit 1; fi
grep -q "error: no point ran" none.err
"$BIN/tpuc" explore none.toml -o noneshard --shard 0/2 2> noneshard.err
grep -q "warning: no point ran" noneshard.err
"$BIN/tpuc" explore none.toml -o noneshard1 --shard 0/1 2> noneshard1.err
grep -q "warning: no point ran" noneshard1.err
# Their merge is a whole sweep again: it fails.
if "$BIN/tpuc" explore merge noneshard1 -o nonemerged 2> nonemerge.err; then exit 1; fi
grep -q "merge: error: no point ran" nonemerge.err
# Rerunning another sweep into those results would drop their points:
# refused, the results kept.
if "$BIN/tpuc" explore sweep.toml -o failing 2> foreign.err; then exit 1; fi
grep -q "failing/results.json holds 2 point(s) that are not points of sweep.toml" foreign.err
$PY -c "import json; assert len(json.load(open('failing/results.json'))['points']) == 2"

# A point past the sweep's timeout is killed and recorded as failed (16
# 512-channel 3x3 convs on 64 x 64: compiling them takes about a second);
# a DDR faster than the time resolution (1e12 GB/s) runs to its end (it
# used to hang the simulator; `timeout` turns a hang into a failure).
$PY "$ROOT/tests/e2e/make_big_conv.py"
"$BIN/tpuc" transform big.onnx -o big_top.mlir > /dev/null
printf 'models = ["big_top.mlir", "cnn_top.mlir"]\ntimeout = 0.1\n' > slow.toml
"$BIN/tpuc" explore slow.toml -o slow 2> slow.log
$PY - <<'P'
import json
pts = {p['params']['model']: p for p in json.load(open('slow/results.json'))['points']}
big = pts['big_top.mlir']
assert big['status'] == 'failed' and 'timed out after 0.1 s (killed)' in big['reason'], big
print('killed point:', big['reason'][:120])
P
printf 'models = ["cnn_top.mlir"]\n[machine]\nddr.bandwidth_gbps = [64, 1e12]\n' > fast.toml
timeout 300 "$BIN/tpuc" explore fast.toml -o fast 2> fast.log
grep -q "2 point(s) run (0 failed)" fast.log

# Bad sweep files fail before any point runs, naming the line.
bad() { # LINE-PATTERN FILE-CONTENT
  printf '%s\n' "$2" > bad.toml
  rm -rf badout
  if "$BIN/tpuc" explore bad.toml -o badout 2> bad.err; then
    echo "accepted: $2" >&2; exit 1
  fi
  cat bad.err
  grep -q "bad.toml$1" bad.err
  [ ! -e badout/results.json ]
}
bad ":1: 'models' names one file twice (cnn_top.mlir and ./cnn_top.mlir)" $'models = ["cnn_top.mlir", "./cnn_top.mlir"]'
bad ":3: chip.name = BM1688: tpuc compiles for the BM1684X only" $'models = ["cnn_top.mlir"]\n[machine]\nchip.name = ["BM1688"]'
bad ":3: unknown key 'lg_max_lenght'" $'models = ["cnn_top.mlir"]\n# typo\nlg_max_lenght = 4'
bad ":3: chip.npu_num = x" $'models = ["cnn_top.mlir"]\n[machine]\nchip.npu_num = [32, x]'
bad ":3: unknown key 'chip.nope'\|3: chip.nope" $'models = ["cnn_top.mlir"]\n[machine]\nchip.nope = 1'
bad ":2: empty range" $'models = ["cnn_top.mlir"]\nlg_max_length = { from = 8, to = 4, step = 1 }'
bad ":1: model 'missing_top.mlir' does not exist" $'models = ["missing_top.mlir"]'
bad ": no models" $'quantize = "F16"'
bad ":2: layer_group = best" $'models = ["cnn_top.mlir"]\nlayer_group = ["dp", "best"]'
bad ":3: 'chip.lmem_bytes' lists a value twice (64K and 65536)" $'models = ["cnn_top.mlir"]\n[machine]\nchip.lmem_bytes = [64K, 65536]'
bad ':2: timeout = 0 is out of range' $'models = ["cnn_top.mlir"]\ntimeout = 0'
# A machine value no combination of the sweep makes valid (lanes are a
# power of two); one valid only with other values (512 KiB of local memory
# per lane needs fewer than 64 lanes) leaves those points to fail.
bad ":3: chip.npu_num = 48: no machine of the sweep with it is valid" $'models = ["cnn_top.mlir"]\n[machine]\nchip.npu_num = [32, 48]'
printf '%s\n' 'models = ["cnn_top.mlir"]' '[machine]' 'chip.lmem_bytes = [262144, 524288]' 'chip.npu_num = [32, 64]' > pair.toml
"$BIN/tpuc" explore pair.toml --check | grep -q "4 point(s)"
# --check runs nothing: an output directory is refused, not ignored.
if "$BIN/tpuc" explore pair.toml --check -o pairout 2> check.err; then exit 1; fi
grep -q "output is for running; --check runs and writes nothing (drop --output)" check.err
[ ! -e pairout ]
# scripts/slurm_explore.sh checks the sweep before it makes anything (no
# Slurm needed to get there).
if TPUC="$BIN/tpuc" "$ROOT/scripts/slurm_explore.sh" bad.toml 2 slurmout 2> slurm.err; then exit 1; fi
grep -q "bad.toml:3" slurm.err
[ ! -e slurmout ]
echo "explore: OK"
