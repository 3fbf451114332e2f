//===- Thresholds.cpp - Calibration threshold methods ---------------------===//
//
// The methods of Thresholds.h, written plainly (loops over the histogram);
// tests/calibration/thresholds.py is the independent numpy version.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Calibration/Thresholds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tpuc::calibration {

namespace {

constexpr int kQuantizedBins = 128;

struct MethodEntry {
  Method method;
  const char *name;
};
constexpr MethodEntry kMethods[] = {
    {Method::Kld, "kld"},
    {Method::MinMax, "minmax"},
    {Method::Percentile9999, "percentile9999"},
    {Method::Mse, "mse"},
    {Method::AciqGauss, "aciq_gauss"},
    {Method::AciqLaplace, "aciq_laplace"},
};

double total(const std::vector<double> &hist) {
  return std::accumulate(hist.begin(), hist.end(), 0.0);
}

/// MXNet's `_smooth_distribution` (eps = 1e-4) in place; false where MXNet
/// raises or asserts (no non-zero entry, eps1 >= 1, an entry left <= 0).
bool smooth(std::vector<double> &v) {
  constexpr double eps = 1e-4;
  size_t zeros = std::count(v.begin(), v.end(), 0.0);
  size_t nonZeros = v.size() - zeros;
  if (nonZeros == 0)
    return false;
  double eps1 = eps * double(zeros) / double(nonZeros);
  if (!(eps1 < 1.0))
    return false;
  for (double &x : v) {
    x = x == 0 ? eps : x - eps1;
    if (!(x > 0))
      return false;
  }
  return true;
}

/// KL(p || q) after normalising both to sum 1 (scipy.stats.entropy); both
/// strictly positive.
double divergence(const std::vector<double> &p, const std::vector<double> &q) {
  double ps = total(p), qs = total(q);
  double d = 0;
  for (size_t j = 0; j < p.size(); ++j) {
    double pj = p[j] / ps, qj = q[j] / qs;
    d += pj * std::log(pj / qj);
  }
  return d;
}

/// Mean of f(c) over the histogram's values at their bin centres c.
template <typename F> double centreMean(const HistogramInput &in, F f) {
  double n = 0, s = 0;
  for (size_t b = 0; b < in.hist.size(); ++b) {
    n += in.hist[b];
    s += in.hist[b] * f((double(b) + 0.5) * in.width);
  }
  return n > 0 ? s / n : 0.0;
}

bool degenerate(const HistogramInput &in) {
  return in.hist.empty() || !(in.absmax > 0) || !(in.width > 0) ||
         !(total(in.hist) > 0);
}

} // namespace

const char *methodName(Method method) {
  for (const MethodEntry &e : kMethods)
    if (e.method == method)
      return e.name;
  return "?";
}

std::optional<Method> parseMethod(const std::string &name) {
  for (const MethodEntry &e : kMethods)
    if (name == e.name)
      return e.method;
  return std::nullopt;
}

std::vector<Method> allMethods() {
  std::vector<Method> out;
  for (const MethodEntry &e : kMethods)
    out.push_back(e.method);
  return out;
}

std::string methodNames() {
  std::string s;
  for (const MethodEntry &e : kMethods)
    s += (s.empty() ? "" : "|") + std::string(e.name);
  return s;
}

double thresholdMinMax(const HistogramInput &in) { return in.absmax; }

