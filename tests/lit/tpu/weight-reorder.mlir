// Filter layouts: f32 -> conv_1ic, f16 / bf16 -> conv_32ic, depthwise ->
// depthwise; a filter another op also reads gets its own copy.
// RUN: tpuc-opt %s --tpu-weight-reorder | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: %[[W32:.*]] = "tpu.Weight"() {layout = "conv_1ic", name = "w32"}
// CHECK: %[[W16:.*]] = "tpu.Weight"() {layout = "compact", name = "w16"}
// CHECK: %[[W16C:.*]] = "tpu.Weight"() {layout = "conv_32ic", name = "w16"}
// CHECK: %[[DW:.*]] = "tpu.Weight"() {layout = "depthwise", name = "dw"}
// CHECK: "tpu.Conv2D"(%arg0, %[[W32]],
// CHECK: "tpu.Conv2D"(%{{.*}}, %[[W16C]],
// CHECK: "tpu.Add"(%[[W16]], %[[W16]])
// CHECK: "tpu.Conv2D"(%{{.*}}, %[[DW]],
func.func @main(%x: tensor<1x4x8x8xf32>, %h: tensor<1x4x8x8xf16>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>, tensor<1x4x8x8xf16>) {
  %n = "top.None"() : () -> none
  %w32 = "tpu.Weight"() {name = "w32"} : () -> tensor<4x4x3x3xf32>
  %w16 = "tpu.Weight"() {name = "w16"} : () -> tensor<4x4x3x3xf16>
  %dw = "tpu.Weight"() {name = "dw"} : () -> tensor<4x1x3x3xf16>
  %0 = "tpu.Conv2D"(%x, %w32, %n) {name = "c32", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  %1 = "tpu.Conv2D"(%h, %w16, %n) {name = "c16", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>, none) -> tensor<1x4x8x8xf16>
  %2 = "tpu.Add"(%w16, %w16) {name = "twice"} : (tensor<4x4x3x3xf16>, tensor<4x4x3x3xf16>) -> tensor<4x4x3x3xf16>
  %3 = "tpu.Conv2D"(%1, %dw, %n) {name = "dwc", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 4} : (tensor<1x4x8x8xf16>, tensor<4x1x3x3xf16>, none) -> tensor<1x4x8x8xf16>
  return %0, %1, %2, %3 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>, tensor<1x4x8x8xf16>
}

// An INT8 convolution's records (its int32 bias operand) are stored part by
// part; a float conv's f32 bias stays compact.
// CHECK-LABEL: func.func @records
// CHECK: "tpu.Weight"() {layout = "conv_64ic", name = "wq"}
// CHECK: "tpu.Weight"() {layout = "int8_records", name = "rq"}
// CHECK: "tpu.Weight"() {layout = "compact", name = "b32"}
func.func @records(%x: tensor<1x4x8x8x!quant.uniform<i8:f32, 0.05>>, %y: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8x!quant.uniform<i8:f32, 0.1>>, tensor<1x4x8x8xf32>) {
  %wq = "tpu.Weight"() {name = "wq"} : () -> tensor<4x4x3x3x!quant.uniform<i8:f32:0, {0.01, 0.02, 0.03, 0.04}>>
  %rq = "tpu.Weight"() {name = "rq"} : () -> tensor<4x4xi32>
  %w = "tpu.Weight"() {name = "w32"} : () -> tensor<4x4x3x3xf32>
  %b = "tpu.Weight"() {name = "b32"} : () -> tensor<4xf32>
  %0 = "tpu.Conv2D"(%x, %wq, %rq) {name = "cq", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x4x8x8x!quant.uniform<i8:f32, 0.05>>, tensor<4x4x3x3x!quant.uniform<i8:f32:0, {0.01, 0.02, 0.03, 0.04}>>, tensor<4x4xi32>) -> tensor<1x4x8x8x!quant.uniform<i8:f32, 0.1>>
  %1 = "tpu.Conv2D"(%y, %w, %b) {name = "cf", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return %0, %1 : tensor<1x4x8x8x!quant.uniform<i8:f32, 0.1>>, tensor<1x4x8x8xf32>
}
