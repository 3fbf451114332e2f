// The layer-group pass: runs of local ops become tpu.Group ops whose
// results are the values read after the run, whose operands are the
// activations read from before it; `none` makes every op a group of one
// (with the `kernels` option it forms no group: every op runs its per-op
// kernel); a run whose weights do not fit local memory together is split.
// RUN: tpuc-opt %s --split-input-file --tpu-layer-group | FileCheck %s
// RUN: tpuc-opt %s --split-input-file --tpu-layer-group=strategy=greedy | FileCheck %s --check-prefix=GREEDY
// RUN: tpuc-opt %s --split-input-file --tpu-layer-group=strategy=none | FileCheck %s --check-prefix=NONE
// RUN: tpuc-opt %s --split-input-file --tpu-layer-group="strategy=none kernels=true" | FileCheck %s --check-prefix=KERNELS

// A residual block (conv, relu, conv, add of the input, relu) in f16: one
// group, with the cast of the f32 model input at its head (a cast is a
// local op). The model input is the only operand (loaded per slice), the
// block output the only result (stored); the cast's and conv1's outputs
// never leave local memory. 56 rows of 64 channels at 2 bytes: 6272 bytes per lane and value
// (one channel slot), so all values fit in one slice; the slicing is the
// cost model's choice among 1, 2, 4, 8, ... H slices (isa::estimateGroup
// of each candidate's commands): 4, whose loads and stores overlap the
// neighbouring slices' convolutions.
// CHECK-LABEL: module @block
// CHECK: %[[G:.*]] = "tpu.Group"(%[[X:.*]]) ({
// CHECK-NEXT: ^bb0(%[[I:.*]]: tensor<1x64x56x56xf32>):
// CHECK-NEXT: %[[A:.*]] = "tpu.Cast"(%[[I]])
// CHECK-NEXT: %[[C1:.*]] = "tpu.Conv2D"(%[[A]],
// CHECK-NEXT: %[[C2:.*]] = "tpu.Conv2D"(%[[C1]],
// CHECK-NEXT: %[[S:.*]] = "tpu.Add"(%[[C2]], %[[A]])
// CHECK-NEXT: "tpu.Yield"(%[[S]])
// CHECK-NEXT: }) {
// CHECK-SAME: h_slices = 4 : i64
// CHECK-SAME: n_slices = 1 : i64
// CHECK-SAME: name = "group0"
// CHECK-SAME: timesteps = 6 : i64
// CHECK: return %[[G]]
// GREEDY-LABEL: module @block
// GREEDY: "tpu.Group"
// Under `none` every op is a group of one, named after its op.
// NONE-LABEL: module @block
// NONE: "tpu.Group"
// NONE-NEXT: ^bb0
// NONE-NEXT: "tpu.Cast"
// NONE-NEXT: "tpu.Yield"
// NONE-NEXT: name = "x_f16"
// NONE: "tpu.Group"
// NONE-NEXT: ^bb0
// NONE-NEXT: "tpu.Conv2D"
// NONE-NEXT: "tpu.Yield"
// NONE-NEXT: name = "conv1"
// NONE: "tpu.Group"
// NONE-NEXT: ^bb0
// NONE-NEXT: "tpu.Conv2D"
// NONE-NEXT: "tpu.Yield"
// NONE-NEXT: name = "conv2"
// NONE: "tpu.Group"
// NONE-NEXT: ^bb0
// NONE-NEXT: "tpu.Add"
// NONE-NEXT: "tpu.Yield"
// NONE-NEXT: name = "sum"
// KERNELS-LABEL: module @block
// KERNELS-NOT: tpu.Group
module @block {
  func.func @main(%arg0: tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf16> {
    %i = "top.Input"(%arg0) {name = "x"} : (tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
    %x = "tpu.Cast"(%i) {name = "x_f16"} : (tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf16>
    %n = "top.None"() : () -> none
    %w1 = "tpu.Weight"() {name = "w1", layout = "conv_32ic"} : () -> tensor<64x64x3x3xf16>
    %b1 = "tpu.Weight"() {name = "b1"} : () -> tensor<64xf32>
    %c1 = "tpu.Conv2D"(%x, %w1, %b1) {name = "conv1", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>, tensor<64xf32>) -> tensor<1x64x56x56xf16>
    %w2 = "tpu.Weight"() {name = "w2", layout = "conv_32ic"} : () -> tensor<64x64x3x3xf16>
    %c2 = "tpu.Conv2D"(%c1, %w2, %n) {name = "conv2", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>, none) -> tensor<1x64x56x56xf16>
    %s = "tpu.Add"(%c2, %x) {name = "sum", do_relu = true} : (tensor<1x64x56x56xf16>, tensor<1x64x56x56xf16>) -> tensor<1x64x56x56xf16>
    return %s : tensor<1x64x56x56xf16>
  }
}

// -----

// Two f32 3x3 convolutions of 512 channels: each filter takes 8 slots x
// 512 x 9 x 4 bytes = 147456 bytes per lane, both together more than the
// 262144 of a lane, so the run splits into two groups, conv + sigmoid
// each (both strategies). An op without a local form (softmax) ends a run.
// CHECK-LABEL: module @split
// CHECK: %[[G0:.*]] = "tpu.Group"(%{{.*}}) ({
// CHECK: "tpu.Conv2D"{{.*}}name = "conv1"
// CHECK-NEXT: "tpu.Active"
// CHECK-NEXT: "tpu.Yield"
// CHECK: %[[G1:.*]] = "tpu.Group"(%[[G0]]) ({
// CHECK: "tpu.Conv2D"{{.*}}name = "conv2"
// CHECK-NEXT: "tpu.Active"
// CHECK-NEXT: "tpu.Yield"
// CHECK: "tpu.Softmax"(%[[G1]])
// GREEDY-LABEL: module @split
// GREEDY: %[[G0:.*]] = "tpu.Group"(%{{.*}}) ({
// GREEDY: "tpu.Conv2D"{{.*}}name = "conv1"
// GREEDY-NEXT: "tpu.Active"
// GREEDY-NEXT: "tpu.Yield"
// GREEDY: %[[G1:.*]] = "tpu.Group"(%[[G0]]) ({
// GREEDY: "tpu.Conv2D"{{.*}}name = "conv2"
// GREEDY-NEXT: "tpu.Active"
// GREEDY-NEXT: "tpu.Yield"
// GREEDY: "tpu.Softmax"(%[[G1]])
// KERNELS-LABEL: module @split
// KERNELS-NOT: tpu.Group
module @split {
  func.func @main(%arg0: tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32> {
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32>
    %n = "top.None"() : () -> none
    %w1 = "tpu.Weight"() {name = "w1", layout = "conv_1ic"} : () -> tensor<512x512x3x3xf32>
    %c1 = "tpu.Conv2D"(%x, %w1, %n) {name = "conv1", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>, none) -> tensor<1x512x7x7xf32>
    %r1 = "tpu.Active"(%c1) {name = "relu1", mode = "sigmoid"} : (tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32>
    %w2 = "tpu.Weight"() {name = "w2", layout = "conv_1ic"} : () -> tensor<512x512x3x3xf32>
    %c2 = "tpu.Conv2D"(%r1, %w2, %n) {name = "conv2", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1]} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>, none) -> tensor<1x512x7x7xf32>
    %r2 = "tpu.Active"(%c2) {name = "relu2", mode = "sigmoid"} : (tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32>
    %sm = "tpu.Softmax"(%r2) {name = "sm", axis = 1 : i64} : (tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32>
    return %sm : tensor<1x512x7x7xf32>
  }
}

// -----

// The next group's weight prefetch. Four f16 3x3 convolutions of 512
// channels, each filter 8 slots x 512 x 9 x 2 = 73728 bytes per lane: four
// do not fit a lane's 262144 bytes together, and the cost model cuts the
// run into two groups of two. The first group loads the second's first
// filter and bias during its (only) slice, at offset 0 (next_weights_at):
// its own first filter is there, which no command needs after conv1, so
// the load waits for conv1 only and overlaps conv2. The second group finds
// them there (first_weights_at, the same offset) and allocates the rest
// above them. `none` forms no group, so has neither.
// CHECK-LABEL: module @prefetch
// CHECK: "tpu.Group"
// CHECK: name = "group0", next_weights_at = [[AT:[0-9]+]] : i64
// CHECK: "tpu.Group"
// CHECK: first_weights_at = [[AT]] : i64
// CHECK-NOT: next_weights_at
// CHECK: return
// KERNELS-LABEL: module @prefetch
// KERNELS-NOT: weights_at
module @prefetch {
  func.func @main(%arg0: tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf16> {
    %i = "top.Input"(%arg0) {name = "x"} : (tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32>
    %x = "tpu.Cast"(%i) {name = "x_f16"} : (tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf16>
    %w1 = "tpu.Weight"() {name = "w1", layout = "conv_32ic"} : () -> tensor<512x512x3x3xf16>
    %b1 = "tpu.Weight"() {name = "b1"} : () -> tensor<512xf32>
    %c1 = "tpu.Conv2D"(%x, %w1, %b1) {name = "conv1", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x512x7x7xf16>, tensor<512x512x3x3xf16>, tensor<512xf32>) -> tensor<1x512x7x7xf16>
    %w2 = "tpu.Weight"() {name = "w2", layout = "conv_32ic"} : () -> tensor<512x512x3x3xf16>
    %b2 = "tpu.Weight"() {name = "b2"} : () -> tensor<512xf32>
    %c2 = "tpu.Conv2D"(%c1, %w2, %b2) {name = "conv2", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x512x7x7xf16>, tensor<512x512x3x3xf16>, tensor<512xf32>) -> tensor<1x512x7x7xf16>
    %w3 = "tpu.Weight"() {name = "w3", layout = "conv_32ic"} : () -> tensor<512x512x3x3xf16>
    %b3 = "tpu.Weight"() {name = "b3"} : () -> tensor<512xf32>
    %c3 = "tpu.Conv2D"(%c2, %w3, %b3) {name = "conv3", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x512x7x7xf16>, tensor<512x512x3x3xf16>, tensor<512xf32>) -> tensor<1x512x7x7xf16>
    %w4 = "tpu.Weight"() {name = "w4", layout = "conv_32ic"} : () -> tensor<512x512x3x3xf16>
    %b4 = "tpu.Weight"() {name = "b4"} : () -> tensor<512xf32>
    %c4 = "tpu.Conv2D"(%c3, %w4, %b4) {name = "conv4", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x512x7x7xf16>, tensor<512x512x3x3xf16>, tensor<512xf32>) -> tensor<1x512x7x7xf16>
    return %c4 : tensor<1x512x7x7xf16>
  }
}

// -----

// A network's stem (7 x 7, stride 2, 3 -> 128 channels) and two 3 x 3
// convs behind it, one slice: laid out in op order, the 3 x 3 filters share
// the banks of the stem's filter and bias, and their loads, which run while
// the stem computes, wait for them. The cost model finds the parity order
// (each filter out of its neighbours' banks) faster, and the group records
// it (weight_order).
// CHECK-LABEL: module @weight_order
// CHECK: "tpu.Group"
// CHECK: name = "group0", timesteps = 3 : i64, weight_order = "parity"
// KERNELS-LABEL: module @weight_order
// KERNELS-NOT: weight_order
module @weight_order {
  func.func @main(%arg0: tensor<1x3x32x32xf32>) -> tensor<1x128x16x16xf16> {
    %i = "top.Input"(%arg0) {name = "x"} : (tensor<1x3x32x32xf32>) -> tensor<1x3x32x32xf32>
    %x = "tpu.Cast"(%i) {name = "x_f16"} : (tensor<1x3x32x32xf32>) -> tensor<1x3x32x32xf16>
    %w1 = "tpu.Weight"() {name = "w1", layout = "conv_32ic"} : () -> tensor<128x3x7x7xf16>
    %b1 = "tpu.Weight"() {name = "b1"} : () -> tensor<128xf32>
    %c1 = "tpu.Conv2D"(%x, %w1, %b1) {name = "stem", kernel_shape = [7, 7], strides = [2, 2], pads = [3, 3, 3, 3], dilations = [1, 1], do_relu = true} : (tensor<1x3x32x32xf16>, tensor<128x3x7x7xf16>, tensor<128xf32>) -> tensor<1x128x16x16xf16>
    %w2 = "tpu.Weight"() {name = "w2", layout = "conv_32ic"} : () -> tensor<128x128x3x3xf16>
    %b2 = "tpu.Weight"() {name = "b2"} : () -> tensor<128xf32>
    %c2 = "tpu.Conv2D"(%c1, %w2, %b2) {name = "conv2", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x128x16x16xf16>, tensor<128x128x3x3xf16>, tensor<128xf32>) -> tensor<1x128x16x16xf16>
    %w3 = "tpu.Weight"() {name = "w3", layout = "conv_32ic"} : () -> tensor<128x128x3x3xf16>
    %b3 = "tpu.Weight"() {name = "b3"} : () -> tensor<128xf32>
    %c3 = "tpu.Conv2D"(%c2, %w3, %b3) {name = "conv3", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x128x16x16xf16>, tensor<128x128x3x3xf16>, tensor<128xf32>) -> tensor<1x128x16x16xf16>
    return %c3 : tensor<1x128x16x16xf16>
  }
}

// -----

// One op alone becomes a group of one when its plan is cheaper than its own
// kernel (PP-OCR det's 3 x 3 conv of 96 -> 24 channels over 160 x 160: the
// group slices its rows 32 ways and loads the next slice while the conv
// computes, cheaper by the cost model than the kernel). `none` forms no
// group.
// CHECK-LABEL: module @alone
// CHECK: "tpu.Group"
// CHECK: "tpu.Conv2D"
// CHECK-NEXT: "tpu.Yield"
// CHECK: name = "group0"
// KERNELS-LABEL: module @alone
// KERNELS-NOT: tpu.Group
module @alone {
  func.func @main(%arg0: tensor<1x96x160x160xf32>) -> tensor<1x24x160x160xf16> {
    %i = "top.Input"(%arg0) {name = "x"} : (tensor<1x96x160x160xf32>) -> tensor<1x96x160x160xf32>
    %x = "tpu.Cast"(%i) {name = "x_f16"} : (tensor<1x96x160x160xf32>) -> tensor<1x96x160x160xf16>
    %w = "tpu.Weight"() {name = "w", layout = "conv_32ic"} : () -> tensor<24x96x3x3xf16>
    %b = "tpu.Weight"() {name = "b"} : () -> tensor<24xf32>
    %c = "tpu.Conv2D"(%x, %w, %b) {name = "conv", kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], do_relu = true} : (tensor<1x96x160x160xf16>, tensor<24x96x3x3xf16>, tensor<24xf32>) -> tensor<1x24x160x160xf16>
    return %c : tensor<1x24x160x160xf16>
  }
}

// -----

// A reduction whose reduced extent fits no other slicing: the mean over H
// and W of 64 channels of 300 x 300 f32 holds 360000 bytes per lane, more
// than a lane's 262144, before its scratch. Alone, a group of one cut into
// reduced-axis slices (`k_slices`: each loads its share of the rows and
// adds its sums into an fp32 accumulator; the last converts and stores),
// under every strategy. An op after it does not join it (only a group of
// one accumulates).
// CHECK-LABEL: module @reduced_axis
// CHECK: %[[R:.*]] = "tpu.Group"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: "tpu.Reduce"
// CHECK-NEXT: "tpu.Yield"
// CHECK-NEXT: }) {
// CHECK-SAME: h_slices = 1 : i64
// CHECK-SAME: k_slices = {{[2-9]|[1-9][0-9]+}} : i64
// CHECK: "tpu.Group"(%[[R]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: "tpu.Active"
// CHECK-NOT: k_slices
// CHECK: return
// NONE-LABEL: module @reduced_axis
// NONE: k_slices = {{[2-9]|[1-9][0-9]+}} : i64
module @reduced_axis {
  func.func @main(%arg0: tensor<1x64x300x300xf32>) -> tensor<1x64x1x1xf32> {
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<1x64x300x300xf32>) -> tensor<1x64x300x300xf32>
    %r = "tpu.Reduce"(%x) {name = "mean", mode = "ReduceMean", axes = [2, 3]} : (tensor<1x64x300x300xf32>) -> tensor<1x64x1x1xf32>
    %s = "tpu.Active"(%r) {name = "sig", mode = "sigmoid"} : (tensor<1x64x1x1xf32>) -> tensor<1x64x1x1xf32>
    return %s : tensor<1x64x1x1xf32>
  }
}
