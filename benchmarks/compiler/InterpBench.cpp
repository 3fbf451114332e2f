//===- InterpBench.cpp - Speed of the top interpreter and the importer ----===//
//
// Real pretrained models from models/manifest.json (fetched into
// models/cache/ by scripts/fetch_models.sh, or $TPU_MODELS_CACHE):
//   BM_Interpret/<model>/<threads>: one inference of the top interpreter
//     (ModuleInterpreter::run) on the module `tpuc transform` writes (import,
//     then shape inference and canonicalisation) — compare with
//     scripts/bench_ort.sh for ONNX Runtime on the same model.
//   BM_Import/<model>: ONNX file -> top module in a fresh MLIRContext (the
//     import alone, without the passes).
// A model missing from the cache is reported with SkipWithError.
//
// The input is a fixed smooth pattern in [-1, 1] (timing does not depend on
// the values; scripts/make_inputs.py makes the test inputs).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Frontend/OnnxImporter.h"
#include "tpuc/InitAll.h"
#include "tpuc/Interpreter/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

struct BenchModel {
  const char *name;
  const char *file;
  std::vector<int64_t> inputShape;
};

// Shapes as in models/manifest.json.
const BenchModel kDet{
    "ppocr_det", "ch_PP-OCRv4_det_infer.onnx", {1, 3, 640, 640}};
const BenchModel kRec{
    "ppocr_rec", "ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 320}};

std::string modelPath(const BenchModel &m) {
  const char *cache = std::getenv("TPU_MODELS_CACHE");
  std::string dir = cache ? cache : TPU_SOURCE_DIR "/models/cache";
  return dir + "/" + m.file;
}

bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  tpuc::registerAllDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

/// An imported model, kept for the whole process so that each benchmark
/// imports it once.
struct Imported {
  std::unique_ptr<mlir::MLIRContext> context;
  tpuc::frontend::OnnxImportResult result;
};

/// Imports \p m (cached); sets \p error and returns null on failure.
Imported *importOnce(const BenchModel &m, std::string &error) {
  static std::map<std::string, std::unique_ptr<Imported>> cache;
  auto it = cache.find(m.name);
  if (it != cache.end())
    return it->second.get();
  std::string path = modelPath(m);
  if (!fileExists(path)) {
    error = path + " is missing: run scripts/fetch_models.sh";
    return nullptr;
  }
  auto imported = std::make_unique<Imported>();
  imported->context = makeContext();
  tpuc::frontend::OnnxImportOptions options;
  options.inputShapes = {m.inputShape};
  try {
    imported->result =
        tpuc::frontend::importOnnxFile(*imported->context, path, options);
  } catch (const std::exception &e) {
    error = e.what();
    return nullptr;
  }
  // The passes of `tpuc transform` (Transform.cpp), so that the benchmark
  // times the module `tpuc run` executes.
  mlir::PassManager pm(imported->context.get());
  pm.addPass(tpuc::top::createShapeInferPass());
  pm.addPass(mlir::createCanonicalizerPass());
  if (mlir::failed(pm.run(*imported->result.module))) {
    error = "shape inference / canonicalisation failed";
    return nullptr;
  }
  return cache.emplace(m.name, std::move(imported)).first->second.get();
}

std::vector<float> smoothInput(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  std::vector<float> data(n);
  // Incommensurate frequencies: no period lines up with a row or channel.
  constexpr double kFreqA = 0.013, kFreqB = 0.0007;
  for (size_t i = 0; i < n; ++i)
    data[i] = static_cast<float>(0.6 * std::sin(kFreqA * i) +
                                 0.4 * std::cos(kFreqB * i));
  return data;
}

void BM_Interpret(benchmark::State &state, const BenchModel *m) {
  std::string error;
  Imported *imported = importOnce(*m, error);
  if (!imported) {
    state.SkipWithError(error.c_str());
    return;
  }
  tpuc::ModuleInterpreter interpreter(*imported->result.module);
  interpreter.setNumThreads(static_cast<unsigned>(state.range(0)));
  std::vector<std::string> inputs = interpreter.inputNames();
  std::vector<std::string> outputs = interpreter.outputNames();
  if (inputs.size() != 1 || outputs.empty()) {
    state.SkipWithError("expected one input and at least one output");
    return;
  }
  const std::vector<float> input = smoothInput(m->inputShape);
  // Untimed first run: loads the weights and allocates the buffers.
  interpreter.setInput(inputs[0], input);
  if (mlir::failed(interpreter.run())) {
    state.SkipWithError("the interpreter failed");
    return;
  }
  for (auto _ : state) {
    interpreter.setInput(inputs[0], input);
    if (mlir::failed(interpreter.run())) {
      state.SkipWithError("the interpreter failed");
      break;
    }
    benchmark::DoNotOptimize(interpreter.tensor(outputs[0]).data());
  }
}

void BM_Import(benchmark::State &state, const BenchModel *m) {
  std::string path = modelPath(*m);
  if (!fileExists(path)) {
    state.SkipWithError(
        (path + " is missing: run scripts/fetch_models.sh").c_str());
    return;
  }
  tpuc::frontend::OnnxImportOptions options;
  options.inputShapes = {m->inputShape};
  for (auto _ : state) {
    std::unique_ptr<mlir::MLIRContext> context = makeContext();
    try {
      tpuc::frontend::OnnxImportResult result =
          tpuc::frontend::importOnnxFile(*context, path, options);
      benchmark::DoNotOptimize(result.module.get());
    } catch (const std::exception &e) {
      state.SkipWithError(e.what());
      break;
    }
  }
}

} // namespace

// Arg = interpreter threads (1, and the machine's 2 cores).
BENCHMARK_CAPTURE(BM_Interpret, ppocr_det, &kDet)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(BM_Interpret, ppocr_rec, &kRec)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
// ppocr_rec is the largest model of the manifest (10.8 MB).
BENCHMARK_CAPTURE(BM_Import, ppocr_rec, &kRec)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Import, ppocr_det, &kDet)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
