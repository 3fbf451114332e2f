//===- TpuCoreOps.td - Weight and Cast ----------------------*- tablegen -*-===//
//
// Constants in the coefficient region and element type conversions.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_TPUCOREOPS
#define TPUC_DIALECT_TPU_IR_TPUCOREOPS

include "tpuc/Dialect/Tpu/IR/TpuBase.td"

def Tpu_WeightOp : Tpu_Op<"Weight"> {
  let summary = "A named constant in the coefficient region";
  let description = [{
    The data is the float32 array `name` of the module's weight file (or of
    the in-memory weight store), in logical row-major order, rounded to the
    result's element type when read. `layout` tells how the coefficient
    blob stores it, i.e. what the kernel that reads it expects:

    - `compact`: row-major, as any activation in DDR (default);
    - `conv_1ic`: an f32 convolution filter, (oc, ic, kh, kw) per output
      channel, output channel oc of each 64 in lane oc mod 64 (isa/docs/bm1684x.md 3.4);
    - `conv_32ic`: an f16 / bf16 filter with input channels in blocks of 32,
      [oc][ic / 32][kh][kw][ic mod 32] (isa/docs/bm1684x.md 3.4);
    - `depthwise`: a depthwise filter, (c, kh, kw) per channel;
    - `deconv`: a transposed-convolution filter (ic, oc / group, kh, kw)
      stored as the equivalent convolution's filter in the conv layout of
      its type;
    - `int8_records`: an INT8 convolution's requantisation records (oc, 4)
      or (oc, 8) int32, stored part by part: the oc biases (word 0), the oc
      triples [multiplier, -rshift, zero point] (words 1-3), then for eight
      words the oc second-step triples (4-6) and the oc pads (7); each part
      channel-major, so loading it for a range of channels is one DDR run;
    - `transposed`: a 2-D weight [R, C] stored [C, R] row-major: the right
      operand [N, K] of a matmul that reads it transposed (ONNX Gemm
      transB, TFLite FULLY_CONNECTED), stored [K, N], so the kernel and a
      layer group's resident load read it without transposing.

    Passes set the layout (`--tpu-weight-reorder`); the codegen converts the
    logical data into it with the backend's reorder helpers when it writes
    the coefficient blob, so the IR and the interpreter always see logical
    data.

    ```mlir
    %1 = "tpu.Weight"() {name = "conv1_w", layout = "conv_32ic", addr = 4294967296 : i64}
         : () -> tensor<16x3x3x3xf16>
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       DefaultValuedAttr<StrAttr, "\"compact\"">:$layout);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_CastOp : Tpu_Op<"Cast", [Tpu_BM1684XCodegen]> {
  let summary = "Converts elements to the result's element type";
  let description = [{
    Float to float conversions round to nearest even (isa numerics); to a
    `!quant.uniform` type the value is x / scale + zero_point rounded half
    away from zero and saturated; from one, (q - zero_point) * scale. The
    F16 / BF16 modes put one at each model input and output.

    With `via_int` (an integer type: i8, ui8, i16, ui16, i32 or ui32; float
    input and result only) each value is first converted to that integer
    type, rounding toward zero and saturating (NaN gives 0), then to the
    result type (nearest even): the float-mode form of ONNX Cast to an
    integer type (top.Cast keeps float values). A cast to int64 / uint64
    goes through i32 / ui32 (the chip has no 64-bit integers), so values
    beyond their range saturate there.

    ```mlir
    %1 = "tpu.Cast"(%0) {name = "x_f16"} : (tensor<1x3x32x32xf32>) -> tensor<1x3x32x32xf16>
    %2 = "tpu.Cast"(%0) {name = "x_i8"} : (tensor<1x3x32x32xf32>) -> tensor<1x3x32x32x!quant.uniform<i8:f32, 0.05>>
    %3 = "tpu.Cast"(%0) {name = "x_int", via_int = i32} : (tensor<1x3x32x32xf32>) -> tensor<1x3x32x32xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$name,
                       OptionalAttr<TypeAttr>:$via_int);
  let results = (outs Tpu_Tensor:$output);
  let builders = [
    // A plain conversion (no via_int).
    OpBuilder<(ins "::mlir::Type":$output, "::mlir::Value":$input,
                   "::llvm::StringRef":$name), [{
      build($_builder, $_state, output, input, name, ::mlir::TypeAttr());
    }]>
  ];
}

