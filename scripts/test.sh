#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds everything and runs every test
# (GoogleTest, lit, fuzz smoke runs, end-to-end). Prints build and test times.
# TPU_TESTS_SANITIZE=1 adds the sanitizer run (scripts/sanitize.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
# Node packages for the ONNX Runtime reference; 77 = npm unreachable, in which
# case only the real-model tests skip.
node_status=0
"$ROOT/scripts/setup_node.sh" || node_status=$?
# With TPU_TESTS_NO_SKIP=1 (.ci/run) that is a failure too.
if [ "$node_status" -ne 0 ] &&
   { [ "$node_status" -ne 77 ] || [ "${TPU_TESTS_NO_SKIP:-0}" = 1 ]; }; then
  echo "test: scripts/setup_node.sh failed ($node_status)" >&2
  exit "$node_status"
fi
"$ROOT/scripts/build.sh"

start=$(date +%s)
status=0
ctest --test-dir "$BUILD" --output-on-failure -j "${JOBS:-$(nproc)}" || status=$?
echo "tests: $(( $(date +%s) - start )) s"
# With TPU_TESTS_SANITIZE=1 (.ci/run): the unit, lit and default-model tests
# again on an ASan + UBSan build (scripts/sanitize.sh, build-asan/).
if [ "${TPU_TESTS_SANITIZE:-0}" = 1 ]; then
  "$ROOT/scripts/sanitize.sh" || status=1
fi
exit $status
