// tpu ops parse, verify and print back: float, integer and quantised
// element types (the INT8 modes come later; the dialect takes them now).
// RUN: tpuc-opt %s | tpuc-opt | FileCheck %s

// CHECK-LABEL: func.func @types
// CHECK: "tpu.Weight"() {layout = "conv_32ic", name = "w"} : () -> tensor<8x4x3x3xf16>
// CHECK: "tpu.Weight"() {layout = "conv_1ic", name = "w32"} : () -> tensor<8x4x3x3xf32>
// CHECK: "tpu.Weight"() {layout = "depthwise", name = "dw"} : () -> tensor<4x1x3x3xbf16>
// CHECK: "tpu.Weight"() {layout = "compact", name = "idx"} : () -> tensor<3xi32>
// CHECK: "tpu.Cast"(%arg0) {name = "q"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8x!quant.uniform<i8:f32, 5.000000e-02>>
// CHECK: "tpu.Cast"({{.*}}) {name = "dq"} : (tensor<1x4x8x8x!quant.uniform<i8:f32, 5.000000e-02>>) -> tensor<1x4x8x8xf32>
// CHECK: "tpu.Conv2D"{{.*}} : (tensor<1x4x8x8x!quant.uniform<i8:f32, 5.000000e-02>>, tensor<8x4x3x3x!quant.uniform<i8:f32:0, {1.000000e-02,{{.*}}}>>, tensor<8x4xi32>) -> tensor<1x8x8x8x!quant.uniform<i8:f32, 1.000000e-01:3>>
// CHECK: "tpu.Add"{{.*}}addr = 4294967296 : i64
func.func @types(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %n = "top.None"() : () -> none
  %w = "tpu.Weight"() {name = "w", layout = "conv_32ic"} : () -> tensor<8x4x3x3xf16>
  %w32 = "tpu.Weight"() {name = "w32", layout = "conv_1ic"} : () -> tensor<8x4x3x3xf32>
  %dw = "tpu.Weight"() {name = "dw", layout = "depthwise"} : () -> tensor<4x1x3x3xbf16>
  %idx = "tpu.Weight"() {name = "idx"} : () -> tensor<3xi32>
  %q = "tpu.Cast"(%x) {name = "q"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8x!quant.uniform<i8:f32, 0.05>>
  %dq = "tpu.Cast"(%q) {name = "dq"} : (tensor<1x4x8x8x!quant.uniform<i8:f32, 0.05>>) -> tensor<1x4x8x8xf32>
  %wq = "tpu.Weight"() {name = "wq"} : () -> tensor<8x4x3x3x!quant.uniform<i8:f32:0, {0.01,0.01,0.01,0.01,0.02,0.02,0.02,0.02}>>
  %rq = "tpu.Weight"() {name = "rq"} : () -> tensor<8x4xi32>
  %c = "tpu.Conv2D"(%q, %wq, %rq) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x4x8x8x!quant.uniform<i8:f32, 0.05>>, tensor<8x4x3x3x!quant.uniform<i8:f32:0, {0.01,0.01,0.01,0.01,0.02,0.02,0.02,0.02}>>, tensor<8x4xi32>) -> tensor<1x8x8x8x!quant.uniform<i8:f32, 0.1:3>>
  %a = "tpu.Add"(%dq, %x) {name = "a", addr = 4294967296 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %a : tensor<1x4x8x8xf32>
}
