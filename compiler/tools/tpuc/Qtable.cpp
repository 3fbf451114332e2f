//===- Qtable.cpp - tpuc qtable: which ops a 16-bit mode must keep in F32 -===//
//
//   tpuc qtable model_top.mlir --test-input in.npz --quantize F16|BF16
//       -o model.qtable [--margin M] [--threads N]
//
// In the spirit of TPU-MLIR's fp_forward / run_qtable: runs the top (f32)
// interpreter on the test input and writes a quantize table (the format of
// `tpuc deploy --quantize-table`) that keeps in F32 every op whose values do
// not fit the 16-bit type:
//   - an op that reads or writes a value (an activation or a weight) with
//     |x| * M > the largest finite value of the type (f16 65504, bf16
//     3.39e38) on the test input. The margin M (default 2, one binade) is
//     headroom for inputs louder than the test input; inf and NaN that the
//     f32 model computes itself (e.g. a Clip bound of +inf) are no overflow
//     of the 16-bit type and are ignored;
//   - an op whose result is not zero but lies wholly below M times the
//     smallest normal value of the type (f16 6.10e-5, bf16 1.18e-38): there
//     the 16-bit type keeps few bits or none (f16 is 0 below 5.96e-8), so
//     such an op underflows (e.g. a model with untrained weights whose
//     activations fade to 1e-9);
//   - then, to avoid cast round trips, an op between such ops: a data
//     movement op (reshape, permute, slice, ...) that only F32 ops read,
//     and any op that reads only F32 values (or model inputs) and that only
//     F32 ops read. This keeps e.g. a model input that only F32 ops read in
//     f32 instead of rounding it to f16 and back.
// Each line says why in a comment (the largest |x| seen).
//
// With --calibration-table, tpuc qtable answers another question, the INT8
// mixed-precision search (QtableMixed.cpp).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Support/Weights.h"

#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Module.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Npz.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <string>
#include <vector>

namespace {

constexpr const char *kTool = "tpuc qtable";

namespace cl = llvm::cl;

tpuc::cli::Category category("tpuc qtable options");
tpuc::cli::Category overflowCategory(
    "tpuc qtable 16-bit overflow table (without --calibration-table)");

constexpr const char *kOverview =
    R"(tpuc qtable: a quantize table for tpuc deploy --quantize-table

