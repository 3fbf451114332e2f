#!/usr/bin/env bash
# tpuc regress on the default CNN (a suite of 3 cases written here, with its
# own baseline):
#  - --update-baseline writes a text baseline; a rerun passes and compiles
#    nothing (every bmodel from the cache; both wall times printed);
#  - the JSON result's numbers equal `tpusim run --stats` on the same
#    bmodel (every counter, every op);
#  - the JUnit XML follows the common JUnit schema's rules (python3 xml);
#  - a wrong quantize table (every op BF16 in the F16 case, which has an
#    SQNR gate) and a wrong calibration table (thresholds / 50) fail the
#    suite naming the case and the reason; a timing change (DDR bandwidth
#    in the case) fails naming the case, the cycles and the ops that moved
#    most; restoring each passes again (from the cache); a faster machine
#    passes with a note;
#  - a case that fails to compile and one that times out are failed cases
#    (errors in the JUnit XML), the other cases still run;
#  - --shard 0/2 + 1/2 + merge gives the one-process verdicts; merge refuses
#    a missing shard;
#  - a ready .bmodel, a calibration dataset and an input directory (every
#    sample checked, a failing one named);
#  - a float case whose quantize table has INT8 entries calibrates (from a
#    table or a dataset) as tpuc deploy does: the same bmodel;
#  - bad suites (unknown key, missing model, tolerance out of range, an unknown model kind,
#    INT8 without a table or INT8 qtable entries without one, unknown section) and a bad baseline fail before
#    any case runs, naming the line, and write nothing.
#
#   regress.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
PY=/usr/bin/python3
T="$BIN/tpuc"

cp "$ROOT/models/default/default_cnn.onnx" cnn.onnx
cp "$ROOT/tests/regress/default_cnn_input.npz" in.npz
cp "$ROOT/tests/regress/default_cnn.cali" good.cali
# The F16 case's qtable: one op kept in F32 (harmless); the wrong one puts
# every op in BF16 (the default CNN's op names, from its top module).
printf 'logits F32\n' > good.qtable
: > wrong.qtable
for op in relu1 relu2 pool relu3 bn4 relu4 relu5 gap flat logits prob; do
  echo "$op BF16" >> wrong.qtable
done
# The wrong calibration table: every threshold / 50 (heavy clipping).
$PY - <<'P'
out = []
for line in open('good.cali'):
    f = line.split()
    if line.startswith('#') or len(f) < 2:
        out.append(line)
        continue
    f[1] = repr(float(f[1]) / 50)
    out.append(' '.join(f) + '\n')
open('wrong.cali', 'w').writelines(out)
P
cp good.qtable case.qtable
cp good.cali case.cali

# MACHINE: an extra line of the f16 case (a machine key), empty by default.
write_suite() {
  cat > suite.toml <<T
[suite]
name = "cnn"
drift = 0.5

[case.f16]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = "F16"
qtable = "case.qtable"
reference = "top"
bit_exact = true
cosine = 0.9999
euclid = 0.99
# F16 measures 64.8 dB against the top interpreter, BF16 43.8 dB.
sqnr = 55
${MACHINE:-}

[case.int8]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = ["INT8"]
calibration_table = "case.cali"
reference = "top"
bit_exact = true
cosine = 0.99
euclid = 0.85

[case.none]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = ["F32", "BF16"]
layer_group = "none"
bit_exact = true
T
}
write_suite

# Baseline, then a rerun from the cache.
s=$(date +%s.%N)
"$T" regress suite.toml -o out --jobs 2 --update-baseline > first.txt
cold=$($PY -c "import time; print(f'{time.time() - $s:.2f}')")
cat first.txt
grep -q "4 case(s): 4 passed, 0 failed, 0 error(s); 4 compiled, 0 from the cache" first.txt
grep -q "^case f16/F16$" cnn.baseline
grep -q "^  op (other) " cnn.baseline
s=$(date +%s.%N)
"$T" regress suite.toml -o out --jobs 2 > second.txt
warm=$($PY -c "import time; print(f'{time.time() - $s:.2f}')")
cat second.txt
grep -q "4 case(s): 4 passed, 0 failed, 0 error(s); 0 compiled, 4 from the cache" second.txt
echo "wall time: cold $cold s (4 compiles), warm $warm s (cache hits)"

