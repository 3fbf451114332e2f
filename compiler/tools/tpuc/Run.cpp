//===- Run.cpp - tpuc run: interpret a top module -------------------------===//
//
//   tpuc run model_top.mlir -i in.npz|image.png -o out.npz [--dump-all]
//       [--threads N]
//
// Parses the module, loads its weights, feeds the arrays of in.npz to the
// top.Input ops of the same name (or an image, through the module's
// top.preprocess, to its one input), runs the reference interpreter and writes
// the returned tensors by name (--dump-all: every tensor the function
// produces, inputs included, under its framework name). Any error leaves no
// output file behind (npz writes go through a temp file and a rename).
//
// A tpu module runs too (<stem>_tpu.mlir or _final.mlir of tpuc deploy;
// --dump-all then holds every tensor, inside layer groups too, which
// `tpuc compare` matches against `tpusim run --dump-all`). Tensors of a
// !quant.uniform type are written in their storage type (int8 / uint8
// arrays of the integers the interpreter holds), as tpusim writes them;
// `tpuc compare --dequant` turns them into real values. Integer tensors
// (the int8 filters and int32 biases of an INT8 module, indices) are
// written in their own type, float tensors (f32, f16, bf16) as float32.
//
//===----------------------------------------------------------------------===//
#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Preprocess.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Npz.h"
#include "tpu/isa/Numerics.h"

#include "mlir/Dialect/Quant/QuantTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace cl = llvm::cl;

cl::SubCommand command("run", "interpret a top or tpu module on the inputs "
                              "of an .npz file");
tpuc::cli::Category category("tpuc run options");

constexpr const char *kOverview =
    R"(tpuc run: interpret the main function of a top module (in float32) or
of a tpu module (model_tpu.mlir / model_final.mlir of tpuc deploy, in its
quantised types, as the chip computes)

  tpuc run model_top.mlir|model_tpu.mlir|model_final.mlir -i in.npz|image.png
           -o out.npz [--dump-all] [--threads N]
)";

cl::opt<std::string> modelArg(cl::Positional, cl::desc("MODULE.mlir"),
                              cl::sub(command), cl::cat(category));
cl::opt<std::string> inputArg(
    "input",
    cl::desc(".npz with one array per model input (by input name), or a "
             ".png/.jpg/.jpeg image for a model with one input: "
             "preprocessed as the module's top.preprocess says (tpuc "
             "transform --mean/--scale/--pixel-format/...); a module "
             "without it takes the image as mean 0, scale 1, rgb, nchw, "
             "resized to the input's H, W"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(category));
cl::alias inputShort("i", cl::desc("Alias for --input"), cl::aliasopt(inputArg),
                     cl::NotHidden, cl::cat(category));
cl::opt<std::string> outputArg("output",
                               cl::desc(".npz to write: the outputs by name"),
                               cl::value_desc("FILE"), cl::sub(command),
                               cl::cat(category));
cl::alias outputShort("o", cl::desc("Alias for --output"),
                      cl::aliasopt(outputArg), cl::NotHidden,
                      cl::cat(category));
cl::opt<bool> dumpAllArg(
    "dump-all",
    cl::desc("also write every intermediate tensor under its ONNX name"),
    cl::sub(command), cl::cat(category));
cl::opt<std::string>
    threadsArg("threads",
               cl::desc("threads for the kernels (default: all cores)"),
               cl::value_desc("N"), cl::sub(command), cl::cat(category));

struct RunOptions {
  std::string model;
  std::string input;
  std::string output;
  bool dumpAll = false;
  unsigned threads = 0;
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "tpuc run: error: " << message << "\n";
  return 1;
}

/// The parsed options, checked; returns -1 to go on, else the exit status.
int readOptions(RunOptions &opts) {
  opts.model = modelArg;
  opts.input = inputArg;
  opts.output = outputArg;
  opts.dumpAll = dumpAllArg;
  if (threadsArg.getNumOccurrences() &&
      (!llvm::to_integer(threadsArg.getValue(), opts.threads) ||
       opts.threads == 0))
    return fail("--threads needs a positive integer");
  if (std::string e =
          tpuc::tool::missingRequired("run", {{"a model", !opts.model.empty()},
                                              {"-i", !opts.input.empty()},
                                              {"-o", !opts.output.empty()}});
      !e.empty())
    return fail(e);
  if (std::string e = tpuc::tool::checkOutputPaths(
          {opts.output}, tpuc::tool::moduleInputs(opts.model, "the model",
                                                  {{"-i", opts.input}}));
      !e.empty())
    return fail(e);
  return -1;
}

/// The npz type a tensor of element type `t` is written in when it is an
/// integer one: a !quant.uniform type's storage type, an integer type
/// itself (signless as signed, i1 as bool). nullopt for the float types,
/// written as float32.
std::optional<tpu::npz::DType> npzDType(mlir::Type t) {
  using tpu::npz::DType;
  bool isSigned;
  unsigned width;
  if (auto q = mlir::dyn_cast<mlir::quant::QuantizedType>(t)) {
    isSigned = q.isSigned();
    width = q.getStorageTypeIntegralWidth();
  } else if (auto i = mlir::dyn_cast<mlir::IntegerType>(t)) {
    isSigned = !i.isUnsigned();
    width = i.getWidth();
  } else {
    return std::nullopt;
  }
  switch (width) {
  case 1:
    return DType::Bool;
  case 8:
    return isSigned ? DType::I8 : DType::U8;
  case 16:
    return isSigned ? DType::I16 : DType::U16;
  case 32:
    return isSigned ? DType::I32 : DType::U32;
  case 64:
    return isSigned ? DType::I64 : DType::U64;
  default:
    return std::nullopt;
  }
}

/// The interpreter's values of an integer tensor (integers held as
/// floats) as an array of `dtype`: rounded to the nearest (isa::roundToInt:
/// ties to even, NaN, which no integer op makes, as 0), clamped to its
/// range.
template <typename T>
void fillIntegers(tpu::npz::Array &a, const std::vector<float> &data) {
  T *out = a.as<T>();
  for (size_t i = 0; i < data.size(); ++i) {
    int64_t v = tpu::isa::roundToInt(data[i], tpu::isa::RoundMode::HalfToEven);
    if constexpr (std::is_same_v<T, bool>)
      out[i] = v != 0;
    else if constexpr (std::is_same_v<T, uint64_t>)
      out[i] = v < 0 ? 0 : T(v);
    else
      out[i] = T(std::clamp<int64_t>(v, std::numeric_limits<T>::min(),
                                     std::numeric_limits<T>::max()));
  }
}

tpu::npz::Array integerArray(tpu::npz::DType dtype,
                             const std::vector<int64_t> &shape,
                             const std::vector<float> &data) {
  using tpu::npz::DType;
  tpu::npz::Array a(dtype, shape);
  switch (dtype) {
  case DType::Bool:
    fillIntegers<bool>(a, data);
    break;
  case DType::I8:
    fillIntegers<int8_t>(a, data);
    break;
  case DType::U8:
    fillIntegers<uint8_t>(a, data);
    break;
  case DType::I16:
    fillIntegers<int16_t>(a, data);
    break;
  case DType::U16:
    fillIntegers<uint16_t>(a, data);
    break;
  case DType::I32:
    fillIntegers<int32_t>(a, data);
    break;
  case DType::U32:
    fillIntegers<uint32_t>(a, data);
    break;
  case DType::I64:
    fillIntegers<int64_t>(a, data);
    break;
  case DType::U64:
    fillIntegers<uint64_t>(a, data);
    break;
  default:
    break;
  }
  return a;
}

} // namespace

