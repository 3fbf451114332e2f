#!/usr/bin/env bash
# End-to-end test of float ops whose reduced axis fits no group of one
# whole and runs in reduced-axis slices that accumulate (compiler/docs/
# design.md "Reduced-axis slices"). Their fp32 partial sums round otherwise
# than one pass over the axis; codegen records the shares it cut in the
# final module (k_shares) and the tpu interpreter sums share by share, so
# the simulator stays bit-exact against it.
#
# The model (numpy, fixed seed; onnx.checker-clean, opset 13):
#   fc    Gemm [1, 25088] x [25088, 128] + bias: VGG-16's first classifier
#         layer's K, a layer group of one in K slices
#   gap   ReduceMean over H, W of [1, 8, 500, 400]: a layer group of one
#         whose slices are row ranges of the 2-D window
#   rsum  ReduceSum over axis 1 of [2, 300000, 3]: no local form, the
#         reduce kernel's group of one in slices
#   kbig  MatMul [3, 70000] x [70000, 8]: K past the commands' 16 bits
#
# Gates:
#  1. tpuc regress, F32 / F16 / BF16, layer groups dp and none: every case
#     bit_exact against the tpu interpreter, and cosine >= 0.999 against
#     the top interpreter.
#  2. F32 deploy: all four ops carry k_shares in <stem>_final.mlir, and the
#     tpusim outputs equal <stem>_tpu_outputs.npz bit for bit; the same
#     module with k_shares stripped interprets to other bits for the sums
#     (fc, gap, rsum, kbig), so gate 1 holds because of the shares.
#
#   reduced_slices.sh --bin BUILD/bin --work DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/tests/e2e/common.sh"
e2e_bin_work_args "$@"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

/usr/bin/python3 - <<'EOF'
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)
f32 = np.float32
weights = [
    numpy_helper.from_array((rng.standard_normal((25088, 128)) * 0.01).astype(f32), "W"),
    numpy_helper.from_array((rng.standard_normal(128) * 0.1).astype(f32), "B"),
    numpy_helper.from_array(np.array([1], np.int64), "ax1"),
    numpy_helper.from_array(rng.standard_normal((70000, 8)).astype(f32), "Wk"),
]
nodes = [
    helper.make_node("Gemm", ["x", "W", "B"], ["fc"]),
    helper.make_node("ReduceMean", ["img"], ["gap"], axes=[2, 3], keepdims=1),
    helper.make_node("ReduceSum", ["seq", "ax1"], ["rsum"], keepdims=0),
    helper.make_node("MatMul", ["c", "Wk"], ["kbig"]),
]
vi = helper.make_tensor_value_info
graph = helper.make_graph(
    nodes, "reduced_slices",
    [vi("x", TensorProto.FLOAT, [1, 25088]),
     vi("img", TensorProto.FLOAT, [1, 8, 500, 400]),
     vi("seq", TensorProto.FLOAT, [2, 300000, 3]),
     vi("c", TensorProto.FLOAT, [3, 70000])],
    [vi("fc", TensorProto.FLOAT, [1, 128]),
     vi("gap", TensorProto.FLOAT, [1, 8, 1, 1]),
     vi("rsum", TensorProto.FLOAT, [2, 3]),
     vi("kbig", TensorProto.FLOAT, [3, 8])],
    weights)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, "slices.onnx")
np.savez("input.npz",
         x=rng.standard_normal((1, 25088)).astype(f32),
         img=rng.standard_normal((1, 8, 500, 400)).astype(f32),
         seq=rng.standard_normal((2, 300000, 3)).astype(f32),
         c=rng.standard_normal((3, 70000)).astype(f32))
EOF
SHAPES="[[1,25088],[1,8,500,400],[2,300000,3],[3,70000]]"

# 1. The suite.
cat > slices.toml <<EOF
[suite]
name = "reduced-slices"
timeout = 300

[case.slices]
model = "slices.onnx"
input_shapes = "$SHAPES"
input = "input.npz"
quantize = ["F32", "F16", "BF16"]
reference = "top"
bit_exact = true
cosine = 0.999

[case.slices_alone]
model = "slices.onnx"
input_shapes = "$SHAPES"
input = "input.npz"
quantize = ["F32", "F16"]
layer_group = "none"
reference = "top"
bit_exact = true
cosine = 0.999
EOF
# No baseline: every case fails on that alone; each must be bit-exact.
set +e
"$BIN/tpuc" regress slices.toml --jobs 2 -o results > regress.log 2>&1
set -e
cat regress.log
/usr/bin/python3 - <<'EOF'
import json
r = json.load(open("results/results.json"))
cases = r["cases"]
assert len(cases) == 5, [c["case"] for c in cases]
for c in cases:
    reasons = c.get("reasons", [])
    others = [x for x in reasons if "no baseline" not in x]
    assert not others, (c["case"], c["mode"], others)
    for o in c["outputs"]:
        assert o.get("bit_exact") is True, (c["case"], c["mode"], o)
print("gate 1: %d cases bit-exact against the tpu interpreter" % len(cases))
EOF

# 2. The shares are in the final module and are what makes it exact.
"$BIN/tpuc" transform slices.onnx -o slices_top.mlir --input-shapes "$SHAPES"
"$BIN/tpuc" deploy slices_top.mlir --quantize F32 --chip bm1684x \
  -o slices_f32.bmodel --test-input input.npz
for op in fc gap rsum kbig; do
  grep -q "name = \"$op\".*k_shares = \[array<i64\|k_shares = \[array<i64[^]]*\].*name = \"$op\"" \
    slices_f32_final.mlir ||
    { echo "FAIL: op $op has no k_shares in slices_f32_final.mlir" >&2; exit 1; }
done
"$BIN/tpusim" run slices_f32.bmodel -i input.npz -o sim.npz > /dev/null
"$BIN/tpuc" compare sim.npz slices_f32_tpu_outputs.npz --max-abs-rel 0
sed -E 's/, k_shares = \[[^]]*\]//' slices_f32_final.mlir > stripped.mlir
if grep -q k_shares stripped.mlir; then
  echo "FAIL: k_shares left in stripped.mlir" >&2
  exit 1
fi
"$BIN/tpuc" run stripped.mlir -i input.npz -o stripped.npz
for op in fc gap rsum kbig; do
  if "$BIN/tpuc" compare sim.npz stripped.npz --max-abs-rel 0 \
      --names "$op" > "stripped_$op.log" 2>&1; then
    echo "FAIL: without k_shares the interpreter still equals tpusim on $op" >&2
    exit 1
  fi
done
echo "reduced_slices: PASS"
