// Verifier errors of tpu.Pool3D and of tpu.Cast's via_int.
// RUN: tpuc-opt %s --split-input-file --verify-diagnostics

func.func @pool3d_rank(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{input must be 5-D (N, C, D, H, W), is [1, 4, 8, 8]}}
  %0 = "tpu.Pool3D"(%x) {name = "p", pool_mode = "max", kernel_shape = [2, 2, 2], strides = [2, 2, 2], pads = [0, 0, 0, 0, 0, 0]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @pool3d_pads(%x: tensor<1x4x8x8x8xf32>) {
  // expected-error @+1 {{pads needs 6 values (front, top, left, back, bottom, right)}}
  %0 = "tpu.Pool3D"(%x) {name = "p", pool_mode = "max", kernel_shape = [2, 2, 2], strides = [2, 2, 2], pads = [0, 0, 0, 0]} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x4x4x4xf32>
  return
}

// -----

func.func @pool3d_pad_only_window(%x: tensor<1x4x8x8x8xf32>) {
  // expected-error @+1 {{a pad of 2 on axis 3 would give windows of padding only (kernel 2)}}
  %0 = "tpu.Pool3D"(%x) {name = "p", pool_mode = "avg", kernel_shape = [2, 2, 2], strides = [2, 2, 2], pads = [0, 0, 0, 0, 2, 0]} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x4x5x4xf32>
  return
}

// -----

func.func @pool3d_shape(%x: tensor<1x4x8x8x8xf32>) {
  // expected-error @+1 {{result shape [1, 4, 4, 4, 4] differs from the expected [1, 4, 4, 5, 4]}}
  %0 = "tpu.Pool3D"(%x) {name = "p", pool_mode = "avg", kernel_shape = [2, 2, 2], strides = [2, 2, 2], pads = [0, 1, 0, 0, 1, 0]} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x4x4x4xf32>
  return
}

// -----

func.func @pool3d_mode(%x: tensor<1x4x8x8x8xf32>) {
  // expected-error @+1 {{pool_mode must be "max" or "avg"}}
  %0 = "tpu.Pool3D"(%x) {name = "p", pool_mode = "min", kernel_shape = [2, 2, 2], strides = [2, 2, 2], pads = [0, 0, 0, 0, 0, 0]} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x4x4x4xf32>
  return
}

// -----

func.func @cast_via_width(%x: tensor<4xf32>) {
  // expected-error @+1 {{via_int must be an 8-, 16- or 32-bit integer type, not 'i64'}}
  %0 = "tpu.Cast"(%x) {name = "c", via_int = i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_via_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{via_int must be an 8-, 16- or 32-bit integer type, not 'f16'}}
  %0 = "tpu.Cast"(%x) {name = "c", via_int = f16} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_via_int_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{via_int needs a float input and result}}
  %0 = "tpu.Cast"(%x) {name = "c", via_int = i8} : (tensor<4xf32>) -> tensor<4xi8>
  return
}
