//===- QtableMixed.cpp - tpuc qtable --calibration-table: mixed precision -===//
//
//   tpuc qtable model_top.mlir --calibration-table T --dataset DIR
//       --expected-cos C -o model.qtable [--input-num N]
//       [--max-float-layers L] [--fp-type F16|BF16|F32]
//       [--int8-fallback F32|F16|BF16] [--threads T]
//
// TPU-MLIR's run_qtable: the quantize table that keeps in a float type the
// fewest INT8 layers needed for the INT8 module to reach cosine C against
// the top (f32) module. Every cosine is Int8Search.h's: the module lowered
// in memory as `tpuc deploy --quantize INT8 --calibration-table T
// --int8-fallback F --quantize-table Q` lowers it, run by the tpu
// interpreter on the first N samples of DIR (default 10; the dataset rules
// of tpuc calibrate), the cosine of every model output against the top
// interpreter's averaged over the outputs and the samples (an output of
// one value, a detector's score, over all samples stacked).
//
//  (a) The whole network in INT8. If it reaches C, the table holds only
//      comments (nothing to keep in float), and the tool says so.
//  (b) Sensitivity: each op an INT8 form lowers (Int8Options::int8Ops:
//      conv, pooling, add / sub; the ops without one already run in the
//      fallback mode and data movement only carries its input's type) is
//      lowered alone in --fp-type (a quantize table of one line) and the
//      network cosine measured; its gain is that cosine minus (a)'s.
//  (c) Greedy: the ops sorted by gain (largest first, program order on
//      ties) join the float set one by one, the cosine of the accumulated
//      table measured after each (gains do not add up), until it reaches C
//      or the set holds --max-float-layers ops (default: no limit).
//  (d) The quantize table (`op_name MODE` lines in program order, each with
//      a comment giving its gain) and `<stem>_loss.txt` beside it (stem: the
//      -o path without its extension): every candidate in the greedy order
//      with its type, the cosine with only it in float, its gain, and the
//      cosine of the accumulated table where it was measured.
//
// Exit 0 when C is reached. When it is not within --max-float-layers (or
// with every candidate in float), both files are still written, the table
// being the prefix of the greedy order with the best cosine (marked "target
// NOT reached" in its header), and the tool exits 2 with a message giving
// the best cosine: the table is the best this search found, and the loss
// table shows where the error comes from. Errors in the inputs (a table of
// another model, a missing dataset, --expected-cos outside (0, 1], ...)
// exit 1 before anything is written.
//
//===----------------------------------------------------------------------===//
#include "Int8Search.h"
#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Calibration/Dataset.h"
#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/CaliTable.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Preprocess.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Npz.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace cal = tpuc::calibration;

