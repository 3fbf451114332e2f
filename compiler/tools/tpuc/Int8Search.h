//===- Int8Search.h - INT8 accuracy of a top module against F32 -*- C++ -*-===//
//
// What `tpuc calibrate --search-threshold` and `tpuc qtable
// --calibration-table` measure: how close the INT8 module is to the top
// (f32) module on a few samples.
//
// An Int8Evaluator runs the top interpreter once per sample and keeps the
// model outputs as the reference. evaluate() then, for one calibration table
// (and optionally a quantize table of per-op modes), lowers a clone of the
// top module in memory exactly as `tpuc deploy --quantize INT8` does
// (lowerTopToTpu, then tpu::reorderWeights), runs the tpu interpreter on
// every sample and returns the mean cosine similarity (tpuc::
// computeSimilarity) over the model outputs and the samples. The numbers are
// the ones `tpuc deploy --test-input` prints for the same sample: the
// interpreter sees the same tpu ops (layer groups and addresses change no
// number). An output of one value per sample (a wake-word head's score) is
// compared over all samples stacked instead, that cosine counting once per
// sample: the cosine of a single value is its sign (1 for any positive
// score), which would make every table look perfect.
//
// The clone gets a copy of the top module's weight store entry (no second
// read of the weight file) and gives it back to the registry after the run;
// the weight store is not thread-safe, so evaluations run one after another
// (the interpreter's kernels use the threads).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TOOLS_TPUC_INT8SEARCH_H
#define TPUC_TOOLS_TPUC_INT8SEARCH_H

#include "tpuc/Calibration/Dataset.h"
#include "tpuc/Conversion/TopToTpu/TopToTpu.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace tpuc {
struct CaliTable;
}

namespace tpuc::tool {

class Int8Evaluator {
public:
  /// Outputs with fewer values per sample are compared stacked over the
  /// samples (only single values: a cosine of two or more says something).
  static constexpr size_t kStackBelow = 2;

  /// \p top is a loaded top module; \p samples the model inputs of each
  /// sample in the order of the module's inputs. Runs the top interpreter on
  /// every sample (throws tpu::Error when it fails).
  Int8Evaluator(mlir::ModuleOp top,
                std::vector<calibration::SampleInputs> samples,
                unsigned threads);

  struct Result {
    /// Mean cosine over the model outputs and the samples (a small output
    /// stacked over the samples).
    double cosine = 0;
    /// Int8Options::floatOps and Int8Options::int8Ops of the lowering.
    std::vector<std::string> floatOps;
    std::vector<std::string> int8Ops;
  };

  /// The INT8 module of \p cali (ops \p qtable lists in their modes, ops
  /// without an INT8 form in \p fallback) against the top module. Throws
  /// tpu::Error when the lowering or the interpreter fails (the diagnostics
  /// went to the module's handler).
  Result evaluate(const CaliTable &cali, const QuantTable *qtable,
                  QuantMode fallback) const;

  size_t numSamples() const { return samples.size(); }
  const std::vector<std::string> &outputNames() const { return outputs; }
  /// Whether output \p k is compared stacked over the samples (fewer than
  /// kStackBelow values per sample).
  bool isStacked(size_t k) const {
    return !samples.empty() && reference[0][k].size() < kStackBelow;
  }

private:
  mlir::ModuleOp top;
  std::vector<calibration::SampleInputs> samples;
  unsigned threads;
  std::vector<std::string> inputs, outputs;
  /// reference[sample][output]: the top interpreter's outputs.
  std::vector<std::vector<std::vector<float>>> reference;
};

} // namespace tpuc::tool

#endif // TPUC_TOOLS_TPUC_INT8SEARCH_H
