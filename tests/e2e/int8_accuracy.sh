#!/usr/bin/env bash
# INT8 accuracy gate of one real pretrained model (models/manifest.json) on
# data we make ourselves (scripts/make_int8_sets.py; models/README.md,
# "INT8 accuracy data"): a calibration set and a held-apart evaluation set,
# tpuc calibrate per method, tpuc deploy --quantize INT8 (symmetric), the
# evaluation samples through the INT8 tpu interpreter and the F32 top
# interpreter, scored by scripts/int8_eval.py.
#
#   int8_accuracy.sh MODEL --bin BUILD/bin --work DIR [--methods "M ..."]
#                    [--text natural|random] [--seed S]
#
# --text (OCR models): the lines cut from fortunes-zh (the default) or
# drawn uniformly from the dictionary (models/README.md).
#
# Methods: kld5 (kld, --tune-num 5), kld10 (--tune-num 10), minmax, search (--search-threshold),
# each optionally followed by +qtable (tpuc qtable --expected-cos 0.99 on
# 8 calibration samples, per model otherwise, then a mixed deploy). The first method of the
# list is the gated one; the others are printed for the table only.
#
# Speed: the evaluation samples run as one batch: the model transformed
# for [E, ...] and deployed with the same calibration table (the table is
# per tensor name and the INT8 ops are per sample, so each sample's result
# is the batch-1 tpu interpreter's bit for bit; checked on sample 0 of the
# gated method), one `tpuc run model_tpu.mlir` for all of them: 0.6 s a
# PP-OCR rec line instead of 1.4 s for a batch-1 `tpuc run` and 1.9 s for
# `tpusim run --mode functional`. The F32 reference is the batched top
# interpreter as well (equal to the batch-1 runs within 1e-8). On sample 0
# the gated method's bmodels (layer-group none and dp) run in tpusim, whose
# outputs must equal the tpu interpreter's bit for bit.
#
# Gates (the issue's):
#   ppocr_rec           INT8 CTC-decoded text == F32's on >= 95 % of lines
#   ppocr_cls           INT8 class == F32's on >= 98 %
#   ppocr_det           probability-map cosine >= 0.99 on every page
#   oww_embedding       embedding cosine >= 0.99 on every window
#   oww_melspectrogram  (through a qtable) cosine >= 0.99 on every chunk
# Measured (seed 1684; the gated method is the first of each list):
#   ppocr_cls  kld5: class agreement 1.000 (64 lines), mean cos 0.999997
#              (minmax and search 1.000 too); on the random draws of the
#              dictionary (--text random) 1.000, mean cos 0.99959
#   oww_embedding  kld5: min cos 0.9906, mean 0.99658 (32 windows);
#              minmax min 0.9911, search (percentile9999) min 0.9912 pass
#              too; kld5 has the best mean cosine and SQNR
#   oww_melspectrogram  pure INT8 (kld5) mean cos 0.917, min 0.794
#              (11 ops without an INT8 form in float); the qtable puts the
#              first 4 of 7 INT8 layers in F32 (the STFT powers, their sum,
#              the mel matmul and its clip: 5 ops) and leaves the dB
#              scaling and the clip at max - 80 dB in INT8: min cos 1.0000
#   ppocr_rec  kld10+qtable (gated): text agreement 0.967 (116 of 120
#              held-apart lines; mean cos 0.9925, min 0.9487; 64
#              calibration lines), with the first 5 of 77 INT8 layers (17
#              ops, the stem) in F16 by `tpuc qtable --expected-cos 0.999`
#              on 8 calibration lines (0.99990 there) and the 10 ops
#              without an INT8 form (LayerNorm, softmax, ...) in F32; the
#              attention's 8 matmuls of two activations are INT8. Same
#              sets: pure INT8 kld10 0.925, minmax 0.975; BF16 (no
#              calibration) 0.992; F32 reads 0.883 of the rendered lines
#              right. (Since the MatMul + Add pairs are one MatMul with
#              a bias and the layer norms absorb their Mul / Add; before:
#              kld10+qtable 0.975, kld10 0.942, minmax 0.958, 47 ops in
#              F32: one line either way on each method.) Before the
#              attention's matmuls were INT8 (55 ops in F32):
#              kld10+qtable 0.975, kld10 0.933, minmax 0.967 (its
#              per-tensor ranges clip nothing), kld5+qtable 0.950, kld5
#              0.925; through kld5's qtable kld untuned 0.000 (mean cos
#              0.81: plain KL thresholds clip the neck; the tuning is what
#              saves it), mse 0.933, aciq_laplace 0.000, asymmetric kld5
#              0.892; with --seed 2 (other lines) kld10+qtable 0.975 (8
#              layers, 29 ops in F16), minmax 0.917, F32 reading 0.933
#              right. The lines INT8 reads otherwise are
#              near-ties F32 hesitates on too: traditional / simplified
#              twins (載 / 载, 復 / 复), full- / half-width punctuation,
#              a trailing space, 土 / 士; per line the output cosine has a
#              median of 0.99999 and a flipped step costs ~0.05 of it.
#              On the random draws (--text random), where F32 reads only
#              0.55 of the lines right: kld10+qtable 0.900 with 67 of 73
#              layers in F16 (the qtable's 0.999 on calibration lines
#              needs them); before the natural lines, on 40 such lines,
#              kld5 gave 0.775, BF16 0.900, F16 1.000 and no table
#              reached 0.95 (compiler/docs/design.md). tpusim equals the
#              tpu interpreter on the gated model (every tensor of a line
#              under layer-group none, the output under dp)
#   ppocr_det  kld5+qtable (gated): min cos 0.9926, mean 0.9946, with the
#              first 5 of 96 layers (14 ops, the stem) in F16 by `tpuc
#              qtable --expected-cos 0.995` on 3 calibration pages
#              (0.9954 there). Pure INT8 kld5: min 0.9492 / mean 0.9601,
#              minmax 0.9379 / 0.9522 (8 calibration, 3 evaluation pages),
#              no op in float. On the pages of random draws (--text
#              random): kld5+qtable min 0.9969 (the first 9 layers, 27
#              ops), kld5 0.9888, minmax 0.9080. The loss enters early:
#              on those pages the stem's 1x1 conv output (p2o.Add.11,
#              range +-270, rms small) quantised at 21.9 dB SQNR, and the
#              first 10 ops in F16 gave min 0.9939, the first 5 only
#              0.9878, ops 6 to 10 only 0.9895. Before the INT8 resize /
#              concat / deconv, the fused lookup-table chains and the
#              skewed zero points kld5 gave 0.8951 / 0.9303. tpusim
#              equals the tpu interpreter on it (layer-group none and the
#              default)
# Exit 77 (skipped) when the models cannot be fetched or espeak-ng is
# missing; 1 instead with TPU_TESTS_NO_SKIP=1 (scripts/lib/skip.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/models.sh"
source "$ROOT/scripts/lib/skip.sh"
MODEL="" BIN="" WORK="" METHODS="" TEXT=natural SEED=1684
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --methods) METHODS="$2"; shift ;;
    --text) TEXT="$2"; shift ;;
    --seed) SEED="$2"; shift ;;
    -*) echo "int8_accuracy.sh: unknown option '$1'" >&2; exit 2 ;;
    *) MODEL="$1" ;;
  esac
  shift
