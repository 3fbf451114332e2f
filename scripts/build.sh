#!/usr/bin/env bash
# Configures (once) and builds the whole tree into build/ with clang-19, lld,
# Ninja and ccache. Prints how long the build took. BUILD_DIR, JOBS and
# TPU_CMAKE_ARGS (extra configure arguments, first configure only) override.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-$(nproc)}"

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$ROOT")}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DPython3_EXECUTABLE=/usr/bin/python3 ${TPU_CMAKE_ARGS:-} >/dev/null
fi
start=$(date +%s)
ninja -C "$BUILD" -j "$JOBS"
echo "build: $(( $(date +%s) - start )) s"
