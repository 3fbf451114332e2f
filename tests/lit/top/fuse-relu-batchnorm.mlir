// A Relu after a BatchNorm fuses into it (do_relu / relu_limit); a
// BatchNorm carrying a relu still folds into the conv before it, which then
// applies the relu, so the relu is never lost whichever pattern runs first.
// The data comes from Inputs/fold_weights.npz (Inputs/gen_fold_weights.py).
// RUN: tpuc-opt %s --canonicalize | FileCheck %s

module attributes {top.weight_file = "Inputs/fold_weights.npz"} {

// BatchNorm of a graph input (no conv to fold into) absorbs the Relu and
// takes its name.
// CHECK-LABEL: func.func @relu_into_bn
// CHECK: %[[B:.*]] = "top.BatchNorm"{{.*}}do_relu = true{{.*}}name = "r"{{.*}}relu_limit = -1.000000e+00
// CHECK-NOT: top.Relu
// CHECK: return %[[B]]
  func.func @relu_into_bn(%arg0: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %m = "top.Weight"() {name = "bn_mean"} : () -> tensor<2xf32>
    %v = "top.Weight"() {name = "bn_var"} : () -> tensor<2xf32>
    %s = "top.Weight"() {name = "bn_gamma"} : () -> tensor<2xf32>
    %t = "top.Weight"() {name = "bn_beta"} : () -> tensor<2xf32>
    %1 = "top.BatchNorm"(%0, %m, %v, %s, %t) {name = "bn", epsilon = 0.0 : f64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %2 = "top.Relu"(%1) {name = "r"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %2 : tensor<1x2x2x2xf32>
  }

// Clip(0, 6) after the residual Add's BatchNorm: the limit goes along.
// CHECK-LABEL: func.func @clip_into_bn
// CHECK: "top.Add"{{.*}}name = "add"
// CHECK: %[[B:.*]] = "top.BatchNorm"{{.*}}do_relu = true{{.*}}name = "clip"{{.*}}relu_limit = 6.000000e+00
// CHECK-NOT: top.Clip
// CHECK: return %[[B]]
  func.func @clip_into_bn(%arg0: tensor<1x2x2x2xf32>, %arg1: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %1 = "top.Input"(%arg1) {name = "y"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %2 = "top.Add"(%0, %1) {name = "add"} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %m = "top.Weight"() {name = "bn_mean"} : () -> tensor<2xf32>
    %v = "top.Weight"() {name = "bn_var"} : () -> tensor<2xf32>
    %3 = "top.BatchNorm"(%2, %m, %v, %m, %v) {name = "bn"} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %4 = "top.Clip"(%3) {name = "clip", min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %4 : tensor<1x2x2x2xf32>
  }

// A BatchNorm that already carries a relu (limit 6) folds into the conv
// before it: the conv takes over the relu and the limit.
// CHECK-LABEL: func.func @bn_relu_into_conv
// CHECK: %[[C:.*]] = "top.Conv"{{.*}}do_relu = true{{.*}}name = "bn"{{.*}}relu_limit = 6.000000e+00
// CHECK-NOT: top.BatchNorm
// CHECK: return %[[C]]
  func.func @bn_relu_into_conv(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %w = "top.Weight"() {name = "conv_w"} : () -> tensor<2x1x1x1xf32>
    %b = "top.Weight"() {name = "conv_b"} : () -> tensor<2xf32>
    %1 = "top.Conv"(%0, %w, %b) {name = "conv", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %m = "top.Weight"() {name = "bn_mean"} : () -> tensor<2xf32>
    %v = "top.Weight"() {name = "bn_var"} : () -> tensor<2xf32>
    %2 = "top.BatchNorm"(%1, %m, %v, %m, %v) {name = "bn", epsilon = 0.0 : f64, do_relu = true, relu_limit = 6.0 : f64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    return %2 : tensor<1x2x2x2xf32>
  }

// Conv, BatchNorm, Relu: however the patterns interleave, one conv with the
// relu remains, named after the Relu.
// CHECK-LABEL: func.func @conv_bn_relu
// CHECK: %[[C:.*]] = "top.Conv"{{.*}}do_relu = true{{.*}}name = "r"
// CHECK-NOT: top.BatchNorm
// CHECK-NOT: top.Relu
// CHECK: return %[[C]]
  func.func @conv_bn_relu(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %w = "top.Weight"() {name = "conv_w"} : () -> tensor<2x1x1x1xf32>
    %b = "top.Weight"() {name = "conv_b"} : () -> tensor<2xf32>
    %1 = "top.Conv"(%0, %w, %b) {name = "conv", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %m = "top.Weight"() {name = "bn_mean"} : () -> tensor<2xf32>
    %v = "top.Weight"() {name = "bn_var"} : () -> tensor<2xf32>
    %2 = "top.BatchNorm"(%1, %m, %v, %m, %v) {name = "bn", epsilon = 0.0 : f64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %3 = "top.Relu"(%2) {name = "r"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %3 : tensor<1x2x2x2xf32>
  }

// A conv that already has a relu cannot take the BatchNorm (matchFoldableConv):
// the BatchNorm stays and absorbs the second Relu itself.
// CHECK-LABEL: func.func @conv_relu_bn_relu
// CHECK: "top.Conv"{{.*}}do_relu = true{{.*}}name = "conv"
// CHECK: %[[B:.*]] = "top.BatchNorm"{{.*}}do_relu = true{{.*}}name = "r2"
// CHECK-NOT: top.Relu
// CHECK: return %[[B]]
  func.func @conv_relu_bn_relu(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %w = "top.Weight"() {name = "conv_w"} : () -> tensor<2x1x1x1xf32>
    %b = "top.Weight"() {name = "conv_b"} : () -> tensor<2xf32>
    %1 = "top.Conv"(%0, %w, %b) {name = "conv", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1, do_relu = true} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %m = "top.Weight"() {name = "bn_mean"} : () -> tensor<2xf32>
    %v = "top.Weight"() {name = "bn_var"} : () -> tensor<2xf32>
    %2 = "top.BatchNorm"(%1, %m, %v, %m, %v) {name = "bn", epsilon = 0.0 : f64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %3 = "top.Relu"(%2) {name = "r2"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %3 : tensor<1x2x2x2xf32>
  }
}
