//===- Compare.cpp - Similarity of a tensor to its reference --------------===//
//
// Definitions and degenerate cases are in Compare.h. Sums run in double with
// one pass over the data; for float inputs the rounding of the double sums
// (about n * 2^-53 relative) is far below the thresholds anyone sets.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Support/Compare.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"

#include "tpu/isa/OpMap.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace tpuc;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// True if two non-finite values are "the same": both NaN, or equal
/// infinities.
bool sameNonFinite(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return a == b;
}

template <typename T>
Similarity similarityOf(llvm::ArrayRef<T> actual, llvm::ArrayRef<T> reference) {
  Similarity sim;
  if (actual.size() != reference.size()) {
    sim.lengthMismatch = true;
    sim.cosine = 0.0;
    sim.euclidean = 0.0;
    sim.sqnrDb = -kInf;
    return sim;
  }
  double dot = 0.0, normA2 = 0.0, normB2 = 0.0, normD2 = 0.0;
  for (size_t i = 0, e = actual.size(); i < e; ++i) {
    double a = actual[i];
    double b = reference[i];
    if (!std::isfinite(a) || !std::isfinite(b)) {
      if (sameNonFinite(a, b))
        ++sim.nonFiniteAgreed;
      else {
        ++sim.nonFiniteMismatched;
        sim.nonFiniteInActual += !std::isfinite(a);
        sim.nonFiniteInReference += !std::isfinite(b);
      }
      continue;
    }
    ++sim.compared;
    double d = a - b;
    dot += a * b;
    normA2 += a * a;
    normB2 += b * b;
    normD2 += d * d;
    sim.maxAbsError = std::max(sim.maxAbsError, std::fabs(d));
    sim.maxAbsReference = std::max(sim.maxAbsReference, std::fabs(b));
  }

  double normA = std::sqrt(normA2);
  double normB = std::sqrt(normB2);
  double normD = std::sqrt(normD2);

  if (normA == 0.0 && normB == 0.0)
    sim.cosine = 1.0;
  else if (normA == 0.0 || normB == 0.0)
    sim.cosine = 0.0;
  else
    sim.cosine = std::clamp(dot / (normA * normB), -1.0, 1.0);

  if (normB == 0.0)
    sim.euclidean = normD == 0.0 ? 1.0 : 0.0;
  else
    sim.euclidean = std::clamp(1.0 - normD / normB, 0.0, 1.0);

  if (normD == 0.0)
    sim.sqnrDb = kInf;
  else if (normB == 0.0)
    sim.sqnrDb = -kInf;
  else
    sim.sqnrDb = 10.0 * std::log10(normB2 / normD2);
  return sim;
}

std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  llvm::SmallVector<std::string> dims;
  for (int64_t d : shape)
    dims.push_back(std::to_string(d));
  return llvm::join(dims, "x");
}

/// Why a row fails ("" if it passes).
std::string failureReason(const TensorComparison &row, const Tolerance &tol) {
  if (!row.comparable)
    return "shape";
  const Similarity &s = row.sim;
  if (s.lengthMismatch)
    return "length";
  llvm::SmallVector<std::string> why;
  if (s.nonFiniteMismatched)
    why.push_back("nan/inf x" + std::to_string(s.nonFiniteMismatched));
  if (!(s.cosine >= tol.cosine))
    why.push_back("cosine");
  if (!(s.euclidean >= tol.euclidean))
    why.push_back("euclid");
  if (tol.maxAbsRel >= 0 &&
      !(s.maxAbsError <= tol.maxAbsRel * s.maxAbsReference))
    why.push_back("max-abs");
  return llvm::join(why, ",");
}

std::string formatNumber(double v, const char *fmt) {
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  if (std::isnan(v))
    return "nan";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(fmt, v);
  return os.str();
}

} // namespace

Similarity tpuc::computeSimilarity(llvm::ArrayRef<float> actual,
                                   llvm::ArrayRef<float> reference) {
  return similarityOf(actual, reference);
}

Similarity tpuc::computeSimilarity(llvm::ArrayRef<double> actual,
                                   llvm::ArrayRef<double> reference) {
  return similarityOf(actual, reference);
}

bool tpuc::passes(const Similarity &sim, const Tolerance &tol) {
  if (sim.lengthMismatch || sim.nonFiniteMismatched)
    return false;
  if (!(sim.cosine >= tol.cosine) || !(sim.euclidean >= tol.euclidean))
    return false;
  if (tol.maxAbsRel >= 0 &&
      !(sim.maxAbsError <= tol.maxAbsRel * sim.maxAbsReference))
    return false;
  return true;
}

llvm::Expected<Tolerance> tpuc::parseTolerance(llvm::StringRef text,
                                               Tolerance base) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  auto bad = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "bad tolerance '" + text + "': " + why);
  };
  if (parts.empty() || parts.size() > 2)
    return bad("expected COSINE[,EUCLIDEAN]");
  double values[2];
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].trim().getAsDouble(values[i]))
      return bad("'" + parts[i] + "' is not a number");
  }
  if (values[0] < -1.0 || values[0] > 1.0)
    return bad("cosine must lie in [-1, 1]");
  base.cosine = values[0];
  if (parts.size() == 2) {
    if (values[1] < 0.0 || values[1] > 1.0)
      return bad("euclidean similarity must lie in [0, 1]");
    base.euclidean = values[1];
  }
  return base;
}

