#!/usr/bin/env bash
# Runs fuzzing campaigns: each libFuzzer target (tests/fuzz/<target>.cpp) for
# N executions (default 1,000,000) on a scratch copy of its seed corpus, so
# that the corpus in the repository stays small, and prints one summary line
# per target: executions, time, exec/s, crashes, peak RSS and the coverage
# (cov) and feature (ft) counts of libFuzzer's last status line.
#
#   scripts/fuzz_campaign.sh [--runs N] [--jobs J] [--build DIR] [--out DIR]
#                            [--timeout S] [--report] [TARGET...]
#
# TARGET defaults to every fuzz target. The fuzzers are built in DIR
# (default build/, configured by scripts/build.sh) unless they exist there
# already. --jobs J runs J libFuzzer processes per target (-jobs/-workers),
# N/J executions each, on the same scratch corpus. Logs, scratch corpora and
# any crashing input (crash-*, timeout-*, oom-*, leak-*) are kept under
# --out (default /tmp/fuzz-campaign/<target>/). Exits 1 when any target
# crashed, timed out, ran out of memory or leaked, or ran fewer than N
# executions. --report runs nothing: it prints the lines of the campaigns
# whose logs are in --out (running or finished).
#
# Run it niced on a shared machine: `nice -n 19 scripts/fuzz_campaign.sh`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS=1000000
JOBS=1
BUILD="$ROOT/build"
OUT=/tmp/fuzz-campaign
TIMEOUT=25
REPORT=0
TARGETS=()

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
  --runs) RUNS="$2"; shift 2 ;;
  --jobs) JOBS="$2"; shift 2 ;;
  --build) BUILD="$2"; shift 2 ;;
  --out) OUT="$2"; shift 2 ;;
  --timeout) TIMEOUT="$2"; shift 2 ;;
  --report) REPORT=1; shift ;;
  -h|--help) usage; exit 0 ;;
  -*) echo "fuzz_campaign.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  *) TARGETS+=("$1"); shift ;;
  esac
done
for v in "$RUNS" "$JOBS" "$TIMEOUT"; do
  if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz_campaign.sh: '$v' is not a positive integer" >&2
    exit 2
  fi
done
if [ ${#TARGETS[@]} -eq 0 ]; then
  for f in "$ROOT"/tests/fuzz/*.cpp; do
    TARGETS+=("$(basename "$f" .cpp)")
  done
fi
for t in "${TARGETS[@]}"; do
  if [ ! -f "$ROOT/tests/fuzz/$t.cpp" ]; then
    echo "fuzz_campaign.sh: no fuzz target '$t' (tests/fuzz/$t.cpp)" >&2
    exit 2
  fi
done

missing=()
for t in "${TARGETS[@]}"; do
  [ -x "$BUILD/bin/$t" ] || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ ! -f "$BUILD/build.ninja" ]; then
    BUILD_DIR="$BUILD" JOBS="${BUILD_JOBS:-1}" "$ROOT/scripts/build.sh" >/dev/null
  fi
  ninja -C "$BUILD" -j "${BUILD_JOBS:-1}" "${missing[@]}" >/dev/null
fi

# One summary line for target $1 from the logs in $OUT/$1; returns 1 when
# it crashed or ran fewer than $RUNS executions.
summarize() {
  local t="$1" dir="$OUT/$1" secs="$2" rc="$3"
  # With -jobs, libFuzzer writes each job's log to fuzz-<k>.log (and copies
  # it into fuzz.log when the job ends): count those alone.
  local logs=() l
  for l in "$dir"/fuzz-*.log; do [ -f "$l" ] && logs+=("$l"); done
  [ ${#logs[@]} -gt 0 ] || logs=("$dir/fuzz.log")
  local execs rss last cov ft corp crashes
  execs=$(cat "${logs[@]}" | awk '/stat::number_of_executed_units:/ {s += $2} END {print s + 0}')
  if [ "$execs" -eq 0 ]; then
    # Still running (or killed): the last status line's count.
    execs=$(cat "${logs[@]}" | sed -n 's/^#\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
    execs=${execs:-0}
  fi
  rss=$(cat "${logs[@]}" | awk '/stat::peak_rss_mb:/ {if ($2 > m) m = $2} END {print m + 0}')
  if [ "$rss" -eq 0 ]; then
    rss=$(cat "${logs[@]}" | sed -n 's/.* rss: \([0-9]*\)Mb.*/\1/p' | sort -n | tail -n 1)
  fi
  last=$(cat "${logs[@]}" | grep -E '^#[0-9]+.*cov:' | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  crashes=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' \
    -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes=1 # a failure that left no artifact: see the log
  fi
  [ "$secs" -gt 0 ] || secs=1
  printf '%s: %s executions in %s s (%s exec/s), crashes %s, peak RSS %s MB, cov %s, ft %s, corpus %s (log %s)\n' \
    "$t" "$execs" "$secs" "$(( execs / secs ))" "$crashes" "${rss:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$dir/fuzz.log"
  [ "$crashes" -eq 0 ] && [ "$execs" -ge "$RUNS" ]
}

main() {
  local status=0 per_job=$(( (RUNS + JOBS - 1) / JOBS )) t dir asan start rc secs
  for t in "${TARGETS[@]}"; do
    dir="$OUT/$t"
    if [ "$REPORT" = 1 ]; then
      # libFuzzer's own figure when done, else the log's age.
      secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/fuzz.log" | tail -n 1)
      if [ -z "$secs" ]; then
        secs=$(( $(stat -c %Y "$dir/fuzz.log") - $(stat -c %W "$dir/fuzz.log") ))
      fi
      summarize "$t" "$secs" 0 || status=1
      continue
    fi
    rm -rf "$dir"
    mkdir -p "$dir/corpus"
    cp "$ROOT/tests/fuzz/corpus/$t/"* "$dir/corpus/" 2>/dev/null || true
    asan=detect_leaks=1
    # SystemC switches between coroutine stacks, which ASan's fake stacks
    # for use-after-return do not follow (as in scripts/sanitize.sh).
    if [ "$t" = fuzz_sim ]; then
      asan="$asan:detect_stack_use_after_return=0"
    fi
    start=$(date +%s)
    set +e
    # -max_len as the ctest runs; the default -rss_limit_mb (2048) is the
    # memory bound; -error_exitcode=1 (libFuzzer's 77 reads as a skip).
    (cd "$dir" && ASAN_OPTIONS="$asan" "$BUILD/bin/$t" \
      -runs="$per_job" -max_len=4096 -timeout="$TIMEOUT" -error_exitcode=1 \
      -print_final_stats=1 -artifact_prefix="$dir/" \
      $( [ "$JOBS" -gt 1 ] && echo "-jobs=$JOBS -workers=$JOBS" ) \
      corpus >"$dir/fuzz.log" 2>&1)
    rc=$?
    set -e
    secs=$(( $(date +%s) - start ))
    summarize "$t" "$secs" "$rc" || status=1
  done
  return "$status"
}

# On one line, read before it runs: the script may be edited meanwhile.
main; exit $?
