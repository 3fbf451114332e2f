// A BatchNorm that no conv absorbs (here after a residual Add) lowers to one
// tpu.Scale (x * scale + shift per channel) which applies the Relu fused
// into it by --canonicalize: no tpu.Mul / tpu.Add / tpu.Active remain.
// The weights come from Inputs/gen_bn_weights.py, written next to a copy of
// this file; the lowered scale / shift are read back from the weight file
// tpuc deploy keeps.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/gen_bn_weights.py %t
// RUN: cp %s %t/bn.mlir
// RUN: tpuc-opt %t/bn.mlir --canonicalize -o %t/top.mlir
// RUN: tpuc-opt %t/top.mlir --convert-top-to-tpu=mode=F32 | FileCheck %s --check-prefix=F32
// RUN: tpuc-opt %t/top.mlir --convert-top-to-tpu=mode=F16 | FileCheck %s --check-prefix=F16
// RUN: tpuc-opt %t/top.mlir --convert-top-to-tpu=mode=BF16 | FileCheck %s --check-prefix=BF16
// RUN: tpuc deploy %t/top.mlir --quantize F32 --chip bm1684x -o %t/d32.bmodel
// RUN: %python %S/../top/Inputs/print_npz.py %t/d32_tpu_weights.npz | FileCheck %s --check-prefix=DATA32
// RUN: tpuc deploy %t/top.mlir --quantize F16 --chip bm1684x -o %t/d16.bmodel
// RUN: %python %S/../top/Inputs/print_npz.py %t/d16_tpu_weights.npz | FileCheck %s --check-prefix=DATA16

// a = gamma / sqrt(var) = [1, 3, 0.25], shift = beta - mean * a = [1, -3, 0]
// (Inputs/gen_bn_weights.py), as (1, C, 1, 1) weights of the mode's type,
// named after the op, which took the Relu's name "r" when the Relu fused.
// F32: %[[A:.*]] = "tpu.Add"({{.*}}) {do_relu = false, name = "add"
// F32-DAG: %[[S:.*]] = "tpu.Weight"() {layout = "compact", name = "r_scale"} : () -> tensor<1x3x1x1xf32>
// F32-DAG: %[[T:.*]] = "tpu.Weight"() {layout = "compact", name = "r_shift"} : () -> tensor<1x3x1x1xf32>
// F32: %[[Y:.*]] = "tpu.Scale"(%[[A]], %[[S]], %[[T]]) {do_relu = true, name = "r", relu_limit = -1.000000e+00 : f64} : (tensor<1x3x5x7xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x5x7xf32>
// F32-NOT: tpu.Mul
// F32-NOT: tpu.Active
// F32: return %[[Y]]
// DATA32-DAG: r_scale float32 [1, 3, 1, 1] [1.0, 3.0, 0.25]
// DATA32-DAG: r_shift float32 [1, 3, 1, 1] [1.0, -3.0, 0.0]

// F16 computes in f16 between the casts at entry and exit (the weight file
// holds the f16 values as float32; these are exact in f16).
// F16-DAG: "tpu.Weight"() {layout = "compact", name = "r_scale"} : () -> tensor<1x3x1x1xf16>
// F16-DAG: "tpu.Weight"() {layout = "compact", name = "r_shift"} : () -> tensor<1x3x1x1xf16>
// F16: %[[Y:.*]] = "tpu.Scale"({{.*}}) {do_relu = true, name = "r_f16", relu_limit = -1.000000e+00 : f64} : (tensor<1x3x5x7xf16>, tensor<1x3x1x1xf16>, tensor<1x3x1x1xf16>) -> tensor<1x3x5x7xf16>
// F16-NOT: tpu.Active
// F16: "tpu.Cast"(%[[Y]]) {name = "r"} : (tensor<1x3x5x7xf16>) -> tensor<1x3x5x7xf32>
// DATA16-DAG: r_scale float32 [1, 3, 1, 1] [1.0, 3.0, 0.25]
// DATA16-DAG: r_shift float32 [1, 3, 1, 1] [1.0, -3.0, 0.0]

// BF16-DAG: "tpu.Weight"() {layout = "compact", name = "r_scale"} : () -> tensor<1x3x1x1xbf16>
// BF16: "tpu.Scale"({{.*}}) {do_relu = true, name = "r_bf16"{{.*}} -> tensor<1x3x5x7xbf16>
// BF16-NOT: tpu.Active
module @bn attributes {top.chip = "ALL", top.state = "TOP_F32", top.weight_file = "bn_weights.npz"} {
  func.func @main(%arg0: tensor<1x3x5x7xf32>, %arg1: tensor<1x3x5x7xf32>) -> tensor<1x3x5x7xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x3x5x7xf32>) -> tensor<1x3x5x7xf32>
    %1 = "top.Input"(%arg1) {name = "y"} : (tensor<1x3x5x7xf32>) -> tensor<1x3x5x7xf32>
    %2 = "top.Add"(%0, %1) {name = "add"} : (tensor<1x3x5x7xf32>, tensor<1x3x5x7xf32>) -> tensor<1x3x5x7xf32>
    %m = "top.Weight"() {name = "mean"} : () -> tensor<3xf32>
    %v = "top.Weight"() {name = "var"} : () -> tensor<3xf32>
    %s = "top.Weight"() {name = "gamma"} : () -> tensor<3xf32>
    %t = "top.Weight"() {name = "beta"} : () -> tensor<3xf32>
    %3 = "top.BatchNorm"(%2, %m, %v, %s, %t) {name = "bn", epsilon = 0.0 : f64} : (tensor<1x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x5x7xf32>
    %4 = "top.Relu"(%3) {name = "r"} : (tensor<1x3x5x7xf32>) -> tensor<1x3x5x7xf32>
    return %4 : tensor<1x3x5x7xf32>
  }
}