bool tpuc::sameLayout(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  llvm::SmallVector<int64_t> sa, sb;
  for (int64_t d : a)
    if (d != 1)
      sa.push_back(d);
  for (int64_t d : b)
    if (d != 1)
      sb.push_back(d);
  return sa == sb;
}

TensorComparison tpuc::compareTensors(llvm::StringRef name,
                                      llvm::ArrayRef<int64_t> actualShape,
                                      llvm::ArrayRef<double> actual,
                                      llvm::ArrayRef<int64_t> referenceShape,
                                      llvm::ArrayRef<double> reference,
                                      const Tolerance &tol) {
  TensorComparison row;
  row.name = name.str();
  row.actualShape.assign(actualShape.begin(), actualShape.end());
  row.referenceShape.assign(referenceShape.begin(), referenceShape.end());
  row.comparable = sameLayout(actualShape, referenceShape);
  if (!row.comparable) {
    row.pass = false;
    return row;
  }
  row.sim = computeSimilarity(actual, reference);
  row.pass = passes(row.sim, tol);
  return row;
}

void tpuc::printComparisonTable(llvm::raw_ostream &os,
                                llvm::ArrayRef<TensorComparison> rows,
                                const Tolerance &tol) {
  struct Cells {
    std::string name, shape, cosine, euclid, sqnr, maxErr, maxRef, result;
  };
  std::vector<Cells> table;
  table.push_back({"name", "shape", "cosine", "euclid", "sqnr(dB)", "max|err|",
                   "max|ref|", "result"});
  size_t failures = 0;
  for (const TensorComparison &row : rows) {
    Cells c;
    c.name = row.name;
    c.shape = shapeText(row.actualShape);
    if (row.actualShape != row.referenceShape)
      c.shape += " vs " + shapeText(row.referenceShape);
    if (row.comparable && !row.sim.lengthMismatch) {
      c.cosine = formatNumber(row.sim.cosine, "%.8f");
      c.euclid = formatNumber(row.sim.euclidean, "%.6f");
      c.sqnr = formatNumber(row.sim.sqnrDb, "%.2f");
      c.maxErr = formatNumber(row.sim.maxAbsError, "%.3e");
      c.maxRef = formatNumber(row.sim.maxAbsReference, "%.3e");
    } else {
      c.cosine = c.euclid = c.sqnr = c.maxErr = c.maxRef = "-";
    }
    if (row.pass) {
      c.result = "PASS";
    } else {
      ++failures;
      c.result = "FAIL (" + failureReason(row, tol) + ")";
    }
    table.push_back(std::move(c));
  }

  size_t widths[8] = {0};
  for (const Cells &c : table) {
    const std::string *cells[8] = {&c.name, &c.shape,  &c.cosine, &c.euclid,
                                   &c.sqnr, &c.maxErr, &c.maxRef, &c.result};
    for (size_t i = 0; i < 8; ++i)
      widths[i] = std::max(widths[i], cells[i]->size());
  }
  for (const Cells &c : table) {
    // Text columns left-aligned, numbers right-aligned.
    os << llvm::left_justify(c.name, widths[0]) << "  "
       << llvm::left_justify(c.shape, widths[1]) << "  "
       << llvm::right_justify(c.cosine, widths[2]) << "  "
       << llvm::right_justify(c.euclid, widths[3]) << "  "
       << llvm::right_justify(c.sqnr, widths[4]) << "  "
       << llvm::right_justify(c.maxErr, widths[5]) << "  "
       << llvm::right_justify(c.maxRef, widths[6]) << "  " << c.result << "\n";
  }
  os << "tolerance: cosine >= " << llvm::format("%g", tol.cosine)
     << ", euclid >= " << llvm::format("%g", tol.euclidean);
  if (tol.maxAbsRel >= 0)
    os << ", max|err| <= " << llvm::format("%g", tol.maxAbsRel)
       << " * max|ref|";
  os << "\n";
  if (failures == 0)
    os << "compare: all " << rows.size() << " tensors pass\n";
  else
    os << "compare: " << failures << " of " << rows.size() << " tensors FAIL\n";
}

QuantParamMap tpuc::quantParamsOf(mlir::ModuleOp module) {
  QuantParamMap map;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Value r : op->getResults()) {
      auto type = mlir::dyn_cast<mlir::RankedTensorType>(r.getType());
      if (!type)
        continue;
      auto q = mlir::dyn_cast<mlir::quant::UniformQuantizedType>(
          type.getElementType());
      std::string name = top::getTensorName(r);
      if (q && !name.empty())
        map[name] = {q.getScale(), q.getZeroPoint()};
    }
  });
  return map;
}

QuantParamMap tpuc::quantParamsOfOpMap(const std::string &path) {
  ::tpu::isa::OpMap opMap = ::tpu::isa::readOpMap(path);
  QuantParamMap map;
  for (const ::tpu::isa::OpMapEntry &e : opMap.ops)
    for (const ::tpu::isa::OpMapTensor &t : e.tensors)
      if (t.quantized)
        map[t.name] = {t.scale, t.zeroPoint};
  return map;
}

void tpuc::dequantize(std::vector<double> &values, const QuantParams &params) {
  for (double &v : values)
    v = (v - double(params.zeroPoint)) * params.scale;
}
