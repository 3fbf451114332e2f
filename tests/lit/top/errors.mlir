// Verifier errors of top ops.
// RUN: tpuc-opt %s --split-input-file --verify-diagnostics

func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{pads needs 4 values (begins, then ends), has 2}}
  %0 = "top.Conv"(%x, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1], dilations = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{group 2 does not divide the 3 input channels}}
  %0 = "top.Conv"(%x, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 2} : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias needs 4 values, has 3}}
  %0 = "top.Conv"(%x, %w, %b) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{result shape [1, 4, 8, 8] differs from the inferred [1, 4, 6, 6]}}
  %0 = "top.Conv"(%x, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{operands [2, 3] and [4, 5] do not fit a matrix product}}
  %0 = "top.MatMul"(%a, %b, %n) {name = "m"} : (tensor<2x3xf32>, tensor<4x5xf32>, none) -> tensor<2x5xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{kernel_shape needs 2 values, has 1}}
  %0 = "top.MaxPool"(%x) {name = "p", kernel_shape = [2], strides = [2, 2], pads = [0, 0, 0, 0]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

func.func @broadcast(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{operand shapes [2, 3] [3, 2] do not broadcast}}
  %0 = "top.Add"(%a, %b) {name = "a"} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @compare_mode(%a: tensor<2xf32>) {
  // expected-error @+1 {{unknown mode 'NotEqual'}}
  %0 = "top.Compare"(%a, %a) {name = "c", mode = "NotEqual"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @reshape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape [2, 3] (6 elements) to [4, 2]}}
  %0 = "top.Reshape"(%x) {name = "r", shape = [4, 2]} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @permute(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{order [1, 1] is not a permutation}}
  %0 = "top.Permute"(%x) {name = "p", order = [1, 1]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @concat(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{input [3, 3] does not fit [2, 3] along axis 1}}
  %0 = "top.Concat"(%a, %b) {name = "c", axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @split(%x: tensor<6xf32>) {
  // expected-error @+1 {{split [2, 3] does not add up to 6}}
  %0:2 = "top.Split"(%x) {name = "s", axis = 0 : i64, split = [2, 3]} : (tensor<6xf32>) -> (tensor<2xf32>, tensor<3xf32>)
  return
}

// -----

func.func @split_names(%x: tensor<6xf32>) {
  // expected-error @+1 {{names has 1 entries for 2 results}}
  %0:2 = "top.Split"(%x) {name = "s", names = ["s"], axis = 0 : i64, split = [3, 3]} : (tensor<6xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @slice_step(%x: tensor<6xf32>) {
  // expected-error @+1 {{steps must not be 0}}
  %0 = "top.Slice"(%x) {name = "s", offset = [0], ends = [6], steps = [0]} : (tensor<6xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @pad_mode(%x: tensor<6xf32>) {
  // expected-error @+1 {{unknown mode 'wrap'}}
  %0 = "top.Pad"(%x) {name = "p", paddings = [1, 1], mode = "wrap"} : (tensor<6xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @interp_mode(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{unknown coord_mode 'tf_crop_and_resize'}}
  %0 = "top.Interp"(%x) {name = "i", coord_mode = "tf_crop_and_resize"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @interp_channels(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{only the last 2 axes may change}}
  %0 = "top.Interp"(%x) {name = "i"} : (tensor<1x1x2x2xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @reduce_axes(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axes [1, -1] are invalid for rank 2}}
  %0 = "top.Reduce"(%x) {name = "r", mode = "ReduceSum", axes = [1, -1]} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<2x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{axis 2 is out of range for [2, 3]}}
  %0 = "top.Gather"(%x, %i) {name = "g", axis = 2 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @cast_target(%x: tensor<2xf32>) {
  // expected-error @+1 {{unknown target type 'int4'}}
  %0 = "top.Cast"(%x) {name = "c", to = "int4"} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @clip_range(%x: tensor<2xf32>) {
  // expected-error @+1 {{min 6.000000e+00 exceeds max 0.000000e+00}}
  %0 = "top.Clip"(%x) {name = "c", min = 6.0 : f64, max = 0.0 : f64} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @gelu_mode(%x: tensor<2xf32>) {
  // expected-error @+1 {{approximate must be "none" or "tanh", is "fast"}}
  %0 = "top.Gelu"(%x) {name = "g", approximate = "fast"} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @layernorm_scale(%x: tensor<2x4xf32>, %s: tensor<3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{scale and bias must broadcast to [4], got [3]}}
  %0 = "top.LayerNorm"(%x, %s, %n) {name = "ln", axis = -1 : i64} : (tensor<2x4xf32>, tensor<3xf32>, none) -> tensor<2x4xf32>
  return
}

// -----

func.func @batchnorm_stats(%x: tensor<1x4x2x2xf32>, %m: tensor<3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{mean needs 4 values, has 3}}
  %0 = "top.BatchNorm"(%x, %m, %m, %n, %n) {name = "bn"} : (tensor<1x4x2x2xf32>, tensor<3xf32>, tensor<3xf32>, none, none) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for [2, 4]}}
  %0 = "top.Softmax"(%x) {name = "s", axis = 2 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @convtranspose_filter(%x: tensor<1x2x4x4xf32>, %w: tensor<3x4x3x3xf32>) {
  %n = "top.None"() : () -> none
  // expected-error @+1 {{filter [3, 4, 3, 3] must be (C, OC / group, k...) with C = 2}}
  %0 = "top.ConvTranspose"(%x, %w, %n) {name = "d", kernel_shape = [3, 3], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @tile_repeats(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{repeats needs 2 values}}
  %0 = "top.Tile"(%x) {name = "t", repeats = [2]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @expand(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot expand [2, 3] to [4]}}
  %0 = "top.Expand"(%x) {name = "e", shape = [4]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @weight_name() {
  // expected-error @+1 {{needs a non-empty name}}
  %0 = "top.Weight"() {name = ""} : () -> tensor<2xf32>
  return
}

// -----

func.func @missing_name(%x: tensor<2xf32>) {
  // expected-error @+1 {{requires attribute 'name'}}
  %0 = "top.Relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @int_tensor(%x: tensor<2xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of 32-bit float values}}
  %0 = "top.Relu"(%x) {name = "r"} : (tensor<2xi32>) -> tensor<2xf32>
  return
}