done
[ -n "$MODEL" ] && [ -n "$BIN" ] && [ -n "$WORK" ] || {
  echo "usage: int8_accuracy.sh MODEL --bin DIR --work DIR [--methods \"M ...\"]" >&2; exit 2; }
BIN="$(realpath "$BIN")"
PY=/usr/bin/python3

# Per model: sizes of the sets, the gate (kind, minimum), the default methods.
case "$MODEL" in
  ppocr_rec) NC=64 NE=120 KIND=rec GATE=0.95 DEF="kld10+qtable kld10 minmax" QTCOS=0.999 BF16_REF=1 ;;
  ppocr_cls) NC=32 NE=64 KIND=cls GATE=0.98 DEF="kld5 minmax search" ;;
  # det: the pure-INT8 cosine misses 0.99 (see the header); the gate is
  # the mixed model of `tpuc qtable --expected-cos 0.995` on 3 calibration
  # pages (0.99 on the pages it searched on left 0.977 on a held-apart one).
  ppocr_det) NC=8 NE=3 KIND=det GATE=0.99 DEF="kld5+qtable kld5 minmax" QTCOS=0.995 QTN=3 ;;
  oww_embedding) NC=32 NE=32 KIND=emb GATE=0.99 DEF="kld5 minmax search" ;;
  # The STFT powers (~1e10 at int16 amplitude) overflow fp16: the qtable's
  # float layers are F32 (with the default F16 `tpuc qtable` reports cosine
  # 1.0 on the calibration chunks, yet the deployed table gives NaN).
  oww_melspectrogram) NC=32 NE=32 KIND=mel GATE=0.99 DEF="kld5+qtable kld5 minmax" QTFP=F32 ;;
  *) echo "int8_accuracy.sh: no INT8 accuracy gate for '$MODEL'" >&2; exit 2 ;;
