//===- Thresholds.h - Calibration threshold methods --------------*- C++ -*-===//
//
// Each method is a pure function of a histogram of |x| (hist[i] counts the
// values in [i * w, (i + 1) * w); the caller passes it truncated after its
// last non-empty bin, n = hist.size() bins), the bin width w and the
// tensor's min, max and absmax. The result is the symmetric INT8 threshold
// T (values are quantised to round(x * 127 / T), clamped to [-127, 127]).
// Every method returns absmax for an empty or all-zero histogram.
//
//   minmax          T = absmax.
//   kld             TensorRT's entropy calibration in the form of MXNet's
//                   `_get_optimal_threshold` (one-sided, on |x|), 128 levels:
//                   for i = 128 .. n (inclusive):
//                     P = hist[0:i], P[i-1] += sum(hist[i:])  (outliers)
//                     Q: the i bins split into 128 groups of i / 128 bins
//                        (integer division), the last group also taking the
//                        i % 128 remaining bins; each group's sum of
//                        hist[0:i] (without the outliers) is spread evenly
//                        over the group's bins where P != 0; Q = 0 where
//                        P = 0.
//                     Both smoothed as MXNet's `_smooth_distribution` on the
//                     counts (eps = 1e-4: the zero entries get eps, the
//                     non-zero ones lose eps * zeros / nonzeros); a
//                     candidate where that would leave an entry <= 0 or Q is
//                     all zero (MXNet raises there) is skipped.
//                     D(i) = KL(P || Q) of both normalised to sum 1
//                     (scipy.stats.entropy).
//                   T = (i + 0.5) * w for the i of least D (the first on
//                   ties), clamped to absmax; absmax if n < 128 or no
//                   candidate is left.
//   percentile9999  i = the first bin whose cumulative count reaches
//                   0.9999 * total (cumsum[i] >= 0.9999 * total);
//                   T = min((i + 1) * w, absmax).
//   mse             candidates t = j * w for j = 128 .. n (inclusive); the
//                   expected squared error of symmetric INT8 with threshold
//                   t over the histogram, each bin's values at its centre
//                   c = (b + 0.5) * w: (c - t)^2 when c > t (clipped), else
//                   step^2 / 12 with step = t / 127 (uniform rounding
//                   error). T = the t of least error (the first on ties),
//                   clamped to absmax; absmax if n < 128.
//   aciq_gauss      ACIQ (Banner, Nahshan, Soudry, "Post training 4-bit
//   aciq_laplace    quantization of convolutional networks for
//                   rapid-deployment", NeurIPS 2019, arXiv:1810.05723):
//                   T = alpha * scale, clamped to absmax. The scale is
//                   fitted from the |x| histogram at bin centres, the
//                   distribution taken as symmetric around 0 (|x| alone
//                   gives no mean): gauss sigma = sqrt(mean(c^2)), laplace
//                   b = mean(c). alpha is the 8-bit optimal clipping factor
//                   of the ACIQ reference code (alpha_gaus[8] = 3.92403714,
//                   alpha_laplace[8] = 9.89490303; the paper's table gives
//                   3.92 and 9.89). Minimising the paper's expected-error
//                   expressions numerically gives 3.924032 and 9.8968.
//
// tests/calibration/thresholds.py computes every method independently with
// numpy; the ctest calibration-thresholds compares the two.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_CALIBRATION_THRESHOLDS_H
#define TPUC_CALIBRATION_THRESHOLDS_H

#include <optional>
#include <string>
#include <vector>

namespace tpuc::calibration {

enum class Method { MinMax, Kld, Percentile9999, Mse, AciqGauss, AciqLaplace };

/// "kld", "minmax", "percentile9999", "mse", "aciq_gauss", "aciq_laplace".
const char *methodName(Method method);
/// The method of that name, or none.
std::optional<Method> parseMethod(const std::string &name);
/// "kld|minmax|..." for usage and error messages.
std::string methodNames();
/// Every method, in the order of methodNames() (kld first): the order
/// `tpuc calibrate --search-threshold` tries them in and breaks ties by.
std::vector<Method> allMethods();

/// What a method sees of one tensor.
struct HistogramInput {
  std::vector<double> hist; ///< counts of |x|, truncated after the last
                            ///< non-empty bin
  double width = 0;         ///< bin width
  double min = 0, max = 0, absmax = 0;
};

double thresholdMinMax(const HistogramInput &in);
double thresholdKld(const HistogramInput &in);
double thresholdPercentile9999(const HistogramInput &in);
double thresholdMse(const HistogramInput &in);
double thresholdAciqGauss(const HistogramInput &in);
double thresholdAciqLaplace(const HistogramInput &in);

/// The threshold of \p method.
double computeThreshold(Method method, const HistogramInput &in);

/// Symmetric INT8 fake quantisation with threshold \p t (> 0):
/// clamp(round(x * 127 / t), -127, 127) * t / 127, round half away from
/// zero. Used by `--tune-num` to compare candidate thresholds.
double fakeQuantInt8(double x, double t);

} // namespace tpuc::calibration

#endif // TPUC_CALIBRATION_THRESHOLDS_H
