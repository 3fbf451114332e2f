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
//  Layers: a layer is an op an INT8 form lowers (Int8Options::int8Ops:
//      conv, pooling, add / sub, lookup tables, ...; the ops without one
//      already run in the fallback mode and data movement only carries its
//      input's type) together with the unary chain that follows it: each
//      next op reads only the previous one's value (and weights of one
//      element), that value has no other reader, and the shape does not
//      change: a conv's activation and its scale and bias (hardswish,
//      x * s, + b), which the INT8 lowering turns into one lookup table
//      behind the conv. A layer goes to --fp-type whole. One op of such a
//      chain alone in float would split the chain's table and add a
//      quantised value instead of removing one: on PP-OCR (PPLCNetV3, whose
//      every conv is followed by hardswish, x * s and + b) the single-op
//      gains were noise of either sign, up to 1e-2.
//  (b) Runs at either end: the first k layers (program order) in float,
//      k = 1, 2, 4, 8, ... until the cosine reaches C (or the run would
//      pass --max-float-layers ops), then bisection between the last k
//      below C and the first at or above it; the same for the last k
//      layers (only while they have fewer ops than a first run that
//      reaches C). PTQ noise that enters early is amplified by every later
//      layer, and a float prefix removes the quantised values there
//      together, which single layers do not show: on PP-OCR det (3 pages)
//      the first 2 layers in float leave the cosine at 0.9847, the third
//      alone raises it by 5e-3, the first 4 together by 1e-2. A
//      classifier's last layers are often its most sensitive ones. The run
//      that reaches C with fewer ops is the table (a few evaluations: at
//      most 2 log2 of the layers, plus the bisections); if none does, the
//      run with the higher cosine (possibly none) is kept and:
//  (c) Sensitivity: each other layer is added alone to that run and the
//      network cosine measured; its gain is that minus the run's (a layer
//      too large for --max-float-layers is not measured).
//  (d) Greedy forward selection: those layers, by gain (largest first,
//      program order on ties), are tried one by one; a layer joins the
//      float set only when the cosine of the set with it (measured again
//      once the set has grown: gains do not add up) is higher than the
//      set's without it, until the cosine reaches C or no layer is left. A
//      layer whose ops would take the set past --max-float-layers ops
//      (default: no limit) is passed over.
//  (e) The quantize table (`op_name MODE` lines in program order, each with
//      a comment: in the run kept, or its layer's gain) and
//      `<stem>_loss.txt` beside it (stem: the -o path without its
//      extension): the runs measured, then every op of every layer in
//      program order with its type, its layer (the first op), the layer's
//      cosine added alone, its gain, the cosine of the set with it in the
//      greedy search where that was measured, and whether it was kept
//      (run / yes / no).
//
// Exit 0 when C is reached. When it is not within --max-float-layers (or
// with every candidate in float), both files are still written, the table
// being the float set the search ended with, its best (marked "target NOT
// reached" in its header), and the tool exits 2 with a message giving
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
#include "tpuc/Dialect/Top/IR/TopOps.h"
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
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
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
                      cl::desc("at most L ops in float, every op of a layer "
                               "counted (default: no limit)"),
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
  if (std::string e = tpuc::tool::missingRequired(
          "qtable", {{"a model", !opts.model.empty()},
                     {"--calibration-table", !opts.cali.empty()},
                     {"--dataset", !opts.dataset.empty()},
                     {"--expected-cos", opts.haveExpectedCos},
                     {"-o", !opts.output.empty()}});
      !e.empty())
    return fail(e);
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

/// One candidate layer: an INT8 op and the unary chain after it.
struct Layer {
  std::vector<std::string> ops; ///< program order; ops[0] names the layer
  std::vector<std::string> types;
  size_t order = 0;     ///< program order of ops[0]
  bool inRun = false; ///< in the run of first or last layers the search kept
  double cosine = std::nan(""); ///< network cosine with this layer added to
                                ///< the run kept (NaN: not measured)
  double gain = std::nan("");   ///< cosine - the run's cosine
  double accumulated = std::nan(""); ///< cosine of the float set with this
                                     ///< layer added (NaN: not measured)
  bool kept = false;    ///< joined the float set
};

