//===- CalibrationTest.cpp - histogram scheme and calibration tables ------===//
//
// TensorStats (Histogram.h): the power-of-two range, exact bin merges, and
// counts independent of the order values arrive in and of how they are
// split between accumulators. CaliTable (CaliTable.h): TPU-MLIR's format,
// round trip and malformed tables. The threshold methods are checked against
// numpy by the ctest calibration-thresholds (tests/calibration/).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Calibration/Histogram.h"
#include "tpuc/Calibration/Thresholds.h"
#include "tpuc/Support/CaliTable.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace tpuc;
using namespace tpuc::calibration;

namespace {

TEST(TensorStats, RangeIsThePowerOfTwoAboveAbsMax) {
  // absmax 3 -> R = 4 (2^2); |x| = 3 -> bin floor(3 * 2048 / 4) = 1536.
  TensorStats s;
  std::vector<float> v = {-3.0f, 0.5f, 1.0f};
  s.add(v.data(), v.size());
  EXPECT_EQ(s.rangeExponent(), 2);
  EXPECT_EQ(s.range(), 4.0);
  EXPECT_EQ(s.bins()[1536], 1u); // -3
  EXPECT_EQ(s.bins()[256], 1u);  // 0.5 * 512
  EXPECT_EQ(s.bins()[512], 1u);  // 1.0 * 512
  EXPECT_EQ(s.usedBins(), 1537u);
  EXPECT_EQ(s.min(), -3.0);
  EXPECT_EQ(s.max(), 1.0);
  EXPECT_EQ(s.absMax(), 3.0);
  // absmax exactly a power of two: R is the next one (strict), so the value
  // lands in bin 1024, not in a clamped last bin.
  TensorStats t;
  float one = 1.0f;
  t.add(&one, 1);
  EXPECT_EQ(t.range(), 2.0);
  EXPECT_EQ(t.bins()[1024], 1u);
  EXPECT_EQ(t.usedBins(), 1025u);
}

TEST(TensorStats, ZerosAndNonFinite) {
  TensorStats s;
  std::vector<float> zeros(5, 0.0f);
  s.add(zeros.data(), zeros.size());
  EXPECT_TRUE(s.zeroRange());
  EXPECT_EQ(s.range(), 0.0);
  EXPECT_EQ(s.bins()[0], 5u);
  EXPECT_EQ(s.usedBins(), 1u);
  // The zeros stay in bin 0 once a range exists.
  std::vector<float> v = {0.75f, std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::infinity()};
  s.add(v.data(), v.size());
  EXPECT_EQ(s.range(), 1.0);
  EXPECT_EQ(s.bins()[0], 5u);
  EXPECT_EQ(s.bins()[1536], 1u);
  EXPECT_EQ(s.count(), 6u);
  EXPECT_EQ(s.nonFiniteCount(), 2u);
  EXPECT_EQ(s.min(), 0.0);
  EXPECT_EQ(s.max(), 0.75);
}

TEST(TensorStats, GrowingMergesBinsExactly) {
  // 0.3 at R = 0.5 (k = -1) is bin floor(0.3 * 4096) = 1228; after growing
  // to R = 8 (d = 4: 16 bins merge) it is bin 1228 / 16 = 76, which is
  // floor(0.3 * 256), the direct bin at R = 8.
  TensorStats s;
  float a = 0.3f, b = 7.0f;
  s.add(&a, 1);
  EXPECT_EQ(s.rangeExponent(), -1);
  EXPECT_EQ(s.bins()[1228], 1u);
  s.add(&b, 1);
  EXPECT_EQ(s.rangeExponent(), 3);
  EXPECT_EQ(s.bins()[76], 1u);
  EXPECT_EQ(s.bins()[1792], 1u); // 7 * 256
  // Growing by 11 binades or more puts everything in bin 0: 70000 needs
  // R = 2^17 (d = 14); 70000 * 2048 / 2^17 = 1093.75.
  float c = 70000.0f;
  s.add(&c, 1);
  EXPECT_EQ(s.rangeExponent(), 17);
  EXPECT_EQ(s.bins()[0], 2u);
  EXPECT_EQ(s.bins()[1093], 1u);
  EXPECT_EQ(s.usedBins(), 1094u);
}

/// Values of widely varying magnitude, with exact powers of two among them.
std::vector<std::vector<float>> samples() {
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> out;
  for (int s = 0; s < 12; ++s) {
    float scale = std::ldexp(1.0f, (s * 7) % 13 - 6);
    std::vector<float> v(997);
    for (float &x : v)
      x = normal(rng) * scale;
    v[s] = scale; // an exact power of two
    out.push_back(v);
  }
  return out;
}

TEST(TensorStats, OrderAndSplitDoNotChangeTheCounts) {
  std::vector<std::vector<float>> data = samples();
  // Direct: all values at once at the final range.
  std::vector<float> all;
  for (const auto &v : data)
    all.insert(all.end(), v.begin(), v.end());
  TensorStats direct;
  direct.add(all.data(), all.size());
  // Sample by sample, in order and reversed; split over 3 accumulators
  // round robin and merged in two orders.
  TensorStats inOrder, reversed;
  for (const auto &v : data)
    inOrder.add(v.data(), v.size());
  for (auto it = data.rbegin(); it != data.rend(); ++it)
    reversed.add(it->data(), it->size());
  TensorStats parts[3];
  for (size_t i = 0; i < data.size(); ++i)
    parts[i % 3].add(data[i].data(), data[i].size());
  TensorStats merged = parts[0], mergedBack = parts[2];
  merged.merge(parts[1]);
  merged.merge(parts[2]);
  mergedBack.merge(parts[1]);
  mergedBack.merge(parts[0]);
  for (const TensorStats *s : {&inOrder, &reversed, &merged, &mergedBack}) {
    EXPECT_EQ(s->bins(), direct.bins());
    EXPECT_EQ(s->rangeExponent(), direct.rangeExponent());
    EXPECT_EQ(s->min(), direct.min());
    EXPECT_EQ(s->max(), direct.max());
    EXPECT_EQ(s->absMax(), direct.absMax());
    EXPECT_EQ(s->count(), all.size());
  }
  // absmax >= R / 2: the used bins are 1025..2048.
  EXPECT_GT(direct.usedBins(), 1024u);
  EXPECT_LE(direct.usedBins(), 2048u);
}

TEST(Thresholds, MethodNames) {
  EXPECT_EQ(methodNames(), "kld|minmax|percentile9999|mse|aciq_gauss|"
                           "aciq_laplace");
  for (const char *name : {"kld", "minmax", "percentile9999", "mse",
                           "aciq_gauss", "aciq_laplace"})
    EXPECT_STREQ(methodName(*parseMethod(name)), name);
  EXPECT_FALSE(parseMethod("entropy").has_value());
}

TEST(Thresholds, FakeQuantInt8) {
  // t = 127: the step is 1; 2.5 rounds away from zero to 3; beyond t clamps.
  EXPECT_EQ(fakeQuantInt8(2.5, 127), 3.0);
  EXPECT_EQ(fakeQuantInt8(-2.5, 127), -3.0);
  EXPECT_EQ(fakeQuantInt8(500, 127), 127.0);
  EXPECT_EQ(fakeQuantInt8(-500, 127), -127.0);
}

TEST(CaliTable, ParsesTpuMlirTables) {
  const char *text = "# genetated time: 2024-01-01 00:00:00\n"
                     "# sample number: 10\n"
                     "###\n"
                     "# op_name    threshold    min    max\n"
                     "input 2.6400000 -2.6400000 2.5000000\n"
                     "conv1\t4.1234567\t0.0000000\t4.1234567\n"
                     "zero 0.0000000 0.0000000 0.0000000\n"
                     "#int4_th\n"
                     "conv1 1.0 0.0 1.0\n"
                     "#asym_op\n"
                     "conv1\n"
                     "#weight_scale\n"
                     "conv1_w 1 2 3 4 5 6\n";
  llvm::Expected<CaliTable> t = parseCaliTable(text, "t.table");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->order, (std::vector<std::string>{"input", "conv1", "zero"}));
  EXPECT_EQ(t->header,
            (std::vector<std::string>{"genetated time: 2024-01-01 00:00:00",
                                      "sample number: 10", "###"}));
  EXPECT_EQ(t->asymOps, std::vector<std::string>{"conv1"});
  EXPECT_DOUBLE_EQ(t->find("conv1")->threshold, 4.1234567);
  EXPECT_EQ(t->find("conv1")->line, 6u);
  EXPECT_DOUBLE_EQ(t->find("input")->min, -2.64);
  EXPECT_DOUBLE_EQ(t->find("zero")->threshold, 1e-5); // clamped
  // Written back: the same text for the main section, header verbatim.
  std::string out = formatCaliTable(*t);
  EXPECT_EQ(out, "# genetated time: 2024-01-01 00:00:00\n"
                 "# sample number: 10\n"
                 "###\n"
                 "# op_name    threshold    min    max\n"
                 "input 2.6400000 -2.6400000 2.5000000\n"
                 "conv1 4.1234567 0.0000000 4.1234567\n"
                 "zero 0.0000100 0.0000000 0.0000000\n"
                 "#asym_op\n"
                 "conv1\n");
  llvm::Expected<CaliTable> again = parseCaliTable(out, "again");
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(formatCaliTable(*again), out);
}

