#!/usr/bin/env bash
# The sanitizer run: builds the tree with AddressSanitizer + UndefinedBehavior
# Sanitizer (clang-19, -O1) into build-asan/ and runs on it the unit tests,
# the lit tests and a few end-to-end tests. Any report fails the run (UBSan
# does not recover; ASan and LeakSanitizer stop at the first error).
# Prints how long the build and the tests took.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SANITIZE_BUILD_DIR:-$ROOT/build-asan}"

BUILD_DIR="$BUILD" TPU_CMAKE_ARGS="-DTPU_SANITIZE=address,undefined \
  -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1" \
  "$ROOT/scripts/build.sh"

# SystemC switches between coroutine stacks, which ASan's fake stacks for
# use-after-return do not follow; everything else is on.
export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=0:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Unit and lit tests, and end-to-end runs of the default model in each mode
# (transform, deploy, tpusim, compare); the real-model and ResNet tests would
# take CI's budget under the sanitizers and run the same code.
start=$(date +%s)
status=0
ctest --test-dir "$BUILD" --output-on-failure -j "${JOBS:-$(nproc)}" \
  -E '^(e2e-|real-model-|resnet18-|sim-report|npz-js)' || status=$?
ctest --test-dir "$BUILD" --output-on-failure -j "${JOBS:-$(nproc)}" \
  -R '^e2e-default-(F32|F16|BF16|INT8|INT8-asym)$' || status=$?
echo "sanitize tests: $(( $(date +%s) - start )) s"
exit $status
