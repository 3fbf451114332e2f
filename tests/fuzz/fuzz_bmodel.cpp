//===- fuzz_bmodel.cpp - parseModel on arbitrary bytes --------------------===//
//
// Any input either parses or throws tpu::Error (never crashes, never reads
// out of bounds). A model that parses must survive writing and reading:
// serialize -> parse -> serialize gives the same bytes, and so does going
// through the JSON form that tpu-dis prints and tpu-asm reads.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/BmodelJson.h"
#include "tpu/isa/Error.h"

#include <cstdio>
#include <cstdlib>

using namespace tpu::isa::bmodel;

namespace {

[[noreturn]] void failure(const char *what) {
  std::fprintf(stderr, "fuzz_bmodel: %s\n", what);
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Model model;
  // Without the check-code comparison, so that mutated coefficients do not
  // end every run before the rest of the file is read.
  ParseOptions lenient;
  lenient.verifyCheckCode = false;
  try {
    model = parseModel(data, size, "fuzz", lenient);
  } catch (const tpu::Error &) {
    return 0;
  }
  // From here on, an exception is a bug: it escapes and libFuzzer reports it.
  std::vector<uint8_t> bytes = serializeModel(model);
  Model back = parseModel(bytes.data(), bytes.size(), "rewritten");
  if (serializeModel(back) != bytes)
    failure("serialize(parse(serialize(m))) differs from serialize(m)");
  Model fromJson = modelFromJson(modelToJson(back));
  if (serializeModel(fromJson) != bytes)
    failure("the JSON round trip changes the model");
  return 0;
}
