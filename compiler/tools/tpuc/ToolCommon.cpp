//===- ToolCommon.cpp - What the tpuc subcommands share -------------------===//
#include "ToolCommon.h"

#include "tpuc/InitAll.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Npz.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

namespace tpuc::tool {

std::unique_ptr<mlir::MLIRContext> createContext() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

std::string parseModule(mlir::MLIRContext &context, const std::string &path,
                        bool requireTop, ParsedModule &out) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      mlir::openInputFile(path, &errorMessage);
  if (!buffer)
    return "cannot read '" + path + "': " + errorMessage;
  out.sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  out.diagnostics = std::make_unique<mlir::SourceMgrDiagnosticHandler>(
      out.sourceMgr, &context);
  out.module = mlir::parseSourceFile<mlir::ModuleOp>(out.sourceMgr, &context);
  if (!out.module)
    return "cannot parse '" + path + "' as an MLIR module";
  if (!requireTop)
    return "";
  llvm::StringRef state = module::getState(*out.module);
  if (state != module::kStateTopF32)
    return "'" + path + "' is not a top module (top.state = \"" + state.str() +
           "\", expected \"" + module::kStateTopF32.str() +
           "\"); run tpuc transform first";
  return "";
}

std::string loadModule(mlir::MLIRContext &context, const std::string &path,
                       bool requireTop, ParsedModule &out) {
  if (std::string error = parseModule(context, path, requireTop, out);
      !error.empty())
    return error;
  if (mlir::failed(loadWeights(*out.module)))
    return "cannot load the weights of '" + path + "'";
  return "";
}

std::string joinNames(const std::vector<std::string> &names) {
  return names.empty() ? std::string("none") : llvm::join(names, ", ");
}

void setInputs(ModuleInterpreter &interpreter, const ::tpu::npz::Npz &inputs,
               const std::string &inputPath) {
  for (const std::string &name : interpreter.inputNames()) {
    const ::tpu::npz::Array *array = inputs.find(name);
    if (!array)
      throw ::tpu::Error(inputPath + ": input '" + name +
                         "' is missing (the file holds: " +
                         joinNames(inputs.names()) + ")");
    std::vector<int64_t> want = interpreter.shape(name);
    if (array->shape != want)
      throw ::tpu::Error(inputPath + ": input '" + name + "' has shape " +
                         ::tpu::npz::shapeString(array->shape) +
                         ", the model wants " +
                         ::tpu::npz::shapeString(want));
    interpreter.setInput(name, array->toFloat());
  }
}

} // namespace tpuc::tool
