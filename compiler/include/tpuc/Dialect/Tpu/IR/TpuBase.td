//===- TpuBase.td - The tpu dialect and its op base class --*- tablegen -*-===//
//
// `tpu` is the hardware-level dialect: one op per BM1684X kernel family,
// element types as the chip stores them (f32, f16, bf16, later quantised
// integers), weights in the layouts the TIU reads, and global (DDR)
// addresses once they are assigned.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_TPUBASE
#define TPUC_DIALECT_TPU_IR_TPUBASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "tpuc/Interfaces/InferenceInterface.td"
include "tpuc/Target/BM1684X/CodegenInterface.td"

def Tpu_Dialect : Dialect {
  let name = "tpu";
  let cppNamespace = "::tpuc::tpu";
  let summary = "BM1684X operators on typed tensors with device addresses.";
  let description = [{
    A `tpu` module is what `tpuc deploy` lowers a `top` module to. It keeps
    the `top.Input` and `top.None` ops of the top module; every other op is
    a `tpu` op.

    Element types are the storage types of the chip: `f32`, `f16`, `bf16`
    and (for the later integer modes) signless integers and `!quant.uniform`
    types. In the F16 / BF16 modes the model inputs and outputs stay f32 in
    DDR, and a `tpu.Cast` converts them at entry and exit (as TPU-MLIR
    does).

    Weights are `tpu.Weight` ops: their data is the float32 array `name` of
    the module's weight file, rounded to the result's element type when
    read; `layout` says how the coefficient blob stores them (see
    tpu.Weight).

    Global addresses. After `--tpu-address-assign` every tensor that lives
    in DDR carries its byte address in an `addr` attribute on its defining
    op (an I64Attr; an I64ArrayAttr with one entry per result for ops with
    several results). `top.Input` gets one too. Reshapes are aliases: their
    `addr` equals their input's. The module records the regions:
    `tpu.coeff_addr`, `tpu.coeff_size`, `tpu.neuron_addr`,
    `tpu.neuron_size`. An attribute rather than a type encoding keeps the
    result types (and thus the verifiers and the quantised types) readable.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::quant::QuantizationDialect",
                           "::tpuc::top::TopDialect"];
  // Inherent attributes print in the attribute dictionary, as for top.
  let usePropertiesForAttributes = 0;
  let extraClassDeclaration = [{
  private:
    void registerCoreOps();
    void registerNNOps();
    void registerElementwiseOps();
    void registerShapeOps();

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Types and attribute helpers
//===----------------------------------------------------------------------===//

/// A device tensor: ranked, static, of any element type the chip stores
/// (f32, f16, bf16, integers, !quant.uniform).
def Tpu_Tensor : RankedTensorOf<[AnyType]>;
/// An optional operand: a tensor or the `none` value of top.None.
def Tpu_TensorOrNone : AnyTypeOf<[RankedTensorOf<[AnyType]>, NoneType]>;

def Tpu_DoRelu : DefaultValuedAttr<BoolAttr, "false">;
def Tpu_ReluLimit : DefaultValuedAttr<F64Attr, "-1.0">;

//===----------------------------------------------------------------------===//
// Base class
//===----------------------------------------------------------------------===//

/// Every tpu op runs in the interpreter and is checked by a verifier.
class Tpu_Op<string mnemonic, list<Trait> traits = []> :
    Op<Tpu_Dialect, mnemonic, !listconcat(traits, [Pure,
      DeclareOpInterfaceMethods<InferenceInterface>])> {
  let hasVerifier = 1;
}

/// Ops with a BM1684X kernel: they define codegenBM1684X in
/// lib/Target/BM1684X/Codegen/ (see tpuc/Target/BM1684X/CodegenInterface.h).
def Tpu_BM1684XCodegen : DeclareOpInterfaceMethods<BM1684XCodegenInterface>;

#endif // TPUC_DIALECT_TPU_IR_TPUBASE
