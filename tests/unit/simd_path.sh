#!/usr/bin/env bash
# Runs a test binary with the functional kernels forced onto one SIMD path
# (tpusim/Simd.h): simd_path.sh PATH TPUSIM BINARY [ARGS...]. Exit 77
# (skipped) when `TPUSIM config --simd-paths` does not list the path (this
# CPU lacks its instructions, or for amx the kernel refuses the tile
# state): that cannot be installed, so the skip holds under
# TPU_TESTS_NO_SKIP too.
set -euo pipefail
path="$1" tpusim="$2"; shift 2
case "$path" in
  portable|avx2|avx512|avx512vnni|amx) ;;
  *) echo "simd_path.sh: unknown path '$path'" >&2; exit 2 ;;
esac
if ! "$tpusim" config --simd-paths | grep -qx "$path"; then
  echo "simd_path.sh: this machine cannot run path $path; skipped"
  exit 77
fi
TPUSIM_SIMD="$path" exec "$@"
