// Verifier errors of tpu ops.
// RUN: tpuc-opt %s --split-input-file --verify-diagnostics

func.func @layout() {
  // expected-error @+1 {{unknown layout 'conv_7ic'}}
  %0 = "tpu.Weight"() {name = "w", layout = "conv_7ic"} : () -> tensor<8x4x3x3xf16>
  return
}

// -----

func.func @layout_rank() {
  // expected-error @+1 {{layout 'conv_32ic' needs a 4-D (oc, ic, kh, kw) filter}}
  %0 = "tpu.Weight"() {name = "w", layout = "conv_32ic"} : () -> tensor<8x36xf16>
  return
}

// -----

func.func @conv_filter_type(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{filter has element type 'f32', the result 'f16'}}
  %0 = "tpu.Conv2D"(%x, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf32>, none) -> tensor<1x8x8x8xf16>
  return
}

// -----

func.func @conv_window(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{needs 2 kernel_shape, strides and dilations values and 4 pads}}
  %0 = "tpu.Conv2D"(%x, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1], dilations = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @conv_result(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{result shape [1, 8, 8, 8] differs from the expected [1, 8, 6, 6]}}
  %0 = "tpu.Conv2D"(%x, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x8x8x8xf32>
  return
}

// -----

func.func @add_types(%a: tensor<4xf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{rhs has element type 'f32', the result 'f16'}}
  %0 = "tpu.Add"(%a, %b) {name = "a"} : (tensor<4xf16>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @add_broadcast(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand shapes [4, 3] and [4] do not broadcast}}
  %0 = "tpu.Add"(%a, %b) {name = "a"} : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @active_mode(%a: tensor<4xf32>) {
  // expected-error @+1 {{unknown mode 'swish2'}}
  %0 = "tpu.Active"(%a) {name = "a", mode = "swish2"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @active_coeffs(%a: tensor<4xf32>) {
  // expected-error @+1 {{mode 'clip' takes 2 coeffs, has 1}}
  %0 = "tpu.Active"(%a) {name = "a", mode = "clip", coeffs = [0.0]} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reshape(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{input and result element counts differ}}
  %0 = "tpu.Reshape"(%a) {name = "r"} : (tensor<4x3xf32>) -> tensor<10xf32>
  return
}

// -----

func.func @slice(%a: tensor<8xf32>) {
  // expected-error @+1 {{axis 0 slice leaves the input}}
  %0 = "tpu.Slice"(%a) {name = "s", offset = [4], steps = [2]} : (tensor<8xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @name(%a: tensor<4xf32>) {
  // expected-error @+1 {{needs a non-empty name}}
  %0 = "tpu.Cast"(%a) {name = ""} : (tensor<4xf32>) -> tensor<4xf16>
  return
}
