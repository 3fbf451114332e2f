//===- TopElementwiseOps.td - Elementwise ops -----------------*- tablegen -*-===//
//
// Binary ops broadcast their operands numpy-style; unary ops keep the
// input's shape.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPELEMENTWISEOPS
#define TPUC_DIALECT_TOP_IR_TOPELEMENTWISEOPS

include "tpuc/Dialect/Top/IR/TopBase.td"

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

class Top_BinaryOp<string mnemonic, string formula, list<Trait> traits = []> :
    Top_Op<mnemonic, traits> {
  let summary = "Elementwise " # formula # " with numpy broadcasting";
  let description = [{
    Computes the elementwise result of `lhs` and `rhs` after broadcasting
    both to their common numpy shape.

    ```mlir
    %2 = "top.}] # mnemonic # [{"(%0, %1) {name = "y"}
         : (tensor<1x64x8x8xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x8x8xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$lhs, Top_Tensor:$rhs, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

/// Binary ops that can absorb a following Relu.
class Top_BinaryReluOp<string mnemonic, string formula> :
    Top_BinaryOp<mnemonic, formula> {
  let arguments = (ins Top_Tensor:$lhs, Top_Tensor:$rhs,
                       Top_DoRelu:$do_relu, Top_ReluLimit:$relu_limit,
                       StrAttr:$name);
}

def Top_AddOp : Top_BinaryReluOp<"Add", "lhs + rhs"> {
  let hasCanonicalizer = 1;
}
def Top_SubOp : Top_BinaryReluOp<"Sub", "lhs - rhs">;
def Top_MulOp : Top_BinaryReluOp<"Mul", "lhs * rhs"> {
  let hasCanonicalizer = 1;
}
def Top_DivOp : Top_BinaryOp<"Div", "lhs / rhs">;
def Top_MaxOp : Top_BinaryOp<"Max", "max(lhs, rhs)">;
def Top_MinOp : Top_BinaryOp<"Min", "min(lhs, rhs)">;
def Top_PowOp : Top_BinaryOp<"Pow", "pow(lhs, rhs)">;

def Top_CompareOp : Top_Op<"Compare"> {
  let summary = "Elementwise comparison giving 0.0 or 1.0";
  let description = [{
    `mode` is one of Equal, Greater, GreaterOrEqual, Less, LessOrEqual; the
    operands broadcast numpy-style and the result is 1.0 where the relation
    holds, else 0.0.

    ```mlir
    %2 = "top.Compare"(%0, %1) {name = "mask", mode = "Greater"}
         : (tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$lhs, Top_Tensor:$rhs, StrAttr:$mode,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_WhereOp : Top_Op<"Where"> {
  let summary = "Elementwise select";
  let description = [{
    x where cond != 0, else y; all three broadcast numpy-style.

    ```mlir
    %3 = "top.Where"(%0, %1, %2) {name = "sel"}
         : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$cond, Top_Tensor:$x, Top_Tensor:$y,
                       StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

class Top_UnaryOp<string mnemonic, string formula, dag attrs = (ins)> :
    Top_Op<mnemonic> {
  let summary = "Elementwise " # formula;
  let description = [{
    Applies }] # formula # [{ to every element; the result has the input's
    shape.

    ```mlir
    %1 = "top.}] # mnemonic # [{"(%0) {name = "y"} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    ```
  }];
  let arguments = !con((ins Top_Tensor:$input), attrs, (ins StrAttr:$name));
  let results = (outs Top_Tensor:$output);
}

def Top_ReluOp : Top_UnaryOp<"Relu",
    "max(x, 0), clamped to relu_limit when relu_limit > 0",
    (ins Top_ReluLimit:$relu_limit)> {
  let hasCanonicalizer = 1;
}
def Top_LeakyReluOp : Top_UnaryOp<"LeakyRelu", "x < 0 ? alpha * x : x",
    (ins DefaultValuedAttr<F64Attr, "0.01">:$alpha)>;
def Top_ClipOp : Top_UnaryOp<"Clip", "min(max(x, min), max)",
    (ins DefaultValuedAttr<F64Attr, "-std::numeric_limits<double>::infinity()">:$min,
         DefaultValuedAttr<F64Attr, "std::numeric_limits<double>::infinity()">:$max)> {
  let hasCanonicalizer = 1;
}
def Top_SigmoidOp : Top_UnaryOp<"Sigmoid", "1 / (1 + exp(-x))">;
def Top_HardSigmoidOp : Top_UnaryOp<"HardSigmoid",
    "max(0, min(1, alpha * x + beta))",
    (ins DefaultValuedAttr<F64Attr, "0.2">:$alpha,
         DefaultValuedAttr<F64Attr, "0.5">:$beta)>;
def Top_HardSwishOp : Top_UnaryOp<"HardSwish", "x * max(0, min(1, x / 6 + 1 / 2))">;
def Top_TanhOp : Top_UnaryOp<"Tanh", "tanh(x)">;
def Top_ExpOp : Top_UnaryOp<"Exp", "exp(x)">;
def Top_LogOp : Top_UnaryOp<"Log", "log(x)">;
def Top_SqrtOp : Top_UnaryOp<"Sqrt", "sqrt(x)">;
def Top_ErfOp : Top_UnaryOp<"Erf", "erf(x)">;
def Top_GeluOp : Top_UnaryOp<"Gelu",
    "x / 2 * (1 + erf(x / sqrt(2))) (approximate = \"tanh\": x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))))",
    (ins DefaultValuedAttr<StrAttr, "\"none\"">:$approximate)>;
def Top_SiLUOp : Top_UnaryOp<"SiLU", "x * sigmoid(x)">;
def Top_AbsOp : Top_UnaryOp<"Abs", "|x|">;
def Top_NegOp : Top_UnaryOp<"Neg", "-x">;
def Top_ReciprocalOp : Top_UnaryOp<"Reciprocal", "1 / x">;

def Top_PReluOp : Top_Op<"PRelu"> {
  let summary = "Leaky relu with a learned slope";
  let description = [{
    x < 0 ? slope * x : x, with `slope` broadcast numpy-style to x (ONNX
    unidirectional broadcasting).

    ```mlir
    %2 = "top.PRelu"(%0, %1) {name = "act"}
         : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, Top_Tensor:$slope, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

def Top_CastOp : Top_Op<"Cast"> {
  let summary = "Rounds float values to another element type's values";
  let description = [{
    Values stay float32 but take the values the target type can hold:
    `to` = "f32" / "f64" keeps them, "f16" / "bf16" round to nearest even,
    "bool" gives x != 0, the integer types ("int8", "uint8", "int16",
    "uint16", "int32", "uint32", "int64", "uint64") round toward zero and
    saturate to the type's range.

    ```mlir
    %1 = "top.Cast"(%0) {name = "c", to = "int32"} : (tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Top_Tensor:$input, StrAttr:$to, StrAttr:$name);
  let results = (outs Top_Tensor:$output);
}

#endif // TPUC_DIALECT_TOP_IR_TOPELEMENTWISEOPS
