//===- Passes.td - Lowering top to tpu ---------------------*- tablegen -*-===//
#ifndef TPUC_CONVERSION_TOPTOTPU_PASSES
#define TPUC_CONVERSION_TOPTOTPU_PASSES

include "mlir/Pass/PassBase.td"

def ConvertTopToTpu : Pass<"convert-top-to-tpu", "mlir::ModuleOp"> {
  let summary = "Lowers a top module to tpu ops in float modes";
  let description = [{
    Replaces every top op (except top.Input and top.None) by the tpu op(s)
    that compute it in `mode` (F32, F16 or BF16): activations and weights
    take the mode's element type, biases and normalisation parameters stay
    f32, model inputs and outputs stay f32 with a tpu.Cast at entry and exit
    in F16 / BF16. An op that has no lowering in the mode is an error naming
    the op and the mode.

    `qtable` names a quantize table (TPU-MLIR's `--quantize_table`: lines
    `op_name MODE`, `#` comments) whose ops are lowered in their own mode;
    a tpu.Cast joins every value to a reader of another float type. An
    entry naming no op, or a bad line, is an error naming the file and line.
  }];
  let constructor = "::tpuc::createConvertTopToTpuPass()";
  let dependentDialects = ["::tpuc::tpu::TpuDialect"];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"F32\"",
           "Float mode: F32, F16 or BF16">,
    Option<"qtable", "qtable", "std::string", /*default=*/"\"\"",
           "Quantize table: per-op mode overrides (op_name MODE per line)">,
  ];
}

#endif // TPUC_CONVERSION_TOPTOTPU_PASSES