esac
METHODS="${METHODS:-$DEF}"

status=0
"$ROOT/scripts/fetch_models.sh" >/dev/null || status=$?
[ "$status" = 77 ] && tpu_skip "int8_accuracy.sh: models unavailable"
[ "$status" = 0 ] || exit "$status"
case "$KIND" in
  emb|mel) command -v espeak-ng >/dev/null || tpu_skip "int8_accuracy.sh: espeak-ng missing (scripts/setup.sh)" ;;
  *) [ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] ||
       tpu_skip "int8_accuracy.sh: fonts-wqy-microhei missing (scripts/setup.sh)"
     [ -f /usr/share/games/fortunes/chinese ] ||
       tpu_skip "int8_accuracy.sh: fortunes-zh missing (scripts/setup.sh)" ;;
esac
read -r ONNX SHAPES <<<"$(manifest_model "$MODEL")"
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$WORK"
t0=$SECONDS

# The sets: calib/ and eval/ (one .npz per sample).
case "$KIND" in
  rec|cls|det)
    $PY "$ROOT/scripts/make_int8_sets.py" ocr "$MODEL" --out . --calib $NC --eval $NE \
      --text "$TEXT" --seed "$SEED" ;;
  emb|mel)
    $PY "$ROOT/scripts/make_int8_sets.py" speech --out . --calib $NC --eval $NE --seed "$SEED"
    if [ "$KIND" = emb ]; then
      # The F32 melspectrogram of every chunk (one batched run), then the
      # openWakeWord windows.
      read -r MEL _ <<<"$(manifest_model oww_melspectrogram)"
      C=$($PY -c "import numpy as np; print(np.load('chunks.npz')['input'].shape[0])")
      "$BIN/tpuc" transform "$MEL" -o mel_top.mlir --input-shapes "[[$C,1280]]" >/dev/null
      "$BIN/tpuc" run mel_top.mlir -i chunks.npz -o mel_all.npz --dump-all >/dev/null
      "$BIN/tpuc" transform "$MEL" -o mel1_top.mlir --input-shapes "[[1,1280]]" >/dev/null
      $PY -c "import numpy as np; np.savez('chunk0.npz', input=np.load('chunks.npz')['input'][:1])"
      "$BIN/tpuc" run mel1_top.mlir -i chunk0.npz -o mel0.npz >/dev/null
      $PY "$ROOT/scripts/make_int8_sets.py" windows --out . --mel mel_all.npz \
        --calib $NC --eval $NE --check mel0.npz --seed "$SEED"
      mv emb_calib calib; mv emb_eval eval
    else
      mv mel_calib calib; mv mel_eval eval
    fi ;;