/// Whether \p v is a weight (or none) of at most one element.
bool isScalarWeight(mlir::Value v) {
  mlir::Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (mlir::isa<tpuc::top::NoneOp>(def))
    return true;
  if (!mlir::isa<tpuc::top::WeightOp>(def))
    return false;
  auto type = mlir::dyn_cast<mlir::ShapedType>(v.getType());
  return type && type.hasStaticShape() && type.getNumElements() <= 1;
}

/// Whether \p op continues the chain that ends at \p last: its one
/// non-weight operand is \p last's only result, which no other op reads, its
/// other operands are weights of one element, and the shape is unchanged.
bool continuesChain(mlir::Operation *op, mlir::Operation *last) {
  if (last->getNumResults() != 1 || op->getNumResults() != 1 ||
      !last->getResult(0).hasOneUse())
    return false;
  bool readsLast = false;
  for (mlir::Value operand : op->getOperands()) {
    if (operand == last->getResult(0))
      readsLast = true;
    else if (!isScalarWeight(operand))
      return false;
  }
  return readsLast &&
         last->getResult(0).getType() == op->getResult(0).getType();
}

/// The candidate layers of \p int8Ops (the INT8 lowering's ops, by name) in
/// program order over \p func's body.
std::vector<Layer> layersOf(mlir::func::FuncOp func,
                            const std::vector<std::string> &int8Ops) {
  llvm::StringSet<> candidates;
  for (const std::string &name : int8Ops)
    candidates.insert(name);
  std::vector<Layer> layers;
  mlir::Operation *last = nullptr; // the last op of layers.back()
  size_t position = 0;
  for (mlir::Operation &op : func.getBody().front()) {
    auto name = op.getAttrOfType<mlir::StringAttr>("name");
    if (!name || !candidates.contains(name.getValue())) {
      if (name)
        ++position;
      continue;
    }
    if (!(last && continuesChain(&op, last))) {
      layers.emplace_back();
      layers.back().order = position;
    }
    layers.back().ops.push_back(name.getValue().str());
    layers.back().types.push_back(op.getName().getStringRef().str());
    last = &op;
    ++position;
  }
  return layers;
}

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
  if (std::string error = tpuc::tool::checkOutputPaths(
          {opts.output, lossPath.str().str()},
          tpuc::tool::moduleInputs(opts.model, "the module",
                                   {{"--calibration-table", opts.cali}}));
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
  llvm::outs().flush(); // each line is progress (a search takes minutes)

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
  std::vector<std::string> chosen; // the float set's ops
  size_t chosenLayers = 0;
  double finalCos = all.cosine;
  bool reached = all.cosine >= opts.expectedCos;
  struct RunTried {
    bool last;
    size_t layers, ops;
    double cosine;
  };
  std::vector<RunTried> runsTried; // the runs measured, in order
  std::string runText;            // the run kept, in words
  if (!reached) {
    layers = layersOf(func, all.int8Ops);
    // (b) Runs at either end: the first (then the last) k layers in float,
    // k = 1, 2, 4, ... until the target; then bisection below the first k
    // that reaches it.
    const size_t n = layers.size();
    auto runLayers = [&](bool last, size_t k) {
      return last ? std::make_pair(n - k, n) : std::make_pair(size_t(0), k);
    };
    auto runOps = [&](bool last, size_t k) {
      std::vector<std::string> ops;
      auto [from, to] = runLayers(last, k);
      for (size_t j = from; j < to; ++j)
        ops.insert(ops.end(), layers[j].ops.begin(), layers[j].ops.end());
      return ops;
    };
    struct RunResult {
      size_t length = 0; ///< layers of the best run (0: none better)
      double cosine = 0;
      bool reaches = false;
    };
    // \p fewerThan: only runs of fewer ops are of use (0: no bound).
    auto searchRun = [&](bool last, size_t fewerThan) {
      RunResult best{0, all.cosine, false};
      auto tryRun = [&](size_t k) {
        std::vector<std::string> ops = runOps(last, k);
        double c = measure(ops).cosine;
        runsTried.push_back({last, k, ops.size(), c});
        llvm::outs() << kTool << ": the " << (last ? "last " : "first ") << k
                     << " layer(s) (" << ops.size() << " op(s)) in " << fpName
                     << ": cosine " << cosText(c) << "\n";
        llvm::outs().flush();
        return std::make_pair(c, ops.size());
      };
      size_t below = 0, reaching = 0;
      for (size_t k = 1; k <= n; k = std::min(2 * k, n)) {
        size_t ops = runOps(last, k).size();
        if ((opts.maxFloatLayers && ops > opts.maxFloatLayers) ||
            (fewerThan && ops >= fewerThan))
          break;
        double c = tryRun(k).first;
        if (c > best.cosine)
          best = {k, c, false};
        if (c >= opts.expectedCos) {
          reaching = k;
          best = {k, c, true};
          break;
        }
        below = k;
        if (k == n)
          break;
      }
      while (reaching && reaching - below > 1) {
        size_t mid = below + (reaching - below) / 2;
        double c = tryRun(mid).first;
        if (c >= opts.expectedCos) {
          reaching = mid;
          best = {mid, c, true};
        } else {
          below = mid;
        }
      }
      return best;
    };
    // The last layers only while they could beat a first run that reaches.
    RunResult first = searchRun(false, 0);
    RunResult last = searchRun(
        true, first.reaches ? runOps(false, first.length).size() : 0);
    // The run that reaches the target with fewer ops, else the higher one.
    bool useLast;
    if (first.reaches != last.reaches)
      useLast = last.reaches;
    else if (first.reaches)
      useLast = runOps(true, last.length).size() <
                runOps(false, first.length).size();
    else
      useLast = last.cosine > first.cosine;
    RunResult run = useLast ? last : first;
    auto [from, to] = runLayers(useLast, run.length);
    for (size_t k = from; k < to; ++k)
      layers[k].kept = layers[k].inRun = true;
    chosen = runOps(useLast, run.length);
    chosenLayers = run.length;
    runText = run.length ? std::string(useLast ? "the last " : "the first ") +
                               std::to_string(run.length) + " layer(s)"
                         : std::string("no run of layers");
    finalCos = run.length ? run.cosine : all.cosine;
    reached = finalCos >= opts.expectedCos;

    if (!reached) {
      // (c) Sensitivity of every other layer, added alone to the run.
      std::vector<Layer *> rest;
      for (Layer &layer : layers)
        if (!layer.inRun)
          rest.push_back(&layer);
      auto fits = [&](const Layer &layer) {
        return !opts.maxFloatLayers ||
               chosen.size() + layer.ops.size() <= opts.maxFloatLayers;
      };
      for (Layer *layer : rest) {
        if (!fits(*layer))
          continue; // never added: not measured
        std::vector<std::string> trial = chosen;
        trial.insert(trial.end(), layer->ops.begin(), layer->ops.end());
        layer->cosine = measure(trial).cosine;
        layer->gain = layer->cosine - finalCos;
        llvm::outs() << kTool << ": " << layer->ops[0] << " ("
                     << layer->types[0]
                     << (layer->ops.size() > 1
                             ? " + " + std::to_string(layer->ops.size() - 1) +
                                   " chained op(s)"
                             : std::string())
                     << ") in " << fpName << ": cosine "
                     << cosText(layer->cosine) << " (gain "
                     << gainText(layer->gain) << ")\n";
        llvm::outs().flush();
      }
      // Unmeasured (and NaN) gains last.
      auto key = [](const Layer *l) {
        return std::isnan(l->gain) ? -std::numeric_limits<double>::infinity()
                                   : l->gain;
      };
      std::stable_sort(rest.begin(), rest.end(),
                       [&](const Layer *a, const Layer *b) {
                         if (key(a) != key(b))
                           return key(a) > key(b);
                         return a->order < b->order;
                       });
      // (d) Greedy forward selection. Until a layer is kept, the set with
      // a layer added is the one (c) measured.
      bool grown = false;
      for (Layer *layer : rest) {
        if (!fits(*layer) || std::isnan(layer->cosine))
          continue;
        std::vector<std::string> trial = chosen;
        trial.insert(trial.end(), layer->ops.begin(), layer->ops.end());
        layer->accumulated = grown ? measure(trial).cosine : layer->cosine;
        layer->kept = layer->accumulated > finalCos;
        llvm::outs() << kTool << ": + " << layer->ops[0] << ": "
                     << trial.size() << " op(s) in " << fpName << ", cosine "
                     << cosText(layer->accumulated)
                     << (layer->kept ? ", kept" : ", not kept") << "\n";
        llvm::outs().flush();
        if (!layer->kept)
          continue;
        chosen = std::move(trial);
        grown = true;
        ++chosenLayers;
        finalCos = layer->accumulated;
        if (finalCos >= opts.expectedCos) {
          reached = true;
          break;
        }
      }
    }
  }

  // (e) The quantize table, in program order, and the loss table.
  struct Line {
    const std::string *op, *type;
    const Layer *layer;
    size_t order;
  };
  std::vector<Line> listed;
  for (const Layer &layer : layers)
    if (layer.kept)
      for (size_t k = 0; k < layer.ops.size(); ++k)
        listed.push_back({&layer.ops[k], &layer.types[k], &layer,
                          layer.order + k});
  std::sort(listed.begin(), listed.end(),
            [](const Line &a, const Line &b) { return a.order < b.order; });
  size_t width = 0;
  for (const Line &line : listed)
    width = std::max(width, line.op->size());
  std::string text;
  llvm::raw_string_ostream os(text);
  header(os);
  if (all.cosine >= opts.expectedCos)
    os << "# the whole network in INT8 reaches --expected-cos "
       << numText(opts.expectedCos) << ": no layer needs " << fpName << "\n";
  else
    os << "# with the " << listed.size() << " op(s) below (" << chosenLayers
       << " layer(s)) in " << fpName << ": cosine " << cosText(finalCos)
       << " (target " << numText(opts.expectedCos)
       << (reached ? ": reached" : ": NOT reached, the best set found")
       << ")\n"
       << "# op_name  mode  # in the run of first or last layers kept ("
       << runText << "), or its layer's gain over that run (cosine with the "
          "layer added)\n";
  for (const Line &line : listed) {
    os << llvm::left_justify(*line.op, width) << " " << fpName << "  # "
       << *line.type
       << (*line.op == line.layer->ops[0] ? std::string()
                                          : " in " + line.layer->ops[0]);
    if (line.layer->inRun)
      os << ": in " << runText << "\n";
    else
      os << ": gain " << gainText(line.layer->gain) << " ("
         << cosText(line.layer->cosine) << ")\n";
  }
  os.flush();

  std::string loss;
  llvm::raw_string_ostream ls(loss);
  ls << "# tpuc qtable: per-layer sensitivity of " << opts.model << " in "
     << fpName << " (" << command << ")\n"
     << "# cosine to f32" << over << "; all INT8: " << cosText(all.cosine)
     << "\n"
     << "# index op type layer cosine_alone gain accumulated_cosine kept (a "
        "line per op of each layer, in program order; cosine_alone: the "
        "run kept with this layer added; accumulated: the float set with this "
        "layer added in the greedy search; - where not measured)\n";
  for (const RunTried &r : runsTried)
    ls << "# the " << (r.last ? "last " : "first ") << r.layers
       << " layer(s) (" << r.ops << " op(s)) in " << fpName << ": cosine "
       << cosText(r.cosine) << "\n";
  auto number = [](double x, bool gain) {
    return std::isnan(x) ? std::string("-") : gain ? gainText(x) : cosText(x);
  };
  for (size_t k = 0; k < layers.size(); ++k)
    for (size_t m = 0; m < layers[k].ops.size(); ++m)
      ls << (k + 1) << " " << layers[k].ops[m] << " " << layers[k].types[m]
         << " " << layers[k].ops[0] << " " << number(layers[k].cosine, false)
         << " " << number(layers[k].gain, true) << " "
         << number(layers[k].accumulated, false) << " "
         << (layers[k].inRun ? "run" : layers[k].kept ? "yes" : "no")
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
                         : std::string(" with every layer that raises it in ") +
                               fpName.str())
                 << ": the best is cosine " << cosText(finalCos) << " with "
                 << chosen.size() << " op(s) in " << fpName << "; "
                 << opts.output << " holds them (marked NOT reached), "
                 << lossPath << " every layer's loss\n";
    return kNotReached;
  }
  llvm::outs() << kTool << ": " << opts.output << ": " << chosen.size()
               << " op(s), " << chosenLayers << " of " << layers.size()
               << " INT8 layer(s) in " << fpName
               << ", cosine " << cosText(finalCos) << " >= "
               << numText(opts.expectedCos) << "; " << lossPath << "\n";
  return 0;
}

int tpuc::cli::qtableShared::runMixed() { return runQtableMixed(); }