std::string parseError(const std::string &text) {
  llvm::Expected<CaliTable> t = parseCaliTable(text, "bad.table");
  if (t)
    return "";
  return llvm::toString(t.takeError());
}

TEST(CaliTable, RefusesMalformedTables) {
  EXPECT_EQ(parseError("a 1 0\n"),
            "bad.table:1: expected 'name threshold min max', got 3 fields: "
            "'a 1 0'");
  EXPECT_EQ(parseError("# x\na 1 0 1\nb 1 zero 1\n"),
            "bad.table:3: tensor 'b': min 'zero' is not a finite number");
  EXPECT_EQ(parseError("a nan 0 1\n"),
            "bad.table:1: tensor 'a': threshold 'nan' is not a finite number");
  EXPECT_EQ(parseError("a 1 2 1\n"), "bad.table:1: tensor 'a': min 2 > max 1");
  EXPECT_EQ(parseError("a 1 0 1\n\na 2 0 2\n"),
            "bad.table:3: tensor 'a' is listed twice (first on line 1)");
  EXPECT_EQ(parseError("# only comments\n#int4_th\na 1 0 1\n"),
            "bad.table: the calibration table has no entries");
}

TEST(CaliTable, WritesAtomically) {
  CaliTable t;
  t.header = {"mlir: m.mlir"};
  t.entries["x"] = CaliEntry{1.5, -1, 1.5, 0};
  t.order = {"x"};
  std::string path = std::string(TPU_BINARY_DIR) + "/calitable_test.table";
  ASSERT_FALSE(bool(writeCaliTable(t, path)));
  llvm::Expected<CaliTable> back = readCaliTable(path);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->order, std::vector<std::string>{"x"});
  EXPECT_DOUBLE_EQ(back->find("x")->threshold, 1.5);
  // A directory that does not exist: an error, nothing written.
  llvm::Error e = writeCaliTable(t, std::string(TPU_BINARY_DIR) +
                                        "/no/such/dir/t.table");
  EXPECT_TRUE(bool(e));
  llvm::consumeError(std::move(e));
  llvm::Expected<CaliTable> missing = readCaliTable("/nonexistent/t.table");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError())
                .find("cannot read '/nonexistent/t.table'"),
            std::string::npos);
}

} // namespace