esac
echo "int8_accuracy: data $((SECONDS - t0)) s"

# Batch-1 and batch-E top modules; the evaluation samples stacked.
"$BIN/tpuc" transform "$ONNX" -o model_top.mlir --input-shapes "$SHAPES" >/dev/null
BSHAPES=$($PY -c "import json,sys; s=json.loads(sys.argv[1]); s[0][0]=$NE; print(json.dumps(s,separators=(',',':')))" "$SHAPES")
"$BIN/tpuc" transform "$ONNX" -o eval_top.mlir --input-shapes "$BSHAPES" >/dev/null
$PY - "$NE" <<'PY'
import glob, sys, numpy as np
files = sorted(glob.glob("eval/*.npz"))
assert len(files) == int(sys.argv[1]), files
arrs = [np.load(f) for f in files]
np.savez("eval_batch.npz", **{k: np.concatenate([a[k] for a in arrs]) for k in arrs[0]})
PY
"$BIN/tpuc" run eval_top.mlir -i eval_batch.npz -o f32.npz >/dev/null
echo "int8_accuracy: F32 reference $((SECONDS - t0)) s"

labels=()
[ -f eval/labels.json ] && labels=(--labels eval/labels.json)
first=1
rows=()
for meth in $METHODS; do
  t1=$SECONDS
  base=${meth%+qtable}
  case "$base" in
    kld5) cal=(--method kld --tune-num 5) ;;
    kld10) cal=(--method kld --tune-num 10) ;;
    minmax) cal=(--method minmax) ;;
    search) cal=(--search-threshold) ;;
    *) echo "int8_accuracy.sh: unknown method '$meth'" >&2; exit 2 ;;
  esac
  [ -f "$base.table" ] || "$BIN/tpuc" calibrate model_top.mlir --dataset calib --input-num $NC \
    -o "$base.table" "${cal[@]}" | tail -2
  qt=()
  if [ "$meth" != "$base" ]; then
    qs=0
    "$BIN/tpuc" qtable model_top.mlir --calibration-table "$base.table" --dataset calib \
      --input-num "${QTN:-8}" --expected-cos "${QTCOS:-0.99}" --fp-type "${QTFP:-F16}" \
      -o "$base.qtable" | tail -3 || qs=$?
    [ "$qs" = 0 ] || [ "$qs" = 2 ] || exit "$qs"
    [ "$qs" = 2 ] && echo "int8_accuracy: tpuc qtable did not reach ${QTCOS:-0.99} (best table used)"
    grep -v '^#' "$base.qtable" || true
    qt_ops=$(grep -vc '^#' "$base.qtable" || true)
    qt=(--quantize-table "$base.qtable")
  fi
  tag=${meth/+/_}
  "$BIN/tpuc" deploy eval_top.mlir --quantize INT8 --calibration-table "$base.table" \
    "${qt[@]}" --chip bm1684x -o "eval_$tag.bmodel" --layer-group none > "deploy_$tag.log"
  # deploy's list of the ops left in float
  float_ops=$(grep -c ' (top\.[A-Za-z]*): ' "deploy_$tag.log" || true)
  "$BIN/tpuc" run "eval_${tag}_tpu.mlir" -i eval_batch.npz -o "int8_$tag.npz" >/dev/null
  if [ $first = 1 ]; then
    # The batch is the batch-1 module's result, bit for bit (sample 0).
    "$BIN/tpuc" deploy model_top.mlir --quantize INT8 --calibration-table "$base.table" \
      "${qt[@]}" --chip bm1684x -o "one_$tag.bmodel" --layer-group none > /dev/null
    "$BIN/tpuc" run "one_${tag}_tpu.mlir" -i eval/0000.npz -o one.npz >/dev/null
    $PY -c "
