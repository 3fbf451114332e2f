//===- Passes.td - Passes on the top dialect -------------------*- tablegen -*-===//
#ifndef TPUC_DIALECT_TOP_TRANSFORMS_PASSES
#define TPUC_DIALECT_TOP_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def ShapeInfer : Pass<"shape-infer", "mlir::ModuleOp"> {
  let summary = "Infers every top op's result types and the function types";
  let description = [{
    Calls `inferShapes()` on every op implementing ShapeInterface in program
    order, so a changed input shape (e.g. a new batch size) propagates, then
    sets each function's type from its arguments and returned values.
  }];
  let constructor = "::tpuc::top::createShapeInferPass()";
  let dependentDialects = ["::tpuc::top::TopDialect"];
}

def SaveWeights : Pass<"save-weights", "mlir::ModuleOp"> {
  let summary = "Writes the weights the module uses to an npz file";
  let description = [{
    Writes every top.Weight's data (from the weight file or the in-memory
    store of weights that passes created) to `file` and points
    top.weight_file at it.
  }];
  let constructor = "::tpuc::top::createSaveWeightsPass()";
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Path of the npz file to write">,
  ];
}

#endif // TPUC_DIALECT_TOP_TRANSFORMS_PASSES
