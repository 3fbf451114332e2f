//===- Compare.h - Similarity of a tensor to its reference ------*- C++ -*-===//
//
// The numbers `tpuc compare` prints and every accuracy gate (float interpreter
// vs ONNX Runtime, quantised vs float, `deploy --tolerance`) decides on.
// `actual` is the tensor under test, `reference` the one trusted; with
// a = actual, b = reference, d = a - b and ||.|| the Euclidean norm over the
// elements that are finite in both:
//
//   cosine     = <a, b> / (||a|| * ||b||)                       in [-1, 1]
//   euclidean  = max(0, 1 - ||d|| / ||b||)                      in [0, 1]
//   sqnr (dB)  = 10 * log10(||b||^2 / ||d||^2)
//   max |err|  = max_i |d_i|,   max |ref| = max_i |b_i|
//
// Degenerate cases, chosen so that identical tensors always pass and a
// tensor that is zero where the reference is not (or the reverse) fails:
//   - ||a|| = ||b|| = 0: cosine 1; exactly one of them 0: cosine 0.
//   - ||b|| = 0: euclidean 1 if ||d|| = 0, else 0.
//   - ||d|| = 0: sqnr +inf; ||b|| = 0 < ||d||: sqnr -inf.
//   - no element compared (empty tensors): cosine 1, euclidean 1, sqnr +inf.
// Non-finite values: a position where both hold the same non-finite value
// (NaN and NaN, +inf and +inf, -inf and -inf) agrees and is left out of the
// sums; any other position where either is non-finite is a mismatch, and one
// mismatch fails the tensor whatever the other numbers say.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_SUPPORT_COMPARE_H
#define TPUC_SUPPORT_COMPARE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tpuc {

/// Similarity of one tensor to its reference (definitions in the file
/// comment).
struct Similarity {
  /// Elements finite in both tensors: the ones the sums run over.
  size_t compared = 0;
  /// Positions holding the same non-finite value in both (left out).
  size_t nonFiniteAgreed = 0;
  /// Positions where either value is non-finite and they differ.
  size_t nonFiniteMismatched = 0;
  /// Of those, the positions where the actual value is non-finite, and
  /// where the reference's is (both when both are, as NaN against inf).
  size_t nonFiniteInActual = 0, nonFiniteInReference = 0;
  /// The two tensors hold different numbers of elements (nothing compared).
  bool lengthMismatch = false;
  double cosine = 1.0;
  double euclidean = 1.0;
  double sqnrDb = 0.0;
  double maxAbsError = 0.0;
  double maxAbsReference = 0.0;
};

/// Pass/fail thresholds.
struct Tolerance {
  /// Minimum cosine similarity.
  double cosine = 0.99;
  /// Minimum Euclidean similarity.
  double euclidean = 0.90;
  /// If >= 0: also require max |err| <= maxAbsRel * max |ref|.
  double maxAbsRel = -1.0;
};

/// Similarity of \p actual to \p reference, element by element. If their
/// lengths differ, nothing is compared and the result has lengthMismatch set
/// (and fails).
Similarity computeSimilarity(llvm::ArrayRef<float> actual,
                             llvm::ArrayRef<float> reference);
Similarity computeSimilarity(llvm::ArrayRef<double> actual,
                             llvm::ArrayRef<double> reference);

/// True if \p sim meets \p tol: no non-finite mismatch, cosine and Euclidean
/// similarity at or above their minimums, and the max-abs bound if enabled.
bool passes(const Similarity &sim, const Tolerance &tol);

/// Parses "COS,EUCLID" (e.g. "0.99,0.90"); a single value sets the cosine
/// minimum and keeps the default Euclidean one. Values must lie in [0, 1]
/// for Euclidean and [-1, 1] for cosine.
llvm::Expected<Tolerance> parseTolerance(llvm::StringRef text,
                                         Tolerance base = {});

/// Shapes that hold the same elements in the same order: equal after
/// dropping every extent of 1 (so [1, 2] matches [2] but [2, 3] does not
/// match [3, 2]).
bool sameLayout(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// How a tensor stored as integers (a !quant.uniform type of the tpu
/// dialect) maps to real numbers: real = (q - zeroPoint) * scale.
struct QuantParams {
  double scale = 1.0;
  int64_t zeroPoint = 0;
};
/// Quantisation parameters by tensor name.
using QuantParamMap = std::map<std::string, QuantParams>;

/// Every !quant.uniform tensor of \p module (op results, inside layer
/// groups too) by its framework name.
QuantParamMap quantParamsOf(mlir::ModuleOp module);
/// The quantised tensors an op map lists (tpu/isa/OpMap.h, the
/// <stem>_ops.json of tpuc deploy). Throws tpu::Error naming the file.
QuantParamMap quantParamsOfOpMap(const std::string &path);
/// Dequantises \p values in place: (q - zeroPoint) * scale.
void dequantize(std::vector<double> &values, const QuantParams &params);

/// One row of a comparison report.
struct TensorComparison {
  std::string name;
  std::vector<int64_t> actualShape;
  std::vector<int64_t> referenceShape;
  /// False if the shapes do not hold the same layout (then sim is unset and
  /// the row fails).
  bool comparable = true;
  Similarity sim;
  bool pass = false;
};

/// Compares one named tensor pair: checks the layout, computes the
/// similarity and applies \p tol.
TensorComparison compareTensors(llvm::StringRef name,
                                llvm::ArrayRef<int64_t> actualShape,
                                llvm::ArrayRef<double> actual,
                                llvm::ArrayRef<int64_t> referenceShape,
                                llvm::ArrayRef<double> reference,
                                const Tolerance &tol);

/// Prints \p rows as an aligned table (name, shape, cosine, euclidean,
/// sqnr, max |err|, max |ref|, PASS/FAIL with the reason) and a summary line.
void printComparisonTable(llvm::raw_ostream &os,
                          llvm::ArrayRef<TensorComparison> rows,
                          const Tolerance &tol);

} // namespace tpuc

#endif // TPUC_SUPPORT_COMPARE_H
