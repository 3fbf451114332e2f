//===- Deploy.cpp - tpuc deploy: top module -> BM1684X bmodel -------------===//
//
//   tpuc deploy model_top.mlir --quantize F32|F16|BF16 --chip bm1684x
//       -o model.bmodel [--quantize-table FILE] [--test-input in.npz
//       --test-reference ref.npz [--tolerance 0.99,0.90]] [--group-per-op]
//       [--layer-group none|greedy|dp] [--chip-param KEY=VALUE]...
//       [--expose-all]
//
// Lowers the top module to tpu ops in the chosen float mode (ops listed in
// the quantize table, TPU-MLIR's --quantize_table format, in their own
// mode, with casts at the precision boundaries), chooses the
// weight layouts, assigns DDR addresses and generates the BM1684X commands.
// Beside the bmodel (stem = the -o path without .bmodel) it keeps, as
// TPU-MLIR does:
//   <stem>_tpu.mlir            the module after lowering and weight layouts
//   <stem>_final.mlir          the same with layer groups, device
//                              addresses and the reduced-axis shares
//                              codegen chose (k_shares)
//   <stem>_tpu_weights.npz     the weights both .mlir files refer to
// With --test-input the final module is interpreted on the inputs, its outputs
// are written to <stem>_tpu_outputs.npz, and every tensor also in
// --test-reference is compared with it (a !quant.uniform tensor as
// (q - zero_point) * scale; INT8's default tolerances are kInt8*Tolerance
// below); a tensor below the tolerance fails
// the command (exit 1) before any bmodel is written. So do inf / NaN in an
// output that a 16-bit op produced from finite values (where the reference,
// if given, is finite): the error names the first such op and suggests
// `tpuc qtable` to keep the overflowing ops in F32. So does an output that
// lies wholly below the 16-bit type's smallest normal value (f16 6.1e-5)
// where the reference is not zero: the first op whose result underflowed is
// named. A tensor larger than global memory, an -o (or a derived output)
// that is a directory or in a directory that does not exist, are refused
// before anything is written.
//
// --expose-all (for debugging) makes every activation a model output, so
// that `tpusim run` writes all of them and `tpuc compare` against
// <stem>_tpu_outputs.npz shows the first op whose result differs. Outputs
// are never reused, so the activation memory grows.
//
//===----------------------------------------------------------------------===//
#include "DeployPipeline.h"
#include "Subcommands.h"

#include "tpuc/Support/CaliTable.h"
#include "ToolCommon.h"

#include "tpu/Tool.h"

#include "tpuc/Support/Weights.h"

#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Compare.h"
#include "tpuc/Support/Machine.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Target/BM1684X/Codegen.h"
#include "tpuc/Target/BM1684X/LayerGroup.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Machine.h"
#include "tpu/isa/Npz.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr const char *kTool = "tpuc deploy";

/// --tolerance's default in the float modes, for every tensor.
constexpr const char *kFloatTolerance = "0.99,0.90";
/// INT8 defaults (dequantised tensors against the float reference):
/// TPU-MLIR's 0.99 / 0.90 for the model outputs; the intermediate tensors
/// of a deep net drift further from float before the outputs recover, so
/// they get looser minimums (TPU-MLIR checks every layer against one
/// tolerance the user loosens). Measured on the default CNN with a minmax
/// table of 8 samples (tests/e2e/dump_all.sh): intermediate tensors cosine
/// >= 0.9984, euclid >= 0.944; outputs 0.9999, 0.987. A deeper net loses
/// more per layer; the layer minimums leave room for that.
constexpr const char *kInt8OutputTolerance = "0.99,0.90";
constexpr const char *kInt8LayerTolerance = "0.95,0.70";

namespace cl = llvm::cl;

cl::SubCommand
    command("deploy",
            "compile a top module for the BM1684X (tpu dialect, bmodel)");
tpuc::cli::Category category("tpuc deploy options");
tpuc::cli::Category quantCategory("tpuc deploy quantisation");
tpuc::cli::Category checkCategory(
    "tpuc deploy checking (the tpu interpreter against a reference)");
tpuc::cli::Category groupCategory("tpuc deploy layer groups and fusion");

constexpr const char *kOverview =
    R"(tpuc deploy: compile a top module for the BM1684X

  tpuc deploy model_top.mlir --quantize MODE --chip bm1684x -o model.bmodel
              [options]

Lowering to the tpu dialect, weight layouts, DDR addresses, TIU/GDMA
commands, .bmodel. Keeps <stem>_tpu.mlir, <stem>_final.mlir and
<stem>_tpu_weights.npz beside the bmodel.
)";

cl::opt<std::string> modelArg(cl::Positional, cl::desc("model_top.mlir"),
                              cl::sub(command), cl::cat(category));
cl::opt<std::string> outputArg("output", cl::desc("the .bmodel to write"),
                               cl::value_desc("FILE"), cl::sub(command),
                               cl::cat(category));
cl::alias outputShort("o", cl::desc("Alias for --output"),
                      cl::aliasopt(outputArg), cl::NotHidden,
                      cl::cat(category));
cl::opt<std::string> chipArg("chip", cl::desc("bm1684x (the only chip)"),
                             cl::value_desc("CHIP"), cl::sub(command),
                             cl::cat(category));
cl::alias chipProcessor("processor", cl::desc("Alias for --chip"),
                        cl::aliasopt(chipArg), cl::NotHidden,
                        cl::cat(category));
