// A concat whose inputs are contiguous blocks of its output (dims before the
// axis all 1) gets those inputs placed inside its output; a model input, a
// block off the 64-byte granule and a concat over a batch of 2 keep their
// own buffers (the concat copies them).
// RUN: tpuc-opt %s --tpu-address-assign | FileCheck %s

// Derivation (no weights: the neuron region starts at B = 0x1_0000_0000 =
// 4294967296). Program order: x, z, a, b, c, cat, r, e, f, cat2, p, q,
// cat3, d, y.
//   a, b (1x16 f32, 64 B) are inputs 0 and 1 of cat; c reads a after b is
//   defined. cat (1x48 f32, 192 B) takes a's place in program order and
//   lives from a to d: B + 0, so a = B + 0, b = B + 64; x (input 2) is a
//   model input and stays apart (copied).
//   e, f (2x8 f32, 64 B) and cat2 (2x16, 128 B) over a batch of 2 are not in
//   place; cat is live until d, so first fit gives e B + 192, f B + 256,
//   cat2 B + 320 (e and f are read by cat2).
//   p, q (1x8 f32, 32 B -> 64-byte slots): p is cat3's block at offset 0
//   and goes inside cat3 (a model output: the IO region); q's block at 32
//   is off the granule and q gets its own slot: when q is defined, e and f
//   are dead and B + 192 .. 256 is free (cat ends at 192, cat2 starts at
//   320). Activations end at B + 448. IO in program order: x B + 448, z
//   B + 512, c B + 576, cat3 (= p) B + 640, d (192 B) B + 704, y (128 B)
//   B + 896; 1024 B -> neuron_size 4096.
// CHECK: tpu.neuron_addr = 4294967296 : i64, tpu.neuron_size = 4096 : i64
// CHECK: "top.Input"(%arg0) {addr = 4294967744 : i64, name = "x"}
// CHECK: "top.Input"(%arg1) {addr = 4294967808 : i64, name = "z"}
// CHECK: "tpu.Active"({{.*}}) {addr = 4294967296 : i64, {{.*}}name = "a"
// CHECK: "tpu.Active"({{.*}}) {addr = 4294967360 : i64, {{.*}}name = "b"
// CHECK: "tpu.Active"({{.*}}) {addr = 4294967872 : i64, {{.*}}name = "c"
// CHECK: "tpu.Concat"({{.*}}) {addr = 4294967296 : i64, axis = 1 : i64, name = "cat"}
// CHECK: "tpu.Active"({{.*}}) {addr = 4294967488 : i64, {{.*}}name = "e"
// CHECK: "tpu.Active"({{.*}}) {addr = 4294967552 : i64, {{.*}}name = "f"
// CHECK: "tpu.Concat"({{.*}}) {addr = 4294967616 : i64, axis = 1 : i64, name = "cat2"}
// CHECK: "tpu.Active"({{.*}}) {addr = 4294967936 : i64, {{.*}}name = "p"
// CHECK: "tpu.Active"({{.*}}) {addr = 4294967488 : i64, {{.*}}name = "q"
// CHECK: "tpu.Concat"({{.*}}) {addr = 4294967936 : i64, axis = 1 : i64, name = "cat3"}
// CHECK: "tpu.Active"({{.*}}) {addr = 4294968000 : i64, {{.*}}name = "d"
// CHECK: "tpu.Active"({{.*}}) {addr = 4294968192 : i64, {{.*}}name = "y"
module @cat attributes {top.chip = "BM1684X", top.state = "TPU_LOWERED"} {
  func.func @main(%arg0: tensor<1x16xf32>, %arg1: tensor<1x8xf32>) -> (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x48xf32>, tensor<2x16xf32>) {
    %x = "top.Input"(%arg0) {name = "x"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %z = "top.Input"(%arg1) {name = "z"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %a = "tpu.Active"(%x) {name = "a", mode = "abs"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %b = "tpu.Active"(%x) {name = "b", mode = "neg"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %c = "tpu.Active"(%a) {name = "c", mode = "neg"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    %cat = "tpu.Concat"(%a, %b, %x) {name = "cat", axis = 1 : i64} : (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x48xf32>
    %r = "tpu.Reshape"(%x) {name = "r"} : (tensor<1x16xf32>) -> tensor<2x8xf32>
    %e = "tpu.Active"(%r) {name = "e", mode = "abs"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %f = "tpu.Active"(%r) {name = "f", mode = "neg"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %cat2 = "tpu.Concat"(%e, %f) {name = "cat2", axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
    %p = "tpu.Active"(%z) {name = "p", mode = "abs"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %q = "tpu.Active"(%z) {name = "q", mode = "neg"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %cat3 = "tpu.Concat"(%p, %q) {name = "cat3", axis = 1 : i64} : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x16xf32>
    %d = "tpu.Active"(%cat) {name = "d", mode = "abs"} : (tensor<1x48xf32>) -> tensor<1x48xf32>
    %y = "tpu.Active"(%cat2) {name = "y", mode = "abs"} : (tensor<2x16xf32>) -> tensor<2x16xf32>
    return %c, %cat3, %d, %y : tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x48xf32>, tensor<2x16xf32>
  }
}
