//===- TopBase.td - The top dialect and its op base class --*- tablegen -*-===//
//
// `top` is the framework-level float dialect: one op per ONNX operator
// family, float32 ranked tensors, weights referenced by name and stored in
// an npz file next to the .mlir file.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TOP_IR_TOPBASE
#define TPUC_DIALECT_TOP_IR_TOPBASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "tpuc/Dialect/Top/IR/TopInterfaces.td"

def Top_Dialect : Dialect {
  let name = "top";
  let cppNamespace = "::tpuc::top";
  let summary = "Framework-level float operators imported from ONNX.";
  let description = [{
    Values are ranked f32 tensors (shapes fixed at import); absent optional
    operands are the `none` value of a `top.None` op. Every op except
    `top.None` carries `name`, the framework tensor name of its (first)
    result. The module records the weight file (`top.weight_file`, relative
    to the .mlir file), the chip (`top.chip`) and the stage (`top.state`).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  // Inherent attributes print in the attribute dictionary, as the module
  // files written by `tpuc transform` show them.
  let usePropertiesForAttributes = 0;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// Weights of the modules of this context (loaded from their npz files
    /// or created by passes).
    ::tpuc::WeightRegistry &getWeightRegistry();

  private:
    void registerCoreOps();
    void registerNNOps();
    void registerElementwiseOps();
    void registerShapeOps();

    std::shared_ptr<::tpuc::WeightRegistry> weightRegistry;

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Types and attribute helpers
//===----------------------------------------------------------------------===//

/// Activations and weights: f32 tensors (ranked once shapes are inferred).
def Top_Tensor : TensorOf<[F32]>;
/// An optional operand: an f32 tensor or the `none` value of top.None.
def Top_TensorOrNone : AnyTypeOf<[TensorOf<[F32]>, NoneType]>;
/// A model input: f32, or (tpu modules of deploy --quant-input) a quantised
/// int8 tensor.
def Top_QuantizedType :
    Type<CPred<"::llvm::isa<::mlir::quant::QuantizedType>($_self)">,
         "quantized type">;
def Top_InputTensor : TensorOf<[F32, Top_QuantizedType]>;

/// Common trailing attributes of ops that can absorb a following Relu.
def Top_DoRelu : DefaultValuedAttr<BoolAttr, "false">;
def Top_ReluLimit : DefaultValuedAttr<F64Attr, "-1.0">;

//===----------------------------------------------------------------------===//
// Base class
//===----------------------------------------------------------------------===//

class Top_BaseOp<string mnemonic, list<Trait> traits = []> :
    Op<Top_Dialect, mnemonic, !listconcat(traits, [
      DeclareOpInterfaceMethods<InferenceInterface>,
      DeclareOpInterfaceMethods<ShapeInterface>])> {
  let hasVerifier = 1;
}

/// A side-effect-free op (removed when unused).
class Top_Op<string mnemonic, list<Trait> traits = []> :
    Top_BaseOp<mnemonic, !listconcat(traits, [Pure])>;

#endif // TPUC_DIALECT_TOP_IR_TOPBASE