# The JSON's numbers are the stats JSON's (tpusim run on the same bmodel,
# which finds the op map beside it).
for id in f16/F16 int8/INT8 none/BF16; do
  bm=$($PY -c "import json,sys; print(next(c['bmodel'] for c in json.load(open('out/results.json'))['cases'] if c['id'] == sys.argv[1]))" "$id")
  "$BIN/tpusim" run "$bm" -i in.npz -o sim.npz --stats stats.json > /dev/null
  $PY - "$id" <<'P'
import json, sys
case = next(c for c in json.load(open('out/results.json'))['cases']
            if c['id'] == sys.argv[1])
stats = json.load(open('stats.json'))
assert case['stats'] == stats, 'results.json stats differ from tpusim --stats'
counters = {c['name']: c['value'] for c in stats['counters']}
m = case['metrics']
assert m['cycles'] == counters['total_cycles']
assert m['ddr_read_bytes'] == counters['ddr.read_bytes']
assert m['ddr_write_bytes'] == counters['ddr.write_bytes']
assert m['ddr_bytes'] == counters['ddr.read_bytes'] + counters['ddr.write_bytes']
assert m['mac_utilisation'] == counters['tiu.mac_utilisation']
assert m['time_us'] == counters['total_time_us']
assert sum(o['cycles'] for o in stats['ops']) == counters['total_cycles']
print(f"{sys.argv[1]}: results.json == tpusim --stats ({len(stats['counters'])} counters, {len(stats['ops'])} ops)")
P
done

# JUnit XML against the common schema's rules (testsuites > testsuite >
# testcase > failure | error | skipped | system-out | system-err).
check_junit() { # FILE TESTS FAILURES ERRORS
  $PY - "$@" <<'P'
import sys, xml.etree.ElementTree as ET
path, tests, failures, errors = sys.argv[1], *map(int, sys.argv[2:])
root = ET.parse(path).getroot()
assert root.tag == 'testsuites', root.tag
suites = root.findall('testsuite')
assert len(suites) == 1 and len(root) == 1
s = suites[0]
for a in ('name', 'tests', 'failures', 'errors', 'skipped', 'time', 'timestamp', 'hostname'):
    assert a in s.attrib, f'testsuite lacks {a}'
assert set(s.attrib) <= {'name', 'tests', 'failures', 'errors', 'skipped', 'time',
                         'timestamp', 'hostname', 'id', 'package'}, s.attrib
float(s.get('time'))
import re
assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d', s.get('timestamp'))
cases = s.findall('testcase')
assert len(cases) == len(s) == int(s.get('tests')) == tests, (len(cases), s.get('tests'))
nf = ne = 0
for c in cases:
    assert set(c.attrib) == {'name', 'classname', 'time'}, c.attrib
    assert float(c.get('time')) >= 0
    for child in c:
        assert child.tag in ('failure', 'error', 'skipped', 'system-out', 'system-err'), child.tag
        if child.tag in ('failure', 'error'):
            assert child.get('message') and child.get('type'), child.attrib
            assert set(child.attrib) <= {'message', 'type'}
    nf += len(c.findall('failure'))
    ne += len(c.findall('error'))
    assert len(c.findall('failure')) + len(c.findall('error')) <= 1
assert nf == int(s.get('failures')) == failures, (nf, s.get('failures'))
assert ne == int(s.get('errors')) == errors, (ne, s.get('errors'))
assert root.get('tests') == s.get('tests') and root.get('failures') == s.get('failures')
print(f'{path}: valid JUnit, {tests} testcases, {nf} failures, {ne} errors')
P
}
check_junit out/junit.xml 4 0 0

