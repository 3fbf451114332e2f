//===- CompareTest.cpp - similarity math of tpuc compare ------------------===//
//
// Every expected value is derived by hand in the comment above it from the
// definitions in Compare.h (a = actual, b = reference, d = a - b).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Support/Compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tpuc;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = 1e-12;

Similarity sim(const std::vector<double> &a, const std::vector<double> &b) {
  return computeSimilarity(llvm::ArrayRef<double>(a),
                           llvm::ArrayRef<double>(b));
}

TEST(Similarity, IdenticalTensors) {
  // a = b = [1, 2, 3]: d = 0, so cosine 1, euclidean 1 - 0 = 1, sqnr +inf;
  // max |ref| = 3.
  Similarity s = sim({1, 2, 3}, {1, 2, 3});
  EXPECT_DOUBLE_EQ(s.cosine, 1.0);
  EXPECT_DOUBLE_EQ(s.euclidean, 1.0);
  EXPECT_EQ(s.sqnrDb, kInf);
  EXPECT_EQ(s.maxAbsError, 0.0);
  EXPECT_EQ(s.maxAbsReference, 3.0);
  EXPECT_EQ(s.compared, 3u);
  EXPECT_TRUE(passes(s, Tolerance{}));
}

TEST(Similarity, RotatedPair) {
  // a = [3, 4], b = [4, 3]: <a,b> = 24, ||a|| = ||b|| = 5 -> cosine 24/25 =
  // 0.96. d = [-1, 1], ||d|| = sqrt(2) -> euclidean 1 - sqrt(2)/5 =
  // 0.71715729; sqnr = 10 log10(25 / 2) = 10.96910013 dB; max |d| = 1.
  Similarity s = sim({3, 4}, {4, 3});
  EXPECT_NEAR(s.cosine, 0.96, kEps);
  EXPECT_NEAR(s.euclidean, 1.0 - std::sqrt(2.0) / 5.0, kEps);
  EXPECT_NEAR(s.euclidean, 0.71715729, 1e-8);
  EXPECT_NEAR(s.sqnrDb, 10.96910013, 1e-8);
  EXPECT_EQ(s.maxAbsError, 1.0);
  EXPECT_EQ(s.maxAbsReference, 4.0);
}

TEST(Similarity, OrthogonalClampsEuclidean) {
  // a = [1, 0], b = [0, 1]: <a,b> = 0 -> cosine 0. ||d|| = sqrt(2) > ||b|| =
  // 1, so 1 - sqrt(2) < 0 clamps to 0; sqnr = 10 log10(1/2) = -3.01029996.
  Similarity s = sim({1, 0}, {0, 1});
  EXPECT_NEAR(s.cosine, 0.0, kEps);
  EXPECT_EQ(s.euclidean, 0.0);
  EXPECT_NEAR(s.sqnrDb, -3.01029996, 1e-8);
}

TEST(Similarity, ScaledCopy) {
  // b = [1, 2, 2] (||b|| = 3), a = 1.1 b: cosine 1 (parallel); d = 0.1 b,
  // ||d|| = 0.3 -> euclidean 0.9; sqnr = 10 log10(1 / 0.01) = 20 dB.
  Similarity s = sim({1.1, 2.2, 2.2}, {1, 2, 2});
  EXPECT_NEAR(s.cosine, 1.0, kEps);
  EXPECT_NEAR(s.euclidean, 0.9, kEps);
  EXPECT_NEAR(s.sqnrDb, 20.0, 1e-9);
  EXPECT_NEAR(s.maxAbsError, 0.2, kEps);
  // a = 2 b: d = b -> euclidean 0, sqnr 0 dB, although cosine is 1: the
  // Euclidean similarity catches a wrong scale.
  Similarity twice = sim({2, 4, 4}, {1, 2, 2});
  EXPECT_NEAR(twice.cosine, 1.0, kEps);
  EXPECT_NEAR(twice.euclidean, 0.0, kEps);
  EXPECT_NEAR(twice.sqnrDb, 0.0, 1e-9);
  EXPECT_FALSE(passes(twice, Tolerance{}));
}

