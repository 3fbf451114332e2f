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

constexpr const char *kUsage =
    "usage: tpuc qtable model_top.mlir --calibration-table T --dataset DIR\n"
    "       --expected-cos C -o model.qtable [--input-num N]\n"
    "       [--max-float-layers L] [--fp-type F16|BF16|F32]\n"
    "       [--int8-fallback F32|F16|BF16] [--threads T]\n"
    "\n"
    "Mixed precision (TPU-MLIR's run_qtable): the INT8 layers to keep in a\n"
    "float type so that the INT8 module reaches cosine C against the f32\n"
    "module on the samples. Writes the quantize table (for tpuc deploy\n"
    "--quantize INT8 --calibration-table T --quantize-table model.qtable)\n"
    "and <stem>_loss.txt, each layer's cosine when it alone is in float.\n"
    "  --calibration-table T  the model's table (tpuc calibrate)\n"
    "  --dataset DIR          samples, as for tpuc calibrate (.npz or images)\n"
    "  --input-num N          samples to use (the first N; default 10)\n"
    "  --expected-cos C       target mean cosine over outputs and samples,\n"
    "                         in (0, 1] (an output of one value per sample\n"
    "                         over all samples stacked)\n"
    "  --max-float-layers L   at most L layers in float (default: no limit)\n"
    "  --fp-type MODE         the float type of those layers (default F16)\n"
    "  --int8-fallback MODE   the mode of the ops without an INT8 form\n"
    "                         (default F32; give deploy the same)\n"
    "  -o, --output FILE      the quantize table to write\n"
    "  --threads T            threads of the interpreter (default: all)\n"
    "Exit 0: target reached; 2: not reached (the best table found is\n"
    "written, marked so); 1: an error (nothing written).\n"
    "Without --calibration-table, tpuc qtable --quantize F16|BF16 --help\n"
    "describes the 16-bit overflow table.\n";

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

int parseArgs(int argc, char **argv, MixedOptions &opts) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    if (a == "-h" || a == "--help") {
      llvm::outs() << kUsage;
      return 0;
    }
    std::string v;
    bool ok = true;
    if (a == "--calibration-table")
      ok = value(opts.cali);
    else if (a == "--dataset")
      ok = value(opts.dataset);
    else if (a == "-o" || a == "--output")
      ok = value(opts.output);
    else if (a == "--fp-type")
      ok = value(opts.fpType);
    else if (a == "--int8-fallback")
      ok = value(opts.fallback);
    else if (a == "--input-num") {
      ok = value(v);
      if (ok && (!llvm::to_integer(v, opts.inputNum) || opts.inputNum == 0))
        return fail("--input-num needs a positive integer, got '" + v + "'");
    } else if (a == "--expected-cos") {
      ok = value(v);
      if (ok && (llvm::StringRef(v).getAsDouble(opts.expectedCos) ||
                 !(opts.expectedCos > 0 && opts.expectedCos <= 1)))
        return fail("--expected-cos needs a cosine in (0, 1], got '" + v +
                    "'");
      opts.haveExpectedCos = ok;
    } else if (a == "--max-float-layers") {
      ok = value(v);
      if (ok &&
          (!llvm::to_integer(v, opts.maxFloatLayers) || opts.maxFloatLayers == 0))
        return fail("--max-float-layers needs a positive integer, got '" + v +
                    "'");
    } else if (a == "--threads") {
      ok = value(v);
      if (ok && (!llvm::to_integer(v, opts.threads) || opts.threads == 0))
        return fail("--threads needs a positive integer, got '" + v + "'");
    } else if (a == "--test-input" || a == "-i" || a == "--quantize" ||
               a == "--mode" || a == "--margin")
      return fail(a + " belongs to the 16-bit overflow table (without "
                      "--calibration-table); the mixed-precision search reads "
                      "--dataset");
    else if (a.starts_with("-") && a.size() > 1)
      return fail("unknown option '" + a + "'\n" + kUsage);
    else if (opts.model.empty())
      opts.model = a.str();
    else
      return fail("unexpected argument '" + a + "'");
    if (!ok)
      return fail(a + " needs a value");
  }
  if (opts.model.empty() || opts.cali.empty() || opts.dataset.empty() ||
      opts.output.empty() || !opts.haveExpectedCos) {
    llvm::errs() << kUsage;
    return fail("a model, --calibration-table, --dataset, --expected-cos and "
                "-o are required");
  }
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

int runQtableMixed(int argc, char **argv) {
  MixedOptions opts;
  if (int status = parseArgs(argc, argv, opts); status >= 0)
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
  std::string over = " (mean over " +
                     std::to_string(evaluator.outputNames().size()) +
                     " output(s) and " + std::to_string(numSamples) +
                     " sample(s))";

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