# A run that must fail naming the case and the reason: WHAT GREP...
must_fail() {
  local what="$1"
  shift
  if "$T" regress suite.toml -o out --jobs 2 > bad.txt; then
    cat bad.txt
    echo "regress passed despite $what" >&2
    exit 1
  fi
  cat bad.txt
  local g
  for g in "$@"; do
    grep -q -- "$g" bad.txt || { echo "no '$g' in the output ($what)" >&2; exit 1; }
  done
}
must_pass() {
  "$T" regress suite.toml -o out --jobs 2 > ok.txt || { cat ok.txt; exit 1; }
  grep -q "0 failed, 0 error(s); 0 compiled, 4 from the cache" ok.txt ||
    { cat ok.txt; echo "restored suite not from the cache" >&2; exit 1; }
}

cp wrong.qtable case.qtable
must_fail "a wrong quantize table" "^f16/F16: FAIL: output prob: SQNR [0-9.]* dB < 55 dB" \
  "1 failed, 0 error(s); 1 compiled, 3 from the cache"
check_junit out/junit.xml 4 1 0
grep -q 'message="output prob: SQNR' out/junit.xml
cp good.qtable case.qtable
must_pass

cp wrong.cali case.cali
must_fail "a wrong calibration table" "^int8/INT8: FAIL: output prob: cosine"
cp good.cali case.cali
must_pass

MACHINE="ddr.bandwidth_gbps = 4" write_suite
must_fail "a timing change" \
  "^f16/F16: FAIL: cycles [0-9]* vs baseline [0-9]* (+[0-9.]* %, allowed 0.5 %); moved most: " \
  "^f16/F16: ops moved most against the baseline:" "^    group0 +"
# The same groups as the baseline's (so no note that the ops differ).
$PY -c "import json; b = next(c for c in json.load(open('out/results.json'))['cases'] if c['id'] == 'f16/F16')['baseline']; assert (b['ops_new'], b['ops_gone']) == (0, 0), b"
# Other groups (layer_group none for the f16 case): named as such.
MACHINE='layer_group = "none"' write_suite
must_fail "other groups" "^f16/F16: ops moved most against the baseline (the ops differ from the baseline's, [0-9]* new and [0-9]* gone"
# Faster than the baseline (4x the default 64 GB/s): passes, with a note.
MACHINE="ddr.bandwidth_gbps = 256" write_suite
"$T" regress suite.toml -o out --jobs 2 > better.txt || { cat better.txt; exit 1; }
cat better.txt
grep -q "^f16/F16: NOTE: cycles [0-9]* vs baseline [0-9]* (-[0-9.]* %): better than the baseline" better.txt
# A slower clock: fewer cycles (DDR's nanoseconds take fewer of them), a
# longer run: fails on the time.
MACHINE="tiu.freq_mhz = 500" write_suite
must_fail "a slower clock" \
  "^f16/F16: FAIL: time (us) [0-9.]* vs baseline [0-9.]* (+[0-9.]* %, allowed 0.5 %)"
write_suite
must_pass

# drift = 0: a run right after --update-baseline compares equal (the
# fractions as the file writes them); a baseline block of a case the suite
# does not have is named.
sed 's/^drift = 0.5$/drift = 0/' suite.toml > zero.toml
cp cnn.baseline zero.baseline
printf 'case gone/F16\n  cycles 5\n' >> zero.baseline
"$T" regress zero.toml -o zout --cache out/cache --baseline zero.baseline > zero.txt ||
  { cat zero.txt; exit 1; }
