//===- ToolCommon.cpp - What the tpuc subcommands share -------------------===//
#include "ToolCommon.h"

#include "tpu/isa/Bmodel.h"

#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Frontend/TfliteImporter.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/InitAll.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/CaliTable.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Preprocess.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Npz.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fstream>
#include <unistd.h>

namespace tpuc::tool {

std::unique_ptr<mlir::MLIRContext> createContext() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  // Errors name their op by its location (the source line is shown); the
  // op itself, printed in generic form beside each diagnostic, is the whole
  // module for a module-level error (a truncated weight file printed all
  // 31 KB of a ResNet-50's IR after the one useful line).
  context->printOpOnDiagnostic(false);
  return context;
}

std::string parseModule(mlir::MLIRContext &context, const std::string &path,
                        bool requireTop, ParsedModule &out) {
  if (llvm::sys::fs::is_directory(path))
    return "'" + path + "' is a directory, not an .mlir module";
  if (std::string why = ::tpu::isa::bmodel::notAFile(path); !why.empty())
    return "'" + path + "' " + why;
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      mlir::openInputFile(path, &errorMessage);
  if (!buffer)
    return "cannot read '" + path + "': " + errorMessage;
  // A model in another format (or any binary file) is named as such, not
  // parsed: the parser's error would quote its bytes.
  llvm::StringRef ext = llvm::sys::path::extension(path);
  llvm::StringRef head = buffer->getBuffer().take_front(4096);
  if (ext.equals_insensitive(".bmodel"))
    return "'" + path +
           "' is a bmodel, not an .mlir module (run it with "
           "tpusim run)";
  if (ext.equals_insensitive(".onnx") || ext.equals_insensitive(".tflite"))
    return "'" + path + "' is " +
           (ext.equals_insensitive(".onnx") ? "an ONNX" : "a TFLite") +
           " model, not an .mlir module (import it with tpuc transform)";
  // MLIR bytecode ("ML\xEFR", tpuc-opt --emit-bytecode) is binary too.
  if (head.contains('\0') && !head.starts_with("ML\xEFR"))
    return "'" + path + "' is a binary file, not an .mlir module";
  return parseModuleBuffer(context, std::move(buffer), path, requireTop, out);
}

std::string parseModuleBuffer(mlir::MLIRContext &context,
                              std::unique_ptr<llvm::MemoryBuffer> buffer,
                              const std::string &path, bool requireTop,
                              ParsedModule &out) {
  out.sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  out.diagnostics = std::make_unique<mlir::SourceMgrDiagnosticHandler>(
      out.sourceMgr, &context,
      out.diagnosticStream ? *out.diagnosticStream : llvm::errs());
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
  return checkWeightsPresent(*out.module, path);
}

std::string checkWeightsPresent(mlir::ModuleOp module,
                                const std::string &path) {
  // Every weight must have its data now: name the file that lacks it.
  const ModuleWeights &weights =
      getWeightRegistry(module.getContext()).get(module);
  std::string missing;
  module.walk([&](mlir::Operation *op) {
    llvm::StringRef name;
    if (auto w = mlir::dyn_cast<top::WeightOp>(op))
      name = w.getName();
    else if (auto w = mlir::dyn_cast<tpu::WeightOp>(op))
      name = w.getName();
    else
      return mlir::WalkResult::advance();
    if (findWeight(module, name, /*emitErrors=*/false))
      return mlir::WalkResult::advance();
    missing = name.str();
    return mlir::WalkResult::interrupt();
  });
  if (missing.empty())
    return "";
  llvm::StringRef attr = module::getWeightFile(module);
  if (attr.empty())
    return "'" + path + "': weight '" + missing +
           "' has no data and the module names no weight file "
           "(top.weight_file)";
  if (weights.loadedPath.empty())
    return "'" + path + "': weight '" + missing +
           "' has no data: its weight file '" + attr.str() +
           "' (top.weight_file) does not exist beside the module";
  return "'" + path + "': weight '" + missing +
         "' is not in the weight file '" + weights.loadedPath + "' (" +
         std::to_string(weights.file.size()) +
         " arrays): the file is incomplete or belongs to another module";
}

