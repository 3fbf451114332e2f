// Codegen errors name the op at its location: an op without a BM1684X
// kernel (a top op left in a tpu module) and an operand without a device
// address.
// RUN: tpuc-opt %s --split-input-file --tpu-codegen=file=%t.bmodel --verify-diagnostics

module @no_kernel attributes {top.chip = "BM1684X", top.state = "TPU_ADDRESSED", tpu.coeff_addr = 4294967296 : i64, tpu.coeff_size = 0 : i64, tpu.neuron_addr = 4294967296 : i64, tpu.neuron_size = 4096 : i64} {
  func.func @main(%arg0: tensor<1x16xf32>) -> tensor<1x16xf32> {
    %0 = "top.Input"(%arg0) {addr = 4294967296 : i64, name = "x"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    // expected-error @+1 {{codegen: no BM1684X kernel for this op}}
    %1 = "top.Relu"(%0) {addr = 4294967360 : i64, name = "r"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    return %1 : tensor<1x16xf32>
  }
}

// -----

module @no_address attributes {top.chip = "BM1684X", top.state = "TPU_ADDRESSED", tpu.coeff_addr = 4294967296 : i64, tpu.coeff_size = 0 : i64, tpu.neuron_addr = 4294967296 : i64, tpu.neuron_size = 4096 : i64} {
  func.func @main(%arg0: tensor<1x16xf32>) -> tensor<1x16xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    // expected-error @+1 {{codegen: operand 'x' has no device address (run --tpu-address-assign)}}
    %1 = "tpu.Active"(%0) {addr = 4294967360 : i64, name = "a", mode = "abs"} : (tensor<1x16xf32>) -> tensor<1x16xf32>
    return %1 : tensor<1x16xf32>
  }
}