grep -q "4 passed, 0 failed" zero.txt
grep -q "note: the baseline zero.baseline holds 1 case(s) the suite does not have (gone/F16)" zero.txt
"$T" regress zero.toml -o zout --cache out/cache --baseline zero.baseline --update-baseline > /dev/null
if grep -q gone zero.baseline; then echo "--update-baseline kept gone/F16" >&2; exit 1; fi
grep -q "^  time_us [0-9.]*$" zero.baseline
# Outputs over each other or the suite: refused before any case.
for args in "--json zout/x --junit zout/x" "--junit zero.toml" "--json zero.baseline --update-baseline"; do
  # shellcheck disable=SC2086
  if "$T" regress zero.toml -o zout --cache out/cache --baseline zero.baseline $args 2> clash.err; then
    echo "regress accepted $args" >&2; exit 1
  fi
  grep -q "give each its own file; nothing run" clash.err || { cat clash.err; exit 1; }
done
# A refusal leaves no output directory behind.
if "$T" regress zero.toml -o fresh/out --cache out/cache --junit zero.toml 2> clash.err; then exit 1; fi
[ ! -e fresh ]
# A baseline from before time_us: the time is not compared, and the JSON
# says none (null), not +100 %.
grep -v "^  time_us " zero.baseline > notime.baseline
"$T" regress zero.toml -o notime --cache out/cache --baseline notime.baseline > /dev/null
$PY -c "import json; b = json.load(open('notime/results.json'))['cases'][0]['baseline']; assert b['time_us'] is None and b['time_percent'] is None, b"
grep -q "^\[case" zero.toml

# A case that does not compile (1 KiB of local memory fits no kernel) and
# one that is killed after its timeout (16 512-channel 3x3 convs on 64 x 64,
# 155 GMACs in full simulation: about 1 s each on this machine) are failed
# cases; the suite's cases run on.
$PY "$ROOT/tests/e2e/make_big_conv.py"
cp suite.toml suite.good
cat >> suite.toml <<'T'

[case.nolmem]
# The first conv's filter alone takes 576 bytes per lane: nothing fits.
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
layer_group = "none"
chip.lmem_bytes = 512

[case.slow]
model = "big.onnx"
input = "big.npz"
quantize = "F32"
timeout = 1
T
must_fail "a failing compile and a timeout" "^nolmem/F16: ERROR: compile: " \
  "^slow/F32: ERROR: compile: timed out after 1 s (killed)" "4 passed, 0 failed, 2 error(s)"
check_junit out/junit.xml 6 0 2
# The cases that did not run have their time (the killed one its second).
$PY - <<'P'
import json
cases = json.load(open('out/results.json'))['cases']
t = {c['id']: c['wall_seconds'] for c in cases}
assert t['slow/F32'] >= 1 and t['nolmem/F16'] > 0, t
# The step is named once, not again among the log's last lines.
for c in cases:
    assert '== step' not in c.get('reason', ''), c['reason']
P
mv suite.good suite.toml
must_pass

# Shards and merge: the one-process verdicts and figures.
"$T" regress suite.toml -o s0 --shard 0/2 --cache out/cache > /dev/null
"$T" regress suite.toml -o s1 --shard 1/2 --cache out/cache > /dev/null
"$T" regress merge s0 s1 --suite suite.toml -o merged > merged.txt
cat merged.txt
grep -q "4 case(s): 4 passed, 0 failed, 0 error(s); 0 compiled, 4 from the cache" merged.txt
$PY - <<'P'
import json
def load(d):
    return {c['id']: (c['verdict'], c['metrics'], c['outputs'])
            for c in json.load(open(d + '/results.json'))['cases']}
a, b = load('out'), load('merged')
assert a == b, 'merged shards differ from the one-process run'
print(f'merged shards == one process: {len(a)} cases')
P
if "$T" regress merge s0 --suite suite.toml -o bad > m.err 2>&1; then exit 1; fi
grep -q "2 of 4 case(s) of suite.toml are missing" m.err
if "$T" regress merge s0 s0 --suite suite.toml -o bad > m.err 2>&1; then exit 1; fi
grep -q "is in both" m.err
if "$T" regress merge s0 s1 --suite suite.toml -o bad --shard 0/2 2> m.err; then exit 1; fi
grep -q "drop --shard" m.err
# --check reads the suite only: options for a run are refused, nothing is
# written.
for opt in "-o chk" "--jobs 2" "--update-baseline" "--json chk.json"; do
  if "$T" regress suite.toml --check $opt > m.err 2>&1; then exit 1; fi
  grep -q "is for running; --check runs and writes nothing" m.err
