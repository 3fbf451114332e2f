//===- Transform.cpp - tpuc transform: ONNX model -> top dialect ----------===//
//
//   tpuc transform model.onnx -o model_top.mlir [--input-shapes
//   [[1,3,224,224]]]
//       [--model-name N] [--weight-file F] [--no-opt]
//       [--test-input in.npz --test-result out.npz [--dump-all]]
//   tpuc transform --list-ops [-o onnx-support.md]
//
// Imports the model, runs shape inference and canonicalisation (unless
// --no-opt), optionally interprets the module on a test input, then writes
// the weights npz, the .mlir and the test result. Every file is written to a
// temporary name in its directory and renamed, so an error never leaves a
// half-written file; nothing is written before the test input has run.
//
//===----------------------------------------------------------------------===//
#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Frontend/OnnxImporter.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Npz.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage =
    "usage: tpuc transform model.onnx -o model_top.mlir [options]\n"
    "       tpuc transform --list-ops [-o onnx-support.md]\n"
    "\n"
    "Imports an ONNX model into the top dialect: model_top.mlir plus its\n"
    "weights (model_top_weights.npz next to it unless --weight-file).\n"
    "  -o, --output FILE       the .mlir to write\n"
    "  --input-shapes SHAPES   shapes of the graph inputs, in graph order:\n"
    "                          [[1,3,224,224],[1,10]] (or [1,3,224,224] for "
    "one)\n"
    "  --model-name NAME       module name (default: the file name's stem)\n"
    "  --weight-file FILE      the weights .npz (default: <output stem>"
    "_weights.npz)\n"
    "  --no-opt                skip shape inference and canonicalisation\n"
    "  --test-input FILE       .npz with one array per input (ONNX names):\n"
    "                          interpret the module on it ...\n"
    "  --test-result FILE      ... and write the outputs here\n"
    "  --dump-all              with --test-result: every tensor, not only "
    "the outputs\n"
    "  --list-ops              print the ONNX operator support matrix "
    "(Markdown)\n";

struct TransformOptions {
  std::string model;
  std::string output;
  std::string inputShapes;
  std::string modelName;
  std::string weightFile;
  std::string testInput;
  std::string testResult;
  bool noOpt = false;
  bool dumpAll = false;
  bool listOps = false;
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "tpuc transform: error: " << message << "\n";
  return 1;
}

/// Parses argv; returns -1 to go on, else the exit status.
int parseArgs(int argc, char **argv, TransformOptions &opts) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string *target = nullptr;
    if (a == "-h" || a == "--help") {
      llvm::outs() << kUsage;
      return 0;
    }
    if (a == "-o" || a == "--output")
      target = &opts.output;
    else if (a == "--input-shapes")
      target = &opts.inputShapes;
    else if (a == "--model-name")
      target = &opts.modelName;
    else if (a == "--weight-file")
      target = &opts.weightFile;
    else if (a == "--test-input")
      target = &opts.testInput;
    else if (a == "--test-result")
      target = &opts.testResult;
    else if (a == "--no-opt")
      opts.noOpt = true;
    else if (a == "--dump-all")
      opts.dumpAll = true;
    else if (a == "--list-ops")
      opts.listOps = true;
    else if (a.starts_with("-") && a.size() > 1)
      return fail("unknown option '" + a + "'\n" + kUsage);
    else if (opts.model.empty())
      opts.model = a.str();
    else
      return fail("unexpected argument '" + a + "'");
    if (target && !value(*target))
      return fail(a + " needs a value");
  }
  if (opts.listOps)
    return -1;
  if (opts.model.empty() || opts.output.empty()) {
    llvm::errs() << kUsage;
    return fail("a model and -o are required");
  }
  if (opts.testInput.empty() != opts.testResult.empty())
    return fail("--test-input and --test-result go together");
  if (opts.dumpAll && opts.testResult.empty())
    return fail("--dump-all needs --test-input and --test-result");
  return -1;
}

/// Parses "[[1,3,224,224],[1,10]]" or "[1,3,224,224]".
std::vector<std::vector<int64_t>> parseShapes(llvm::StringRef text) {
  std::string s;
  for (char c : text)
    if (!llvm::isSpace(c))
      s += c;
  auto bad = [&](const std::string &why) {
    return tpu::Error("--input-shapes '" + text.str() + "': " + why +
                      " (expected e.g. [[1,3,224,224],[1,10]])");
  };
  llvm::StringRef r(s);
  bool nested = r.starts_with("[[");
  if (nested) {
    if (!r.consume_front("[") || !r.consume_back("]"))
      throw bad("unbalanced brackets");
  }
  std::vector<std::vector<int64_t>> shapes;
  while (!r.empty()) {
    if (!r.consume_front("["))
      throw bad("a shape must start with '['");
    size_t close = r.find(']');
    if (close == llvm::StringRef::npos)
      throw bad("a shape is not closed");
    llvm::StringRef body = r.take_front(close);
    r = r.drop_front(close + 1);
    std::vector<int64_t> shape;
    if (!body.empty()) {
      llvm::SmallVector<llvm::StringRef> parts;
      body.split(parts, ',');
      for (llvm::StringRef p : parts) {
        int64_t v;
        if (p.getAsInteger(10, v))
          throw bad("'" + p.str() + "' is not an integer");
        shape.push_back(v);
      }
    }
    shapes.push_back(shape);
    if (!r.empty() && !r.consume_front(","))
      throw bad("shapes must be separated by ','");
  }
  if (!nested && shapes.size() != 1)
    throw bad("several shapes need the nested form");
  return shapes;
}