TEST(Similarity, Negated) {
  // a = -b: cosine -1; ||d|| = 2 ||b|| -> 1 - 2 clamps to 0;
  // sqnr = 10 log10(1/4) = -6.02059991 dB.
  Similarity s = sim({-1, 2, -3}, {1, -2, 3});
  EXPECT_NEAR(s.cosine, -1.0, kEps);
  EXPECT_EQ(s.euclidean, 0.0);
  EXPECT_NEAR(s.sqnrDb, -6.02059991, 1e-8);
}

TEST(Similarity, ZeroTensors) {
  // Both zero: identical, so cosine 1, euclidean 1, sqnr +inf, pass.
  Similarity both = sim({0, 0, 0}, {0, 0, 0});
  EXPECT_EQ(both.cosine, 1.0);
  EXPECT_EQ(both.euclidean, 1.0);
  EXPECT_EQ(both.sqnrDb, kInf);
  EXPECT_TRUE(passes(both, Tolerance{}));

  // Reference zero, actual not: cosine 0, euclidean 0 (||d|| > 0 = ||b||),
  // sqnr -inf (no signal, some noise).
  Similarity refZero = sim({0, 1}, {0, 0});
  EXPECT_EQ(refZero.cosine, 0.0);
  EXPECT_EQ(refZero.euclidean, 0.0);
  EXPECT_EQ(refZero.sqnrDb, -kInf);
  EXPECT_FALSE(passes(refZero, Tolerance{}));

  // Actual zero, reference [3, 4]: cosine 0; d = -b, ||d|| = ||b|| = 5 ->
  // euclidean 1 - 1 = 0; sqnr = 10 log10(25/25) = 0 dB.
  Similarity actZero = sim({0, 0}, {3, 4});
  EXPECT_EQ(actZero.cosine, 0.0);
  EXPECT_EQ(actZero.euclidean, 0.0);
  EXPECT_NEAR(actZero.sqnrDb, 0.0, kEps);
  EXPECT_EQ(actZero.maxAbsError, 4.0);
}

TEST(Similarity, EmptyTensorsPass) {
  Similarity s = sim({}, {});
  EXPECT_EQ(s.compared, 0u);
  EXPECT_EQ(s.cosine, 1.0);
  EXPECT_EQ(s.euclidean, 1.0);
  EXPECT_TRUE(passes(s, Tolerance{}));
}

TEST(Similarity, NonFiniteValues) {
  // The same NaN / +inf / -inf at the same place agree and are left out;
  // the finite rest [1, 2] vs [1, 2] is identical.
  Similarity agreed = sim({kNaN, kInf, -kInf, 1, 2}, {kNaN, kInf, -kInf, 1, 2});
  EXPECT_EQ(agreed.nonFiniteAgreed, 3u);
  EXPECT_EQ(agreed.nonFiniteMismatched, 0u);
  EXPECT_EQ(agreed.compared, 2u);
  EXPECT_NEAR(agreed.cosine, 1.0, kEps);
  EXPECT_TRUE(passes(agreed, Tolerance{}));

  // NaN where the reference holds 1, +inf against -inf: two mismatches; the
  // remaining [5] vs [5] is perfect, yet the tensor fails.
  Similarity bad = sim({kNaN, kInf, 5}, {1, -kInf, 5});
  EXPECT_EQ(bad.nonFiniteMismatched, 2u);
  EXPECT_EQ(bad.compared, 1u);
  EXPECT_EQ(bad.cosine, 1.0);
  EXPECT_FALSE(passes(bad, Tolerance{}));
  // A NaN in the reference only is also a mismatch.
  EXPECT_EQ(sim({1, 2}, {1, kNaN}).nonFiniteMismatched, 1u);
}

TEST(Similarity, LengthMismatchFails) {
  Similarity s = sim({1, 2, 3}, {1, 2});
  EXPECT_TRUE(s.lengthMismatch);
  EXPECT_EQ(s.compared, 0u);
  EXPECT_FALSE(passes(s, Tolerance{0.0, 0.0, -1.0}));
}

