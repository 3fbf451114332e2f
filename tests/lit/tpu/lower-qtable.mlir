// Lowering with a quantize table: each listed op in its own mode, a
// tpu.Cast at every precision boundary (one per value and type, right after
// the value's definition), the model's IO still f32.
// RUN: split-file %s %t
// RUN: tpuc-opt %t/mixed.mlir --convert-top-to-tpu="mode=F16 qtable=%t/mixed.qtable" | FileCheck %s --check-prefix=MIXED
// RUN: tpuc-opt %t/bf16.mlir --convert-top-to-tpu="mode=BF16 qtable=%t/bf16.qtable" | FileCheck %s --check-prefix=BF16
// Without the table the same module is all F16 (no f32 op, no *_f32 cast).
// RUN: tpuc-opt %t/mixed.mlir --convert-top-to-tpu=mode=F16 | FileCheck %s --check-prefix=PLAIN

// F16 module, c1 and a in F32. x is read by c1 (F32: the f32 input itself)
// and by m (F16: x_f16). c1's result is read by r (F16: c1_f16) and by a
// (F32: as is). m (F16) is read by a (F32) and returned: the f32 cast a
// made is the output cast, named m; the Mul becomes m_f16. a (F32) is
// returned without a cast.
// MIXED-LABEL: module @mixed
// MIXED-SAME: tpu.mode = "F16"
// MIXED: func.func @main(%arg0: tensor<1x4x4x4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>)
// MIXED: %[[X:.*]] = "top.Input"(%arg0) {name = "x"}
// MIXED-NEXT: %[[XH:.*]] = "tpu.Cast"(%[[X]]) {name = "x_f16"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf16>
// MIXED: %[[W:.*]] = "tpu.Weight"() {layout = "compact", name = "w"} : () -> tensor<4x4x1x1xf32>
// MIXED-NEXT: %[[C1:.*]] = "tpu.Conv2D"(%[[X]], %[[W]], {{.*}}name = "c1"{{.*}} -> tensor<1x4x4x4xf32>
// MIXED-NEXT: %[[C1H:.*]] = "tpu.Cast"(%[[C1]]) {name = "c1_f16"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf16>
// MIXED-NEXT: %[[R:.*]] = "tpu.Active"(%[[C1H]]) {{.*}}mode = "relu", name = "r"} : (tensor<1x4x4x4xf16>) -> tensor<1x4x4x4xf16>
// MIXED-NEXT: %[[M:.*]] = "tpu.Mul"(%[[XH]], %[[R]]) {{.*}}name = "m_f16"{{.*}} -> tensor<1x4x4x4xf16>
// MIXED-NEXT: %[[MF:.*]] = "tpu.Cast"(%[[M]]) {name = "m"} : (tensor<1x4x4x4xf16>) -> tensor<1x4x4x4xf32>
// MIXED-NEXT: %[[A:.*]] = "tpu.Add"(%[[C1]], %[[MF]]) {{.*}}name = "a"{{.*}} -> tensor<1x4x4x4xf32>
// MIXED-NOT: tpu.Cast
// MIXED: return %[[A]], %[[MF]] : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>

// PLAIN: "tpu.Cast"(%{{.*}}) {name = "x_f16"}
// PLAIN-NOT: _f32
// PLAIN: "tpu.Conv2D"{{.*}}name = "c1"{{.*}} -> tensor<1x4x4x4xf16>
// PLAIN-NOT: _f32
// PLAIN: "tpu.Add"{{.*}}name = "a_f16"{{.*}} -> tensor<1x4x4x4xf16>

// BF16 module with one F16 op: bf16 -> f16 -> bf16 casts around it.
// BF16-LABEL: module @bf16
// BF16: %[[XB:.*]] = "tpu.Cast"(%{{.*}}) {name = "x_bf16"} : (tensor<8xf32>) -> tensor<8xbf16>
// BF16-NEXT: %[[R1:.*]] = "tpu.Active"(%[[XB]]) {{.*}}name = "r1"} : (tensor<8xbf16>) -> tensor<8xbf16>
// BF16-NEXT: %[[R1H:.*]] = "tpu.Cast"(%[[R1]]) {name = "r1_f16"} : (tensor<8xbf16>) -> tensor<8xf16>
// BF16-NEXT: %[[S:.*]] = "tpu.Active"(%[[R1H]]) {{.*}}mode = "sigmoid", name = "s"} : (tensor<8xf16>) -> tensor<8xf16>
// BF16-NEXT: %[[SB:.*]] = "tpu.Cast"(%[[S]]) {name = "s_bf16"} : (tensor<8xf16>) -> tensor<8xbf16>
// BF16-NEXT: %[[R2:.*]] = "tpu.Active"(%[[SB]]) {{.*}}name = "r2_bf16"} : (tensor<8xbf16>) -> tensor<8xbf16>
// BF16-NEXT: %[[O:.*]] = "tpu.Cast"(%[[R2]]) {name = "r2"} : (tensor<8xbf16>) -> tensor<8xf32>
// BF16-NEXT: return %[[O]]

//--- mixed.qtable
# comment line, then entries with trailing comments and odd spacing
c1 F32   # the conv stays f32
	a	f32
//--- mixed.mlir
module @mixed attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<1x4x4x4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
    %n = "top.None"() : () -> none
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %w = "top.Weight"() {name = "w"} : () -> tensor<4x4x1x1xf32>
    %c1 = "top.Conv"(%x, %w, %n) {name = "c1", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>, none) -> tensor<1x4x4x4xf32>
    %r = "top.Relu"(%c1) {name = "r"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %m = "top.Mul"(%x, %r) {name = "m"} : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %a = "top.Add"(%c1, %m) {name = "a"} : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    return %a, %m : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
  }
}
//--- bf16.qtable
s F16
//--- bf16.mlir
module @bf16 attributes {top.chip = "ALL", top.state = "TOP_F32"} {
  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<8xf32>) -> tensor<8xf32>
    %r1 = "top.Relu"(%x) {name = "r1"} : (tensor<8xf32>) -> tensor<8xf32>
    %s = "top.Sigmoid"(%r1) {name = "s"} : (tensor<8xf32>) -> tensor<8xf32>
    %r2 = "top.Relu"(%s) {name = "r2"} : (tensor<8xf32>) -> tensor<8xf32>
    return %r2 : tensor<8xf32>
  }
}