  tpuc qtable model_top.mlir --test-input in.npz --quantize F16|BF16
              -o model.qtable [--margin M] [--threads N]
  tpuc qtable model_top.mlir --calibration-table T --dataset DIR
              --expected-cos C -o model.qtable [--input-num N]
              [--max-float-layers L] [--fp-type F16|BF16|F32]
              [--int8-fallback F32|F16|BF16] [--threads T]

16-bit overflow table (the first form): runs the top interpreter on the
test input and writes a quantize table keeping in F32 every op that reads
or writes a value the 16-bit type cannot hold, and the ops between such ops
(no cast round trips).

Mixed precision (the second form, TPU-MLIR's run_qtable): the INT8 layers
to keep in a float type so that the INT8 module reaches cosine C against
the f32 module on the samples: the shortest run of first or last layers
that reaches C, else, from the better run, layers by gain while they raise
the cosine (a layer: an INT8 op and the activation chain behind it). Writes
the quantize table (for tpuc deploy --quantize INT8 --calibration-table T
--quantize-table model.qtable) and <stem>_loss.txt, the runs measured and
each layer's gain. Exit 0:
target reached; 2: not reached (the best table found is written, marked
so); 1: an error (nothing written).
)";

cl::opt<std::string>
    testInputArg("test-input", cl::desc(".npz with one array per model input"),
                 cl::value_desc("FILE"),
                 cl::sub(tpuc::cli::qtableShared::command()),
                 cl::cat(overflowCategory));
cl::alias testInputShort("i", cl::desc("Alias for --test-input"),
                         cl::aliasopt(testInputArg), cl::NotHidden,
                         cl::cat(overflowCategory));
cl::opt<std::string> quantizeArg(
    "quantize",
    cl::desc("the 16-bit mode the model is deployed in: F16 or BF16"),
    cl::value_desc("F16|BF16"), cl::sub(tpuc::cli::qtableShared::command()),
    cl::cat(overflowCategory));
cl::alias quantizeMode("mode", cl::desc("Alias for --quantize"),
                       cl::aliasopt(quantizeArg), cl::NotHidden,
                       cl::cat(overflowCategory));
cl::opt<std::string> marginArg(
    "margin",
    cl::desc("an op stays F32 when |x| * M exceeds the type's largest "
             "finite value (default 2: one binade of headroom for louder "
             "inputs)"),
    cl::value_desc("M"), cl::sub(tpuc::cli::qtableShared::command()),
    cl::cat(overflowCategory));

struct QtableOptions {
  std::string model, input, output, mode;
  double margin = 2.0;
  unsigned threads = 0;
};

int fail(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 1;
}

/// The parsed options, checked; returns -1 to go on, else the exit status.
int readOptions(QtableOptions &opts) {
  namespace qt = tpuc::cli::qtableShared;
  opts.model = qt::model;
  opts.input = testInputArg;
  opts.output = qt::output;
  opts.mode = quantizeArg;
  if (marginArg.getNumOccurrences() &&
      (llvm::StringRef(marginArg).getAsDouble(opts.margin) ||
       !(opts.margin >= 1.0) || !std::isfinite(opts.margin)))
    return fail("--margin needs a number >= 1, got '" + marginArg + "'");
  if (qt::threads.getNumOccurrences() &&
      (!llvm::to_integer(qt::threads.getValue(), opts.threads) ||
       opts.threads == 0))
    return fail("--threads needs a positive integer, got '" + qt::threads +
                "'");
  if (std::string e = tpuc::tool::missingRequired(
          "qtable", {{"a model", !opts.model.empty()},
                     {"--test-input", !opts.input.empty()},
                     {"--quantize", !opts.mode.empty()},
                     {"-o", !opts.output.empty()}});
      !e.empty())
    return fail(e);
  if (std::string e = tpuc::tool::checkOutputPaths(
          {opts.output},
          tpuc::tool::moduleInputs(opts.model, "the module",
                                   {{"--test-input", opts.input}}));
      !e.empty())
    return fail(e);
  return -1;
}

/// The largest |x| over the finite values of \p data (0 if none).
double maxAbsFinite(const std::vector<float> &data) {
  double m = 0;
  for (float x : data)
    if (std::isfinite(x))
      m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

/// Ops that only move or select values: kept F32 when only F32 ops read
/// them, so that a value crosses the precision boundary once.
bool isDataMovement(mlir::Operation *op) {
  return mlir::isa<tpuc::top::ReshapeOp, tpuc::top::PermuteOp,
                   tpuc::top::SliceOp, tpuc::top::SplitOp, tpuc::top::ConcatOp,
                   tpuc::top::PadOp, tpuc::top::TileOp, tpuc::top::ExpandOp,
                   tpuc::top::GatherOp>(op);
}

struct Decision {
  bool keepF32 = false;
  std::string why;
};

std::string formatValue(double x) { return llvm::formatv("{0:e2}", x).str(); }

} // namespace

llvm::cl::SubCommand &tpuc::cli::qtableShared::command() {
  static llvm::cl::SubCommand c(
      "qtable", "quantize table: the ops a 16-bit mode overflows kept in F32, "
                "or the INT8 layers kept in float to reach a cosine");
  return c;
}

tpuc::cli::Category tpuc::cli::qtableShared::mixedCategory(
    "tpuc qtable mixed precision (with --calibration-table)");

llvm::cl::opt<std::string>
    tpuc::cli::qtableShared::model(cl::Positional, cl::desc("model_top.mlir"),
                                   cl::sub(command()), cl::cat(category));
llvm::cl::opt<std::string> tpuc::cli::qtableShared::output(
    "output", cl::desc("the quantize table to write"), cl::value_desc("FILE"),
    cl::sub(command()), cl::cat(category));
static llvm::cl::alias
    outputShort("o", cl::desc("Alias for --output"),
                cl::aliasopt(tpuc::cli::qtableShared::output), cl::NotHidden,
                cl::cat(category));
llvm::cl::opt<std::string> tpuc::cli::qtableShared::threads(
    "threads", cl::desc("threads of the interpreter (default: all cores)"),
    cl::value_desc("N"), cl::sub(command()), cl::cat(category));
llvm::cl::opt<std::string> tpuc::cli::qtableShared::calibrationTable(
    "calibration-table",
    cl::desc("the model's table (tpuc calibrate): the mixed-precision "
             "search"),
    cl::value_desc("T"), cl::sub(command()), cl::cat(mixedCategory));

/// The first option given of those in \p category of tpuc qtable, "" if
/// none.
static std::string givenOption(const llvm::cl::OptionCategory &category) {
  for (auto &entry : tpuc::cli::qtableShared::command().OptionsMap) {
    llvm::cl::Option *o = entry.second;
    if (o->getNumOccurrences() && !o->isPositional() &&
        llvm::is_contained(o->Categories, &category))
      return "--" + o->ArgStr.str();
  }
  return "";
}

static int runQtable() {
  namespace qt = tpuc::cli::qtableShared;
  if (qt::calibrationTable.getNumOccurrences()) {
    if (std::string o = givenOption(overflowCategory); !o.empty())
      return fail(o + " belongs to the 16-bit overflow table (without "
                      "--calibration-table); the mixed-precision search "
                      "reads --dataset");
    return qt::runMixed();
  }
  if (std::string o = givenOption(qt::mixedCategory); !o.empty())
    return fail(o + " belongs to the mixed-precision search (with "
                    "--calibration-table)");
  QtableOptions opts;
  if (int status = readOptions(opts); status >= 0)
    return status;
  std::optional<tpuc::QuantMode> mode = tpuc::parseQuantMode(opts.mode);
  if (mode == tpuc::QuantMode::INT8)
    return fail("--quantize '" + opts.mode +
                "': the overflow table is for F16 or BF16; for INT8, "
                "--calibration-table with --dataset and --expected-cos "
                "searches a mixed-precision table");
  if (mode != tpuc::QuantMode::F16 && mode != tpuc::QuantMode::BF16)
    return fail("--quantize '" + opts.mode +
                "' is not a 16-bit float mode (F16 or BF16; F32 holds every "
                "value of the top interpreter)");
  llvm::StringRef modeName = tpuc::quantModeName(*mode);
  // The largest finite values: f16 (1 + 1023/1024) * 2^15, bf16
  // (1 + 127/128) * 2^127.
  const double maxFinite =
      *mode == tpuc::QuantMode::F16 ? 65504.0 : 3.3895313892515355e38;
  const double limit = maxFinite / opts.margin;
  // The smallest normal values: f16 2^-14, bf16 2^-126.
  const double minNormal =
      *mode == tpuc::QuantMode::F16 ? 6.103515625e-05 : 1.1754943508222875e-38;
  const double lowLimit = minNormal * opts.margin;

  tpu::npz::Npz inputs = tpu::npz::readNpz(opts.input);

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

  tpuc::tool::checkFitsHostMemory(module, opts.model);
  tpuc::ModuleInterpreter interpreter(module);
  if (opts.threads)
    interpreter.setNumThreads(opts.threads);
  tpuc::tool::setInputs(interpreter, inputs, opts.input);
  if (mlir::failed(interpreter.run(/*keepAll=*/true)))
    return fail("interpreting '" + opts.model + "' failed");

  // The ops a table can name, in program order.
  mlir::Block &body = func.getBody().front();
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : body)
    if (mlir::isa_and_nonnull<tpuc::top::TopDialect>(op.getDialect()) &&
        !mlir::isa<tpuc::top::InputOp, tpuc::top::NoneOp, tpuc::top::WeightOp>(
            op) &&
        op.getAttrOfType<mlir::StringAttr>("name"))
      ops.push_back(&op);

