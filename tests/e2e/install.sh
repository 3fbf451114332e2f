#!/usr/bin/env bash
# The installed toolchain works from any directory: installs the build into
# a temporary prefix (cmake --install), copies the default CNN into an empty
# directory and runs the demo flow there with the tools called by name from
# PREFIX/bin: transform -> deploy -> tpusim -> compare.
#
#   install.sh --build BUILD_DIR --work DIR
set -euo pipefail
BUILD="" WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    *) echo "install.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$BUILD" ] && [ -n "$WORK" ] || { echo "need --build and --work" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$WORK"
mkdir -p "$WORK/prefix" "$WORK/run"
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
for t in tpuc tpuc-opt tpusim tpu-dis tpu-asm tpu-estimate; do
  test -x "$WORK/prefix/bin/$t"
done
test -f "$WORK/prefix/share/tpu-toolchain/bm1684x.cfg"
cp "$ROOT/models/default/default_cnn.onnx" "$WORK/run/"
cd "$WORK/run"
export PATH="$WORK/prefix/bin:/usr/bin:/bin"
/usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(7)
np.savez("input.npz", x=rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
PY
set -x
tpuc --version
tpuc transform default_cnn.onnx -o model_top.mlir --input-shapes '[[1,3,32,32]]' \
  --test-input input.npz --test-result reference.npz
tpuc deploy model_top.mlir --quantize F32 --chip bm1684x -o model.bmodel \
  --test-input input.npz --test-reference reference.npz
tpusim run model.bmodel -i input.npz -o sim.npz
tpuc compare sim.npz model_tpu_outputs.npz --tolerance 1,1 --max-abs-rel 0
# The installed config file is the simulator's compiled-in default.
tpusim config --defaults-file | cmp - "$WORK/prefix/share/tpu-toolchain/bm1684x.cfg"
