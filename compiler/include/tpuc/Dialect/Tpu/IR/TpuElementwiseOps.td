//===- TpuElementwiseOps.td - Elementwise ops -----------------*- tablegen -*-===//
//
// Binary ops with numpy broadcasting (one vector-unit kernel each), the
// per-channel scale and shift of an unfolded BatchNorm, and the
// unary activations (one op, `tpu.Active`, with a mode: they share one
// kernel family on the chip).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_TPUELEMENTWISEOPS
#define TPUC_DIALECT_TPU_IR_TPUELEMENTWISEOPS

include "tpuc/Dialect/Tpu/IR/TpuBase.td"

class Tpu_BinaryOp<string mnemonic, string formula>
    : Tpu_Op<mnemonic, [Tpu_BM1684XCodegen]> {
  let summary = "Elementwise " # formula # " with numpy broadcasting";
  let description = [{
    Both operands broadcast to the result's shape (numpy rules) and have
    the result's element type; the result is rounded once (after the relu
    when `do_relu`).

    ```mlir
    %2 = "tpu.}] # mnemonic # [{"(%0, %1) {name = "y"}
         : (tensor<1x16x8x8xf16>, tensor<1x16x1x1xf16>) -> tensor<1x16x8x8xf16>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$lhs, Tpu_Tensor:$rhs,
                       Tpu_DoRelu:$do_relu, Tpu_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_AddOp : Tpu_BinaryOp<"Add", "lhs + rhs">;
def Tpu_SubOp : Tpu_BinaryOp<"Sub", "lhs - rhs">;
def Tpu_MulOp : Tpu_BinaryOp<"Mul", "lhs * rhs">;
def Tpu_DivOp : Tpu_BinaryOp<"Div", "lhs / rhs">;
def Tpu_MaxOp : Tpu_BinaryOp<"Max", "max(lhs, rhs)">;
def Tpu_MinOp : Tpu_BinaryOp<"Min", "min(lhs, rhs)">;
def Tpu_PowOp : Tpu_BinaryOp<"Pow", "pow(lhs, rhs)">;

def Tpu_ScaleOp : Tpu_Op<"Scale", [Tpu_BM1684XCodegen]> {
  let summary = "Per-channel scale and shift: input * scale + bias";
  let description = [{
    An unfolded BatchNorm: `scale` and `bias` have shape (1, C, 1, ...)
    (the input's rank, C its axis 1) and the input's element type T. The
    vector unit multiplies, rounds to T, adds, rounds to T: out =
    round_T(round_T(x * scale[c]) + bias[c]); then, with `do_relu`,
    max(out, 0), clamped to `relu_limit` (rounded to T) when that is
    positive. One pass over the tensor instead of a Mul, an Add and a
    relu.

    ```mlir
    %3 = "tpu.Scale"(%0, %1, %2) {name = "bn1", do_relu = true}
         : (tensor<1x64x56x56xf16>, tensor<1x64x1x1xf16>, tensor<1x64x1x1xf16>)
         -> tensor<1x64x56x56xf16>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_Tensor:$scale,
                       Tpu_Tensor:$bias,
                       Tpu_DoRelu:$do_relu, Tpu_ReluLimit:$relu_limit,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_CompareOp : Tpu_Op<"Compare", [Tpu_BM1684XCodegen]> {
  let summary = "Elementwise comparison giving 0 or 1";
  let description = [{
    `mode` is Equal, Greater, GreaterOrEqual, Less or LessOrEqual; operands
    broadcast numpy-style; the result is 1 where the relation holds, else 0.
    The operands are compared exactly in their element type (NaN compares
    false); a one-element weight operand runs as a comparison with an
    immediate on the BM1684X.

    ```mlir
    %2 = "tpu.Compare"(%0, %1) {name = "m", mode = "Greater"}
         : (tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$lhs, Tpu_Tensor:$rhs, StrAttr:$mode,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_WhereOp : Tpu_Op<"Where", [Tpu_BM1684XCodegen]> {
  let summary = "Elementwise select";
  let description = [{
    x where cond != 0, else y; all three broadcast numpy-style.

    ```mlir
    %3 = "tpu.Where"(%0, %1, %2) {name = "sel"}
         : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$cond, Tpu_Tensor:$x, Tpu_Tensor:$y,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_ActiveOp : Tpu_Op<"Active", [Tpu_BM1684XCodegen]> {
  let summary = "Unary activation selected by `mode`";
  let description = [{
    Applies one function to every element, computed in f32 and rounded
    once. `mode` and its `coeffs`:

    | mode | function | coeffs |
    |---|---|---|
    | relu | max(x, 0), clamped to c0 when c0 > 0 | [limit] |
    | leaky_relu | x < 0 ? c0 * x : x | [alpha] |
    | clip | min(max(x, c0), c1) | [min, max] |
    | sigmoid | 1 / (1 + exp(-x)) | |
    | hard_sigmoid | max(0, min(1, c0 * x + c1)) | [alpha, beta] |
    | hard_swish | x * max(0, min(1, x / 6 + 1 / 2)) | |
    | tanh, exp, log, sqrt, erf, abs, neg, reciprocal | as named | |
    | gelu | x / 2 * (1 + erf(x / sqrt 2)) | |
    | gelu_tanh | tanh approximation of gelu | |
    | silu | x * sigmoid(x) | |

    ```mlir
    %1 = "tpu.Active"(%0) {name = "act", mode = "sigmoid", coeffs = []}
         : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, StrAttr:$mode,
                       DefaultValuedAttr<F64ArrayAttr, "{}">:$coeffs,
                       StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_LutOp : Tpu_Op<"Lut", [Tpu_BM1684XCodegen]> {
  let summary = "INT8 element-wise function as a 256-entry lookup table";
  let description = [{
    `output[i] = table[byte(input[i])]`: the raw byte of the int8 / uint8
    input (an int8 value v reads entry v & 255) selects one of the 256
    entries of `table`, which holds output codes (the lowering computes
    entry b as the output's quantisation of f(dequantised b), rounded half
    away from zero and saturated). The chip runs it as one sSG
    pe_s_gather_d1coor per tile with the table in every lane.

    ```mlir
    %2 = "tpu.Lut"(%0, %1) {name = "sig"}
         : (tensor<1x16x8x8x!quant.uniform<i8:f32, 0.05>>,
            tensor<256x!quant.uniform<u8:f32, 0.0039>>)
         -> tensor<1x16x8x8x!quant.uniform<u8:f32, 0.0039>>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_Tensor:$table, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

def Tpu_PReluOp : Tpu_Op<"PRelu", [Tpu_BM1684XCodegen]> {
  let summary = "Leaky relu with a per-element slope";
  let description = [{
    x < 0 ? slope * x : x, `slope` broadcast numpy-style to x.

    ```mlir
    %2 = "tpu.PRelu"(%0, %1) {name = "act"}
         : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    ```
  }];
  let arguments = (ins Tpu_Tensor:$input, Tpu_Tensor:$slope, StrAttr:$name);
  let results = (outs Tpu_Tensor:$output);
}

#endif // TPUC_DIALECT_TPU_IR_TPUELEMENTWISEOPS