  // 1. Values out of range.
  llvm::DenseMap<mlir::Operation *, Decision> decisions;
  unsigned underflowing = 0;
  for (mlir::Operation *op : ops) {
    double worst = 0;
    std::string what;
    auto consider = [&](double m, const std::string &desc) {
      if (m > worst) {
        worst = m;
        what = desc;
      }
    };
    for (mlir::Value r : op->getResults()) {
      std::string name = tpuc::top::getTensorName(r);
      if (interpreter.hasTensor(name))
        consider(maxAbsFinite(interpreter.tensor(name)),
                 op->getNumResults() > 1 ? "result '" + name + "'"
                                         : std::string("result"));
    }
    for (mlir::Value v : op->getOperands()) {
      if (tpuc::top::isNone(v))
        continue;
      if (auto w = v.getDefiningOp<tpuc::top::WeightOp>()) {
        consider(maxAbsFinite(tpuc::getWeightData(w)),
                 "weight '" + w.getName().str() + "'");
        continue;
      }
      std::string name = tpuc::top::getTensorName(v);
      if (interpreter.hasTensor(name))
        consider(maxAbsFinite(interpreter.tensor(name)),
                 "input '" + name + "'");
    }
    if (worst > limit) {
      decisions[op] = {true, what + " max |x| = " + formatValue(worst) + " > " +
                                 formatValue(limit)};
      continue;
    }
    // Underflow: a non-zero result wholly in the subnormal range (or below).
    for (mlir::Value r : op->getResults()) {
      std::string name = tpuc::top::getTensorName(r);
      if (!interpreter.hasTensor(name))
        continue;
      double m = maxAbsFinite(interpreter.tensor(name));
      if (m > 0 && m < lowLimit) {
        decisions[op] = {true,
                         (op->getNumResults() > 1 ? "result '" + name + "'"
                                                  : std::string("result")) +
                             " max |x| = " + formatValue(m) + " < " +
                             formatValue(lowLimit) + " (underflow)"};
        ++underflowing;
        break;
      }
    }
  }
  unsigned overflowing = decisions.size() - underflowing;