import numpy as np, sys
a = np.load('one.npz'); b = np.load('int8_$tag.npz')
for k in a:
    if not np.array_equal(a[k][0], b[k][0]):
        sys.exit('int8_accuracy: batched INT8 run differs from batch 1 on ' + k)
print('int8_accuracy: batch == batch 1 on sample 0')"
    # tpusim equals the tpu interpreter, bit for bit, on the gated model:
    # every op alone (the batch-1 bmodel above, --layer-group none) and
    # layer groups (dp, the default strategy).
    "$BIN/tpusim" run "one_$tag.bmodel" -i eval/0000.npz -o one_sim.npz >/dev/null
    "$BIN/tpuc" compare one_sim.npz one.npz --max-abs-rel 0 | tail -1
    "$BIN/tpuc" deploy model_top.mlir --quantize INT8 --calibration-table "$base.table" \
      "${qt[@]}" --chip bm1684x -o "dp_$tag.bmodel" --test-input eval/0000.npz > /dev/null
    "$BIN/tpusim" run "dp_$tag.bmodel" -i eval/0000.npz -o dp_sim.npz >/dev/null
    "$BIN/tpuc" compare dp_sim.npz "dp_${tag}_tpu_outputs.npz" --max-abs-rel 0 | tail -1
    "$BIN/tpuc" compare dp_sim.npz one_sim.npz --max-abs-rel 0 | tail -1
    echo "int8_accuracy: tpusim == tpu interpreter (layer-group none and dp) on sample 0"
  fi
  rows+=("$($PY "$ROOT/scripts/int8_eval.py" $KIND --f32 f32.npz --int8 "int8_$tag.npz" \
    --tpu-mlir "eval_${tag}_tpu.mlir" "${labels[@]}" --method "$meth" --json "score_$tag.json")")
  rows[-1]+=" $float_ops ops in float${qt:+ + $qt_ops by the qtable}, $((SECONDS - t1)) s"
  echo "${rows[-1]}"
  [ $first = 1 ] && gated=$tag
  first=0
done

# A precision anchor beside the INT8 rows (rec): the same samples in BF16,
# whose 8-bit significand is about INT8's resolution at best, with no
# calibration; when BF16 misses the gate too, the model needs more than
# 8 bits, not a better table.
if [ -n "${BF16_REF:-}" ]; then
  t1=$SECONDS
  "$BIN/tpuc" deploy eval_top.mlir --quantize BF16 --chip bm1684x -o eval_bf16.bmodel \
    --layer-group none > deploy_bf16.log
  "$BIN/tpuc" run eval_bf16_tpu.mlir -i eval_batch.npz -o bf16.npz >/dev/null
  rows+=("$($PY "$ROOT/scripts/int8_eval.py" $KIND --f32 f32.npz --int8 bf16.npz \
    --tpu-mlir eval_bf16_tpu.mlir "${labels[@]}" --method "BF16 (ref)" --json score_bf16.json)")
  rows[-1]+=" no INT8, $((SECONDS - t1)) s"
  echo "${rows[-1]}"
fi

echo
echo "$MODEL: $NC calibration, $NE held-apart samples; mean over the held-apart samples"
echo "| method | cosine | euclid | SQNR dB | gate figure | ops in float, time |"
printf '%s\n' "${rows[@]}"
echo "ops left in float ($gated):"
grep ' (top\.[A-Za-z]*): ' "deploy_$gated.log" | sed 's/^/  /' || echo "  (none)"
echo "int8_accuracy: total $((SECONDS - t0)) s"
$PY - "score_$gated.json" "$GATE" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); g = float(sys.argv[2])
ok = r["gate"] >= g
print(f"{'PASS' if ok else 'FAIL'}: {r['method']}: {r['gate_name']} {r['gate']:.4f} (gate {g})")
sys.exit(0 if ok else 1)
PY
