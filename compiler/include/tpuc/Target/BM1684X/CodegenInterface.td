//===- CodegenInterface.td - tpu op -> BM1684X commands ----*- tablegen -*-===//
//
// The per-op hook of the BM1684X codegen (see CodegenInterface.h). tpu ops
// list it in their traits through Tpu_BM1684XCodegen (TpuBase.td).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TARGET_BM1684X_CODEGENINTERFACE
#define TPUC_TARGET_BM1684X_CODEGENINTERFACE

include "mlir/IR/OpBase.td"

def BM1684XCodegenInterface : OpInterface<"BM1684XCodegenInterface"> {
  let description = [{
    Appends the BM1684X commands that compute the op to the command emitter
    of a `tpuc::bm1684x::CodegenContext`: the op describes its operands as
    backend GTensors (device address, precision, shape) and calls its
    backend kernel. Reports problems by throwing (a CodegenError naming the
    op, or a kernel's ::tpu::Error, which the driver attributes to the op).
  }];
  let cppNamespace = "::tpuc::bm1684x";
  let methods = [
    InterfaceMethod<
      /*desc=*/"Emits the op's commands through ctx.emitter().",
      /*retTy=*/"void",
      /*methodName=*/"codegenBM1684X",
      /*args=*/(ins "::tpuc::bm1684x::CodegenContext &":$ctx)>,
  ];
}

#endif // TPUC_TARGET_BM1684X_CODEGENINTERFACE