done
[ ! -e chk ] && [ ! -e chk.json ]
"$T" regress suite.toml --check | grep -q "3 case(s), 4 run(s)"
# The wrong suite: its cases missing and the shards' cases foreign, both.
printf '[case.other]\nmodel = "cnn.onnx"\ninput_shapes = "[[1,3,32,32]]"\n' > other.toml
if "$T" regress merge s0 s1 --suite other.toml -o bad > m.err 2>&1; then exit 1; fi
grep -q "1 of 1 case(s) of other.toml are missing (other/F16); 4 case(s) of the results are not cases of other.toml" m.err

# A ready bmodel (with its op map beside it) and a calibration dataset.
bm=$($PY -c "import json; print(next(c['bmodel'] for c in json.load(open('out/results.json'))['cases'] if c['id'] == 'int8/INT8'))")
cp "$bm" ready.bmodel
cp "$(dirname "$bm")/model_ops.json" ready_ops.json
$PY "$ROOT/scripts/make_calib_set.py" --like in.npz --num 8 --out calib > /dev/null
cp out/cache/ref-*/reference_0.npz ref.npz
cat > more.toml <<'T'
[case.ready]
model = "ready.bmodel"
input = "in.npz"
reference = "ref.npz"
cosine = 0.99
euclid = 0.85

[case.dataset]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = "INT8"
calibration_dataset = "calib"
calibration_num = 8
reference = "top"
# 8 samples, kld without tuning: measured cosine 0.986, euclid 0.829 (the
# 16-sample tuned table of the other cases: 0.9999, 0.989).
cosine = 0.98
euclid = 0.80
T
# An input directory: every sample simulated and checked, the worst figure
# reported; one sample's failure names it.
cat >> more.toml <<'T'

[case.samples]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "calib"
quantize = "INT8"
calibration_table = "case.cali"
reference = "top"
bit_exact = true
cosine = 0.99
euclid = 0.85
T
# A machine key of a ready bmodel's case goes to the simulator: tpusim run -p.
want=$("$BIN/tpusim" run ready.bmodel --mode timing -p ddr.bandwidth_gbps=8 | awk '/^total cycles/ {print $NF}')
cat >> more.toml <<'T'

[case.ready_slow_ddr]
model = "ready.bmodel"
ddr.bandwidth_gbps = 8
T
"$T" regress more.toml -o more --update-baseline > more.txt || { cat more.txt; exit 1; }
[ -n "$want" ]
grep -q "^ready_slow_ddr  *-  *-  *$want " more.txt
cat more.txt
grep -q "^ready  *-  *cos 0\.99" more.txt
grep -q "^dataset  *INT8  *cos 0\.98" more.txt
grep -q "^samples  *INT8  *cos 0\.99[0-9]* euc 0\.9[0-9]* [0-9.]* dB, bit-exact" more.txt
grep -q "4 case(s): 4 passed, 0 failed, 0 error(s); 2 compiled, 0 from the cache" more.txt
$PY - <<'P'
import json
c = next(c for c in json.load(open('more/results.json'))['cases'] if c['case'] == 'samples')
assert c['outputs'][0]['samples'] == 8, c['outputs']
P
cp wrong.cali case.cali
if "$T" regress more.toml -o more > more.txt; then cat more.txt; exit 1; fi
grep -q "^samples/INT8: FAIL: output prob: cosine [0-9.]* < 0.99 (sample sample_000.npz)" more.txt
grep -q "^samples/INT8: FAIL: output prob: cosine [0-9.]* < 0.99 (sample sample_007.npz)" more.txt
cp good.cali case.cali
ls more/cache/cali-*/cali.table > /dev/null

