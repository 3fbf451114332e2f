//===- Transform.cpp - tpuc transform: ONNX / TFLite model -> top ---------===//
//
//   tpuc transform model.onnx|model.tflite -o model_top.mlir [--input-shapes
//   [[1,3,224,224]]]
//       [--batch N] [--model-name N] [--weight-file F] [--no-opt]
//       [--mean M --scale S --pixel-format rgb|bgr|gray --resize-dims H,W
//        --keep-aspect-ratio --pad-type center|normal --pad-value V
//        --channel-format nchw|nhwc]
//       [--test-input in.npz|image.png --test-result out.npz [--dump-all]]
//   tpuc transform --list-ops [-o onnx-support.md]
//   tpuc transform --list-tflite-ops [-o tflite-support.md]
//
// A .tflite model (TFL3 identifier) goes through the TFLite frontend
// (tpuc/Frontend/TfliteImporter.h), which produces the same top module.
// Imports the model, runs shape inference and canonicalisation (unless
// --no-opt), records the image preprocessing options as the module
// attribute top.preprocess (tpuc/Support/Preprocess.h; checked against the
// model's one input), optionally interprets the module on a test input
// (an .npz, or an image preprocessed so, whose tensor is also written as
// <output stem>_in_f32.npz as TPU-MLIR does), then writes the weights npz,
// the .mlir and the test result. Every file is written to a temporary name
// in its directory and renamed, so an error never leaves a half-written
// file; nothing is written before the test input has run.
//
//===----------------------------------------------------------------------===//
#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Frontend/OnnxImporter.h"
#include "tpuc/Frontend/TfliteImporter.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Preprocess.h"
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

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

namespace cl = llvm::cl;

cl::SubCommand command("transform", "import an ONNX or TFLite model into the "
                                    "top dialect (.mlir + weight .npz)");
tpuc::cli::Category category("tpuc transform options");
tpuc::cli::Category preprocessCategory(
    "tpuc transform image preprocessing (TPU-MLIR's model_transform options)");

constexpr const char *kOverview =
    R"(tpuc transform: import an ONNX or TFLite model into the top dialect

  tpuc transform MODEL.onnx|MODEL.tflite -o model_top.mlir [options]
  tpuc transform --list-ops [-o onnx-support.md]
  tpuc transform --list-tflite-ops [-o tflite-support.md]

Writes model_top.mlir plus its weights (model_top_weights.npz next to it
unless --weight-file). A .tflite model (TFL3 identifier) goes through the
TFLite frontend, which produces the same top module.

Image preprocessing (TPU-MLIR's model_transform options) is recorded in the
module as top.preprocess for tpuc run -i image.png and calibration; the
model must have one 4-D input. y = (x - mean) * scale per channel, x the
pixel in 0..255. Without any of those options nothing is recorded (images
then go in as mean 0, scale 1, rgb).
)";

cl::opt<std::string> modelArg(cl::Positional,
                              cl::desc("MODEL.onnx|MODEL.tflite"),
                              cl::sub(command), cl::cat(category));