namespace {

constexpr const char *kTool = "tpuc qtable";

/// The exit status when the target is not reached (the files are written).
constexpr int kNotReached = 2;

namespace cl = llvm::cl;
namespace qt = tpuc::cli::qtableShared;

cl::opt<std::string> datasetArg(
    "dataset", cl::desc("samples, as for tpuc calibrate (.npz or images)"),
    cl::value_desc("DIR"), cl::sub(qt::command()), cl::cat(qt::mixedCategory));
cl::opt<std::string> inputNumArg(
    "input-num", cl::desc("samples to use (the first N; default 10)"),
    cl::value_desc("N"), cl::sub(qt::command()), cl::cat(qt::mixedCategory));
cl::opt<std::string> expectedCosArg(
    "expected-cos",
    cl::desc("target mean cosine over outputs and samples, in (0, 1] (an "
             "output of one value per sample: over all samples stacked)"),
    cl::value_desc("C"), cl::sub(qt::command()), cl::cat(qt::mixedCategory));
cl::opt<std::string>
    maxFloatLayersArg("max-float-layers",
                      cl::desc("at most L layers in float (default: no limit)"),
                      cl::value_desc("L"), cl::sub(qt::command()),
                      cl::cat(qt::mixedCategory));
cl::opt<std::string>
    fpTypeArg("fp-type",
              cl::desc("the float type of those layers (default F16)"),
              cl::value_desc("F16|BF16|F32"), cl::init("F16"),
              cl::sub(qt::command()), cl::cat(qt::mixedCategory));
cl::opt<std::string> int8FallbackArg(
    "int8-fallback",
    cl::desc("the mode of the ops without an INT8 form (default F32; give "
             "deploy the same)"),
    cl::value_desc("F32|F16|BF16"), cl::init("F32"), cl::sub(qt::command()),
    cl::cat(qt::mixedCategory));

struct MixedOptions {
  std::string model, cali, dataset, output;
  std::string fpType = "F16", fallback = "F32";
  size_t inputNum = 10;
  double expectedCos = 0;
  bool haveExpectedCos = false;
  size_t maxFloatLayers = 0; ///< 0: no limit
  unsigned threads = 0;
};

int fail(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 1;
}

/// The parsed options, checked; returns -1 to go on, else the exit status.
int readOptions(MixedOptions &opts) {
  opts.model = qt::model;
  opts.cali = qt::calibrationTable;
  opts.dataset = datasetArg;
  opts.output = qt::output;
  opts.fpType = fpTypeArg;
  opts.fallback = int8FallbackArg;
  if (inputNumArg.getNumOccurrences() &&
      (!llvm::to_integer(inputNumArg.getValue(), opts.inputNum) ||
       opts.inputNum == 0))
    return fail("--input-num needs a positive integer, got '" + inputNumArg +
                "'");
  opts.haveExpectedCos = expectedCosArg.getNumOccurrences() != 0;
  if (opts.haveExpectedCos &&
      (llvm::StringRef(expectedCosArg).getAsDouble(opts.expectedCos) ||
       !(opts.expectedCos > 0 && opts.expectedCos <= 1)))
    return fail("--expected-cos needs a cosine in (0, 1], got '" +
                expectedCosArg + "'");
  if (maxFloatLayersArg.getNumOccurrences() &&
      (!llvm::to_integer(maxFloatLayersArg.getValue(), opts.maxFloatLayers) ||
       opts.maxFloatLayers == 0))
    return fail("--max-float-layers needs a positive integer, got '" +
                maxFloatLayersArg + "'");
  if (qt::threads.getNumOccurrences() &&
      (!llvm::to_integer(qt::threads.getValue(), opts.threads) ||
       opts.threads == 0))
    return fail("--threads needs a positive integer, got '" + qt::threads +
                "'");
  if (opts.model.empty() || opts.cali.empty() || opts.dataset.empty() ||
      opts.output.empty() || !opts.haveExpectedCos)
    return fail("a model, --calibration-table, --dataset, --expected-cos and "
                "-o are required (see tpuc qtable --help)");
  return -1;
}

std::string cosText(double c) { return llvm::formatv("{0:f8}", c).str(); }
std::string gainText(double g) { return llvm::formatv("{0:e3}", g).str(); }
/// A number as the user wrote it (0.99999, 1).
std::string numText(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

/// One candidate layer.
struct Layer {
  std::string name, type;
  size_t order = 0;     ///< program order
  double cosine = 0;    ///< network cosine with only this op in float
  double gain = 0;      ///< cosine - the all-INT8 cosine
  double accumulated = std::nan(""); ///< cosine of the greedy prefix ending
                                     ///< here (NaN: not measured)
};

} // namespace

static int runQtableMixed() {
  MixedOptions opts;
  if (int status = readOptions(opts); status >= 0)
    return status;
  std::optional<tpuc::QuantMode> fpType = tpuc::parseQuantMode(opts.fpType);
  if (!fpType || *fpType == tpuc::QuantMode::INT8)
    return fail("--fp-type '" + opts.fpType + "' is not F16, BF16 or F32");
  std::optional<tpuc::QuantMode> fallback =
      tpuc::parseQuantMode(opts.fallback);
  if (!fallback || *fallback == tpuc::QuantMode::INT8)
    return fail("--int8-fallback '" + opts.fallback +
                "' is not F32, F16 or BF16");
  llvm::StringRef fpName = tpuc::quantModeName(*fpType);
  llvm::StringRef fallbackName = tpuc::quantModeName(*fallback);

  llvm::SmallString<256> lossPath(opts.output);
  llvm::sys::path::replace_extension(lossPath, "");
  lossPath += "_loss.txt";
  if (std::string error =
          tpuc::tool::checkOutputPaths({opts.output, lossPath.str().str()});
      !error.empty())
    return fail(error + "; nothing written");

  llvm::Expected<tpuc::CaliTable> cali = tpuc::readCaliTable(opts.cali);
  if (!cali)
    return fail(llvm::toString(cali.takeError()));
  cal::DatasetFiles dataset = cal::listDataset(opts.dataset, opts.inputNum);
  if (dataset.available < opts.inputNum)
    llvm::errs() << kTool << ": warning: --input-num " << opts.inputNum
                 << " but '" << opts.dataset << "' holds "
                 << dataset.available << " sample"
                 << (dataset.available == 1 ? "" : "s") << "; using "
                 << dataset.available << "\n";

  std::unique_ptr<mlir::MLIRContext> context = tpuc::tool::createContext();
  tpuc::tool::ParsedModule parsed;
  if (std::string error = tpuc::tool::loadModule(*context, opts.model,
                                                 /*requireTop=*/true, parsed);
      !error.empty())
    return fail(error);
  mlir::ModuleOp module = *parsed.module;
  mlir::func::FuncOp func = tpuc::module::getMainFunc(module);
  if (!func || func.isExternal())
    return fail("'" + opts.model + "' has no main function");
  if (std::string error = tpuc::tool::checkCaliTable(module, *cali);
      !error.empty())
    return fail(opts.cali + ": " + error + " (" + opts.model + ")");
  tpuc::tool::checkFitsHostMemory(module, opts.model);

  // The samples, through the dataset's decoders.
  llvm::Expected<std::optional<tpuc::Preprocess>> recorded =
      tpuc::module::getPreprocess(module);
  if (!recorded)
    return fail(opts.model + ": " + llvm::toString(recorded.takeError()));
  std::vector<tpu::npz::InputSpec> specs = tpuc::tool::inputSpecs(module);
  std::vector<cal::SampleInputs> samples;
  for (const std::string &file : dataset.files)
    samples.push_back(cal::decoderFor(
        file, recorded->value_or(tpuc::Preprocess{}))(file, specs));
  const size_t numSamples = samples.size();

  // Op name -> type and program order.
  llvm::StringMap<std::pair<std::string, size_t>> opInfo;
  size_t position = 0;
  for (mlir::Operation &op : func.getBody().front())
    if (auto name = op.getAttrOfType<mlir::StringAttr>("name"))
      opInfo.try_emplace(name.getValue(), op.getName().getStringRef().str(),
                         position++);

  tpuc::tool::Int8Evaluator evaluator(module, std::move(samples), opts.threads);
  auto measure = [&](const std::vector<std::string> &floatLayers) {
    tpuc::QuantTable q;
    q.path = "(search)";
    for (const std::string &name : floatLayers) {
      q.entries[name] = {*fpType, unsigned(q.order.size() + 1)};
      q.order.push_back(name);
    }
    return evaluator.evaluate(*cali, floatLayers.empty() ? nullptr : &q,
                              *fallback);
  };
  size_t numStacked = 0;
  for (size_t k = 0; k < evaluator.outputNames().size(); ++k)
    numStacked += evaluator.isStacked(k);
  std::string over = " (mean over " +
                     std::to_string(evaluator.outputNames().size()) +
                     " output(s) and " + std::to_string(numSamples) +
                     " sample(s)";
  if (numStacked)
    over += "; " + std::to_string(numStacked) +
            " single-value output(s) as one cosine over the samples stacked";
  over += ")";

  // (a) The whole network in INT8.
  tpuc::tool::Int8Evaluator::Result all = measure({});
  llvm::outs() << kTool << ": all INT8 (fallback " << fallbackName
               << "): cosine " << cosText(all.cosine) << over << "\n";

  std::string command = "tpuc qtable " + opts.model + " --calibration-table " +
                        opts.cali + " --dataset " + opts.dataset +
                        " --input-num " + std::to_string(opts.inputNum) +
                        " --expected-cos " +
                        numText(opts.expectedCos) +
                        " --fp-type " + fpName.str() + " --int8-fallback " +
                        fallbackName.str() +
                        (opts.maxFloatLayers
                             ? " --max-float-layers " +
                                   std::to_string(opts.maxFloatLayers)
                             : std::string());
  auto header = [&](llvm::raw_ostream &os) {
    os << "# Quantize table for tpuc deploy --quantize INT8 "
          "--calibration-table "
       << opts.cali << " --int8-fallback " << fallbackName
       << " --quantize-table <this file>\n"
       << "# written by: " << command << "\n"
       << "# cosine to f32" << over << ": all INT8 " << cosText(all.cosine)
       << "\n";
  };

  std::vector<Layer> layers;
  std::vector<std::string> chosen;
  double finalCos = all.cosine;
  bool reached = all.cosine >= opts.expectedCos;
  if (!reached) {
    // (b) Sensitivity of every INT8 layer.
    for (const std::string &name : all.int8Ops) {
      Layer layer;
      layer.name = name;
      auto it = opInfo.find(name);
      layer.type = it == opInfo.end() ? "?" : it->second.first;
      layer.order = it == opInfo.end() ? position : it->second.second;
      layer.cosine = measure({name}).cosine;
      layer.gain = layer.cosine - all.cosine;
      llvm::outs() << kTool << ": " << name << " (" << layer.type << ") in "
                   << fpName << ": cosine " << cosText(layer.cosine)
                   << " (gain " << gainText(layer.gain) << ")\n";
      layers.push_back(std::move(layer));
    }
    std::stable_sort(layers.begin(), layers.end(),
                     [](const Layer &a, const Layer &b) {
                       if (a.gain != b.gain)
                         return a.gain > b.gain;
                       return a.order < b.order;
                     });
    // (c) Greedy, keeping the best prefix.
    std::vector<std::string> prefix;
    size_t bestLength = 0;
    double best = all.cosine;
    for (Layer &layer : layers) {
      if (opts.maxFloatLayers && prefix.size() == opts.maxFloatLayers)
        break;
      prefix.push_back(layer.name);
      layer.accumulated = measure(prefix).cosine;
      llvm::outs() << kTool << ": + " << layer.name << ": " << prefix.size()
                   << " layer(s) in " << fpName << ", cosine "
                   << cosText(layer.accumulated) << "\n";
      if (layer.accumulated > best) {
        best = layer.accumulated;
        bestLength = prefix.size();
      }
      if (layer.accumulated >= opts.expectedCos) {
        reached = true;
        break;
      }
    }
    chosen.assign(prefix.begin(), prefix.begin() + bestLength);
    finalCos = best;
  }

  // (d) The quantize table, in program order, and the loss table.
  std::vector<const Layer *> listed;
  for (const Layer &layer : layers)
    if (llvm::is_contained(chosen, layer.name))
      listed.push_back(&layer);
  std::sort(listed.begin(), listed.end(), [](const Layer *a, const Layer *b) {
    return a->order < b->order;
  });
  size_t width = 0;
  for (const Layer *layer : listed)
    width = std::max(width, layer->name.size());
  std::string text;
  llvm::raw_string_ostream os(text);
  header(os);
  if (all.cosine >= opts.expectedCos)
    os << "# the whole network in INT8 reaches --expected-cos "
       << numText(opts.expectedCos) << ": no layer needs " << fpName << "\n";
  else
    os << "# with the " << listed.size() << " layer(s) below in " << fpName
       << ": cosine " << cosText(finalCos) << " (target "
       << numText(opts.expectedCos)
       << (reached ? ": reached" : ": NOT reached, the best prefix found")
       << ")\n"
       << "# op_name  mode  # gain alone (cosine with only this op in "
       << fpName << ")\n";
  for (const Layer *layer : listed)
    os << llvm::left_justify(layer->name, width) << " " << fpName << "  # "
       << layer->type << ": gain " << gainText(layer->gain) << " ("
       << cosText(layer->cosine) << ")\n";
  os.flush();

  std::string loss;
  llvm::raw_string_ostream ls(loss);
  ls << "# tpuc qtable: per-layer sensitivity of " << opts.model << " in "
     << fpName << " (" << command << ")\n"
     << "# cosine to f32" << over << "; all INT8: " << cosText(all.cosine)
     << "\n"
     << "# rank op type cosine_alone gain accumulated_cosine (the greedy "
        "order; accumulated: with this and every earlier op in "
     << fpName << ", - where not measured)\n";
  for (size_t k = 0; k < layers.size(); ++k)
    ls << (k + 1) << " " << layers[k].name << " " << layers[k].type << " "
       << cosText(layers[k].cosine) << " " << gainText(layers[k].gain) << " "
       << (std::isnan(layers[k].accumulated) ? std::string("-")
                                             : cosText(layers[k].accumulated))
       << "\n";
  ls.flush();

  tpu::isa::bmodel::writeFileAtomically(
      opts.output, std::vector<uint8_t>(text.begin(), text.end()));
  tpu::isa::bmodel::writeFileAtomically(
      lossPath.str().str(), std::vector<uint8_t>(loss.begin(), loss.end()));
  tpuc::getWeightRegistry(context.get()).release(module);

  if (all.cosine >= opts.expectedCos) {
    llvm::outs() << kTool << ": " << opts.output
                 << ": the whole network in INT8 already reaches "
                    "--expected-cos "
                 << numText(opts.expectedCos) << " (cosine " << cosText(all.cosine)
                 << "): no layer in float\n";
    return 0;
  }
  if (!reached) {
    llvm::errs() << kTool << ": error: --expected-cos " << numText(opts.expectedCos)
                 << " is not reached"
                 << (opts.maxFloatLayers
                         ? " within --max-float-layers " +
                               std::to_string(opts.maxFloatLayers)
                         : std::string(" with every INT8 layer in ") +
                               fpName.str())
                 << ": the best is cosine " << cosText(finalCos) << " with "
                 << chosen.size() << " layer(s) in " << fpName << "; "
                 << opts.output << " holds them (marked NOT reached), "
                 << lossPath << " every layer's loss\n";
    return kNotReached;
  }
  llvm::outs() << kTool << ": " << opts.output << ": " << chosen.size()
               << " of " << layers.size() << " INT8 layer(s) in " << fpName
               << ", cosine " << cosText(finalCos) << " >= "
               << numText(opts.expectedCos) << "; " << lossPath << "\n";
  return 0;
}

int tpuc::cli::qtableShared::runMixed() { return runQtableMixed(); }
