//===- fuzz_npz.cpp - .npz files from arbitrary bytes ---------------------===//
//
// parseNpz either throws tpu::Error or returns arrays; every array it
// returns must hold exactly the bytes its shape and dtype need, and convert
// to double without reading past its data (AddressSanitizer watches).
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Error.h"
#include "tpu/isa/Npz.h"

#include <cstdio>
#include <cstdlib>

using namespace tpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npz::Npz a;
  try {
    a = npz::parseNpz(data, size, "fuzz input");
  } catch (const Error &) {
    return 0;
  }
  for (const std::string &name : a.names()) {
    const npz::Array *arr = a.find(name);
    if (!arr) {
      std::fprintf(stderr, "fuzz_npz: '%s' listed but not found\n",
                   name.c_str());
      std::abort();
    }
    int64_t n = 1;
    for (int64_t d : arr->shape)
      n *= d;
    if (n > (int64_t(1) << 24))
      continue; // values are fine, converting them is slow
    if (arr->nbytes() != size_t(n) * npz::dtypeSize(arr->dtype)) {
      std::fprintf(stderr, "fuzz_npz: '%s' holds %zu bytes for %lld values\n",
                   name.c_str(), arr->nbytes(), (long long)n);
      std::abort();
    }
    try {
      (void)arr->toDouble();
    } catch (const Error &) {
      // a dtype that does not convert (e.g. strings) is refused, not read
    }
  }
  return 0;
}