/// Writes \p text to \p path (tpu::isa::bmodel::writeFileAtomically: no
/// partial file, nothing left behind when killed).
void writeFileAtomically(const std::string &path, llvm::StringRef text) {
  tpu::isa::bmodel::writeFileAtomically(
      path, std::vector<uint8_t>(text.begin(), text.end()));
}

/// Runs the module on the arrays of \p inputPath; throws tpu::Error naming
/// a missing, unknown or misshapen input.
tpu::npz::Npz runTestInput(mlir::ModuleOp module,
                           const tpuc::frontend::OnnxImportResult &imported,
                           const std::string &inputPath, bool dumpAll,
                           std::string &diagnostics) {
  tpu::npz::Npz inputs = tpu::npz::readNpz(inputPath);
  tpuc::ModuleInterpreter interpreter(module);
  tpuc::tool::setInputs(interpreter, inputs, inputPath);
  if (mlir::failed(interpreter.run(/*keepAll=*/dumpAll)))
    throw tpu::Error("interpreting the module on " + inputPath +
                     " failed: " + diagnostics);

  tpu::npz::Npz outputs;
  auto add = [&](const std::string &name, const std::string &as) {
    if (outputs.contains(as))
      return;
    outputs.set(as, tpu::npz::Array::from<float>(interpreter.shape(name),
                                                 interpreter.tensor(name)));
  };
  if (dumpAll)
    for (const std::string &name : interpreter.tensorNames())
      add(name, name);
  std::vector<std::string> outNames = interpreter.outputNames();
  for (size_t k = 0; k < outNames.size(); ++k) {
    add(outNames[k], outNames[k]);
    // Also under the ONNX output name where the returned value is an op of
    // another name (an output behind an Identity, say).
    if (k < imported.outputNames.size())
      add(outNames[k], imported.outputNames[k]);
  }
  return outputs;
}

} // namespace

int runTransform(int argc, char **argv) {
  TransformOptions opts;
  if (int status = parseArgs(argc, argv, opts); status >= 0)
    return status;

  if (opts.listOps) {
    std::string md = tpuc::frontend::onnxSupportMatrixMarkdown();
    if (opts.output.empty())
      llvm::outs() << md;
    else
      writeFileAtomically(opts.output, md);
    return 0;
  }

  tpuc::frontend::OnnxImportOptions importOptions;
  if (!opts.inputShapes.empty())
    importOptions.inputShapes = parseShapes(opts.inputShapes);
  importOptions.modelName = opts.modelName.empty()
                                ? llvm::sys::path::stem(opts.model).str()
                                : opts.modelName;

  // Weights: <output without .mlir>_weights.npz unless given; the module
  // refers to them relative to the .mlir's directory.
  std::string weightsPath = opts.weightFile;
  if (weightsPath.empty()) {
    llvm::SmallString<256> p(opts.output);
    if (llvm::sys::path::extension(p) == ".mlir")
      llvm::sys::path::replace_extension(p, "");
    weightsPath = (p + "_weights.npz").str();
  }
  std::vector<std::string> outputs = {opts.output, weightsPath};
  if (!opts.testResult.empty())
    outputs.push_back(opts.testResult);
  if (std::string error = tpuc::tool::checkOutputPaths(outputs); !error.empty())
    return fail(error + "; nothing written");
  llvm::SmallString<256> outDir(opts.output), weightsDir(weightsPath);
  llvm::sys::path::remove_filename(outDir);
  llvm::sys::path::remove_filename(weightsDir);
  std::string weightsAttr;
  if (outDir == weightsDir) {
    weightsAttr = llvm::sys::path::filename(weightsPath).str();
  } else {
    llvm::SmallString<256> abs(weightsPath);
    llvm::sys::fs::make_absolute(abs);
    weightsAttr = abs.str().str();
  }

  std::unique_ptr<mlir::MLIRContext> ownedContext =
      tpuc::tool::createContext();
  mlir::MLIRContext &context = *ownedContext;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (!diagnostics.empty())
      diagnostics += "; ";
    diagnostics += d.str();
    return mlir::success();
  });

  tpuc::frontend::OnnxImportResult imported =
      tpuc::frontend::importOnnxFile(context, opts.model, importOptions);
  mlir::ModuleOp module = *imported.module;

  if (!opts.noOpt) {
    mlir::PassManager pm(&context);
    pm.addPass(tpuc::top::createShapeInferPass());
    pm.addPass(mlir::createCanonicalizerPass());
    if (mlir::failed(pm.run(module)))
      return fail("optimising the imported module failed: " + diagnostics);
  }

  tpu::npz::Npz testResult;
  if (!opts.testInput.empty()) {
    tpuc::tool::checkFitsHostMemory(module, opts.model);
    testResult = runTestInput(module, imported, opts.testInput, opts.dumpAll,
                              diagnostics);
  }

  if (mlir::failed(tpuc::saveWeights(module, weightsPath, weightsAttr)))
    return fail("cannot write the weights to '" + weightsPath +
                "': " + diagnostics);
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  os << "\n";
  os.flush();
  writeFileAtomically(opts.output, text);
  if (!opts.testResult.empty())
    tpu::npz::writeNpz(opts.testResult, testResult, /*compress=*/false);
  tpuc::getWeightRegistry(&context).release(module);
  // What was written, one line per file (as tpuc deploy does).
  llvm::outs() << "tpuc transform: " << opts.output << "\n"
               << "tpuc transform: " << weightsPath << "\n";
  if (!opts.testResult.empty())
    llvm::outs() << "tpuc transform: " << opts.testResult << "\n";
  return 0;
}
