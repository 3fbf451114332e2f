//===- Histogram.h - One-pass tensor statistics for calibration -*- C++ -*-===//
//
// `tpuc calibrate` sees every tensor of every sample once (streaming: the
// activations are not kept) and needs, per tensor, min, max, max |x| and a
// histogram of |x| whose range must be fixed before all data are seen. The
// scheme, chosen so that the counts do not depend on the order in which
// samples arrive nor on how they are split between threads:
//
//   - The range is R = 2^k, k the smallest integer with absmax < R (strict:
//     the largest value then falls below R, never onto the clamp, see
//     below); a tensor whose values are all 0 so far has R = 0 and holds its
//     count in bin 0.
//   - bin(x) = min(kBins - 1, floor(|x| * kBins / R)), kBins = 2048. With R a
//     power of two, |x| * kBins / R is a power-of-two scaling, exact in
//     floating point; the clamp never triggers since |x| < R.
//   - When a larger |x| arrives, the range grows from 2^k to 2^(k+d) and
//     every 2^d adjacent bins merge into one: floor(floor(y) / 2^d) =
//     floor(y / 2^d) for y >= 0, so the merged counts are exactly those of
//     binning every value at the new range directly.
//   - merge() brings two accumulators to the larger range and adds counts.
//     Hence the final histogram equals the direct histogram of all values at
//     the final range: the same for any sample order and thread count.
//     (With "absmax <= R" instead of "<", a value equal to R is clamped into
//     the last bin, and merging that bin on growth would put it one bin
//     lower than direct binning: the strict rule avoids that.)
//
// Non-finite values (NaN, +-inf) are counted in `nonFinite` and left out of
// min, max, absmax and the histogram. Thresholds see the histogram truncated
// after its last non-empty bin (usedBins(): 1025..2048 bins for a non-zero
// tensor since absmax >= R / 2), bin width R / 2048.
//
// This header uses no MLIR, so the statistics are unit-tested on their own.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_CALIBRATION_HISTOGRAM_H
#define TPUC_CALIBRATION_HISTOGRAM_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace tpuc::calibration {

class TensorStats {
public:
  static constexpr int kBins = 2048;

  TensorStats();

  /// Adds \p n values.
  void add(const float *data, size_t n);
  /// Adds the values another accumulator saw (any range).
  void merge(const TensorStats &other);

  /// Finite values seen.
  uint64_t count() const { return finite; }
  uint64_t nonFiniteCount() const { return nonFinite; }
  /// Over the finite values; 0 when none was seen.
  double min() const { return finite ? minValue : 0.0; }
  double max() const { return finite ? maxValue : 0.0; }
  double absMax() const { return absMaxValue; }
  /// True when the range is 0 (no value or only zeros seen).
  bool zeroRange() const { return !hasRange; }
  /// log2 of the range R (meaningful when !zeroRange()).
  int rangeExponent() const { return exponent; }
  /// R = 2^rangeExponent(), 0 for a zero range.
  double range() const;
  /// R / kBins.
  double binWidth() const { return range() / kBins; }
  /// All kBins counts.
  const std::vector<uint64_t> &bins() const { return counts; }
  /// Bins up to and including the last non-empty one (0 if no value).
  size_t usedBins() const;
  /// bins() truncated to usedBins(), as doubles (what the threshold methods
  /// take).
  std::vector<double> usedHistogram() const;

private:
  /// Grows the range to 2^newExponent (>= the current one), merging bins.
  void growTo(int newExponent);

  std::vector<uint64_t> counts;
  uint64_t finite = 0, nonFinite = 0;
  double minValue = std::numeric_limits<double>::infinity();
  double maxValue = -std::numeric_limits<double>::infinity();
  double absMaxValue = 0;
  bool hasRange = false;
  int exponent = 0;
};

/// The exponent k of the smallest power of two 2^k > \p absmax (absmax > 0,
/// finite).
int rangeExponentFor(double absmax);

} // namespace tpuc::calibration

#endif // TPUC_CALIBRATION_HISTOGRAM_H
