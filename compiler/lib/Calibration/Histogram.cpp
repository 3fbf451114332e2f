//===- Histogram.cpp - One-pass tensor statistics for calibration ---------===//
//
// The power-of-two histogram of Histogram.h: exact bin merges when the range
// grows, so the counts never depend on the order values arrive in.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Calibration/Histogram.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace tpuc::calibration {

namespace {
/// log2(kBins).
constexpr int kBinsLog2 = 11;
static_assert((1 << kBinsLog2) == TensorStats::kBins);
} // namespace

int rangeExponentFor(double absmax) {
  assert(absmax > 0 && std::isfinite(absmax));
  // absmax = m * 2^e with m in [0.5, 1): 2^(e-1) <= absmax < 2^e.
  int e = 0;
  std::frexp(absmax, &e);
  return e;
}

TensorStats::TensorStats() : counts(kBins, 0) {}

double TensorStats::range() const {
  return hasRange ? std::ldexp(1.0, exponent) : 0.0;
}

void TensorStats::growTo(int newExponent) {
  if (!hasRange) {
    // Only zeros so far: they stay in bin 0 at any range.
    hasRange = true;
    exponent = newExponent;
    return;
  }
  int d = newExponent - exponent;
  if (d <= 0)
    return;
  if (d >= kBinsLog2) {
    // Every old bin lands in the new bin 0.
    uint64_t total = 0;
    for (uint64_t c : counts)
      total += c;
    std::fill(counts.begin(), counts.end(), 0);
    counts[0] = total;
  } else {
    // New bin j = old bins [j * 2^d, (j + 1) * 2^d).
    int group = 1 << d;
    for (int j = 0; j < kBins / group; ++j) {
      uint64_t sum = 0;
      for (int i = j * group; i < (j + 1) * group; ++i)
        sum += counts[i];
      counts[j] = sum;
    }
    std::fill(counts.begin() + kBins / group, counts.end(), 0);
  }
  exponent = newExponent;
}

void TensorStats::add(const float *data, size_t n) {
  // Pass 1: the range these values need.
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  uint64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    float x = data[i];
    if (!std::isfinite(x)) {
      ++bad;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  nonFinite += bad;
  uint64_t good = n - bad;
  if (good == 0)
    return;
  finite += good;
  minValue = std::min(minValue, static_cast<double>(lo));
  maxValue = std::max(maxValue, static_cast<double>(hi));
  double batchAbsMax = std::max(std::fabs(double(lo)), std::fabs(double(hi)));
  absMaxValue = std::max(absMaxValue, batchAbsMax);
  if (batchAbsMax > 0) {
    int e = rangeExponentFor(batchAbsMax);
    if (!hasRange || e > exponent)
      growTo(e);
  }
  if (!hasRange) { // all zeros
    counts[0] += good;
    return;
  }
  // Pass 2: |x| * 2^(11 - k) < 2048, exact (a power-of-two scaling of a
  // float in double); truncation is floor for x >= 0.
  const double scale = std::ldexp(1.0, kBinsLog2 - exponent);
  for (size_t i = 0; i < n; ++i) {
    float x = data[i];
    if (!std::isfinite(x))
      continue;
    size_t b = static_cast<size_t>(std::fabs(double(x)) * scale);
    ++counts[std::min<size_t>(b, kBins - 1)];
  }
}

void TensorStats::merge(const TensorStats &other) {
  finite += other.finite;
  nonFinite += other.nonFinite;
  minValue = std::min(minValue, other.minValue);
  maxValue = std::max(maxValue, other.maxValue);
  absMaxValue = std::max(absMaxValue, other.absMaxValue);
  if (!other.hasRange) {
    counts[0] += other.counts[0];
    return;
  }
  if (!hasRange || other.exponent > exponent)
    growTo(other.exponent);
  if (other.exponent == exponent) {
    for (int i = 0; i < kBins; ++i)
      counts[i] += other.counts[i];
    return;
  }
  // other has a smaller range: merge a copy up to ours.
  TensorStats copy = other;
  copy.growTo(exponent);
  for (int i = 0; i < kBins; ++i)
    counts[i] += copy.counts[i];
}

size_t TensorStats::usedBins() const {
  for (size_t i = kBins; i > 0; --i)
    if (counts[i - 1])
      return i;
  return 0;
}

std::vector<double> TensorStats::usedHistogram() const {
  size_t n = usedBins();
  return std::vector<double>(counts.begin(), counts.begin() + n);
}

} // namespace tpuc::calibration