cl::list<std::string> chipParamArg(
    "chip-param",
    cl::desc("set a machine parameter: a chip parameter (gmem_bytes=64M) "
             "or, with its prefix, any machine key (chip.npu_num=32, "
             "tiu.cube_startup=40); `tpusim config` lists the keys. The "
             "module (tpu.machine) and the bmodel record the machine"),
    cl::value_desc("KEY=VALUE"), cl::sub(command), cl::cat(category));
cl::alias chipParamShort("p", cl::desc("Alias for --chip-param"),
                         cl::aliasopt(chipParamArg), cl::NotHidden,
                         cl::cat(category));
cl::list<std::string> configArg(
    "config",
    cl::desc("apply a machine configuration file (KEY = VALUE lines, as "
             "`tpusim config --defaults-file` prints; the file tpusim run "
             "--config takes) on top of the defaults, before -p"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(category));
cl::alias chipParamOld("param", cl::desc("Alias for --chip-param"),
                       cl::aliasopt(chipParamArg), cl::Hidden);
cl::opt<bool> exposeAllArg(
    "expose-all",
    cl::desc("debugging: every activation becomes a model output (compare "
             "tpusim's outputs with <stem>_tpu_outputs.npz tensor by "
             "tensor)"),
    cl::sub(command), cl::cat(category));

cl::opt<std::string> quantizeArg("quantize",
                                 cl::desc("the mode of the ops: F32, F16, "
                                          "BF16 or INT8"),
                                 cl::value_desc("F32|F16|BF16|INT8"), cl::sub(command),
                                 cl::cat(quantCategory));
cl::opt<std::string> quantizeTableArg(
    "quantize-table",
    cl::desc("per-op modes overriding --quantize: lines 'op_name "
             "F32|F16|BF16|INT8', '#' comments (see tpuc qtable)"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(quantCategory));
cl::opt<std::string> calibrationTableArg(
    "calibration-table",
    cl::desc("thresholds per tensor (tpuc calibrate, TPU-MLIR's format); "
             "needed for INT8 unless the module carries its model's own "
             "quantisation (top.quant_table: a quantised TFLite model)"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(quantCategory));
cl::opt<bool> quantInputArg(
    "quant-input",
    cl::desc("INT8: model inputs stay int8 (their table types; the bmodel "
             "records scale and zero point) instead of f32 with a "
             "quantising cast on the chip (the default)"),
    cl::sub(command), cl::cat(quantCategory));
cl::opt<bool> quantOutputArg(
    "quant-output",
    cl::desc("INT8: model outputs stay int8 instead of f32 with a "
             "dequantising cast on the chip (the default)"),
    cl::sub(command), cl::cat(quantCategory));
cl::opt<bool> asymmetricArg(
    "asymmetric",
    cl::desc("INT8 with zero points (scale (max - min) / 255 from the "
             "table's min / max)"),
    cl::sub(command), cl::cat(quantCategory));
cl::opt<std::string> int8FallbackArg(
    "int8-fallback",
    cl::desc("F32 (default), F16 or BF16: the mode of the ops that have no "
             "INT8 form (listed in the compile report)"),
    cl::value_desc("MODE"), cl::init("F32"), cl::sub(command),
    cl::cat(quantCategory));

cl::opt<std::string> testInputArg(
    "test-input",
    cl::desc(".npz with one array per model input: run the tpu interpreter "
             "on it (outputs to <stem>_tpu_outputs.npz) ..."),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(checkCategory));
cl::opt<std::string> testReferenceArg(
    "test-reference",
    cl::desc("... and compare every tensor it shares with this .npz (e.g. "
             "the top / ONNX outputs)"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(checkCategory));
cl::opt<std::string> toleranceArg(
    "tolerance",
    cl::desc("minimum similarities (default 0.99,0.90; INT8: 0.99,0.90 for "
             "the outputs, 0.95,0.70 for the other tensors, each "
             "dequantised)"),
    cl::value_desc("COS,EUCLID"), cl::sub(command), cl::cat(checkCategory));

enum class LayerGroup { None, Greedy, Dp };
cl::opt<LayerGroup> layerGroupArg(
    "layer-group",
    cl::desc("runs of conv, pooling and element-wise ops kept in local "
             "memory as tpu.Group ops (<stem>_groups.json)"),
    cl::values(clEnumValN(LayerGroup::None, "none",
                          "every op alone (a group of one where it has a "
                          "local form; its per-op kernel with --lg-kernels)"),
               clEnumValN(LayerGroup::Greedy, "greedy",
                          "each group grows by the next op while it fits "
                          "and the op costs no more inside it than apart"),
               clEnumValN(LayerGroup::Dp, "dp",
                          "(default) dynamic programming over the op "
                          "sequence, minimising the groups' summed cycles "
                          "(the machine's cost model); of its cut and the "
                          "greedy one, the faster with the weight prefetch "
                          "between neighbours")),
    cl::init(LayerGroup::Dp), cl::sub(command), cl::cat(groupCategory));
cl::opt<std::string>
    lgMaxLengthArg("lg-max-length",
                   cl::desc("most ops in one layer group (default 24)"),
                   cl::value_desc("N"), cl::init("24"), cl::sub(command),
                   cl::cat(groupCategory));
cl::opt<std::string>
    lgMaxHSlicesArg("lg-max-h-slices",
                    cl::desc("most H slices of a group (default: no limit)"),
                    cl::value_desc("N"), cl::init("0"), cl::sub(command),
                    cl::cat(groupCategory));
cl::opt<bool> lgHFirstArg("lg-h-first", cl::desc("slice H before N"),
                          cl::sub(command), cl::cat(groupCategory));
cl::opt<bool> noWeightResidentArg(
    "no-weight-resident",
    cl::desc("load a group's weights before every slice (default: once per "
             "group)"),
    cl::sub(command), cl::cat(groupCategory));
cl::opt<bool> lgKernelsArg(
    "lg-kernels",
    cl::desc("let an op with a local form run its per-op kernel: alone, the "
             "cheaper of its kernel and its group of one by the cost model; "
             "with --layer-group none every op runs its kernel (default: an "
             "op with a local form always runs in a group, of one at "
             "least). Only data movement has kernels (a concat, a slice, a "
             "transpose choose so); every compute op runs as groups of one"),
    cl::sub(command), cl::cat(groupCategory));
cl::opt<bool> noChannelSlicesArg(
    "no-channel-slices",
    cl::desc("a layer group never cuts the channels (default: it does when "
             "no slicing of the batch and rows fits local memory, or when "
             "the cost model finds it faster)"),
    cl::sub(command), cl::cat(groupCategory));
cl::opt<bool> noWidthSlicesArg(
    "no-width-slices",
    cl::desc("a layer group never cuts its rows into column slices "
             "(default: it does as the last resort, when not even one row of "
             "every value fits local memory)"),
    cl::sub(command), cl::cat(groupCategory));
cl::opt<bool> noWeightPrefetchArg(
    "no-weight-prefetch",
    cl::desc("a group does not load the next group's first weights during "
             "its last slice (default: it does where the cost model finds "
             "it faster)"),
    cl::sub(command), cl::cat(groupCategory));
cl::opt<bool> groupPerOpArg("group-per-op",
                            cl::desc("one command group per op"),
                            cl::sub(command), cl::cat(groupCategory));

struct DeployOptions {
  std::string model, output, quantize, chip, quantizeTable;
  std::string calibrationTable, int8Fallback = "F32";
  bool asymmetric = false, quantInput = false, quantOutput = false;
  /// Empty: the mode's default (kFloatTolerance; INT8: kInt8OutputTolerance
  /// for the outputs, kInt8LayerTolerance for the other tensors).
  std::string testInput, testReference, tolerance;
  std::vector<std::string> chipParams, configFiles;
  std::string layerGroup = "dp";
  std::string lgMaxLength = "24", lgMaxHSlices = "0";
  bool lgHFirst = false;
  bool noWeightResident = false;
  bool noChannelSlices = false;
  bool noWidthSlices = false;
  bool lgKernels = false;
  bool noWeightPrefetch = false;
  bool groupPerOp = false;
  bool exposeAll = false;
};

int fail(const llvm::Twine &message) {
  llvm::outs().flush(); // the comparison table comes before the error
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 1;
}

/// The parsed options, checked; returns -1 to go on, else the exit status.
int readOptions(DeployOptions &opts) {
  opts.model = modelArg;
  opts.output = outputArg;
  opts.quantize = quantizeArg;
  opts.quantizeTable = quantizeTableArg;
  opts.calibrationTable = calibrationTableArg;
  opts.int8Fallback = int8FallbackArg;
  opts.asymmetric = asymmetricArg;
  opts.quantInput = quantInputArg;
  opts.quantOutput = quantOutputArg;
  opts.chip = chipArg;
  opts.testInput = testInputArg;
  opts.testReference = testReferenceArg;
  opts.tolerance = toleranceArg;
  opts.chipParams = chipParamArg;
  opts.configFiles = configArg;
  switch (layerGroupArg) {
  case LayerGroup::None:
    opts.layerGroup = "none";
    break;
  case LayerGroup::Greedy:
    opts.layerGroup = "greedy";
    break;
  case LayerGroup::Dp:
    opts.layerGroup = "dp";
    break;
  }
  opts.lgMaxLength = lgMaxLengthArg;
  opts.lgMaxHSlices = lgMaxHSlicesArg;
  opts.lgHFirst = lgHFirstArg;
  opts.noWeightResident = noWeightResidentArg;
  opts.noChannelSlices = noChannelSlicesArg;
  opts.noWidthSlices = noWidthSlicesArg;
  opts.lgKernels = lgKernelsArg;
  opts.noWeightPrefetch = noWeightPrefetchArg;
  opts.groupPerOp = groupPerOpArg;
  opts.exposeAll = exposeAllArg;
  if (std::string e = tpuc::tool::missingRequired(
          "deploy", {{"a model", !opts.model.empty()},
                     {"--quantize", !opts.quantize.empty()},
                     {"--chip", !opts.chip.empty()},
                     {"-o", !opts.output.empty()}});
      !e.empty())
    return fail(e);
  if (!opts.testReference.empty() && opts.testInput.empty())
    return fail("--test-reference needs --test-input");
  return -1;
}

void writeText(const std::string &path, const std::string &text) {
  tpu::isa::bmodel::writeFileAtomically(
      path, std::vector<uint8_t>(text.begin(), text.end()));
}

/// Writes \p module to \p path with top.weight_file pointing at
/// \p weightsAttr (the in-memory module keeps its own weight file).
void writeModule(mlir::ModuleOp module, const std::string &path,
                 llvm::StringRef weightsAttr) {
  std::string old = tpuc::module::getWeightFile(module).str();
  tpuc::module::setWeightFile(module, weightsAttr);
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  os << "\n";
  os.flush();
  tpuc::module::setWeightFile(module, old);
  writeText(path, text);
}

/// Writes the data of every tpu.Weight of \p module to \p path.
void writeWeights(mlir::ModuleOp module, const std::string &path) {
  // The arrays where the weight registry holds them, not copied.
  std::vector<std::pair<std::string, const tpu::npz::Array *>> arrays;
  llvm::StringSet<> seen;
  module.walk([&](tpuc::tpu::WeightOp w) {
    std::string name = w.getName().str();
    if (!seen.insert(name).second)
      return;
    const tpu::npz::Array *array =
        tpuc::findWeight(module, name, /*emitErrors=*/false);
    if (!array)
      throw tpu::Error("weight '" + name + "' has no data");
    arrays.emplace_back(name, array);
  });
  // Stored, not deflated, as tpuc transform writes the top weights.
  tpu::npz::writeNpz(path, arrays, {/*compress=*/false});
}

/// Appends every activation the function computes (results of tpu ops
/// other than weights) to its returned values.
void exposeAll(mlir::ModuleOp module) {
  mlir::func::FuncOp func = tpuc::module::getMainFunc(module);
  mlir::Block &body = func.getBody().front();
  mlir::Operation *terminator = body.getTerminator();
  llvm::SmallVector<mlir::Value> results(terminator->getOperands());
  llvm::DenseSet<mlir::Value> returned(results.begin(), results.end());
  for (mlir::Operation &op : body) {
    if (&op == terminator || mlir::isa<tpuc::tpu::WeightOp>(op) ||
        !mlir::isa<tpuc::tpu::TpuDialect>(op.getDialect()))
      continue;
    for (mlir::Value r : op.getResults())
      if (returned.insert(r).second)
        results.push_back(r);
  }
  terminator->setOperands(results);
  func.setType(mlir::FunctionType::get(module.getContext(),
                                       func.getArgumentTypes(),
                                       terminator->getOperandTypes()));
}

/// Runs the tpu module on \p inputPath; returns every kept tensor by name.
tpu::npz::Npz interpret(mlir::ModuleOp module, const std::string &inputPath,
                        std::vector<std::string> &outputNames) {
  tpu::npz::Npz inputs = tpu::npz::readNpz(inputPath);
  tpuc::ModuleInterpreter interpreter(module);
  tpuc::tool::setInputs(interpreter, inputs, inputPath);
  if (mlir::failed(interpreter.run(/*keepAll=*/true)))
    throw tpu::Error("interpreting the tpu module failed");
  tpu::npz::Npz out;
  for (const std::string &name : interpreter.tensorNames())
    if (interpreter.hasTensor(name))
      out.set(name, tpu::npz::Array::from<float>(interpreter.shape(name),
                                                 interpreter.tensor(name)));
  outputNames = interpreter.outputNames();
  return out;
}

/// The number of inf / NaN values in \p array.
size_t countNonFinite(const tpu::npz::Array &array) {
  size_t n = 0;
  for (double x : array.toDouble())
    n += !std::isfinite(x);
  return n;
}

/// The largest |x| over the finite values of \p array.
double maxAbsFinite(const tpu::npz::Array &array) {
  double m = 0;
  for (double x : array.toDouble())
    if (std::isfinite(x))
      m = std::max(m, std::fabs(x));
  return m;
}

/// When a model output holds inf / NaN (and the reference, if given, holds
/// none there): describes the first tpu op of a 16-bit result type whose
/// result has inf / NaN although all it reads is finite, i.e. where the
/// 16-bit type overflowed. Empty when there is no such output or op.
std::string findOverflow(mlir::ModuleOp module, const tpu::npz::Npz &result,
                         const std::vector<std::string> &outputNames,
                         const std::string &referencePath) {
  std::optional<tpu::npz::Npz> reference;
  if (!referencePath.empty())
    reference = tpu::npz::readNpz(referencePath);
  std::string badOutput;
  size_t badCount = 0;
  for (const std::string &name : outputNames) {
    const tpu::npz::Array *out = result.find(name);
    if (!out || !(badCount = countNonFinite(*out)))
      continue;
    const tpu::npz::Array *ref = reference ? reference->find(name) : nullptr;
    if (ref && countNonFinite(*ref))
      continue; // the f32 model computes inf / NaN there itself
    badOutput = name;
    break;
  }
  if (badOutput.empty())
    return "";
  // Program order, inside layer groups too (a group's own results are
  // those of its body's ops).
  std::vector<mlir::Operation *> ops;
  tpuc::module::getMainFunc(module).walk<mlir::WalkOrder::PreOrder>(
      [&](mlir::Operation *op) {
        if (mlir::isa_and_nonnull<tpuc::tpu::TpuDialect>(op->getDialect()) &&
            !mlir::isa<tpuc::tpu::WeightOp, tpuc::tpu::GroupOp,
                       tpuc::tpu::YieldOp>(op))
          ops.push_back(op);
      });
  for (mlir::Operation *opPtr : ops) {
    mlir::Operation &op = *opPtr;
    bool overflows = false;
    mlir::Type type;
    for (mlir::Value r : op.getResults()) {
      mlir::Type t = tpuc::tpu::getElementType(r);
      const tpu::npz::Array *a = result.find(tpuc::top::getTensorName(r));
      if ((t.isF16() || t.isBF16()) && a && countNonFinite(*a)) {
        overflows = true;
        type = t;
      }
    }
    if (!overflows)
      continue;
    double inMax = 0;
    bool inputsFinite = true;
    for (mlir::Value v : op.getOperands()) {
      // A layer group's body argument is the group's operand.
      if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(v))
        if (auto g = mlir::dyn_cast_or_null<tpuc::tpu::GroupOp>(
                arg.getOwner()->getParentOp()))
          v = g.getInputs()[arg.getArgNumber()];
      const tpu::npz::Array *a = nullptr;
      if (auto w = v.getDefiningOp<tpuc::tpu::WeightOp>())
        a = tpuc::findWeight(module, w.getName(), /*emitErrors=*/false);
      else if (!tpuc::top::isNone(v))
        a = result.find(tpuc::top::getTensorName(v));
      if (!a)
        continue;
      inputsFinite = inputsFinite && countNonFinite(*a) == 0;
      inMax = std::max(inMax, maxAbsFinite(*a));
    }
    if (!inputsFinite)
      continue;
    bool f16 = type.isF16();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "output '" << badOutput << "' has " << badCount
       << " inf/NaN value(s); the first op to overflow is " << op.getName()
       << " '" << tpuc::top::getTensorName(op.getResult(0)) << "' ("
       << (f16 ? "f16" : "bf16") << ", its inputs are finite with max |x| = "
       << llvm::formatv("{0:e2}", inMax).str() << "; "
       << (f16 ? "f16 holds |x| <= 65504" : "bf16 holds |x| <= 3.39e38") << ")";
    return os.str();
  }
  return "";
}

/// The smallest normal value of a 16-bit float type (f16 2^-14, bf16
/// 2^-126): below it the type loses precision, below its smallest
/// subnormal (f16 2^-24) values become 0.
double minNormal(mlir::Type t) {
  return t.isF16() ? 6.103515625e-05 : 1.1754943508222875e-38;
}

/// When a model output lies wholly below the smallest normal value of the
/// mode's 16-bit type (and the reference, if given, is not zero there;
/// without a reference, when the output is not all zero): describes the
/// first tpu op of a 16-bit result type whose result lies wholly below it
/// although what it reads reaches it, i.e. where the 16-bit type
/// underflowed. Empty when there is no such output or op.
std::string findUnderflow(mlir::ModuleOp module, const tpu::npz::Npz &result,
                          const std::vector<std::string> &outputNames,
                          const std::string &referencePath,
                          tpuc::QuantMode mode) {
  if (mode == tpuc::QuantMode::F32)
    return "";
  mlir::Builder b(module.getContext());
  double limit =
      minNormal(mode == tpuc::QuantMode::F16 ? mlir::Type(b.getF16Type())
                                             : mlir::Type(b.getBF16Type()));
  std::optional<tpu::npz::Npz> reference;
  if (!referencePath.empty())
    reference = tpu::npz::readNpz(referencePath);
  std::string badOutput;
  double outMax = 0, refMax = -1;
  for (const std::string &name : outputNames) {
    const tpu::npz::Array *out = result.find(name);
    if (!out || countNonFinite(*out))
      continue;
    outMax = maxAbsFinite(*out);
    if (outMax >= limit)
      continue;
    const tpu::npz::Array *ref = reference ? reference->find(name) : nullptr;
    refMax = ref ? maxAbsFinite(*ref) : -1;
    if (ref ? refMax == 0 : outMax == 0)
      continue; // the f32 model computes zeros there (or nothing tells)
    badOutput = name;
    break;
  }
  if (badOutput.empty())
    return "";
  mlir::Block &body = tpuc::module::getMainFunc(module).getBody().front();
  for (mlir::Operation &op : body) {
    if (!mlir::isa_and_nonnull<tpuc::tpu::TpuDialect>(op.getDialect()) ||
        mlir::isa<tpuc::tpu::WeightOp>(op))
      continue;
    double resMax = -1;
    mlir::Type type;
    for (mlir::Value r : op.getResults()) {
      mlir::Type t = tpuc::tpu::getElementType(r);
      const tpu::npz::Array *a = result.find(tpuc::top::getTensorName(r));
      if ((t.isF16() || t.isBF16()) && a && !countNonFinite(*a) &&
          maxAbsFinite(*a) < minNormal(t)) {
        resMax = maxAbsFinite(*a);
        type = t;
      }
    }
    if (resMax < 0)
      continue;
    double inMax = 0;
    for (mlir::Value v : op.getOperands()) {
      const tpu::npz::Array *a = nullptr;
      if (auto w = v.getDefiningOp<tpuc::tpu::WeightOp>())
        a = tpuc::findWeight(module, w.getName(), /*emitErrors=*/false);
      else if (!tpuc::top::isNone(v))
        a = result.find(tpuc::top::getTensorName(v));
      if (a)
        inMax = std::max(inMax, maxAbsFinite(*a));
    }
    if (inMax < minNormal(type))
      continue; // it only passes on what underflowed before it
    bool f16 = type.isF16();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "output '" << badOutput
       << "' has max |x| = " << llvm::formatv("{0:e2}", outMax).str();
    if (refMax >= 0)
      os << " (the reference: " << llvm::formatv("{0:e2}", refMax).str() << ")";
    os << ", below the smallest normal " << (f16 ? "f16" : "bf16")
       << "; the first op to underflow is " << op.getName() << " '"
       << tpuc::top::getTensorName(op.getResult(0)) << "' ("
       << (f16 ? "f16" : "bf16") << ": what it reads reaches max |x| = "
       << llvm::formatv("{0:e2}", inMax).str() << ", its result only "
       << llvm::formatv("{0:e2}", resMax).str() << "; "
       << (f16 ? "f16 is exact down to 6.10e-05 and 0 below 5.96e-08"
               : "bf16 is exact down to 1.18e-38")
       << ")";
    return os.str();
  }
  return "";
}

/// Compares the tensors of \p actual that \p reference also holds, the
/// model outputs against \p outputTol and every other tensor against
/// \p layerTol; a tensor of a !quant.uniform type (\p quant; the
/// interpreter holds its integers) is dequantised first, (q - zero_point) *
/// scale. Prints the table; true if all pass.
bool compare(const tpu::npz::Npz &actual, const std::string &referencePath,
             const tpuc::Tolerance &outputTol, const tpuc::Tolerance &layerTol,
             const std::vector<std::string> &outputNames,
             const tpuc::QuantParamMap &quant) {
  tpu::npz::Npz reference = tpu::npz::readNpz(referencePath);
  std::set<std::string> outputs(outputNames.begin(), outputNames.end());
  std::vector<tpuc::TensorComparison> rows;
  bool pass = true;
  for (const std::string &name : actual.names()) {
    const tpu::npz::Array *ref = reference.find(name);
    if (!ref)
      continue;
    const tpu::npz::Array *act = actual.find(name);
    std::vector<double> values = act->toDouble();
    if (auto it = quant.find(name); it != quant.end())
      tpuc::dequantize(values, it->second);
    const tpuc::Tolerance &tol = outputs.count(name) ? outputTol : layerTol;
    rows.push_back(tpuc::compareTensors(name, act->shape, values, ref->shape,
                                        ref->toDouble(), tol));
    pass = pass && rows.back().pass;
  }
  for (const std::string &name : outputNames)
    if (!reference.find(name))
      throw tpu::Error(referencePath + ": output '" + name +
                       "' is missing from the reference");
  tpuc::printComparisonTable(llvm::outs(), rows, outputTol);
  return pass;
}

/// Prints one line per layer group and writes them as JSON to \p path.
void writeGroupReport(const std::vector<tpuc::bm1684x::GroupReport> &groups,
                      const std::string &path, const std::string &strategy) {
  llvm::json::Array list;
  for (const tpuc::bm1684x::GroupReport &g : groups) {
    const tpu::backend::GroupPlan &p = g.plan;
    llvm::outs() << llvm::formatv(
        "{0}: {1} ops ({2} .. {3}), {4} x {5} slices{10}{12}{13}{11}, {6} "
        "timesteps, "
        "{7} B/lane local memory, {8} B DDR, cost {9} cycles\n",
        g.name, g.ops.size(), g.ops.front(), g.ops.back(), p.nSlices, p.hSlices,
        p.timesteps, p.lmemBytes, p.ddrReadBytes + p.ddrWriteBytes,
        p.estimatedCycles,
        p.cSlices > 1 ? " x " + std::to_string(p.cSlices) + " channel slices"
                      : std::string(),
        p.matrixColumns
            ? ", matrix columns in blocks of " + std::to_string(p.matrixColumns)
            : std::string(),
        p.wSlices > 1 ? " x " + std::to_string(p.wSlices) + " column slices"
                      : std::string(),
        p.kSlices > 1
            ? " x " + std::to_string(p.kSlices) + " reduced-axis slices"
            : std::string());
    llvm::json::Array ops;
    for (const std::string &op : g.ops)
      ops.push_back(op);
    list.push_back(llvm::json::Object{
        {"name", g.name},
        {"ops", std::move(ops)},
        {"n_slices", p.nSlices},
        {"h_slices", p.hSlices},
        {"c_slices", p.cSlices},
        {"w_slices", p.wSlices},
        // Reduced-axis slices (a group of one whose slices accumulate).
        {"k_slices", p.kSlices},
        // The matrix(w) layout's block width (0: the spec's own layout).
        {"matrix_columns", p.matrixColumns},
        {"timesteps", p.timesteps},
        {"lmem_bytes", int64_t(p.lmemBytes)},
        {"weight_bytes", int64_t(p.weightBytes)},
        {"ddr_read_bytes", int64_t(p.ddrReadBytes)},
        {"ddr_write_bytes", int64_t(p.ddrWriteBytes)},
        {"macs", int64_t(p.macs)},
        {"tiu_commands", int64_t(p.numTiu)},
        {"gdma_commands", int64_t(p.numGdma)},
        {"cost_cycles", int64_t(p.estimatedCycles)},
        {"gdma_stall_cycles", int64_t(p.stallCycles)},
        {"weight_order", tpu::backend::weightOrderName(p.weightOrder)},
        // The weight prefetch between neighbouring groups (-1: none).
        {"first_weights_at", p.firstWeightsAt},
        {"next_weights_at", p.nextWeightsAt}});
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv(
            "{0:2}",
            llvm::json::Value(llvm::json::Object{
                {"strategy", strategy}, {"groups", std::move(list)}}))
     << "\n";
  os.flush();
  writeText(path, text);
}

} // namespace

static int runDeploy() {
  DeployOptions opts;
  if (int status = readOptions(opts); status >= 0)
    return status;

  std::optional<tpuc::QuantMode> mode = tpuc::parseQuantMode(opts.quantize);
  if (!mode)
    return fail("--quantize '" + opts.quantize +
                "' is not a supported mode (F32, F16, BF16 or INT8)");
  std::optional<tpuc::QuantMode> fallback =
      tpuc::parseQuantMode(opts.int8Fallback);
  if (!fallback || *fallback == tpuc::QuantMode::INT8)
    return fail("--int8-fallback '" + opts.int8Fallback +
                "' is not F32, F16 or BF16");
  if (llvm::StringRef(opts.chip).lower() != "bm1684x")
    return fail("--chip '" + opts.chip + "' is not supported (bm1684x)");
  // A key with a prefix (chip.*, tiu.*, ...) is a machine key; a bare key
  // is a chip parameter, as it always was.
  tpu::isa::Machine machine = tpu::isa::Machine::bm1684x();
  for (const std::string &f : opts.configFiles)
    machine.loadFile(f); // its errors name the file and line
  for (const std::string &kv : opts.chipParams) {
    try {
      machine.assign(tpu::tool::machineKey(kv));
    } catch (const tpu::Error &e) {
      return fail("-p " + kv + ": " + e.what());
    }
  }
  machine.validate();
  // The machine's name is the chip's: the bmodel says BM1684X (--chip), and
  // tpusim refuses a bmodel whose machine names another.
  if (machine.chip.name != tpu::isa::bmodel::kChipName)
    return fail("chip.name = " + machine.chip.name +
                ": tpuc deploy compiles for the BM1684X (--chip bm1684x); "
                "the machine keeps its name (other keys make another "
                "machine of it)");
  const tpu::isa::ChipParams &chip = machine.chip;
  bool int8Defaults = opts.tolerance.empty() && *mode == tpuc::QuantMode::INT8;
  std::string tolText = !opts.tolerance.empty() ? opts.tolerance
                        : int8Defaults          ? kInt8OutputTolerance
                                                : kFloatTolerance;
  llvm::Expected<tpuc::Tolerance> tol = tpuc::parseTolerance(tolText);
  if (!tol)
    return fail("--tolerance: " + llvm::toString(tol.takeError()));
  tpuc::Tolerance layerTol = *tol;
  if (int8Defaults)
    layerTol = cantFail(tpuc::parseTolerance(kInt8LayerTolerance));

  llvm::SmallString<256> stem(opts.output);
  if (llvm::sys::path::extension(stem) == ".bmodel")
    llvm::sys::path::replace_extension(stem, "");
  std::string tpuPath = (stem + "_tpu.mlir").str();
  std::string finalPath = (stem + "_final.mlir").str();
  std::string weightsPath = (stem + "_tpu_weights.npz").str();
  std::string outputsPath = (stem + "_tpu_outputs.npz").str();
  std::string groupsPath = (stem + "_groups.json").str();
  std::string opsPath = (stem + "_ops.json").str();
  std::string weightsAttr = llvm::sys::path::filename(weightsPath).str();
  std::vector<std::string> outputs = {opts.output, tpuPath,    finalPath,
                                      weightsPath, groupsPath, opsPath};
  if (!opts.testInput.empty())
    outputs.push_back(outputsPath);
  if (std::string error = tpuc::tool::checkOutputPaths(
          outputs, tpuc::tool::moduleInputs(
                       opts.model, "the module",
                       {{"--test-input", opts.testInput},
                        {"--test-reference", opts.testReference},
                        {"--calibration-table", opts.calibrationTable},
                        {"--quantize-table", opts.quantizeTable}}));
      !error.empty())
    return fail(error + "; nothing written");

  std::unique_ptr<mlir::MLIRContext> context = tpuc::tool::createContext();
  tpuc::tool::ParsedModule parsed;
  if (std::string error = tpuc::tool::loadModule(*context, opts.model,
                                                 /*requireTop=*/true, parsed);
      !error.empty())
    return fail(error);
  mlir::ModuleOp module = *parsed.module;
  // Shapes come in here: refuse what cannot fit the machine before any
  // pass sizes buffers from them.
  if (std::string error = tpuc::tool::checkTensorSizes(
          module, *mode == tpuc::QuantMode::F32 ? 4 : 2, chip.gmemBytes,
          "the chip's global memory (gmem_bytes)");
      !error.empty())
    return fail(opts.model + ": " + error);
  // A bad test input is refused before anything is written.
  if (!opts.testInput.empty())
    tpu::npz::checkInputs(tpu::npz::readNpz(opts.testInput),
                          tpuc::tool::inputSpecs(module), opts.testInput);
  tpuc::module::setMachine(module, machine);

  // The calibration table: --calibration-table, else the one a model
  // imported with its own quantisation (a quantised TFLite model) carries.
  std::optional<tpuc::QuantTable> table;
  std::optional<tpuc::CaliTable> cali;
  if (std::string e = tpuc::tool::loadCompileTables(
          module, opts.model, opts.quantizeTable, opts.calibrationTable,
          table, cali);
      !e.empty())
    return fail(e);
  if (*mode == tpuc::QuantMode::INT8 && !cali)
    return fail("--quantize INT8 needs --calibration-table (made by tpuc "
                "calibrate)");
  if (table && !cali)
    for (const auto &entry : table->entries)
      if (entry.second.mode == tpuc::QuantMode::INT8)
        return fail(opts.quantizeTable +
                    ": INT8 entries need --calibration-table (made by tpuc "
                    "calibrate)");
  // A table given for a float deploy that lowers nothing to INT8 (no
  // INT8 entry in the quantize table) does nothing: said, not refused
  // (TPU-MLIR's model_deploy takes it so too).
  if (*mode != tpuc::QuantMode::INT8 && !opts.calibrationTable.empty()) {
    bool int8Entries = false;
    if (table)
      for (const auto &entry : table->entries)
        int8Entries |= entry.second.mode == tpuc::QuantMode::INT8;
    if (!int8Entries)
      llvm::errs() << "tpuc deploy: warning: --calibration-table "
                   << opts.calibrationTable << " is not used: --quantize "
                   << tpuc::quantModeName(*mode)
                   << " lowers no op to INT8 (only the INT8 entries of a "
                      "--quantize-table would)\n";
  }
  llvm::StringRef modeName = tpuc::quantModeName(*mode);
  tpuc::deploy::PipelineOptions pipeline;
  pipeline.mode = *mode;
  pipeline.quantTable = table ? &*table : nullptr;
  pipeline.cali = cali ? &*cali : nullptr;
  pipeline.int8Fallback = *fallback;
  pipeline.asymmetric = opts.asymmetric;
  pipeline.quantInput = opts.quantInput;
  pipeline.quantOutput = opts.quantOutput;
  if ((opts.quantInput || opts.quantOutput) && !cali)
    return fail("--quant-input / --quant-output need INT8 and "
                "--calibration-table");
  pipeline.machine = machine;
  pipeline.layerGroup = opts.layerGroup;
  pipeline.lgMaxLength = opts.lgMaxLength;
  pipeline.lgMaxHSlices = opts.lgMaxHSlices;
  pipeline.lgHFirst = opts.lgHFirst;
  pipeline.weightResident = !opts.noWeightResident;
  pipeline.channelSlices = !opts.noChannelSlices;
  pipeline.widthSlices = !opts.noWidthSlices;
  pipeline.lgKernels = opts.lgKernels;
  pipeline.weightPrefetch = !opts.noWeightPrefetch;
  pipeline.groupPerOp = opts.groupPerOp;
  tpuc::deploy::PipelineResult compiled;
  tpuc::deploy::PipelineHooks hooks;
  // Every file goes under a temporary name until the compile has
  // succeeded: a refusal (an overflow, a missed tolerance, an error) leaves
  // the paths as they were, never files of this compile beside a bmodel of
  // an older one.
  tpu::isa::bmodel::StagedFiles staged;
  hooks.afterLowering = [&](mlir::ModuleOp module) -> std::string {
    if (opts.exposeAll)
      exposeAll(module);
    staged.write(weightsPath,
                 [&](const std::string &t) { writeWeights(module, t); });
    staged.write(tpuPath, [&](const std::string &t) {
      writeModule(module, t, weightsAttr);
    });
    return "";
  };
  hooks.afterCodegen = [&](mlir::ModuleOp module) -> std::string {
    staged.write(finalPath, [&](const std::string &t) {
      writeModule(module, t, weightsAttr);
    });
    if (opts.testInput.empty())
      return "";
    const std::vector<std::string> &modelOutputs = compiled.modelOutputs;
    std::vector<std::string> outputNames;
    tpu::npz::Npz result = interpret(module, opts.testInput, outputNames);
    tpu::npz::Npz outputs;
    for (const std::string &name : outputNames)
      outputs.set(name, *result.find(name));
    staged.write(outputsPath, [&](const std::string &t) {
      tpu::npz::writeNpz(t, outputs, /*compress=*/false);
    });
    std::string overflow =
        findOverflow(module, result, outputNames, opts.testReference);
    std::string kind = "overflow";
    if (overflow.empty()) {
      overflow =
          findUnderflow(module, result, outputNames, opts.testReference, *mode);
      kind = "underflow";
    }
    if (!overflow.empty()) {
      llvm::SmallString<256> qtablePath(stem);
      qtablePath += ".qtable";
      return overflow + ".\nKeep the ops that " + kind +
             " in F32 with a " + "quantize table:\n  tpuc qtable " +
             opts.model + " --test-input " + opts.testInput + " --quantize " +
             modeName.str() + " -o " + qtablePath.str().str() +
             "\nthen deploy again with " + "--quantize-table " +
             qtablePath.str().str() + "; no bmodel written";
    }
    if (!opts.testReference.empty() &&
        !compare(result, opts.testReference, *tol, layerTol, modelOutputs,
                 tpuc::quantParamsOf(module)))
      return "the " + modeName.str() + " tpu module misses the tolerance " +
             (int8Defaults
                  ? std::string(kInt8OutputTolerance) + " (outputs) / " +
                        kInt8LayerTolerance + " (other tensors)"
                  : tolText) +
             " against " + opts.testReference +
             " (see the table above); no bmodel written";
    return "";
  };
  if (std::string error =
          tpuc::deploy::compile(module, pipeline, hooks, compiled);
      !error.empty())
    return fail(error);
  std::vector<tpuc::bm1684x::GroupReport> &groupReports = compiled.groups;
  std::vector<std::string> &floatOps = compiled.floatOps;
  tpuc::bm1684x::CodegenSummary &summary = compiled.summary;
  tpu::isa::bmodel::Model *model = &compiled.model;
  staged.write(opts.output, [&](const std::string &t) {
    tpu::isa::bmodel::writeModel(*model, t);
  });
  staged.write(groupsPath, [&](const std::string &t) {
    writeGroupReport(groupReports, t, opts.layerGroup);
  });
  staged.write(opsPath, [&](const std::string &t) {
    tpu::isa::writeOpMap(summary.opMap, t);
  });
  std::vector<std::string> written = staged.commit();
  // The interpreter's outputs of an earlier deploy with --test-input would
  // sit beside this bmodel as if they were its own.
  if (opts.testInput.empty())
    llvm::sys::fs::remove(outputsPath);
  std::string modes = modeName.str();
  if (table) {
    std::map<std::string, unsigned> perMode;
    for (const auto &entry : table->entries)
      ++perMode[tpuc::quantModeName(entry.second.mode).str()];
    for (const auto &[m, n] : perMode)
      modes += ", " + std::to_string(n) + " op(s) " + m;
    modes += " by " + opts.quantizeTable;
  }
  if (!floatOps.empty()) {
    llvm::outs() << kTool << ": " << floatOps.size() << " op(s) in "
                 << opts.int8Fallback << " (no INT8 form):\n";
    for (const std::string &line : floatOps)
      llvm::outs() << "  " << line << "\n";
  }
  llvm::outs() << kTool << ": " << opts.output << " (" << modes
               << "): " << summary.numGroups << " command group(s), "
               << summary.numTiu << " TIU + " << summary.numGdma
               << " GDMA commands, " << summary.coeffBytes
               << " bytes of weights, " << summary.neuronBytes
               << " bytes of activations\n";
  written.erase(std::remove(written.begin(), written.end(), opts.output),
                written.end());
  llvm::outs() << kTool << ": beside it: " << llvm::join(written, ", ") << "\n";
  tpuc::getWeightRegistry(context.get()).release(module);
  return 0;
}

const tpuc::cli::Subcommand tpuc::cli::deploy{command, kOverview, runDeploy};
