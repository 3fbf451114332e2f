// Global memory: 4 KiB-aligned coefficients from 0x1_0000_0000, then the
// neuron region (4 KiB-aligned): activations reused by lifetime (64-byte
// granule), then the IO tensors; reshapes alias their input.
// RUN: tpuc-opt %s --tpu-address-assign | FileCheck %s

// Derivation (decimal addresses in the output):
//   big: 64 x 64 f32 = 16384 B at 0x1_0000_0000 = 4294967296
//   k:   16 f32 = 64 B at the next 4 KiB boundary 0x1_0000_4000 = 4294983680
//   coeff_size = 0x5000 = 20480; neuron base 0x1_0000_5000 = 4294987776
//   a: 64 B at base + 0; b: base + 64 = 4294987840 (a is still read by b)
//   c: base + 0 again (a's last reader, b, comes before c)
//   r: alias of c; activations end at base + 128
//   x (input): base + 128 = 4294987904; d (output): base + 192 = 4294987968
//   neuron_size = 256 rounded up to 4 KiB = 4096
// CHECK: module @addr attributes {
// CHECK-SAME: top.state = "TPU_ADDRESSED"
// CHECK-SAME: tpu.coeff_addr = 4294967296 : i64, tpu.coeff_size = 20480 : i64
// CHECK-SAME: tpu.neuron_addr = 4294987776 : i64, tpu.neuron_size = 4096 : i64
// CHECK: "top.Input"(%arg0) {addr = 4294987904 : i64, name = "x"}
// CHECK: "tpu.Weight"() {addr = 4294967296 : i64, layout = "compact", name = "big"}
// CHECK: "tpu.Weight"() {addr = 4294983680 : i64, layout = "compact", name = "k"}
// CHECK: "tpu.Add"({{.*}}) {addr = 4294987776 : i64, {{.*}}name = "a"
// CHECK: "tpu.Active"({{.*}}) {addr = 4294987840 : i64, {{.*}}name = "b"
// CHECK: "tpu.Active"({{.*}}) {addr = 4294987776 : i64, {{.*}}name = "c"
// CHECK: "tpu.Reshape"({{.*}}) {addr = 4294987776 : i64, name = "r"}
// CHECK: "tpu.Active"({{.*}}) {addr = 4294987968 : i64, {{.*}}name = "d"
module @addr attributes {top.chip = "BM1684X", top.state = "TPU_LOWERED"} {
  func.func @main(%arg0: tensor<1x16xf32>) -> tensor<16xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %w = "tpu.Weight"() {name = "big"} : () -> tensor<64x64xf32>
    %k = "tpu.Weight"() {name = "k"} : () -> tensor<1x16xf32>
    %1 = "tpu.Add"(%0, %k) {name = "a"} : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
    %2 = "tpu.Active"(%1) {name = "b", mode = "relu", coeffs = [-1.0]} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %3 = "tpu.Active"(%2) {name = "c", mode = "abs"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %4 = "tpu.Reshape"(%3) {name = "r"} : (tensor<1x16xf32>) -> tensor<16xf32>
    %5 = "tpu.Active"(%4) {name = "d", mode = "neg"} : (tensor<16xf32>) -> tensor<16xf32>
    return %5 : tensor<16xf32>
  }
}
