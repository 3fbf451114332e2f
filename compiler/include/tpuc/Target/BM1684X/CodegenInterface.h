//===- CodegenInterface.h - tpu op -> BM1684X commands ----------*- C++ -*-===//
//
// Every tpu op that computes something implements BM1684XCodegenInterface:
// `void codegenBM1684X(CodegenContext &ctx)` appends the op's TIU / GDMA
// commands to ctx.emitter() by calling its backend kernel (::tpu::backend,
// compiler/backend). The driver (buildBmodel, Codegen.cpp) calls it for
// every op in program order and forms the command groups; an op without the
// interface is an error naming the op ("no BM1684X kernel for this op"),
// except top.Input, top.None, tpu.Weight and the tpu.Reshape aliases, which
// hold data or alias it and emit nothing.
//
// To give an op a kernel:
//   1. add Tpu_BM1684XCodegen to the op's traits in its Tpu*Ops.td, e.g.
//      def Tpu_FooOp : Tpu_Op<"Foo", [Tpu_BM1684XCodegen]> { ... }
//   2. define `void FooOp::codegenBM1684X(bm1684x::CodegenContext &ctx)` in
//      the family file of its backend kernel under
//      lib/Target/BM1684X/Codegen/ (Conv, MatMul, Pool, Elementwise, Norm,
//      Move; a new file is picked up by the build). Fill the kernel's
//      parameters with the helpers of lib/Target/BM1684X/CodegenContext.h:
//      ctx.tensor(op, value) for a GTensor, ctx.ioParams<P>(op) for a
//      one-input, one-output op, ctx.optionalAddr for an optional operand,
//      fusedActivation for do_relu / relu_limit, and throw CodegenError for
//      what the kernel cannot do. Then call the kernel with ctx.emitter().
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TARGET_BM1684X_CODEGENINTERFACE_H
#define TPUC_TARGET_BM1684X_CODEGENINTERFACE_H

#include "mlir/IR/OpDefinition.h"

namespace tpuc::bm1684x {
class CodegenContext;
} // namespace tpuc::bm1684x

/// Include the generated interface declarations.
#include "tpuc/Target/BM1684X/CodegenInterface.h.inc"

#endif // TPUC_TARGET_BM1684X_CODEGENINTERFACE_H
