#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds everything and runs every test
# (GoogleTest, lit, fuzz smoke runs, end-to-end). Prints build and test times.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"

start=$(date +%s)
status=0
ctest --test-dir "$BUILD" --output-on-failure -j "${JOBS:-$(nproc)}" || status=$?
echo "tests: $(( $(date +%s) - start )) s"
exit $status