def Tpu_GroupOp : Tpu_Op<"Group", [Tpu_BM1684XCodegen]> {
  let summary = "A layer group: ops whose intermediate values stay in local memory";
  let description = [{
    The body's ops run slice by slice through local memory (the backend's
    group scheduler, compiler/backend LayerGroup.h): the batch is cut into
    `n_slices` and the rows of the last op's output into `h_slices`; the
    rows every other value needs follow backwards through the windows of
    the convolutions and poolings. The operands are the activations the
    group reads from outside (loaded per slice; inside they are the body's
    arguments); the results are the values `tpu.Yield` returns, the only
    ones stored to global memory. Weights are referenced directly and stay
    resident in local memory for the whole group.

    The attributes record the schedule the layer-group pass chose:
    `timesteps` (slices + 2: load of the first slice, ..., store of the
    last), `lmem_bytes` (local memory per lane at the peak), `ddr_bytes`
    (bytes moved between DDR and local memory). The BM1684X target adds
    optional ones: `c_slices` (the channels cut into that many slices of
    whole lane slots, for weights larger than local memory; the weights
    are then loaded per slice), `w_slices` (every row's columns cut into
    that many slices, the last resort when not even one row fits),
    `k_slices` (a group of one whose reduced axis, a reduction's, is cut
    into that many slices that accumulate, when its extent fits no other
    slicing), `matrix_columns` (the group runs in MM's
    matrix(w) layout, the result's columns in blocks of that width across
    the lanes: `n_slices` then cuts the matrix rows and `c_slices` the
    column blocks), `weight_order` and the weight prefetch between
    neighbouring groups. The interpreter runs the body op by op,
    so grouping changes no value; a sum cut into `k_slices` is summed in
    the shares codegen records on the op (`k_shares`, tpu::kKSharesAttr).

    ```mlir
    %2 = "tpu.Group"(%0) ({
    ^bb0(%a: tensor<1x64x56x56xf16>):
      %c = "tpu.Conv2D"(%a, %w, %b) {...} : (...) -> tensor<1x64x56x56xf16>
      %r = "tpu.Add"(%c, %a) {...} : (...) -> tensor<1x64x56x56xf16>
      "tpu.Yield"(%r) : (tensor<1x64x56x56xf16>) -> ()
    }) {name = "group3", n_slices = 1 : i64, h_slices = 4 : i64,
        timesteps = 6 : i64, lmem_bytes = 81920 : i64, ddr_bytes = 802816 : i64}
        : (tensor<1x64x56x56xf16>) -> tensor<1x64x56x56xf16>
    ```
  }];
  let arguments = (ins Variadic<Tpu_Tensor>:$inputs, StrAttr:$name,
                       I64Attr:$n_slices, I64Attr:$h_slices,
                       I64Attr:$timesteps, I64Attr:$lmem_bytes,
                       I64Attr:$ddr_bytes,
                       DefaultValuedAttr<BoolAttr, "true">:$weight_resident);
  let results = (outs Variadic<Tpu_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
}

def Tpu_YieldOp : Tpu_Op<"Yield", [Terminator, HasParent<"GroupOp">]> {
  let summary = "The values a tpu.Group stores to global memory";
  let description = [{
    ```mlir
    "tpu.Yield"(%r) : (tensor<1x64x56x56xf16>) -> ()
    ```
  }];
  let arguments = (ins Variadic<Tpu_Tensor>:$values);
}

#endif // TPUC_DIALECT_TPU_IR_TPUCOREOPS