void checkFitsHostMemory(mlir::ModuleOp module, const std::string &path) {
  uint64_t pages = uint64_t(::sysconf(_SC_PHYS_PAGES));
  uint64_t pageSize = uint64_t(::sysconf(_SC_PAGE_SIZE));
  uint64_t bytes;
  if (__builtin_mul_overflow(pages, pageSize, &bytes))
    return;
  // The interpreter keeps values as float32.
  if (std::string error =
          checkTensorSizes(module, sizeof(float), bytes, "this machine's memory");
      !error.empty())
    throw ::tpu::Error(path + ": " + error + "; cannot interpret it");
}

std::vector<::tpu::npz::InputSpec> inputSpecs(mlir::ModuleOp module) {
  std::vector<::tpu::npz::InputSpec> specs;
  module.walk([&](top::InputOp op) {
    auto t = mlir::cast<mlir::RankedTensorType>(op.getResult().getType());
    specs.push_back(
        {op.getName().str(),
         std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
         ::tpu::npz::DType::F32});
  });
  return specs;
}

std::string
checkOutputPaths(const std::vector<std::string> &paths,
                 const std::vector<::tpu::isa::bmodel::NamedPath> &inputs) {
  std::vector<::tpu::isa::bmodel::NamedPath> outputs;
  for (const std::string &p : paths)
    outputs.push_back({"output", p});
  return ::tpu::isa::bmodel::checkOutputPaths(outputs, inputs);
}

namespace {
/// The weight file a module's text names (moduleInputs); "" when none.
std::string moduleWeightFile(const std::string &modulePath) {
  std::ifstream in(modulePath, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  const std::string key = "top.weight_file = \"";
  size_t at = head.find(key);
  if (at == std::string::npos)
    return "";
  size_t end = head.find('"', at + key.size());
  if (end == std::string::npos)
    return "";
  llvm::SmallString<256> path(modulePath);
  llvm::sys::path::remove_filename(path);
  llvm::sys::path::append(path,
                          head.substr(at + key.size(), end - at - key.size()));
  return path.str().str();
}
} // namespace

std::vector<::tpu::isa::bmodel::NamedPath>
moduleInputs(const std::string &modulePath, const std::string &what,
             std::vector<::tpu::isa::bmodel::NamedPath> others) {
  std::vector<::tpu::isa::bmodel::NamedPath> inputs = {
      {what, modulePath},
      {what + "'s weight file", moduleWeightFile(modulePath)}};
  inputs.insert(inputs.end(), others.begin(), others.end());
  return inputs;
}

std::string checkTensorSizes(mlir::ModuleOp module, uint64_t elemBytes,
                             uint64_t limit, const std::string &limitName) {
  std::string error;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Value v : op->getResults()) {
      auto t = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
      if (!t)
        continue;
      uint64_t n = 1, bytes = 0;
      bool overflow = false;
      for (int64_t d : t.getShape())
        overflow =
            overflow || d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n);
      overflow = overflow || __builtin_mul_overflow(n, elemBytes, &bytes);
      if (!overflow && bytes <= limit)
        continue;
      std::string shape;
      for (int64_t d : t.getShape())
        shape += (shape.empty() ? "" : "x") + std::to_string(d);
      error =
          "tensor '" + top::getTensorName(v) + "' (" + shape + ") needs " +
          (overflow ? std::string("more than 2^64") : std::to_string(bytes)) +
          " bytes, more than the " + std::to_string(limit) + " bytes of " +
          limitName;
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return error;
}

std::string checkCaliTable(mlir::ModuleOp module, const CaliTable &t) {
  llvm::StringSet<> names;
  module.walk([&](mlir::Operation *op) {
    if (mlir::isa<top::WeightOp, top::NoneOp>(op))
      return;
    for (mlir::Value r : op->getResults())
      if (mlir::isa<mlir::RankedTensorType>(r.getType()))
        names.insert(top::getTensorName(r));
  });
  std::vector<std::string> unknown;
  for (const std::string &name : t.order)
    if (!names.contains(name))
      unknown.push_back(name);
  if (!unknown.empty()) {
    std::string list;
    for (size_t i = 0; i < unknown.size() && i < 5; ++i)
      list += (i ? ", '" : "'") + unknown[i] + "'";
    if (unknown.size() > 5)
      list += ", ...";
    return std::to_string(unknown.size()) + " of its " +
           std::to_string(t.order.size()) +
           " tensors are not in the model (" + list +
           "): a table of another model?";
  }
  for (const ::tpu::npz::InputSpec &in : inputSpecs(module))
    if (!t.find(in.name))
      return "it has no entry for the model input '" + in.name + "'";
  return "";
}