# A float case whose quantize table has INT8 entries calibrates as tpuc
# deploy does: with calibration_table its bmodel is deploy's with that table;
# with calibration_dataset the table is made for the F16 case too, and the
# bmodel is deploy's with the table made.
printf 'relu2 INT8\nrelu3 INT8\n' > mixed.qtable
cat > mixed.toml <<'T'
[case.table]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = "F16"
qtable = "mixed.qtable"
calibration_table = "good.cali"

[case.dataset]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = ["F16", "BF16"]
qtable = "mixed.qtable"
calibration_dataset = "calib"
calibration_num = 8
T
"$T" regress mixed.toml -o mixed --update-baseline > mixed.txt || { cat mixed.txt; exit 1; }
cat mixed.txt
grep -q "3 case(s): 3 passed, 0 failed, 0 error(s); 3 compiled" mixed.txt
"$T" transform cnn.onnx -o cnn_top.mlir --input-shapes "[[1,3,32,32]]" > /dev/null
# Two bmodels are the same compile when tpu-dis (every command, the
# coefficients' SHA-256) shows the same but for the time stamp.
same_bmodel() { # A B
  diff <("$BIN/tpu-dis" "$1" | sed 's/ time="[^"]*"//') \
    <("$BIN/tpu-dis" "$2" | sed 's/ time="[^"]*"//')
}
mixed_bmodel() { # ID
  $PY -c "import json,sys; print(next(c['bmodel'] for c in json.load(open('mixed/results.json'))['cases'] if c['id'] == sys.argv[1]))" "$1"
}
"$T" deploy cnn_top.mlir --quantize F16 --chip bm1684x --quantize-table mixed.qtable \
  --calibration-table good.cali -o mixed_table.bmodel > /dev/null
same_bmodel "$(mixed_bmodel table/F16)" mixed_table.bmodel
made=$(ls mixed/cache/cali-*/cali.table)
[ "$(echo "$made" | wc -l)" = 1 ]
for m in F16 BF16; do
  "$T" deploy cnn_top.mlir --quantize $m --chip bm1684x --quantize-table mixed.qtable \
    --calibration-table "$made" -o mixed_dataset.bmodel > /dev/null
  same_bmodel "$(mixed_bmodel dataset/$m)" mixed_dataset.bmodel
done