static int runRun() {
  RunOptions opts;
  if (int status = readOptions(opts); status >= 0)
    return status;

  // Inputs first: a bad npz should not wait for a large module to parse.
  // An image needs the module's preprocessing: read after it.
  bool image = tpuc::isImagePath(opts.input);
  tpu::npz::Npz inputs;
  if (!image)
    inputs = tpu::npz::readNpz(opts.input);

  std::unique_ptr<mlir::MLIRContext> context = tpuc::tool::createContext();
  tpuc::tool::ParsedModule parsed;
  if (std::string error = tpuc::tool::loadModule(*context, opts.model,
                                                 /*requireTop=*/false, parsed);
      !error.empty())
    return fail(error);
  mlir::ModuleOp module = *parsed.module;
  if (!tpuc::module::getMainFunc(module))
    return fail("'" + opts.model + "' has no function to run");

  tpuc::tool::checkFitsHostMemory(module, opts.model);
  tpuc::ModuleInterpreter interpreter(module);
  if (opts.threads)
    interpreter.setNumThreads(opts.threads);

  // The rule of every tool (tpu::npz::checkInputs): one float32 array per
  // input with its shape, no other array.
  if (image)
    tpuc::tool::setImageInput(interpreter, module, opts.input);
  else
    tpuc::tool::setInputs(interpreter, inputs, opts.input);

  if (mlir::failed(interpreter.run(/*keepAll=*/opts.dumpAll)))
    return fail("interpreting '" + opts.model + "' failed");

  // The integer type of every tensor that has one (npzDType).
  llvm::StringMap<tpu::npz::DType> intTypes;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Value r : op->getResults())
      if (auto t = mlir::dyn_cast<mlir::RankedTensorType>(r.getType()))
        if (std::optional<tpu::npz::DType> d = npzDType(t.getElementType()))
          intTypes[tpuc::top::getTensorName(r)] = *d;
  });
  tpu::npz::Npz outputs;
  auto add = [&](const std::string &name) {
    const std::vector<float> &data = interpreter.tensor(name);
    std::vector<int64_t> shape = interpreter.shape(name);
    auto it = intTypes.find(name);
    outputs.set(name, it == intTypes.end()
                          ? tpu::npz::Array::from<float>(shape, data)
                          : integerArray(it->second, shape, data));
  };
  if (opts.dumpAll)
    for (const std::string &name : interpreter.tensorNames())
      add(name);
  for (const std::string &name : interpreter.outputNames())
    add(name);
  // Stored, not deflated: dumps of large models run to hundreds of MB and
  // deflating them costs more than the interpretation.
  tpu::npz::writeNpz(opts.output, outputs, /*compress=*/false);
  llvm::outs() << "tpuc run: " << opts.output << " (" << outputs.size()
               << " tensors)\n";
  return 0;
}

const tpuc::cli::Subcommand tpuc::cli::run{command, kOverview, runRun};