TEST(Similarity, FloatOverloadMatchesDouble) {
  // Same pair as RotatedPair through the float entry point.
  std::vector<float> a = {3, 4}, b = {4, 3};
  Similarity s =
      computeSimilarity(llvm::ArrayRef<float>(a), llvm::ArrayRef<float>(b));
  EXPECT_NEAR(s.cosine, 0.96, kEps);
  EXPECT_NEAR(s.sqnrDb, 10.96910013, 1e-8);
}

TEST(Tolerance, ThresholdsAreInclusive) {
  // [3, 4] vs [4, 3]: cosine 24/25 = 0.96 (the double nearest 0.96 either
  // way), euclidean 0.7172, max |err| 1, max |ref| 4.
  Similarity s = sim({3, 4}, {4, 3});
  EXPECT_TRUE(passes(s, Tolerance{0.96, 0.7, -1.0}));
  EXPECT_FALSE(passes(s, Tolerance{0.9600001, 0.7, -1.0}));
  EXPECT_FALSE(passes(s, Tolerance{0.96, 0.72, -1.0}));
  // max-abs bound: 1 <= 0.25 * 4 passes, 1 <= 0.24 * 4 = 0.96 fails.
  EXPECT_TRUE(passes(s, Tolerance{0.0, 0.0, 0.25}));
  EXPECT_FALSE(passes(s, Tolerance{0.0, 0.0, 0.24}));
}

TEST(Tolerance, Parse) {
  llvm::Expected<Tolerance> both = parseTolerance("0.99,0.90");
  ASSERT_TRUE(bool(both));
  EXPECT_DOUBLE_EQ(both->cosine, 0.99);
  EXPECT_DOUBLE_EQ(both->euclidean, 0.90);

  llvm::Expected<Tolerance> one = parseTolerance("0.5");
  ASSERT_TRUE(bool(one));
  EXPECT_DOUBLE_EQ(one->cosine, 0.5);
  EXPECT_DOUBLE_EQ(one->euclidean, Tolerance{}.euclidean);

  for (const char *bad : {"", "abc", "0.9,1.5", "2", "0.9,0.8,0.7", "0.9,"}) {
    llvm::Expected<Tolerance> t = parseTolerance(bad);
    EXPECT_FALSE(bool(t)) << bad;
    llvm::consumeError(t.takeError());
  }
}

TEST(Layout, SizeOneExtentsAreIgnored) {
  EXPECT_TRUE(sameLayout({1, 2}, {2}));
  EXPECT_TRUE(sameLayout({1, 1, 3}, {3, 1}));
  EXPECT_TRUE(sameLayout({}, {1}));
  EXPECT_FALSE(sameLayout({2, 3}, {3, 2}));
  EXPECT_FALSE(sameLayout({6}, {2, 3}));
}

TEST(Report, TableRowsAndSummary) {
  std::vector<double> ref = {4, 3}, act = {3, 4};
  std::vector<TensorComparison> rows;
  Tolerance tol;
  rows.push_back(compareTensors("same", {1, 2}, ref, {2}, ref, tol));
  rows.push_back(compareTensors("rotated", {2}, act, {2}, ref, tol));
  rows.push_back(compareTensors("transposed", {2, 1, 3}, {1, 2, 3, 4, 5, 6},
                                {3, 2}, {1, 2, 3, 4, 5, 6}, tol));
  EXPECT_TRUE(rows[0].pass);
  // 0.96 < 0.99 and 0.717 < 0.90.
  EXPECT_FALSE(rows[1].pass);
  EXPECT_FALSE(rows[2].comparable);
  EXPECT_FALSE(rows[2].pass);

  std::string text;
  llvm::raw_string_ostream os(text);
  printComparisonTable(os, rows, tol);
  os.flush();
  EXPECT_NE(text.find("1x2 vs 2"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL (cosine,euclid)"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL (shape)"), std::string::npos) << text;
  EXPECT_NE(text.find("0.96000000"), std::string::npos) << text;
  EXPECT_NE(text.find("compare: 2 of 3 tensors FAIL"), std::string::npos)
      << text;
}

} // namespace
