//===- Int8Search.cpp - INT8 accuracy of a top module against F32 ---------===//
#include "Int8Search.h"

#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/CaliTable.h"
#include "tpuc/Support/Compare.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"

#include "mlir/IR/OwningOpRef.h"

namespace tpuc::tool {

namespace {

/// Runs \p module on every sample; out[sample][output].
std::vector<std::vector<std::vector<float>>>
runAll(mlir::ModuleOp module, const std::vector<std::string> &inputs,
       const std::vector<calibration::SampleInputs> &samples, unsigned threads,
       const char *what) {
  ModuleInterpreter interp(module);
  if (threads)
    interp.setNumThreads(threads);
  std::vector<std::string> outputs = interp.outputNames();
  std::vector<std::vector<std::vector<float>>> out;
  for (size_t s = 0; s < samples.size(); ++s) {
    for (size_t k = 0; k < inputs.size(); ++k)
      interp.setInput(inputs[k], samples[s][k]);
    if (mlir::failed(interp.run()))
      throw ::tpu::Error(std::string("interpreting the ") + what +
                         " module on sample " + std::to_string(s) + " failed");
    std::vector<std::vector<float>> row;
    for (const std::string &name : outputs)
      row.push_back(interp.tensor(name));
    out.push_back(std::move(row));
  }
  return out;
}

} // namespace

Int8Evaluator::Int8Evaluator(mlir::ModuleOp top,
                             std::vector<calibration::SampleInputs> samples,
                             unsigned threads)
    : top(top), samples(std::move(samples)), threads(threads) {
  ModuleInterpreter interp(top);
  inputs = interp.inputNames();
  outputs = interp.outputNames();
  reference = runAll(top, inputs, this->samples, threads, "top");
}

Int8Evaluator::Result Int8Evaluator::evaluate(const CaliTable &cali,
                                              const QuantTable *qtable,
                                              QuantMode fallback) const {
  mlir::ModuleOp source = top; // the IR is only read
  mlir::OwningOpRef<mlir::ModuleOp> clone(source.clone());
  WeightRegistry &registry = getWeightRegistry(source.getContext());
  // The clone reads the weights the top module has loaded.
  registry.get(*clone) = registry.get(source);
  struct Release {
    WeightRegistry &registry;
    mlir::ModuleOp module;
    ~Release() { registry.release(module); }
  } release{registry, *clone};

  Result result;
  Int8Options int8;
  int8.cali = &cali;
  int8.fallback = fallback;
  int8.floatOps = &result.floatOps;
  int8.int8Ops = &result.int8Ops;
  if (mlir::failed(lowerTopToTpu(*clone, QuantMode::INT8, qtable, int8)))
    throw ::tpu::Error("lowering to INT8 failed");
  if (mlir::failed(tpu::reorderWeights(*clone)))
    throw ::tpu::Error("choosing the weight layouts failed");

  ModuleInterpreter check(*clone);
  if (check.outputNames() != outputs)
    throw ::tpu::Error("the INT8 module's outputs are not the top module's");
  std::vector<std::vector<std::vector<float>>> actual =
      runAll(*clone, inputs, samples, threads, "INT8");
  double sum = 0;
  size_t n = 0;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!isStacked(k)) {
      for (size_t s = 0; s < samples.size(); ++s, ++n)
        sum += computeSimilarity(actual[s][k], reference[s][k]).cosine;
      continue;
    }
    std::vector<float> a, b;
    for (size_t s = 0; s < samples.size(); ++s) {
      a.insert(a.end(), actual[s][k].begin(), actual[s][k].end());
      b.insert(b.end(), reference[s][k].begin(), reference[s][k].end());
    }
    // Counted once per sample, as the per-sample cosines of the others.
    sum += computeSimilarity(a, b).cosine * double(samples.size());
    n += samples.size();
  }
  result.cosine = n ? sum / double(n) : 1.0;
  return result;
}

} // namespace tpuc::tool