  // 2. Ops between F32 ops, until nothing changes.
  auto isF32 = [&](mlir::Value v) {
    mlir::Operation *def = v.getDefiningOp();
    if (!def || tpuc::top::isNone(v) ||
        mlir::isa<tpuc::top::InputOp, tpuc::top::WeightOp>(def))
      return true; // model inputs are f32; weights take the reader's type
    auto it = decisions.find(def);
    return it != decisions.end() && it->second.keepF32;
  };
  auto readersF32 = [&](mlir::Operation *op) {
    bool any = false;
    for (mlir::Operation *user : op->getUsers()) {
      any = true;
      if (user->hasTrait<mlir::OpTrait::IsTerminator>())
        continue; // outputs are f32
      auto it = decisions.find(user);
      if (it == decisions.end() || !it->second.keepF32)
        return false;
    }
    return any;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (mlir::Operation *op : llvm::reverse(ops)) {
      if (decisions.count(op) || !readersF32(op))
        continue;
      if (isDataMovement(op)) {
        decisions[op] = {true, "data movement that only F32 ops read"};
        changed = true;
      } else if (llvm::all_of(op->getOperands(), isF32)) {
        decisions[op] = {true, "between F32 ops (no cast round trip)"};
        changed = true;
      }
    }
  }

  size_t width = 0;
  for (mlir::Operation *op : ops)
    if (decisions.count(op))
      width =
          std::max(width, op->getAttrOfType<mlir::StringAttr>("name").size());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "# Quantize table for tpuc deploy --quantize " << modeName
     << " --quantize-table <this file>\n"
     << "# written by: tpuc qtable " << opts.model << " --test-input "
     << opts.input << " --quantize " << modeName << " --margin "
     << llvm::format("%g", opts.margin) << "\n"
     << "# An op stays F32 when a value it reads or writes has |x| > "
     << formatValue(limit) << " (the largest finite "
     << (*mode == tpuc::QuantMode::F16 ? "f16" : "bf16") << ", "
     << formatValue(maxFinite) << ", / margin "
     << llvm::format("%g", opts.margin) << ") on the test input,\n"
     << "# when its non-zero result lies wholly below " << formatValue(lowLimit)
     << " (the smallest normal " << formatValue(minNormal) << " * margin),\n"
     << "# or sits between such ops.\n"
     << "# op_name  mode  # why\n";
  unsigned kept = 0;
  for (mlir::Operation *op : ops) {
    auto it = decisions.find(op);
    if (it == decisions.end())
      continue;
    ++kept;
    std::string name =
        op->getAttrOfType<mlir::StringAttr>("name").getValue().str();
    os << llvm::left_justify(name, width) << " F32  # " << op->getName() << ": "
       << it->second.why << "\n";
  }
  os.flush();
  tpu::isa::bmodel::writeFileAtomically(
      opts.output, std::vector<uint8_t>(text.begin(), text.end()));
  llvm::outs() << kTool << ": " << opts.output << ": " << kept << " of "
               << ops.size() << " ops stay F32 in " << modeName << " ("
               << overflowing << " out of range, " << underflowing
               << " underflowing, " << kept - overflowing - underflowing
               << " between them)\n";
  tpuc::getWeightRegistry(context.get()).release(module);
  return 0;
}

const tpuc::cli::Subcommand tpuc::cli::qtable{
    tpuc::cli::qtableShared::command(), kOverview, runQtable};