std::string joinNames(const std::vector<std::string> &names) {
  return names.empty() ? std::string("none") : llvm::join(names, ", ");
}

std::string
missingRequired(const std::string &subcommand,
                const std::vector<std::pair<std::string, bool>> &required) {
  // "a", "a and b", "a, b and c".
  auto sentence = [](const std::vector<std::string> &names) {
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
      text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return text;
  };
  std::vector<std::string> all, missing;
  for (const auto &[name, given] : required) {
    all.push_back(name);
    if (!given)
      missing.push_back(name);
  }
  if (missing.empty())
    return "";
  return "missing " + sentence(missing) + " (tpuc " + subcommand + " needs " +
         sentence(all) + "; see tpuc " + subcommand + " --help)";
}

void setInputs(ModuleInterpreter &interpreter, const ::tpu::npz::Npz &inputs,
               const std::string &inputPath) {
  // The modules' inputs are f32 (tpuc transform imports every input so).
  std::vector<::tpu::npz::InputSpec> specs;
  for (const std::string &name : interpreter.inputNames())
    specs.push_back({name, interpreter.shape(name), ::tpu::npz::DType::F32});
  ::tpu::npz::checkInputs(inputs, specs, inputPath);
  for (const ::tpu::npz::InputSpec &s : specs)
    interpreter.setInput(s.name, inputs.find(s.name)->toFloat());
}

::tpu::npz::Npz setImageInput(ModuleInterpreter &interpreter,
                              mlir::ModuleOp module,
                              const std::string &imagePath) {
  std::vector<std::string> names = interpreter.inputNames();
  if (names.size() != 1)
    throw ::tpu::Error("'" + imagePath +
                       "' is an image: it feeds a model with one input, this "
                       "one has " +
                       std::to_string(names.size()) + " (" + joinNames(names) +
                       "); give an .npz");
  llvm::Expected<std::optional<Preprocess>> recorded =
      module::getPreprocess(module);
  if (!recorded)
    throw ::tpu::Error(llvm::toString(recorded.takeError()));
  Preprocess pre = recorded->value_or(Preprocess{});
  std::vector<int64_t> shape = interpreter.shape(names[0]);
  if (llvm::Error e = completePreprocess(pre, names[0], shape))
    throw ::tpu::Error(
        "'" + imagePath + "': " + llvm::toString(std::move(e)) +
        (recorded->has_value()
             ? ""
             : " (the module records no preprocessing, top.preprocess: an "
               "image goes in as mean 0, scale 1, rgb, nchw; tpuc transform "
               "--pixel-format/--channel-format/... records it)"));
  llvm::Expected<std::vector<float>> data =
      loadImageInput(imagePath, pre, shape);
  if (!data)
    throw ::tpu::Error(llvm::toString(data.takeError()));
  ::tpu::npz::Npz npz;
  npz.set(names[0], ::tpu::npz::Array::from<float>(shape, *data));
  interpreter.setInput(names[0], std::move(*data));
  return npz;
}

std::string loadCompileTables(mlir::ModuleOp module,
                              const std::string &modelName,
                              const std::string &qtablePath,
                              const std::string &caliPath,
                              std::optional<QuantTable> &qtable,
                              std::optional<CaliTable> &cali) {
  qtable.reset();
  cali.reset();
  if (!qtablePath.empty()) {
    llvm::Expected<QuantTable> parsed = readQuantTable(qtablePath);
    if (!parsed)
      return llvm::toString(parsed.takeError());
    qtable = std::move(*parsed);
    if (llvm::Error e = checkQuantTable(module, *qtable))
      return llvm::toString(std::move(e)) + " (" + modelName + ")";
  }
  if (caliPath.empty()) {
    cali = frontend::getModelQuantTable(module);
    return "";
  }
  llvm::Expected<CaliTable> parsed = readCaliTable(caliPath);
  if (!parsed)
    return llvm::toString(parsed.takeError());
  cali = std::move(*parsed);
  if (std::string error = checkCaliTable(module, *cali); !error.empty())
    return caliPath + ": " + error;
  return "";
}

} // namespace tpuc::tool
