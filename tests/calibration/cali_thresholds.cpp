//===- cali_thresholds.cpp - Print every calibration threshold method -----===//
//
//   cali-thresholds < histograms.txt
//
// For tests/calibration/thresholds.py: each input line is one tensor,
// "width min max absmax h0 h1 ... h(n-1)" (the histogram of |x| truncated
// after its last non-empty bin); each output line gives the threshold of
// every method, "method=value" separated by spaces, in the order of
// tpuc::calibration::Method, with 17 significant digits.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Calibration/Thresholds.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

int main() {
  namespace cal = tpuc::calibration;
  const cal::Method methods[] = {
      cal::Method::MinMax, cal::Method::Kld,       cal::Method::Percentile9999,
      cal::Method::Mse,    cal::Method::AciqGauss, cal::Method::AciqLaplace};
  std::string line;
  int lineNo = 0;
  while (std::getline(std::cin, line)) {
    ++lineNo;
    if (line.empty())
      continue;
    std::istringstream is(line);
    cal::HistogramInput in;
    if (!(is >> in.width >> in.min >> in.max >> in.absmax)) {
      std::fprintf(stderr, "cali-thresholds: line %d: expected width min max "
                           "absmax h0 h1 ...\n",
                   lineNo);
      return 1;
    }
    for (double h; is >> h;)
      in.hist.push_back(h);
    const char *sep = "";
    for (cal::Method m : methods) {
      std::printf("%s%s=%.17g", sep, cal::methodName(m),
                  cal::computeThreshold(m, in));
      sep = " ";
    }
    std::printf("\n");
  }
  return 0;
}
