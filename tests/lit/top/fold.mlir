// Folding of constant operands into convolutions and of all-constant ops
// into weights. The data comes from Inputs/fold_weights.npz (written by
// Inputs/gen_fold_weights.py); the folded values are checked in the saved
// npz.
// RUN: tpuc-opt %s --canonicalize --save-weights=file=%t.npz | FileCheck %s
// RUN: %python %S/Inputs/print_npz.py %t.npz | FileCheck --check-prefix=DATA --implicit-check-not=conv --implicit-check-not=mul_ %s

// Fused weights are named after the op they absorb ("<name>_filter",
// "<name>_bias"); the saved file holds only the weights still used.
// The saved file replaces the weight file.
// CHECK: module attributes {top.weight_file = "{{.*}}fold.mlir.tmp.npz"}
module attributes {top.weight_file = "Inputs/fold_weights.npz"} {

  // BatchNorm after Conv: s = scale / sqrt(var) = [3/2, 2/1];
  // w = [2 * 1.5, -1 * 2] = [3, -2];
  // b = (conv_b - mean) * s + bias = [(1 - 1) * 1.5 + 0.5, 0] = [0.5, 0].
  // CHECK-LABEL: func.func @bn
  // CHECK-DAG: %[[W:.*]] = "top.Weight"() {name = "bn_filter"} : () -> tensor<2x1x1x1xf32>
  // CHECK-DAG: %[[B:.*]] = "top.Weight"() {name = "bn_bias"} : () -> tensor<2xf32>
  // CHECK: %[[C:.*]] = "top.Conv"(%{{.*}}, %[[W]], %[[B]]) {{{.*}}do_relu = false{{.*}}name = "bn"
  // CHECK-NOT: top.BatchNorm
  // CHECK: return %[[C]]
  // DATA-DAG: bn_filter float32 [2, 1, 1, 1] [3.0, -2.0]
  // DATA-DAG: bn_bias float32 [2] [0.5, 0.0]
  func.func @bn(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %w = "top.Weight"() {name = "conv_w"} : () -> tensor<2x1x1x1xf32>
    %b = "top.Weight"() {name = "conv_b"} : () -> tensor<2xf32>
    %1 = "top.Conv"(%0, %w, %b) {name = "conv", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %m = "top.Weight"() {name = "bn_mean"} : () -> tensor<2xf32>
    %v = "top.Weight"() {name = "bn_var"} : () -> tensor<2xf32>
    %s = "top.Weight"() {name = "bn_gamma"} : () -> tensor<2xf32>
    %t = "top.Weight"() {name = "bn_beta"} : () -> tensor<2xf32>
    %2 = "top.BatchNorm"(%1, %m, %v, %s, %t) {name = "bn", epsilon = 0.0 : f64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    return %2 : tensor<1x2x2x2xf32>
  }

  // Mul by [3, 4] per channel, Add 1, Relu: w = [6, -4]; the absent bias
  // becomes [0 * 3 + 1, 0 * 4 + 1] = [1, 1]; the relu is fused.
  // CHECK-LABEL: func.func @muladd
  // CHECK-DAG: %[[W:.*]] = "top.Weight"() {name = "add_filter"} : () -> tensor<2x1x1x1xf32>
  // CHECK-DAG: %[[B:.*]] = "top.Weight"() {name = "add_bias"} : () -> tensor<2xf32>
  // CHECK: %[[C:.*]] = "top.Conv"(%{{.*}}, %[[W]], %[[B]]) {{{.*}}do_relu = true{{.*}}name = "relu"
  // CHECK-NOT: top.Mul
  // CHECK-NOT: top.Add
  // CHECK-NOT: top.Relu
  // CHECK: return %[[C]]
  // DATA-DAG: add_filter float32 [2, 1, 1, 1] [6.0, -4.0]
  // DATA-DAG: add_bias float32 [2] [1.0, 1.0]
  func.func @muladd(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %w = "top.Weight"() {name = "conv2_w"} : () -> tensor<2x1x1x1xf32>
    %1 = "top.Conv"(%0, %w, %n) {name = "conv2", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x2x2xf32>
    %s = "top.Weight"() {name = "mul_s"} : () -> tensor<1x2x1x1xf32>
    %2 = "top.Mul"(%1, %s) {name = "mul"} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x2x2xf32>
    %a = "top.Weight"() {name = "add_s"} : () -> tensor<1xf32>
    %3 = "top.Add"(%a, %2) {name = "add"} : (tensor<1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %4 = "top.Relu"(%3) {name = "relu"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %4 : tensor<1x2x2x2xf32>
  }

  // BatchNorm after ConvTranspose scales the filter along its output-channel
  // axis 1: w = [3, -2], b = [(0 - 1) * 1.5 + 0.5, 0] = [-1, 0].
  // CHECK-LABEL: func.func @deconv
  // CHECK: "top.ConvTranspose"({{.*}}name = "dbn"
  // CHECK-NOT: top.BatchNorm
  // DATA-DAG: dbn_filter float32 [1, 2, 1, 1] [3.0, -2.0]
  // DATA-DAG: dbn_bias float32 [2] [-1.0, 0.0]
  func.func @deconv(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %w = "top.Weight"() {name = "deconv_w"} : () -> tensor<1x2x1x1xf32>
    %1 = "top.ConvTranspose"(%0, %w, %n) {name = "deconv", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x1x2x2xf32>, tensor<1x2x1x1xf32>, none) -> tensor<1x2x2x2xf32>
    %m = "top.Weight"() {name = "bn_mean"} : () -> tensor<2xf32>
    %v = "top.Weight"() {name = "bn_var"} : () -> tensor<2xf32>
    %s = "top.Weight"() {name = "bn_gamma"} : () -> tensor<2xf32>
    %t = "top.Weight"() {name = "bn_beta"} : () -> tensor<2xf32>
    %2 = "top.BatchNorm"(%1, %m, %v, %s, %t) {name = "dbn", epsilon = 0.0 : f64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    return %2 : tensor<1x2x2x2xf32>
  }

  // Ops on weights only are evaluated: Add [1, 2] + [10, 20] = [11, 22],
  // then the Reshape to (2, 1); the result weight takes the last op's name.
  // CHECK-LABEL: func.func @const
  // CHECK: %[[K:.*]] = "top.Weight"() {name = "col"} : () -> tensor<2x1xf32>
  // CHECK-NOT: top.Add
  // CHECK-NOT: top.Reshape
  // CHECK: "top.Mul"(%{{.*}}, %[[K]])
  // DATA-DAG: col float32 [2, 1] [11.0, 22.0]
  func.func @const(%arg0: tensor<2x1xf32>) -> tensor<2x1xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x1xf32>) -> tensor<2x1xf32>
    %a = "top.Weight"() {name = "a"} : () -> tensor<2xf32>
    %b = "top.Weight"() {name = "b"} : () -> tensor<2xf32>
    %1 = "top.Add"(%a, %b) {name = "sum"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = "top.Reshape"(%1) {name = "col", shape = [2, 1]} : (tensor<2xf32>) -> tensor<2x1xf32>
    %3 = "top.Mul"(%0, %2) {name = "y"} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    return %3 : tensor<2x1xf32>
  }
  // Add of a row [10, 20, 30] after a MatMul by a weight: the row becomes
  // the bias, named after the Add, which the MatMul replaces (relu too).
  // With a bias [1, 2, 3] already (and the row on the left): [11, 22, 33].
  // CHECK-LABEL: func.func @mm_add
  // CHECK: %[[B:.*]] = "top.Weight"() {name = "mmadd_bias"} : () -> tensor<3xf32>
  // CHECK: %[[M:.*]] = "top.MatMul"(%{{.*}}, %{{.*}}, %[[B]]) {do_relu = true, name = "mmadd"
  // CHECK-NOT: top.Add
  // CHECK: %[[B2:.*]] = "top.Weight"() {name = "mmadd2_bias"} : () -> tensor<3xf32>
  // CHECK: %[[M2:.*]] = "top.MatMul"(%{{.*}}, %{{.*}}, %[[B2]]) {do_relu = false, name = "mmadd2"
  // CHECK-NOT: top.Add
  // CHECK: return %[[M]], %[[M2]]
  // DATA-DAG: mmadd_bias float32 [3] [10.0, 20.0, 30.0]
  // DATA-DAG: mmadd2_bias float32 [3] [11.0, 22.0, 33.0]
  func.func @mm_add(%arg0: tensor<1x4x2xf32>) -> (tensor<1x4x3xf32>, tensor<1x4x3xf32>) {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
    %w = "top.Weight"() {name = "mm_w"} : () -> tensor<2x3xf32>
    %r = "top.Weight"() {name = "mm_row"} : () -> tensor<1x1x3xf32>
    %1 = "top.MatMul"(%0, %w, %n) {name = "mm"} : (tensor<1x4x2xf32>, tensor<2x3xf32>, none) -> tensor<1x4x3xf32>
    %2 = "top.Add"(%1, %r) {name = "mmadd", do_relu = true} : (tensor<1x4x3xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
    %b = "top.Weight"() {name = "mm_b"} : () -> tensor<3xf32>
    %3 = "top.MatMul"(%0, %w, %b) {name = "mm2"} : (tensor<1x4x2xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<1x4x3xf32>
    %4 = "top.Add"(%r, %3) {name = "mmadd2"} : (tensor<1x1x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    return %2, %4 : tensor<1x4x3xf32>, tensor<1x4x3xf32>
  }

  // What stays an Add: a constant that is not one row (2 x 3), a MatMul
  // with a fused relu (the Add comes after it), a MatMul of two
  // activations, a MatMul whose result has another reader.
  // CHECK-LABEL: func.func @mm_add_kept
  // CHECK-COUNT-4: "top.Add"
  // CHECK: return
  func.func @mm_add_kept(%arg0: tensor<2x2xf32>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %y = "top.Input"(%arg1) {name = "y"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %w = "top.Weight"() {name = "mm_w"} : () -> tensor<2x3xf32>
    %f = "top.Weight"() {name = "mm_full"} : () -> tensor<2x3xf32>
    %r = "top.Weight"() {name = "mm_b"} : () -> tensor<3xf32>
    %1 = "top.MatMul"(%0, %w, %n) {name = "k1"} : (tensor<2x2xf32>, tensor<2x3xf32>, none) -> tensor<2x3xf32>
    %2 = "top.Add"(%1, %f) {name = "k1add"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = "top.MatMul"(%0, %w, %n) {name = "k2", do_relu = true} : (tensor<2x2xf32>, tensor<2x3xf32>, none) -> tensor<2x3xf32>
    %4 = "top.Add"(%3, %r) {name = "k2add"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %5 = "top.MatMul"(%0, %y, %n) {name = "k3"} : (tensor<2x2xf32>, tensor<2x3xf32>, none) -> tensor<2x3xf32>
    %6 = "top.Add"(%5, %r) {name = "k3add"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %7 = "top.MatMul"(%0, %w, %n) {name = "k4"} : (tensor<2x2xf32>, tensor<2x3xf32>, none) -> tensor<2x3xf32>
    %8 = "top.Add"(%7, %r) {name = "k4add"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %2, %4, %6, %8, %7 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
  // LayerNorm, Mul by gamma, Add of beta (the decomposed form exporters
  // write): one LayerNorm with scale [2, 3, 4] and bias [1, -1, 0.5],
  // named as the Add. A norm with its own scale [1, 2, 3] and bias
  // [0.5, 0.5, 0.5] times gamma: scale [2, 6, 12], bias [1, 1.5, 2].
  // CHECK-LABEL: func.func @ln_affine
  // CHECK-DAG: %[[S:.*]] = "top.Weight"() {name = "lnadd_scale"} : () -> tensor<3xf32>
  // CHECK-DAG: %[[B:.*]] = "top.Weight"() {name = "lnadd_bias"} : () -> tensor<3xf32>
  // CHECK: %[[L:.*]] = "top.LayerNorm"(%{{.*}}, %[[S]], %[[B]]) {axis = -1 : i64, epsilon = 1.000000e-05 : f64, name = "lnadd"}
  // CHECK-DAG: %[[S2:.*]] = "top.Weight"() {name = "lnmul2_scale"} : () -> tensor<3xf32>
  // CHECK-DAG: %[[B2:.*]] = "top.Weight"() {name = "lnmul2_bias"} : () -> tensor<3xf32>
  // CHECK: %[[L2:.*]] = "top.LayerNorm"(%{{.*}}, %[[S2]], %[[B2]]) {axis = 2 : i64, epsilon = 1.000000e-05 : f64, name = "lnmul2"}
  // CHECK-NOT: "top.Mul"
  // CHECK-NOT: "top.Add"
  // CHECK: return %[[L]], %[[L2]]
  // DATA-DAG: lnadd_scale float32 [3] [2.0, 3.0, 4.0]
  // DATA-DAG: lnadd_bias float32 [3] [1.0, -1.0, 0.5]
  // DATA-DAG: lnmul2_scale float32 [3] [2.0, 6.0, 12.0]
  // DATA-DAG: lnmul2_bias float32 [3] [1.0, 1.5, 2.0]
  func.func @ln_affine(%arg0: tensor<1x4x3xf32>) -> (tensor<1x4x3xf32>, tensor<1x4x3xf32>) {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %1 = "top.LayerNorm"(%0, %n, %n) {name = "ln", axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<1x4x3xf32>, none, none) -> tensor<1x4x3xf32>
    %w = "top.Weight"() {name = "ln_w"} : () -> tensor<3xf32>
    %b = "top.Weight"() {name = "ln_b"} : () -> tensor<1x1x3xf32>
    %2 = "top.Mul"(%1, %w) {name = "lnmul"} : (tensor<1x4x3xf32>, tensor<3xf32>) -> tensor<1x4x3xf32>
    %3 = "top.Add"(%b, %2) {name = "lnadd"} : (tensor<1x1x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %s = "top.Weight"() {name = "ln_s"} : () -> tensor<3xf32>
    %t = "top.Weight"() {name = "ln_t"} : () -> tensor<3xf32>
    %4 = "top.LayerNorm"(%0, %s, %t) {name = "ln2", axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<1x4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x4x3xf32>
    %5 = "top.Mul"(%4, %w) {name = "lnmul2"} : (tensor<1x4x3xf32>, tensor<3xf32>) -> tensor<1x4x3xf32>
    return %3, %5 : tensor<1x4x3xf32>, tensor<1x4x3xf32>
  }

  // Kept: a constant that varies along the un-normalised axis (2 x 3 over
  // a norm of the last axis), a Mul with a fused relu.
  // CHECK-LABEL: func.func @ln_affine_kept
  // CHECK-COUNT-2: "top.Mul"
  // CHECK: return
  func.func @ln_affine_kept(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %f = "top.Weight"() {name = "mm_full"} : () -> tensor<2x3xf32>
    %w = "top.Weight"() {name = "ln_w"} : () -> tensor<3xf32>
    %1 = "top.LayerNorm"(%0, %n, %n) {name = "ln3", axis = 1 : i64} : (tensor<2x3xf32>, none, none) -> tensor<2x3xf32>
    %2 = "top.Mul"(%1, %f) {name = "k5"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = "top.LayerNorm"(%0, %n, %n) {name = "ln4", axis = 1 : i64} : (tensor<2x3xf32>, none, none) -> tensor<2x3xf32>
    %4 = "top.Mul"(%3, %w) {name = "k6", do_relu = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %2, %4 : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