# Bad suites fail before any case runs, naming the line, writing nothing.
mkdir -p empty
bad() { # GREP CONTENT
  printf '%s\n' "$2" > bad.toml
  rm -rf badout
  if "$T" regress bad.toml -o badout > bad.out 2> bad.err; then
    echo "accepted: $2" >&2; exit 1
  fi
  cat bad.err
  grep -q "bad.toml$1" bad.err
  [ ! -e badout ]
}
bad ":3: unknown key 'cosin'" $'[case.a]\nmodel = "cnn.onnx"\ncosin = 0.99'
bad ":2: model 'nope.onnx' does not exist" $'[case.a]\nmodel = "nope.onnx"'
bad ":1: case 'a': no model" $'[case.a]\ninput = "in.npz"'
bad ":5: cosine = 1.5 is out of range \[-1, 1\]" $'[case.a]\nmodel = "cnn.onnx"\ninput = "in.npz"\nreference = "top"\ncosine = 1.5'
bad ":3: euclid = -0.1 is out of range" $'[case.a]\nmodel = "cnn.onnx"\neuclid = -0.1'
bad ":2: drift = -1 is out of range" $'[suite]\ndrift = -1\n[case.a]\nmodel = "cnn.onnx"'
bad ":2: model 'm.pb' is not an .onnx, a .tflite, a top .mlir or a .bmodel" $'[case.a]\nmodel = "m.pb"'
bad ":3: case 'a': INT8 needs calibration_table" $'[case.a]\nmodel = "cnn.onnx"\nquantize = "INT8"'
bad ":4: case 'a': the quantize table's INT8 entries need calibration_table" $'[case.a]\nmodel = "cnn.onnx"\nquantize = "F16"\nqtable = "mixed.qtable"'
bad ":1: unknown section \[cases.a\]" $'[cases.a]\nmodel = "cnn.onnx"'
bad ":3: chip.npu_num = x" $'[case.a]\nmodel = "cnn.onnx"\nchip.npu_num = x'
bad ":4: case 'a': the machine it sets is not valid: .*power of two" $'[case.a]\nmodel = "cnn.onnx"\nchip.lmem_bytes = 262144\nchip.npu_num = 48'
bad ":3: case 'a': bit_exact needs the tpu module" $'[case.a]\nmodel = "ready.bmodel"\nbit_exact = true'
bad ":3: case 'a': a reference .npz is for one input file" $'[case.a]\nmodel = "cnn.onnx"\nreference = "in.npz"\ninput = "calib"'
bad ":2: input directory '.*empty' holds no .npz file" $'[case.a]\ninput = "empty"\nmodel = "cnn.onnx"'
bad ":4: case 'a' given twice" $'[case.a]\nmodel = "cnn.onnx"\n\n[case.a]'
bad ':5: cosine = "0.99" is a string; write the value without quotes' $'[case.a]\nmodel = "cnn.onnx"\ninput = "in.npz"\nreference = "top"\ncosine = "0.99"'
bad ':3: bit_exact = "true" is a string' $'[case.a]\nmodel = "cnn.onnx"\nbit_exact = "true"'
bad ':2: drift = "1" is a string' $'[suite]\ndrift = "1"\n[case.a]\nmodel = "cnn.onnx"'
# A quantised .tflite (tests/lit/frontend/Inputs/tflite_quant.py): transformed
# in the worker; F32 against its real-valued reference, INT8 with the model's
# own scales (no calibration table) against the numpy port of TFLite's int8
# kernels (measured cosine 0.99914: the chip's requantisation rounds otherwise).
$PY "$ROOT/tests/lit/frontend/Inputs/tflite_quant.py" tfl > /dev/null
cat > tfl.toml <<'T'
[case.tfl]
model = "tfl/q.tflite"
input = "tfl/in.npz"
quantize = "F32"
reference = "tfl/ref_real.npz"
bit_exact = true
cosine = 0.99999

[case.tfl_int8]
model = "tfl/q.tflite"
input = "tfl/in.npz"
quantize = "INT8"
reference = "tfl/ref_int8.npz"
bit_exact = true
cosine = 0.998
T
"$T" regress tfl.toml -o tflout --update-baseline > tfl.txt || { cat tfl.txt; exit 1; }
cat tfl.txt
grep -q "2 case(s): 2 passed, 0 failed, 0 error(s)" tfl.txt

# A reference of zeros with a NaN: the failure says the NaN is the
# reference's; the SQNR against zeros is -inf, "-inf" in the JSON.
$PY -c "import numpy as np; r = np.zeros((1, 10), np.float32); r[0, 3] = np.nan; np.savez('nanref.npz', prob=r)"
cat > nan.toml <<'T'
[case.nan]
model = "cnn.onnx"
input_shapes = "[[1,3,32,32]]"
input = "in.npz"
quantize = "F32"
reference = "nanref.npz"
cosine = -1
euclid = 0
T
if "$T" regress nan.toml -o nanout --cache out/cache --update-baseline > nan.txt; then
  cat nan.txt; exit 1
fi
cat nan.txt
grep -q "^nan/F32: FAIL: output prob: the reference holds 1 inf/NaN where the output holds another value" nan.txt
grep -q " -inf dB " nan.txt
$PY -c "import json; c = json.load(open('nanout/results.json'))['cases'][0]; assert c['outputs'][0]['sqnr_db'] == '-inf', c['outputs']"

# So does a bad baseline.
printf 'case f16/F16\n  cycles many\n' > bad.baseline
rm -rf badout
if "$T" regress suite.toml -o badout --baseline bad.baseline 2> bad.err; then exit 1; fi
cat bad.err
grep -q "bad.baseline:2: cycles 'many' is not a number" bad.err
[ ! -e badout ]
echo "regress: OK"