cl::opt<std::string> outputArg(
    "output",
    cl::desc("the .mlir to write (with --list-ops / --list-tflite-ops: the "
             "Markdown support matrix; default stdout)"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(category));
cl::alias outputShort("o", cl::desc("Alias for --output"),
                      cl::aliasopt(outputArg), cl::NotHidden,
                      cl::cat(category));
cl::opt<std::string> inputShapesArg(
    "input-shapes",
    cl::desc("shapes of the graph inputs, in graph order: "
             "[[1,3,224,224],[1,10]] (or [1,3,224,224] for one)"),
    cl::value_desc("SHAPES"), cl::sub(command), cl::cat(category));
cl::opt<std::string> batchArg(
    "batch",
    cl::desc("re-batch the module, imported for a batch of 1, for N: the "
             "inputs' first dimension and the Reshapes that spell the batch "
             "of 1 out ([1,1536] -> [N,1536]); an error if an op's result "
             "then does not have N first"),
    cl::value_desc("N"), cl::sub(command), cl::cat(category));
cl::opt<std::string>
    modelNameArg("model-name",
                 cl::desc("module name (default: the file name's stem)"),
                 cl::value_desc("NAME"), cl::sub(command), cl::cat(category));
cl::opt<std::string> weightFileArg(
    "weight-file",
    cl::desc("the weights .npz (default: <output stem>_weights.npz)"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(category));
cl::opt<bool> noOptArg("no-opt",
                       cl::desc("skip shape inference and canonicalisation"),
                       cl::sub(command), cl::cat(category));
cl::opt<std::string> testInputArg(
    "test-input",
    cl::desc(".npz with one array per input (ONNX names), or a .png/.jpg "
             "image for a one-input model (preprocessed as the "
             "preprocessing options say; the tensor is also written to "
             "<output stem>_in_f32.npz): interpret the module on it ..."),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(category));
cl::opt<std::string> testResultArg("test-result",
                                   cl::desc("... and write the outputs here"),
                                   cl::value_desc("FILE"), cl::sub(command),
                                   cl::cat(category));
cl::opt<bool> dumpAllArg(
    "dump-all",
    cl::desc("with --test-result: every tensor, not only the outputs"),
    cl::sub(command), cl::cat(category));
cl::opt<bool>
    listOpsArg("list-ops",
               cl::desc("print the ONNX operator support matrix (Markdown)"),
               cl::sub(command), cl::cat(category));
cl::opt<bool>
    listTfliteOpsArg("list-tflite-ops",
                     cl::desc("print the TFLite operator support matrix"),
                     cl::sub(command), cl::cat(category));

cl::opt<std::string> meanArg(
    "mean", cl::desc("per channel of the input, in its order (default 0)"),
    cl::value_desc("M[,M,M]"), cl::sub(command), cl::cat(preprocessCategory));
cl::opt<std::string> scaleArg("scale", cl::desc("per channel (default 1)"),
                              cl::value_desc("S[,S,S]"), cl::sub(command),
                              cl::cat(preprocessCategory));
cl::opt<std::string> pixelFormatArg(
    "pixel-format",
    cl::desc("rgb, bgr or gray: the input's channels (default rgb; "
             "TPU-MLIR's default is bgr)"),
    cl::value_desc("rgb|bgr|gray"), cl::sub(command),
    cl::cat(preprocessCategory));
cl::opt<std::string> channelFormatArg("channel-format",
                                      cl::desc("nchw (default) or nhwc"),
                                      cl::value_desc("nchw|nhwc"),
                                      cl::sub(command),
                                      cl::cat(preprocessCategory));
cl::opt<std::string> resizeDimsArg(
    "resize-dims",
    cl::desc("resize the image to H x W, then centre-crop to the input's H, "
             "W (default: the input's H, W)"),
    cl::value_desc("H,W"), cl::sub(command), cl::cat(preprocessCategory));
cl::opt<bool> keepAspectRatioArg(
    "keep-aspect-ratio",
    cl::desc("resize to fit in the resize dims, pad the rest"),
    cl::sub(command), cl::cat(preprocessCategory));
cl::opt<std::string> padTypeArg(
    "pad-type",
    cl::desc("center (default, TPU-MLIR's) or normal (bottom/right)"),
    cl::value_desc("center|normal"), cl::sub(command),
    cl::cat(preprocessCategory));
cl::opt<std::string>
    padValueArg("pad-value", cl::desc("the padding's pixel value (default 0)"),
                cl::value_desc("V"), cl::sub(command),
                cl::cat(preprocessCategory));

struct TransformOptions {
  std::string model;
  std::string output;
  std::string inputShapes;
  std::string batch;
  std::string modelName;
  std::string weightFile;
  std::string testInput;
  std::string testResult;
  bool noOpt = false;
  bool dumpAll = false;
  bool listOps = false;
  bool listTfliteOps = false;
  // Image preprocessing (recorded when any of them is given).
  std::string mean;
  std::string scale;
  std::string pixelFormat;
  std::string channelFormat;
  std::string resizeDims;
  std::string padType;
  std::string padValue;
  bool keepAspectRatio = false;

  bool hasPreprocess() const {
    return !mean.empty() || !scale.empty() || !pixelFormat.empty() ||
           !channelFormat.empty() || !resizeDims.empty() || !padType.empty() ||
           !padValue.empty() || keepAspectRatio;
  }
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "tpuc transform: error: " << message << "\n";
  return 1;
}

/// The parsed options, checked; returns -1 to go on, else the exit status.
int readOptions(TransformOptions &opts) {
  opts.model = modelArg;
  opts.output = outputArg;
  opts.inputShapes = inputShapesArg;
  opts.batch = batchArg;
  opts.modelName = modelNameArg;
  opts.weightFile = weightFileArg;
  opts.testInput = testInputArg;
  opts.testResult = testResultArg;
  opts.noOpt = noOptArg;
  opts.dumpAll = dumpAllArg;
  opts.listOps = listOpsArg;
  opts.listTfliteOps = listTfliteOpsArg;
  opts.mean = meanArg;
  opts.scale = scaleArg;
  opts.pixelFormat = pixelFormatArg;
  opts.channelFormat = channelFormatArg;
  opts.resizeDims = resizeDimsArg;
  opts.padType = padTypeArg;
  opts.padValue = padValueArg;
  opts.keepAspectRatio = keepAspectRatioArg;
  if (opts.listOps || opts.listTfliteOps)
    return -1;
  if (std::string e = tpuc::tool::missingRequired(
          "transform",
          {{"a model", !opts.model.empty()}, {"-o", !opts.output.empty()}});
      !e.empty())
    return fail(e);
  if (opts.testInput.empty() != opts.testResult.empty())
    return fail("--test-input and --test-result go together");
  if (opts.dumpAll && opts.testResult.empty())
    return fail("--dump-all needs --test-input and --test-result");
  if (!opts.batch.empty() && opts.noOpt)
    return fail("--batch needs shape inference: it excludes --no-opt");
  if (!opts.batch.empty()) {
    int64_t n = 0;
    if (llvm::StringRef(opts.batch).getAsInteger(10, n) || n < 1)
      return fail("--batch '" + opts.batch + "': expected a positive integer");
  }
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

/// The comma-separated numbers of \p option (e.g. "--mean 123.7,116.3,103.5");
/// throws tpu::Error naming the option.
std::vector<double> parseNumbers(llvm::StringRef option,
                                 llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  std::vector<double> values;
  for (llvm::StringRef p : parts) {
    double v;
    if (llvm::to_float(p.trim(), v))
      values.push_back(v);
    else
      throw tpu::Error(option.str() + " '" + text.str() + "': '" + p.str() +
                       "' is not a number (expected e.g. 123.7,116.3,103.5)");
  }
  return values;
}

/// The preprocessing options, checked against the module's one input
/// (tpuc::completePreprocess); throws tpu::Error naming the option and the
/// input.
tpuc::Preprocess parsePreprocess(const TransformOptions &opts,
                                 mlir::ModuleOp module) {
  tpuc::Preprocess pre;
  if (!opts.mean.empty())
    pre.mean = parseNumbers("--mean", opts.mean);
  if (!opts.scale.empty())
    pre.scale = parseNumbers("--scale", opts.scale);
  if (!opts.pixelFormat.empty()) {
    std::optional<tpuc::PixelFormat> f =
        tpuc::parsePixelFormat(opts.pixelFormat);
    if (!f)
      throw tpu::Error("--pixel-format '" + opts.pixelFormat +
                       "': expected rgb, bgr or gray");
    pre.pixelFormat = *f;
  }
  if (!opts.channelFormat.empty()) {
    std::optional<tpuc::ChannelFormat> f =
        tpuc::parseChannelFormat(opts.channelFormat);
    if (!f)
      throw tpu::Error("--channel-format '" + opts.channelFormat +
                       "': expected nchw or nhwc");
    pre.channelFormat = *f;
  }
  if (!opts.padType.empty()) {
    std::optional<tpuc::PadType> t = tpuc::parsePadType(opts.padType);
    if (!t)
      throw tpu::Error("--pad-type '" + opts.padType +
                       "': expected center or normal");
    pre.padType = *t;
  }
  if (!opts.padValue.empty() && !llvm::to_integer(opts.padValue, pre.padValue))
    throw tpu::Error("--pad-value '" + opts.padValue +
                     "' is not an integer");
  if (!opts.resizeDims.empty()) {
    for (double d : parseNumbers("--resize-dims", opts.resizeDims)) {
      if (d != std::floor(d) || d < 1 || d > double(INT32_MAX))
        throw tpu::Error("--resize-dims '" + opts.resizeDims +
                         "': expected two positive integers H,W");
      pre.resizeDims.push_back(int64_t(d));
    }
  }
  pre.keepAspectRatio = opts.keepAspectRatio;

  std::vector<tpu::npz::InputSpec> inputs = tpuc::tool::inputSpecs(module);
  if (inputs.size() != 1) {
    std::vector<std::string> names;
    for (const tpu::npz::InputSpec &s : inputs)
      names.push_back(s.name);
    throw tpu::Error("image preprocessing (--mean, --scale, --pixel-format, "
                     "...) needs a model with one input; '" +
                     opts.model + "' has " + std::to_string(inputs.size()) +
                     " (" + tpuc::tool::joinNames(names) + ")");
  }
  if (llvm::Error e =
          tpuc::completePreprocess(pre, inputs[0].name, inputs[0].shape))
    throw tpu::Error("'" + opts.model + "': " + llvm::toString(std::move(e)));
  return pre;
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
                           std::string &diagnostics,
                           tpu::npz::Npz &imageInput) {
  tpuc::ModuleInterpreter interpreter(module);
  if (tpuc::isImagePath(inputPath)) {
    imageInput = tpuc::tool::setImageInput(interpreter, module, inputPath);
  } else {
    tpu::npz::Npz inputs = tpu::npz::readNpz(inputPath);
    tpuc::tool::setInputs(interpreter, inputs, inputPath);
  }
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

static int runTransform() {
  TransformOptions opts;
  if (int status = readOptions(opts); status >= 0)
    return status;

  if (opts.listOps || opts.listTfliteOps) {
    std::string md = opts.listOps
                         ? tpuc::frontend::onnxSupportMatrixMarkdown()
                         : tpuc::frontend::tfliteSupportMatrixMarkdown();
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
  // Named as the options are, so that a clash says which two.
  std::vector<tpu::isa::bmodel::NamedPath> outputs = {
      {"-o", opts.output}, {"the weight file", weightsPath}};
  if (!opts.testResult.empty())
    outputs.push_back({"--test-result", opts.testResult});
  // An image test input: its tensor as <output stem>_in_f32.npz (TPU-MLIR's
  // <model>_in_f32.npz), for tpuc deploy --test-input and tpusim.
  std::string imageInputPath;
  if (!opts.testInput.empty() && tpuc::isImagePath(opts.testInput)) {
    llvm::SmallString<256> p(opts.output);
    if (llvm::sys::path::extension(p) == ".mlir")
      llvm::sys::path::replace_extension(p, "");
    imageInputPath = (p + "_in_f32.npz").str();
    outputs.push_back({"the image's tensor", imageInputPath});
  }
  if (std::string error = tpu::isa::bmodel::checkOutputPaths(
          outputs,
          {{"the model", opts.model}, {"--test-input", opts.testInput}});
      !error.empty())
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
      tpuc::frontend::isTfliteFile(opts.model)
          ? tpuc::frontend::importTfliteFile(context, opts.model, importOptions)
          : tpuc::frontend::importOnnxFile(context, opts.model, importOptions);
  mlir::ModuleOp module = *imported.module;

  if (!opts.noOpt) {
    mlir::PassManager pm(&context);
    pm.addPass(tpuc::top::createShapeInferPass());
    pm.addPass(mlir::createCanonicalizerPass());
    if (mlir::failed(pm.run(module)))
      return fail("optimising the imported module failed: " + diagnostics);
  }
  if (!opts.batch.empty()) {
    int64_t n = std::stoll(opts.batch);
    std::string why;
    if (mlir::failed(tpuc::top::rebatch(module, n, why)))
      return fail(opts.model + ": --batch " + opts.batch + ": " + why +
                  (diagnostics.empty() ? "" : " (" + diagnostics + ")") +
                  "; nothing written");
  }

  if (opts.hasPreprocess())
    tpuc::module::setPreprocess(module, parsePreprocess(opts, module));

  tpu::npz::Npz testResult, imageInput;
  if (!opts.testInput.empty()) {
    tpuc::tool::checkFitsHostMemory(module, opts.model);
    testResult = runTestInput(module, imported, opts.testInput, opts.dumpAll,
                              diagnostics, imageInput);
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
  if (!imageInputPath.empty())
    tpu::npz::writeNpz(imageInputPath, imageInput, /*compress=*/false);
  tpuc::getWeightRegistry(&context).release(module);
  // What was written, one line per file (as tpuc deploy does).
  llvm::outs() << "tpuc transform: " << opts.output << "\n"
               << "tpuc transform: " << weightsPath << "\n";
  if (!opts.testResult.empty())
    llvm::outs() << "tpuc transform: " << opts.testResult << "\n";
  if (!imageInputPath.empty())
    llvm::outs() << "tpuc transform: " << imageInputPath << "\n";
  return 0;
}

const tpuc::cli::Subcommand tpuc::cli::transform{command, kOverview,
                                                 runTransform};
