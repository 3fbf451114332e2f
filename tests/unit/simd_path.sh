#!/usr/bin/env bash
# Runs a test binary with the functional kernels forced onto one SIMD path
# (tpusim/Simd.h): simd_path.sh PATH BINARY [ARGS...]. Exit 77 (skipped)
# when this CPU lacks the path's instructions: a CPU feature cannot be
# installed, so the skip holds under TPU_TESTS_NO_SKIP too.
set -euo pipefail
path="$1"; shift
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
need=()
case "$path" in
  portable) ;;
  avx2) need=(avx2) ;;
  avx512) need=(avx512f avx512bw avx512vl avx512dq) ;;
  avx512vnni) need=(avx512f avx512bw avx512vl avx512dq avx512_vnni) ;;
  # AMX also needs the kernel's permission for the tile state, which only
  # tpusim itself can ask for: it reports a refusal as an unavailable path.
  amx) need=(avx512f avx512bw avx512vl avx512dq avx512_vnni amx_tile amx_int8) ;;
  *) echo "simd_path.sh: unknown path '$path'" >&2; exit 2 ;;
esac
for f in "${need[@]}"; do
  case "$flags" in
    *" $f "*) ;;
    *) echo "simd_path.sh: this CPU lacks $f; path $path skipped"; exit 77 ;;
  esac
done
TPUSIM_SIMD="$path" exec "$@"
