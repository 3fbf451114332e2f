# Sourced by the tests that can skip (exit 77, ctest's SKIP_RETURN_CODE).
#
#   tpu_skip MESSAGE   prints "MESSAGE, skipping" and exits 77, or, with
#                      TPU_TESTS_NO_SKIP=1 in the environment (set by
#                      .ci/run), prints why and exits 1: in CI everything a
#                      test needs is installable, so a skip is a failure.
tpu_skip() {
  if [ "${TPU_TESTS_NO_SKIP:-0}" = 1 ]; then
    echo "FAIL: $* (TPU_TESTS_NO_SKIP=1: a skip counts as a failure)" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