double thresholdKld(const HistogramInput &in) {
  const size_t n = in.hist.size();
  if (degenerate(in) || n < size_t(kQuantizedBins))
    return in.absmax;
  // suffix[i] = sum(hist[i:]).
  std::vector<double> suffix(n + 1, 0.0);
  for (size_t i = n; i > 0; --i)
    suffix[i - 1] = suffix[i] + in.hist[i - 1];
  double best = std::numeric_limits<double>::infinity();
  size_t bestI = 0;
  std::vector<double> p, q;
  for (size_t i = kQuantizedBins; i <= n; ++i) {
    p.assign(in.hist.begin(), in.hist.begin() + i);
    p[i - 1] += suffix[i];
    q.assign(i, 0.0);
    size_t merged = i / kQuantizedBins;
    for (int g = 0; g < kQuantizedBins; ++g) {
      size_t start = g * merged;
      size_t stop = g == kQuantizedBins - 1 ? i : start + merged;
      double sum = 0;
      size_t nonEmpty = 0;
      for (size_t j = start; j < stop; ++j) {
        sum += in.hist[j];
        nonEmpty += p[j] != 0;
      }
      if (nonEmpty == 0)
        continue;
      for (size_t j = start; j < stop; ++j)
        if (p[j] != 0)
          q[j] = sum / double(nonEmpty);
    }
    if (!smooth(p) || !smooth(q))
      continue;
    double d = divergence(p, q);
    if (d < best) {
      best = d;
      bestI = i;
    }
  }
  if (bestI == 0)
    return in.absmax;
  return std::min((double(bestI) + 0.5) * in.width, in.absmax);
}

double thresholdPercentile9999(const HistogramInput &in) {
  if (degenerate(in))
    return in.absmax;
  const double target = 0.9999 * total(in.hist);
  double cum = 0;
  for (size_t i = 0; i < in.hist.size(); ++i) {
    cum += in.hist[i];
    if (cum >= target)
      return std::min((double(i) + 1) * in.width, in.absmax);
  }
  return in.absmax;
}

double thresholdMse(const HistogramInput &in) {
  const size_t n = in.hist.size();
  if (degenerate(in) || n < size_t(kQuantizedBins))
    return in.absmax;
  const double count = total(in.hist);
  double best = std::numeric_limits<double>::infinity();
  size_t bestJ = 0;
  for (size_t j = kQuantizedBins; j <= n; ++j) {
    double t = double(j) * in.width;
    double step = t / 127.0;
    double rounding = step * step / 12.0;
    double err = 0;
    for (size_t b = 0; b < n; ++b) {
      double c = (double(b) + 0.5) * in.width;
      err += in.hist[b] * (c > t ? (c - t) * (c - t) : rounding);
    }
    err /= count;
    if (err < best) {
      best = err;
      bestJ = j;
    }
  }
  return std::min(double(bestJ) * in.width, in.absmax);
}

double thresholdAciqGauss(const HistogramInput &in) {
  if (degenerate(in))
    return in.absmax;
  // ACIQ reference code, alpha_gaus[8] (optimal alpha / sigma at 8 bits).
  constexpr double kAlphaGauss8 = 3.92403714;
  double sigma = std::sqrt(centreMean(in, [](double c) { return c * c; }));
  return std::min(kAlphaGauss8 * sigma, in.absmax);
}

double thresholdAciqLaplace(const HistogramInput &in) {
  if (degenerate(in))
    return in.absmax;
  // ACIQ reference code, alpha_laplace[8] (optimal alpha / b at 8 bits).
  constexpr double kAlphaLaplace8 = 9.89490303;
  double b = centreMean(in, [](double c) { return c; });
  return std::min(kAlphaLaplace8 * b, in.absmax);
}

double computeThreshold(Method method, const HistogramInput &in) {
  switch (method) {
  case Method::MinMax:
    return thresholdMinMax(in);
  case Method::Kld:
    return thresholdKld(in);
  case Method::Percentile9999:
    return thresholdPercentile9999(in);
  case Method::Mse:
    return thresholdMse(in);
  case Method::AciqGauss:
    return thresholdAciqGauss(in);
  case Method::AciqLaplace:
    return thresholdAciqLaplace(in);
  }
  return in.absmax;
}

double fakeQuantInt8(double x, double t) {
  double q = std::round(x * 127.0 / t);
  q = std::clamp(q, -127.0, 127.0);
  return q * t / 127.0;
}

} // namespace tpuc::calibration
